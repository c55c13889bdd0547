//! Reconciling, as plain data: how to ask a job API about a job, what a poll found, how long
//! to wait before the next one, and how to read the API's answers. The network part is in
//! `net::reconcile`, the use cases in `app::reconcile`; nothing here does I/O.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::job::{StateKind, time_value_ms};
use crate::domain::json::Json;
use crate::domain::scheme::Secret;

/// How to ask one endpoint's job API (`[endpoint.reconcile]`, resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiConfig {
    /// The job resource, with `{job_id}` where the id goes.
    pub job_url: String,
    /// The in-flight listing, if the API has one.
    pub list_url: Option<String>,
    /// The listing's cursor parameter.
    pub cursor_param: String,
    /// Where the state is in a job resource.
    pub state_pointer: String,
    /// Where the result URL is in a job resource.
    pub result_pointer: String,
    /// Where the output's expiry is in a job resource.
    pub expires_pointer: String,
    /// The header carrying the API key, its environment variable and its template.
    pub auth: Option<Auth>,
    /// How polling paces itself.
    pub pacing: Pacing,
    /// Accept any certificate (a development API on a self-signed one).
    pub insecure: bool,
}

/// Where the API key comes from. The key itself is read from the environment when a request
/// is made, and never kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    /// The header (`Authorization`).
    pub header: String,
    /// The environment variable holding the key.
    pub env: String,
    /// How the header's value is built: `{value}` stands for the key.
    pub template: String,
}

/// How polling paces itself: start near `initial`, multiply by [`FACTOR`], cap at `max`, with
/// jitter; `needs_review` (hours of human work) waits [`REVIEW_FACTOR`] times longer; give up
/// after `deadline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// The first interval.
    pub initial: Duration,
    /// The cap.
    pub max: Duration,
    /// How long to keep polling one job before surfacing it instead.
    pub deadline: Duration,
}

impl Default for Pacing {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(2),
            max: Duration::from_secs(30),
            deadline: Duration::from_secs(3600),
        }
    }
}

/// The backoff's growth per poll.
pub const FACTOR: f64 = 1.5;
/// How much longer a job in `needs_review` waits between polls.
pub const REVIEW_FACTOR: u32 = 10;

impl Pacing {
    /// The wait after poll number `n` (from 1) of a job last seen in `state`; `jitter` in
    /// [0, 1) spreads it by ±10 %.
    pub fn delay(&self, n: u32, state: Option<&str>, jitter: f64) -> Duration {
        let grown = self.initial.as_secs_f64() * FACTOR.powi(n.saturating_sub(1).min(64) as i32);
        let base = grown.min(self.max.as_secs_f64());
        let spread = base * (0.9 + 0.2 * jitter.clamp(0.0, 1.0));
        let review = state.is_some_and(|s| s.eq_ignore_ascii_case("needs_review"));
        let secs = if review {
            spread * f64::from(REVIEW_FACTOR)
        } else {
            spread
        };
        Duration::from_secs_f64(secs)
    }
}

/// A random number in [0, 1) for the jitter.
pub fn jitter() -> f64 {
    let mut bytes = [0u8; 4];
    let _ = getrandom::fill(&mut bytes);
    f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0)
}

impl ApiConfig {
    /// The job resource's URL for one job (the id percent-encoded).
    pub fn job_url_for(&self, job_id: &str) -> String {
        let encoded: String = job_id
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        self.job_url.replace("{job_id}", &encoded)
    }

    /// The listing's URL with the cursor set (replacing any earlier one).
    pub fn list_url_after(&self, cursor: Option<&str>) -> Option<String> {
        let url = self.list_url.as_deref()?;
        let Some(cursor) = cursor else {
            return Some(url.to_string());
        };
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut pairs: Vec<String> = query
            .split('&')
            .filter(|p| !p.is_empty() && p.split('=').next() != Some(self.cursor_param.as_str()))
            .map(str::to_string)
            .collect();
        pairs.push(format!("{}={cursor}", self.cursor_param));
        Some(format!("{base}?{}", pairs.join("&")))
    }

    /// The authentication header, its value built from the environment; `Ok(None)` when the
    /// API needs none, an error sentence when the variable is not set.
    pub fn auth_header(&self) -> Result<Option<(String, Secret)>, String> {
        let Some(auth) = &self.auth else {
            return Ok(None);
        };
        match std::env::var(&auth.env) {
            Ok(value) if !value.is_empty() => Ok(Some((
                auth.header.clone(),
                Secret::new(auth.template.replace("{value}", &value)),
            ))),
            _ => Err(format!(
                "the environment variable {} (auth_env) is not set, so the job API cannot be asked",
                auth.env
            )),
        }
    }

    /// What a job resource says: its state, result URL and output expiry.
    pub fn read_job(&self, body: &[u8]) -> JobResource {
        let json = Json::parse(body);
        let at = |pointer: &str| json.as_ref().and_then(|j| j.pointer(pointer));
        JobResource {
            state: at(&self.state_pointer).and_then(Json::as_text),
            result_url: at(&self.result_pointer).and_then(Json::as_text),
            expires_at_ms: at(&self.expires_pointer).and_then(time_value_ms),
            parsed: json.is_some(),
        }
    }

    /// One page of the in-flight listing: each job's id and state, and the next cursor (none
    /// when `has_more` is false or absent).
    pub fn read_page(&self, body: &[u8]) -> Option<Page> {
        let json = Json::parse(body)?;
        let items = json
            .pointer("/data")
            .or_else(|| json.pointer("/jobs"))
            .and_then(Json::as_array)?;
        let jobs = items
            .iter()
            .filter_map(|item| {
                let id = ["/job_id", "/id"]
                    .iter()
                    .find_map(|p| item.pointer(p).and_then(Json::as_text))?;
                let state = item.pointer(&self.state_pointer).and_then(Json::as_text);
                Some((id, state))
            })
            .collect();
        let has_more = json
            .pointer("/has_more")
            .and_then(Json::as_bool)
            .unwrap_or(false);
        let next = json.pointer("/next_cursor").and_then(Json::as_text);
        Some(Page {
            jobs,
            next_cursor: next.filter(|_| has_more),
        })
    }
}

/// What a job resource says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobResource {
    /// The state, at `state_pointer`.
    pub state: Option<String>,
    /// The result URL, when the job has one.
    pub result_url: Option<String>,
    /// When the output expires, Unix milliseconds.
    pub expires_at_ms: Option<i64>,
    /// Whether the body was JSON at all.
    pub parsed: bool,
}

/// One page of the in-flight listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Each job's id and state.
    pub jobs: Vec<(String, Option<String>)>,
    /// The cursor of the next page, when there is one.
    pub next_cursor: Option<String>,
}

/// One question to the job API about one job, and the answer. Stored, one row each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Poll {
    /// The poll's id (0 before it is stored).
    pub id: i64,
    /// The job asked about.
    pub job_id: String,
    /// The endpoint whose API was asked.
    pub endpoint: String,
    /// When, Unix milliseconds.
    pub at_ms: i64,
    /// The HTTP status, when an answer came.
    pub status: Option<u16>,
    /// The state the API reported.
    pub state: Option<String>,
    /// How long the answer took.
    pub latency_ms: u64,
    /// Why there was no usable answer (no connection, a timeout, not JSON, no state).
    pub error: Option<String>,
    /// The job's result URL, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_url: Option<String>,
    /// When the output expires, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<i64>,
    /// The result URL's status, when it was asked (after `expires_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_status: Option<u16>,
}

impl Poll {
    /// Whether the API answered with a job and its state.
    pub fn answered(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// Whether the API says the job is finished.
    pub fn terminal(&self) -> bool {
        self.answered() && self.state.as_deref().map(StateKind::of) == Some(StateKind::Terminal)
    }

    /// Why the API could not tell, as a phrase (`it answered 503`, `cannot connect …`).
    pub fn failure(&self) -> Option<String> {
        if self.answered() {
            return None;
        }
        Some(match (self.status, &self.error) {
            (Some(s), Some(e)) => format!("it answered {s}: {e}"),
            (Some(404), None) => "it answered 404: it does not know this job".into(),
            (Some(s), None) => format!("it answered {s}"),
            (None, Some(e)) => e.clone(),
            (None, None) => "no answer".into(),
        })
    }
}

/// The wait a `Retry-After` value asks for: seconds, or an HTTP date (RFC 9110) from `now_ms`.
pub fn retry_after(value: &str, now_ms: i64) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = jiff::fmt::rfc2822::parse(value).ok()?;
    let ms = at.timestamp().as_millisecond();
    Some(Duration::from_millis(
        ms.saturating_sub(now_ms).max(0) as u64
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> ApiConfig {
        ApiConfig {
            job_url: "https://api.test/v1/jobs/{job_id}".into(),
            list_url: Some("https://api.test/v1/jobs?status=queued&limit=2".into()),
            cursor_param: "after".into(),
            state_pointer: "/status".into(),
            result_pointer: "/result_url".into(),
            expires_pointer: "/expires_at".into(),
            auth: None,
            pacing: Pacing::default(),
            insecure: false,
        }
    }

    #[test]
    fn backoff_starts_near_two_seconds_grows_by_half_and_caps_at_thirty() {
        let p = Pacing::default();
        let secs: Vec<f64> = (1..=10)
            .map(|n| p.delay(n, None, 0.5).as_secs_f64())
            .collect();
        assert!((secs[0] - 2.0).abs() < 1e-9, "{secs:?}");
        assert!((secs[1] - 3.0).abs() < 1e-9, "{secs:?}");
        assert!((secs[2] - 4.5).abs() < 1e-9, "{secs:?}");
        assert!((secs[9] - 30.0).abs() < 1e-9, "capped: {secs:?}");
        // Jitter spreads by ±10 %, never more.
        assert!(p.delay(1, None, 0.0).as_secs_f64() >= 1.8);
        assert!(p.delay(1, None, 0.999).as_secs_f64() < 2.2);
        // needs_review waits ten times longer.
        assert!((p.delay(10, Some("needs_review"), 0.5).as_secs_f64() - 300.0).abs() < 1e-9);
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        assert_eq!(retry_after("7", 0), Some(Duration::from_secs(7)));
        // Sun, 06 Nov 1994 08:49:37 GMT is 784111777 s.
        let now = 784_111_777_000 - 3_000;
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now + 10_000),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon", 0), None);
    }

    #[test]
    fn resources_and_pages_are_read_at_their_pointers() {
        let job = api().read_job(
            br#"{"job_id":"j1","status":"succeeded","result_url":"https://x/r","expires_at":"2026-01-01T00:00:00Z"}"#,
        );
        assert_eq!(job.state.as_deref(), Some("succeeded"));
        assert_eq!(job.result_url.as_deref(), Some("https://x/r"));
        assert_eq!(job.expires_at_ms, Some(1_767_225_600_000));
        let page = api()
            .read_page(
                br#"{"data":[{"job_id":"a","status":"queued"},{"id":"b"}],"has_more":true,"next_cursor":"c2"}"#,
            )
            .expect("page");
        assert_eq!(
            page.jobs,
            [("a".into(), Some("queued".into())), ("b".into(), None)]
        );
        assert_eq!(page.next_cursor.as_deref(), Some("c2"));
        assert_eq!(
            api().list_url_after(Some("c2")).as_deref(),
            Some("https://api.test/v1/jobs?status=queued&limit=2&after=c2")
        );
        assert_eq!(
            api().job_url_for("a b/c"),
            "https://api.test/v1/jobs/a%20b%2Fc"
        );
    }
}
