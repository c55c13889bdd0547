//! `hookscope simulate`: play the async job API and its webhooks against a handler.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use hookscope::app::AppError;
use hookscope::app::simulate::{self, ChaosOverrides, SimulateRequest};
use hookscope::domain::sim::IdempotencyStyle;
use hookscope::store::Store;

use super::{Common, load_config};

/// `--idempotency-style`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Style {
    /// The IETF draft: 400 missing, 422 reused with another body, 409 in flight
    Draft,
    /// 400 with error.code idempotency_key_reuse / idempotency_key_in_progress
    Infro,
}

/// `hookscope simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The handler the webhooks go to (also the default callback of submitted jobs)
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// The lifecycle preset: review, document or render (default render)
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// A scenario file (TOML): lifecycle, delivery, chaos, signing, api; flags win over it
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Create this many jobs (default: none, serve the job API for your client)
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Simulated seconds per real second (3600: an hour of schedule per second; default 1)
    #[arg(long, value_name = "X")]
    pub time_scale: Option<f64>,
    /// The retry schedule: media (12 attempts over ~16 h), exponential (~24 h), standard-webhooks (default)
    #[arg(long, value_name = "NAME")]
    pub schedule: Option<String>,
    /// The signing scheme (default standard-webhooks)
    #[arg(long, value_name = "NAME")]
    pub scheme: Option<String>,
    /// A signing secret; repeat to sign with two at once (a rotation)
    #[arg(long = "secret", value_name = "S")]
    pub secrets: Vec<String>,
    #[command(flatten)]
    pub secret_sources: super::SecretSources,
    /// How long the handler has to answer (default 10)
    #[arg(long, value_name = "S")]
    pub timeout_secs: Option<u64>,
    /// Probability of sending an attempt twice at once
    #[arg(long, value_name = "P")]
    pub duplicate_rate: Option<f64>,
    /// Probability of delivering an event after the job's next one
    #[arg(long, value_name = "P")]
    pub reorder_rate: Option<f64>,
    /// Probability of never delivering an event (only the job API knows)
    #[arg(long, value_name = "P")]
    pub drop_rate: Option<f64>,
    /// Probability of retrying an old event after a newer one was acknowledged
    #[arg(long, value_name = "P")]
    pub late_retry_rate: Option<f64>,
    /// Delay each first attempt by up to this many simulated seconds
    #[arg(long, value_name = "SECS")]
    pub max_delay_secs: Option<u64>,
    /// The chaos seed (the same seed, the same chaos)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// The job API's port on 127.0.0.1 (default: any free port)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub api_port: u16,
    /// How idempotency-key mistakes are answered
    #[arg(long, value_enum, value_name = "STYLE")]
    pub idempotency_style: Option<Style>,
    /// Refuse a submit without an Idempotency-Key (400)
    #[arg(long)]
    pub key_required: bool,
    /// How long a submit is in flight, so a repeat meets 409 (default 200)
    #[arg(long, value_name = "MS")]
    pub submit_delay_ms: Option<u64>,
    /// Rate-limit polls of one job: closer than this many ms gets 429 and Retry-After
    #[arg(long, value_name = "MS")]
    pub rate_limit_gap_ms: Option<u64>,
    /// Exit when every job ended and every event was acknowledged or ran out of attempts
    #[arg(long)]
    pub until_done: bool,
    /// Accept any TLS certificate of an https:// target (development certificates only)
    #[arg(long)]
    pub insecure: bool,
    /// Send this provider's handshake first (slack, zoom, twitch, meta, graph, event-grid, cloudevents, x, dropbox, okta, sns) and, like the provider, deliver nothing unless the handler answers it right
    #[arg(long, value_name = "PROVIDER")]
    pub handshake: Option<String>,
    /// Meta's Verify token, for --handshake meta (the token your handler checks, not the app secret)
    #[arg(long, value_name = "TOKEN")]
    pub verify_token: Option<String>,
    /// Build each event's body on this contract's example of its type (OpenAPI, AsyncAPI or a folder of JSON Schemas), with the simulator's own fields written over it
    #[arg(long, value_name = "FILE")]
    pub contract: Option<PathBuf>,
    /// Print the scorecard as one JSON object
    #[arg(long)]
    pub json: bool,
}

pub fn run(common: &Common, args: SimulateArgs) -> Result<ExitCode, AppError> {
    let paths = common.paths()?;
    let file = load_config(&paths)?.file;
    let request = SimulateRequest {
        target: args.target.clone(),
        preset: args.preset.clone(),
        scenario: args
            .scenario
            .as_deref()
            .map(simulate::read_scenario)
            .transpose()?,
        jobs: args.jobs,
        time_scale: args.time_scale,
        scheme: args.scheme.clone(),
        secrets: args.secret_sources.with(&args.secrets)?,
        timeout: args.timeout_secs.map(Duration::from_secs),
        schedule: args.schedule.clone(),
        chaos: ChaosOverrides {
            duplicate_rate: args.duplicate_rate,
            reorder_rate: args.reorder_rate,
            drop_rate: args.drop_rate,
            late_retry_rate: args.late_retry_rate,
            max_delay_secs: args.max_delay_secs,
        },
        api_port: args.api_port,
        style: args.idempotency_style.map(|s| match s {
            Style::Draft => IdempotencyStyle::Draft,
            Style::Infro => IdempotencyStyle::Infro,
        }),
        key_required: args.key_required.then_some(true),
        submit_delay: args.submit_delay_ms.map(Duration::from_millis),
        poll_gap: args.rate_limit_gap_ms.map(Duration::from_millis),
        seed: args.seed,
        insecure: args.insecure,
        handshake: args.handshake,
        contract: args.contract.clone(),
        verify_token: args.verify_token,
        self_signed_hint: Some(super::refused::SELF_SIGNED_HINT),
    };
    let prepared = simulate::prepare(&file, &request)?;
    let from_contract = simulate::contract_types(&prepared);
    if !from_contract.is_empty() {
        eprintln!(
            "event bodies on the contract's examples: {} (the others as built in)",
            from_contract.join(", ")
        );
    }
    let store = Store::open(&paths.store_file())?;
    let writer = store.writer();
    // The job API serves the client while the deliveries go out: two workers, as in the window.
    let runtime = hookscope::app::background::runtime(2)?;
    let until_done = args.until_done;
    let outcome = runtime.block_on(async {
        let running = simulate::start(prepared, writer).await?;
        eprintln!("api on http://{}", running.api_addr);
        // Ctrl+C or SIGTERM ends the run as --until-done does: the scorecard of what was seen.
        tokio::select! {
            () = running.until_done(), if until_done => {}
            () = hookscope::app::background::interrupted() => {}
        };
        let progress = running.progress();
        let checks = running.scorecard();
        running.stop().await;
        Ok::<_, AppError>((checks, progress))
    });
    drop(runtime);
    store.shutdown();
    let (checks, progress) = outcome?;
    if args.json {
        println!("{}", simulate::scorecard_json(&checks, &progress));
    } else {
        eprintln!(
            "{} jobs, {} events ({} acknowledged, {} dropped, {} out of attempts), {} attempts",
            progress.jobs,
            progress.events,
            progress.acknowledged,
            progress.dropped,
            progress.exhausted,
            progress.attempts
        );
        for check in &checks {
            println!("{:<8} {:<24} {}", check.status, check.name, check.detail);
        }
    }
    Ok(super::exit_if(hookscope::domain::sim::passed(&checks)))
}
