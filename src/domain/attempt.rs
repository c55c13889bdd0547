//! An outbound request hookscope made to the developer's handler (a resend, a forward, a probe
//! case) and what came back. The network layer makes them; the store keeps them.

use serde::{Deserialize, Serialize};

use crate::domain::delivery::Header;

/// Why an outbound request was made. The JSON and the store use the lowercase word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttemptKind {
    /// A captured delivery sent again (`hookscope resend`, the Resend tab).
    Resend,
    /// One delivery of many sent again (`hookscope replay`, the window's *Replay*).
    Replay,
    /// A delivery forwarded as it arrived (`listen --forward-to`).
    Forward,
    /// A case of the receiver checklist (`hookscope probe`).
    Probe,
    /// A question to a job API (`hookscope reconcile`); kept as a poll, not as an attempt.
    Poll,
    /// A webhook the provider simulator sent (`hookscope simulate`).
    Simulate,
    /// The GET that confirms a subscription (`hookscope confirm`: SNS, Event Grid).
    Confirm,
}

impl AttemptKind {
    /// The word the JSON and the store use.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptKind::Resend => "resend",
            AttemptKind::Replay => "replay",
            AttemptKind::Forward => "forward",
            AttemptKind::Probe => "probe",
            AttemptKind::Poll => "poll",
            AttemptKind::Simulate => "simulate",
            AttemptKind::Confirm => "confirm",
        }
    }

    /// The kind a stored word names; an unknown word (a newer hookscope's) reads as a resend.
    pub fn from_word(word: &str) -> AttemptKind {
        match word {
            "replay" => AttemptKind::Replay,
            "forward" => AttemptKind::Forward,
            "probe" => AttemptKind::Probe,
            "poll" => AttemptKind::Poll,
            "simulate" => AttemptKind::Simulate,
            "confirm" => AttemptKind::Confirm,
            _ => AttemptKind::Resend,
        }
    }
}

/// An outbound request hookscope made (resend, forward, probe) and what came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    /// The attempt's id (0 before it is stored).
    pub id: i64,
    /// The delivery it re-sent or forwarded, if any.
    pub delivery_id: Option<i64>,
    /// `resend`, `forward` or `probe`.
    pub kind: AttemptKind,
    /// Where it went.
    pub url: String,
    /// When it was sent, Unix milliseconds.
    pub sent_at_ms: i64,
    /// The request headers as sent.
    #[serde(serialize_with = "headers_as_pairs")]
    pub request_headers: Vec<Header>,
    /// The request body as sent.
    #[serde(skip)]
    pub request_body: Vec<u8>,
    /// The response status, when one came back.
    pub status: Option<u16>,
    /// The response headers.
    #[serde(serialize_with = "headers_as_pairs")]
    pub response_headers: Vec<Header>,
    /// The response body.
    #[serde(serialize_with = "bytes_as_text")]
    pub response_body: Vec<u8>,
    /// Milliseconds until the response (or the error).
    pub latency_ms: u64,
    /// What went wrong, when nothing came back.
    pub error: Option<String>,
    /// The job it was about (the simulator's webhooks), for the job's timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// Which attempt of its event it was, from 1 (the simulator's webhooks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_number: Option<u32>,
}

impl Attempt {
    /// An outbound request of `kind`, sent (or tried) at `sent_at_ms`, with no answer yet: the
    /// one shape every attempt starts from, the answer or the error filled in after.
    pub fn unanswered(
        kind: AttemptKind,
        url: String,
        delivery_id: Option<i64>,
        sent_at_ms: i64,
        request: (Vec<Header>, Vec<u8>),
    ) -> Attempt {
        let (request_headers, request_body) = request;
        Attempt {
            id: 0,
            delivery_id,
            kind,
            url,
            sent_at_ms,
            request_headers,
            request_body,
            status: None,
            response_headers: Vec::new(),
            response_body: Vec::new(),
            latency_ms: 0,
            error: None,
            job_id: None,
            attempt_number: None,
        }
    }

    /// Whether the other side answered 2xx.
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

fn headers_as_pairs<S: serde::Serializer>(headers: &[Header], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq as _;
    let mut seq = s.serialize_seq(Some(headers.len()))?;
    for h in headers {
        seq.serialize_element(&(&h.name, h.shown_lossy()))?;
    }
    seq.end()
}

fn bytes_as_text<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(bytes))
}

/// The value at fraction `p` (0.5, 0.99) of sorted latencies, nearest rank; 0 when empty.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_kinds_read_back_the_words_they_write() {
        for kind in [
            AttemptKind::Resend,
            AttemptKind::Forward,
            AttemptKind::Probe,
            AttemptKind::Poll,
            AttemptKind::Simulate,
        ] {
            assert_eq!(AttemptKind::from_word(kind.as_str()), kind);
            assert_eq!(
                serde_json::to_value(kind).expect("json"),
                serde_json::Value::from(kind.as_str())
            );
        }
    }
}
