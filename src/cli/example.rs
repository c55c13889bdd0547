//! `hookscope example`: a valid body for an event type of a contract.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use hookscope::app::{self, AppError};
use serde_json::json;

use super::Common;

/// `hookscope example`.
#[derive(Debug, Args)]
pub struct ExampleArgs {
    /// The contract: an OpenAPI 3.1/3.0 or AsyncAPI 3 file (YAML or JSON), or a folder of JSON Schemas
    #[arg(long, value_name = "FILE")]
    pub contract: PathBuf,
    /// The event type (without it: the event types the contract describes, one a line)
    #[arg(long, value_name = "TYPE")]
    pub event: Option<String>,
    /// Print {"contract", "event_type", "source", "body"} instead of the body alone
    #[arg(long)]
    pub json: bool,
}

pub fn run(_common: &Common, args: ExampleArgs) -> Result<ExitCode, AppError> {
    let contract = app::contract::load(&args.contract)?;
    let Some(event_type) = args.event else {
        for event_type in contract.event_types() {
            println!("{event_type}");
        }
        return Ok(ExitCode::SUCCESS);
    };
    let (body, given) = app::contract::example(&contract, &event_type)?;
    // Made bodies are checked like any delivery: a schema this reading cannot satisfy (a
    // pattern with no example) is said, not hidden.
    let check = contract.check(Some(&event_type), body.to_string().as_bytes());
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    if args.json {
        println!(
            "{}",
            json!({
                "contract": contract.name,
                "event_type": event_type,
                "source": if given { "contract" } else { "schema" },
                "valid": check.status == hookscope::domain::contract::SchemaStatus::Pass,
                "body": body,
            })
        );
    } else {
        println!("{}", pretty(&body));
    }
    if check.status != hookscope::domain::contract::SchemaStatus::Pass {
        eprintln!(
            "hookscope: the example does not pass its own schema: {}",
            check.detail
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
