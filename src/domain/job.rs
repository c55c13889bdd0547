//! Jobs as webhooks report them: which job a delivery is about, the state it reports, and how
//! a state name behaves in a lifecycle (ongoing, terminal, unknown). Pure functions over the body.

use serde::{Deserialize, Serialize};

use crate::domain::json::Json;

/// The first of several JSON pointers that holds a string or a number, as text.
pub(crate) fn first_text(json: &Json<'_>, pointers: &[&str]) -> Option<String> {
    pointers.iter().find_map(|p| json.pointer(p)?.as_text())
}

/// Where the job facts are in a body, when an endpoint overrides the defaults (JSON pointers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobPointers {
    /// `job_id_pointer`.
    pub job_id: Option<String>,
    /// `status_pointer`.
    pub status: Option<String>,
    /// `created_at_pointer`.
    pub created_at: Option<String>,
}

/// Finds the job an event reports on: its id, its state and the event's creation time.
pub fn extract_job(
    json: &Json<'_>,
    event_type: Option<&str>,
    pointers: &JobPointers,
) -> Option<JobRef> {
    let job_id = match &pointers.job_id {
        Some(p) => first_text(json, &[p.as_str()]),
        None => first_text(json, &["/job_id", "/data/job_id"]).or_else(|| {
            let names_job = event_type.is_some_and(|t| t.starts_with("job."));
            names_job.then(|| first_text(json, &["/data/id"])).flatten()
        }),
    }?;
    let status = match &pointers.status {
        Some(p) => first_text(json, &[p.as_str()]),
        None => first_text(json, &["/data/status", "/status"]),
    }
    .or_else(|| state_from_type(event_type?));
    let created_at_ms = match &pointers.created_at {
        Some(p) => json.pointer(p).and_then(time_value_ms),
        None => ["/created_at", "/timestamp", "/data/created_at", "/created"]
            .iter()
            .find_map(|p| json.pointer(p).and_then(time_value_ms)),
    };
    Some(JobRef {
        job_id,
        status,
        created_at_ms,
    })
}

/// `job.succeeded` → `succeeded`, `document.completed` → `completed`: the last part of an
/// event type when it names a job state.
fn state_from_type(event_type: &str) -> Option<String> {
    let last = event_type.rsplit(['.', ':', '/']).next()?;
    StateKind::of(last).is_known().then(|| last.to_string())
}

/// A time in a body: Unix seconds (or milliseconds), as a number or a string, or RFC 3339.
pub(crate) fn time_value_ms(value: &Json<'_>) -> Option<i64> {
    let from_number = |n: f64| {
        if n.abs() >= 100_000_000_000.0 {
            Some(n as i64)
        } else {
            Some((n * 1000.0) as i64)
        }
    };
    match value {
        Json::Number(n) => n.as_f64().and_then(from_number),
        Json::String(s) => {
            if let Ok(n) = s.trim().parse::<f64>() {
                return from_number(n);
            }
            let parsed = time::OffsetDateTime::parse(
                s.trim(),
                &time::format_description::well_known::Rfc3339,
            )
            .ok()?;
            Some((parsed.unix_timestamp_nanos() / 1_000_000) as i64)
        }
        _ => None,
    }
}

/// The job a delivery reports on, when its body names one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRef {
    /// The job id (`job_id`, `data.job_id`, or `data.id` when the event type names a job).
    pub job_id: String,
    /// The job state the event reports, when present (or derived from the event type).
    pub status: Option<String>,
    /// When the event was created by the sender, in Unix milliseconds, when the body says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at_ms: Option<i64>,
}

/// How a state name behaves in a lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateKind {
    /// `queued`, `pending`, `processing`, `running`, `needs_review`.
    Ongoing,
    /// `completed`, `succeeded`, `failed`, `canceled`, `cancelled`.
    Terminal,
    /// Any other name: shown as it is, not judged.
    Unknown,
}

impl StateKind {
    /// The kind of a state name (case-insensitive).
    pub fn of(state: &str) -> StateKind {
        match state.to_ascii_lowercase().as_str() {
            "queued" | "pending" | "processing" | "running" | "needs_review" => StateKind::Ongoing,
            "completed" | "succeeded" | "failed" | "canceled" | "cancelled" => StateKind::Terminal,
            _ => StateKind::Unknown,
        }
    }

    /// Whether the name is one hookscope knows.
    pub fn is_known(self) -> bool {
        self != StateKind::Unknown
    }
}
