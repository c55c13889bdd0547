//! `hookscope listen`: the receiver headless, each delivery printed as it arrives.

use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use hookscope::app::capture::{HOUSEKEEPING_EVERY, Said, Session, SessionOptions};
use hookscope::app::{self, AppError, report};
use hookscope::capture::Controls;
use hookscope::config::{Overrides, Settings};
use hookscope::domain::endpoint::Endpoint;
use hookscope::domain::fmt::Zone;
use hookscope::domain::scheme::Secret;
use hookscope::store::StoredDelivery;

use super::{Common, load_config};

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
    #[command(flatten)]
    pub secret_sources: super::SecretSources,
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
    /// Forwarding: accept any TLS certificate (a self-signed development certificate only)
    #[arg(long, requires = "forward_to")]
    pub insecure: bool,
    /// Take deliveries from a relay channel as well: its subscribe URL (https://RELAY/sub/CHANNEL; see docs/relay.md)
    #[arg(long, value_name = "URL")]
    pub relay: Option<String>,
    /// The relay channel's token, from this environment variable
    #[arg(long, value_name = "NAME")]
    pub relay_token_env: Option<String>,
    /// The relay channel's token, from this file
    #[arg(long, value_name = "FILE", conflicts_with = "relay_token_env")]
    pub relay_token_file: Option<std::path::PathBuf>,
}

pub fn run(common: &Common, args: ListenArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let zone = common.zone();
    let file = load_config(&paths)?.file;
    let relay_flags = app::relay::RelayFlags {
        url: args.relay.clone(),
        token_env: args.relay_token_env.clone(),
        token_file: args.relay_token_file.clone(),
    };
    let relay = app::relay::subscription(&paths.data_dir, &file.relay, &relay_flags)?;
    let bind = app::paths::bind_address(args.bind, &file, &paths.config_path)?;
    let port = app::paths::port(args.port, &file);
    let options = SessionOptions {
        data_dir: paths.data_dir.clone(),
        config: file,
        overrides: overrides(&args)?,
        controls: controls(&args)?,
        // A headless capture that captures nothing is of no use: another one holding the
        // data dir is an error here.
        read_only_fallback: false,
    };
    // One capturing hookscope per data dir; the lock is held until the session shuts down.
    let (mut session, said) = Session::open(options)?;
    let store_path = session.store().path().to_path_buf();
    for said in said.into_iter().chain(session.apply_retention()) {
        eprintln!("hookscope: {}", sentence(&said, &store_path));
    }
    let (events_tx, mut events_rx) = tokio::sync::mpsc::channel(EVENTS_WAITING);
    let addr = session.start_receiver(bind, port, Some(events_tx))?;
    print_banner(&args, bind, addr, &session.settings().get(), &store_path);
    if let Some(relay) = relay {
        eprintln!(
            "  taking deliveries from the relay at {} as well",
            relay.url
        );
        session.start_relay(relay)?;
    }
    // Start-up reconciliation, then a pass a minute, when an endpoint has a job API.
    session.start_reconciler(|sentence| eprintln!("hookscope: {sentence}"))?;
    let runtime = app::small_runtime()?;
    // Made once, and kept across the turns below: a signal listener made anew each time cost
    // a registration each time, and a SIGTERM that came between two of them was lost.
    let mut interrupted = Box::pin(app::background::interrupted());
    let mut printing = Printing {
        events: &mut events_rx,
        json: args.json,
        zone: &zone,
        stdout: std::io::stdout(),
        lines: String::new(),
    };
    loop {
        match runtime.block_on(printing.for_a_while(&mut interrupted)) {
            Turn::Housekeeping => {}
            Turn::Stop => break,
            Turn::Interrupted => {
                // The receiver stops on a thread of its own (no new connections; the deliveries
                // in flight committed and answered) while their lines are printed here, until
                // its last handler is gone: every delivery answered 2xx is printed.
                let stopping = session.take_receiver().map(|receiver| {
                    std::thread::Builder::new()
                        .name("hookscope-receiver-stop".into())
                        .spawn(move || receiver.stop())
                });
                runtime.block_on(printing.the_rest());
                if let Some(Ok(stopping)) = stopping {
                    let _ = stopping.join();
                }
                break;
            }
        }
        // The session's housekeeping runs here, outside the runtime: its retention waits for
        // the store's writer.
        for said in session.tick() {
            eprintln!("hookscope: {}", sentence(&said, &store_path));
        }
    }
    drop(printing);
    drop(events_rx);
    session.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// What `listen` prints on stderr for what the capture session says.
fn sentence(said: &Said, store: &std::path::Path) -> String {
    match said {
        Said::Recovered(sentence)
        | Said::ContractApplied(sentence)
        | Said::Failed(sentence)
        | Said::Relay(sentence) => sentence.clone(),
        Said::Retained(n) => format!("retention removed {n} old deliveries"),
        Said::Health(health) => health_sentence(health, store),
    }
}

/// What the flags override in the config: the scheme, the secrets, the tolerance, the answer.
fn overrides(args: &ListenArgs) -> Result<Overrides, AppError> {
    Ok(Overrides {
        scheme: args.scheme.clone(),
        secrets: args
            .secret_sources
            .with(&args.secrets)?
            .into_iter()
            .map(Secret::new)
            .collect(),
        tolerance_secs: args.tolerance,
        respond_status: args.respond_status,
        respond_delay_ms: args.respond_delay_ms,
    })
}

/// The receiver's controls: forwarding, its mirrored answer and its TLS check, as the flags ask.
fn controls(args: &ListenArgs) -> Result<Arc<Controls>, AppError> {
    let controls = Arc::new(Controls::default());
    if let Some(url) = &args.forward_to {
        controls
            .set_forward(Some(url))
            .map_err(|e| AppError::Usage(format!("--forward-to {e}")))?;
        controls
            .mirror_response
            .store(args.mirror_response, std::sync::atomic::Ordering::SeqCst);
        controls
            .forward_insecure
            .store(args.insecure, std::sync::atomic::Ordering::SeqCst);
    }
    Ok(controls)
}

/// How a turn of `listen`'s loop ended.
#[derive(Debug, PartialEq, Eq)]
enum Turn {
    /// Time for the session's housekeeping.
    Housekeeping,
    /// The receiver stopped, or stdout closed.
    Stop,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// What `listen` prints deliveries with.
struct Printing<'a> {
    events: &'a mut tokio::sync::mpsc::Receiver<StoredDelivery>,
    json: bool,
    zone: &'a Zone,
    stdout: std::io::Stdout,
    lines: String,
}

impl Printing<'_> {
    /// Prints `first` and the deliveries waiting behind it ([`print_waiting`]); whether none is
    /// left, or the error of a closed stdout.
    fn print(&mut self, first: StoredDelivery) -> std::io::Result<bool> {
        let (json, zone) = (self.json, self.zone);
        let events = &mut *self.events;
        print_waiting(
            first,
            || events.try_recv().ok(),
            |stored, lines| render_delivery(stored, json, zone, lines),
            &mut self.stdout,
            &mut self.lines,
        )
    }

    /// Prints each delivery as it arrives (JSON or human lines) for [`HOUSEKEEPING_EVERY`], or
    /// until the receiver stops, stdout closes, or `interrupted` resolves.
    async fn for_a_while(
        &mut self,
        interrupted: &mut std::pin::Pin<Box<impl std::future::Future<Output = ()>>>,
    ) -> Turn {
        let housekeeping = tokio::time::sleep(HOUSEKEEPING_EVERY);
        tokio::pin!(housekeeping);
        loop {
            tokio::select! {
                () = &mut housekeeping => return Turn::Housekeeping,
                event = self.events.recv() => {
                    let Some(stored) = event else { return Turn::Stop };
                    // A closed stdout (e.g. `| head`) ends the command rather than panicking.
                    let Ok(emptied) = self.print(stored) else { return Turn::Stop };
                    // Let the next deliveries gather before waiting again: a receiver that
                    // finds this loop asleep on the channel must wake it (a system call on the
                    // answer's path), one that finds it here does not. Idle, the loop still
                    // waits on the channel and prints a lone delivery at once. When more were
                    // waiting than a turn prints, the next turn comes at once (after a look at
                    // Ctrl-C and the session's housekeeping).
                    if emptied {
                        tokio::time::sleep(LINES_GATHER).await;
                    }
                }
                () = interrupted.as_mut() => return Turn::Interrupted,
            }
        }
    }

    /// Prints every delivery still coming until the receiver is gone (its channel closed), or
    /// stdout closes.
    async fn the_rest(&mut self) {
        while let Some(stored) = self.events.recv().await {
            if self.print(stored).is_err() {
                return;
            }
        }
    }
}

/// Adds a delivery's line to `lines`: one JSON object with `--json`, else the human lines.
fn render_delivery(stored: &StoredDelivery, json: bool, zone: &Zone, lines: &mut String) {
    if json {
        // Just stored: a forward, if any, is on its way.
        lines.push_str(&report::delivery_json(stored, &[]).to_string());
    } else {
        lines.push_str(&report::human_lines(stored, zone));
    }
}

/// Prints `first` and the deliveries already waiting (`next`), a line each (`render`), in writes
/// of about 64 KiB (under load, a write per line was most of the main thread's time), until none
/// is left or [`PRINT_TURN`] were printed; answers whether none is left. Stopping after the first
/// 64 KiB, then letting deliveries gather for [`LINES_GATHER`], held `listen` to 64 KiB of lines
/// per 10 ms: ~6,000 deliveries/s with `--json`, ~16,000/s with failed timestamps.
fn print_waiting<T>(
    first: T,
    mut next: impl FnMut() -> Option<T>,
    mut render: impl FnMut(&T, &mut String),
    out: &mut impl std::io::Write,
    lines: &mut String,
) -> std::io::Result<bool> {
    lines.clear();
    let mut item = Some(first);
    let mut printed = 0;
    while let Some(this) = item.take() {
        render(&this, lines);
        lines.push('\n');
        printed += 1;
        if printed < PRINT_TURN {
            item = next();
        }
        if lines.len() >= PRINT_CHUNK || item.is_none() {
            out.write_all(lines.as_bytes())?;
            out.flush()?;
            lines.clear();
        }
    }
    Ok(printed < PRINT_TURN)
}

/// The most deliveries a turn of `listen`'s loop prints: a stdout slower than the deliveries
/// (a terminal) must not keep the loop from Ctrl-C.
const PRINT_TURN: usize = EVENTS_WAITING;

/// About how many bytes of lines `listen` writes at once.
const PRINT_CHUNK: usize = 64 * 1024;

/// How long `listen` lets deliveries gather after printing some, before it waits for more.
const LINES_GATHER: std::time::Duration = std::time::Duration::from_millis(10);

/// The deliveries that may wait to be printed; a full channel holds the receiver's answers.
/// Room for more than `LINES_GATHER` of the fastest ingest measured (about 25,000/s).
const EVENTS_WAITING: usize = 4096;

/// The line `listen` prints when the store's health changes.
fn health_sentence(health: &hookscope::store::HealthReport, store: &std::path::Path) -> String {
    match &health.trouble {
        Some(trouble) => trouble.sentence(store),
        None => format!(
            "the store accepts writes again: capture resumed ({} deliveries were refused with 503 meanwhile, for their senders to retry)",
            health.refused
        ),
    }
}

/// What `listen` prints on stderr once it listens: the address (scripts wait for this line),
/// the endpoints, the store, forwarding, and warnings about exposure.
fn print_banner(
    args: &ListenArgs,
    bind: IpAddr,
    addr: std::net::SocketAddr,
    settings: &Settings,
    store: &std::path::Path,
) {
    if !bind.is_loopback() {
        eprintln!(
            "hookscope: warning: listening on {bind}, reachable from other machines; captured deliveries and their signatures are visible to anyone who can reach this port"
        );
    }
    eprintln!("listening on http://{addr}");
    for endpoint in &settings.endpoints {
        eprintln!("  {}", describe_endpoint(endpoint));
        for rule in &endpoint.forward {
            eprintln!("    forwards to {}", rule.describe());
        }
    }
    eprintln!("  store: {}", store.display());
    if let Some(url) = &args.forward_to {
        let answer = if args.mirror_response {
            "the handler's status"
        } else {
            "its own status"
        };
        eprintln!(
            "  forwarding every delivery to {}; the sender gets {answer}",
            hookscope::domain::delivery::masked_url(url)
        );
        if args.insecure {
            eprintln!(
                "hookscope: warning: forwarding accepts any TLS certificate (--insecure): use it for a development certificate only"
            );
        }
    }
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
    let reconcile = endpoint
        .reconcile
        .as_ref()
        .and_then(|api| hookscope::domain::scheme::twilio::origin(&api.job_url))
        .map(|(proto, host)| format!(", reconciles quiet jobs with {proto}://{host}"))
        .unwrap_or_default();
    format!(
        "{path:<20} {scheme}, {secrets}, answers {status}{delay}{reconcile}",
        path = endpoint.path,
        status = endpoint.respond_status
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that records each write's size.
    #[derive(Default)]
    struct Writes {
        bytes: Vec<u8>,
        sizes: Vec<usize>,
    }

    impl std::io::Write for Writes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes.extend_from_slice(buf);
            self.sizes.push(buf.len());
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_waiting_delivery_is_printed_in_chunks_before_the_loop_waits_again() {
        // 300 deliveries of 1 KiB lines wait: ~300 KiB, several chunks.
        let mut waiting = 1..300;
        let mut out = Writes::default();
        let mut lines = String::new();
        let emptied = print_waiting(
            0,
            || waiting.next(),
            |n, lines| lines.push_str(&format!("{n:0>1023}")),
            &mut out,
            &mut lines,
        )
        .expect("printed");
        assert!(emptied);
        assert_eq!(waiting.next(), None, "a delivery was left waiting");
        let text = String::from_utf8(out.bytes).expect("utf-8");
        let printed: Vec<usize> = text
            .lines()
            .map(|l| l.trim_start_matches('0').parse().unwrap_or(0))
            .collect();
        assert_eq!(printed, (0..300).collect::<Vec<_>>());
        // Whole lines, at most about a chunk per write.
        assert!(
            out.sizes.len() >= 300 * 1024 / PRINT_CHUNK,
            "{:?}",
            out.sizes
        );
        assert!(
            out.sizes
                .iter()
                .all(|&n| n < PRINT_CHUNK + 1024 && n % 1024 == 0)
        );
    }

    #[test]
    fn a_turn_prints_at_most_as_many_as_the_channel_holds_and_says_more_wait() {
        // More waiting than a turn prints: the loop must get back to Ctrl-C in between.
        let mut waiting = 1..(PRINT_TURN + 1000);
        let mut out = Writes::default();
        let mut lines = String::new();
        let emptied = print_waiting(
            0,
            || waiting.next(),
            |n, l| l.push_str(&n.to_string()),
            &mut out,
            &mut lines,
        )
        .expect("printed");
        assert!(!emptied);
        let printed = String::from_utf8(out.bytes).expect("utf-8");
        assert_eq!(printed.lines().count(), PRINT_TURN);
        let last = (PRINT_TURN - 1).to_string();
        assert_eq!(printed.lines().last(), Some(last.as_str()));
        assert_eq!(
            waiting.next(),
            Some(PRINT_TURN),
            "the next turn starts where this one ended"
        );
    }

    #[test]
    fn a_lone_delivery_is_printed_at_once_and_a_closed_stdout_is_an_error() {
        let mut out = Writes::default();
        let mut lines = String::new();
        let emptied = print_waiting(
            7,
            || None,
            |n, l| l.push_str(&n.to_string()),
            &mut out,
            &mut lines,
        )
        .expect("printed");
        assert!(emptied);
        assert_eq!(out.bytes, b"7\n");
        struct Closed;
        impl std::io::Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let result = print_waiting(
            7,
            || None,
            |n, l| l.push_str(&n.to_string()),
            &mut Closed,
            &mut lines,
        );
        assert_eq!(
            result.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::BrokenPipe)
        );
    }
}
