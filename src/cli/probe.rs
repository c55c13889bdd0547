//! `hookscope probe`: the receiver checklist against a handler.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use hookscope::app::probe::ProbeRequest;
use hookscope::app::{self, AppError};
use hookscope::domain::checks::status_word;
use hookscope::net::probe::Verdict;

use super::{Common, body_file, exit_if, load_config};

/// `hookscope probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The handler's URL, e.g. http://localhost:3000/webhooks
    pub url: String,
    /// The scheme the handler verifies
    #[arg(long, value_name = "NAME")]
    pub scheme: String,
    /// The handler's signing secret
    #[arg(
        long = "secret",
        value_name = "S",
        required_unless_present_any = ["secret_env", "secret_file"]
    )]
    pub secrets: Vec<String>,
    #[command(flatten)]
    pub secret_sources: super::SecretSources,
    /// A body to send (JSON; its top-level "id" is replaced in each case)
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// How long the handler has to answer (the sender's timeout)
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub timeout_secs: u64,
    /// Accept any TLS certificate: for a handler on a self-signed development certificate only
    #[arg(long)]
    pub insecure: bool,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Meta's Verify token, for the handshake case of `--scheme meta` (not the app secret)
    #[arg(long, value_name = "TOKEN")]
    pub verify_token: Option<String>,
}

pub fn run(common: &Common, args: ProbeArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let file = load_config(&paths)?.file;
    let request = ProbeRequest {
        url: args.url,
        scheme: args.scheme,
        secrets: args.secret_sources.with(&args.secrets)?,
        body: body_file(args.body_file.as_deref())?,
        timeout: std::time::Duration::from_secs(args.timeout_secs),
        insecure: args.insecure,
        verify_token: args.verify_token,
        self_signed_hint: Some(super::refused::SELF_SIGNED_HINT),
    };
    let prepared = app::probe::prepare(&file, request)?;
    let report = app::small_runtime()?.block_on(app::probe::run(&prepared))?;
    if args.json {
        let text = serde_json::to_string(&report).map_err(|e| AppError::Failed(e.to_string()))?;
        println!("{text}");
        return Ok(exit_if(report.passed));
    }
    println!("probe of {} as {}:", report.url, report.scheme);
    for case in &report.cases {
        let statuses: Vec<String> = case.statuses.iter().map(u16::to_string).collect();
        println!(
            "  {:<8} {:<24} expected {:<11} got {:<9} {}",
            status_word(&case.verdict).to_uppercase(),
            case.name,
            case.expected,
            if statuses.is_empty() {
                "-".to_string()
            } else {
                statuses.join(",")
            },
            case.detail
        );
    }
    let failed = report
        .cases
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .count();
    if report.passed {
        println!("every case passed");
    } else {
        println!("{failed} case(s) failed");
    }
    Ok(exit_if(report.passed))
}
