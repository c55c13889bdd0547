//! The command line: clap's argument definitions and one file per command. Each command is a
//! thin adapter: its arguments become a use-case request from `hookscope::app`, and what comes
//! back is printed. Errors are reported once, here, as one sentence on stderr prefixed with
//! `hookscope:`; a usage error exits 2, any other failure 1.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use hookscope::app::AppError;
use hookscope::app::paths::{LoadedConfig, Paths};
use hookscope::domain::fmt::Zone;

mod confirm;
mod diff;
mod example;
mod export;
mod import;
mod jobs;
mod list;
mod listen;
mod probe;
mod reconcile;
pub(crate) mod refused;
mod relay;
mod replay;
mod resend;
mod simulate;
mod verify;

/// A local inspector for webhook integrations: capture deliveries, check their signatures,
/// timestamps and event ids, and keep the history on disk.
#[derive(Debug, Parser)]
#[command(name = "hookscope", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub common: Common,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options every command accepts.
#[derive(Debug, Args, Clone)]
pub struct Common {
    /// Where the store and config live (default: the platform data dir, e.g. ~/.local/share/hookscope)
    #[arg(long, global = true, env = "HOOKSCOPE_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The config file (default: config.toml in the data dir)
    #[arg(long, global = true, env = "HOOKSCOPE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Show times in UTC (default: local time, honouring TZ); JSON is always UTC
    #[arg(long, global = true)]
    pub utc: bool,
}

impl Common {
    /// The data dir and config file these options name.
    pub fn paths(&self) -> Result<Paths, AppError> {
        Paths::resolve(self.data_dir.clone(), self.config.clone())
    }

    /// The zone human output is written in: UTC with `--utc`, else local time.
    pub fn zone(&self) -> Zone {
        if self.utc {
            Zone::utc()
        } else {
            hookscope::domain::clock::local_zone()
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the receiver headless and print each delivery as it arrives
    Listen(listen::ListenArgs),
    /// Check one request offline: exit 0 when signature and timestamp pass, 1 when a check fails, 2 on bad usage
    Verify(verify::VerifyArgs),
    /// List stored deliveries, newest first
    List(list::ListArgs),
    /// List async jobs with their state and flags, or show one job's timeline
    Jobs(jobs::JobsArgs),
    /// Ask the job API about every job seen within --since (24 h), finished or not: exit 1 when it disagrees with the webhooks (missed_terminal_event, state_mismatch, never_notified)
    Reconcile(reconcile::ReconcileArgs),
    /// Follow jobs by polling the job API alone until they finish: exit 0 when every job reached a terminal state
    Follow(reconcile::FollowArgs),
    /// Play an async job API and its at-least-once, unordered, retried webhooks against your handler and client, then score them: exit 0 when no check fails
    Simulate(simulate::SimulateArgs),
    /// Send a captured delivery again to a handler, as captured or re-signed
    Resend(resend::ResendArgs),
    /// Send many captured deliveries again (a filter, ids, a job, fixtures or a HAR file) at a rate, each attempt stored: exit 0 when every one was answered 2xx
    Replay(replay::ReplayArgs),
    /// Compare two stored deliveries, or one with its event's first, its job's previous or its forwarded copy (--with): headers, the body by JSON pointer (or line by line), the checks; exit 0 when nothing differs beyond what differs between any two attempts, 1 otherwise
    Diff(diff::DiffArgs),
    /// Confirm a subscription a provider asked to be confirmed (AWS SNS, Event Grid's manual validation): the one GET of its URL
    Confirm(confirm::ConfirmArgs),
    /// Print a valid body for an event type of a contract (OpenAPI, AsyncAPI or a folder of JSON Schemas): its own example, else one made from the schema
    Example(example::ExampleArgs),
    /// Export deliveries as test fixtures, HAR 1.2 or curl commands
    Export(export::ExportArgs),
    /// Import the requests of a HAR file into the store, checked like any delivery
    Import(import::ImportArgs),
    /// Run the receiver checklist against a handler: exit 0 only when every case passes
    Probe(probe::ProbeArgs),
    /// The relay: a public URL that keeps every delivery while this laptop sleeps, sealed so the relay cannot read it
    Relay(relay::RelayArgs),
    /// Print a shell completion script: hookscope completions bash > /etc/bash_completion.d/hookscope
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), as the package installs it
    #[command(hide = true)]
    Manpage,
}

/// Exit status for bad usage, as clap uses.
const EXIT_USAGE: u8 = 2;

/// Runs a parsed command and turns its outcome into an exit status.
pub fn run(common: &Common, command: Command) -> ExitCode {
    let result = match command {
        Command::Listen(args) => listen::run(common, args),
        Command::Verify(args) => verify::run(common, args),
        Command::List(args) => list::run(common, args),
        Command::Jobs(args) => jobs::run(common, args),
        Command::Reconcile(args) => reconcile::run(common, args),
        Command::Follow(args) => reconcile::follow(common, args),
        Command::Simulate(args) => simulate::run(common, args),
        Command::Resend(args) => resend::run(common, args),
        Command::Replay(args) => replay::run(common, args),
        Command::Confirm(args) => confirm::run(common, args),
        Command::Diff(args) => diff::run(common, args),
        Command::Relay(args) => relay::run(common, args),
        Command::Example(args) => example::run(common, args),
        Command::Export(args) => export::run(common, args),
        Command::Import(args) => import::run(common, args),
        Command::Probe(args) => probe::run(common, args),
        Command::Completions { shell } => {
            use clap::CommandFactory as _;
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "hookscope", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Manpage => {
            use clap::CommandFactory as _;
            clap_mangen::Man::new(Cli::command())
                .render(&mut std::io::stdout())
                .or_else(|e| match e.kind() {
                    // `hookscope manpage | head` closes the pipe early: not an error.
                    std::io::ErrorKind::BrokenPipe => Ok(()),
                    _ => Err(e),
                })
                .map(|()| ExitCode::SUCCESS)
                .map_err(|e| AppError::Failed(format!("cannot write the man page: {e}")))
        }
    };
    match result {
        Ok(code) => code,
        Err(err) if err.is_usage() => {
            eprintln!("hookscope: {}", refused::sentence(&err));
            ExitCode::from(EXIT_USAGE)
        }
        Err(err) => {
            eprintln!("hookscope: {}", refused::sentence(&err));
            ExitCode::FAILURE
        }
    }
}

/// Reads the config these options name, printing its warning (a world-readable file) once.
pub(crate) fn load_config(paths: &Paths) -> Result<LoadedConfig, AppError> {
    let loaded = paths.load_config()?;
    if let Some(warning) = &loaded.warning {
        eprintln!("hookscope: {warning}");
    }
    Ok(loaded)
}

/// The history for a command that only reads it (`list`, `jobs`, `export`), its `--filter`
/// checked first: a bad filter is an error even when there is nothing to filter. `None`, after
/// saying so on stderr, when nothing was ever captured.
fn captured_history(
    paths: &Paths,
    filter: Option<&str>,
) -> Result<Option<hookscope::store::Reader>, AppError> {
    if let Some(text) = filter {
        hookscope::app::list::parse_filter(text).map_err(list::with_flag)?;
    }
    let store_file = paths.store_file();
    let reader = hookscope::app::history::open_captured(&store_file)?;
    if reader.is_none() {
        eprintln!("{}", hookscope::app::history::nothing_captured(&store_file));
    }
    Ok(reader)
}

/// The bytes of a `--body-file`, or a usage error naming the file.
fn body_file(path: Option<&std::path::Path>) -> Result<Option<Vec<u8>>, AppError> {
    path.map(|path| {
        std::fs::read(path).map_err(|e| {
            AppError::Usage(format!("cannot read --body-file {}: {e}", path.display()))
        })
    })
    .transpose()
}

/// `--secret-env` and `--secret-file`, wherever `--secret` is accepted.
#[derive(Debug, Args, Clone, Default)]
pub struct SecretSources {
    /// Read a secret from this environment variable (repeatable; kept off the command line)
    #[arg(long = "secret-env", value_name = "NAME")]
    pub secret_env: Vec<String>,
    /// Read a secret from this file (repeatable; one secret per file, a final newline ignored)
    #[arg(long = "secret-file", value_name = "FILE")]
    pub secret_file: Vec<PathBuf>,
}

impl SecretSources {
    /// Every secret given: `--secret` values, then `--secret-env` variables, then
    /// `--secret-file` contents (a final newline dropped). A missing variable, an unreadable or
    /// empty file is a usage error that names it, never its value.
    pub fn with(&self, values: &[String]) -> Result<Vec<String>, AppError> {
        let mut out = values.to_vec();
        for name in &self.secret_env {
            match std::env::var(name) {
                Ok(value) if !value.is_empty() => out.push(value),
                Ok(_) => {
                    return Err(AppError::Usage(format!(
                        "--secret-env {name}: the variable is empty"
                    )));
                }
                Err(_) => {
                    return Err(AppError::Usage(format!(
                        "--secret-env {name}: the variable is not set"
                    )));
                }
            }
        }
        for path in &self.secret_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| AppError::Usage(format!("--secret-file {}: {e}", path.display())))?;
            let secret = text
                .strip_suffix('\n')
                .map(|s| s.strip_suffix('\r').unwrap_or(s))
                .unwrap_or(&text);
            if secret.is_empty() {
                return Err(AppError::Usage(format!(
                    "--secret-file {}: the file is empty",
                    path.display()
                )));
            }
            out.push(secret.to_string());
        }
        Ok(out)
    }
}

/// `0` when `ok`, else `1`.
/// One outbound request that records its attempt (a resend, a confirmation), made with a store
/// opened for it alone and shut down after; `--json` prints the attempt, else `say` does.
fn record_outbound<F>(
    store_file: &std::path::Path,
    json: bool,
    send: impl FnOnce(hookscope::store::StoreWriter) -> F,
    say: impl FnOnce(&hookscope::domain::attempt::Attempt),
) -> Result<hookscope::domain::attempt::Attempt, AppError>
where
    F: std::future::Future<Output = Result<hookscope::domain::attempt::Attempt, AppError>>,
{
    let store = hookscope::store::Store::open(store_file)?;
    let sent = hookscope::app::small_runtime()?.block_on(send(store.writer()));
    store.shutdown();
    let attempt = sent?;
    if json {
        let text = serde_json::to_string(&attempt).map_err(|e| AppError::Failed(e.to_string()))?;
        println!("{text}");
    } else {
        say(&attempt);
    }
    Ok(attempt)
}

fn exit_if(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
