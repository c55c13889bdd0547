//! Job timelines as plain data: the deliveries of one async job, ordered by the events' own
//! creation time and by arrival, with what went wrong flagged in a sentence each.
//!
//! Nothing here draws or queries: [`analyze`] takes the job's events and the clock and returns a
//! [`JobTimeline`], which the CLI prints and the window draws.

use serde::{Deserialize, Serialize};

use crate::domain::checks::{DuplicateStatus, SignatureStatus, TimestampStatus};
use crate::domain::job::StateKind;
use crate::domain::reconcile::Poll;

use crate::domain::fmt::human_duration;
use crate::domain::fmt::rfc3339_ms;

/// One delivery of a job, as the timeline needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobDelivery {
    /// The delivery id.
    pub delivery_id: i64,
    /// The event id (retries share it).
    pub event_id: Option<String>,
    /// The event type.
    pub event_type: Option<String>,
    /// The state the event reports.
    pub state: Option<String>,
    /// When the sender created the event, Unix milliseconds.
    pub created_at_ms: Option<i64>,
    /// When hookscope received it, Unix milliseconds.
    pub received_at_ms: i64,
    /// The signature verdict (`pass`, `fail`, `skipped`).
    pub signature: SignatureStatus,
    /// The timestamp verdict.
    pub timestamp: TimestampStatus,
    /// The duplicate verdict (`first`, `duplicate`, `skipped`).
    pub duplicate: DuplicateStatus,
}

/// What a flag is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    /// An event arrived after a later-created one.
    OutOfOrder,
    /// A non-terminal state arrived after a terminal one.
    Regression,
    /// Two different terminal states.
    ConflictingTerminal,
    /// One event delivered more than once.
    DuplicateDelivery,
    /// No terminal state after the stuck threshold.
    Stuck,
    /// Several distinct events: deduplicating on the job id would drop some.
    DedupeByJobId,
    /// The job API says terminal, and no terminal webhook arrived.
    MissedTerminalEvent,
    /// A webhook says one terminal state and the job API another.
    StateMismatch,
    /// The job API knows the job, and no webhook for it ever arrived.
    NeverNotified,
    /// The result URL answers 404 after the output's `expires_at`.
    OutputExpired,
    /// The job API could not be asked.
    Unreachable,
    /// A delivery is stamped earlier than one that reached the store before it: this machine's
    /// clock moved back between them (or it was imported). Spans across it are not drawn
    /// backwards.
    ClockSkew,
}

impl FlagKind {
    /// The flags that mean a webhook story and the job API disagree: `reconcile` exits 1 on
    /// any of them.
    pub fn is_disagreement(self) -> bool {
        matches!(
            self,
            FlagKind::MissedTerminalEvent | FlagKind::StateMismatch | FlagKind::NeverNotified
        )
    }
}

/// How much a flag matters: a problem to fix, or a hint about the integration's design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something went wrong with this job's deliveries.
    Problem,
    /// Advice that holds for any job with several events (shown apart, never as a badge).
    Hint,
}

impl FlagKind {
    /// Whether this kind is a problem or a hint.
    pub fn severity(self) -> Severity {
        match self {
            FlagKind::DedupeByJobId => Severity::Hint,
            _ => Severity::Problem,
        }
    }
}

/// A flag on a timeline, with its sentence and the deliveries it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flag {
    /// What it is about.
    pub kind: FlagKind,
    /// A problem or a hint (`kind.severity()`, written out for scripts).
    pub severity: Severity,
    /// One sentence a developer can act on.
    pub detail: String,
    /// The deliveries concerned.
    pub delivery_ids: Vec<i64>,
}

/// One job's life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobTimeline {
    /// The job id.
    pub job_id: String,
    /// The state the job is in, judged by event time (the last terminal state if any).
    pub current_state: Option<String>,
    /// Whether a terminal state was seen.
    pub terminal: bool,
    /// First delivery received, Unix milliseconds.
    pub first_seen_ms: i64,
    /// Last delivery received, Unix milliseconds.
    pub last_seen_ms: i64,
    /// Distinct events (deliveries of one event id count once).
    pub events: usize,
    /// All deliveries, ordered by the event's creation time (then arrival).
    pub by_event_time: Vec<JobDelivery>,
    /// Delivery ids in arrival order.
    pub arrival_order: Vec<i64>,
    /// What went wrong.
    pub flags: Vec<Flag>,
    /// The state the job API last reported, when it was asked and answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_state: Option<String>,
    /// Every poll of the job API about this job, oldest first (the *job resource* lane).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub polls: Vec<Poll>,
    /// What the provider simulator sent about this job, oldest first (the *sent* lane).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<SentAttempt>,
}

/// One webhook attempt the simulator sent about a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentAttempt {
    /// When it was sent, Unix milliseconds.
    pub at_ms: i64,
    /// The handler's status, when it answered.
    pub status: Option<u16>,
    /// How long it took.
    pub latency_ms: u64,
}

fn label(d: &JobDelivery) -> String {
    let name = d
        .state
        .clone()
        .or_else(|| d.event_type.clone())
        .unwrap_or_else(|| "event".into());
    format!("{name} (#{})", d.delivery_id)
}

fn clock(ms: i64) -> String {
    let text = rfc3339_ms(ms);
    text.get(11..19).map(str::to_string).unwrap_or(text)
}

impl JobTimeline {
    /// The flags that are problems, in order.
    pub fn problems(&self) -> impl Iterator<Item = &Flag> {
        self.flags
            .iter()
            .filter(|f| f.severity == Severity::Problem)
    }

    /// The flags that are hints, in order.
    pub fn hints(&self) -> impl Iterator<Item = &Flag> {
        self.flags.iter().filter(|f| f.severity == Severity::Hint)
    }

    /// Where a delivery came in arrival order, from 1 (0 when it is not this job's).
    pub fn arrival_rank(&self, delivery_id: i64) -> usize {
        self.arrival_order
            .iter()
            .position(|id| *id == delivery_id)
            .map(|p| p + 1)
            .unwrap_or(0)
    }
}

/// Computes a job's timeline. `deliveries` may come in any order; `polls` are what the job API
/// said about it (any order, possibly none); `now_ms` and `stuck_after_ms` decide whether an
/// unfinished job is stuck.
pub fn analyze(
    job_id: &str,
    mut deliveries: Vec<JobDelivery>,
    polls: &[Poll],
    now_ms: i64,
    stuck_after_ms: i64,
) -> JobTimeline {
    // Arrival order is the store's order (ids are given as deliveries commit), not the wall
    // clock's, which can move back.
    deliveries.sort_by_key(|d| d.delivery_id);
    let mut polls = polls.to_vec();
    polls.sort_by_key(|p| p.id);
    let arrival_order: Vec<i64> = deliveries.iter().map(|d| d.delivery_id).collect();
    let first_seen_ms = deliveries
        .iter()
        .map(|d| d.received_at_ms)
        .min()
        .or(polls.iter().map(|p| p.at_ms).min())
        .unwrap_or(0);
    let last_seen_ms = deliveries
        .iter()
        .map(|d| d.received_at_ms)
        .max()
        .or(polls.iter().map(|p| p.at_ms).max())
        .unwrap_or(0);
    let events = Events::of(&deliveries);
    let state = State::of(&deliveries);
    let answer = polls.iter().rev().find(|p| p.answered());

    let mut flags = Vec::new();
    flags.extend(out_of_order(&events.firsts));
    flags.extend(regressions(&events.firsts));
    flags.extend(conflicting_terminals(&events.firsts));
    flags.extend(duplicate_deliveries(&events.copies));
    flags.extend(clock_skew(&deliveries));
    if answer.is_none_or(|a| !a.terminal()) && !deliveries.is_empty() {
        flags.extend(stuck(
            &state,
            &deliveries,
            answer,
            now_ms - first_seen_ms,
            stuck_after_ms,
        ));
    }
    flags.extend(api_flags(job_id, &state, &deliveries, &polls, answer));
    flags.extend(dedupe_by_job_id(&events));
    let api_state = answer.and_then(|a| a.state.clone());

    JobTimeline {
        job_id: job_id.to_string(),
        current_state: state.current,
        terminal: state.terminal,
        first_seen_ms,
        last_seen_ms,
        events: events.firsts.len(),
        by_event_time: state.by_event_time,
        arrival_order,
        flags,
        api_state,
        polls,
        sent: Vec::new(),
    }
}

/// A state name for comparing outcomes: `succeeded` is `completed`, `cancelled` is `canceled`.
fn outcome(state: &str) -> String {
    match state.to_ascii_lowercase().as_str() {
        "succeeded" => "completed".into(),
        "cancelled" => "canceled".into(),
        other => other.into(),
    }
}

/// What the job API's answers say against the webhooks: a missed terminal event, a mismatch,
/// a job only the API knows, an expired output, or an API that could not be asked.
fn api_flags(
    job_id: &str,
    state: &State,
    deliveries: &[JobDelivery],
    polls: &[Poll],
    answer: Option<&Poll>,
) -> Vec<Flag> {
    let mut flags = Vec::new();
    let last_delivery: Vec<i64> = deliveries
        .last()
        .map(|d| vec![d.delivery_id])
        .unwrap_or_default();
    let flag = |kind: FlagKind, detail: String, ids: Vec<i64>| Flag {
        kind,
        severity: kind.severity(),
        detail,
        delivery_ids: ids,
    };
    if let Some(last) = polls.last()
        && let Some(why) = last.failure()
    {
        flags.push(flag(
            FlagKind::Unreachable,
            format!(
                "The job API could not tell the state of job {job_id} at {}: {why}; hookscope shows the webhooks' story alone until it answers.",
                clock(last.at_ms)
            ),
            last_delivery.clone(),
        ));
    }
    let Some(answer) = answer else {
        return flags;
    };
    let api = answer
        .state
        .clone()
        .unwrap_or_else(|| "an unknown state".into());
    let asked = clock(answer.at_ms);
    if deliveries.is_empty() {
        flags.push(flag(
            FlagKind::NeverNotified,
            format!(
                "The job API knows job {job_id} (it says {api} at {asked}), but no webhook about it ever arrived: the job was created without this endpoint's callback URL, or every delivery was lost before reaching it."
            ),
            Vec::new(),
        ));
    } else if answer.terminal() && !state.terminal {
        let last = state
            .current
            .clone()
            .map(|s| format!("the last one said {s}"))
            .unwrap_or_else(|| "none said a state".into());
        flags.push(flag(
            FlagKind::MissedTerminalEvent,
            format!(
                "The job API says {api} (asked at {asked}), but no terminal webhook arrived ({last}): the terminal event was lost, after exhausted retries or at a misconfigured endpoint; a reconciler acts on the API's answer."
            ),
            last_delivery.clone(),
        ));
    } else if answer.terminal()
        && let Some(webhook) = state.current.as_deref()
        && state.terminal
        && outcome(webhook) != outcome(&api)
    {
        let terminal_ids = deliveries
            .iter()
            .filter(|d| is_terminal(d))
            .map(|d| d.delivery_id)
            .collect();
        flags.push(flag(
            FlagKind::StateMismatch,
            format!(
                "A webhook says {webhook}, and the job API says {api} (asked at {asked}): a terminal state never changes, so one of them is wrong; trust the job resource and report the mismatch to the provider."
            ),
            terminal_ids,
        ));
    }
    if answer.output_status == Some(404)
        && let (Some(url), Some(expires)) = (&answer.result_url, answer.expires_at_ms)
        && expires <= answer.at_ms
    {
        flags.push(flag(
            FlagKind::OutputExpired,
            format!(
                "The result at {url} answers 404: it expired at {} ({} before it was asked at {asked}); fetch outputs as soon as the terminal event arrives, or run the job again.",
                rfc3339_ms(expires),
                human_duration(((answer.at_ms - expires) / 1000).max(0) as u64)
            ),
            last_delivery,
        ));
    }
    flags
}

/// The deliveries grouped into events: the first delivery of each event id, in arrival order
/// (deliveries without an id are events of their own), and every delivery of each id.
struct Events<'a> {
    firsts: Vec<&'a JobDelivery>,
    copies: Vec<(String, Vec<&'a JobDelivery>)>,
}

impl<'a> Events<'a> {
    fn of(deliveries: &'a [JobDelivery]) -> Self {
        let mut firsts: Vec<&JobDelivery> = Vec::new();
        let mut copies: Vec<(String, Vec<&JobDelivery>)> = Vec::new();
        for d in deliveries {
            match &d.event_id {
                Some(id) => match copies.iter_mut().find(|(e, _)| e == id) {
                    Some((_, list)) => list.push(d),
                    None => {
                        copies.push((id.clone(), vec![d]));
                        firsts.push(d);
                    }
                },
                None => firsts.push(d),
            }
        }
        Events { firsts, copies }
    }
}

/// The deliveries in event-time order and the state the job is in: the last terminal state by
/// event time, else the last state reported.
struct State {
    by_event_time: Vec<JobDelivery>,
    current: Option<String>,
    terminal: bool,
}

impl State {
    fn of(deliveries: &[JobDelivery]) -> Self {
        let mut by_event_time = deliveries.to_vec();
        by_event_time.sort_by_key(|d| {
            (
                d.created_at_ms.unwrap_or(d.received_at_ms),
                d.received_at_ms,
                d.delivery_id,
            )
        });
        let last_terminal = by_event_time.iter().rev().find(|d| is_terminal(d));
        let current = last_terminal
            .or_else(|| by_event_time.iter().rev().find(|d| d.state.is_some()))
            .and_then(|d| d.state.clone());
        let terminal = last_terminal.is_some();
        State {
            by_event_time,
            current,
            terminal,
        }
    }
}

fn is_terminal(d: &JobDelivery) -> bool {
    d.state.as_deref().map(StateKind::of) == Some(StateKind::Terminal)
}

/// Out of order: an event arriving after one created later.
fn out_of_order(firsts: &[&JobDelivery]) -> Vec<Flag> {
    let mut flags = Vec::new();
    let mut latest_created: Option<&JobDelivery> = None;
    for d in firsts {
        if let (Some(created), Some(previous)) = (d.created_at_ms, latest_created)
            && let Some(previous_created) = previous.created_at_ms
            && created < previous_created
        {
            flags.push(Flag {
                kind: FlagKind::OutOfOrder,
                severity: FlagKind::OutOfOrder.severity(),
                detail: format!(
                    "{} was created at {} but arrived after {}, created later at {}: order events by their creation time and the job's own state, never by arrival.",
                    label(d),
                    clock(created),
                    label(previous),
                    clock(previous_created)
                ),
                delivery_ids: vec![previous.delivery_id, d.delivery_id],
            });
        }
        if d.created_at_ms.is_some()
            && latest_created.is_none_or(|p| d.created_at_ms > p.created_at_ms)
        {
            latest_created = Some(d);
        }
    }
    flags
}

/// Regression: in arrival order, an ongoing state after a terminal one.
fn regressions(firsts: &[&JobDelivery]) -> Vec<Flag> {
    let mut flags = Vec::new();
    let mut terminal_seen: Option<&JobDelivery> = None;
    for d in firsts {
        let kind = d.state.as_deref().map(StateKind::of);
        match (kind, terminal_seen) {
            (Some(StateKind::Terminal), None) => terminal_seen = Some(d),
            (Some(StateKind::Ongoing), Some(terminal)) => flags.push(Flag {
                kind: FlagKind::Regression,
                severity: FlagKind::Regression.severity(),
                detail: format!(
                    "{} arrived after the terminal {}: a handler that applies events as they arrive moves the job backward; ignore non-terminal states once a job is finished.",
                    label(d),
                    label(terminal)
                ),
                delivery_ids: vec![terminal.delivery_id, d.delivery_id],
            }),
            _ => {}
        }
    }
    flags
}

/// Conflicting terminal states (`succeeded` and `completed` count as one, as do the spellings
/// of `canceled`).
fn conflicting_terminals(firsts: &[&JobDelivery]) -> Option<Flag> {
    let terminals: Vec<&JobDelivery> = firsts.iter().copied().filter(|d| is_terminal(d)).collect();
    let mut distinct: Vec<String> = terminals
        .iter()
        .filter_map(|d| d.state.as_deref().map(|s| s.to_ascii_lowercase()))
        .map(|s| match s.as_str() {
            "succeeded" => "completed".to_string(),
            "cancelled" => "canceled".to_string(),
            _ => s,
        })
        .collect();
    distinct.sort();
    distinct.dedup();
    if distinct.len() < 2 {
        return None;
    }
    let names: Vec<String> = terminals.iter().map(|d| label(d)).collect();
    Some(Flag {
        kind: FlagKind::ConflictingTerminal,
        severity: FlagKind::ConflictingTerminal.severity(),
        detail: format!(
            "The job reached {} terminal states ({}): a terminal state never changes, so the sender is wrong or two jobs share this id; ask the job resource which is true.",
            distinct.len(),
            names.join(", ")
        ),
        delivery_ids: terminals.iter().map(|d| d.delivery_id).collect(),
    })
}

/// Beyond this, an arrival stamped earlier than the one before it is the clock, not two
/// requests committed in the other order.
const SKEW_MS: i64 = 1_000;

/// Deliveries stamped earlier than one that reached the store before them.
fn clock_skew(deliveries: &[JobDelivery]) -> Option<Flag> {
    let mut latest: Option<&JobDelivery> = None;
    let mut worst: Option<(&JobDelivery, &JobDelivery)> = None;
    let mut ids = Vec::new();
    for d in deliveries {
        if let Some(before) = latest
            && before.received_at_ms - d.received_at_ms > SKEW_MS
        {
            ids.push(d.delivery_id);
            if worst.is_none_or(|(b, a)| {
                before.received_at_ms - d.received_at_ms > b.received_at_ms - a.received_at_ms
            }) {
                worst = Some((before, d));
            }
        }
        if latest.is_none_or(|l| d.received_at_ms >= l.received_at_ms) {
            latest = Some(d);
        }
    }
    let (before, after) = worst?;
    Some(Flag {
        kind: FlagKind::ClockSkew,
        severity: FlagKind::ClockSkew.severity(),
        detail: format!(
            "#{} is stamped {} before #{}, which reached the store earlier: this machine's clock moved back between them (or #{} was imported). Arrival order is the store's; spans across it are not drawn backwards.",
            after.delivery_id,
            human_duration(
                ((before.received_at_ms - after.received_at_ms + 500) / 1000).max(0) as u64
            ),
            before.delivery_id,
            after.delivery_id
        ),
        delivery_ids: ids,
    })
}

/// Times made non-decreasing (each at least the one before): how a lane draws a clock that
/// moved back.
pub fn monotone(times: impl IntoIterator<Item = i64>) -> Vec<i64> {
    let mut latest = i64::MIN;
    times
        .into_iter()
        .map(|t| {
            latest = latest.max(t);
            latest
        })
        .collect()
}

/// Duplicate deliveries of one event.
fn duplicate_deliveries(copies: &[(String, Vec<&JobDelivery>)]) -> Vec<Flag> {
    copies
        .iter()
        .filter(|(_, list)| list.len() > 1)
        .map(|(event_id, list)| {
            let (first, last) = (list[0], list[list.len() - 1]);
            let gap = last.received_at_ms - first.received_at_ms;
            Flag {
                kind: FlagKind::DuplicateDelivery,
                severity: FlagKind::DuplicateDelivery.severity(),
                detail: format!(
                    "Event {event_id} was delivered {} times over {} (#{} first, #{} last): retries of one event; process it once and answer 2xx to the rest.",
                    list.len(),
                    human_duration((gap / 1000).max(0) as u64),
                    first.delivery_id,
                    last.delivery_id
                ),
                delivery_ids: list.iter().map(|d| d.delivery_id).collect(),
            }
        })
        .collect()
}

/// Stuck: no terminal state long after the job was first seen (and the job API, when it was
/// asked, does not say it finished either).
fn stuck(
    state: &State,
    deliveries: &[JobDelivery],
    answer: Option<&Poll>,
    age_ms: i64,
    stuck_after_ms: i64,
) -> Option<Flag> {
    if state.terminal || age_ms <= stuck_after_ms {
        return None;
    }
    let current = state
        .current
        .clone()
        .unwrap_or_else(|| "an unknown state".into());
    let review = if state
        .current
        .as_deref()
        .is_some_and(|s| s.eq_ignore_ascii_case("needs_review"))
    {
        " needs_review can legitimately last hours while a person checks a field: keep polling the job resource with backoff rather than resubmitting."
    } else {
        " Ask the job resource (GET /jobs/{id}) whether it finished: a missed event is what a reconciler is for."
    };
    let api = answer
        .and_then(|a| Some((a.state.clone()?, a.at_ms)))
        .map(|(s, at)| {
            format!(
                " The job API says it is still {s} (asked at {}).",
                clock(at)
            )
        })
        .unwrap_or_default();
    Some(Flag {
        kind: FlagKind::Stuck,
        severity: FlagKind::Stuck.severity(),
        detail: format!(
            "No terminal state {} after the job was first seen; it is still {current}.{review}{api}",
            human_duration((age_ms / 1000).max(0) as u64)
        ),
        delivery_ids: deliveries
            .last()
            .map(|d| vec![d.delivery_id])
            .unwrap_or_default(),
    })
}

/// A hint for receivers that deduplicate on the job id.
fn dedupe_by_job_id(events: &Events<'_>) -> Option<Flag> {
    let distinct_ids = events.copies.len();
    (distinct_ids > 1).then(|| Flag {
        kind: FlagKind::DedupeByJobId,
        severity: FlagKind::DedupeByJobId.severity(),
        detail: format!(
            "{distinct_ids} distinct events for this job: a receiver that deduplicates on the job id would keep the first and drop the other {}; deduplicate on the event id.",
            distinct_ids - 1
        ),
        delivery_ids: events.firsts.iter().map(|d| d.delivery_id).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    fn event(
        id: i64,
        event_id: &str,
        state: &str,
        created_min: i64,
        received_min: i64,
    ) -> JobDelivery {
        JobDelivery {
            delivery_id: id,
            event_id: Some(event_id.into()),
            event_type: Some(format!("job.{state}")),
            state: Some(state.into()),
            created_at_ms: Some(created_min * MIN),
            received_at_ms: received_min * MIN,
            signature: SignatureStatus::Pass,
            timestamp: TimestampStatus::Pass,
            duplicate: DuplicateStatus::First,
        }
    }

    /// A timeline from webhooks alone (no poll of the job API).
    fn plain(job: &str, deliveries: Vec<JobDelivery>, now: i64, stuck: i64) -> JobTimeline {
        analyze(job, deliveries, &[], now, stuck)
    }

    fn kinds(timeline: &JobTimeline) -> Vec<FlagKind> {
        timeline.flags.iter().map(|f| f.kind).collect()
    }

    #[test]
    fn an_in_order_lifecycle_has_only_the_dedupe_hint() {
        let t = plain(
            "job_1",
            vec![
                event(1, "e1", "queued", 0, 0),
                event(2, "e2", "processing", 1, 1),
                event(3, "e3", "completed", 2, 2),
            ],
            10 * MIN,
            30 * MIN,
        );
        assert_eq!(kinds(&t), [FlagKind::DedupeByJobId]);
        assert_eq!(t.current_state.as_deref(), Some("completed"));
        assert!(t.terminal);
        assert_eq!(t.events, 3);
    }

    #[test]
    fn a_late_processing_after_completed_is_out_of_order_and_a_regression() {
        let t = plain(
            "job_1",
            vec![
                event(1, "e1", "queued", 0, 0),
                event(2, "e3", "completed", 5, 5),
                event(3, "e2", "processing", 2, 6),
            ],
            10 * MIN,
            30 * MIN,
        );
        assert_eq!(
            kinds(&t),
            [
                FlagKind::OutOfOrder,
                FlagKind::Regression,
                FlagKind::DedupeByJobId
            ]
        );
        // By event time the job is still completed; the order puts processing before it.
        assert_eq!(t.current_state.as_deref(), Some("completed"));
        let order: Vec<i64> = t.by_event_time.iter().map(|d| d.delivery_id).collect();
        assert_eq!(order, [1, 3, 2]);
        assert_eq!(t.arrival_order, [1, 2, 3]);
        assert!(
            t.flags[1]
                .detail
                .contains("processing (#3) arrived after the terminal completed (#2)"),
            "{}",
            t.flags[1].detail
        );
    }

    #[test]
    fn duplicate_retries_say_how_many_and_how_far_apart() {
        let t = plain(
            "job_1",
            vec![
                event(1, "e1", "completed", 0, 0),
                event(2, "e1", "completed", 0, 4),
                event(3, "e1", "completed", 0, 16),
            ],
            20 * MIN,
            30 * MIN,
        );
        assert_eq!(kinds(&t), [FlagKind::DuplicateDelivery]);
        assert!(
            t.flags[0].detail.contains("delivered 3 times over 16 min"),
            "{}",
            t.flags[0].detail
        );
        assert_eq!(t.events, 1);
    }

    #[test]
    fn two_terminal_states_conflict() {
        let t = plain(
            "job_1",
            vec![
                event(1, "e1", "completed", 0, 0),
                event(2, "e2", "failed", 1, 1),
            ],
            5 * MIN,
            30 * MIN,
        );
        assert!(kinds(&t).contains(&FlagKind::ConflictingTerminal));
        // succeeded and completed are the same outcome, not a conflict.
        let same = plain(
            "job_2",
            vec![
                event(1, "e1", "completed", 0, 0),
                event(2, "e2", "succeeded", 1, 1),
            ],
            5 * MIN,
            30 * MIN,
        );
        assert!(!kinds(&same).contains(&FlagKind::ConflictingTerminal));
    }

    #[test]
    fn needs_review_then_completed_is_fine_and_needs_review_alone_gets_the_hours_note() {
        let done = plain(
            "job_1",
            vec![
                event(1, "e1", "needs_review", 0, 0),
                event(2, "e2", "completed", 120, 120),
            ],
            121 * MIN,
            30 * MIN,
        );
        assert_eq!(kinds(&done), [FlagKind::DedupeByJobId]);
        let waiting = plain(
            "job_2",
            vec![event(1, "e1", "needs_review", 0, 0)],
            45 * MIN,
            30 * MIN,
        );
        assert_eq!(kinds(&waiting), [FlagKind::Stuck]);
        assert!(waiting.flags[0].detail.contains("45 min"));
        assert!(
            waiting.flags[0]
                .detail
                .contains("needs_review can legitimately last hours")
        );
        let young = plain(
            "job_3",
            vec![event(1, "e1", "processing", 0, 0)],
            29 * MIN,
            30 * MIN,
        );
        assert!(young.flags.is_empty());
    }

    #[test]
    fn unknown_state_names_are_shown_not_judged() {
        let t = plain(
            "job_1",
            vec![
                event(1, "e1", "completed", 0, 0),
                event(2, "e2", "archived", 1, 1),
            ],
            5 * MIN,
            30 * MIN,
        );
        assert!(!kinds(&t).contains(&FlagKind::Regression));
        assert_eq!(t.current_state.as_deref(), Some("completed"));
    }
}
