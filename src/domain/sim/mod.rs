//! The provider simulator's pure parts: job lifecycles and their events, retry schedules,
//! chaos with a seeded generator, idempotency keys, and the scorecard. The server and the
//! delivery loop are `net::simulator` and `app::simulate`; nothing here does I/O or reads a
//! clock (times are passed in, in milliseconds).

use crate::domain::attempt::percentile;
use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub mod world;

/// A job lifecycle: states in order with how long each lasts (simulated), the terminal
/// outcomes with their weights, and how its events look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lifecycle {
    /// The preset's name.
    pub name: String,
    /// Each non-terminal state and how long the job stays in it, in simulated seconds.
    pub steps: Vec<(String, u64)>,
    /// Terminal states and their weights.
    pub outcomes: Vec<(String, u32)>,
    /// Where the event id lives and how the body is laid out.
    pub shape: Shape,
    /// Full payloads carry a result; thin ones a `result_url`.
    pub full: bool,
}

/// The three event shapes of docs/webhooks.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// `{"id":"evt_…","type":"job.succeeded","created_at":…,"data":{"id":…,"status":…}}`.
    IdInBody,
    /// `{"type":"document.completed","timestamp":"…","data":{"job_id":…,"status":…}}`; the
    /// event id only in a header.
    TypeTimestamp,
    /// `{"job_id":…,"status":…,"result":{…}}`; the event id only in a header.
    HeaderOnly,
}

/// The lifecycle presets, modelled on docs/webhooks.md.
pub fn lifecycles() -> Vec<Lifecycle> {
    let s = |v: &[(&str, u64)]| v.iter().map(|(n, d)| (n.to_string(), *d)).collect();
    let o = |v: &[(&str, u32)]| v.iter().map(|(n, w)| (n.to_string(), *w)).collect();
    vec![
        Lifecycle {
            name: "review".into(),
            steps: s(&[
                ("queued", 30),
                ("processing", 240),
                ("needs_review", 3 * 3600),
            ]),
            outcomes: o(&[("completed", 85), ("failed", 15)]),
            shape: Shape::TypeTimestamp,
            full: false,
        },
        Lifecycle {
            name: "document".into(),
            steps: s(&[("processing", 90)]),
            outcomes: o(&[("completed", 90), ("failed", 10)]),
            shape: Shape::HeaderOnly,
            full: true,
        },
        Lifecycle {
            name: "render".into(),
            steps: s(&[("queued", 10), ("running", 300)]),
            outcomes: o(&[("succeeded", 80), ("failed", 10), ("canceled", 10)]),
            shape: Shape::IdInBody,
            full: false,
        },
    ]
}

/// A lifecycle preset by name.
pub fn lifecycle(name: &str) -> Option<Lifecycle> {
    lifecycles().into_iter().find(|l| l.name == name)
}

/// The retry schedule presets: the waits between attempts, in simulated time.
pub fn schedules() -> Vec<(&'static str, Vec<Duration>)> {
    let m = |mins: u64| Duration::from_secs(mins * 60);
    vec![
        // A media API: 12 attempts over about 16 hours.
        (
            "media",
            [1, 2, 5, 10, 20, 40, 60, 120, 180, 240, 300]
                .map(m)
                .to_vec(),
        ),
        // An OCR batch API: exponential over about 24 hours.
        (
            "exponential",
            (0..11)
                .map(|n| Duration::from_secs(45 * (1 << n)))
                .collect(),
        ),
        // Standard Webhooks' example: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
        (
            "standard-webhooks",
            vec![
                Duration::from_secs(5),
                m(5),
                m(30),
                m(120),
                m(300),
                m(600),
                m(600),
            ],
        ),
    ]
}

/// A schedule preset by name.
pub fn schedule(name: &str) -> Option<Vec<Duration>> {
    schedules()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| s)
}

/// A small, seeded generator (SplitMix64): the same seed gives the same chaos.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// 16 hex digits, for ids.
    pub fn hex(&mut self) -> String {
        format!("{:016x}", self.next_u64())
    }
}

/// What can go wrong on purpose, each a probability (per event) or a bound.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Chaos {
    /// Send an attempt twice at once.
    pub duplicate_rate: f64,
    /// Deliver an event after the job's next one.
    pub reorder_rate: f64,
    /// Never deliver an event (only the job API knows).
    pub drop_rate: f64,
    /// Retry an old event once more after a newer one was acknowledged.
    pub late_retry_rate: f64,
    /// Delay each first attempt by up to this many simulated seconds.
    pub max_delay_secs: u64,
}

/// Picks a terminal outcome by weight.
pub fn outcome(lifecycle: &Lifecycle, rng: &mut Rng) -> String {
    let total: u32 = lifecycle
        .outcomes
        .iter()
        .map(|(_, w)| *w)
        .sum::<u32>()
        .max(1);
    let mut pick = (rng.unit() * f64::from(total)) as u32;
    for (state, weight) in &lifecycle.outcomes {
        if pick < *weight {
            return state.clone();
        }
        pick -= weight;
    }
    lifecycle
        .outcomes
        .last()
        .map(|(s, _)| s.clone())
        .unwrap_or_else(|| "completed".into())
}

/// One event of a job: its id, state and when it happens (simulated ms after the job's start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedEvent {
    /// The event id (kept on every retry).
    pub event_id: String,
    /// The job.
    pub job_id: String,
    /// The state it announces.
    pub state: String,
    /// Simulated ms after the job was created.
    pub at_ms: u64,
    /// Whether the state is terminal.
    pub terminal: bool,
}

/// A job's events: one per state, the terminal one chosen by weight.
pub fn plan_events(lifecycle: &Lifecycle, job_id: &str, rng: &mut Rng) -> Vec<PlannedEvent> {
    let mut at = 0u64;
    let mut out = Vec::new();
    for (state, secs) in &lifecycle.steps {
        out.push(PlannedEvent {
            event_id: format!("evt_{}", rng.hex()),
            job_id: job_id.to_string(),
            state: state.clone(),
            at_ms: at,
            terminal: false,
        });
        at += secs * 1000;
    }
    out.push(PlannedEvent {
        event_id: format!("evt_{}", rng.hex()),
        job_id: job_id.to_string(),
        state: outcome(lifecycle, rng),
        at_ms: at,
        terminal: true,
    });
    out
}

/// An event's body in its lifecycle's shape, pretty-printed as many providers send it (so a
/// handler that re-serialises before verifying is caught). `now_ms` is the real time.
pub fn event_body(lifecycle: &Lifecycle, event: &PlannedEvent, api: &str, now_ms: i64) -> Vec<u8> {
    let result_url = format!("{api}/results/{}", event.job_id);
    let mut data = json!({"job_id": event.job_id, "status": event.state});
    if event.terminal {
        if lifecycle.full {
            data["result"] =
                json!({"pages": 3, "text": "Lorem ipsum dolor sit amet", "confidence": 0.97});
        } else {
            data["result_url"] = json!(result_url);
        }
    }
    let value = match lifecycle.shape {
        Shape::IdInBody => json!({
            "id": event.event_id,
            "type": format!("job.{}", event.state),
            "created_at": now_ms.div_euclid(1000),
            "data": {"id": event.job_id, "status": event.state,
                     "result_url": if event.terminal && !lifecycle.full { Value::from(result_url) } else { Value::Null }},
        }),
        Shape::TypeTimestamp => json!({
            "type": format!("document.{}", event.state),
            "timestamp": crate::domain::fmt::rfc3339_ms(now_ms),
            "data": data,
        }),
        Shape::HeaderOnly => {
            let mut v = json!({"job_id": event.job_id, "status": event.state});
            if event.terminal && lifecycle.full {
                v["result"] = data["result"].clone();
            }
            v
        }
    };
    serde_json::to_vec_pretty(&value).unwrap_or_default()
}

/// An event body laid over its contract's example: the example's members, with the
/// simulator's own (the event id, type, time, job and state) written over them, so a handler
/// gets a realistic body that still tells the job's story. `None` when the body has no type
/// or the contract no schema for it.
pub fn on_contract_example(
    contract: &crate::domain::contract::Contract,
    body: &[u8],
) -> Option<Vec<u8>> {
    let ours: Value = serde_json::from_slice(body).ok()?;
    let event_type = ours.get("type")?.as_str()?;
    let (mut example, _) = contract.example(event_type)?;
    overlay(&mut example, ours);
    serde_json::to_vec_pretty(&example).ok()
}

/// Writes `over` onto `base`: objects member by member, anything else replaced.
fn overlay(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(slot) => overlay(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

/// The event types a lifecycle's webhooks carry (`job.queued`…; none for a shape whose body has
/// no type).
pub fn event_types(lifecycle: &Lifecycle) -> Vec<String> {
    let prefix = match lifecycle.shape {
        Shape::IdInBody => "job",
        Shape::TypeTimestamp => "document",
        Shape::HeaderOnly => return Vec::new(),
    };
    lifecycle
        .steps
        .iter()
        .map(|(s, _)| s)
        .chain(lifecycle.outcomes.iter().map(|(s, _)| s))
        .map(|state| format!("{prefix}.{state}"))
        .collect()
}

/// How the job API answers idempotency-key mistakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum IdempotencyStyle {
    /// The IETF draft: 400 missing, 422 reused with another body, 409 in flight.
    #[default]
    Draft,
    /// One real API: 400 with `error.code` `idempotency_key_reuse` / `idempotency_key_in_progress`.
    Infro,
}

/// What the job API does with a submit, given its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submit {
    /// A new request: create the job (and `finish` the key with the response).
    New,
    /// A repeat of a finished request with the same body: replay its response.
    Replay(u16, Value),
    /// Refused: the status and the error body.
    Refuse(u16, Value),
}

/// Idempotency keys as the job API keeps them, for a time to live.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    style: IdempotencyStyle,
    ttl_ms: i64,
    entries: HashMap<String, KeyEntry>,
}

#[derive(Debug, Clone)]
struct KeyEntry {
    body_hash: String,
    at_ms: i64,
    response: Option<(u16, Value)>,
}

impl Keys {
    /// Keys kept for `ttl_ms` (simulated), answered in `style`.
    pub fn new(style: IdempotencyStyle, ttl_ms: i64) -> Keys {
        Keys {
            style,
            ttl_ms,
            entries: HashMap::new(),
        }
    }

    /// Decides a submit: `key` as sent (none, or empty), the body's hash, whether a key is
    /// required, and the (simulated) time.
    pub fn begin(
        &mut self,
        key: Option<&str>,
        body_hash: &str,
        required: bool,
        now_ms: i64,
    ) -> Submit {
        let key = key.map(str::trim).filter(|k| !k.is_empty());
        let Some(key) = key else {
            if required {
                return self.refuse(
                    400,
                    "idempotency_key_missing",
                    "An Idempotency-Key header is required on this endpoint.",
                );
            }
            return Submit::New;
        };
        if key.len() > 255 {
            return self.refuse(
                400,
                "idempotency_key_too_long",
                "Idempotency-Key is longer than 255 characters.",
            );
        }
        let ttl = self.ttl_ms;
        self.entries.retain(|_, e| now_ms - e.at_ms < ttl);
        match self.entries.get(key) {
            None => {
                self.entries.insert(
                    key.to_string(),
                    KeyEntry {
                        body_hash: body_hash.to_string(),
                        at_ms: now_ms,
                        response: None,
                    },
                );
                Submit::New
            }
            Some(e) if e.body_hash != body_hash => self.refuse(
                422,
                "idempotency_key_reuse",
                "This Idempotency-Key was used with another request body.",
            ),
            Some(KeyEntry { response: None, .. }) => self.refuse(
                409,
                "idempotency_key_in_progress",
                "A request with this Idempotency-Key is still being processed; retry later.",
            ),
            Some(KeyEntry {
                response: Some((status, body)),
                ..
            }) => Submit::Replay(*status, body.clone()),
        }
    }

    /// Records the response of the request that began with `key`.
    pub fn finish(&mut self, key: Option<&str>, status: u16, body: Value) {
        if let Some(e) = key.and_then(|k| self.entries.get_mut(k.trim())) {
            e.response = Some((status, body));
        }
    }

    fn refuse(&self, draft_status: u16, code: &str, message: &str) -> Submit {
        match self.style {
            IdempotencyStyle::Draft => Submit::Refuse(
                draft_status,
                json!({"error": {"code": code, "message": message}}),
            ),
            IdempotencyStyle::Infro => Submit::Refuse(
                400,
                json!({"error": {"type": "invalid_request_error", "code": code, "message": message}}),
            ),
        }
    }
}

/// A scorecard line's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The handler (or client) behaved as a provider expects.
    Pass,
    /// It did not; the sentence says what to change.
    Fail,
    /// Nothing was sent that this line could judge.
    Skipped,
    /// Something was sent, but its answer does not tell (no answer inside the timeout).
    Unknown,
}

impl Verdict {
    /// The word the JSON uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Skipped => "skipped",
            Verdict::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A scorecard line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// What is checked.
    pub name: String,
    /// The verdict.
    pub status: Verdict,
    /// One sentence.
    pub detail: String,
}

impl Check {
    /// A check of the scorecard.
    pub fn new(name: &str, status: Verdict, detail: String) -> Check {
        Check {
            name: name.into(),
            status,
            detail,
        }
    }
}

/// What the provider observed of the handler and the client, for the scorecard.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Events meant to be delivered, and how many were acknowledged with 2xx.
    pub events: usize,
    /// Of those, acknowledged.
    pub acknowledged: usize,
    /// Events that ran out of attempts, by id.
    pub exhausted: Vec<String>,
    /// Every attempt's latency in ms and whether it timed out.
    pub latencies: Vec<(u64, bool)>,
    /// The timeout applied, in ms.
    pub timeout_ms: u64,
    /// The tampered and stale probes.
    pub probes: Vec<ProbeAnswer>,
    /// When a hookscope receiver answered: whether it verified a correctly signed delivery of
    /// the run (its verdicts on the probes mean something only then).
    pub receiver_verifies: Option<bool>,
    /// Statuses of duplicates, replays and late retries of events already acknowledged.
    pub repeats: Vec<Option<u16>>,
    /// Client submits: (body hash, key, created a job, real ms).
    pub submits: Vec<(String, Option<String>, bool, i64)>,
    /// Client polls of a job: (job id, real ms, refused until: real ms, if it was told to wait).
    pub polls: Vec<(String, i64, Option<i64>)>,
    /// Dropped events: (job id, real ms when it would have been sent).
    pub dropped: Vec<(String, i64)>,
}

/// How close in time the same request under another key counts as a retry, in ms.
const RETRY_WINDOW_MS: i64 = 60_000;

/// Whether a scorecard passed: no line failed (`unknown` and `skipped` do not fail it).
pub fn passed(checks: &[Check]) -> bool {
    !checks.iter().any(|c| c.status == Verdict::Fail)
}

/// The scorecard: what the provider can observe decides each line.
pub fn scorecard(o: &Observed) -> Vec<Check> {
    vec![
        acknowledged(o),
        answer_time(o),
        refuses_forgeries(o),
        duplicates_acknowledged(o),
        idempotent_submits(o),
        polling_backoff(o),
        reconciled_dropped(o),
    ]
}

/// Every event acknowledged.
fn acknowledged(o: &Observed) -> Check {
    let name = "acknowledged";
    if o.events == 0 {
        return Check::new(name, Verdict::Skipped, "No event was delivered.".into());
    }
    if o.acknowledged == o.events {
        return Check::new(
            name,
            Verdict::Pass,
            format!("All {} events were acknowledged with 2xx.", o.events),
        );
    }
    let some: Vec<&str> = o.exhausted.iter().take(3).map(String::as_str).collect();
    Check::new(
        name,
        Verdict::Fail,
        format!(
            "{} of {} events were never acknowledged with 2xx (e.g. {}): a sender gives up and the event is lost; answer 2xx to every valid delivery, duplicates included.",
            o.events - o.acknowledged,
            o.events,
            if some.is_empty() {
                "still retrying".to_string()
            } else {
                some.join(", ")
            }
        ),
    )
}

/// Every attempt answered inside the timeout.
fn answer_time(o: &Observed) -> Check {
    let name = "answer_time";
    let mut latencies: Vec<u64> = o.latencies.iter().map(|(l, _)| *l).collect();
    latencies.sort_unstable();
    let timeouts = o.latencies.iter().filter(|(_, t)| *t).count();
    let slowest = latencies.last().copied().unwrap_or(0);
    let p99 = percentile(&latencies, 0.99);
    if latencies.is_empty() {
        Check::new(name, Verdict::Skipped, "No attempt was sent.".into())
    } else if timeouts == 0 {
        Check::new(
            name,
            Verdict::Pass,
            format!(
                "Every attempt was answered inside the {} ms timeout: slowest {slowest} ms, p99 {p99} ms.",
                o.timeout_ms
            ),
        )
    } else {
        Check::new(
            name,
            Verdict::Fail,
            format!(
                "{timeouts} of {} attempts were not answered inside the {} ms timeout (slowest {slowest} ms, p99 {p99} ms): each one is retried while the first is still running; record the delivery, answer 2xx, and do the work on a queue.",
                latencies.len(),
                o.timeout_ms
            ),
        )
    }
}

/// A tampered or stale probe and what came of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeAnswer {
    /// What was sent ("a delivery with a tampered signature").
    pub what: String,
    /// The status answered, or none inside the timeout.
    pub status: Option<u16>,
    /// When a hookscope receiver answered it: what it recorded.
    pub recorded: Option<Recorded>,
}

/// What a hookscope receiver recorded of a probe. An inspector answers every delivery by design
/// and keeps its verdict in its store, so that verdict, not the status, says whether the forgery
/// was caught.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The stored delivery's id.
    pub id: i64,
    /// The check that judges this probe, as the list shows it (`sig fail`, `ts skipped`).
    pub verdict: String,
    /// How that check judged it.
    pub caught: Caught,
}

/// How a hookscope receiver's check judged a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caught {
    /// It failed the probe: the forgery was caught.
    Yes,
    /// It passed the probe.
    No,
    /// It could not judge (no secret for the path, say).
    NotJudged,
}

/// The tampered and the stale delivery refused with 4xx, or, by a hookscope receiver (which
/// answers everything), recorded as failing their check. One that got no answer inside the
/// timeout, or that the receiver could not judge, was not accepted, but was not refused either:
/// that is unknown, not a failure.
fn refuses_forgeries(o: &Observed) -> Check {
    let name = "refuses_forgeries";
    let caught = |p: &ProbeAnswer| match &p.recorded {
        Some(r) => Some(r.caught),
        None => p.status.map(|s| {
            if (400..500).contains(&s) {
                Caught::Yes
            } else {
                Caught::No
            }
        }),
    };
    let said = |p: &ProbeAnswer| match (&p.recorded, p.status) {
        (Some(r), _) => format!("{} was recorded as {} (#{})", p.what, r.verdict, r.id),
        (None, Some(s)) => format!("{} got {s}", p.what),
        (None, None) => p.what.clone(),
    };
    let with = |c: Option<Caught>| -> Vec<String> {
        o.probes
            .iter()
            .filter(|p| caught(p) == c)
            .map(said)
            .collect()
    };
    let accepted = with(Some(Caught::No));
    let unanswered: Vec<&str> = o
        .probes
        .iter()
        .filter(|p| caught(p).is_none())
        .map(|p| p.what.as_str())
        .collect();
    let mut not_judged = with(Some(Caught::NotJudged));
    // A receiver that fails every delivery (the wrong secret) also fails the tampered one.
    let recorded = o.probes.iter().any(|p| p.recorded.is_some());
    if recorded && o.receiver_verifies != Some(true) {
        not_judged.push(
            "it did not verify the run's correctly signed deliveries (no endpoint with the simulator's scheme and secret for the path)".into(),
        );
    }
    if o.probes.is_empty() {
        Check::new(
            name,
            Verdict::Skipped,
            "No tampered or stale delivery was sent (no event was delivered).".into(),
        )
    } else if !accepted.is_empty() {
        Check::new(
            name,
            Verdict::Fail,
            format!(
                "Not refused with 4xx: {}: verify the signature over the raw bytes and the timestamp's age before anything else.",
                accepted.join("; ")
            ),
        )
    } else if !unanswered.is_empty() {
        Check::new(
            name,
            Verdict::Unknown,
            format!(
                "No answer inside the {} ms timeout to the {}, so it is unknown whether the handler refuses forgeries; answer a forgery with 4xx at once, before any slow work.",
                o.timeout_ms,
                unanswered.join(" and the ")
            ),
        )
    } else if !not_judged.is_empty() {
        Check::new(
            name,
            Verdict::Skipped,
            format!(
                "The target is a hookscope receiver, which answers every delivery and records its verdict, but it could not judge: {}; give its endpoint the simulator's scheme and secret.",
                not_judged.join("; ")
            ),
        )
    } else if recorded {
        let recorded: Vec<String> = o.probes.iter().map(said).collect();
        Check::new(
            name,
            Verdict::Pass,
            format!(
                "The target is a hookscope receiver, which answers every delivery by design and records its verdict: {}.",
                recorded.join("; ")
            ),
        )
    } else {
        let what: Vec<&str> = o.probes.iter().map(|p| p.what.as_str()).collect();
        Check::new(
            name,
            Verdict::Pass,
            format!("Refused with 4xx: {}.", what.join(" and ")),
        )
    }
}

/// Duplicates, replays and late retries answered 2xx.
fn duplicates_acknowledged(o: &Observed) -> Check {
    let name = "duplicates_acknowledged";
    let refused = o
        .repeats
        .iter()
        .filter(|s| !s.is_some_and(|s| (200..300).contains(&s)))
        .count();
    if o.repeats.is_empty() {
        Check::new(
            name,
            Verdict::Skipped,
            "No duplicate, replay or late retry was sent.".into(),
        )
    } else if refused == 0 {
        Check::new(
            name,
            Verdict::Pass,
            format!(
                "All {} duplicates, replays and late retries were answered 2xx.",
                o.repeats.len()
            ),
        )
    } else {
        Check::new(
            name,
            Verdict::Fail,
            format!(
                "{refused} of {} duplicates, replays or late retries were not answered 2xx: a sender keeps retrying them; answer 2xx to an event seen before and skip the work (deduplicate on the event id, not the job id).",
                o.repeats.len()
            ),
        )
    }
}

/// Idempotency keys reused: a job created for the same body under another key within a minute
/// of an earlier one is a retry that came back with a fresh key.
fn idempotent_submits(o: &Observed) -> Check {
    let name = "idempotent_submits";
    let mut created: Vec<&(String, Option<String>, bool, i64)> =
        o.submits.iter().filter(|s| s.2).collect();
    created.sort_by_key(|s| s.3);
    let doubled = created
        .iter()
        .enumerate()
        .filter(|(i, later)| {
            created[..*i].iter().any(|earlier| {
                earlier.0 == later.0
                    && earlier.1 != later.1
                    && later.3 - earlier.3 <= RETRY_WINDOW_MS
            })
        })
        .count();
    if o.submits.is_empty() {
        Check::new(
            name,
            Verdict::Skipped,
            "No client submitted a job through the API.".into(),
        )
    } else if doubled == 0 {
        Check::new(
            name,
            Verdict::Pass,
            format!(
                "{} submits created {} jobs; no retry came back with a fresh Idempotency-Key.",
                o.submits.len(),
                created.len()
            ),
        )
    } else {
        Check::new(
            name,
            Verdict::Fail,
            format!(
                "{doubled} extra jobs were created by a retry of the same request under a fresh Idempotency-Key (the same body again within a minute): derive the key from your own record, so a retry replays the first answer."
            ),
        )
    }
}

/// Polling: Retry-After honoured, backed off.
fn polling_backoff(o: &Observed) -> Check {
    let name = "polling_backoff";
    if o.polls.is_empty() {
        return Check::new(
            name,
            Verdict::Skipped,
            "No client polled the job API.".into(),
        );
    }
    let mut per_job: HashMap<&str, Vec<(i64, Option<i64>)>> = HashMap::new();
    for (job, at, until) in &o.polls {
        per_job.entry(job.as_str()).or_default().push((*at, *until));
    }
    let mut ignored = 0;
    let mut min_gap = i64::MAX;
    for polls in per_job.values_mut() {
        polls.sort_by_key(|(at, _)| *at);
        for pair in polls.windows(2) {
            min_gap = min_gap.min(pair[1].0 - pair[0].0);
            if let Some(until) = pair[0].1
                && pair[1].0 < until
            {
                ignored += 1;
            }
        }
    }
    let span = o.polls.iter().map(|p| p.1).max().unwrap_or(0)
        - o.polls.iter().map(|p| p.1).min().unwrap_or(0);
    let per_minute = o.polls.len() as f64
        / per_job.len().max(1) as f64
        / (span.max(1) as f64 / 60_000.0).max(1.0 / 60.0);
    let gap = if min_gap == i64::MAX {
        "no second poll".to_string()
    } else {
        format!("minimum gap {min_gap} ms")
    };
    if ignored == 0 && min_gap >= 500 {
        Check::new(
            name,
            Verdict::Pass,
            format!(
                "{} polls, {per_minute:.0} per job per minute, {gap}; Retry-After was honoured.",
                o.polls.len()
            ),
        )
    } else {
        Check::new(
            name,
            Verdict::Fail,
            format!(
                "{} polls, {per_minute:.0} per job per minute, {gap}; {ignored} arrived inside a Retry-After window: start near 2 s, ×1.5, cap 30 s, add jitter, and wait as long as Retry-After says.",
                o.polls.len()
            ),
        )
    }
}

/// Dropped events reconciled: the client asked the job API about the job afterwards.
fn reconciled_dropped(o: &Observed) -> Check {
    let name = "reconciled_dropped";
    let reconciled = o
        .dropped
        .iter()
        .filter(|(job, at)| o.polls.iter().any(|(j, t, _)| j == job && t > at))
        .count();
    if o.dropped.is_empty() {
        Check::new(name, Verdict::Skipped, "No event was dropped.".into())
    } else if reconciled == o.dropped.len() {
        Check::new(
            name,
            Verdict::Pass,
            format!(
                "For all {} dropped events, the client asked the job API about the job afterwards.",
                o.dropped.len()
            ),
        )
    } else {
        Check::new(
            name,
            Verdict::Fail,
            format!(
                "For {} of {} dropped events, nobody asked the job API about the job afterwards: a reconciler must poll jobs that went quiet.",
                o.dropped.len() - reconciled,
                o.dropped.len()
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_chaos() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<bool> = (0..100).map(|_| a.chance(0.3)).collect();
        let ys: Vec<bool> = (0..100).map(|_| b.chance(0.3)).collect();
        assert_eq!(xs, ys);
        let hits = xs.iter().filter(|x| **x).count();
        assert!((15..=45).contains(&hits), "{hits}");
    }

    #[test]
    fn idempotency_draft_and_infro_answer_every_path() {
        for style in [IdempotencyStyle::Draft, IdempotencyStyle::Infro] {
            let mut keys = Keys::new(style, 24 * 3600 * 1000);
            let code = |s: &Submit| match s {
                Submit::Refuse(status, body) => (
                    *status,
                    body["error"]["code"].as_str().unwrap_or("").to_string(),
                ),
                Submit::New => (0, "new".into()),
                Submit::Replay(status, _) => (*status, "replay".into()),
            };
            let (missing, reuse, in_flight) = match style {
                IdempotencyStyle::Draft => (400, 422, 409),
                IdempotencyStyle::Infro => (400, 400, 400),
            };
            assert_eq!(
                code(&keys.begin(None, "h1", true, 0)),
                (missing, "idempotency_key_missing".into())
            );
            assert_eq!(keys.begin(None, "h1", false, 0), Submit::New);
            assert_eq!(keys.begin(Some("k1"), "h1", true, 0), Submit::New);
            assert_eq!(
                code(&keys.begin(Some("k1"), "h1", true, 1)),
                (in_flight, "idempotency_key_in_progress".into())
            );
            keys.finish(Some("k1"), 202, json!({"job_id": "job_1"}));
            assert_eq!(
                keys.begin(Some("k1"), "h1", true, 2),
                Submit::Replay(202, json!({"job_id": "job_1"}))
            );
            assert_eq!(
                code(&keys.begin(Some("k1"), "h2", true, 3)),
                (reuse, "idempotency_key_reuse".into())
            );
            // After the time to live, the key is new again.
            assert_eq!(
                keys.begin(Some("k1"), "h2", true, 24 * 3600 * 1000 + 5),
                Submit::New
            );
            let refused = keys.begin(Some("k1"), "h3", true, 24 * 3600 * 1000 + 6);
            let Submit::Refuse(_, body) = refused else {
                panic!("a key reused with another body is refused: {refused:?}");
            };
            if style == IdempotencyStyle::Infro {
                assert_eq!(body["error"]["type"], "invalid_request_error");
            }
        }
    }

    #[test]
    fn every_lifecycle_moves_forward_to_one_terminal_state() {
        for lifecycle in lifecycles() {
            let events = plan_events(&lifecycle, "job_1", &mut Rng::new(1));
            assert_eq!(events.len(), lifecycle.steps.len() + 1);
            assert!(events.windows(2).all(|w| w[0].at_ms < w[1].at_ms));
            assert_eq!(events.iter().filter(|e| e.terminal).count(), 1);
            assert!(events.last().is_some_and(|e| e.terminal));
        }
        let sw = schedule("standard-webhooks").expect("schedule");
        assert_eq!(sw.len(), 7, "8 attempts: immediately, then 7 waits");
        let media = schedule("media").expect("media");
        let hours = media.iter().map(Duration::as_secs).sum::<u64>() as f64 / 3600.0;
        assert_eq!(media.len(), 11, "12 attempts");
        assert!((15.0..17.5).contains(&hours), "{hours}");
        let exp = schedule("exponential").expect("exponential");
        let hours = exp.iter().map(Duration::as_secs).sum::<u64>() as f64 / 3600.0;
        assert!((23.0..27.0).contains(&hours), "{hours}");
    }

    fn probe(what: &str, status: Option<u16>) -> ProbeAnswer {
        ProbeAnswer {
            what: what.into(),
            status,
            recorded: None,
        }
    }

    /// A hookscope receiver answers 200 to everything: its stored verdict decides, and one it
    /// could not judge is skipped with the reason, never a failure of the handler.
    #[test]
    fn a_hookscope_receiver_is_judged_by_what_it_recorded() {
        let recorded = |verdict: &str, caught: Caught| {
            let mut p = probe("a delivery with a tampered signature", Some(200));
            p.recorded = Some(Recorded {
                id: 7,
                verdict: verdict.into(),
                caught,
            });
            p
        };
        let o = |p: ProbeAnswer| Observed {
            probes: vec![p],
            receiver_verifies: Some(true),
            ..Observed::default()
        };
        let caught = refuses_forgeries(&o(recorded("sig fail", Caught::Yes)));
        assert_eq!(caught.status, Verdict::Pass, "{}", caught.detail);
        assert!(
            caught.detail.contains("recorded as sig fail (#7)"),
            "{}",
            caught.detail
        );
        let skipped = refuses_forgeries(&o(recorded("sig skipped", Caught::NotJudged)));
        assert_eq!(skipped.status, Verdict::Skipped, "{}", skipped.detail);
        let missed = refuses_forgeries(&o(recorded("sig pass", Caught::No)));
        assert_eq!(missed.status, Verdict::Fail, "{}", missed.detail);
        // A receiver with the wrong secret fails everything: its `sig fail` proves nothing.
        let mut wrong_secret = o(recorded("sig fail", Caught::Yes));
        wrong_secret.receiver_verifies = Some(false);
        let unproven = refuses_forgeries(&wrong_secret);
        assert_eq!(unproven.status, Verdict::Skipped, "{}", unproven.detail);
        assert!(
            unproven.detail.contains("did not verify"),
            "{}",
            unproven.detail
        );
        // Without a record, a 200 is an acceptance.
        let handler =
            refuses_forgeries(&o(probe("a delivery with a tampered signature", Some(200))));
        assert_eq!(handler.status, Verdict::Fail);
    }

    #[test]
    fn a_forgery_left_unanswered_is_unknown_not_a_failure_to_refuse() {
        let forgeries = |answers: [Option<u16>; 2]| {
            let o = Observed {
                timeout_ms: 1000,
                probes: vec![
                    probe("tampered body", answers[0]),
                    probe("stale timestamp", answers[1]),
                ],
                ..Observed::default()
            };
            refuses_forgeries(&o)
        };
        assert_eq!(forgeries([Some(401), Some(400)]).status, Verdict::Pass);
        let unknown = forgeries([None, Some(401)]);
        assert_eq!(unknown.status, Verdict::Unknown);
        assert!(
            unknown.detail.starts_with("No answer inside the 1000 ms timeout to the tampered body, so it is unknown whether the handler refuses forgeries"),
            "{}",
            unknown.detail
        );
        // An acceptance is a failure, whatever the other one got.
        let accepted = forgeries([None, Some(200)]);
        assert_eq!(accepted.status, Verdict::Fail);
        assert!(
            accepted.detail.contains("stale timestamp got 200"),
            "{}",
            accepted.detail
        );
        assert!(!accepted.detail.contains("tampered"), "{}", accepted.detail);
        assert_eq!(
            serde_json::to_value(&unknown).expect("json")["status"],
            "unknown"
        );
    }

    #[test]
    fn the_scorecard_fails_exactly_what_the_provider_saw_go_wrong() {
        let good = Observed {
            events: 3,
            acknowledged: 3,
            latencies: vec![(5, false), (8, false)],
            timeout_ms: 10_000,
            probes: vec![probe("tampered", Some(401)), probe("stale", Some(400))],
            repeats: vec![Some(200)],
            ..Observed::default()
        };
        assert!(
            scorecard(&good).iter().all(|c| c.status != Verdict::Fail),
            "{:?}",
            scorecard(&good)
        );
        let mut slow = good.clone();
        slow.latencies.push((10_000, true));
        let failed: Vec<String> = scorecard(&slow)
            .into_iter()
            .filter(|c| c.status == Verdict::Fail)
            .map(|c| c.name)
            .collect();
        assert_eq!(failed, ["answer_time"]);
        let mut fresh_keys = good.clone();
        fresh_keys.submits = vec![
            ("b1".into(), Some("u1".into()), true, 0),
            ("b1".into(), Some("u2".into()), true, 900),
        ];
        let failed: Vec<String> = scorecard(&fresh_keys)
            .into_iter()
            .filter(|c| c.status == Verdict::Fail)
            .map(|c| c.name)
            .collect();
        assert_eq!(failed, ["idempotent_submits"]);
        // The same body as a new request an hour later is a new job, not a retry.
        let mut later = good.clone();
        later.submits = vec![
            ("b1".into(), Some("u1".into()), true, 0),
            ("b1".into(), Some("u2".into()), true, 3_600_000),
        ];
        assert!(scorecard(&later).iter().all(|c| c.status != Verdict::Fail));
    }
}
