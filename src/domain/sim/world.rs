//! The simulated provider's state: its jobs and their events, what each delivery did, the
//! idempotency keys and what the client did. Times are real Unix milliseconds passed in;
//! simulated durations are divided by the time scale. The job API (`net::simulator`) and the
//! delivery loop (`app::simulate`) both work on one `World` behind a lock.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{
    Chaos, IdempotencyStyle, Keys, Lifecycle, Observed, PlannedEvent, ProbeAnswer, Recorded, Rng,
    Submit, event_body, plan_events,
};

/// How the simulated provider behaves.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The lifecycle of every job.
    pub lifecycle: Lifecycle,
    /// Simulated seconds per real second.
    pub time_scale: f64,
    /// The waits between attempts (simulated).
    pub schedule: Vec<Duration>,
    /// What goes wrong on purpose.
    pub chaos: Chaos,
    /// How idempotency-key mistakes are answered.
    pub style: IdempotencyStyle,
    /// Whether a submit without a key is refused.
    pub key_required: bool,
    /// How long keys are kept (simulated).
    pub key_ttl: Duration,
    /// How long an output stays downloadable after the job ends (simulated).
    pub output_ttl: Duration,
    /// The shortest gap between two polls of one job before `429` (real), when rate limited.
    pub poll_gap: Option<Duration>,
    /// The job API's base URL (for `result_url`).
    pub api_url: String,
    /// A contract whose examples the event bodies are built on (`simulate --contract`).
    pub contract: Option<std::sync::Arc<crate::domain::contract::Contract>>,
    /// How old the stale probe's timestamp is, in seconds (`Scheme::beyond_tolerance_secs`);
    /// `None` when the scheme's libraries check no timestamp age, so none is sent.
    pub stale_secs: Option<i64>,
}

/// One job of the simulated provider.
#[derive(Debug, Clone)]
pub struct SimJob {
    /// The id.
    pub job_id: String,
    /// When it was created (real ms).
    pub created_ms: i64,
    /// Where its webhooks go.
    pub callback: String,
    /// Its events, in lifecycle order.
    pub events: Vec<SimEvent>,
}

/// One event and its deliveries.
#[derive(Debug, Clone)]
pub struct SimEvent {
    /// The plan: id, state, offset.
    pub planned: PlannedEvent,
    /// When the state happens (real ms).
    pub due_ms: i64,
    /// Emitted (its body built).
    pub body: Option<Arc<Vec<u8>>>,
    /// Never delivered, on purpose.
    pub dropped: bool,
    /// Held back to arrive after the job's next event: not sent until that event's first
    /// attempt was answered (or it was dropped).
    pub reordered: bool,
    /// Acknowledged with 2xx.
    pub acked: bool,
    /// Attempts made so far.
    pub attempts: u32,
    /// Out of attempts.
    pub exhausted: bool,
    /// When the next attempt is due (real ms).
    pub next_ms: Option<i64>,
    /// An attempt is on the wire.
    pub in_flight: bool,
}

/// Why an attempt is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkKind {
    /// An attempt of the event (first or a retry).
    Attempt,
    /// A second copy sent at the same time (chaos: duplicate).
    Copy,
    /// An old event sent again after a newer one was acknowledged (chaos: late retry).
    LateRetry,
    /// Every signature forged, one bit of its MAC flipped (once per run).
    Tampered,
    /// Correctly signed, with a timestamp `Settings::stale_secs` old (once per run).
    Stale,
}

/// One request to send.
#[derive(Debug, Clone)]
pub struct Work {
    /// The job.
    pub job_id: String,
    /// The event.
    pub event_id: String,
    /// Which attempt (from 1).
    pub attempt: u32,
    /// The body.
    pub body: Arc<Vec<u8>>,
    /// Where.
    pub url: String,
    /// Why.
    pub kind: WorkKind,
}

/// What a probe's event id ends with: a probe is an event of its own, so a handler that
/// deduplicates before it checks the timestamp cannot answer it as a duplicate of the real one,
/// whichever arrives first.
const PROBE_SUFFIXES: [&str; 2] = ["_forged", "_stale"];

impl Work {
    /// A tampered or stale probe made from this first attempt: its own event id (the real one
    /// and a suffix) in the scheme's header and the body.
    fn probe(&self, kind: WorkKind) -> Work {
        let suffix = PROBE_SUFFIXES[usize::from(kind == WorkKind::Stale)];
        let event_id = format!("{}{suffix}", self.event_id);
        Work {
            body: Arc::new(crate::domain::scheme::with_event_id(
                &self.body,
                &self.event_id,
                &event_id,
            )),
            event_id,
            kind,
            ..self.clone()
        }
    }

    /// The id of the planned event this work delivers (a probe's stands for its event's).
    fn planned_id(&self) -> &str {
        PROBE_SUFFIXES
            .iter()
            .find_map(|s| self.event_id.strip_suffix(s))
            .filter(|_| matches!(self.kind, WorkKind::Tampered | WorkKind::Stale))
            .unwrap_or(&self.event_id)
    }
}

/// The provider's whole state.
pub struct World {
    /// How it behaves.
    pub settings: Settings,
    /// The chaos generator.
    pub rng: Rng,
    /// Idempotency keys.
    pub keys: Keys,
    /// The jobs, in creation order.
    pub jobs: Vec<SimJob>,
    index: HashMap<String, usize>,
    /// What the handler and the client did.
    pub observed: Observed,
    /// The last poll of each job (real ms) and until when it was told to wait.
    last_poll: HashMap<String, (i64, Option<i64>)>,
    probes_sent: bool,
    late: Vec<Work>,
    /// Attempts made in all.
    pub attempts: usize,
    /// The latest attempts, newest last, for a live view.
    pub recent: std::collections::VecDeque<Sent>,
}

/// One attempt as a live view lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// When it was answered (real ms).
    pub at_ms: i64,
    /// The job.
    pub job_id: String,
    /// The state its event announces.
    pub state: String,
    /// Which attempt, from 1.
    pub attempt: u32,
    /// Why it was sent.
    pub kind: WorkKind,
    /// The handler's status.
    pub status: Option<u16>,
    /// How long it took.
    pub latency_ms: u64,
}

/// How many attempts a live view keeps.
pub const RECENT: usize = 200;

impl World {
    /// A provider with no jobs yet.
    pub fn new(settings: Settings, seed: u64) -> World {
        let key_ttl = settings.key_ttl.as_millis() as i64;
        let style = settings.style;
        World {
            settings,
            rng: Rng::new(seed),
            keys: Keys::new(style, key_ttl),
            jobs: Vec::new(),
            index: HashMap::new(),
            observed: Observed::default(),
            last_poll: HashMap::new(),
            probes_sent: false,
            late: Vec::new(),
            attempts: 0,
            recent: std::collections::VecDeque::new(),
        }
    }

    /// A simulated duration in real milliseconds.
    pub fn real_ms(&self, simulated: Duration) -> i64 {
        (simulated.as_secs_f64() * 1000.0 / self.settings.time_scale.max(1e-6)) as i64
    }

    /// Creates a job whose webhooks go to `callback`; returns its id.
    pub fn create_job(&mut self, callback: &str, now_ms: i64) -> String {
        let job_id = format!("job_{}", &self.rng.hex()[..12]);
        let planned = plan_events(&self.settings.lifecycle, &job_id, &mut self.rng);
        let events = planned
            .into_iter()
            .map(|p| SimEvent {
                due_ms: now_ms + self.real_ms(Duration::from_millis(p.at_ms)),
                planned: p,
                body: None,
                dropped: false,
                reordered: false,
                acked: false,
                attempts: 0,
                exhausted: false,
                next_ms: None,
                in_flight: false,
            })
            .collect();
        self.index.insert(job_id.clone(), self.jobs.len());
        self.jobs.push(SimJob {
            job_id: job_id.clone(),
            created_ms: now_ms,
            callback: callback.to_string(),
            events,
        });
        job_id
    }

    /// A job by id.
    pub fn job(&self, job_id: &str) -> Option<&SimJob> {
        self.index.get(job_id).map(|i| &self.jobs[*i])
    }

    /// A job's state at `now_ms`: its last event that has happened.
    pub fn state_at<'a>(&self, job: &'a SimJob, now_ms: i64) -> Option<&'a SimEvent> {
        job.events.iter().rev().find(|e| e.due_ms <= now_ms)
    }

    /// The job resource as `GET /v1/jobs/{id}` answers it.
    pub fn job_json(&self, job_id: &str, now_ms: i64) -> Option<Value> {
        let job = self.job(job_id)?;
        let state = self.state_at(job, now_ms);
        let status = state
            .map(|e| e.planned.state.clone())
            .unwrap_or_else(|| "queued".into());
        let mut value = json!({
            "job_id": job.job_id,
            "status": status,
            "created_at": crate::domain::fmt::rfc3339_ms(job.created_ms),
        });
        if let Some(terminal) = state.filter(|e| e.planned.terminal) {
            let expires = terminal.due_ms + self.real_ms(self.settings.output_ttl);
            value["expires_at"] = json!(crate::domain::fmt::rfc3339_ms(expires));
            value["result_url"] = if now_ms < expires {
                json!(format!("{}/results/{}", self.settings.api_url, job.job_id))
            } else {
                Value::Null
            };
            value["output"] = if now_ms < expires {
                json!({"pages": 3})
            } else {
                Value::Null
            };
        }
        Some(value)
    }

    /// The output, while it has not expired.
    pub fn result_json(&self, job_id: &str, now_ms: i64) -> Option<Value> {
        let job = self.job(job_id)?;
        let terminal = self.state_at(job, now_ms).filter(|e| e.planned.terminal)?;
        let expires = terminal.due_ms + self.real_ms(self.settings.output_ttl);
        (now_ms < expires).then(|| json!({"job_id": job_id, "status": terminal.planned.state, "pages": 3, "text": "Lorem ipsum dolor sit amet"}))
    }

    /// `GET /v1/jobs?status=…&limit=…&after=…`: jobs in the given states, by creation order.
    pub fn list_json(
        &self,
        statuses: &[String],
        limit: usize,
        after: Option<&str>,
        now_ms: i64,
    ) -> Value {
        let start = after
            .and_then(|a| self.index.get(a))
            .map(|i| i + 1)
            .unwrap_or(0);
        let matching: Vec<Value> = self.jobs[start.min(self.jobs.len())..]
            .iter()
            .filter_map(|j| self.job_json(&j.job_id, now_ms))
            .filter(|v| {
                statuses.is_empty()
                    || statuses
                        .iter()
                        .any(|s| v["status"].as_str() == Some(s.as_str()))
            })
            .take(limit.max(1) + 1)
            .collect();
        let has_more = matching.len() > limit.max(1);
        let page: Vec<Value> = matching.into_iter().take(limit.max(1)).collect();
        let next = page
            .last()
            .and_then(|v| v["job_id"].as_str().map(str::to_string));
        json!({"data": page, "has_more": has_more, "next_cursor": if has_more { next } else { None }})
    }

    /// A poll of a job by the client: `Err(seconds)` asks it to wait (rate limit).
    pub fn poll(&mut self, job_id: &str, now_ms: i64) -> Result<(), u64> {
        let previous = self.last_poll.get(job_id).copied();
        let refused = match (self.settings.poll_gap, previous) {
            (Some(gap), Some((last, _))) => now_ms - last < gap.as_millis() as i64,
            _ => false,
        };
        let until = refused.then(|| {
            let gap = self.settings.poll_gap.unwrap_or_default();
            now_ms + gap.as_millis().max(1000) as i64
        });
        self.observed
            .polls
            .push((job_id.to_string(), now_ms, until));
        self.last_poll.insert(job_id.to_string(), (now_ms, until));
        match until {
            Some(u) => Err(((u - now_ms) as u64).div_ceil(1000)),
            None => Ok(()),
        }
    }

    /// A submit's idempotency decision (simulated time for the key's life).
    pub fn begin_submit(&mut self, key: Option<&str>, body_hash: &str, now_ms: i64) -> Submit {
        let simulated = (now_ms as f64 * self.settings.time_scale) as i64;
        self.keys
            .begin(key, body_hash, self.settings.key_required, simulated)
    }

    /// Records a submit's outcome (at `now_ms`) and its response for the key.
    pub fn finish_submit(
        &mut self,
        key: Option<&str>,
        body_hash: &str,
        status: u16,
        body: Value,
        now_ms: i64,
    ) {
        let created = (200..300).contains(&status) && body.get("job_id").is_some();
        self.keys.finish(key, status, body);
        self.observed.submits.push((
            body_hash.to_string(),
            key.map(str::to_string),
            created,
            now_ms,
        ));
    }

    /// The attempts due at `now_ms`: new events are emitted (dropped, delayed or held back as
    /// the chaos says), and every due attempt is marked in flight.
    pub fn due_work(&mut self, now_ms: i64) -> Vec<Work> {
        let mut work = Vec::new();
        let chaos = self.settings.chaos;
        let api = self.settings.api_url.clone();
        for j in 0..self.jobs.len() {
            for e in 0..self.jobs[j].events.len() {
                if self.jobs[j].events[e].body.is_none() && self.jobs[j].events[e].due_ms <= now_ms
                {
                    self.emit(j, e, now_ms, &api, chaos);
                }
                let event = &self.jobs[j].events[e];
                let due = !event.acked
                    && !event.exhausted
                    && !event.dropped
                    && !event.in_flight
                    && event.next_ms.is_some_and(|t| t <= now_ms);
                if !due {
                    continue;
                }
                let (job_id, url) = (self.jobs[j].job_id.clone(), self.jobs[j].callback.clone());
                let event = &mut self.jobs[j].events[e];
                event.in_flight = true;
                event.attempts += 1;
                let item = Work {
                    job_id,
                    event_id: event.planned.event_id.clone(),
                    attempt: event.attempts,
                    body: event.body.clone().unwrap_or_default(),
                    url,
                    kind: WorkKind::Attempt,
                };
                if item.attempt == 1 && self.rng.chance(chaos.duplicate_rate) {
                    work.push(Work {
                        kind: WorkKind::Copy,
                        ..item.clone()
                    });
                }
                if item.attempt == 1 && !self.probes_sent {
                    self.probes_sent = true;
                    let stale = self.settings.stale_secs.map(|_| WorkKind::Stale);
                    for kind in std::iter::once(WorkKind::Tampered).chain(stale) {
                        work.push(item.probe(kind));
                    }
                }
                work.push(item);
            }
        }
        self.attempts += work.len();
        work
    }

    fn emit(&mut self, j: usize, e: usize, now_ms: i64, api: &str, chaos: Chaos) {
        let lifecycle = self.settings.lifecycle.clone();
        let delay = if chaos.max_delay_secs > 0 {
            let secs = self.rng.unit() * chaos.max_delay_secs as f64;
            self.real_ms(Duration::from_secs_f64(secs))
        } else {
            0
        };
        let dropped = self.rng.chance(chaos.drop_rate);
        let has_next = e + 1 < self.jobs[j].events.len();
        let reordered = has_next && !dropped && self.rng.chance(chaos.reorder_rate);
        let job_id = self.jobs[j].job_id.clone();
        let event = &mut self.jobs[j].events[e];
        let body = event_body(&lifecycle, &event.planned, api, now_ms);
        // On the contract's example of its type, when the contract has one.
        let body = match &self.settings.contract {
            Some(contract) => super::on_contract_example(contract, &body).unwrap_or(body),
            None => body,
        };
        event.body = Some(Arc::new(body));
        if dropped {
            event.dropped = true;
            self.observed.dropped.push((job_id, now_ms));
            // An earlier event held behind this one goes now.
            self.release_held(j, e, now_ms);
            return;
        }
        self.observed.events += 1;
        event.reordered = reordered;
        // A held event waits for the next one's first answer (see `release_held`).
        event.next_ms = (!reordered).then_some(now_ms + delay);
    }

    /// Sends the event held behind event `e` of job `j`, if any.
    fn release_held(&mut self, j: usize, e: usize, now_ms: i64) {
        if e == 0 {
            return;
        }
        let held = &mut self.jobs[j].events[e - 1];
        if held.reordered && held.next_ms.is_none() && held.attempts == 0 && !held.dropped {
            held.next_ms = Some(now_ms);
        }
    }

    /// Records an attempt's outcome: a 2xx acknowledges the event; otherwise the next attempt
    /// is scheduled, or the event is out of attempts.
    /// What a hookscope receiver recorded (`recorded`) of a correctly signed delivery (whether
    /// it verifies the simulator's signatures, from the first one), and a probe's answer; true
    /// for a probe, which is nothing more.
    fn observed_receiver(
        &mut self,
        work: &Work,
        status: Option<u16>,
        recorded: Option<Recorded>,
    ) -> bool {
        if work.kind == WorkKind::Attempt
            && let Some(r) = &recorded
            && self.observed.receiver_verifies.is_none()
        {
            self.observed.receiver_verifies = Some(r.caught == super::Caught::No);
        }
        let what = match work.kind {
            WorkKind::Tampered => "a delivery with a tampered signature".to_string(),
            WorkKind::Stale => {
                let age = self.settings.stale_secs.unwrap_or(0).unsigned_abs();
                format!(
                    "a correctly signed delivery {} old",
                    crate::domain::fmt::human_duration(age)
                )
            }
            _ => return false,
        };
        self.observed.probes.push(ProbeAnswer {
            what,
            status,
            recorded,
        });
        true
    }

    /// `recorded`: for a delivery answered by a hookscope receiver, what that receiver recorded
    /// of it.
    pub fn done(
        &mut self,
        work: &Work,
        status: Option<u16>,
        latency_ms: u64,
        timed_out: bool,
        now_ms: i64,
        recorded: Option<Recorded>,
    ) {
        let ok = status.is_some_and(|s| (200..300).contains(&s));
        // Where the event is: its job, and its place in the job's lifecycle.
        let at = self.index.get(&work.job_id).and_then(|&j| {
            self.jobs[j]
                .events
                .iter()
                .position(|ev| ev.planned.event_id == work.planned_id())
                .map(|e| (j, e))
        });
        let state = at
            .map(|(j, e)| self.jobs[j].events[e].planned.state.clone())
            .unwrap_or_default();
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(Sent {
            at_ms: now_ms,
            job_id: work.job_id.clone(),
            state,
            attempt: work.attempt,
            kind: work.kind,
            status,
            latency_ms,
        });
        if self.observed_receiver(work, status, recorded) {
            return;
        }
        self.observed.latencies.push((latency_ms, timed_out));
        let Some((j, e)) = at else {
            return;
        };
        if work.kind != WorkKind::Attempt {
            self.observed.repeats.push(status);
            return;
        }
        if work.attempt == 1 {
            self.release_held(j, e, now_ms);
        }
        let schedule_len = self.settings.schedule.len() as u32;
        let gap = self
            .settings
            .schedule
            .get(self.jobs[j].events[e].attempts.saturating_sub(1) as usize)
            .map(|d| self.real_ms(*d));
        let event = &mut self.jobs[j].events[e];
        event.in_flight = false;
        if ok {
            if !event.acked {
                event.acked = true;
                self.observed.acknowledged += 1;
            }
            event.next_ms = None;
            // A late retry of an earlier, acknowledged event of this job.
            if e > 0 && self.rng.chance(self.settings.chaos.late_retry_rate) {
                let old = &self.jobs[j].events[e - 1];
                if old.acked {
                    self.late.push(Work {
                        job_id: work.job_id.clone(),
                        event_id: old.planned.event_id.clone(),
                        attempt: old.attempts + 1,
                        body: old.body.clone().unwrap_or_default(),
                        url: work.url.clone(),
                        kind: WorkKind::LateRetry,
                    });
                }
            }
        } else if event.attempts > schedule_len {
            event.exhausted = true;
            event.next_ms = None;
            self.observed.exhausted.push(event.planned.event_id.clone());
        } else {
            event.next_ms = Some(now_ms + gap.unwrap_or(0));
        }
    }

    /// Late retries waiting to be sent.
    pub fn take_late(&mut self) -> Vec<Work> {
        let late = std::mem::take(&mut self.late);
        self.attempts += late.len();
        late
    }

    /// Whether every job has ended and every event is acknowledged, out of attempts or dropped.
    pub fn finished(&self, now_ms: i64) -> bool {
        !self.jobs.is_empty()
            && self.late.is_empty()
            && self.jobs.iter().all(|j| {
                j.events.iter().all(|e| {
                    e.due_ms <= now_ms
                        && e.body.is_some()
                        && !e.in_flight
                        && (e.acked || e.exhausted || e.dropped)
                })
            })
    }

    /// When something is next due (real ms), to sleep until then.
    pub fn next_due(&self) -> Option<i64> {
        self.jobs
            .iter()
            .flat_map(|j| j.events.iter())
            .filter_map(|e| {
                if e.body.is_none() {
                    Some(e.due_ms)
                } else if !e.in_flight {
                    e.next_ms
                } else {
                    None
                }
            })
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe is an event of its own (header and body), which still names its job's event.
    #[test]
    fn a_probe_has_its_own_event_id_in_the_body_and_stands_for_its_event() {
        let attempt = Work {
            job_id: "job_1".into(),
            event_id: "evt_1a".into(),
            attempt: 1,
            body: Arc::new(br#"{"id":"evt_1a","job_id":"job_1"}"#.to_vec()),
            url: "http://127.0.0.1:1/hooks".into(),
            kind: WorkKind::Attempt,
        };
        for (kind, id) in [
            (WorkKind::Tampered, "evt_1a_forged"),
            (WorkKind::Stale, "evt_1a_stale"),
        ] {
            let probe = attempt.probe(kind);
            assert_eq!(probe.event_id, id);
            assert_eq!(
                probe.body.as_slice(),
                format!(r#"{{"id":"{id}","job_id":"job_1"}}"#).as_bytes()
            );
            assert_eq!(probe.planned_id(), "evt_1a");
        }
        assert_eq!(attempt.planned_id(), "evt_1a");
    }
}
