//! Asking a job API over HTTP(S), with the project's outbound client: one GET, its status, its
//! `Retry-After`, its body. The API key goes in a header built from the environment at the
//! moment of the request; nothing here keeps or prints it.

use std::time::Duration;

use crate::domain::attempt::AttemptKind;
use crate::domain::clock::now_ms;
use crate::domain::delivery::Header;
use crate::domain::reconcile::{ApiConfig, retry_after};
use crate::net::client::{Client, Outgoing, SendError};

/// What one GET came back with.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The status, when an answer came.
    pub status: Option<u16>,
    /// The wait a `Retry-After` header asked for.
    pub retry_after: Option<Duration>,
    /// The body.
    pub body: Vec<u8>,
    /// How long it took.
    pub latency_ms: u64,
    /// Why there was no answer (or no usable one).
    pub error: Option<String>,
}

/// GETs `url` from the job API, authenticated as the API config says.
pub async fn get(client: &Client, api: &ApiConfig, url: &str) -> Result<Answer, SendError> {
    let mut headers = vec![Header::new("accept", "application/json")];
    match api.auth_header() {
        Ok(Some((name, value))) => headers.push(Header::new(&name, value.expose())),
        Ok(None) => {}
        Err(sentence) => {
            return Ok(Answer {
                error: Some(sentence),
                ..Answer::default()
            });
        }
    }
    let outgoing = Outgoing {
        method: "GET".into(),
        headers,
        body: Vec::new(),
    };
    let attempt = client.send(url, &outgoing, AttemptKind::Poll, None).await?;
    let retry = attempt
        .response_headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("retry-after"))
        .and_then(|h| retry_after(&h.value_lossy(), now_ms()));
    Ok(Answer {
        status: attempt.status,
        retry_after: retry,
        body: attempt.response_body,
        latency_ms: attempt.latency_ms,
        error: attempt.error,
    })
}
