//! The command line: `listen`, `verify`, `list`, and the options they share.
//!
//! Parsing is clap's; each command returns an exit code. Errors are reported once, here, as one
//! sentence on stderr prefixed with `hookscope:`.

use std::io::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, RwLock};

use anyhow::{Context as _, anyhow};
use clap::{Args, Parser, Subcommand};

use crate::checks::{self, SignatureStatus, TimestampStatus};
use crate::config::{self, ConfigFile, Endpoint, Overrides, Settings};
use crate::delivery::{Delivery, Header};
use crate::receiver::Receiver;
use crate::report;
use crate::scheme::{Scheme, Secret};
use crate::store::{Reader, Store};

/// The store's file name inside the data directory.
pub const STORE_FILE: &str = "hookscope.sqlite";
/// The config's file name inside the data directory.
pub const CONFIG_FILE: &str = "config.toml";

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
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the receiver headless and print each delivery as it arrives
    Listen(ListenArgs),
    /// Check one request offline: exit 0 when signature and timestamp pass, 1 when a check fails, 2 on bad usage
    Verify(VerifyArgs),
    /// List stored deliveries, newest first
    List(ListArgs),
    /// List async jobs with their state and flags, or show one job's timeline
    Jobs(JobsArgs),
    /// Send a captured delivery again to a handler, as captured or re-signed
    Resend(ResendArgs),
    /// Export deliveries as test fixtures, HAR 1.2 or curl commands
    Export(ExportArgs),
    /// Import the requests of a HAR file into the store, checked like any delivery
    Import(ImportArgs),
    /// Run the receiver checklist against a handler: exit 0 only when every case passes
    Probe(ProbeArgs),
    /// Developer tools for benchmarks: seed a store, load a receiver, run a bare server to compare
    #[command(subcommand)]
    Dev(DevCommand),
}

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

/// `hookscope resend`.
#[derive(Debug, Args)]
pub struct ResendArgs {
    /// The delivery to resend (its id in `list`)
    pub delivery_id: i64,
    /// The handler's URL, e.g. http://localhost:3000/webhooks
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// Re-sign with a fresh timestamp (default: send exactly as captured, an honest replay)
    #[arg(long)]
    pub resign: bool,
    /// Give the event a new id (a new event, not a retry)
    #[arg(long)]
    pub new_id: bool,
    /// The scheme to sign with (default: the delivery's)
    #[arg(long, value_name = "NAME")]
    pub scheme: Option<String>,
    /// The secret to sign with; repeat for several signatures (default: its endpoint's)
    #[arg(long = "secret", value_name = "S")]
    pub secrets: Vec<String>,
    /// Send this body instead (the signature is computed over it)
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// How long the handler has to answer
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub timeout_secs: u64,
    /// Print the attempt as JSON
    #[arg(long)]
    pub json: bool,
}

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// hookscope fixtures (JSON; see assets/fixture.schema.json)
    Fixture,
    /// HAR 1.2
    Har,
    /// a shell script of curl commands
    Curl,
}

/// `hookscope export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// What to write
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Deliveries by id
    #[arg(long, num_args = 1.., value_name = "ID", conflicts_with = "filter", required_unless_present = "filter")]
    pub ids: Vec<i64>,
    /// Deliveries matching a filter (the list's language, e.g. 'sig:fail type:job.failed')
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Fixtures: re-sign under a generated test secret written into the fixture (the real secret never is)
    #[arg(long)]
    pub resign_with_test_secret: bool,
    /// Fixtures: the scheme to re-sign with when a delivery has none
    #[arg(long, value_name = "NAME")]
    pub scheme: Option<String>,
    /// Fixtures: replace the JSON value at this pointer with "[redacted]" (repeatable; needs --resign-with-test-secret)
    #[arg(long, value_name = "PTR")]
    pub redact: Vec<String>,
    /// Fixtures: write example tests (pytest, node:test, Rust) beside each fixture
    #[arg(long)]
    pub snippets: bool,
    /// The file to write; for fixtures, a directory (ending in /) gets one file per delivery
    #[arg(long, value_name = "PATH")]
    pub out: PathBuf,
}

/// `hookscope import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A HAR file (from Chrome DevTools, Insomnia, HTTP Toolkit or hookscope)
    pub file: PathBuf,
}

/// `hookscope probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The handler's URL, e.g. http://localhost:3000/webhooks
    pub url: String,
    /// The scheme the handler verifies
    #[arg(long, value_name = "NAME")]
    pub scheme: String,
    /// The handler's signing secret
    #[arg(long = "secret", value_name = "S", required = true)]
    pub secrets: Vec<String>,
    /// A body to send (JSON; its top-level "id" is replaced in each case)
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// How long the handler has to answer (the sender's timeout)
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub timeout_secs: u64,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
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

/// `hookscope dev …`.
#[derive(Debug, Subcommand)]
pub enum DevCommand {
    /// Fill the store with N synthetic, correctly checked deliveries (a mix of schemes, job
    /// events, failing signatures and duplicates)
    Seed {
        /// How many deliveries to add
        #[arg(long, default_value_t = 1000)]
        count: usize,
    },
    /// Send signed deliveries to a receiver over many connections and report throughput and latency
    Load {
        /// Where to send
        #[arg(long, value_name = "URL")]
        url: String,
        /// Concurrent connections
        #[arg(long, default_value_t = 64)]
        connections: usize,
        /// How long, in seconds
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Offered requests per second (0: as fast as possible)
        #[arg(long, default_value_t = 0)]
        rate: u64,
        /// Body size in bytes
        #[arg(long, default_value_t = 1024)]
        body_size: usize,
        /// Sign as this scheme (with --secret)
        #[arg(long, value_name = "NAME", requires = "secret")]
        scheme: Option<String>,
        /// The signing secret
        #[arg(long, value_name = "S")]
        secret: Option<String>,
    },
    /// A bare HTTP server answering 200 without checking or storing, to compare `listen` against
    Bare {
        /// The port (0: a free one)
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
}

/// `hookscope listen`.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// The port to listen on; 0 picks a free port (default: the config's, else 7878)
    #[arg(long, short = 'p')]
    pub port: Option<u16>,
    /// The address to bind; anything but loopback exposes captured secrets to the network
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// The scheme for paths no [[endpoint]] covers (a preset or a [[scheme]] name)
    #[arg(long, value_name = "NAME")]
    pub scheme: Option<String>,
    /// A signing secret; repeat for a rotation
    #[arg(long = "secret", value_name = "S")]
    pub secrets: Vec<String>,
    /// Timestamp tolerance in seconds (default: the scheme's)
    #[arg(long, value_name = "SECS")]
    pub tolerance: Option<u64>,
    /// The status to answer with (default 200)
    #[arg(long, value_name = "CODE", value_parser = clap::value_parser!(u16).range(100..=599))]
    pub respond_status: Option<u16>,
    /// Wait this long before answering, to watch a sender's timeout
    #[arg(long, value_name = "MS")]
    pub respond_delay_ms: Option<u64>,
    /// Print one JSON object per delivery on stdout
    #[arg(long)]
    pub json: bool,
    /// Forward every delivery, byte-exact, to this URL (e.g. http://localhost:3000/webhooks)
    #[arg(long, value_name = "URL")]
    pub forward_to: Option<String>,
    /// Answer the sender with the forwarded handler's status instead of hookscope's own
    #[arg(long, requires = "forward_to")]
    pub mirror_response: bool,
}

/// `hookscope verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The scheme: a preset (standard-webhooks, svix, stripe, github, shopify, slack, paddle) or a [[scheme]] name
    #[arg(long, value_name = "NAME", required_unless_present = "fixture")]
    pub scheme: Option<String>,
    /// A signing secret; repeat to try several (rotation)
    #[arg(long = "secret", value_name = "S", required_unless_present = "fixture")]
    pub secrets: Vec<String>,
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
    /// The URL the request was sent to (its path and query are recorded)
    #[arg(long)]
    pub url: Option<String>,
    /// Timestamp tolerance in seconds (default: the scheme's)
    #[arg(long, value_name = "SECS")]
    pub tolerance: Option<u64>,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

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

/// A mistake in the command line: reported in one sentence, exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

/// A scheme by name (a `[[scheme]]` of the config, else a preset), or a usage error.
fn scheme_named(file: &ConfigFile, name: &str) -> anyhow::Result<crate::scheme::Scheme> {
    config::find_scheme(file, name)?.ok_or_else(|| {
        UsageError(format!(
            "unknown scheme \"{name}\": use a preset ({}) or a [[scheme]] from the config",
            config::preset_names()
        ))
        .into()
    })
}

/// The bytes of a `--body-file`, or a usage error naming the file.
fn body_file(path: Option<&Path>) -> anyhow::Result<Option<Vec<u8>>> {
    path.map(|path| {
        std::fs::read(path).map_err(|e| {
            UsageError(format!("cannot read --body-file {}: {e}", path.display())).into()
        })
    })
    .transpose()
}

/// Exit status for bad usage, as clap uses.
const EXIT_USAGE: u8 = 2;

/// Parses the arguments and runs the command.
pub fn main_with_args(cli: Cli) -> ExitCode {
    let result = match cli.command {
        None => {
            // The binary opens the window itself when no command is given; a library caller
            // without one gets the help.
            use clap::CommandFactory as _;
            let _ = Cli::command().print_help();
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Listen(args)) => listen(&cli.common, args),
        Some(Command::Verify(args)) => verify(&cli.common, args),
        Some(Command::List(args)) => list(&cli.common, args),
        Some(Command::Dev(DevCommand::Seed { count })) => seed(&cli.common, count),
        Some(Command::Dev(DevCommand::Load {
            url,
            connections,
            seconds,
            rate,
            body_size,
            scheme,
            secret,
        })) => load(url, connections, seconds, rate, body_size, scheme, secret),
        Some(Command::Dev(DevCommand::Bare { port })) => {
            crate::loadgen::serve_bare(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
                .map(|_| ExitCode::SUCCESS)
                .map_err(|e| anyhow!(e))
        }
        Some(Command::Jobs(args)) => jobs(&cli.common, args),
        Some(Command::Resend(args)) => resend(&cli.common, args),
        Some(Command::Export(args)) => export(&cli.common, args),
        Some(Command::Import(args)) => import(&cli.common, args),
        Some(Command::Probe(args)) => probe(&cli.common, args),
    };
    match result {
        Ok(code) => code,
        Err(err) if err.downcast_ref::<UsageError>().is_some() => {
            eprintln!("hookscope: {err}");
            ExitCode::from(EXIT_USAGE)
        }
        Err(err) => {
            eprintln!("hookscope: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The data directory: `--data-dir`, `HOOKSCOPE_DATA_DIR`, or the platform's.
pub fn data_dir(common: &Common) -> anyhow::Result<PathBuf> {
    match &common.data_dir {
        Some(dir) => Ok(dir.clone()),
        None => config::default_data_dir().ok_or_else(|| {
            anyhow!("no home directory found for the default data dir; pass --data-dir")
        }),
    }
}

fn config_path(common: &Common, data_dir: &Path) -> PathBuf {
    common
        .config
        .clone()
        .unwrap_or_else(|| data_dir.join(CONFIG_FILE))
}

fn load_config(common: &Common, data_dir: &Path) -> anyhow::Result<ConfigFile> {
    let path = config_path(common, data_dir);
    if common.config.is_some() && !path.exists() {
        return Err(anyhow!("the config file {} does not exist", path.display()));
    }
    let file = config::load_file(&path).map_err(|e| {
        anyhow!("{e} (fix it, or move it aside: hookscope then starts with the defaults)")
    })?;
    if let Some(warning) = config::permission_warning(&path) {
        eprintln!("hookscope: {warning}");
    }
    Ok(file)
}

fn listen(common: &Common, args: ListenArgs) -> anyhow::Result<ExitCode> {
    let dir = data_dir(common)?;
    let file = load_config(common, &dir)?;
    let overrides = Overrides {
        scheme: args.scheme.clone(),
        secrets: args.secrets.iter().map(Secret::new).collect(),
        tolerance_secs: args.tolerance,
        respond_status: args.respond_status,
        respond_delay_ms: args.respond_delay_ms,
    };
    let settings = Settings::resolve(&file, &overrides)?;
    let bind: IpAddr = match (args.bind, &file.receiver.bind) {
        (Some(ip), _) => ip,
        (None, Some(text)) => text.parse().with_context(|| {
            format!("[receiver] bind = \"{text}\" in the config is not an IP address")
        })?,
        (None, None) => IpAddr::from([127, 0, 0, 1]),
    };
    let port = args
        .port
        .or(file.receiver.port)
        .unwrap_or(config::DEFAULT_PORT);

    let (store, recovered) = Store::open_or_recover(&dir.join(STORE_FILE))?;
    if let Some(sentence) = recovered {
        eprintln!("hookscope: {sentence}");
    }
    let (events_tx, mut events_rx) = tokio::sync::mpsc::channel(1024);
    let shared = Arc::new(RwLock::new(Arc::new(settings.clone())));
    let controls = Arc::new(crate::receiver::Controls::default());
    if let Some(url) = &args.forward_to {
        crate::send::Client::new(crate::send::DEFAULT_TIMEOUT)?;
        if !url.starts_with("http://") {
            return usage(format!(
                "--forward-to {url}: give an http:// URL of a handler on this machine"
            ));
        }
        if let Ok(mut guard) = controls.forward_to.write() {
            *guard = Some(url.clone());
        }
        controls
            .mirror_response
            .store(args.mirror_response, std::sync::atomic::Ordering::SeqCst);
    }
    let receiver = Receiver::start(
        bind,
        port,
        shared,
        store.writer(),
        Some(events_tx),
        controls,
    )?;
    let addr = receiver.local_addr();
    if !bind.is_loopback() {
        eprintln!(
            "hookscope: warning: listening on {bind}, reachable from other machines; captured deliveries and their signatures are visible to anyone who can reach this port"
        );
    }
    eprintln!("listening on http://{addr}");
    for endpoint in &settings.endpoints {
        eprintln!("  {}", describe_endpoint(endpoint));
    }
    eprintln!("  store: {}", store.path().display());
    if let Some(url) = &args.forward_to {
        let answer = if args.mirror_response {
            "the handler's status"
        } else {
            "its own status"
        };
        eprintln!("  forwarding every delivery to {url}; the sender gets {answer}");
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")?;
    let json = args.json;
    runtime.block_on(async {
        let mut stdout = std::io::stdout();
        loop {
            tokio::select! {
                event = events_rx.recv() => {
                    let Some(stored) = event else { break };
                    let line = if json {
                        report::delivery_json(&stored).to_string()
                    } else {
                        report::human_lines(&stored)
                    };
                    // A closed stdout (e.g. `| head`) ends the command rather than panicking.
                    if writeln!(stdout, "{line}").and_then(|_| stdout.flush()).is_err() {
                        break;
                    }
                }
                _ = tokio::signal::ctrl_c() => break,
            }
        }
    });
    drop(events_rx);
    receiver.stop();
    store.shutdown();
    Ok(ExitCode::SUCCESS)
}

fn describe_endpoint(endpoint: &Endpoint) -> String {
    let scheme = match &endpoint.scheme {
        Some(s) => s.name.clone(),
        None => "detect scheme from headers".into(),
    };
    let secrets = match endpoint.secrets.len() {
        0 => "no secret".to_string(),
        1 => "1 secret".to_string(),
        n => format!("{n} secrets"),
    };
    let delay = if endpoint.respond_delay_ms > 0 {
        format!(" after {} ms", endpoint.respond_delay_ms)
    } else {
        String::new()
    };
    format!(
        "{path:<20} {scheme}, {secrets}, answers {status}{delay}",
        path = endpoint.path,
        status = endpoint.respond_status
    )
}

/// A usage error: reported, exit 2.
fn usage(message: String) -> anyhow::Result<ExitCode> {
    eprintln!("hookscope: {message}");
    Ok(ExitCode::from(EXIT_USAGE))
}

fn verify(common: &Common, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let dir = data_dir(common)?;
    let file = load_config(common, &dir)?;
    let loaded = match &args.fixture {
        Some(path) => {
            let text = match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(e) => return usage(format!("cannot read --fixture {}: {e}", path.display())),
            };
            match crate::export::load_fixture(&text) {
                Ok(loaded) => Some(loaded),
                Err(e) => return usage(format!("{}: {e}", path.display())),
            }
        }
        None => None,
    };
    let scheme_name = args
        .scheme
        .clone()
        .or_else(|| loaded.as_ref().and_then(|l| l.scheme.clone()))
        .unwrap_or_default();
    let scheme = scheme_named(&file, &scheme_name)?;
    if let Some(loaded) = loaded {
        let secrets: Vec<Secret> =
            if args.secrets.is_empty() {
                match &loaded.secret {
                    Some(secret) => vec![secret.clone()],
                    None => return usage(
                        "the fixture was exported as captured and holds no secret: give --secret"
                            .into(),
                    ),
                }
            } else {
                args.secrets.iter().map(Secret::new).collect()
            };
        let now = args.now.unwrap_or(loaded.delivery.received_at_ms / 1000);
        let endpoint = Endpoint {
            scheme: Some(scheme),
            secrets,
            tolerance_secs: args.tolerance,
            ..Endpoint::catch_all()
        };
        let evaluation = checks::evaluate(&loaded.delivery, &endpoint, now);
        return Ok(print_verdict(&loaded.delivery, &evaluation, args.json));
    }
    let mut headers = Vec::new();
    for raw in &args.headers {
        let Some((name, value)) = raw.split_once(':') else {
            return usage(format!("-H '{raw}' is not of the form 'Name: value'"));
        };
        let name = name.trim();
        if name.is_empty()
            || name
                .bytes()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return usage(format!("-H '{raw}' has an invalid header name"));
        }
        headers.push(Header::new(name, value.trim()));
    }
    let body = match (&args.data, &args.body_file) {
        (Some(data), _) => data.clone().into_bytes(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
                .context("cannot read the body from stdin")?;
            bytes
        }
        (None, Some(path)) => body_file(Some(path))?.unwrap_or_default(),
        (None, None) => return usage("give the body with --data or --body-file".into()),
    };
    let (path, query) = match &args.url {
        Some(url) => split_url(url),
        None => ("/".to_string(), String::new()),
    };
    let now = match args.now {
        Some(now) => now,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
    };
    let delivery = Delivery {
        received_at_ms: now.saturating_mul(1000),
        method: "POST".into(),
        path,
        query,
        headers,
        body_size: body.len() as u64,
        body,
        body_complete: true,
        remote_addr: None,
    };
    let endpoint = Endpoint {
        scheme: Some(scheme),
        secrets: args.secrets.iter().map(Secret::new).collect(),
        tolerance_secs: args.tolerance,
        ..Endpoint::catch_all()
    };
    let evaluation = checks::evaluate(&delivery, &endpoint, now);
    Ok(print_verdict(&delivery, &evaluation, args.json))
}

/// Prints a verify result and returns its exit code: 0 when the signature passes and the
/// timestamp passes, warns or is not signed.
fn print_verdict(delivery: &Delivery, evaluation: &checks::Evaluation, json: bool) -> ExitCode {
    let ok = evaluation.signature.status == SignatureStatus::Pass
        && matches!(
            evaluation.timestamp.status,
            TimestampStatus::Pass | TimestampStatus::Warn | TimestampStatus::Skipped
        );
    if json {
        println!("{}", report::evaluation_json(delivery, evaluation, ok));
    } else {
        use checks::status_word as word;
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
            "event id   {}",
            evaluation.event_id.as_deref().unwrap_or("(none found)")
        );
        if let Some(t) = &evaluation.event_type {
            println!("event type {t}");
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The path and query of a URL (or of a bare path).
fn split_url(url: &str) -> (String, String) {
    let after_scheme = url.split_once("://").map(|(_, rest)| rest).unwrap_or(url);
    let path_and_query = match after_scheme.find('/') {
        Some(i) if url.contains("://") => &after_scheme[i..],
        None if url.contains("://") => "/",
        _ => after_scheme,
    };
    let without_fragment = path_and_query.split('#').next().unwrap_or("/");
    match without_fragment.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (without_fragment.to_string(), String::new()),
    }
}

fn list(common: &Common, args: ListArgs) -> anyhow::Result<ExitCode> {
    let dir = data_dir(common)?;
    let reader = Reader::open(&dir.join(STORE_FILE))?;
    let mut stdout = std::io::stdout().lock();
    let deliveries = match &args.filter {
        None => reader.list(args.limit, None)?,
        Some(expr) => {
            let filter = match crate::filter::Filter::parse(expr) {
                Ok(f) => f,
                Err(e) => return usage(format!("--filter: {e}")),
            };
            let mut out = Vec::new();
            for row in reader.page_tail(&filter, args.limit)?.iter().rev() {
                out.extend(reader.get(row.id)?);
            }
            out
        }
    };
    for stored in deliveries {
        let line = if args.json {
            report::delivery_json(&stored).to_string()
        } else {
            report::human_lines(&stored)
        };
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn jobs(common: &Common, args: JobsArgs) -> anyhow::Result<ExitCode> {
    let dir = data_dir(common)?;
    let file = load_config(common, &dir)?;
    let reader = Reader::open(&dir.join(STORE_FILE))?;
    let stuck_ms = |flag: Option<u64>| {
        flag.map(|m| (m * 60_000) as i64)
            .unwrap_or_else(|| file.jobs.stuck_after_ms())
    };
    let mut stdout = std::io::stdout().lock();
    if let Some(JobsCommand::Show {
        job_id,
        json,
        stuck_after_mins,
    }) = args.show
    {
        let deliveries = reader.job_deliveries(&job_id)?;
        if deliveries.is_empty() {
            return usage(format!("no job \"{job_id}\" in the store"));
        }
        let timeline = crate::timeline::analyze(
            &job_id,
            deliveries,
            crate::now_ms(),
            stuck_ms(stuck_after_mins),
        );
        if json {
            writeln!(stdout, "{}", serde_json::to_string(&timeline)?)?;
        } else {
            write!(stdout, "{}", report::timeline_text(&timeline))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let now = crate::now_ms();
    for job_id in reader.recent_jobs(&args.prefix, args.limit)? {
        let timeline = crate::timeline::analyze(
            &job_id,
            reader.job_deliveries(&job_id)?,
            now,
            stuck_ms(args.stuck_after_mins),
        );
        let line = if args.json {
            report::job_summary_json(&timeline).to_string()
        } else {
            report::job_summary_line(&timeline)
        };
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn export(common: &Common, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let dir = data_dir(common)?;
    let file = load_config(common, &dir)?;
    let reader = Reader::open(&dir.join(STORE_FILE))?;
    if !args.redact.is_empty() && !args.resign_with_test_secret {
        return usage(
            "--redact changes the body, so the captured signature would no longer verify: add --resign-with-test-secret".into(),
        );
    }
    let scheme = args
        .scheme
        .as_deref()
        .map(|name| scheme_named(&file, name))
        .transpose()?;
    let mut selected = Vec::new();
    if let Some(expr) = &args.filter {
        let filter = match crate::filter::Filter::parse(expr) {
            Ok(f) => f,
            Err(e) => return usage(format!("--filter: {e}")),
        };
        for row in reader.page(&filter, 0, 1_000_000)? {
            if let Some(stored) = reader.get(row.id)? {
                selected.push(stored);
            }
        }
    }
    for id in &args.ids {
        match reader.get(*id)? {
            Some(stored) => selected.push(stored),
            None => return usage(format!("no delivery #{id} in the store")),
        }
    }
    if selected.is_empty() {
        return usage("nothing to export: no delivery matches".into());
    }
    let format = match args.format {
        ExportFormat::Fixture => crate::export::Format::Fixture,
        ExportFormat::Har => crate::export::Format::Har,
        ExportFormat::Curl => crate::export::Format::Curl,
    };
    let options = crate::export::FixtureOptions {
        resign_with_test_secret: args.resign_with_test_secret,
        scheme,
        redact: args.redact.clone(),
    };
    let written =
        match crate::export::write_export(&selected, format, &options, args.snippets, &args.out) {
            Ok(written) => written,
            Err(
                e @ (crate::export::ExportError::NoScheme(_)
                | crate::export::ExportError::Redact { .. }),
            ) => {
                return usage(e.to_string());
            }
            Err(e) => return Err(e.into()),
        };
    for path in &written {
        eprintln!("wrote {}", path.display());
    }
    eprintln!("exported {} deliveries", selected.len());
    Ok(ExitCode::SUCCESS)
}

fn import(common: &Common, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let dir = data_dir(common)?;
    let file = load_config(common, &dir)?;
    let text = match std::fs::read_to_string(&args.file) {
        Ok(text) => text,
        Err(e) => return usage(format!("cannot read {}: {e}", args.file.display())),
    };
    let requests = match crate::export::read_har(&text) {
        Ok(r) => r,
        Err(e) => return usage(format!("{}: {e}", args.file.display())),
    };
    let settings = Settings::resolve(&file, &Overrides::default())?;
    let name = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let records = crate::export::import_records(requests, &name, &settings);
    let count = records.len();
    let store = Store::open(&dir.join(STORE_FILE))?;
    let writer = store.writer();
    writer.insert_many_blocking(records)?;
    drop(writer);
    store.shutdown();
    eprintln!("imported {count} deliveries from {}", args.file.display());
    Ok(ExitCode::SUCCESS)
}

fn small_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the event loop")
}

fn resend(common: &Common, args: ResendArgs) -> anyhow::Result<ExitCode> {
    let dir = data_dir(common)?;
    let file = load_config(common, &dir)?;
    let reader = Reader::open(&dir.join(STORE_FILE))?;
    let Some(stored) = reader.get(args.delivery_id)? else {
        return usage(format!("no delivery #{} in the store", args.delivery_id));
    };
    let settings = Settings::resolve(&file, &Overrides::default())?;
    let endpoint = settings.endpoint_for(&stored.delivery.path);
    let resign = if args.resign {
        let scheme_name = args.scheme.clone().or_else(|| stored.scheme.clone());
        let scheme = match scheme_name
            .as_deref()
            .map(|n| config::find_scheme(&file, n))
        {
            Some(Ok(Some(scheme))) => scheme,
            _ => {
                return usage(format!(
                    "--resign needs a scheme: the delivery has {}; pass --scheme ({})",
                    scheme_name.as_deref().unwrap_or("none"),
                    config::preset_names()
                ));
            }
        };
        let secrets: Vec<Secret> = if args.secrets.is_empty() {
            endpoint.secrets.clone()
        } else {
            args.secrets.iter().map(Secret::new).collect()
        };
        if secrets.is_empty() {
            return usage(format!(
                "--resign needs a secret: endpoint {} has none; pass --secret",
                endpoint.path
            ));
        }
        Some((scheme, secrets))
    } else {
        None
    };
    let body = body_file(args.body_file.as_deref())?;
    let options = crate::send::ResendOptions {
        resign,
        new_id: args.new_id,
        body,
    };
    let now = crate::now_ms() / 1000;
    let outgoing = crate::send::prepare_resend(&stored, &options, now)?;
    let client = crate::send::Client::new(std::time::Duration::from_secs(args.timeout_secs))?;
    let store = Store::open(&dir.join(STORE_FILE))?;
    let writer = store.writer();
    let runtime = small_runtime()?;
    let mut attempt =
        match runtime.block_on(client.send(&args.to, &outgoing, "resend", Some(stored.id))) {
            Ok(attempt) => attempt,
            Err(crate::send::SendError::BadUrl(message)) => return usage(message),
            Err(e) => return Err(e.into()),
        };
    attempt.id = runtime.block_on(writer.attempt(attempt.clone()))?;
    drop(writer);
    store.shutdown();
    let answered_2xx = attempt.status.is_some_and(|s| (200..300).contains(&s));
    if args.json {
        println!("{}", serde_json::to_string(&attempt)?);
    } else {
        let how = if args.resign {
            "re-signed"
        } else {
            "as captured"
        };
        match (attempt.status, &attempt.error) {
            (Some(status), _) => println!(
                "resent #{} {how} to {}: {status} in {} ms",
                stored.id, args.to, attempt.latency_ms
            ),
            (None, Some(error)) => println!("resent #{} {how} to {}: {error}", stored.id, args.to),
            (None, None) => println!("resent #{} {how} to {}: no answer", stored.id, args.to),
        }
        let body = String::from_utf8_lossy(&attempt.response_body);
        if !body.trim().is_empty() {
            println!("{}", body.trim().chars().take(500).collect::<String>());
        }
    }
    Ok(if answered_2xx {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn probe(common: &Common, args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let dir = data_dir(common)?;
    let file = load_config(common, &dir)?;
    let scheme = scheme_named(&file, &args.scheme)?;
    let body = body_file(args.body_file.as_deref())?;
    let secrets: Vec<Secret> = args.secrets.iter().map(Secret::new).collect();
    let client = crate::send::Client::new(std::time::Duration::from_secs(args.timeout_secs))?;
    let report = match small_runtime()?.block_on(crate::send::probe(
        &client, &args.url, &scheme, &secrets, body,
    )) {
        Ok(report) => report,
        Err(crate::send::SendError::BadUrl(message)) => return usage(message),
        Err(e) => return Err(e.into()),
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("probe of {} as {}:", report.url, report.scheme);
        for case in &report.cases {
            let statuses: Vec<String> = case.statuses.iter().map(u16::to_string).collect();
            println!(
                "  {:<8} {:<24} expected {:<11} got {:<9} {}",
                checks::status_word(&case.verdict).to_uppercase(),
                case.name,
                case.expected,
                if statuses.is_empty() {
                    "-".to_string()
                } else {
                    statuses.join(",")
                },
                case.detail
            );
        }
        let failed = report
            .cases
            .iter()
            .filter(|c| c.verdict == crate::send::Verdict::Fail)
            .count();
        if report.passed {
            println!("every case passed");
        } else {
            println!("{failed} case(s) failed");
        }
    }
    Ok(if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[allow(clippy::too_many_arguments)]
fn load(
    url: String,
    connections: usize,
    seconds: u64,
    rate: u64,
    body_size: usize,
    scheme: Option<String>,
    secret: Option<String>,
) -> anyhow::Result<ExitCode> {
    let signing = match (scheme, secret) {
        (Some(name), Some(secret)) => match Scheme::preset(&name) {
            Some(scheme) => Some((scheme, Secret::new(secret))),
            None => return usage(format!("unknown scheme \"{name}\"")),
        },
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the event loop")?;
    let report = runtime
        .block_on(crate::loadgen::run(crate::loadgen::LoadOptions {
            url,
            connections,
            duration: std::time::Duration::from_secs(seconds),
            rate,
            body_size,
            signing,
        }))
        .map_err(|e| anyhow!(e))?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}

fn seed(common: &Common, count: usize) -> anyhow::Result<ExitCode> {
    let dir = data_dir(common)?;
    let store = Store::open(&dir.join(STORE_FILE))?;
    let writer = store.writer();
    let started = std::time::Instant::now();
    let mut written = 0;
    let mut batch = Vec::with_capacity(5000);
    for n in 0..count {
        batch.push(crate::seed::record(n));
        if batch.len() == 5000 || n + 1 == count {
            written += writer.insert_many_blocking(std::mem::take(&mut batch))?;
            eprint!("\rseeded {written}/{count}");
        }
    }
    eprintln!(
        "\rseeded {written} deliveries into {} in {:.1} s",
        store.path().display(),
        started.elapsed().as_secs_f64()
    );
    drop(writer);
    store.shutdown();
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_path_and_query() {
        assert_eq!(
            split_url("https://example.com/hooks/a?x=1#f"),
            ("/hooks/a".into(), "x=1".into())
        );
        assert_eq!(
            split_url("https://example.com"),
            ("/".into(), String::new())
        );
        assert_eq!(split_url("/hooks?y=2"), ("/hooks".into(), "y=2".into()));
    }
}
