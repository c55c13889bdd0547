//! `hookscope-dev`: the benchmark tools, kept out of the product's command list. It links the
//! same library as `hookscope`, so what it seeds and loads is checked and stored by the real
//! code. `bench/run.sh` and `bench/gui.sh` drive it; see BENCHMARKS.md.
//!
//! - `hookscope-dev seed --count N`: fill a store with N synthetic, correctly checked deliveries.
//! - `hookscope-dev load --url URL …`: send signed deliveries over many connections, report JSON.
//! - `hookscope-dev bare [--port N] [--durable DIR | --sqlite DIR] [--secret S]`: a bare axum
//!   server to compare `hookscope listen` against; with `--durable`, the floor of a verifying,
//!   durable receiver; with `--sqlite`, the SQLite reference the store is measured against.
//! - `hookscope-dev disk-probe --dir DIR`: time small synced writes beside a benchmark (stalls).

mod bare;
mod disk_probe;
mod load;
mod seed;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hookscope::app::paths::Paths;
use hookscope::domain::scheme::{Scheme, Secret};
use hookscope::store::Store;

/// Benchmark tools for hookscope: seed a store, load a receiver, run a bare server to compare.
#[derive(Debug, Parser)]
#[command(name = "hookscope-dev", version)]
struct Cli {
    /// The data dir whose store `seed` fills (default: hookscope's)
    #[arg(long, global = true, env = "HOOKSCOPE_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: DevCommand,
}

#[derive(Debug, Subcommand)]
enum DevCommand {
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
        /// Offered requests per second (0: as fast as possible). Paced on a fixed schedule (open
        /// loop); latency counts from each request's scheduled moment
        #[arg(long, default_value_t = 0)]
        rate: u64,
        /// Body size in bytes
        #[arg(long, default_value_t = 1024)]
        body_size: usize,
        /// The receiver's store file: report how long every tenth acknowledged delivery took to
        /// become visible to a reader of it
        #[arg(long, value_name = "FILE")]
        watch_store: Option<std::path::PathBuf>,
        /// Sign as this scheme (with --secret)
        #[arg(long, value_name = "NAME", requires = "secret")]
        scheme: Option<String>,
        /// The signing secret
        #[arg(long, value_name = "S")]
        secret: Option<String>,
        /// Percent of requests that repeat the previous event (retries)
        #[arg(long, value_name = "PCT", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=49))]
        duplicates: u64,
        /// Percent of requests with a spoiled signature
        #[arg(long, value_name = "PCT", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=50))]
        bad_signatures: u64,
    },
    /// Time small synced writes in DIR every few milliseconds (an append that grows a file, and
    /// a rewrite in place), to set beside a receiver's stalls; prints JSON
    DiskProbe {
        /// Where to write (the store's file system)
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// How long, in seconds
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Milliseconds between probes
        #[arg(long, default_value_t = 5)]
        every_ms: u64,
    },
    /// A bare HTTP server answering 200 without checking or storing, to compare `listen` against
    Bare {
        /// The port (0: a free one)
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Instead, the floor of a verifying, durable receiver: check each Standard Webhooks
        /// signature (--secret) and answer 200 only once the body is appended to DIR/bare.log
        /// and synced (one group commit for all the bodies waiting)
        #[arg(long, value_name = "DIR", requires = "secret")]
        durable: Option<PathBuf>,
        /// The Standard Webhooks secret --durable verifies with
        #[arg(long, value_name = "S")]
        secret: Option<String>,
        /// Instead, the SQLite reference: check each signature, then one small row per
        /// delivery (its event id UNIQUE) in DIR/bare.sqlite, one transaction (WAL,
        /// synchronous=FULL) per batch waiting, 200 after COMMIT
        #[arg(
            long,
            value_name = "DIR",
            requires = "secret",
            conflicts_with = "durable"
        )]
        sqlite: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        DevCommand::Seed { count } => seed_store(cli.data_dir, count),
        DevCommand::Load {
            url,
            connections,
            seconds,
            rate,
            body_size,
            scheme,
            secret,
            duplicates,
            bad_signatures,
            watch_store,
        } => run_load(load::LoadOptions {
            watch_store,
            duplicate_pct: duplicates,
            bad_signature_pct: bad_signatures,
            url,
            connections,
            duration: std::time::Duration::from_secs(seconds),
            rate,
            body_size,
            signing: match (scheme, secret) {
                (Some(name), Some(secret)) => match Scheme::preset(&name) {
                    Some(scheme) => Some((scheme, Secret::new(secret))),
                    None => {
                        eprintln!("hookscope-dev: unknown scheme \"{name}\"");
                        return ExitCode::from(2);
                    }
                },
                _ => None,
            },
        }),
        DevCommand::DiskProbe {
            dir,
            seconds,
            every_ms,
        } => disk_probe::probe(&dir, seconds, std::time::Duration::from_millis(every_ms)),
        DevCommand::Bare {
            port,
            durable,
            secret,
            sqlite,
        } => bare::serve_bare(
            std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            durable
                .map(|dir| (dir, bare::Floor::File))
                .or(sqlite.map(|dir| (dir, bare::Floor::Sqlite)))
                .zip(secret.map(Secret::new))
                .map(|((dir, floor), secret)| (dir, secret, floor)),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("hookscope-dev: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run_load(options: load::LoadOptions) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the event loop: {e}"))?;
    let report = runtime.block_on(load::run(options))?;
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(())
}

fn seed_store(data_dir: Option<PathBuf>, count: usize) -> Result<(), String> {
    let paths = Paths::resolve(data_dir, None).map_err(|e| e.to_string())?;
    let store = Store::open(&paths.store_file()).map_err(|e| e.to_string())?;
    let writer = store.writer();
    let started = std::time::Instant::now();
    let mut written = 0;
    let mut batch = Vec::with_capacity(5000);
    for n in 0..count {
        batch.push(seed::record(n));
        if batch.len() == 5000 || n + 1 == count {
            written += writer
                .insert_many_blocking(std::mem::take(&mut batch))
                .map_err(|e| e.to_string())?
                .len();
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
    Ok(())
}
