//! Load for the benchmarks (`hookscope-dev load`): a client that sends correctly signed
//! deliveries over many keep-alive connections and measures what comes back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use hookscope::domain::scheme::{Scheme, Secret};

use crate::disk_probe::{percentile, unix_ms};

/// What a load run measured.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// Requests sent.
    pub sent: u64,
    /// Answered 2xx.
    pub acknowledged: u64,
    /// Answered otherwise.
    pub refused: u64,
    /// No answer (connection error, timeout).
    pub errors: u64,
    /// Wall time of the run, seconds.
    pub seconds: f64,
    /// Acknowledged per second.
    pub per_second: f64,
    /// Latency percentiles of acknowledged requests, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// With `--watch-store`: from an acknowledgement to the delivery being visible to a reader
    /// of the store, over every tenth acknowledged delivery (milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visible: Option<Visibility>,
    /// The moments acknowledgements were held up: each 100 ms of scheduled sends in which one
    /// took longer than [`STALL`], by wall clock (to set beside other probes, such as
    /// `hookscope-dev disk-probe`). At most 100, the earliest.
    pub stalls: Vec<Stall>,
    /// The moments requests were refused or unanswered: each 100 ms of scheduled sends with
    /// one, by wall clock (how long a fault cost the senders). At most 100, the earliest.
    pub failures: Vec<Failed>,
}

/// 100 ms of scheduled sends in which requests were refused or unanswered.
#[derive(Debug, Clone, Serialize)]
pub struct Failed {
    /// The start of the 100 ms, milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// Requests in it answered otherwise than 2xx, or not at all.
    pub count: u64,
}

/// An acknowledgement slower than this counts as a stall.
const STALL: Duration = Duration::from_millis(20);

/// 100 ms of scheduled sends in which an acknowledgement was held up.
#[derive(Debug, Clone, Serialize)]
pub struct Stall {
    /// The start of the 100 ms, milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// Acknowledgements in it slower than [`STALL`].
    pub slow: u64,
    /// The slowest, milliseconds.
    pub worst_ms: f64,
}

/// How long acknowledged deliveries took to become visible to a reader of the store.
#[derive(Debug, Clone, Serialize)]
pub struct Visibility {
    /// Deliveries sampled.
    pub samples: usize,
    /// Median, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
}

/// How to load a receiver.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Where to send.
    pub url: String,
    /// Concurrent connections.
    pub connections: usize,
    /// How long.
    pub duration: Duration,
    /// Offered rate in requests per second across all connections (0: as fast as possible).
    pub rate: u64,
    /// Body size in bytes.
    pub body_size: usize,
    /// Sign with this scheme and secret (`None`: unsigned).
    pub signing: Option<(Scheme, Secret)>,
    /// Percent of requests that repeat the previous event (its id and body): retries.
    pub duplicate_pct: u64,
    /// Percent of requests whose signature is forged (one bit of the MAC flipped).
    pub bad_signature_pct: u64,
    /// The receiver's store file: watch when acknowledged deliveries become visible in it.
    pub watch_store: Option<std::path::PathBuf>,
}

/// Reads the store's newest visible id every 0.2 ms and times each sampled acknowledgement
/// (delivery id, when answered) until its id is visible. Ids become visible in order.
fn watch_visibility(
    store: std::path::PathBuf,
    samples: std::sync::mpsc::Receiver<(i64, Instant)>,
) -> Result<Vec<Duration>, String> {
    let reader = hookscope::store::Reader::open(&store).map_err(|e| e.to_string())?;
    let mut waiting: std::collections::VecDeque<(i64, Instant)> = Default::default();
    let mut times = Vec::new();
    let mut open = true;
    while open || !waiting.is_empty() {
        loop {
            match samples.try_recv() {
                Ok(sample) => waiting.push_back(sample),
                Err(std::sync::mpsc::TryRecvError::Empty) => break,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        if !waiting.is_empty() {
            let newest = reader.newest_id().map_err(|e| e.to_string())?;
            let now = Instant::now();
            while let Some(&(id, acked)) = waiting.front() {
                if id > newest && now - acked < Duration::from_secs(10) {
                    break;
                }
                times.push(now - acked);
                waiting.pop_front();
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(times)
}

fn body_of(n: u64, size: usize) -> Vec<u8> {
    let head = format!(
        "{{\"id\":\"evt_{n}\",\"type\":\"job.completed\",\"data\":{{\"job_id\":\"job_{}\",\"status\":\"completed\",\"pad\":\"",
        n / 3
    );
    let mut body = head.into_bytes();
    while body.len() + 3 < size {
        body.push(b'a' + (body.len() % 26) as u8);
    }
    body.extend_from_slice(b"\"}}");
    body
}

/// Runs the load and reports.
pub async fn run(options: LoadOptions) -> Result<LoadReport, String> {
    let client = client(options.connections)?;
    let counter = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let started_unix_ms = unix_ms();
    let deadline = started + options.duration;
    let per_connection_interval = (options.rate > 0)
        .then(|| Duration::from_secs_f64(options.connections as f64 / options.rate as f64));
    // Bounded: a sample that finds it full is dropped (the watcher reads far faster than 1 in 10
    // acknowledgements arrive).
    let (samples, watched) = std::sync::mpsc::sync_channel::<(i64, Instant)>(65_536);
    let watcher = start_watcher(&options, watched)?;
    let mut tasks = Vec::new();
    for index in 0..options.connections {
        let connection = Connection {
            index,
            client: client.clone(),
            counter: Arc::clone(&counter),
            options: options.clone(),
            samples: samples.clone(),
            started,
            deadline,
            interval: per_connection_interval,
        };
        tasks.push(tokio::spawn(connection.send_until_deadline()));
    }
    let tally = gather(tasks).await?;
    let seconds = started.elapsed().as_secs_f64();
    drop(samples);
    let visible = visibility(watcher)?;
    Ok(report(tally, seconds, visible, started_unix_ms))
}

/// The HTTP client of a run: a keep-alive connection kept for each of `connections`, 30 s to
/// answer.
fn client(connections: usize) -> Result<reqwest::Client, String> {
    hookscope::net::client::install_tls_provider();
    reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())
}

/// The store watcher's thread and the times it measured (see [`watch_visibility`]).
type Watcher = std::thread::JoinHandle<Result<Vec<Duration>, String>>;

/// With `--watch-store`, starts the thread that times when sampled acknowledgements become
/// visible in the store (`None` without it).
fn start_watcher(
    options: &LoadOptions,
    watched: std::sync::mpsc::Receiver<(i64, Instant)>,
) -> Result<Option<Watcher>, String> {
    options
        .watch_store
        .clone()
        .map(|store| {
            std::thread::Builder::new()
                .name("load-watch-store".into())
                .spawn(move || watch_visibility(store, watched))
        })
        .transpose()
        .map_err(|e| format!("cannot start the store watcher: {e}"))
}

/// What one connection (or a whole run) counted.
#[derive(Default)]
struct Tally {
    /// The latency of each acknowledged request.
    latencies: Vec<Duration>,
    /// The acknowledgements slower than [`STALL`]: scheduled moment since the start, how long.
    slow: Vec<(Duration, Duration)>,
    /// Answered otherwise than 2xx.
    refused: u64,
    /// No answer.
    errors: u64,
    /// When each refused or unanswered request was scheduled, since the start.
    failed: Vec<Duration>,
    /// Requests sent.
    sent: u64,
}

impl Tally {
    /// Adds what another connection counted.
    fn add(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.slow.extend(other.slow);
        self.refused += other.refused;
        self.errors += other.errors;
        self.failed.extend(other.failed);
        self.sent += other.sent;
    }
}

/// One connection of a run: its number, and what it shares with the others.
struct Connection {
    /// Which connection, from 0: where its first send falls in the interval.
    index: usize,
    /// The run's client.
    client: reqwest::Client,
    /// The run's count of requests, across connections: each request's sequence number.
    counter: Arc<AtomicU64>,
    /// The run's options.
    options: LoadOptions,
    /// Where sampled acknowledgements go for the store watcher: delivery id, when answered.
    samples: std::sync::mpsc::SyncSender<(i64, Instant)>,
    /// When the run started.
    started: Instant,
    /// When it stops sending.
    deadline: Instant,
    /// The time between two of this connection's sends (`None`: as fast as possible).
    interval: Option<Duration>,
}

impl Connection {
    /// Sends until the deadline, paced when the run has a rate, and counts the answers.
    async fn send_until_deadline(self) -> Result<Tally, String> {
        let mut tally = Tally::default();
        // Spread the connections' first sends over one interval.
        let mut next = Instant::now()
            + self
                .interval
                .map(|i| i.mul_f64(self.index as f64 / self.options.connections as f64))
                .unwrap_or_default();
        while Instant::now() < self.deadline {
            // Paced (open loop): each request has its moment on a fixed schedule, and its
            // latency counts from that moment, not from when a connection that was held up
            // got round to sending it (wrk2's correction for coordinated omission).
            let scheduled = self.wait_for_turn(&mut next).await;
            let sequence = self.counter.fetch_add(1, Ordering::Relaxed);
            let request = self.request(sequence)?;
            let t = scheduled.unwrap_or_else(Instant::now);
            tally.sent += 1;
            self.send(request, sequence, t, &mut tally).await;
        }
        Ok(tally)
    }

    /// With a rate, sleeps until `next`, this connection's next moment on the schedule, moves
    /// `next` on by one interval and answers the moment slept until (`None`: unpaced).
    async fn wait_for_turn(&self, next: &mut Instant) -> Option<Instant> {
        let interval = self.interval?;
        let now = Instant::now();
        if *next > now {
            tokio::time::sleep(*next - now).await;
        }
        let scheduled = *next;
        *next += interval;
        Some(scheduled)
    }

    /// The request numbered `sequence`: a new event, or a retry of the previous one, signed
    /// (or with its signature spoiled) as the options ask.
    fn request(&self, sequence: u64) -> Result<reqwest::RequestBuilder, String> {
        // A retry repeats the previous event whole; bad signatures are a separate
        // band of the same hundred, so the two mixes do not overlap.
        let n = if sequence > 0 && sequence % 100 < self.options.duplicate_pct {
            sequence - 1
        } else {
            sequence
        };
        let spoil = (50..50 + self.options.bad_signature_pct).contains(&(sequence % 100));
        let body = body_of(n, self.options.body_size);
        let mut request = self
            .client
            .post(&self.options.url)
            .header("content-type", "application/json");
        if let Some((scheme, secret)) = &self.options.signing {
            for h in signature_headers(scheme, secret, n, &body, spoil)? {
                request = request.header(h.name, h.value);
            }
        }
        Ok(request.body(body))
    }

    /// Sends a request scheduled at `t` and counts its answer; every tenth acknowledged one
    /// goes to the store watcher, when there is one.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        sequence: u64,
        t: Instant,
        tally: &mut Tally,
    ) {
        let since_start = t.saturating_duration_since(self.started);
        match request.send().await {
            Ok(response) => {
                let ok = response.status().is_success();
                let answer = response.bytes().await;
                if ok {
                    let took = t.elapsed();
                    tally.latencies.push(took);
                    if took > STALL {
                        tally.slow.push((since_start, took));
                    }
                    if self.options.watch_store.is_some()
                        && sequence.is_multiple_of(10)
                        && let Some(id) = answer.ok().and_then(|a| delivery_id(&a))
                    {
                        let _ = self.samples.try_send((id, Instant::now()));
                    }
                } else {
                    tally.refused += 1;
                    tally.failed.push(since_start);
                }
            }
            Err(_) => {
                tally.errors += 1;
                tally.failed.push(since_start);
            }
        }
    }
}

/// The headers signing event `n`'s body, signed now; `spoil`: forged (`Scheme::forge`).
fn signature_headers(
    scheme: &Scheme,
    secret: &Secret,
    n: u64,
    body: &[u8],
    spoil: bool,
) -> Result<Vec<hookscope::domain::delivery::Header>, String> {
    let now = hookscope::domain::clock::now_secs();
    let secrets = std::slice::from_ref(secret);
    let id = format!("msg_{n}");
    if spoil {
        scheme.forge(secrets, &id, now, body)
    } else {
        scheme.sign(secrets, &id, now, body)
    }
    .map_err(|e| e.to_string())
}

/// The `delivery_id` of a receiver's JSON answer, if it has one.
fn delivery_id(answer: &[u8]) -> Option<i64> {
    serde_json::from_slice::<serde_json::Value>(answer)
        .ok()?
        .get("delivery_id")?
        .as_i64()
}

/// Waits for every connection and adds up what they counted.
async fn gather(
    tasks: Vec<tokio::task::JoinHandle<Result<Tally, String>>>,
) -> Result<Tally, String> {
    let mut tally = Tally::default();
    for task in tasks {
        tally.add(task.await.map_err(|e| e.to_string())??);
    }
    Ok(tally)
}

/// Waits for the store watcher and sums up the times it measured (`None` without one).
fn visibility(watcher: Option<Watcher>) -> Result<Option<Visibility>, String> {
    let Some(thread) = watcher else {
        return Ok(None);
    };
    let mut times = thread
        .join()
        .map_err(|_| "the store watcher panicked".to_string())??;
    times.sort();
    Ok(Some(Visibility {
        samples: times.len(),
        p50_ms: percentile(&times, 0.5),
        p99_ms: percentile(&times, 0.99),
        max_ms: percentile(&times, 1.0),
    }))
}

/// The report of a run that took `seconds`, from what its connections counted.
fn report(
    mut tally: Tally,
    seconds: f64,
    visible: Option<Visibility>,
    started_unix_ms: u64,
) -> LoadReport {
    tally.latencies.sort();
    let at = |q: f64| percentile(&tally.latencies, q);
    LoadReport {
        sent: tally.sent,
        acknowledged: tally.latencies.len() as u64,
        refused: tally.refused,
        errors: tally.errors,
        seconds,
        per_second: tally.latencies.len() as f64 / seconds,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        max_ms: at(1.0),
        visible,
        stalls: stalls(started_unix_ms, tally.slow),
        failures: failures(started_unix_ms, tally.failed),
    }
}

/// Groups refused and unanswered requests (scheduled moment since the start) by 100 ms.
fn failures(started_unix_ms: u64, mut failed: Vec<Duration>) -> Vec<Failed> {
    failed.sort();
    let mut out: Vec<Failed> = Vec::new();
    for at in failed {
        let at_unix_ms = started_unix_ms + (at.as_millis() as u64) / 100 * 100;
        if let Some(last) = out.last_mut()
            && last.at_unix_ms == at_unix_ms
        {
            last.count += 1;
        } else if out.len() == 100 {
            break;
        } else {
            out.push(Failed {
                at_unix_ms,
                count: 1,
            });
        }
    }
    out
}

/// Groups slow acknowledgements (scheduled moment since the start, how long) by 100 ms.
fn stalls(started_unix_ms: u64, mut slow: Vec<(Duration, Duration)>) -> Vec<Stall> {
    slow.sort();
    let mut out: Vec<Stall> = Vec::new();
    for (at, took) in slow {
        let at_unix_ms = started_unix_ms + (at.as_millis() as u64) / 100 * 100;
        let took_ms = took.as_secs_f64() * 1000.0;
        if let Some(last) = out.last_mut()
            && last.at_unix_ms == at_unix_ms
        {
            last.slow += 1;
            last.worst_ms = last.worst_ms.max(took_ms);
        } else if out.len() == 100 {
            break;
        } else {
            out.push(Stall {
                at_unix_ms,
                slow: 1,
                worst_ms: took_ms,
            });
        }
    }
    out
}
