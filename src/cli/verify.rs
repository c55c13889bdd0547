//! `hookscope verify`: one request checked offline.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use hookscope::app::verify::{Source, Verified, VerifyRequest};
use hookscope::app::{self, AppError, report};
use hookscope::domain::checks::status_word as word;

use super::{Common, body_file, exit_if, load_config};

/// `hookscope verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The scheme: a preset (standard-webhooks, svix, stripe, github, shopify, slack, paddle, twilio, gitlab, discord) or a [[scheme]] name
    #[arg(long, value_name = "NAME", required_unless_present_any = ["fixture", "contract"])]
    pub scheme: Option<String>,
    /// A signing secret; repeat to try several (rotation)
    #[arg(
        long = "secret",
        value_name = "S",
        required_unless_present_any = ["fixture", "secret_env", "secret_file", "contract"]
    )]
    pub secrets: Vec<String>,
    #[command(flatten)]
    pub secret_sources: super::SecretSources,
    /// Check a fixture exported by hookscope (its scheme, its test secret, its recorded time)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["data", "body_file", "headers"])]
    pub fixture: Option<PathBuf>,
    /// The time of receipt as Unix seconds (default: now)
    #[arg(long, value_name = "UNIX")]
    pub now: Option<i64>,
    /// A request header, curl style: -H 'Name: value'
    #[arg(short = 'H', long = "header", value_name = "'Name: value'")]
    pub headers: Vec<String>,
    /// The body, exactly
    #[arg(
        long,
        value_name = "STR",
        conflicts_with = "body_file",
        required_unless_present_any = ["body_file", "fixture"]
    )]
    pub data: Option<String>,
    /// Read the body's exact bytes from a file ('-' for stdin)
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// The URL the request was sent to, as the sender saw it (its path and query are recorded; Twilio signs it whole)
    #[arg(long)]
    pub url: Option<String>,
    /// Timestamp tolerance in seconds (default: the scheme's)
    #[arg(long, value_name = "SECS")]
    pub tolerance: Option<u64>,
    /// Check the body against a contract: an OpenAPI 3.1/3.0 or AsyncAPI 3 file, or a folder of JSON Schemas (alone, without --scheme, only the body is checked)
    #[arg(long, value_name = "FILE")]
    pub contract: Option<PathBuf>,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(common: &Common, args: VerifyArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let file = load_config(&paths)?.file;
    let source = match &args.fixture {
        Some(path) => Source::Fixture {
            text: std::fs::read_to_string(path).map_err(|e| {
                AppError::Usage(format!("cannot read --fixture {}: {e}", path.display()))
            })?,
            name: path.display().to_string(),
        },
        None => Source::Request {
            headers: args.headers.clone(),
            body: body(&args)?,
            url: args.url.clone(),
        },
    };
    let verified = app::verify::verify(
        &file,
        VerifyRequest {
            scheme: args.scheme,
            secrets: args.secret_sources.with(&args.secrets)?,
            now: args.now,
            tolerance_secs: args.tolerance,
            contract: args.contract.clone(),
            source,
        },
    )?;
    print_verdict(&verified, args.json);
    Ok(exit_if(verified.ok))
}

/// The body: `--data`, `--body-file`, or stdin for `--body-file -`.
fn body(args: &VerifyArgs) -> Result<Vec<u8>, AppError> {
    match (&args.data, &args.body_file) {
        (Some(data), _) => Ok(data.clone().into_bytes()),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
                .map_err(|e| AppError::Failed(format!("cannot read the body from stdin: {e}")))?;
            Ok(bytes)
        }
        (None, Some(path)) => Ok(body_file(Some(path))?.unwrap_or_default()),
        (None, None) => Err(AppError::Usage(
            "give the body with --data or --body-file".into(),
        )),
    }
}

/// Prints a verify result.
fn print_verdict(verified: &Verified, json: bool) {
    let evaluation = &verified.evaluation;
    if json {
        println!(
            "{}",
            report::evaluation_json(&verified.delivery, evaluation, verified.ok)
        );
        return;
    }
    println!(
        "signature  {:<8} {}",
        word(&evaluation.signature.status),
        evaluation.signature.detail
    );
    if let Some(diagnosis) = &evaluation.signature.diagnosis {
        println!(
            "diagnosis  {:<8} {}",
            diagnosis.cause.code(),
            diagnosis.detail
        );
        if let (Some(expected), Some(received)) = (&diagnosis.expected, &diagnosis.received) {
            println!("           expected {expected}");
            println!("           received {received}");
        }
    }
    println!(
        "timestamp  {:<8} {}",
        word(&evaluation.timestamp.status),
        evaluation.timestamp.detail
    );
    println!(
        "advice     {:<8} {}",
        evaluation.advice.status.as_str(),
        evaluation.advice.detail
    );
    if let Some(schema) = &evaluation.schema {
        println!("schema     {:<8} {}", schema.status.as_str(), schema.detail);
        for v in &schema.violations {
            let at = if v.pointer.is_empty() {
                "(body)"
            } else {
                v.pointer.as_str()
            };
            println!("           {at} [{}] {}", v.rule, v.detail);
        }
        if schema.more > 0 {
            println!("           … and {} more", schema.more);
        }
        for d in &schema.drift {
            println!("drift               {}", d.detail);
        }
    }
    println!(
        "event id   {}",
        evaluation.event_id.as_deref().unwrap_or("(none found)")
    );
    if let Some(t) = &evaluation.event_type {
        println!("event type {t}");
    }
}
