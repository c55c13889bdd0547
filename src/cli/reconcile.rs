//! `hookscope reconcile` and `hookscope follow`: ask the job API what webhooks missed.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Args;
use hookscope::app::reconcile::{self, ReconcileRequest, Which};
use hookscope::app::{self, AppError, report};
use hookscope::config::{Overrides, Settings};
use hookscope::store::Store;

use super::{Common, load_config};

/// `hookscope reconcile`.
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// Ask about this job only (default: every job seen within --since, finished or not, and the in-flight listing)
    #[arg(long, value_name = "ID")]
    pub job: Option<String>,
    /// How far back to look for jobs: a number and s, m, h, d or w
    #[arg(long, value_name = "SPAN", default_value = "24h", value_parser = span)]
    pub since: i64,
    /// The most jobs to ask about, the most recently seen first
    #[arg(long, value_name = "N", default_value_t = reconcile::ON_DEMAND_LIMIT)]
    pub limit: usize,
    /// Ask only about jobs with no terminal state past the stuck threshold, as the background pass does
    #[arg(long, conflicts_with_all = ["job", "limit", "since"])]
    pub quiet_only: bool,
    /// Ask this endpoint's job API only (its path, as in the config)
    #[arg(long, value_name = "PATH")]
    pub endpoint: Option<String>,
    /// Print one JSON object per job
    #[arg(long)]
    pub json: bool,
    /// A job with no terminal state this many minutes after it was first seen is stuck, and with --quiet-only the only kind asked about (default: the config's, else 30)
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

/// `--since`: a span such as 24h, 90m or 7d, above zero, in milliseconds.
fn span(value: &str) -> Result<i64, String> {
    hookscope::domain::filter::span_ms(value)
        .filter(|ms| *ms > 0)
        .ok_or_else(|| format!("takes a span of time such as 24h, 90m or 7d, not \"{value}\""))
}

pub fn run(common: &Common, args: ReconcileArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let file = load_config(&paths)?.file;
    let settings = Settings::resolve(&file, &Overrides::default())?;
    let stuck = app::jobs::stuck_after_ms(args.stuck_after_mins, &file);
    if args.limit == 0 {
        return Err(AppError::Usage(
            "--limit takes a number of jobs above 0".into(),
        ));
    }
    let which = if args.quiet_only {
        Which::Quiet
    } else {
        Which::Seen {
            since_ms: args.since,
            limit: args.limit,
        }
    };
    let request = ReconcileRequest {
        job: args.job,
        endpoint: args.endpoint,
        which,
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
    if reconciled.left_out > 0 {
        eprintln!(
            "hookscope: asked about the {} most recently seen jobs; {} more were seen within --since: raise --limit or narrow --since",
            args.limit, reconciled.left_out
        );
    }
    if reconciled.timelines.is_empty() && !args.json {
        writeln!(stdout, "{}", reconciled.nothing_found).map_err(io)?;
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
