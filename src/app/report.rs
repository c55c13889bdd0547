//! How deliveries are written out: the JSON shape scripts rely on, and the one-line human form.
//!
//! The JSON shape is the interface in docs/interface.md (`listen --json`, `list --json`, "copy as JSON");
//! fields are only ever added to it. Header values that are not UTF-8 are written with U+FFFD
//! in place of the bad bytes; the store keeps the exact bytes.

use serde_json::{Value, json};

use crate::domain::attempt::Attempt;
use crate::domain::checks::{Evaluation, SignatureStatus, TimestampStatus, status_word};
use crate::domain::clock::now_ms;
use crate::domain::delivery::Delivery;
use crate::domain::fmt::{Zone, full_time, ordinal_suffix, rfc3339_ms, short_time, zoned_rfc3339};
use crate::store::StoredDelivery;

fn headers_json(delivery: &Delivery) -> Value {
    Value::Array(
        delivery
            .headers
            .iter()
            .map(|h| json!([h.name, h.shown_lossy()]))
            .collect(),
    )
}

/// The JSON object for a stored delivery and the attempts made from it (the shape in
/// docs/interface.md).
pub fn delivery_json(stored: &StoredDelivery, attempts: &[Attempt]) -> Value {
    let d = &stored.delivery;
    let mut value = json!({
        "id": stored.id,
        "received_at": rfc3339_ms(d.received_at_ms),
        "method": d.method,
        "path": d.path,
        "query": d.shown_query(),
        "headers": headers_json(d),
        "body_size": d.body_size,
        "body_complete": d.body_complete,
        "endpoint": stored.endpoint,
        "scheme": stored.scheme,
        "event_id": stored.event_id,
        "event_type": stored.event_type,
        "checks": stored.checks,
        "job": stored.job,
        "response": {"status": stored.response_status, "latency_ms": stored.latency_ms},
        "handshake": stored.handshake,
        "cloudevent": crate::domain::cloudevents::read(d),
        "attempts": attempts.iter().map(attempt_json).collect::<Vec<_>>(),
        "unrouted": stored.unrouted.is_some(),
        "relay": stored.relayed.as_ref().map(|r| json!({
            "seq": r.seq,
            "received_at": rfc3339_ms(d.received_at_ms),
            "delay_ms": r.delay_ms,
        })),
    });
    if let (Some(note), Some(obj)) = (&stored.note, value.as_object_mut()) {
        obj.insert("note".into(), json!(note));
    }
    // No contract, no schema check: `null`, as for every field the delivery does not have.
    if let Some(checks) = value.get_mut("checks").and_then(Value::as_object_mut) {
        checks.entry("schema").or_insert(Value::Null);
    }
    value
}

/// An attempt as a delivery's JSON lists it: where it went, how it was answered, when.
pub fn attempt_json(attempt: &Attempt) -> Value {
    json!({
        "id": attempt.id,
        "kind": attempt.kind,
        "url": attempt.url,
        "status": attempt.status,
        "latency_ms": attempt.latency_ms,
        "sent_at": rfc3339_ms(attempt.sent_at_ms),
        "error": attempt.error,
    })
}

/// The JSON object `verify --json` prints: the same fields as a delivery, minus what only the
/// store knows (id, duplicate, response), plus `ok` (the exit status as a boolean).
pub fn evaluation_json(delivery: &Delivery, evaluation: &Evaluation, ok: bool) -> Value {
    json!({
        "ok": ok,
        "method": delivery.method,
        "path": delivery.path,
        "query": delivery.shown_query(),
        "headers": headers_json(delivery),
        "body_size": delivery.body_size,
        "scheme": evaluation.scheme,
        "event_id": evaluation.event_id,
        "event_type": evaluation.event_type,
        "checks": {"signature": evaluation.signature, "timestamp": evaluation.timestamp, "advice": evaluation.advice, "schema": evaluation.schema},
        "job": evaluation.job,
        "handshake": evaluation.handshake,
        "cloudevent": crate::domain::cloudevents::read(delivery),
    })
}

fn sig_word(status: SignatureStatus) -> &'static str {
    match status {
        SignatureStatus::Pass => "pass",
        SignatureStatus::Fail => "FAIL",
        SignatureStatus::Skipped => "skipped",
    }
}

fn ts_word(status: TimestampStatus) -> &'static str {
    match status {
        TimestampStatus::Pass => "pass",
        TimestampStatus::Warn => "WARN",
        TimestampStatus::Fail => "FAIL",
        TimestampStatus::Skipped => "skipped",
    }
}

/// How a relayed delivery came, for people: "via relay #42: arrived 6 h 12 min after the relay
/// took it".
pub fn relay_words(relayed: &crate::store::Relayed) -> String {
    let delay = match relayed.delay_ms {
        ms if ms < 1000 => format!("{ms} ms"),
        ms => crate::domain::fmt::human_duration((ms / 1000) as u64),
    };
    format!(
        "via relay #{}: arrived {delay} after the relay took it",
        relayed.seq
    )
}

/// One line per delivery for people, followed by one indented line per check that did not
/// pass, with its explanation.
///
/// Times are in `zone`, with the date when the delivery is not from today.
pub fn human_lines(stored: &StoredDelivery, zone: &Zone) -> String {
    let d = &stored.delivery;
    let clock = short_time(d.received_at_ms, now_ms(), zone);
    let checks = &stored.checks;
    let skew = checks
        .timestamp
        .skew_secs
        .map(|s| format!("({s:+}s)"))
        .unwrap_or_default();
    let dup = status_word(&checks.duplicate.status);
    let query = if d.query.is_empty() {
        String::new()
    } else {
        format!("?{}", d.shown_query())
    };
    let mut out = format!(
        "#{id} {clock} {method} {path}{query} {scheme} event={event} type={etype} sig:{sig} ts:{ts}{skew} dup:{dup} -> {status} ({size} B)",
        id = stored.id,
        method = d.method,
        path = d.path,
        scheme = stored.scheme.clone().unwrap_or_else(|| format!(
            "unknown-scheme ({})",
            crate::domain::scheme::why_undetected(d)
        )),
        event = stored.event_id.as_deref().unwrap_or("-"),
        etype = stored.event_type.as_deref().unwrap_or("-"),
        sig = sig_word(checks.signature.status),
        ts = ts_word(checks.timestamp.status),
        status = stored.response_status,
        size = d.body_size,
    );
    if let Some(relayed) = &stored.relayed {
        out.push_str(&format!("\n    {}", relay_words(relayed)));
    }
    if let Some(handshake) = &stored.handshake {
        out.push_str(&format!(
            "\n    handshake ({}): {}",
            handshake.outcome.as_str(),
            handshake.detail
        ));
        match (&handshake.confirm_url, handshake.outcome) {
            // Event Grid's handshake was answered: its URL is for manual validation only.
            (Some(url), crate::domain::handshake::Outcome::Answered) => out.push_str(&format!(
                "\n    validationUrl (manual validation, not needed: the handshake was answered): {url}"
            )),
            (Some(url), _) => out.push_str(&format!(
                "\n    confirm: {url} (`hookscope confirm {}` makes the one GET)",
                stored.id
            )),
            (None, _) => {}
        }
    }
    if checks.signature.status == SignatureStatus::Fail {
        out.push_str(&format!("\n    signature: {}", checks.signature.detail));
        if let Some(diagnosis) = &checks.signature.diagnosis {
            out.push_str(&format!(
                "\n    diagnosis ({}): {}",
                diagnosis.cause.code(),
                diagnosis.detail
            ));
        }
    }
    if matches!(
        checks.timestamp.status,
        TimestampStatus::Fail | TimestampStatus::Warn
    ) {
        out.push_str(&format!("\n    timestamp: {}", checks.timestamp.detail));
    }
    if checks.advice.status == crate::domain::advice::AdviceStatus::Advice {
        out.push_str(&format!("\n    advice: {}", checks.advice.detail));
    }
    // A schema check that did not pass says why; drift alone is said too (it is advice).
    if let Some(schema) = checks
        .schema
        .as_ref()
        .filter(|s| s.status != crate::domain::contract::SchemaStatus::Pass || !s.drift.is_empty())
    {
        out.push_str(&format!("\n    schema: {}", schema.detail));
    }
    if let Some(note) = &stored.note {
        out.push_str(&format!("\n    note: {note}"));
    }
    if let Some(rules) = stored.unrouted {
        out.push_str(&format!("\n    forward: {}", unrouted_sentence(rules)));
    }
    out
}

/// Why a delivery was not forwarded: it met none of its endpoint's rules.
pub fn unrouted_sentence(rules: u32) -> String {
    match rules {
        1 => {
            "not forwarded: it did not meet the condition of its endpoint's forwarding rule".into()
        }
        n => format!(
            "not forwarded: it met none of the conditions of its endpoint's {n} forwarding rules"
        ),
    }
}

/// One job in `jobs --json`: the timeline's summary and its flags, without the deliveries.
pub fn job_summary_json(timeline: &crate::domain::timeline::JobTimeline) -> Value {
    json!({
        "job_id": timeline.job_id,
        "current_state": timeline.current_state,
        "terminal": timeline.terminal,
        "first_seen": rfc3339_ms(timeline.first_seen_ms),
        "last_seen": rfc3339_ms(timeline.last_seen_ms),
        "duration_secs": (timeline.last_seen_ms - timeline.first_seen_ms) / 1000,
        "events": timeline.events,
        "deliveries": timeline.arrival_order.len(),
        "flags": timeline.flags,
        "api_state": timeline.api_state,
        "api_checked_at": timeline.polls.last().map(|p| rfc3339_ms(p.at_ms)),
    })
}

/// One job in `reconcile --json`: the webhooks' state, the API's, and the flags.
pub fn reconcile_json(timeline: &crate::domain::timeline::JobTimeline) -> Value {
    let last = timeline.polls.last();
    json!({
        "job_id": timeline.job_id,
        "webhook_state": timeline.current_state,
        "api_state": timeline.api_state,
        "api_checked_at": last.map(|p| rfc3339_ms(p.at_ms)),
        "api_status": last.and_then(|p| p.status),
        "deliveries": timeline.arrival_order.len(),
        "flags": timeline.problems().collect::<Vec<_>>(),
    })
}

/// One job per line after reconciling: `job  webhooks: X  api: Y  flags…`, each problem's
/// sentence indented below.
pub fn reconcile_line(timeline: &crate::domain::timeline::JobTimeline) -> String {
    let webhooks = match (&timeline.current_state, timeline.arrival_order.len()) {
        (_, 0) => "no webhook".to_string(),
        (Some(s), _) => s.clone(),
        (None, _) => "no state".to_string(),
    };
    let api = timeline
        .api_state
        .clone()
        .unwrap_or_else(|| "not answered".into());
    let problems: Vec<&crate::domain::timeline::Flag> = timeline.problems().collect();
    let mut out = format!(
        "{}  webhooks: {webhooks}  api: {api}  {}",
        timeline.job_id,
        if problems.is_empty() {
            "ok".to_string()
        } else {
            problems
                .iter()
                .map(|f| status_word(&f.kind))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    for flag in problems {
        out.push_str(&format!(
            "\n    {}: {}",
            status_word(&flag.kind),
            flag.detail
        ));
    }
    out
}

/// One poll in `follow --json`.
pub fn poll_json(poll: &crate::domain::reconcile::Poll) -> Value {
    let mut value = serde_json::to_value(poll).unwrap_or(Value::Null);
    if let Some(obj) = value.as_object_mut() {
        obj.insert("at".into(), json!(rfc3339_ms(poll.at_ms)));
    }
    value
}

/// One poll for people: time, job, status and state (or why there is none).
pub fn poll_line(poll: &crate::domain::reconcile::Poll, zone: &Zone) -> String {
    let answer = match poll.failure() {
        None => poll.state.clone().unwrap_or_default(),
        Some(why) => format!("no state: {why}"),
    };
    format!(
        "{} {}  {}  {} ms",
        zoned_rfc3339(poll.at_ms, zone),
        poll.job_id,
        answer,
        poll.latency_ms
    )
}

/// One job per line for people.
pub fn job_summary_line(timeline: &crate::domain::timeline::JobTimeline, zone: &Zone) -> String {
    let flags: Vec<String> = timeline.problems().map(|f| status_word(&f.kind)).collect();
    let hints: Vec<String> = timeline.hints().map(|f| status_word(&f.kind)).collect();
    let span = crate::domain::fmt::human_duration(
        ((timeline.last_seen_ms - timeline.first_seen_ms) / 1000).max(0) as u64,
    );
    format!(
        "{job}  {state:<13} {events} events / {deliveries} deliveries  {first} -> {last} ({span})  {flags}",
        job = timeline.job_id,
        state = timeline.current_state.as_deref().unwrap_or("?"),
        events = timeline.events,
        deliveries = timeline.arrival_order.len(),
        first = zoned_rfc3339(timeline.first_seen_ms, zone),
        last = short_time(timeline.last_seen_ms, timeline.first_seen_ms, zone),
        flags = match (flags.is_empty(), hints.is_empty()) {
            (true, true) => "no flags".to_string(),
            (true, false) => format!("no flags (hint: {})", hints.join(", ")),
            (false, true) => format!("flags: {}", flags.join(", ")),
            (false, false) => format!("flags: {} (hint: {})", flags.join(", "), hints.join(", ")),
        },
    )
}

/// A job's timeline for people: the deliveries by event time with their arrival rank, then the
/// flags with their sentences.
pub fn timeline_text(timeline: &crate::domain::timeline::JobTimeline, zone: &Zone) -> String {
    let mut out = format!(
        "job {}: {}{}, {} events in {} deliveries, first seen {}, last seen {}\n",
        timeline.job_id,
        timeline.current_state.as_deref().unwrap_or("state unknown"),
        if timeline.terminal { " (terminal)" } else { "" },
        timeline.events,
        timeline.arrival_order.len(),
        full_time(timeline.first_seen_ms, zone),
        full_time(timeline.last_seen_ms, zone),
    );
    out.push_str("by event time:\n");
    for d in &timeline.by_event_time {
        let rank = timeline.arrival_rank(d.delivery_id);
        let created = d
            .created_at_ms
            .map(|ms| zoned_rfc3339(ms, zone))
            .unwrap_or_else(|| "(no creation time)".into());
        out.push_str(&format!(
            "  {created}  {state:<13} #{id:<6} {event:<20} sig:{sig:<7} dup:{dup:<9} arrived {rank}{suffix} at {arrived}\n",
            state = d.state.as_deref().unwrap_or("-"),
            id = d.delivery_id,
            event = d.event_id.as_deref().unwrap_or("-"),
            sig = d.signature,
            dup = d.duplicate,
            suffix = ordinal_suffix(rank),
            arrived = zoned_rfc3339(d.received_at_ms, zone),
        ));
    }
    if !timeline.polls.is_empty() {
        out.push_str(&format!("job resource ({} polls):\n", timeline.polls.len()));
        for poll in &timeline.polls {
            out.push_str(&format!("  {}\n", poll_line(poll, zone)));
        }
    }
    if timeline.problems().next().is_none() {
        out.push_str("no flags\n");
    } else {
        out.push_str("flags:\n");
        for flag in timeline.problems() {
            out.push_str(&format!("  {}: {}\n", status_word(&flag.kind), flag.detail));
        }
    }
    for (n, flag) in timeline.hints().enumerate() {
        if n == 0 {
            out.push_str("hints:\n");
        }
        out.push_str(&format!("  {}: {}\n", status_word(&flag.kind), flag.detail));
    }
    out
}
