//! `hookscope diff A B`: two stored deliveries compared.

use std::process::ExitCode;

use clap::Args;
use hookscope::app::{self, AppError};

use super::{Common, exit_if};

/// `hookscope diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first delivery (its id in `list`)
    pub a: i64,
    /// The second delivery
    pub b: i64,
    /// Print the comparison as JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(common: &Common, args: DiffArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let store_file = paths.store_file();
    let Some(reader) = app::history::open_captured(&store_file)? else {
        return Err(AppError::Usage(format!(
            "no delivery #{} in the store: {}",
            args.a,
            app::history::nothing_captured(&store_file)
        )));
    };
    let comparison = app::compare::compare(&reader, args.a, args.b)?;
    if args.json {
        let text =
            serde_json::to_string(&comparison).map_err(|e| AppError::Failed(e.to_string()))?;
        println!("{text}");
    } else {
        println!("{}", hookscope::domain::compare::human_lines(&comparison));
    }
    // As diff(1): 0 when nothing differs beyond what differs between any two attempts.
    Ok(exit_if(!comparison.differs))
}
