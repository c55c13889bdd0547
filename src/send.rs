//! Driving the developer's own handler: resend a capture (as captured or re-signed), forward
//! deliveries as they arrive, and probe a handler with the cases every receiver must handle.
//!
//! Requests go over plain HTTP/1.1 (the handler runs on the developer's machine); redirects are
//! not followed, as webhook senders do not follow them.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Serialize;

use crate::delivery::Header;
use crate::scheme::{Family, FuturePolicy, Scheme, Secret};
use crate::store::{Attempt, StoredDelivery};

/// The default time a handler has to answer (a strict sender's timeout).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Answers slower than this get a warning in the probe.
pub const SLOW_ANSWER: Duration = Duration::from_secs(2);

/// Headers that describe one hop of the connection, never re-sent.
const HOP_BY_HOP: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "proxy-authorization",
    "expect",
];

/// Errors preparing or sending a request.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The URL is not an http:// URL hookscope can send to.
    #[error("{0}")]
    BadUrl(String),
    /// The request could not be built (a header that HTTP cannot carry).
    #[error("the request cannot be built: {0}")]
    Build(String),
    /// Signing failed (an unusable secret).
    #[error("cannot sign: {0}")]
    Sign(#[from] crate::scheme::KeyError),
}

/// A request ready to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The method.
    pub method: String,
    /// The headers, in order.
    pub headers: Vec<Header>,
    /// The body.
    pub body: Vec<u8>,
}

/// An HTTP client for handlers on this machine.
#[derive(Debug, Clone)]
pub struct Client {
    inner: reqwest::Client,
    timeout: Duration,
}

fn check_url(url: &str) -> Result<reqwest::Url, SendError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| SendError::BadUrl(format!("\"{url}\" is not a URL: {e}")))?;
    match parsed.scheme() {
        "http" => Ok(parsed),
        "https" => Err(SendError::BadUrl(format!(
            "\"{url}\": this build sends over plain http only (handlers on this machine); use http://localhost:PORT/…"
        ))),
        other => Err(SendError::BadUrl(format!(
            "\"{url}\": {other}:// is not http"
        ))),
    }
}

impl Client {
    /// A client with a timeout per request.
    pub fn new(timeout: Duration) -> Result<Client, SendError> {
        let inner = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()
            .map_err(|e| SendError::Build(e.to_string()))?;
        Ok(Client { inner, timeout })
    }

    /// Sends a request and records what came back; a failure to connect or a timeout is an
    /// attempt with an error, not an `Err`.
    pub async fn send(
        &self,
        url: &str,
        outgoing: &Outgoing,
        kind: &str,
        delivery_id: Option<i64>,
    ) -> Result<Attempt, SendError> {
        let parsed = check_url(url)?;
        let method = reqwest::Method::from_bytes(outgoing.method.as_bytes())
            .map_err(|e| SendError::Build(format!("method {}: {e}", outgoing.method)))?;
        let mut headers = reqwest::header::HeaderMap::new();
        for h in &outgoing.headers {
            if HOP_BY_HOP.contains(&h.name.as_str()) {
                continue;
            }
            let name = reqwest::header::HeaderName::from_bytes(h.name.as_bytes())
                .map_err(|e| SendError::Build(format!("header name {}: {e}", h.name)))?;
            let value = reqwest::header::HeaderValue::from_bytes(&h.value)
                .map_err(|e| SendError::Build(format!("header {}: {e}", h.name)))?;
            headers.append(name, value);
        }
        let sent_at_ms = crate::now_ms();
        let started = Instant::now();
        let result = self
            .inner
            .request(method, parsed)
            .headers(headers)
            .body(outgoing.body.clone())
            .send()
            .await;
        let mut attempt = Attempt {
            id: 0,
            delivery_id,
            kind: kind.to_string(),
            url: url.to_string(),
            sent_at_ms,
            request_headers: outgoing.headers.clone(),
            request_body: outgoing.body.clone(),
            status: None,
            response_headers: Vec::new(),
            response_body: Vec::new(),
            latency_ms: 0,
            error: None,
        };
        match result {
            Ok(response) => {
                attempt.status = Some(response.status().as_u16());
                attempt.response_headers = response
                    .headers()
                    .iter()
                    .map(|(n, v)| Header {
                        name: n.as_str().to_string(),
                        value: v.as_bytes().to_vec(),
                    })
                    .collect();
                match response.bytes().await {
                    Ok(body) => attempt.response_body = body.to_vec(),
                    Err(e) => attempt.error = Some(format!("the response body was cut: {e}")),
                }
            }
            Err(e) if e.is_timeout() => {
                attempt.error = Some(format!(
                    "no answer within {} s (a sender would retry)",
                    self.timeout.as_secs()
                ));
            }
            Err(e) if e.is_connect() => {
                attempt.error = Some(format!("cannot connect to {url}: is the handler running?"));
            }
            Err(e) => attempt.error = Some(e.to_string()),
        }
        attempt.latency_ms = started.elapsed().as_millis() as u64;
        Ok(attempt)
    }
}

/// A fresh event id: `msg_` and 16 random hex digits.
pub fn new_event_id() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    format!("msg_{}", hex::encode(bytes))
}

/// How to resend.
#[derive(Debug, Clone, Default)]
pub struct ResendOptions {
    /// Re-sign with this scheme and these secrets and a fresh timestamp (`None`: as captured).
    pub resign: Option<(Scheme, Vec<Secret>)>,
    /// Give the event a new id (a new event rather than a retry).
    pub new_id: bool,
    /// A replacement body (edited); the signature is computed over it.
    pub body: Option<Vec<u8>>,
}

/// Every header a scheme writes when it signs, to drop before re-signing.
fn signing_headers(scheme: &Scheme) -> Vec<String> {
    let mut names = vec![scheme.signature_header.clone()];
    names.extend(scheme.timestamp_header.clone());
    names.extend(scheme.event_id_header.clone());
    names
}

/// Builds the request a resend sends. As captured: the same method, headers and body bytes.
/// Re-signed: the scheme's signing headers replaced by fresh ones over the (possibly edited)
/// body, keeping the event id unless `new_id`.
pub fn prepare_resend(
    stored: &StoredDelivery,
    options: &ResendOptions,
    now_secs: i64,
) -> Result<Outgoing, SendError> {
    let d = &stored.delivery;
    let mut body = options.body.clone().unwrap_or_else(|| d.body.clone());
    let mut headers: Vec<Header> = d
        .headers
        .iter()
        .filter(|h| !HOP_BY_HOP.contains(&h.name.as_str()))
        .cloned()
        .collect();
    let old_id = stored.event_id.clone();
    let event_id = match (&old_id, options.new_id) {
        (Some(id), false) => id.clone(),
        _ => new_event_id(),
    };
    if let Some((scheme, secrets)) = &options.resign {
        if options.new_id && scheme.event_id_header.is_none() {
            // The id lives in the body (Stripe-style): replace its one quoted occurrence, so
            // the rest of the bytes stay as they were.
            if let Some(old) = &old_id {
                let text = String::from_utf8_lossy(&body).into_owned();
                let quoted = format!("\"{old}\"");
                if text.contains(&quoted) {
                    body = text
                        .replacen(&quoted, &format!("\"{event_id}\""), 1)
                        .into_bytes();
                }
            }
        }
        let drop: Vec<String> = signing_headers(scheme);
        headers.retain(|h| !drop.iter().any(|n| n.eq_ignore_ascii_case(&h.name)));
        headers.extend(scheme.sign(secrets, &event_id, now_secs, &body)?);
    } else if options.new_id {
        // A new id without re-signing: only the id header changes (the signature will not
        // match if the scheme signs the id; that is the point of such a test).
        for h in headers.iter_mut() {
            if [
                "webhook-id",
                "svix-id",
                "x-github-delivery",
                "x-shopify-webhook-id",
            ]
            .contains(&h.name.as_str())
            {
                h.value = event_id.clone().into_bytes();
            }
        }
    }
    Ok(Outgoing {
        method: d.method.clone(),
        headers,
        body,
    })
}

/// The request a forward sends: byte-exact headers (minus hop-by-hop) and body.
pub fn prepare_forward(stored: &StoredDelivery) -> Outgoing {
    let d = &stored.delivery;
    Outgoing {
        method: d.method.clone(),
        headers: d
            .headers
            .iter()
            .filter(|h| !HOP_BY_HOP.contains(&h.name.as_str()))
            .cloned()
            .collect(),
        body: d.body.clone(),
    }
}

/// One probe case's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The handler did what a correct receiver does.
    Pass,
    /// It did not.
    Fail,
    /// Correct, but worth a look (a slow answer).
    Warn,
    /// Does not apply to this scheme.
    Skipped,
}

/// One case of the probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeCase {
    /// A short name (`tampered_signature`, …).
    pub name: String,
    /// What a correct handler answers.
    pub expected: String,
    /// The verdict.
    pub verdict: Verdict,
    /// The statuses the handler answered (two for the replay case).
    pub statuses: Vec<u16>,
    /// The slowest answer, in milliseconds.
    pub latency_ms: u64,
    /// The evidence in a sentence.
    pub detail: String,
}

/// The whole probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeReport {
    /// The handler probed.
    pub url: String,
    /// The scheme used.
    pub scheme: String,
    /// Each case.
    pub cases: Vec<ProbeCase>,
    /// Whether every case passed (warnings and skipped cases do not fail it).
    pub passed: bool,
}

/// The default probe body: a thin job event.
pub fn sample_body(event_id: &str, now_secs: i64) -> Vec<u8> {
    format!(
        r#"{{"id":"{event_id}","type":"job.completed","created_at":{now_secs},"data":{{"job_id":"job_probe_{}","status":"completed","result_url":"https://example.com/results/probe"}}}}"#,
        &event_id[event_id.len().saturating_sub(8)..]
    )
    .into_bytes()
}

/// The same JSON with other spacing and the top-level keys reversed: still valid, still the
/// same event, different bytes.
pub fn respaced(body: &[u8]) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let object = value.as_object()?;
    let mut out = String::from("{\n    ");
    let entries: Vec<String> = object
        .iter()
        .rev()
        .map(|(k, v)| {
            format!(
                "{}  :   {}",
                serde_json::to_string(k).unwrap_or_default(),
                serde_json::to_string_pretty(v).unwrap_or_default()
            )
        })
        .collect();
    out.push_str(&entries.join(" ,\n    "));
    out.push_str("\n}\n");
    Some(out.into_bytes())
}

fn set_body_id(body: &[u8], old: &str, new: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    let quoted = format!("\"{old}\"");
    if text.contains(&quoted) {
        text.replacen(&quoted, &format!("\"{new}\""), 1)
            .into_bytes()
    } else {
        body.to_vec()
    }
}

fn is_2xx(status: Option<u16>) -> bool {
    status.is_some_and(|s| (200..300).contains(&s))
}

fn is_4xx(status: Option<u16>) -> bool {
    status.is_some_and(|s| (400..500).contains(&s))
}

fn describe(attempt: &Attempt) -> String {
    match (attempt.status, &attempt.error) {
        (Some(s), _) => format!("answered {s} in {} ms", attempt.latency_ms),
        (None, Some(e)) => e.clone(),
        (None, None) => "no answer".into(),
    }
}

/// Runs the receiver checklist of DOMAIN.md against a handler.
pub async fn probe(
    client: &Client,
    url: &str,
    scheme: &Scheme,
    secrets: &[Secret],
    body: Option<Vec<u8>>,
) -> Result<ProbeReport, SendError> {
    check_url(url)?;
    let now = crate::now_ms() / 1000;
    let template_id = "msg_probe_template";
    let base_body = body.unwrap_or_else(|| sample_body(template_id, now));
    let original_id = serde_json::from_slice::<serde_json::Value>(&base_body)
        .ok()
        .and_then(|v| v.get("id").and_then(|i| i.as_str()).map(str::to_string));
    // Each case is a new event, so a handler that deduplicates does not confuse the cases.
    let fresh = |body: &[u8]| {
        let id = new_event_id();
        let body = match &original_id {
            Some(old) => set_body_id(body, old, &id),
            None => body.to_vec(),
        };
        (id, body)
    };
    let signed = |id: &str, ts: i64, body: &[u8]| -> Result<Outgoing, SendError> {
        let mut headers = vec![
            Header::new("content-type", "application/json"),
            Header::new("user-agent", "hookscope-probe"),
        ];
        headers.extend(scheme.sign(secrets, id, ts, body)?);
        Ok(Outgoing {
            method: "POST".into(),
            headers,
            body: body.to_vec(),
        })
    };
    let mut cases = Vec::new();
    let mut slowest = 0u64;
    let mut case =
        |name: &str, expected: &str, verdict: Verdict, attempts: &[&Attempt], detail: String| {
            let latency_ms = attempts.iter().map(|a| a.latency_ms).max().unwrap_or(0);
            cases.push(ProbeCase {
                name: name.into(),
                expected: expected.into(),
                verdict,
                statuses: attempts.iter().filter_map(|a| a.status).collect(),
                latency_ms,
                detail,
            });
            latency_ms
        };

    // 1. A valid delivery.
    let (id, body) = fresh(&base_body);
    let valid = client
        .send(url, &signed(&id, now, &body)?, "probe", None)
        .await?;
    let ok = is_2xx(valid.status);
    slowest = slowest.max(case(
        "valid",
        "2xx",
        if ok { Verdict::Pass } else { Verdict::Fail },
        &[&valid],
        if ok {
            format!("A correctly signed delivery was accepted ({}).", describe(&valid))
        } else {
            format!("A correctly signed delivery was refused ({}): check the handler's secret and scheme; the other cases mean little until this passes.", describe(&valid))
        },
    ));

    // 2. One signature character flipped.
    let (id, body) = fresh(&base_body);
    let mut tampered = signed(&id, now, &body)?;
    if let Some(h) = tampered
        .headers
        .iter_mut()
        .find(|h| h.name == scheme.signature_header)
    {
        flip_signature_char(&mut h.value);
    }
    let attempt = client.send(url, &tampered, "probe", None).await?;
    slowest = slowest.max(case(
        "tampered_signature",
        "4xx",
        verdict_4xx(&attempt),
        &[&attempt],
        if is_4xx(attempt.status) {
            format!("A signature with one character changed was refused ({}).", describe(&attempt))
        } else {
            format!("A signature with one character changed was not refused ({}): the handler does not verify signatures, or not in full.", describe(&attempt))
        },
    ));

    // 3. No signature header.
    let (id, body) = fresh(&base_body);
    let mut unsigned = signed(&id, now, &body)?;
    unsigned
        .headers
        .retain(|h| h.name != scheme.signature_header);
    let attempt = client.send(url, &unsigned, "probe", None).await?;
    slowest = slowest.max(case(
        "missing_signature",
        "4xx",
        verdict_4xx(&attempt),
        &[&attempt],
        if is_4xx(attempt.status) {
            format!("A delivery without the {} header was refused ({}).", scheme.signature_header, describe(&attempt))
        } else {
            format!("A delivery without the {} header was accepted ({}): anyone can post to this handler.", scheme.signature_header, describe(&attempt))
        },
    ));

    // 4 and 5. Stale and future timestamps, correctly signed.
    for (name, offset, label) in [
        ("stale_timestamp", -600i64, "10 minutes old"),
        ("future_timestamp", 600, "10 minutes in the future"),
    ] {
        if !scheme.signs_timestamp() {
            case(
                name,
                "4xx",
                Verdict::Skipped,
                &[],
                format!("{} signs no timestamp.", scheme.label),
            );
            continue;
        }
        if offset > 0 && scheme.future == FuturePolicy::Warn {
            case(
                name,
                "any",
                Verdict::Skipped,
                &[],
                format!("{}'s own libraries accept future timestamps.", scheme.label),
            );
            continue;
        }
        let (id, body) = fresh(&base_body);
        let attempt = client
            .send(url, &signed(&id, now + offset, &body)?, "probe", None)
            .await?;
        slowest = slowest.max(case(
            name,
            "4xx",
            verdict_4xx(&attempt),
            &[&attempt],
            if is_4xx(attempt.status) {
                format!("A correctly signed delivery {label} was refused ({}).", describe(&attempt))
            } else {
                format!("A correctly signed delivery {label} was accepted ({}): the handler does not check the timestamp, so a captured delivery can be replayed.", describe(&attempt))
            },
        ));
    }

    // 6. The same event twice (a retry: fresh timestamp and signature, same id).
    let (id, body) = fresh(&base_body);
    let first = client
        .send(url, &signed(&id, now, &body)?, "probe", None)
        .await?;
    let second = client
        .send(url, &signed(&id, now + 1, &body)?, "probe", None)
        .await?;
    let both = is_2xx(first.status) && is_2xx(second.status);
    slowest = slowest.max(case(
        "replay_same_event",
        "2xx twice",
        if both { Verdict::Pass } else { Verdict::Fail },
        &[&first, &second],
        if both {
            format!("A retry of the same event was acknowledged both times ({}, then {}); make sure it was processed once.", describe(&first), describe(&second))
        } else {
            format!("A retry of the same event was not acknowledged ({}, then {}): a sender keeps retrying a non-2xx for hours; answer 2xx to duplicates and skip the work.", describe(&first), describe(&second))
        },
    ));

    // 7. Valid signature over JSON with unusual spacing and key order.
    let (id, body) = fresh(&base_body);
    match respaced(&body) {
        Some(spaced) => {
            let attempt = client
                .send(url, &signed(&id, now, &spaced)?, "probe", None)
                .await?;
            let ok = is_2xx(attempt.status);
            slowest = slowest.max(case(
                "respaced_json",
                "2xx",
                if ok { Verdict::Pass } else { Verdict::Fail },
                &[&attempt],
                if ok {
                    format!("A valid signature over re-spaced, re-ordered JSON was accepted ({}): the handler verifies the raw bytes.", describe(&attempt))
                } else {
                    format!("A valid signature over re-spaced, re-ordered JSON was refused ({}): the handler verifies a re-serialised body, not the raw bytes it received; read the raw body before any JSON parsing.", describe(&attempt))
                },
            ));
        }
        None => {
            case(
                "respaced_json",
                "2xx",
                Verdict::Skipped,
                &[],
                "The probe body is not a JSON object.".into(),
            );
        }
    }

    // 8. Two signatures during a rotation, one valid.
    let (id, body) = fresh(&base_body);
    if matches!(
        scheme.family,
        Family::StandardWebhooks | Family::Stripe | Family::Paddle
    ) {
        let other = match scheme.family {
            Family::StandardWebhooks => Secret::new(format!(
                "whsec_{}",
                base64::engine::general_purpose::STANDARD.encode([42u8; 32])
            )),
            _ => Secret::new("an-old-secret-being-rotated-out"),
        };
        let mut both_secrets = vec![other];
        both_secrets.extend(secrets.iter().cloned());
        let mut rotation = signed(&id, now, &body)?;
        let rotated = scheme.sign(&both_secrets, &id, now, &body)?;
        rotation
            .headers
            .retain(|h| !rotated.iter().any(|r| r.name == h.name));
        rotation.headers.extend(rotated);
        let attempt = client.send(url, &rotation, "probe", None).await?;
        let ok = is_2xx(attempt.status);
        slowest = slowest.max(case(
            "rotation_two_signatures",
            "2xx",
            if ok { Verdict::Pass } else { Verdict::Fail },
            &[&attempt],
            if ok {
                format!("A header with two signatures, only the second valid, was accepted ({}).", describe(&attempt))
            } else {
                format!("A header with two signatures, only the second valid, was refused ({}): during a secret rotation the handler would reject every delivery; try each signature.", describe(&attempt))
            },
        ));
    } else {
        case(
            "rotation_two_signatures",
            "2xx",
            Verdict::Skipped,
            &[],
            format!("{} carries one signature per header.", scheme.label),
        );
    }

    // 9. Answer time.
    let limit = client.timeout;
    let verdict = if slowest > limit.as_millis() as u64 {
        Verdict::Fail
    } else if slowest > SLOW_ANSWER.as_millis() as u64 {
        Verdict::Warn
    } else {
        Verdict::Pass
    };
    cases.push(ProbeCase {
        name: "answer_time".into(),
        expected: format!("well under {} s", limit.as_secs()),
        verdict: verdict.clone(),
        statuses: Vec::new(),
        latency_ms: slowest,
        detail: match verdict {
            Verdict::Pass => format!("The slowest answer took {slowest} ms, well inside a sender's timeout."),
            Verdict::Warn => format!("The slowest answer took {slowest} ms: record the delivery and answer first, do the work on a queue."),
            _ => format!("The slowest answer took {slowest} ms, over the {} s a sender waits: it would retry, racing the first attempt.", limit.as_secs()),
        },
    });
    let passed = cases.iter().all(|c| c.verdict != Verdict::Fail);
    Ok(ProbeReport {
        url: url.to_string(),
        scheme: scheme.name.clone(),
        cases,
        passed,
    })
}

fn verdict_4xx(attempt: &Attempt) -> Verdict {
    if is_4xx(attempt.status) {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

/// Changes one character of the signature proper (after its prefix), keeping it well-formed.
fn flip_signature_char(value: &mut [u8]) {
    // The last character of the value belongs to a signature in every layout; base64 padding
    // (`=`) is skipped so the value still decodes.
    if let Some(i) = value.iter().rposition(|b| b.is_ascii_alphanumeric()) {
        value[i] = match value[i] {
            b'a' => b'b',
            b'0' => b'1',
            b'A' => b'B',
            _ => {
                if value[i].is_ascii_digit() {
                    b'0'
                } else if value[i].is_ascii_uppercase() {
                    b'A'
                } else {
                    b'a'
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn respaced_json_is_the_same_value_in_other_bytes() {
        let body = br#"{"id":"e1","type":"job.completed","data":{"a":1}}"#;
        let spaced = respaced(body).expect("json");
        assert_ne!(spaced, body.to_vec());
        let a: serde_json::Value = serde_json::from_slice(body).expect("json");
        let b: serde_json::Value = serde_json::from_slice(&spaced).expect("json");
        assert_eq!(a, b);
    }

    #[test]
    fn flipping_changes_exactly_one_character() {
        let mut value = b"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".to_vec();
        let before = value.clone();
        flip_signature_char(&mut value);
        assert_eq!(value.iter().zip(&before).filter(|(a, b)| a != b).count(), 1);
        assert!(value.ends_with(b"="));
    }

    #[test]
    fn https_is_refused_with_a_sentence() {
        let err = check_url("https://example.com/hook").expect_err("https");
        assert!(err.to_string().contains("plain http only"));
    }
}
