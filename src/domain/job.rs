//! Jobs as webhooks report them: which job a delivery is about, the state it reports, and how
//! a state name behaves in a lifecycle (ongoing, terminal, unknown). Pure functions over the body.

use serde::{Deserialize, Serialize};

/// The value a JSON pointer (RFC 6901) names, as `serde_json::Value::pointer` finds it, without
/// its two allocations per token: a delivery's checks look up about ten pointers, on the
/// receiver's path. A token is unescaped (`~1` → `/`, `~0` → `~`) only when it holds a `~`.
pub(crate) fn pointer<'a>(
    json: &'a serde_json::Value,
    pointer: &str,
) -> Option<&'a serde_json::Value> {
    if pointer.is_empty() {
        return Some(json);
    }
    let tokens = pointer.strip_prefix('/')?;
    tokens.split('/').try_fold(json, |target, token| {
        let token = if token.contains('~') {
            std::borrow::Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
        } else {
            std::borrow::Cow::Borrowed(token)
        };
        match target {
            serde_json::Value::Object(map) => map.get(token.as_ref()),
            serde_json::Value::Array(list) => {
                // As serde_json: no sign, no leading zero.
                if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
                    return None;
                }
                token.parse::<usize>().ok().and_then(|i| list.get(i))
            }
            _ => None,
        }
    })
}

/// The first of several JSON pointers that holds a string or a number, as text.
pub(crate) fn first_text(json: &serde_json::Value, pointers: &[&str]) -> Option<String> {
    pointers.iter().find_map(|p| match pointer(json, p)? {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
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
    json: &serde_json::Value,
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
        Some(p) => pointer(json, p).and_then(time_value_ms),
        None => ["/created_at", "/timestamp", "/data/created_at", "/created"]
            .iter()
            .find_map(|p| pointer(json, p).and_then(time_value_ms)),
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
pub(crate) fn time_value_ms(value: &serde_json::Value) -> Option<i64> {
    let from_number = |n: f64| {
        if n.abs() >= 100_000_000_000.0 {
            Some(n as i64)
        } else {
            Some((n * 1000.0) as i64)
        }
    };
    match value {
        serde_json::Value::Number(n) => n.as_f64().and_then(from_number),
        serde_json::Value::String(s) => {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The allocation-free lookup finds what serde_json's own does, for every kind of pointer:
    /// the whole document, objects, arrays (no sign, no leading zero), escapes, empty keys,
    /// misses and pointers that do not start with `/`.
    #[test]
    fn pointer_finds_what_serde_json_finds() {
        let json: serde_json::Value = serde_json::from_str(
            r#"{"id":"evt_1","data":{"job_id":"job_7","items":[10,{"x":"y"},30],"a/b":1,"m~n":2,"":3,
                "~1":4,"0":"zero"},"list":[[1,2],[3]],"n":5}"#,
        )
        .expect("json");
        for p in [
            "",
            "/",
            "/id",
            "/data",
            "/data/job_id",
            "/data/items",
            "/data/items/0",
            "/data/items/1/x",
            "/data/items/2",
            "/data/items/3",
            "/data/items/01",
            "/data/items/+1",
            "/data/items/-1",
            "/data/items/x",
            "/data/a~1b",
            "/data/m~0n",
            "/data/",
            "/data/~01",
            "/data/0",
            "/list/0/1",
            "/list/1/0",
            "/list/1/1",
            "/n/0",
            "/missing",
            "/data/missing/x",
            "id",
            "data/job_id",
            "/id/x",
            "/data/a/b",
            "/data/m~n",
            "/data/~2",
        ] {
            assert_eq!(pointer(&json, p), json.pointer(p), "pointer {p:?}");
        }
    }
}
