//! Replaying many captured deliveries to a handler: a selection (a filter, ids, a job, a
//! fixtures folder, a HAR file) sent as captured or re-signed, at a rate, at the original
//! spacing scaled, or as fast as a concurrency bound allows. Every attempt is stored on its
//! delivery, as a resend is; [`Summary`] is what the CLI prints and the window shows.
//!
//! One implementation for both front ends: they [`select`], then [`run`] with a shared
//! [`Progress`] they watch and may stop.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::app::resend::{self, ResendRequest};
use crate::app::{AppError, Refused};
use crate::config::{ConfigFile, Overrides, Settings};
use crate::domain::attempt::{AttemptKind, percentile};
use crate::domain::clock::now_ms;
use crate::domain::fmt::rfc3339_ms;
use crate::domain::sync::Lock;
use crate::net::client::Tls;
use crate::store::{Reader, StoreWriter};

/// What to replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The deliveries a filter of the list selects (`type:invoice.* after:-2h`).
    Filter(String),
    /// Deliveries by id.
    Ids(Vec<i64>),
    /// A job's deliveries.
    Job(String),
    /// The fixtures (and bundles) in a folder, or one fixture file: stored first, then replayed.
    Fixtures(PathBuf),
    /// The requests of a HAR file: stored first, then replayed.
    Har(PathBuf),
}

/// How fast deliveries are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// As fast as the concurrency bound allows.
    Asap,
    /// This many per second.
    Rate(f64),
    /// The original spacing between arrivals, divided by this factor (`--speed 10`).
    Speed(f64),
}

/// A replay: where, how and how fast.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayRequest {
    /// The handler's URL.
    pub url: String,
    /// Re-sign each with a fresh timestamp (`false`: exactly as captured).
    pub resign: bool,
    /// The scheme to re-sign with (default: each delivery's).
    pub scheme: Option<String>,
    /// The secrets to re-sign with (default: each delivery's endpoint's).
    pub secrets: Vec<String>,
    /// Give each event a new id (new events, not retries).
    pub new_ids: bool,
    /// How fast.
    pub pace: Pace,
    /// At most this many requests in flight.
    pub concurrency: usize,
    /// How long the handler has to answer each.
    pub timeout: Duration,
    /// Accept any TLS certificate.
    pub insecure: bool,
    /// What a refused certificate's sentence suggests, in the words of the front end that asks
    /// (the client's own when it names none).
    pub self_signed_hint: Option<&'static str>,
}

/// The default bound on requests in flight.
pub const DEFAULT_CONCURRENCY: usize = 8;

impl ReplayRequest {
    /// The resend of delivery `id` this replay makes.
    fn one(&self, id: i64) -> ResendRequest {
        ResendRequest {
            delivery_id: id,
            url: self.url.clone(),
            resign: self.resign,
            scheme: self.scheme.clone(),
            secrets: self.secrets.clone(),
            new_id: self.new_ids,
            body: None,
            timeout: self.timeout,
            insecure: self.insecure,
            self_signed_hint: self.self_signed_hint,
        }
    }

    /// A replay to `url` as captured, as fast as the default concurrency allows.
    pub fn to(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            resign: false,
            scheme: None,
            secrets: Vec::new(),
            new_ids: false,
            pace: Pace::Asap,
            concurrency: DEFAULT_CONCURRENCY,
            timeout: crate::net::client::DEFAULT_TIMEOUT,
            insecure: false,
            self_signed_hint: None,
        }
    }

    /// Refuses what cannot be sent before anything is: the URL, a zero rate, speed or bound.
    pub fn check(&self) -> Result<(), AppError> {
        crate::net::client::check_url(&self.url).map_err(|e| AppError::Usage(e.to_string()))?;
        match self.pace {
            Pace::Rate(r) if !(r > 0.0 && r.is_finite()) => {
                return Err(AppError::Usage(
                    "a rate of 0 sends nothing: give at least 1/s, or leave the rate out".into(),
                ));
            }
            Pace::Rate(r) if r < 1.0 / 3600.0 => {
                return Err(AppError::Usage(
                    "a rate under 1/h would take longer than anyone waits: give at least 1/h"
                        .into(),
                ));
            }
            Pace::Speed(s) if s.is_finite() && s > 0.0 && s < 0.001 => {
                return Err(AppError::Usage(
                    "a speed under 0.001 stretches a second to over a quarter of an hour: give at least 0.001".into(),
                ));
            }
            Pace::Speed(s) if !(s > 0.0 && s.is_finite()) => {
                return Err(AppError::Usage(
                    "a speed of 0 never sends: give a factor above 0 (1 is the original spacing)"
                        .into(),
                ));
            }
            _ => {}
        }
        if self.concurrency == 0 {
            return Err(AppError::Usage(
                "a concurrency of 0 sends nothing: give at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// Reads a rate: `20`, `20/s`, `300/m` (or `/min`), `3600/h`; per second.
pub fn parse_rate(text: &str) -> Result<f64, AppError> {
    let text = text.trim();
    let (count, per) = text.split_once('/').unwrap_or((text, "s"));
    let seconds = match per.trim() {
        "s" | "sec" | "second" => 1.0,
        "m" | "min" | "minute" => 60.0,
        "h" | "hour" => 3600.0,
        other => {
            return Err(AppError::Usage(format!(
                "rate {text}: \"/{other}\" is not a unit; write 20/s, 300/m or 3600/h"
            )));
        }
    };
    let count: f64 = count.trim().parse().map_err(|_| {
        AppError::Usage(format!(
            "rate {text}: not a number of requests; write 20/s, 300/m or 3600/h"
        ))
    })?;
    Ok(count / seconds)
}

/// The deliveries a selection names, in stored order (a fixtures folder or a HAR file is
/// stored first, so each attempt has its delivery). An empty selection or a missing id is a
/// usage error.
pub fn select(
    file: &ConfigFile,
    reader: &Reader,
    writer: &StoreWriter,
    selection: &Selection,
) -> Result<Vec<i64>, AppError> {
    let ids = match selection {
        Selection::Filter(text) => {
            let filter = crate::app::list::parse_filter(text)?;
            let rows = reader.page(&filter, 0, usize::MAX >> 1)?;
            rows.into_iter().map(|row| row.id).collect()
        }
        Selection::Ids(ids) => {
            for id in ids {
                if !reader.exists(*id)? {
                    return Err(AppError::Usage(format!("no delivery #{id} in the store")));
                }
            }
            ids.clone()
        }
        Selection::Job(job) => reader
            .job_deliveries(job)?
            .into_iter()
            .map(|d| d.delivery_id)
            .collect(),
        Selection::Fixtures(path) => store_fixtures(file, writer, path)?,
        Selection::Har(path) => crate::app::export::import_har(file, writer, path)?,
    };
    if ids.is_empty() {
        return Err(AppError::Usage(format!(
            "nothing to replay: {}",
            match selection {
                Selection::Filter(text) => format!("no delivery matches {text}"),
                Selection::Ids(_) => "no ids given".into(),
                Selection::Job(job) => format!("no delivery of job {job} is stored"),
                Selection::Fixtures(path) => format!("no fixture in {}", path.display()),
                Selection::Har(path) => format!("no request in {}", path.display()),
            }
        )));
    }
    Ok(ids)
}

/// Reads the fixtures of a folder (`*.json`, in name order, numbers by value) or one file,
/// checks each with this machine's endpoints at its recorded time, and stores them.
fn store_fixtures(
    file: &ConfigFile,
    writer: &StoreWriter,
    path: &Path,
) -> Result<Vec<i64>, AppError> {
    let cannot =
        |e: std::io::Error| AppError::Usage(format!("cannot read {}: {e}", path.display()));
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(cannot)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort_by_key(|p| natural_key(p));
        files
    } else {
        vec![path.to_path_buf()]
    };
    let settings = Settings::resolve(file, &Overrides::default())?;
    let mut records = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| AppError::Usage(format!("cannot read {}: {e}", file.display())))?;
        let fixtures = crate::export::load_fixtures(&text)
            .map_err(|e| AppError::Usage(format!("{}: {e}", file.display())))?;
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let recorded = fixtures.into_iter().map(|fixture| {
            let note = format!(
                "Stored from the fixture {name} to be replayed; checks use this machine's endpoints at the recorded time."
            );
            (fixture.delivery, 0, note)
        });
        records.extend(crate::capture::decide_recorded(&settings, recorded));
    }
    if records.is_empty() {
        return Ok(Vec::new());
    }
    Ok(writer.insert_many_blocking(records)?)
}

/// `delivery-9.json` before `delivery-10.json`: digits compared by value.
fn natural_key(path: &Path) -> (String, u64, String) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let start = name
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(name.len());
    let digits: String = name[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (
        name[..start].to_string(),
        digits.parse().unwrap_or(0),
        name.clone(),
    )
}

/// What a replay has done so far, shared with the front end that watches it and may stop it.
#[derive(Debug)]
pub struct Progress {
    total: usize,
    started: Instant,
    sent: AtomicUsize,
    done: AtomicUsize,
    succeeded: AtomicUsize,
    answered: AtomicUsize,
    stop: AtomicBool,
    why_stopped: Lock<Option<String>>,
    latency_sum_ms: AtomicU64,
}

/// A look at a replay's progress.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    /// Deliveries selected.
    pub total: usize,
    /// Attempts finished (answered or failed).
    pub done: usize,
    /// Attempts answered 2xx.
    pub succeeded: usize,
    /// Attempts finished that were not 2xx (another status or no answer).
    pub failed: usize,
    /// Attempts per second so far.
    pub rate: f64,
    /// Seconds left at this rate, once there is one.
    pub eta_secs: Option<f64>,
    /// Whether it was asked to stop.
    pub stopping: bool,
}

impl Progress {
    /// Progress of a replay of `total` deliveries, starting now.
    pub fn new(total: usize) -> Arc<Progress> {
        Arc::new(Progress {
            total,
            started: Instant::now(),
            sent: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            succeeded: AtomicUsize::new(0),
            answered: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            why_stopped: Lock::new(None),
            latency_sum_ms: AtomicU64::new(0),
        })
    }

    /// Asks the replay to stop: nothing new is sent, what is in flight is finished and stored.
    pub fn stop(&self, why: impl Into<String>) {
        let mut slot = self.why_stopped.lock();
        if slot.is_none() {
            *slot = Some(why.into());
        }
        self.stop.store(true, Ordering::SeqCst);
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The counts, the rate and the time left.
    pub fn snapshot(&self) -> Snapshot {
        let done = self.done.load(Ordering::SeqCst);
        let succeeded = self.succeeded.load(Ordering::SeqCst);
        let elapsed = self.started.elapsed().as_secs_f64();
        let rate = if elapsed > 0.0 {
            done as f64 / elapsed
        } else {
            0.0
        };
        Snapshot {
            total: self.total,
            done,
            succeeded,
            failed: done - succeeded.min(done),
            rate,
            eta_secs: (rate > 0.0).then(|| (self.total - done.min(self.total)) as f64 / rate),
            stopping: self.stopping(),
        }
    }
}

impl Snapshot {
    /// "120/1000 · 20.0/s · 2 failed · 44 s left", for a progress bar's label.
    pub fn line(&self) -> String {
        let mut line = format!("{}/{} · {:.1}/s", self.done, self.total, self.rate);
        if self.failed > 0 {
            line.push_str(&format!(" · {} failed", self.failed));
        }
        match (self.stopping, self.eta_secs) {
            (true, _) => line.push_str(" · stopping"),
            (false, Some(eta)) if self.done < self.total => line.push_str(&format!(
                " · {} left",
                crate::domain::fmt::human_duration(eta.ceil() as u64)
            )),
            _ => {}
        }
        line
    }

    /// The fraction done, for a progress bar.
    pub fn fraction(&self) -> f32 {
        if self.total == 0 {
            1.0
        } else {
            self.done as f32 / self.total as f32
        }
    }
}

/// One delivery's attempt in a replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The delivery.
    pub delivery_id: i64,
    /// Its event type, to name the case.
    pub event_type: Option<String>,
    /// The stored attempt's id (0 when it could not be stored or was not sent).
    pub attempt_id: i64,
    /// Whether a request went out (not: deleted, or nothing to re-sign it with).
    pub sent: bool,
    /// The handler's status, when it answered.
    pub status: Option<u16>,
    /// Why there is no status (refused, timed out, could not be built).
    pub error: Option<String>,
    /// Why it was not sent, when the request was refused (no secret or scheme to re-sign it
    /// with): `error` says it plainly until a front end words it ([`Summary::word`]).
    pub refused: Option<Refused>,
    /// Milliseconds until the answer or the error.
    pub latency_ms: u64,
    /// When it was sent, Unix milliseconds.
    pub sent_at_ms: i64,
}

impl Outcome {
    /// Whether the handler answered 2xx.
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// "500", or the error.
    pub fn result(&self) -> String {
        match (self.status, &self.error) {
            (Some(status), _) => status.to_string(),
            (None, Some(error)) => error.clone(),
            (None, None) => "no answer".into(),
        }
    }
}

/// How a replay went.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Where it went.
    pub url: String,
    /// How many were selected.
    pub selected: usize,
    /// Each attempt made, in the order they finished.
    pub outcomes: Vec<Outcome>,
    /// Why it stopped before the end, when it did.
    pub stopped: Option<String>,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Summary {
    /// Says each refused delivery's refusal in a front end's words (`say`), for its reports.
    pub fn word(&mut self, say: impl Fn(&Refused) -> String) {
        for outcome in &mut self.outcomes {
            if let Some(refused) = &outcome.refused {
                outcome.error = Some(say(refused));
            }
        }
    }

    /// Attempts by result: `"200"`, `"500"`, `"no answer"`.
    pub fn by_status(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for o in &self.outcomes {
            let key = match (o.status, o.sent) {
                (Some(status), _) => status.to_string(),
                (None, true) => "no answer".into(),
                (None, false) => "not sent".into(),
            };
            *counts.entry(key).or_insert(0) += 1;
        }
        counts
    }

    /// The latency at fraction `p` of the answered attempts, in ms.
    pub fn latency_ms(&self, p: f64) -> u64 {
        let mut answered: Vec<u64> = self
            .outcomes
            .iter()
            .filter(|o| o.status.is_some())
            .map(|o| o.latency_ms)
            .collect();
        answered.sort_unstable();
        percentile(&answered, p)
    }

    /// The attempts that were not 2xx, by delivery id.
    pub fn failures(&self) -> Vec<&Outcome> {
        let mut failed: Vec<&Outcome> = self.outcomes.iter().filter(|o| !o.succeeded()).collect();
        failed.sort_by_key(|o| o.delivery_id);
        failed
    }

    /// Whether every selected delivery was sent and answered 2xx.
    pub fn all_succeeded(&self) -> bool {
        self.stopped.is_none()
            && self.outcomes.len() == self.selected
            && self.outcomes.iter().all(Outcome::succeeded)
    }

    /// Attempts per second over the run.
    pub fn rate(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.outcomes.len() as f64 / secs
        } else {
            0.0
        }
    }

    /// The counts by result: "23 × 200, 1 × 500".
    pub fn counts(&self) -> String {
        self.by_status()
            .iter()
            .map(|(status, n)| format!("{n} × {status}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One sentence: what was sent, how it was answered, how fast.
    pub fn sentence(&self) -> String {
        let counts = self.counts();
        let mut line = format!(
            "replayed {} of {} to {} in {:.1} s ({:.1}/s)",
            self.outcomes.len(),
            self.selected,
            self.url,
            self.elapsed.as_secs_f64(),
            self.rate()
        );
        if !counts.is_empty() {
            line.push_str(&format!(": {counts}"));
        }
        if self.outcomes.iter().any(|o| o.status.is_some()) {
            line.push_str(&format!(
                "; latency p50 {} ms, p99 {} ms",
                self.latency_ms(0.5),
                self.latency_ms(0.99)
            ));
        }
        if let Some(why) = &self.stopped {
            line.push_str(&format!("; stopped: {why}"));
        }
        line
    }

    /// The JSON `replay --json` prints (docs/interface.md).
    pub fn json(&self) -> Value {
        let outcome = |o: &Outcome| {
            json!({
                "delivery_id": o.delivery_id,
                "event_type": o.event_type,
                "attempt_id": o.attempt_id,
                "status": o.status,
                "error": o.error,
                "latency_ms": o.latency_ms,
                "sent_at": rfc3339_ms(o.sent_at_ms),
            })
        };
        let mut attempts: Vec<&Outcome> = self.outcomes.iter().collect();
        attempts.sort_by_key(|o| o.delivery_id);
        json!({
            "url": self.url,
            "selected": self.selected,
            "sent": self.outcomes.iter().filter(|o| o.sent).count(),
            "ok": self.all_succeeded(),
            "stopped": self.stopped,
            "elapsed_ms": self.elapsed.as_millis() as u64,
            "rate_per_s": (self.rate() * 10.0).round() / 10.0,
            "by_status": self.by_status(),
            "latency_ms": {"p50": self.latency_ms(0.5), "p99": self.latency_ms(0.99)},
            "failures": self.failures().into_iter().map(outcome).collect::<Vec<_>>(),
            "attempts": attempts.into_iter().map(outcome).collect::<Vec<_>>(),
        })
    }

    /// A JUnit report: one test case per delivery sent, failed when not 2xx, an error when
    /// unanswered, skipped when a stop left it unsent.
    pub fn junit(&self, unsent: &[i64]) -> String {
        let failures = self
            .outcomes
            .iter()
            .filter(|o| o.status.is_some() && !o.succeeded())
            .count();
        let errors = self.outcomes.iter().filter(|o| o.status.is_none()).count();
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        xml.push_str(&format!(
            "<testsuite name=\"hookscope replay to {}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{}\" time=\"{:.3}\">\n",
            xml_escape(&self.url),
            self.outcomes.len() + unsent.len(),
            unsent.len(),
            self.elapsed.as_secs_f64()
        ));
        let mut cases: Vec<&Outcome> = self.outcomes.iter().collect();
        cases.sort_by_key(|o| o.delivery_id);
        for o in cases {
            let name = case_name(o.delivery_id, o.event_type.as_deref());
            xml.push_str(&format!(
                "  <testcase classname=\"hookscope.replay\" name=\"{}\" time=\"{:.3}\"",
                xml_escape(&name),
                o.latency_ms as f64 / 1000.0
            ));
            match (o.status, &o.error) {
                (Some(_), _) if o.succeeded() => xml.push_str("/>\n"),
                (Some(status), _) => xml.push_str(&format!(
                    ">\n    <failure message=\"answered {status}\" type=\"status\"/>\n  </testcase>\n"
                )),
                (None, error) => xml.push_str(&format!(
                    ">\n    <error message=\"{}\" type=\"{}\"/>\n  </testcase>\n",
                    xml_escape(error.as_deref().unwrap_or("no answer")),
                    if o.sent { "no answer" } else { "not sent" }
                )),
            }
        }
        for id in unsent {
            xml.push_str(&format!(
                "  <testcase classname=\"hookscope.replay\" name=\"#{id}\" time=\"0\">\n    <skipped message=\"not sent: the replay stopped\"/>\n  </testcase>\n"
            ));
        }
        xml.push_str("</testsuite>\n");
        xml
    }
}

fn case_name(id: i64, event_type: Option<&str>) -> String {
    match event_type {
        Some(t) => format!("#{id} {t}"),
        None => format!("#{id}"),
    }
}

fn xml_escape(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => " ".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// Sends `ids` to the handler as `request` says, storing each attempt on its delivery, until
/// done or stopped; then the summary. The store is read through its own connection at
/// `store_path`.
pub async fn run(
    file: &ConfigFile,
    store_path: &Path,
    writer: &StoreWriter,
    ids: &[i64],
    request: &ReplayRequest,
    progress: Arc<Progress>,
) -> Result<Summary, AppError> {
    request.check()?;
    let reader = Reader::open(store_path)?;
    let settings = Settings::resolve(file, &Overrides::default())?;
    let client = resend::client_for(
        request.timeout,
        Tls::insecure_if(request.insecure),
        request.self_signed_hint,
    )?;
    let limit = Arc::new(tokio::sync::Semaphore::new(request.concurrency));
    let outcomes = Arc::new(Lock::new(Vec::with_capacity(ids.len())));
    let mut tasks = tokio::task::JoinSet::new();
    let started = tokio::time::Instant::now();
    let mut first_received: Option<i64> = None;
    // As every sentence and report says the target: a password in it masked.
    let shown_url = crate::domain::delivery::masked_url(&request.url);
    for (n, &id) in ids.iter().enumerate() {
        if progress.stopping() {
            break;
        }
        let stored = match reader.get(id) {
            Ok(Some(stored)) => stored,
            // Deleted since it was selected: counted as not sent.
            Ok(None) => {
                finish(
                    &progress,
                    &outcomes,
                    unsent(id, None, "deleted before it was sent"),
                );
                continue;
            }
            // The store cannot be read: stop, keeping what is in flight.
            Err(e) => {
                progress.stop(format!("the store could not be read: {e}"));
                break;
            }
        };
        let offset = pace_offset(request.pace, n, &stored, &mut first_received);
        // `check` bounds the rate and the speed, so this is a real duration.
        let due = started + Duration::try_from_secs_f64(offset).unwrap_or(Duration::MAX / 4);
        if !wait_until(due, &progress).await {
            break;
        }
        let event_type = stored.event_type.clone();
        let prepared = match resend::build(file, &settings, &stored, &request.one(id)) {
            Ok(prepared) => prepared,
            // This delivery cannot be sent (no secret or scheme to re-sign it with): counted
            // as not sent; when none could be, the run is refused below.
            Err(e) => {
                finish(&progress, &outcomes, refused(id, event_type, e));
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&limit).acquire_owned().await else {
            break;
        };
        // A stop while waiting for a free slot: nothing new is sent.
        if progress.stopping() {
            break;
        }
        progress.sent.fetch_add(1, Ordering::SeqCst);
        let (client, writer) = (client.clone(), writer.clone());
        let (progress, outcomes, url) = (
            Arc::clone(&progress),
            Arc::clone(&outcomes),
            shown_url.clone(),
        );
        tasks.spawn(async move {
            let outcome = send_one(&client, &writer, &prepared, id, event_type).await;
            stop_if_nobody_answers(&progress, &outcome, &url);
            finish(&progress, &outcomes, outcome);
            drop(permit);
        });
    }
    while tasks.join_next().await.is_some() {}
    let outcomes = std::mem::take(&mut *outcomes.lock());
    let stopped = progress.why_stopped.lock().clone();
    if stopped.is_none()
        && let Some(refused) = refused_whole(&outcomes)
    {
        return Err(refused);
    }
    Ok(Summary {
        url: shown_url,
        selected: ids.len(),
        outcomes,
        stopped,
        elapsed: started.elapsed(),
    })
}

/// How long after the start delivery `n` (`stored`) is due, at `pace`; `first_received` keeps
/// the first delivery's receive time, which a replay at its original speed counts from.
fn pace_offset(
    pace: Pace,
    n: usize,
    stored: &crate::store::StoredDelivery,
    first_received: &mut Option<i64>,
) -> f64 {
    match pace {
        Pace::Asap => 0.0,
        Pace::Rate(rate) => n as f64 / rate,
        Pace::Speed(speed) => {
            let received = stored.delivery.received_at_ms;
            let first = *first_received.get_or_insert(received);
            (received - first).max(0) as f64 / 1000.0 / speed
        }
    }
}

/// Sends one prepared delivery and records the attempt; the handler's answer stands even when
/// the store cannot keep it (the outcome says so).
async fn send_one(
    client: &crate::net::client::Client,
    writer: &StoreWriter,
    prepared: &resend::PreparedResend,
    id: i64,
    event_type: Option<String>,
) -> Outcome {
    let attempt = match resend::send_unrecorded(client, prepared, AttemptKind::Replay).await {
        Ok(attempt) => attempt,
        Err(e) => return unsent(id, event_type, &e.to_string()),
    };
    let mut outcome = Outcome {
        delivery_id: id,
        event_type,
        attempt_id: 0,
        sent: true,
        status: attempt.status,
        error: attempt.error.clone(),
        refused: None,
        latency_ms: attempt.latency_ms,
        sent_at_ms: attempt.sent_at_ms,
    };
    match writer.attempt(attempt).await {
        Ok(stored) => outcome.attempt_id = stored,
        Err(e) => {
            let kept = outcome
                .error
                .take()
                .map(|e| format!("{e}; "))
                .unwrap_or_default();
            outcome.error = Some(format!("{kept}not stored: {e}"));
        }
    }
    outcome
}

/// A delivery sent and unanswered while nothing has answered yet: the handler is not there, so
/// the replay stops rather than fail every delivery one by one.
fn stop_if_nobody_answers(progress: &Progress, outcome: &Outcome, url: &str) {
    if outcome.sent && outcome.status.is_none() && progress.answered.load(Ordering::SeqCst) == 0 {
        progress.stop(format!("nothing answered at {url}: {}", outcome.result()));
    }
}

/// Nothing could be sent, each for the same reason (no secret, no scheme): the run is refused
/// with that one reason.
fn refused_whole(outcomes: &[Outcome]) -> Option<AppError> {
    let first = outcomes.first()?;
    let error = first.error.clone()?;
    let all_alike = outcomes
        .iter()
        .all(|o| !o.sent && o.error == first.error && o.refused == first.refused);
    all_alike.then(|| match &first.refused {
        Some(refused) => AppError::Refused(refused.clone()),
        None => AppError::Usage(error),
    })
}

/// Sleeps until `due`, waking every 50 ms to see whether the replay was stopped; `false` when
/// it was.
async fn wait_until(due: tokio::time::Instant, progress: &Progress) -> bool {
    loop {
        if progress.stopping() {
            return false;
        }
        let now = tokio::time::Instant::now();
        if now >= due {
            return true;
        }
        tokio::time::sleep((due - now).min(Duration::from_millis(50))).await;
    }
}

fn unsent(id: i64, event_type: Option<String>, why: &str) -> Outcome {
    Outcome {
        delivery_id: id,
        event_type,
        attempt_id: 0,
        sent: false,
        status: None,
        error: Some(why.to_string()),
        refused: None,
        latency_ms: 0,
        sent_at_ms: now_ms(),
    }
}

/// A delivery not sent because its request could not be built (`why`): typed when refused.
fn refused(id: i64, event_type: Option<String>, why: AppError) -> Outcome {
    let mut outcome = unsent(id, event_type, &why.to_string());
    if let AppError::Refused(refused) = why {
        outcome.refused = Some(refused);
    }
    outcome
}

fn finish(progress: &Progress, outcomes: &Lock<Vec<Outcome>>, outcome: Outcome) {
    if outcome.status.is_some() {
        progress.answered.fetch_add(1, Ordering::SeqCst);
        progress
            .latency_sum_ms
            .fetch_add(outcome.latency_ms, Ordering::SeqCst);
    }
    if outcome.succeeded() {
        progress.succeeded.fetch_add(1, Ordering::SeqCst);
    }
    outcomes.lock().push(outcome);
    progress.done.fetch_add(1, Ordering::SeqCst);
}

/// The ids of `selected` a stopped replay did not send.
pub fn unsent_ids(selected: &[i64], summary: &Summary) -> Vec<i64> {
    let sent: std::collections::HashSet<i64> =
        summary.outcomes.iter().map(|o| o.delivery_id).collect();
    selected
        .iter()
        .copied()
        .filter(|id| !sent.contains(id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_ids_and_refusals_are_read_as_written() {
        assert_eq!(parse_rate("20/s").expect("rate"), 20.0);
        assert_eq!(parse_rate("300/m").expect("rate"), 5.0);
        assert_eq!(parse_rate("3600/h").expect("rate"), 1.0);
        assert_eq!(parse_rate("7").expect("rate"), 7.0);
        assert!(parse_rate("20/fortnight").is_err());
        assert!(parse_rate("fast").is_err());
        let mut request = ReplayRequest::to("http://127.0.0.1:9/");
        request.pace = Pace::Rate(parse_rate("0/s").expect("rate"));
        let refusal = request.check().expect_err("zero rate").to_string();
        assert!(refusal.contains("a rate of 0 sends nothing"), "{refusal}");
        request.pace = Pace::Asap;
        request.url = "ftp://example.com/".into();
        assert!(request.check().is_err());
    }

    fn outcome(id: i64, status: Option<u16>, latency_ms: u64) -> Outcome {
        Outcome {
            delivery_id: id,
            event_type: Some("invoice.paid".into()),
            attempt_id: id * 10,
            sent: true,
            status,
            error: status.is_none().then(|| "connection refused".to_string()),
            refused: None,
            latency_ms,
            sent_at_ms: 0,
        }
    }

    #[test]
    fn a_summary_counts_by_status_takes_percentiles_and_writes_junit() {
        let summary = Summary {
            url: "http://h/x?a=<1>".into(),
            selected: 5,
            outcomes: vec![
                outcome(3, Some(200), 10),
                outcome(1, Some(200), 30),
                outcome(2, Some(500), 20),
                outcome(4, None, 5000),
            ],
            stopped: Some("stopped by the user".into()),
            elapsed: Duration::from_secs(2),
        };
        assert_eq!(
            summary.by_status().into_iter().collect::<Vec<_>>(),
            vec![
                ("200".to_string(), 2),
                ("500".to_string(), 1),
                ("no answer".to_string(), 1)
            ]
        );
        assert_eq!(summary.latency_ms(0.5), 20, "only answered attempts count");
        assert_eq!(summary.latency_ms(0.99), 30);
        assert!(!summary.all_succeeded());
        let failed: Vec<i64> = summary.failures().iter().map(|o| o.delivery_id).collect();
        assert_eq!(failed, vec![2, 4]);
        assert_eq!(unsent_ids(&[1, 2, 3, 4, 5], &summary), vec![5]);
        let xml = summary.junit(&[5]);
        assert!(
            xml.contains("tests=\"5\" failures=\"1\" errors=\"1\" skipped=\"1\""),
            "{xml}"
        );
        assert!(xml.contains("name=\"#2 invoice.paid\""), "{xml}");
        assert!(xml.contains("<failure message=\"answered 500\""), "{xml}");
        assert!(
            xml.contains("<error message=\"connection refused\""),
            "{xml}"
        );
        assert!(
            xml.contains("hookscope replay to http://h/x?a=&lt;1&gt;"),
            "{xml}"
        );
        let sentence = summary.sentence();
        assert!(sentence.starts_with("replayed 4 of 5 to http://h/x?a=<1> in 2.0 s (2.0/s): 2 × 200, 1 × 500, 1 × no answer; latency p50 20 ms, p99 30 ms; stopped: stopped by the user"), "{sentence}");
    }
}
