//! Handlers written for the tests: real axum servers on loopback whose verification follows
//! the schemes' specifications (HMAC over the raw bytes), independent of hookscope's own
//! verifier. A `Server` records every request it gets.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{KeyInit, Mac};

use super::now_secs;

pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[derive(Clone, Copy, PartialEq)]
pub enum Flavour {
    Correct,
    Reserializes,
    IgnoresTimestamps,
    RejectsDuplicates,
    /// Deduplicates on the job id, answering 409 to any event of a job seen before.
    DedupesOnJobId,
    /// Does its work inline: answers after 1.5 s.
    WorksInline,
}

/// Every request a handler saw: headers and raw body.
pub type Received = Arc<Mutex<Vec<(HeaderMap, Vec<u8>)>>>;

#[derive(Clone)]
pub struct Handler {
    pub flavour: Flavour,
    pub seen: Arc<Mutex<HashSet<String>>>,
    pub received: Received,
    pub answer: StatusCode,
}

pub fn hmac_b64(key: &[u8], message: &[u8]) -> String {
    let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(key).expect("key");
    mac.update(message);
    B64.encode(mac.finalize().into_bytes())
}

/// Standard Webhooks verification as the specification describes it.
pub async fn standard_webhooks(
    State(h): State<Handler>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    h.received
        .lock()
        .expect("lock")
        .push((headers.clone(), body.to_vec()));
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (Some(id), Some(ts), Some(signatures)) = (
        text("webhook-id"),
        text("webhook-timestamp"),
        text("webhook-signature"),
    ) else {
        return StatusCode::BAD_REQUEST;
    };
    let Ok(ts_value) = ts.parse::<i64>() else {
        return StatusCode::BAD_REQUEST;
    };
    if h.flavour != Flavour::IgnoresTimestamps && (now_secs() - ts_value).abs() > 300 {
        return StatusCode::BAD_REQUEST;
    }
    let signed_body = if h.flavour == Flavour::Reserializes {
        // What a framework's JSON middleware hands over: parsed, then written back compact.
        let text = String::from_utf8_lossy(&body).into_owned();
        match hookscope::domain::pretty::pretty_json(&text) {
            Some(p) => p
                .spans
                .iter()
                .map(|(s, e, _)| &p.text[*s..*e])
                .collect::<String>()
                .into_bytes(),
            None => return StatusCode::BAD_REQUEST,
        }
    } else {
        body.to_vec()
    };
    let key = B64
        .decode(SECRET.trim_start_matches("whsec_"))
        .expect("key");
    let expected = hmac_b64(
        &key,
        &[id.as_bytes(), b".", ts.as_bytes(), b".", &signed_body].concat(),
    );
    let matched = signatures
        .split(' ')
        .any(|s| s.strip_prefix("v1,") == Some(expected.as_str()));
    if !matched {
        return StatusCode::UNAUTHORIZED;
    }
    if h.flavour == Flavour::DedupesOnJobId {
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let job = ["/job_id", "/data/job_id", "/data/id"]
            .iter()
            .find_map(|p| json.pointer(p).and_then(|v| v.as_str()))
            .unwrap_or("")
            .to_string();
        if !h.seen.lock().expect("lock").insert(format!("job:{job}")) {
            return StatusCode::CONFLICT;
        }
        return h.answer;
    }
    let first = h.seen.lock().expect("lock").insert(id);
    if !first && h.flavour == Flavour::RejectsDuplicates {
        return StatusCode::CONFLICT;
    }
    if h.flavour == Flavour::WorksInline {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    }
    h.answer
}

/// Stripe's scheme: HMAC-SHA256 over `{t}.{body}` with the whole secret, hex, any `v1`.
pub async fn stripe(State(h): State<Handler>, headers: HeaderMap, body: Bytes) -> StatusCode {
    h.received
        .lock()
        .expect("lock")
        .push((headers.clone(), body.to_vec()));
    let Some(header) = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok())
    else {
        return StatusCode::BAD_REQUEST;
    };
    let t = header
        .split(',')
        .find_map(|p| p.strip_prefix("t="))
        .unwrap_or("");
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(b"whsec_stripe_test").expect("key");
    mac.update(format!("{t}.").as_bytes());
    mac.update(&body);
    let expected = hex::encode(mac.finalize().into_bytes());
    let fresh = t.parse::<i64>().is_ok_and(|t| now_secs() - t <= 300);
    if fresh
        && header
            .split(',')
            .any(|p| p.strip_prefix("v1=") == Some(expected.as_str()))
    {
        StatusCode::OK
    } else {
        StatusCode::UNAUTHORIZED
    }
}

/// Records what it gets and answers a fixed status.
pub async fn record(State(h): State<Handler>, headers: HeaderMap, body: Bytes) -> StatusCode {
    h.received
        .lock()
        .expect("lock")
        .push((headers, body.to_vec()));
    h.answer
}

pub struct Server {
    pub addr: SocketAddr,
    pub handler: Handler,
    _runtime: tokio::runtime::Runtime,
}

fn handler_and_runtime(flavour: Flavour, answer: StatusCode) -> (Handler, tokio::runtime::Runtime) {
    let handler = Handler {
        flavour,
        seen: Arc::default(),
        received: Arc::default(),
        answer,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    (handler, runtime)
}

fn router(handler: &Handler) -> axum::Router {
    axum::Router::new()
        .route("/webhooks", axum::routing::post(standard_webhooks))
        .route("/stripe", axum::routing::post(stripe))
        .route("/record", axum::routing::any(record))
        .with_state(handler.clone())
}

pub fn serve(flavour: Flavour, answer: StatusCode) -> Server {
    let (handler, runtime) = handler_and_runtime(flavour, answer);
    let app = router(&handler);
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    runtime.spawn(async move { axum::serve(listener, app).await });
    Server {
        addr,
        handler,
        _runtime: runtime,
    }
}

/// The same handler over TLS, with a certificate for `localhost` and `127.0.0.1` generated now
/// and signed by nobody (a developer's self-signed certificate).
pub fn serve_tls(flavour: Flavour, answer: StatusCode) -> Server {
    let (handler, runtime) = handler_and_runtime(flavour, answer);
    let addr = spawn_tls(&runtime, router(&handler));
    Server {
        addr,
        handler,
        _runtime: runtime,
    }
}

/// Serves `app` over TLS on a free loopback port, with a certificate for `localhost` and
/// `127.0.0.1` generated now and signed by nobody (a developer's self-signed certificate).
pub fn spawn_tls(runtime: &tokio::runtime::Runtime, app: axum::Router) -> SocketAddr {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("certificate");
    let cert = certified.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    runtime.spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                // A client that refuses the certificate ends the handshake: nothing to serve.
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper_util::service::TowerToHyperService::new(app);
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    addr
}
