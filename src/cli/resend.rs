//! `hookscope resend`: a captured delivery sent again to a handler.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use hookscope::app::resend::ResendRequest;
use hookscope::app::{self, AppError};
use hookscope::store::Reader;

use super::{Common, body_file, exit_if, load_config, record_outbound};

/// `hookscope resend`.
#[derive(Debug, Args)]
pub struct ResendArgs {
    /// The delivery to resend (its id in `list`)
    pub delivery_id: i64,
    /// The handler's URL, e.g. http://localhost:3000/webhooks
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// Re-sign with a fresh timestamp (default: send exactly as captured, an honest replay)
    #[arg(long)]
    pub resign: bool,
    /// Give the event a new id (a new event, not a retry)
    #[arg(long)]
    pub new_id: bool,
    /// The scheme to sign with (default: the delivery's)
    #[arg(long, value_name = "NAME")]
    pub scheme: Option<String>,
    /// The secret to sign with; repeat for several signatures (default: its endpoint's)
    #[arg(long = "secret", value_name = "S")]
    pub secrets: Vec<String>,
    #[command(flatten)]
    pub secret_sources: super::SecretSources,
    /// Send this body instead (the signature is computed over it)
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// How long the handler has to answer
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub timeout_secs: u64,
    /// Accept any TLS certificate: for a handler on a self-signed development certificate only
    #[arg(long)]
    pub insecure: bool,
    /// Print the attempt as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(common: &Common, args: ResendArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let file = load_config(&paths)?.file;
    let reader = Reader::open(&paths.store_file())?;
    let request = ResendRequest {
        delivery_id: args.delivery_id,
        url: args.to,
        resign: args.resign,
        scheme: args.scheme,
        secrets: args.secret_sources.with(&args.secrets)?,
        new_id: args.new_id,
        body: body_file(args.body_file.as_deref())?,
        timeout: std::time::Duration::from_secs(args.timeout_secs),
        insecure: args.insecure,
        self_signed_hint: Some(super::refused::SELF_SIGNED_HINT),
    };
    let prepared = app::resend::prepare(&file, &reader, &request)?;
    let attempt = record_outbound(
        &paths.store_file(),
        args.json,
        |writer| {
            let prepared = &prepared;
            async move { app::resend::send(prepared, &writer).await }
        },
        |attempt| {
            println!("{}", app::resend::summary(&prepared, attempt));
            let body = String::from_utf8_lossy(&attempt.response_body);
            if !body.trim().is_empty() {
                println!("{}", body.trim().chars().take(500).collect::<String>());
            }
        },
    )?;
    Ok(exit_if(attempt.succeeded()))
}
