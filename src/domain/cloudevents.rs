//! CloudEvents over HTTP, read as the HTTP protocol binding 1.0 says: binary mode (the
//! attributes in `ce-` headers, the data as the body) and structured mode (`Content-Type:
//! application/cloudevents+json`, a JSON envelope with the attributes and `data`).
//!
//! An event is identified by `source` + `id` (the spec's uniqueness rule), so a repeat of both
//! is a duplicate. Its `time` is when the occurrence happened: a retry rightly carries the old
//! one, so it is shown and never judged against a replay window.

use serde::Serialize;

use crate::domain::delivery::Delivery;
use crate::domain::json::Json;

/// How the event was carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Attributes in `ce-` headers.
    Binary,
    /// A JSON envelope (`application/cloudevents+json`).
    Structured,
}

/// A CloudEvent's context attributes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CloudEvent {
    /// Binary or structured.
    pub mode: Mode,
    /// `specversion` (`1.0`).
    pub specversion: String,
    /// `id`: unique within `source`.
    pub id: String,
    /// `source`: where the event happened.
    pub source: String,
    /// `type`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// `time`: when the occurrence happened (RFC 3339), as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// `subject`, when sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// The CloudEvent a delivery carries, in either mode; `None` when it is not one (a binary-mode
/// request needs `ce-specversion` and `ce-id`; a structured one, the content type and an `id`).
pub fn read(delivery: &Delivery) -> Option<CloudEvent> {
    let header = |name: &str| {
        delivery
            .header_str(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if let (Some(specversion), Some(id)) = (header("ce-specversion"), header("ce-id")) {
        return Some(CloudEvent {
            mode: Mode::Binary,
            specversion,
            id,
            source: header("ce-source").unwrap_or_default(),
            event_type: header("ce-type").unwrap_or_default(),
            time: header("ce-time"),
            subject: header("ce-subject"),
        });
    }
    let structured = delivery.header_str("content-type").is_some_and(|t| {
        t.trim()
            .to_ascii_lowercase()
            .starts_with("application/cloudevents+json")
    });
    if !structured {
        return None;
    }
    let body = Json::parse(&delivery.body)?;
    let text = |key: &str| body.get(key).and_then(Json::as_text);
    Some(CloudEvent {
        mode: Mode::Structured,
        specversion: text("specversion").unwrap_or_default(),
        id: text("id")?,
        source: text("source").unwrap_or_default(),
        event_type: text("type").unwrap_or_default(),
        time: text("time"),
        subject: text("subject"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(headers: &[(&str, &str)], body: &str) -> Delivery {
        crate::domain::delivery::test_request("POST", "", headers, body)
    }

    #[test]
    fn both_modes_are_read_and_a_plain_json_body_is_not_an_event() {
        let binary = delivery(
            &[
                ("ce-specversion", "1.0"),
                ("ce-id", "A234-1234-1234"),
                ("ce-source", "https://example.com/storage"),
                ("ce-type", "com.example.object.deleted.v2"),
                ("ce-time", "2018-04-05T17:31:00Z"),
                ("content-type", "application/json"),
            ],
            r#"{"job_id":"j1"}"#,
        );
        let e = read(&binary).expect("binary");
        assert_eq!(
            (
                e.mode,
                e.id.as_str(),
                e.source.as_str(),
                e.event_type.as_str()
            ),
            (
                Mode::Binary,
                "A234-1234-1234",
                "https://example.com/storage",
                "com.example.object.deleted.v2"
            )
        );
        assert_eq!(e.time.as_deref(), Some("2018-04-05T17:31:00Z"));
        let structured = delivery(
            &[(
                "content-type",
                "application/cloudevents+json; charset=utf-8",
            )],
            r#"{"specversion":"1.0","id":"x1","source":"/s","type":"t.created","time":"2024-01-01T00:00:00Z","data":{"job_id":"j1"}}"#,
        );
        let e = read(&structured).expect("structured");
        assert_eq!(
            (e.mode, e.id.as_str(), e.source.as_str()),
            (Mode::Structured, "x1", "/s")
        );
        let plain = delivery(&[("content-type", "application/json")], r#"{"id":"x1"}"#);
        assert_eq!(read(&plain), None);
    }

    #[test]
    fn an_event_without_a_source_is_still_read_and_scoped_by_its_endpoint_alone() {
        let d = delivery(&[("ce-specversion", "1.0"), ("ce-id", "e1")], "{}");
        let e = read(&d).expect("binary");
        assert_eq!((e.id.as_str(), e.source.as_str()), ("e1", ""));
        let evaluation =
            crate::domain::checks::evaluate(&d, &crate::domain::endpoint::Endpoint::catch_all(), 0);
        assert_eq!(evaluation.event_id.as_deref(), Some("e1"));
        assert_eq!(evaluation.event_source, None, "no ` from ` in its scope");
    }
}
