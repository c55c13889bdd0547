//! `hookscope replay`: many captured deliveries sent again to a handler, at a rate, with a
//! progress bar on a terminal and a summary at the end.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use hookscope::app::replay::{self, Pace, Progress, ReplayRequest, Selection};
use hookscope::app::{self, AppError};
use hookscope::store::{Reader, Store};

use super::{Common, exit_if, load_config};

/// `hookscope replay`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("selection").required(true).args(["filter", "ids", "job", "fixtures", "har"])))]
pub struct ReplayArgs {
    /// The deliveries the list's filter selects, e.g. 'type:invoice.* after:-2h'
    #[arg(long, value_name = "FILTER")]
    pub filter: Option<String>,
    /// Deliveries by id: 1,2,7-9 (or 3 4)
    #[arg(long, value_name = "IDS", num_args = 1..)]
    pub ids: Vec<String>,
    /// A job's deliveries
    #[arg(long, value_name = "JOB")]
    pub job: Option<String>,
    /// A folder of fixtures (or one fixture file) from `export --format fixture`: stored, then replayed
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
    /// A HAR file: its requests stored, then replayed
    #[arg(long, value_name = "FILE")]
    pub har: Option<PathBuf>,
    /// The handler's URL, e.g. http://localhost:3000/webhooks
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// Re-sign each with a fresh timestamp (default: send exactly as captured)
    #[arg(long)]
    pub resign: bool,
    /// The scheme to sign with (default: each delivery's)
    #[arg(long, value_name = "NAME", requires = "resign")]
    pub scheme: Option<String>,
    /// The secret to sign with; repeat for several signatures (default: each endpoint's)
    #[arg(long = "secret", value_name = "S", requires = "resign")]
    pub secrets: Vec<String>,
    #[command(flatten)]
    pub secret_sources: super::SecretSources,
    /// Give each event a new id (new events, not retries)
    #[arg(long)]
    pub new_ids: bool,
    /// Send at this rate: 20/s, 300/m, 3600/h (default: as fast as --concurrency allows)
    #[arg(long, value_name = "R", conflicts_with = "speed")]
    pub rate: Option<String>,
    /// Keep the original spacing between arrivals, this many times faster (1: as it came)
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// At most this many requests in flight
    #[arg(long, value_name = "C", default_value_t = replay::DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
    /// How long the handler has to answer each
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub timeout_secs: u64,
    /// Accept any TLS certificate: for a handler on a self-signed development certificate only
    #[arg(long)]
    pub insecure: bool,
    /// Print the summary as JSON
    #[arg(long)]
    pub json: bool,
    /// Write a JUnit report: one test case per delivery
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

impl ReplayArgs {
    fn selection(&self) -> Result<Selection, AppError> {
        Ok(if let Some(filter) = &self.filter {
            Selection::Filter(filter.clone())
        } else if !self.ids.is_empty() {
            Selection::Ids(app::list::parse_ids(&self.ids)?)
        } else if let Some(job) = &self.job {
            Selection::Job(job.clone())
        } else if let Some(dir) = &self.fixtures {
            Selection::Fixtures(dir.clone())
        } else if let Some(har) = &self.har {
            Selection::Har(har.clone())
        } else {
            return Err(AppError::Usage(
                "say what to replay: --filter, --ids, --job, --fixtures or --har".into(),
            ));
        })
    }

    fn request(&self) -> Result<ReplayRequest, AppError> {
        let pace = match (&self.rate, self.speed) {
            (Some(rate), _) => Pace::Rate(replay::parse_rate(rate)?),
            (None, Some(speed)) => Pace::Speed(speed),
            (None, None) => Pace::Asap,
        };
        let secrets = self.secret_sources.with(&self.secrets)?;
        if !self.resign && !secrets.is_empty() {
            return Err(AppError::Usage(
                "--secret-env and --secret-file are for --resign: without it each delivery is sent as captured".into(),
            ));
        }
        let request = ReplayRequest {
            url: self.to.clone(),
            resign: self.resign,
            scheme: self.scheme.clone(),
            secrets,
            new_ids: self.new_ids,
            pace,
            concurrency: self.concurrency,
            timeout: Duration::from_secs(self.timeout_secs),
            insecure: self.insecure,
            self_signed_hint: Some(super::refused::SELF_SIGNED_HINT),
        };
        request.check()?;
        Ok(request)
    }
}

pub fn run(common: &Common, args: ReplayArgs) -> Result<ExitCode, AppError> {
    let request = args.request()?;
    let selection = args.selection()?;
    let paths = common.paths()?;
    let file = load_config(&paths)?.file;
    let store_file = paths.store_file();
    let store = Store::open(&store_file)?;
    let writer = store.writer();
    let reader = Reader::open(&store_file)?;
    let ids = match replay::select(&file, &reader, &writer, &selection) {
        Ok(ids) => ids,
        Err(e) => {
            drop(writer);
            store.shutdown();
            return Err(e);
        }
    };
    drop(reader);
    let progress = Progress::new(ids.len());
    let bar = std::io::stderr().is_terminal();
    let runtime = app::small_runtime()?;
    let summary = runtime.block_on(async {
        let replaying = replay::run(
            &file,
            &store_file,
            &writer,
            &ids,
            &request,
            progress.clone(),
        );
        tokio::pin!(replaying);
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        let mut asked = false;
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        let terminated = app::background::terminated();
        tokio::pin!(terminated);
        loop {
            tokio::select! {
                summary = &mut replaying => break summary,
                _ = &mut ctrl_c, if !asked => {
                    asked = true;
                    progress.stop("interrupted (Ctrl+C)");
                }
                _ = &mut terminated, if !asked => {
                    asked = true;
                    progress.stop("terminated (SIGTERM)");
                }
                _ = tick.tick(), if bar => {
                    let snapshot = progress.snapshot();
                    eprint!("\r\x1b[2K{} {}", bar_of(snapshot.fraction()), snapshot.line());
                    let _ = std::io::stderr().flush();
                }
            }
        }
    });
    if bar {
        eprint!("\r\x1b[2K");
    }
    drop(writer);
    store.shutdown();
    let mut summary = summary?;
    summary.word(super::refused::say);
    if let Some(path) = &args.junit {
        let unsent = replay::unsent_ids(&ids, &summary);
        std::fs::write(path, summary.junit(&unsent))
            .map_err(|e| AppError::Failed(format!("cannot write {}: {e}", path.display())))?;
    }
    if args.json {
        println!("{}", summary.json());
    } else {
        println!("{}", summary.sentence());
        // When nothing answered, the sentence says why; a line per delivery would repeat it.
        let failures = summary.failures();
        if summary.outcomes.iter().any(|o| o.status.is_some()) {
            for failure in failures.iter().take(20) {
                let what = failure.event_type.as_deref().unwrap_or("");
                println!("  #{} {what}: {}", failure.delivery_id, failure.result());
            }
            if failures.len() > 20 {
                println!(
                    "  … and {} more (--json lists them all)",
                    failures.len() - 20
                );
            }
        }
    }
    Ok(exit_if(summary.all_succeeded()))
}

/// A 24-cell bar: `[██████░░░░░░…]`.
fn bar_of(fraction: f32) -> String {
    let cells = 24;
    let full = ((fraction.clamp(0.0, 1.0) * cells as f32).round() as usize).min(cells);
    format!("[{}{}]", "█".repeat(full), "░".repeat(cells - full))
}
