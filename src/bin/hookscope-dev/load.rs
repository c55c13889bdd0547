//! Load for the benchmarks (`hookscope-dev load`): a client that sends correctly signed
//! deliveries over many keep-alive connections and measures what comes back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use hookscope::domain::scheme::{Scheme, Secret};

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
    /// Percent of requests whose signature is spoiled (one character changed).
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
    hookscope::net::client::install_tls_provider();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(options.connections)
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let counter = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let started_unix_ms = crate::disk_probe::unix_ms();
    let deadline = started + options.duration;
    let per_connection_interval = (options.rate > 0)
        .then(|| Duration::from_secs_f64(options.connections as f64 / options.rate as f64));
    // Bounded: a sample that finds it full is dropped (the watcher reads far faster than 1 in 10
    // acknowledgements arrive).
    let (samples, watched) = std::sync::mpsc::sync_channel::<(i64, Instant)>(65_536);
    let watcher = options
        .watch_store
        .clone()
        .map(|store| {
            std::thread::Builder::new()
                .name("load-watch-store".into())
                .spawn(move || watch_visibility(store, watched))
        })
        .transpose()
        .map_err(|e| format!("cannot start the store watcher: {e}"))?;
    let mut tasks = Vec::new();
    for connection in 0..options.connections {
        let samples = samples.clone();
        let client = client.clone();
        let counter = Arc::clone(&counter);
        let options = options.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut slow = Vec::new();
            let (mut refused, mut errors, mut sent) = (0u64, 0u64, 0u64);
            // Spread the connections' first sends over one interval.
            let mut next = Instant::now()
                + per_connection_interval
                    .map(|i| i.mul_f64(connection as f64 / options.connections as f64))
                    .unwrap_or_default();
            while Instant::now() < deadline {
                // Paced (open loop): each request has its moment on a fixed schedule, and its
                // latency counts from that moment, not from when a connection that was held up
                // got round to sending it (wrk2's correction for coordinated omission).
                let mut scheduled = None;
                if let Some(interval) = per_connection_interval {
                    let now = Instant::now();
                    if next > now {
                        tokio::time::sleep(next - now).await;
                    }
                    scheduled = Some(next);
                    next += interval;
                }
                let sequence = counter.fetch_add(1, Ordering::Relaxed);
                // A retry repeats the previous event whole; bad signatures are a separate
                // band of the same hundred, so the two mixes do not overlap.
                let n = if sequence > 0 && sequence % 100 < options.duplicate_pct {
                    sequence - 1
                } else {
                    sequence
                };
                let spoil = (50..50 + options.bad_signature_pct).contains(&(sequence % 100));
                let body = body_of(n, options.body_size);
                let mut request = client
                    .post(&options.url)
                    .header("content-type", "application/json");
                if let Some((scheme, secret)) = &options.signing {
                    let now = hookscope::domain::clock::now_secs();
                    match scheme.sign(
                        std::slice::from_ref(secret),
                        &format!("msg_{n}"),
                        now,
                        &body,
                    ) {
                        Ok(headers) => {
                            for mut h in headers {
                                if spoil
                                    && h.name.contains("signature")
                                    && let Some(last) =
                                        h.value.iter_mut().rev().find(|b| b.is_ascii_alphanumeric())
                                {
                                    *last = if *last == b'A' { b'B' } else { b'A' };
                                }
                                request = request.header(h.name, h.value);
                            }
                        }
                        Err(e) => return Err(e.to_string()),
                    }
                }
                let t = scheduled.unwrap_or_else(Instant::now);
                let since_start = t.saturating_duration_since(started);
                sent += 1;
                match request.body(body).send().await {
                    Ok(response) => {
                        let ok = response.status().is_success();
                        let answer = response.bytes().await;
                        if ok {
                            let took = t.elapsed();
                            latencies.push(took);
                            if took > STALL {
                                slow.push((since_start, took));
                            }
                            if options.watch_store.is_some()
                                && sequence.is_multiple_of(10)
                                && let Some(id) = answer.ok().and_then(|a| {
                                    serde_json::from_slice::<serde_json::Value>(&a)
                                        .ok()?
                                        .get("delivery_id")?
                                        .as_i64()
                                })
                            {
                                let _ = samples.try_send((id, Instant::now()));
                            }
                        } else {
                            refused += 1;
                        }
                    }
                    Err(_) => errors += 1,
                }
            }
            Ok((latencies, slow, refused, errors, sent))
        }));
    }
    let mut latencies = Vec::new();
    let mut slow = Vec::new();
    let (mut refused, mut errors, mut sent) = (0, 0, 0);
    for task in tasks {
        let (l, w, r, e, s) = task.await.map_err(|e| e.to_string())??;
        latencies.extend(l);
        slow.extend(w);
        refused += r;
        errors += e;
        sent += s;
    }
    let seconds = started.elapsed().as_secs_f64();
    drop(samples);
    let visible = match watcher {
        Some(thread) => {
            let mut times = thread
                .join()
                .map_err(|_| "the store watcher panicked".to_string())??;
            times.sort();
            Some(Visibility {
                samples: times.len(),
                p50_ms: percentile(&times, 0.5),
                p99_ms: percentile(&times, 0.99),
                max_ms: percentile(&times, 1.0),
            })
        }
        None => None,
    };
    latencies.sort();
    let at = |q: f64| percentile(&latencies, q);
    Ok(LoadReport {
        sent,
        acknowledged: latencies.len() as u64,
        refused,
        errors,
        seconds,
        per_second: latencies.len() as f64 / seconds,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        max_ms: at(1.0),
        visible,
        stalls: stalls(started_unix_ms, slow),
    })
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

/// The `q` quantile of sorted times, in milliseconds (0 when there are none).
pub(crate) fn percentile(sorted: &[Duration], q: f64) -> f64 {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * q).round() as usize)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}
