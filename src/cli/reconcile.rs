//! `hookscope reconcile` and `hookscope follow`: ask the job API what webhooks missed.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;
use hookscope::app::reconcile::{self, ReconcileRequest};
use hookscope::app::{self, AppError, report};
use hookscope::config::{Overrides, Settings};
use hookscope::store::Store;

use super::{Common, load_config};

/// `hookscope reconcile`.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// Ask about this job only (default: every job without a terminal state past the stuck threshold, and the in-flight listing)
    #[arg(long, value_name = "ID")]
    pub job: Option<String>,
    /// Ask this endpoint's job API only (its path, as in the config)
    #[arg(long, value_name = "PATH")]
    pub endpoint: Option<String>,
    /// Print one JSON object per job
    #[arg(long)]
    pub json: bool,
    /// A job with no terminal state this many minutes after it was first seen is asked about (default: the config's, else 30)
    #[arg(long, value_name = "MINUTES")]
    pub stuck_after_mins: Option<u64>,
}

/// `hookscope follow`.
#[derive(Debug, Args)]
pub struct FollowArgs {
    /// The endpoint whose job API to poll (its path, as in the config)
    #[arg(long, value_name = "PATH")]
    pub endpoint: String,
    /// A job to follow; repeat for several
    #[arg(long = "job", value_name = "ID", required = true)]
    pub jobs: Vec<String>,
    /// Print each poll and the final timelines as JSON, one object per line
    #[arg(long)]
    pub json: bool,
}

pub fn run(common: &Common, args: ReconcileArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let file = load_config(&paths)?.file;
    let settings = Settings::resolve(&file, &Overrides::default())?;
    let stuck = app::jobs::stuck_after_ms(args.stuck_after_mins, &file);
    let request = ReconcileRequest {
        job: args.job,
        endpoint: args.endpoint,
    };
    let store = Store::open(&paths.store_file())?;
    let writer = store.writer();
    let outcome = app::small_runtime()?.block_on(reconcile::reconcile(
        &settings,
        store.path(),
        &writer,
        &request,
        stuck,
    ));
    drop(writer);
    store.shutdown();
    let reconciled = outcome?;
    for problem in &reconciled.problems {
        eprintln!("hookscope: {problem}");
    }
    let mut stdout = std::io::stdout().lock();
    let io = |e: std::io::Error| AppError::Failed(e.to_string());
    if reconciled.timelines.is_empty() && !args.json {
        writeln!(
            stdout,
            "no job to reconcile: none is past the stuck threshold without a terminal state, and no listing named a new one"
        )
        .map_err(io)?;
    }
    for timeline in &reconciled.timelines {
        let line = if args.json {
            report::reconcile_json(timeline).to_string()
        } else {
            report::reconcile_line(timeline)
        };
        writeln!(stdout, "{line}").map_err(io)?;
    }
    Ok(if reconciled.disagrees() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub fn follow(common: &Common, args: FollowArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let zone = common.zone();
    let file = load_config(&paths)?.file;
    let settings = Settings::resolve(&file, &Overrides::default())?;
    let stuck = app::jobs::stuck_after_ms(None, &file);
    let store = Store::open(&paths.store_file())?;
    let writer = store.writer();
    let json = args.json;
    let outcome = app::small_runtime()?.block_on(reconcile::follow(
        &settings,
        store.path(),
        &writer,
        &args.endpoint,
        &args.jobs,
        stuck,
        |poll| {
            let line = if json {
                report::poll_json(poll).to_string()
            } else {
                report::poll_line(poll, &zone)
            };
            println!("{line}");
        },
    ));
    drop(writer);
    store.shutdown();
    let timelines = outcome?;
    let mut finished = true;
    for timeline in &timelines {
        let done = timeline.terminal || timeline.polls.last().is_some_and(|p| p.terminal());
        finished &= done;
        if json {
            println!("{}", report::reconcile_json(timeline));
        } else {
            print!("{}", report::timeline_text(timeline, &zone));
        }
    }
    Ok(if finished {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
