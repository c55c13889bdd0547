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
    #[arg(required_unless_present = "with", conflicts_with = "with")]
    pub b: Option<i64>,
    /// Compare A with its partner instead: the first delivery of its event, its job's
    /// previous delivery, or the copy forwarded to the handler, as sent
    #[arg(long, value_enum, value_name = "WHICH")]
    pub with: Option<app::compare::With>,
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
    let comparison = match (args.b, args.with) {
        (Some(b), _) => app::compare::compare(&reader, args.a, b)?,
        (None, Some(with)) => app::compare::compare_with(&reader, args.a, with)?,
        (None, None) => {
            return Err(AppError::Usage(
                "give a second delivery, or --with first|previous|forwarded".into(),
            ));
        }
    };
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
