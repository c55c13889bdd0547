//! The provider simulator: hookscope plays an async job API and its at-least-once, unordered,
//! retried webhooks against the developer's handler (and serves the API to their client), on a
//! compressed clock, then scores what it observed. `hookscope simulate` and the window's
//! Simulate view both call [`prepare`] and [`start`].

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::domain::sync::Lock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::app::{AppError, Field, Refused, scheme_named};
use crate::config::ConfigFile;
use crate::domain::attempt::{Attempt, AttemptKind};
use crate::domain::checks::{Checks, SignatureStatus, TimestampStatus};
use crate::domain::clock::{now_ms, now_secs};
use crate::domain::delivery::Header;
use crate::domain::handshake::{Challenge, Keys, Provider};
use crate::domain::scheme::{Scheme, Secret};
use crate::domain::sim::world::{Settings, Work, WorkKind, World};
use crate::domain::sim::{self, Caught, Chaos, Check, IdempotencyStyle, Lifecycle, Recorded};
use crate::net::client::{Client, Outgoing, Tls};
use crate::net::simulator::{self, Api, ApiServer};
use crate::store::Maintenance;
use crate::store::StoreWriter;

/// How many attempts are on the wire at once.
const CONCURRENCY: usize = 64;

/// A scenario file (TOML): every knob of a run, each optional; command-line flags win.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A lifecycle preset's name, or a lifecycle of its own below.
    pub preset: Option<String>,
    /// `[lifecycle]`: states with durations, outcomes with weights, shape, full payloads.
    pub lifecycle: Option<Lifecycle>,
    /// `[delivery]`.
    #[serde(default)]
    pub delivery: DeliveryScenario,
    /// `[chaos]`.
    pub chaos: Option<Chaos>,
    /// `[signing]`.
    #[serde(default)]
    pub signing: SigningScenario,
    /// `[api]`.
    #[serde(default)]
    pub api: ApiScenario,
}

/// `[delivery]` of a scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryScenario {
    /// A schedule preset (`media`, `exponential`, `standard-webhooks`).
    pub schedule: Option<String>,
    /// Or the waits between attempts, in simulated seconds.
    pub schedule_secs: Option<Vec<u64>>,
    /// The handler's timeout.
    pub timeout_secs: Option<u64>,
    /// Simulated seconds per real second.
    pub time_scale: Option<f64>,
    /// How many jobs to create.
    pub jobs: Option<usize>,
}

/// `[signing]` of a scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SigningScenario {
    /// The scheme.
    pub scheme: Option<String>,
    /// The secrets (two sign at once during a rotation).
    #[serde(default)]
    pub secrets: Vec<String>,
}

/// `[api]` of a scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiScenario {
    /// Where jobs are submitted (default `/v1/jobs`).
    pub submit_path: Option<String>,
    /// `draft` or `infro`.
    pub idempotency_style: Option<IdempotencyStyle>,
    /// Refuse a submit without an Idempotency-Key.
    pub key_required: Option<bool>,
    /// How long a submit is in flight, in real milliseconds.
    pub submit_delay_ms: Option<u64>,
    /// The shortest gap between polls of one job before `429` + `Retry-After`, in ms (off by default).
    pub rate_limit_gap_ms: Option<u64>,
}

/// A simulate request, as the command line or the window gives it.
#[derive(Debug, Clone, Default)]
pub struct SimulateRequest {
    /// Where webhooks go (required with `jobs`; else a client's `callback_url` decides).
    pub target: Option<String>,
    /// A lifecycle preset (default `render`).
    pub preset: Option<String>,
    /// A scenario file's text, and its name for errors.
    pub scenario: Option<(String, String)>,
    /// Jobs to create (0: serve the API for a client).
    pub jobs: Option<usize>,
    /// Simulated seconds per real second (default 1).
    pub time_scale: Option<f64>,
    /// The scheme (default `standard-webhooks`).
    pub scheme: Option<String>,
    /// Secrets to sign with.
    pub secrets: Vec<String>,
    /// The handler's timeout (default 10 s).
    pub timeout: Option<Duration>,
    /// A schedule preset (default `standard-webhooks`).
    pub schedule: Option<String>,
    /// Chaos knobs given on the command line (over the scenario's).
    pub chaos: ChaosOverrides,
    /// The API's port (0: any).
    pub api_port: u16,
    /// `draft` or `infro`.
    pub style: Option<IdempotencyStyle>,
    /// Refuse submits without a key.
    pub key_required: Option<bool>,
    /// How long a submit is in flight.
    pub submit_delay: Option<Duration>,
    /// Rate limit: the shortest gap between polls of one job.
    pub poll_gap: Option<Duration>,
    /// The chaos seed.
    pub seed: u64,
    /// Accept any certificate of an https target.
    pub insecure: bool,
    /// Send this provider's handshake first, and deliver nothing unless it is answered right.
    pub handshake: Option<String>,
    /// Meta's Verify token, for `handshake = meta` (not the app secret).
    pub verify_token: Option<String>,
    /// A contract whose examples the event bodies are built on (`--contract`).
    pub contract: Option<std::path::PathBuf>,
    /// What a refused certificate's sentence suggests, in the words of the front end that asks
    /// (the client's own when it names none).
    pub self_signed_hint: Option<&'static str>,
}

/// Chaos knobs from the command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChaosOverrides {
    /// `--duplicate-rate`.
    pub duplicate_rate: Option<f64>,
    /// `--reorder-rate`.
    pub reorder_rate: Option<f64>,
    /// `--drop-rate`.
    pub drop_rate: Option<f64>,
    /// `--late-retry-rate`.
    pub late_retry_rate: Option<f64>,
    /// `--max-delay-secs`.
    pub max_delay_secs: Option<u64>,
}

/// A run ready to start: everything resolved and checked.
#[derive(Debug, Clone)]
pub struct Prepared {
    target: Option<String>,
    jobs: usize,
    scheme: Scheme,
    secrets: Vec<Secret>,
    timeout: Duration,
    api_port: u16,
    submit_path: String,
    submit_delay: Duration,
    seed: u64,
    insecure: bool,
    handshake: Option<Provider>,
    verify_token: Option<String>,
    self_signed_hint: Option<&'static str>,
    settings: Settings,
}

impl Prepared {
    /// How many jobs the run creates itself.
    pub fn jobs(&self) -> usize {
        self.jobs
    }
}

fn rate(field: Field, value: f64) -> Result<f64, AppError> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(Refused::NotAProbability { field, value }.into())
    }
}

/// The event types whose bodies a prepared run builds on its contract's examples (empty
/// without a contract).
pub fn contract_types(prepared: &Prepared) -> Vec<String> {
    let Some(contract) = &prepared.settings.contract else {
        return Vec::new();
    };
    let described = contract.event_types();
    crate::domain::sim::event_types(&prepared.settings.lifecycle)
        .into_iter()
        .filter(|t| described.contains(t) || contract.example(t).is_some())
        .collect()
}

/// Resolves a request (and its scenario) into a run, or says what is wrong.
pub fn prepare(file: &ConfigFile, request: &SimulateRequest) -> Result<Prepared, AppError> {
    let scenario: Scenario = match &request.scenario {
        Some((text, name)) => toml::from_str(text)
            .map_err(|e| AppError::Usage(format!("scenario {name}: {}", e.message())))?,
        None => Scenario::default(),
    };
    let lifecycle = lifecycle_of(request, &scenario)?;
    let contract = match &request.contract {
        Some(path) => {
            let contract = crate::app::contract::load(path)?;
            let types = crate::domain::sim::event_types(&lifecycle);
            if !types.iter().any(|t| contract.example(t).is_some()) {
                return Err(AppError::Usage(format!(
                    "none of the simulated event types ({}) is in {} (it has: {})",
                    types.join(", "),
                    contract.name,
                    contract.event_types().join(", ")
                )));
            }
            Some(contract)
        }
        None => None,
    };
    let schedule = schedule_of(request, &scenario)?;
    let (scheme, secrets) = signing_of(file, request, &scenario)?;
    let stale_secs = scheme.beyond_tolerance_secs();
    let chaos = chaos_of(request, &scenario)?;
    let time_scale = request
        .time_scale
        .or(scenario.delivery.time_scale)
        .unwrap_or(1.0);
    if !(time_scale.is_finite() && time_scale > 0.0) {
        return Err(Refused::NotAboveZero {
            field: Field::TimeScale,
            value: time_scale,
        }
        .into());
    }
    let jobs = request.jobs.or(scenario.delivery.jobs).unwrap_or(0);
    if let Some(target) = &request.target {
        crate::net::client::check_url(target).map_err(|e| Refused::Invalid {
            field: Field::Target,
            why: e.to_string(),
        })?;
    } else if jobs > 0 {
        return Err(Refused::Missing {
            field: Field::Target,
            by: Field::Jobs,
        }
        .into());
    }
    let handshake = handshake_of(request)?;
    let api = &scenario.api;
    Ok(Prepared {
        handshake,
        verify_token: request.verify_token.clone(),
        self_signed_hint: request.self_signed_hint,
        target: request.target.clone(),
        jobs,
        scheme,
        secrets,
        timeout: request
            .timeout
            .or(scenario.delivery.timeout_secs.map(Duration::from_secs))
            .unwrap_or(Duration::from_secs(10)),
        api_port: request.api_port,
        submit_path: api.submit_path.clone().unwrap_or_else(|| "/v1/jobs".into()),
        submit_delay: request
            .submit_delay
            .or(api.submit_delay_ms.map(Duration::from_millis))
            .unwrap_or(Duration::from_millis(200)),
        seed: request.seed,
        insecure: request.insecure,
        settings: Settings {
            lifecycle,
            time_scale,
            schedule,
            chaos,
            style: request.style.or(api.idempotency_style).unwrap_or_default(),
            key_required: request.key_required.or(api.key_required).unwrap_or(false),
            key_ttl: Duration::from_secs(24 * 3600),
            output_ttl: Duration::from_secs(24 * 3600),
            poll_gap: request
                .poll_gap
                .or(api.rate_limit_gap_ms.map(Duration::from_millis)),
            api_url: String::new(),
            contract,
            stale_secs,
        },
    })
}

/// The provider whose handshake goes first, if one is asked for (it needs a target to answer it).
fn handshake_of(request: &SimulateRequest) -> Result<Option<Provider>, AppError> {
    let Some(name) = request
        .handshake
        .as_deref()
        .filter(|n| !n.trim().is_empty())
    else {
        return Ok(None);
    };
    let provider =
        Provider::from_name(&name.trim().to_ascii_lowercase()).ok_or_else(|| Refused::Invalid {
            field: Field::Handshake,
            why: format!("{name} is not a provider: {}", Provider::names()),
        })?;
    if request.target.is_none() {
        return Err(Refused::Missing {
            field: Field::Target,
            by: Field::Handshake,
        }
        .into());
    }
    if provider == Provider::Meta
        && request
            .verify_token
            .as_deref()
            .is_none_or(|t| t.trim().is_empty())
    {
        return Err(Refused::Missing {
            field: Field::VerifyToken,
            by: Field::Handshake,
        }
        .into());
    }
    Ok(Some(provider))
}

/// The lifecycle: the scenario's own, else the named preset (default `render`).
fn lifecycle_of(request: &SimulateRequest, scenario: &Scenario) -> Result<Lifecycle, AppError> {
    let preset = request
        .preset
        .clone()
        .or(scenario.preset.clone())
        .unwrap_or_else(|| "render".into());
    let lifecycle = match (&request.preset, &scenario.lifecycle) {
        (None, Some(own)) => own.clone(),
        _ => sim::lifecycle(&preset).ok_or_else(|| {
            let names: Vec<String> = sim::lifecycles().into_iter().map(|l| l.name).collect();
            AppError::Usage(format!(
                "unknown preset \"{preset}\": one of {}",
                names.join(", ")
            ))
        })?,
    };
    if lifecycle.outcomes.is_empty() {
        return Err(AppError::Usage(
            "the lifecycle has no terminal outcome".into(),
        ));
    }
    Ok(lifecycle)
}

/// The retry schedule: the scenario's own delays, else the named one (default
/// `standard-webhooks`).
fn schedule_of(request: &SimulateRequest, scenario: &Scenario) -> Result<Vec<Duration>, AppError> {
    if let (None, Some(secs)) = (&request.schedule, &scenario.delivery.schedule_secs) {
        return Ok(secs.iter().map(|s| Duration::from_secs(*s)).collect());
    }
    let name = request
        .schedule
        .clone()
        .or(scenario.delivery.schedule.clone())
        .unwrap_or_else(|| "standard-webhooks".into());
    sim::schedule(&name).ok_or_else(|| {
        let names: Vec<&str> = sim::schedules().iter().map(|(n, _)| *n).collect();
        AppError::Usage(format!(
            "unknown schedule \"{name}\": one of {}",
            names.join(", ")
        ))
    })
}

/// The scheme and the secrets the webhooks are signed with, each secret checked against the
/// scheme's key format.
fn signing_of(
    file: &ConfigFile,
    request: &SimulateRequest,
    scenario: &Scenario,
) -> Result<(Scheme, Vec<Secret>), AppError> {
    let scheme_name = request
        .scheme
        .clone()
        .or(scenario.signing.scheme.clone())
        .unwrap_or_else(|| "standard-webhooks".into());
    let scheme = scheme_named(file, &scheme_name)?;
    let secrets: Vec<Secret> = if request.secrets.is_empty() {
        scenario.signing.secrets.iter().map(Secret::new).collect()
    } else {
        request.secrets.iter().map(Secret::new).collect()
    };
    if secrets.is_empty() {
        return Err(Refused::NoSecret {
            scheme: scheme.label.clone(),
        }
        .into());
    }
    for secret in &secrets {
        scheme.key(secret).map_err(|e| Refused::Invalid {
            field: Field::Secret,
            why: e.to_string(),
        })?;
    }
    Ok((scheme, secrets))
}

/// The chaos knobs: the request's over the scenario's, each a probability.
fn chaos_of(request: &SimulateRequest, scenario: &Scenario) -> Result<Chaos, AppError> {
    let mut chaos = scenario.chaos.unwrap_or_default();
    let c = request.chaos;
    chaos.duplicate_rate = rate(
        Field::DuplicateRate,
        c.duplicate_rate.unwrap_or(chaos.duplicate_rate),
    )?;
    chaos.reorder_rate = rate(
        Field::ReorderRate,
        c.reorder_rate.unwrap_or(chaos.reorder_rate),
    )?;
    chaos.drop_rate = rate(Field::DropRate, c.drop_rate.unwrap_or(chaos.drop_rate))?;
    chaos.late_retry_rate = rate(
        Field::LateRetryRate,
        c.late_retry_rate.unwrap_or(chaos.late_retry_rate),
    )?;
    chaos.max_delay_secs = c.max_delay_secs.unwrap_or(chaos.max_delay_secs);
    Ok(chaos)
}

/// Counts of a run so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Jobs created.
    pub jobs: usize,
    /// Jobs in a terminal state.
    pub jobs_done: usize,
    /// Events emitted.
    pub events: usize,
    /// Events acknowledged with 2xx.
    pub acknowledged: usize,
    /// Events dropped on purpose.
    pub dropped: usize,
    /// Events out of attempts.
    pub exhausted: usize,
    /// Attempts sent.
    pub attempts: usize,
    /// Attempts on the wire.
    pub in_flight: usize,
    /// Every job ended and every event settled.
    pub finished: bool,
}

/// A running simulation.
pub struct Running {
    /// The handshake's check, when one went first.
    pub handshake: Option<Check>,
    /// The provider's state.
    pub world: Arc<Lock<World>>,
    /// The job API's address.
    pub api_addr: std::net::SocketAddr,
    server: Option<ApiServer>,
    in_flight: Arc<AtomicUsize>,
    stop: tokio::sync::watch::Sender<bool>,
    delivery: tokio::task::JoinHandle<()>,
    timeout: Duration,
}

impl Running {
    /// Counts so far.
    pub fn progress(&self) -> Progress {
        let now = now_ms();
        let world = self.world.lock();
        let mut p = Progress {
            jobs: world.jobs.len(),
            attempts: world.attempts,
            in_flight: self.in_flight.load(Ordering::SeqCst),
            finished: self.refused()
                || (world.finished(now) && self.in_flight.load(Ordering::SeqCst) == 0),
            ..Progress::default()
        };
        for job in &world.jobs {
            if job.events.last().is_some_and(|e| e.due_ms <= now) {
                p.jobs_done += 1;
            }
            for e in &job.events {
                p.events += usize::from(e.body.is_some());
                p.acknowledged += usize::from(e.acked);
                p.dropped += usize::from(e.dropped);
                p.exhausted += usize::from(e.exhausted);
            }
        }
        p
    }

    /// The scorecard of what was observed so far.
    pub fn scorecard(&self) -> Vec<Check> {
        let mut observed = self.world.lock().observed.clone();
        observed.timeout_ms = self.timeout.as_millis() as u64;
        self.handshake
            .iter()
            .cloned()
            .chain(sim::scorecard(&observed))
            .collect()
    }

    /// Whether the handler got the handshake wrong, so nothing is delivered: the run is over.
    fn refused(&self) -> bool {
        self.handshake
            .as_ref()
            .is_some_and(|check| check.status == sim::Verdict::Fail)
    }

    /// Waits until every job has ended and every event is settled (at once when the handshake
    /// was answered wrong: nothing will be delivered).
    pub async fn until_done(&self) {
        if self.refused() {
            return;
        }
        loop {
            // Only whether it finished: the full counts are for the reports.
            let finished = self.world.lock().finished(now_ms());
            if finished && self.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops sending and serving; waits for the attempts on the wire and their records.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(server) = self.server.take() {
            server.stop();
        }
        let _ = (&mut self.delivery).await;
    }
}

/// Starts the job API and the delivery loop on the current runtime; with `jobs`, creates them.
pub async fn start(prepared: Prepared, writer: StoreWriter) -> Result<Running, AppError> {
    let mut settings = prepared.settings.clone();
    settings.api_url = String::new();
    let world = Arc::new(Lock::new(World::new(settings, prepared.seed)));
    let confirmations = Arc::new(AtomicUsize::new(0));
    let api = Api {
        world: Arc::clone(&world),
        default_callback: prepared.target.clone(),
        submit_delay: prepared.submit_delay,
        confirmations: Arc::clone(&confirmations),
    };
    let server = simulator::serve(api, prepared.api_port, &prepared.submit_path)
        .await
        .map_err(|e| {
            AppError::Usage(format!(
                "the job API cannot listen on 127.0.0.1:{}: {e}",
                prepared.api_port
            ))
        })?;
    let api_addr = server.addr;
    let mut client = Client::with_tls(prepared.timeout, Tls::insecure_if(prepared.insecure))?;
    if let Some(hint) = prepared.self_signed_hint {
        client = client.with_insecure_hint(hint);
    }
    let handshake = match (prepared.handshake, &prepared.target) {
        (Some(provider), Some(target)) => Some(
            handshake_first(
                provider,
                target,
                &prepared,
                &client,
                &writer,
                &format!("http://{api_addr}/sns/confirm"),
                &confirmations,
            )
            .await,
        ),
        _ => None,
    };
    // Like the provider, nothing is delivered to a handler that got the handshake wrong.
    let subscribed = handshake
        .as_ref()
        .is_none_or(|check| check.status != sim::Verdict::Fail);
    {
        let mut w = world.lock();
        w.settings.api_url = format!("http://{api_addr}");
        if let (Some(target), true) = (&prepared.target, subscribed) {
            let now = now_ms();
            for _ in 0..prepared.jobs {
                w.create_job(target, now);
            }
        }
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let delivery = tokio::spawn(deliver(
        Arc::clone(&world),
        Arc::new(Signer {
            scheme: prepared.scheme.clone(),
            secrets: prepared.secrets.clone(),
            client,
            store: writer.path().to_path_buf(),
        }),
        writer,
        stopped,
        Arc::clone(&in_flight),
    ));
    Ok(Running {
        handshake,
        world,
        api_addr,
        server: Some(server),
        in_flight,
        stop,
        delivery,
        timeout: prepared.timeout,
    })
}

struct Signer {
    scheme: Scheme,
    secrets: Vec<Secret>,
    client: Client,
    /// The store the attempts go to: a hookscope receiver writing to it is judged by what it
    /// recorded (`recorded_by_receiver`).
    store: std::path::PathBuf,
}

/// The delivery loop: sends what is due, records every attempt, until stopped.
async fn deliver(
    world: Arc<Lock<World>>,
    signer: Arc<Signer>,
    writer: StoreWriter,
    mut stopped: tokio::sync::watch::Receiver<bool>,
    in_flight: Arc<AtomicUsize>,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    let records: Arc<Lock<Vec<Attempt>>> = Arc::default();
    let mut last_flush = std::time::Instant::now();
    loop {
        if *stopped.borrow() {
            break;
        }
        let now = now_ms();
        let (work, next) = {
            let mut w = world.lock();
            let mut work = w.due_work(now);
            work.extend(w.take_late());
            (work, w.next_due())
        };
        for item in work {
            let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                break;
            };
            in_flight.fetch_add(1, Ordering::SeqCst);
            let (world, signer, records, in_flight) = (
                Arc::clone(&world),
                Arc::clone(&signer),
                Arc::clone(&records),
                Arc::clone(&in_flight),
            );
            tokio::spawn(async move {
                let attempt = send_one(&signer, &item).await;
                // A hookscope receiver's verdicts: the probes', and one correctly signed
                // delivery's (whether it verifies what the simulator signs).
                let asked = match item.kind {
                    WorkKind::Tampered | WorkKind::Stale => true,
                    WorkKind::Attempt => world.lock().observed.receiver_verifies.is_none(),
                    WorkKind::Copy | WorkKind::LateRetry => false,
                };
                let recorded = match asked {
                    true => recorded_by_receiver(&signer, &item, &attempt).await,
                    false => None,
                };
                let timed_out = attempt
                    .error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("no answer within"));
                world.lock().done(
                    &item,
                    attempt.status,
                    attempt.latency_ms,
                    timed_out,
                    now_ms(),
                    recorded,
                );
                records.lock().push(attempt);
                in_flight.fetch_sub(1, Ordering::SeqCst);
                drop(permit);
            });
        }
        if last_flush.elapsed() > Duration::from_millis(200) {
            flush(&records, &writer).await;
            last_flush = std::time::Instant::now();
        }
        let wait = next.map(|t| (t - now_ms()).clamp(1, 50)).unwrap_or(50) as u64;
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
            _ = stopped.changed() => {}
        }
    }
    // Let the attempts on the wire finish, then record everything.
    let _ = permits.acquire_many(CONCURRENCY as u32).await;
    flush(&records, &writer).await;
}

async fn flush(records: &Lock<Vec<Attempt>>, writer: &StoreWriter) {
    let batch = std::mem::take(&mut *records.lock());
    if !batch.is_empty() {
        let _ = writer.maintain(Maintenance::RecordAttempts(batch)).await;
    }
}

/// Sends the provider's handshake to the target before any event, records the attempt, and
/// judges the answer as the provider would (for SNS: waits up to the timeout for the handler to
/// fetch the SubscribeURL, which the simulator's job API serves).
async fn handshake_first(
    provider: Provider,
    target: &str,
    prepared: &Prepared,
    client: &Client,
    writer: &StoreWriter,
    confirm_url: &str,
    confirmations: &AtomicUsize,
) -> Check {
    let fail = |detail: String| Check::new("handshake", sim::Verdict::Fail, detail);
    let keys = Keys {
        secret: prepared.secrets.first(),
        verify_token: prepared.verify_token.as_deref(),
        scheme: Some(&prepared.scheme),
    };
    let challenge = match Challenge::new(provider, keys, now_secs(), confirm_url) {
        Ok(challenge) => challenge,
        Err(e) => return fail(format!("The handshake could not be made: {e}.")),
    };
    let attempt = match client
        .send_challenge(target, &challenge, AttemptKind::Simulate)
        .await
    {
        Ok(attempt) => attempt,
        Err(e) => unreachable_attempt(
            &crate::domain::delivery::masked_url(&challenge.url_for(target)),
            e.to_string(),
        ),
    };
    if let Err(e) = writer.attempt(attempt.clone()).await {
        eprintln!("hookscope: the handshake's attempt could not be recorded: {e}");
    }
    let mut confirmed = false;
    if challenge.awaits_confirmation() && attempt.succeeded() {
        let deadline = std::time::Instant::now() + prepared.timeout;
        while std::time::Instant::now() < deadline {
            if confirmations.load(Ordering::SeqCst) > 0 {
                confirmed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    match challenge.judge(
        attempt.status,
        &attempt.response_headers,
        &attempt.response_body,
        confirmed,
    ) {
        Ok(sentence) => Check::new("handshake", sim::Verdict::Pass, sentence),
        Err(why) => fail(format!(
            "{}{why}; like the provider, the simulator delivered nothing.",
            attempt
                .error
                .as_deref()
                .map(|e| format!("{e}: "))
                .unwrap_or_default()
        )),
    }
}

/// Signs and sends one attempt: a fresh timestamp and signature every time; the tampered
/// probe has every signature forged (`Scheme::forge`), the stale one is signed
/// `Scheme::beyond_tolerance_secs` ago.
async fn send_one(signer: &Signer, item: &Work) -> Attempt {
    let mut scheme = signer.scheme.clone();
    scheme.public_url = Some(item.url.clone());
    let ts = match (item.kind, scheme.beyond_tolerance_secs()) {
        (WorkKind::Stale, Some(age)) => now_secs() - age,
        _ => now_secs(),
    };
    let mut headers = vec![
        Header::new("content-type", "application/json"),
        Header::new("user-agent", "hookscope-simulator"),
    ];
    let signed = if item.kind == WorkKind::Tampered {
        scheme.forge(&signer.secrets, &item.event_id, ts, &item.body)
    } else {
        scheme.sign(&signer.secrets, &item.event_id, ts, &item.body)
    };
    match signed {
        Ok(signed) => headers.extend(signed),
        Err(e) => {
            let mut attempt = unreachable_attempt(&item.url, format!("cannot sign: {e}"));
            attempt.job_id = Some(item.job_id.clone());
            attempt.attempt_number = Some(item.attempt);
            return attempt;
        }
    }
    let outgoing = Outgoing {
        method: "POST".into(),
        headers,
        body: item.body.to_vec(),
    };
    let url = scheme.request_url(&item.url, &item.body);
    let mut attempt = match signer
        .client
        .send(&url, &outgoing, AttemptKind::Simulate, None)
        .await
    {
        Ok(a) => a,
        Err(e) => unreachable_attempt(&url, e.to_string()),
    };
    attempt.job_id = Some(item.job_id.clone());
    attempt.attempt_number = Some(item.attempt);
    attempt
}

/// When a tampered or stale probe was answered by a hookscope receiver that writes to this
/// run's store (its answer names the delivery it stored, and that delivery carries the very
/// signature header sent): what its check recorded. Such a receiver answers every delivery by
/// design, so its status says nothing; its verdict does. `None` for any other answer.
async fn recorded_by_receiver(signer: &Signer, item: &Work, attempt: &Attempt) -> Option<Recorded> {
    let id: i64 = attempt
        .response_headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("x-hookscope-delivery-id"))
        .and_then(|h| std::str::from_utf8(&h.value).ok()?.trim().parse().ok())?;
    let header = &signer.scheme.signature_header;
    let sent = attempt
        .request_headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(header))?
        .value
        .clone();
    let (path, header) = (signer.store.clone(), header.clone());
    // The read is SQLite's: off the async workers.
    let checks = tokio::task::spawn_blocking(move || {
        let stored = crate::store::Reader::open(&path).ok()?.get(id).ok()??;
        // A receiver that forwarded it and answered with its handler's status is that
        // handler: its status is the verdict.
        let mirrored = stored
            .note
            .as_deref()
            .is_some_and(|n| n.contains(crate::capture::MIRRORED));
        (stored.delivery.header(&header) == Some(sent.as_slice()) && !mirrored)
            .then_some(stored.checks)
    })
    .await
    .ok()??;
    Some(judged(id, &checks, item.kind))
}

/// How a receiver's checks judged a probe: the signature check the tampered one, the timestamp
/// check (of a verified signature) the stale one; and a correctly signed delivery, by the
/// signature check too.
fn judged(id: i64, checks: &Checks, kind: WorkKind) -> Recorded {
    let sig = checks.signature.status;
    let (verdict, caught) = if !matches!(kind, WorkKind::Tampered | WorkKind::Stale) {
        // A correctly signed delivery: `No` (not caught) is what a receiver that verifies does.
        let caught = match sig {
            SignatureStatus::Pass => Caught::No,
            SignatureStatus::Fail | SignatureStatus::Skipped => Caught::Yes,
        };
        (format!("sig {}", sig.as_str()), caught)
    } else if kind == WorkKind::Tampered {
        let caught = match sig {
            SignatureStatus::Fail => Caught::Yes,
            SignatureStatus::Pass => Caught::No,
            SignatureStatus::Skipped => Caught::NotJudged,
        };
        (format!("sig {}", sig.as_str()), caught)
    } else {
        let ts = checks.timestamp.status;
        let caught = match (sig, ts) {
            (SignatureStatus::Pass, TimestampStatus::Fail) => Caught::Yes,
            (SignatureStatus::Pass, TimestampStatus::Pass | TimestampStatus::Warn) => Caught::No,
            _ => Caught::NotJudged,
        };
        (format!("sig {}, ts {}", sig.as_str(), ts.as_str()), caught)
    };
    Recorded {
        id,
        verdict,
        caught,
    }
}

fn unreachable_attempt(url: &str, error: String) -> Attempt {
    let request = (Vec::new(), Vec::new());
    Attempt {
        error: Some(error),
        ..Attempt::unanswered(
            AttemptKind::Simulate,
            url.to_string(),
            None,
            now_ms(),
            request,
        )
    }
}

/// The scorecard as JSON: `{"checks": [{name, status, detail}], "passed", "progress"}`.
pub fn scorecard_json(checks: &[Check], progress: &Progress) -> serde_json::Value {
    serde_json::json!({
        "checks": checks,
        "passed": crate::domain::sim::passed(checks),
        "progress": progress,
    })
}

/// Reads a scenario file for a request.
pub fn read_scenario(path: &Path) -> Result<(String, String), AppError> {
    std::fs::read_to_string(path)
        .map(|text| (text, path.display().to_string()))
        .map_err(|e| {
            AppError::Usage(format!(
                "cannot read the scenario file {}: {e}",
                path.display()
            ))
        })
}

/// When a simulation's `target` is this hookscope's own receiver (listening on `own_port` on
/// loopback), the config with an endpoint that verifies what the simulator sends: the target's
/// path, the simulator's scheme and secret (added to an endpoint at that exact path, or a new
/// one), with that path. `None` when the target is elsewhere, no secret is given, or the endpoint the receiver
/// would use already verifies it. Without it every simulated delivery shows *sig skipped*.
pub fn own_receiver_endpoint(
    file: &ConfigFile,
    target: &str,
    own_port: u16,
    scheme: &str,
    secret: &str,
) -> Option<(String, ConfigFile)> {
    let secret = secret.trim();
    let rest = target.trim().strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = authority.rsplit_once(':')?;
    if secret.is_empty()
        || port.parse::<u16>().ok() != Some(own_port)
        || !matches!(host, "127.0.0.1" | "localhost" | "[::1]")
    {
        return None;
    }
    let path = path
        .split(['?', '#'])
        .next()
        .filter(|p| !p.is_empty())
        .unwrap_or("/");
    let settings =
        crate::config::Settings::resolve(file, &crate::config::Overrides::default()).ok()?;
    let endpoint = settings.endpoint_for(path);
    let verifies = endpoint.scheme.as_ref().is_none_or(|s| s.name == scheme)
        && endpoint.secrets.iter().any(|s| s.expose() == secret);
    if verifies {
        return None;
    }
    let mut fresh = file.clone();
    let at = match fresh.endpoints.iter().position(|e| e.path == path) {
        Some(at) => at,
        None => {
            fresh
                .endpoints
                .push(crate::config::EndpointConfig::new(path));
            fresh.endpoints.len() - 1
        }
    };
    let added = &mut fresh.endpoints[at];
    added.scheme = Some(scheme.to_string());
    if !added.secrets.iter().any(|s| s.expose() == secret) {
        added.secrets.push(Secret::new(secret));
    }
    Some((path.to_string(), fresh))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulation aimed at the window's own receiver gets an endpoint for its
    /// path with the simulator's scheme and secret, so the receiver verifies what it is sent.
    #[test]
    fn the_own_receiver_is_offered_an_endpoint_that_verifies_the_simulation() {
        use crate::config::Settings;
        use crate::domain::checks::{SignatureStatus, evaluate};
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let file = ConfigFile::default();
        let target = "http://127.0.0.1:7878/hooks/sim";
        assert!(
            own_receiver_endpoint(
                &file,
                "http://127.0.0.1:3000/hooks/sim",
                7878,
                "standard-webhooks",
                secret
            )
            .is_none(),
            "another port is another handler"
        );
        assert!(
            own_receiver_endpoint(
                &file,
                "http://example.com:7878/hooks/sim",
                7878,
                "standard-webhooks",
                secret
            )
            .is_none()
        );
        assert!(own_receiver_endpoint(&file, target, 7878, "standard-webhooks", " ").is_none());
        let (path, fixed) = own_receiver_endpoint(&file, target, 7878, "standard-webhooks", secret)
            .expect("offered");
        assert_eq!(path, "/hooks/sim");
        let added = &fixed.endpoints[0];
        assert_eq!(
            (added.path.as_str(), added.scheme.as_deref()),
            ("/hooks/sim", Some("standard-webhooks"))
        );
        // The receiver, resolving the new config, verifies what the simulator signs.
        let scheme = Scheme::preset("standard-webhooks").expect("preset");
        let now = now_secs();
        let body = br#"{"type":"job.completed"}"#;
        let delivery = crate::domain::delivery::Delivery {
            received_at_ms: now * 1000,
            method: "POST".into(),
            path: "/hooks/sim".into(),
            query: String::new(),
            headers: scheme
                .sign(&[Secret::new(secret)], "msg_1", now, body)
                .expect("signs"),
            body: body.to_vec(),
            body_size: body.len() as u64,
            body_complete: true,
            remote_addr: None,
        };
        let before =
            Settings::resolve(&file, &crate::config::Overrides::default()).expect("settings");
        assert_eq!(
            evaluate(&delivery, before.endpoint_for("/hooks/sim"), now)
                .signature
                .status,
            SignatureStatus::Skipped
        );
        let after =
            Settings::resolve(&fixed, &crate::config::Overrides::default()).expect("settings");
        assert_eq!(
            evaluate(&delivery, after.endpoint_for("/hooks/sim"), now)
                .signature
                .status,
            SignatureStatus::Pass
        );
        // Once it verifies, nothing more is offered.
        assert!(own_receiver_endpoint(&fixed, target, 7878, "standard-webhooks", secret).is_none());
    }
}
