//! `hookscope list`: the newest deliveries, as lines or JSON.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;
use hookscope::app::{self, AppError, report};

use super::Common;

/// `hookscope list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print one JSON object per line
    #[arg(long)]
    pub json: bool,
    /// How many deliveries (newest first)
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Only deliveries matching a filter (the window's language: sig:fail, type:…, free words)
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
}

pub fn run(common: &Common, args: ListArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let zone = common.zone();
    let Some(reader) = super::captured_history(&paths, args.filter.as_deref())? else {
        return Ok(ExitCode::SUCCESS);
    };
    let deliveries =
        app::list::newest(&reader, args.filter.as_deref(), args.limit).map_err(with_flag)?;
    let mut stdout = std::io::stdout().lock();
    for stored in deliveries {
        let line = if args.json {
            let attempts = reader.attempts_for(stored.id)?;
            report::delivery_json(&stored, &attempts).to_string()
        } else {
            report::human_lines(&stored, &zone)
        };
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A filter error names the flag it came from.
pub fn with_flag(err: AppError) -> AppError {
    match err {
        AppError::Filter(e) => AppError::Usage(format!("--filter: {e}")),
        other => other,
    }
}
