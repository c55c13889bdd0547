//! Driving the developer's own handler: resend a capture (as captured or re-signed), forward
//! deliveries as they arrive, and probe a handler with the cases every receiver must handle.
//!
//! Requests go over HTTP/1.1, plain or over TLS (rustls with the ring provider, the platform's
//! trusted roots); redirects are not followed, as webhook senders do not follow them. A client
//! made with [`Tls::AcceptInvalid`] accepts any certificate, for a handler on a self-signed
//! development certificate.

use std::time::{Duration, Instant};

use crate::domain::attempt::{Attempt, AttemptKind};
use crate::domain::delivery::{Header, masked_url};
use crate::domain::scheme::{Scheme, Secret, new_event_id};
use crate::store::StoredDelivery;

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
    Sign(#[from] crate::domain::scheme::KeyError),
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

/// How a client treats the certificates of https:// handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tls {
    /// Verify the chain against the platform's trusted roots and the host name.
    #[default]
    Verify,
    /// Accept any certificate (`--insecure`): for a self-signed development certificate only.
    AcceptInvalid,
}

impl Tls {
    /// The policy an `--insecure` switch (or the window's checkbox) asks for.
    pub fn insecure_if(insecure: bool) -> Tls {
        if insecure {
            Tls::AcceptInvalid
        } else {
            Tls::Verify
        }
    }
}

/// An HTTP client for the developer's handlers.
#[derive(Debug, Clone)]
pub struct Client {
    inner: reqwest::Client,
    timeout: Duration,
    tls: Tls,
    /// What a refused certificate's sentence suggests, for the front end that configured it.
    insecure_hint: &'static str,
}

pub(crate) fn check_url(url: &str) -> Result<reqwest::Url, SendError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| SendError::BadUrl(format!("\"{}\" is not a URL: {e}", masked_url(url))))?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(SendError::BadUrl(format!(
            "\"{}\": {other}:// is not http or https",
            masked_url(url)
        ))),
    }
}

/// Makes ring the process's TLS provider, once (rustls needs one chosen; aws-lc is avoided for
/// its long C build).
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have chosen one already; that one is used then.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The TLS failure behind a request error, in words, when there is one.
fn tls_failure(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    // The rustls error sits inside io::Errors nested in io::Errors, whose `source()` skips the
    // inner error itself: look through `get_ref` as well as `source`.
    fn find<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        let inner = e.downcast_ref::<std::io::Error>()?.get_ref()?;
        find(inner)
    }
    let mut current = Some(error);
    while let Some(e) = current {
        let tls = find(e);
        if let Some(tls) = tls {
            return Some(match tls {
                rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer) => {
                    "its certificate is not signed by an authority this machine trusts (a self-signed development certificate?)".into()
                }
                rustls::Error::InvalidCertificate(
                    rustls::CertificateError::NotValidForName
                    | rustls::CertificateError::NotValidForNameContext { .. },
                ) => "its certificate is not valid for this host name".into(),
                rustls::Error::InvalidCertificate(
                    rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. },
                ) => "its certificate has expired".into(),
                other => other.to_string(),
            });
        }
        current = e.source();
    }
    None
}

/// What a refused certificate's sentence suggests by default (resend, probe, forward).
/// The front ends give their own ([`Client::with_insecure_hint`]); this one names no front end's
/// control.
const INSECURE_HINT: &str = "; for a development certificate, accept self-signed certificates";

impl Client {
    /// Sends a provider's handshake challenge to the handler at `url`, as an attempt of `kind`.
    pub async fn send_challenge(
        &self,
        url: &str,
        challenge: &crate::domain::handshake::Challenge,
        kind: AttemptKind,
    ) -> Result<Attempt, SendError> {
        let outgoing = Outgoing {
            method: challenge.method.into(),
            headers: challenge.headers.clone(),
            body: challenge.body.clone(),
        };
        self.send(&challenge.url_for(url), &outgoing, kind, None)
            .await
    }

    /// A client with a timeout per request that verifies certificates.
    pub fn new(timeout: Duration) -> Result<Client, SendError> {
        Client::with_tls(timeout, Tls::Verify)
    }

    /// A client with a timeout per request and the given certificate policy.
    pub fn with_tls(timeout: Duration, tls: Tls) -> Result<Client, SendError> {
        install_tls_provider();
        let inner = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .tls_danger_accept_invalid_certs(tls == Tls::AcceptInvalid)
            .build()
            .map_err(|e| SendError::Build(e.to_string()))?;
        Ok(Client {
            inner,
            timeout,
            tls,
            insecure_hint: INSECURE_HINT,
        })
    }

    /// The same client, suggesting `hint` when a certificate is refused (a front end whose
    /// switch for development certificates is not `--insecure`).
    pub fn with_insecure_hint(mut self, hint: &'static str) -> Client {
        self.insecure_hint = hint;
        self
    }

    /// How long a handler has to answer.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends a request and records what came back; a failure to connect or a timeout is an
    /// attempt with an error, not an `Err`.
    pub async fn send(
        &self,
        url: &str,
        outgoing: &Outgoing,
        kind: AttemptKind,
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
        let sent_at_ms = crate::domain::clock::now_ms();
        let started = Instant::now();
        let result = self
            .inner
            .request(method, parsed)
            .headers(headers)
            .body(outgoing.body.clone())
            .send()
            .await;
        let mut attempt = Attempt::unanswered(
            kind,
            // Where it went, with a credential in the query (Meta's verify token) masked.
            masked_url(url),
            delivery_id,
            sent_at_ms,
            (outgoing.headers.clone(), outgoing.body.clone()),
        );
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
            Err(e) if tls_failure(&e).is_some() => {
                let host = reqwest::Url::parse(url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_string))
                    .unwrap_or_else(|| url.to_string());
                let why = tls_failure(&e).unwrap_or_default();
                let hint = if self.tls == Tls::Verify {
                    self.insecure_hint
                } else {
                    ""
                };
                attempt.error = Some(format!("TLS with {host} failed: {why}{hint}"));
            }
            Err(e) if e.is_connect() => {
                attempt.error = Some(format!(
                    "cannot connect to {}: is the handler running?",
                    attempt.url
                ));
            }
            // Said without reqwest's copy of the URL, which would show a query's token (the
            // attempt keeps the URL, masked).
            Err(e) => attempt.error = Some(e.without_url().to_string()),
        }
        attempt.latency_ms = started.elapsed().as_millis() as u64;
        Ok(attempt)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_and_https_are_accepted_and_other_schemes_refused_with_a_sentence() {
        assert!(check_url("https://example.com/hook").is_ok());
        assert!(check_url("http://localhost:3000/hook").is_ok());
        let err = check_url("ftp://example.com/hook").expect_err("ftp");
        assert_eq!(
            err.to_string(),
            "\"ftp://example.com/hook\": ftp:// is not http or https"
        );
    }
}
