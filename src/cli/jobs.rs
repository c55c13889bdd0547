//! `hookscope jobs` and `hookscope jobs show`: job timelines.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hookscope::app::{self, AppError, report};
use hookscope::domain::clock::now_ms;

use super::{Common, load_config};

/// `hookscope jobs`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct JobsArgs {
    #[command(subcommand)]
    pub show: Option<JobsCommand>,
    /// Print one JSON object per job
    #[arg(long)]
    pub json: bool,
    /// How many jobs, most recently active first
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Only jobs whose id starts with this
    #[arg(long, value_name = "PREFIX", default_value = "")]
    pub prefix: String,
    /// A job with no terminal state this many minutes after it was first seen is stuck (default: the config's, else 30)
    #[arg(long, value_name = "MINUTES")]
    pub stuck_after_mins: Option<u64>,
}

/// `hookscope jobs show`.
#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Print one job's timeline
    Show {
        /// The job id
        job_id: String,
        /// Print the timeline as JSON
        #[arg(long)]
        json: bool,
        /// A job with no terminal state this many minutes after it was first seen is stuck
        #[arg(long, value_name = "MINUTES")]
        stuck_after_mins: Option<u64>,
    },
}

pub fn run(common: &Common, args: JobsArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let zone = common.zone();
    let file = load_config(&paths)?.file;
    let Some(reader) = super::captured_history(&paths, None)? else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut stdout = std::io::stdout().lock();
    let io = |e: std::io::Error| AppError::Failed(e.to_string());
    if let Some(JobsCommand::Show {
        job_id,
        json,
        stuck_after_mins,
    }) = args.show
    {
        let stuck = app::jobs::stuck_after_ms(stuck_after_mins, &file);
        let timeline = app::jobs::one(&reader, &job_id, now_ms(), stuck)?;
        if json {
            let text =
                serde_json::to_string(&timeline).map_err(|e| AppError::Failed(e.to_string()))?;
            writeln!(stdout, "{text}").map_err(io)?;
        } else {
            write!(stdout, "{}", report::timeline_text(&timeline, &zone)).map_err(io)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let stuck = app::jobs::stuck_after_ms(args.stuck_after_mins, &file);
    for timeline in app::jobs::recent(&reader, &args.prefix, args.limit, now_ms(), stuck)? {
        let line = if args.json {
            report::job_summary_json(&timeline).to_string()
        } else {
            report::job_summary_line(&timeline, &zone)
        };
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}
