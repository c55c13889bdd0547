//! The embedded HTTP receiver: accepts any method on any path, keeps the exact bytes, checks the
//! delivery, commits it to the store, and only then answers.
//!
//! It runs on its own named thread with its own tokio runtime, so the GUI or the CLI that
//! started it never shares an executor with request handling. The listening socket is bound
//! before the thread starts, so "port in use" is reported to the caller at once.

use std::net::{IpAddr, SocketAddr, TcpListener as StdListener};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;
use tokio::sync::{mpsc, oneshot};

use crate::capture::{self, Controls, Decision, How, Received, Reply, SharedSettings};
use crate::config::Settings;
use crate::domain::attempt::AttemptKind;
use crate::domain::clock::now_ms;
use crate::domain::delivery::{Delivery, Header};
use crate::domain::endpoint::Endpoint;
use crate::domain::fmt::exact_size;
use crate::store::{NewRecord, Routed, StoreWriter, StoredDelivery};

/// Errors starting the receiver.
#[derive(Debug, thiserror::Error)]
pub enum ReceiverError {
    /// Another program already listens on the port.
    #[error(
        "port {port} is already in use on {ip}: stop the other program or choose another port (port 0 picks a free one)"
    )]
    PortInUse {
        /// The address.
        ip: IpAddr,
        /// The port.
        port: u16,
    },
    /// Binding failed for another reason (permissions, an address not on this machine).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The receiver's thread or runtime could not start.
    #[error("cannot start the receiver: {0}")]
    Start(std::io::Error),
}

/// What every live source's pipeline reads and writes through.
pub(crate) struct Shared {
    pub(crate) settings: SharedSettings,
    pub(crate) writer: StoreWriter,
    events: Option<mpsc::Sender<StoredDelivery>>,
    controls: Arc<Controls>,
    client: Option<crate::net::client::Client>,
    /// The forwarding client that accepts any certificate (`forward_insecure`).
    insecure_client: Option<crate::net::client::Client>,
}

/// A running receiver. Dropping it stops it.
pub struct Receiver {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The pipeline, for the other live sources (the relay) run on the receiver's runtime.
    shared: Arc<Shared>,
    runtime: tokio::runtime::Handle,
}

impl Receiver {
    /// Binds `ip:port` (port 0 picks a free port) and starts serving on a new thread. Each
    /// stored delivery is sent on `events` (when given) before it is answered.
    pub fn start(
        ip: IpAddr,
        port: u16,
        settings: SharedSettings,
        writer: StoreWriter,
        events: Option<mpsc::Sender<StoredDelivery>>,
        controls: Arc<Controls>,
    ) -> Result<Receiver, ReceiverError> {
        let addr = SocketAddr::new(ip, port);
        let listener = StdListener::bind(addr).map_err(|source| {
            if source.kind() == std::io::ErrorKind::AddrInUse {
                ReceiverError::PortInUse { ip, port }
            } else {
                ReceiverError::Bind { addr, source }
            }
        })?;
        listener
            .set_nonblocking(true)
            .map_err(ReceiverError::Start)?;
        let addr = listener.local_addr().map_err(ReceiverError::Start)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hookscope-receiver-worker")
            .enable_all()
            .build()
            .map_err(ReceiverError::Start)?;
        let shared = Arc::new(Shared {
            settings,
            writer,
            events,
            controls,
            client: crate::net::client::Client::new(crate::net::client::DEFAULT_TIMEOUT).ok(),
            insecure_client: crate::net::client::Client::with_tls(
                crate::net::client::DEFAULT_TIMEOUT,
                crate::net::client::Tls::AcceptInvalid,
            )
            .ok(),
        });
        let (shutdown, shutdown_signal) = oneshot::channel::<()>();
        let (runtime_handle, pipeline) = (runtime.handle().clone(), Arc::clone(&shared));
        let thread = std::thread::Builder::new()
            .name("hookscope-receiver".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("hookscope: the receiver could not start: {e}");
                            return;
                        }
                    };
                    let app = Router::new().fallback(handle).with_state(shared);
                    let served = axum::serve(
                        listener,
                        app.into_make_service_with_connect_info::<SocketAddr>(),
                    )
                    .with_graceful_shutdown(async {
                        let _ = shutdown_signal.await;
                    })
                    .await;
                    if let Err(e) = served {
                        eprintln!("hookscope: the receiver stopped: {e}");
                    }
                });
                // In-flight handlers have answered; give their tasks a moment, then drop them.
                runtime.shutdown_timeout(Duration::from_secs(2));
            })
            .map_err(ReceiverError::Start)?;
        Ok(Receiver {
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
            shared: pipeline,
            runtime: runtime_handle,
        })
    }

    /// Runs another live source (the relay) on the receiver's runtime, through its pipeline;
    /// it stops with the receiver.
    pub(crate) fn spawn_source<F>(
        &self,
        source: impl FnOnce(Arc<Shared>) -> F,
    ) -> tokio::task::AbortHandle
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.runtime
            .spawn(source(Arc::clone(&self.shared)))
            .abort_handle()
    }

    /// The address actually bound (with the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, lets in-flight requests finish, and waits for the thread.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

enum BodyOutcome {
    Whole(Vec<u8>),
    TooLarge { seen: u64, declared: bool },
    Cut { seen: u64, error: String },
}

async fn read_body(body: Body, limit: usize) -> BodyOutcome {
    let mut body = body;
    // Room for what the sender declared (up to the limit): a large body is not copied again
    // each time the buffer doubles.
    let declared = usize::try_from(axum::body::HttpBody::size_hint(&body).lower()).unwrap_or(limit);
    let mut bytes = Vec::with_capacity(declared.min(limit));
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    if bytes.len() + data.len() > limit {
                        return BodyOutcome::TooLarge {
                            seen: (bytes.len() + data.len()) as u64,
                            declared: false,
                        };
                    }
                    bytes.extend_from_slice(data);
                }
            }
            Err(e) => {
                return BodyOutcome::Cut {
                    seen: bytes.len() as u64,
                    error: e.to_string(),
                };
            }
        }
    }
    BodyOutcome::Whole(bytes)
}

/// One delivery, from the socket to the answer: read → decide (`capture::decide`) → store →
/// (forward) → answer. Nothing is acknowledged before its transaction has committed.
async fn handle(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let started = Instant::now();
    let settings = shared.settings.get();
    let received = read(request, peer, now_ms(), settings.body_limit).await;
    // The endpoint, looked up once for the checks, the forward and the answer.
    let endpoint = settings.endpoint_for(&received.delivery.path);
    let Decision { mut record, reply } = match decided(&shared, &settings, endpoint, received).await
    {
        Ok(decision) => decision,
        Err(response) => return response,
    };
    record.latency_ms = latency_ms(started, &reply);
    match store(&shared, record).await {
        Ok(stored) => finish(&shared, endpoint, &settings, stored, reply).await,
        Err(response) => response,
    }
}

/// The latency a delivery is recorded with: from arrival to its answer, the endpoint's delay
/// included.
pub(crate) fn latency_ms(started: Instant, reply: &Reply) -> u64 {
    let delay_ms = match reply {
        Reply::Endpoint { delay_ms, .. } => *delay_ms,
        Reply::Handshake(_) | Reply::Recorded => 0,
    };
    started.elapsed().as_millis() as u64 + delay_ms
}

/// A stored delivery's way to its answer, for every live source: a handshake's exact answer at
/// once; otherwise its forwards, the endpoint's delay, then the endpoint's answer (or the
/// mirrored handler's).
pub(crate) async fn finish(
    shared: &Shared,
    endpoint: &Endpoint,
    settings: &Settings,
    mut stored: StoredDelivery,
    reply: Reply,
) -> Response {
    let (status, delay_ms) = match reply {
        Reply::Handshake(reply) => return answer_handshake(shared, stored, reply).await,
        Reply::Endpoint { status, delay_ms } => (status, delay_ms),
        Reply::Recorded => (stored.response_status, 0),
    };
    let status = forward(shared, endpoint, &mut stored, status).await;
    if delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    }
    let answer_as = Answer {
        status,
        body: endpoint.respond_body.as_deref(),
        headers: &endpoint.respond_headers,
        limit: settings.body_limit,
    };
    answer(shared, stored, answer_as).await
}

/// Reports a stored handshake to the front end, then sends the provider exactly the answer
/// its handshake expects: the status, the content type, the headers and the body.
async fn answer_handshake(
    shared: &Shared,
    stored: StoredDelivery,
    reply: crate::domain::handshake::Reply,
) -> Response {
    let id = report(shared, stored).await;
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
    response(
        status,
        reply.content_type.as_deref(),
        reply.body,
        &reply.headers,
        id,
    )
}

/// Sends the stored delivery to the front end's channel; answers its id. Waiting here (not
/// dropping) keeps `--json` output complete under load.
async fn report(shared: &Shared, stored: StoredDelivery) -> i64 {
    let id = stored.id;
    if let Some(events) = &shared.events {
        let _ = events.send(stored).await;
    }
    id
}

/// An answer: the status, the content type (none when `None`), the body, then `headers` (a
/// `content-type` among them wins; one HTTP cannot carry is left out) and the delivery's id.
fn response(
    status: StatusCode,
    content_type: Option<&str>,
    body: String,
    headers: &[(String, String)],
    id: i64,
) -> Response {
    let mut response = (status, body).into_response();
    let out = response.headers_mut();
    out.remove(header::CONTENT_TYPE);
    let content_type = content_type.map(|t| ("content-type", t));
    for (name, value) in content_type
        .into_iter()
        .chain(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())))
    {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            out.insert(name, value);
        }
    }
    if let Ok(value) = HeaderValue::from_str(&id.to_string()) {
        out.insert("x-hookscope-delivery-id", value);
    }
    response
}

/// How to answer: the status, and the endpoint's own body and headers when it has them.
struct Answer<'a> {
    status: u16,
    body: Option<&'a str>,
    headers: &'a [(String, String)],
    limit: usize,
}

/// Reads the request: headers as sent, the body whole up to `limit` (over it, or cut short, the
/// delivery keeps its headers and size and is marked incomplete).
async fn read(request: Request, peer: SocketAddr, received_at_ms: i64, limit: usize) -> Received {
    let (parts, body) = request.into_parts();
    let declared_len = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let outcome = match declared_len {
        // Refuse at once rather than read a body we will not keep.
        Some(len) if len > limit as u64 => BodyOutcome::TooLarge {
            seen: len,
            declared: true,
        },
        _ => read_body(body, limit).await,
    };
    let (body, body_size, body_complete, note, forced_status) = match outcome {
        BodyOutcome::Whole(bytes) => {
            let size = bytes.len() as u64;
            (bytes, size, true, None, None)
        }
        BodyOutcome::TooLarge { seen, declared } => {
            let size_text = if declared {
                format!("{seen} bytes")
            } else {
                format!("at least {seen} bytes")
            };
            (
                Vec::new(),
                seen,
                false,
                Some(format!(
                    "The body ({size_text}) is over the {} limit: answered 413 and kept the headers only.",
                    exact_size(limit)
                )),
                Some(413u16),
            )
        }
        BodyOutcome::Cut { seen, error } => (
            Vec::new(),
            seen,
            false,
            Some(format!(
                "The client stopped sending after {seen} bytes of the body ({error}); the delivery is incomplete and was not acknowledged."
            )),
            Some(400u16),
        ),
    };
    let delivery = Delivery {
        received_at_ms,
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| Header {
                name: name.as_str().to_string(),
                value: value.as_bytes().to_vec(),
            })
            .collect(),
        body,
        body_size,
        body_complete,
        remote_addr: Some(peer.to_string()),
    };
    Received {
        delivery,
        how: How::Live {
            refused: forced_status.zip(note),
        },
    }
}

/// The capture pipeline's decision (`capture::decide`). A failed signature is diagnosed by
/// re-computing it many ways; over a large body that is real CPU work, so it leaves the async
/// workers free.
pub(crate) async fn decided(
    shared: &Arc<Shared>,
    settings: &Arc<Settings>,
    endpoint: &Endpoint,
    received: Received,
) -> Result<Decision, Response> {
    if received.delivery.body.len() <= 64 * 1024 {
        return Ok(capture::decide(endpoint, received, &shared.controls));
    }
    // The blocking pool takes owned values: the endpoint is found again there.
    let (settings, controls) = (Arc::clone(settings), Arc::clone(&shared.controls));
    tokio::task::spawn_blocking(move || {
        let endpoint = settings.endpoint_for(&received.delivery.path);
        capture::decide(endpoint, received, &controls)
    })
    .await
    .map_err(|e| {
        eprintln!("hookscope: checking a delivery failed: {e}");
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "hookscope could not check this delivery\n",
        )
            .into_response()
    })
}

/// Commits the delivery. Not stored means not acknowledged: a 503 makes the sender retry later.
async fn store(shared: &Shared, record: NewRecord) -> Result<StoredDelivery, Response> {
    let path = record.delivery.path.clone();
    shared.writer.insert(record).await.map_err(|e| {
        // A store that refuses every write (disk full, read-only, gone) is said once by the
        // front end that watches the store's health; a failure of this delivery alone is said
        // here.
        if !matches!(e, crate::store::StoreError::Refused(_)) {
            eprintln!("hookscope: a delivery to {path} could not be stored: {e}");
        }
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(
                header::RETRY_AFTER,
                HeaderValue::from(crate::store::health::RETRY_AFTER_SECS),
            )],
            format!("hookscope could not store this delivery: {e}\n"),
        )
            .into_response()
    })
}

/// Where a delivery is forwarded, and whether the sender gets that handler's answer.
struct Target {
    url: String,
    mirror: bool,
    insecure: bool,
}

/// The targets of a stored delivery: its endpoint's rules whose condition it met when it was
/// stored (`StoredDelivery::routed`, decided in its transaction; none while the endpoint's
/// forwarding is switched off), then the receiver-wide target (`listen --forward-to`, the
/// window's switch).
fn targets(shared: &Shared, endpoint: &Endpoint, stored: &StoredDelivery) -> Vec<Target> {
    let mut targets = Vec::new();
    match &stored.routed {
        Routed::NotRouted => {}
        routed => {
            // Undecided: the conditional rules are not applied (and the delivery is not marked
            // unrouted); a rule without a condition still takes it.
            let met = match routed {
                Routed::Met(met) => met.as_slice(),
                Routed::Undecided(why) => {
                    eprintln!(
                        "hookscope: forwarding rules cannot be decided for delivery #{}: {why}",
                        stored.id
                    );
                    &[]
                }
                Routed::NotRouted => &[],
            };
            let mut met = met.iter();
            for rule in &endpoint.forward {
                // A rule without a condition takes every delivery.
                if rule.filter.is_none() || met.next().copied().unwrap_or(false) {
                    targets.push(Target {
                        url: rule.to.clone(),
                        mirror: rule.mirror,
                        insecure: rule.insecure,
                    });
                }
            }
        }
    }
    if let Some(url) = shared.controls.forward_url() {
        targets.push(Target {
            url,
            mirror: shared.controls.mirror_response.load(Ordering::SeqCst),
            insecure: shared.controls.forward_insecure.load(Ordering::SeqCst),
        });
    }
    targets
}

/// Forwards the stored delivery to each of its targets, recording each attempt; returns the
/// status to answer (the mirrored handler's, when a target mirrors; 502 when it gave none),
/// recorded on the delivery in the mirrored attempt's own transaction.
async fn forward(
    shared: &Shared,
    endpoint: &Endpoint,
    stored: &mut StoredDelivery,
    status: u16,
) -> u16 {
    let targets = targets(shared, endpoint, stored);
    if targets.is_empty() {
        return status;
    }
    let id = stored.id;
    let outgoing = Arc::new(crate::net::client::prepare_forward(stored));
    let mut mirrored = None;
    for target in targets {
        let client = if target.insecure {
            shared.insecure_client.clone()
        } else {
            shared.client.clone()
        };
        let Some(client) = client else {
            continue;
        };
        let mirror = target.mirror && mirrored.is_none();
        let (writer, outgoing, url) = (shared.writer.clone(), Arc::clone(&outgoing), target.url);
        let sent = async move {
            let attempt = match client
                .send(&url, &outgoing, AttemptKind::Forward, Some(id))
                .await
            {
                Ok(attempt) => attempt,
                Err(e) => {
                    let url = crate::domain::delivery::masked_url(&url);
                    eprintln!("hookscope: delivery #{id} could not be forwarded to {url}: {e}");
                    not_sent(id, url, &outgoing, e.to_string())
                }
            };
            // The sender gets the handler's answer (502 when it gave none), so a failing
            // handler earns retries, as it would in production; the delivery says so.
            let answered = attempt.status.unwrap_or(502);
            let note = mirror.then(|| {
                format!(
                    "Answered {answered}, the forwarded handler's status ({}).",
                    capture::MIRRORED
                )
            });
            let recorded = note.clone().map(|note| (answered, note));
            if let Err(e) = writer.attempt_answered(attempt, recorded).await {
                eprintln!(
                    "hookscope: the forward of delivery #{id} to {} could not be recorded: {e}",
                    crate::domain::delivery::masked_url(&url)
                );
            }
            (answered, note)
        };
        if mirror {
            mirrored = Some(sent);
        } else {
            tokio::spawn(sent);
        }
    }
    let Some(sent) = mirrored else {
        return status;
    };
    // What the store now says of it, so the front end shows the same.
    let (answered, note) = sent.await;
    if let Some(note) = note {
        stored.response_status = answered;
        stored.note = Some(match stored.note.take() {
            Some(before) => format!("{before} {note}"),
            None => note,
        });
    }
    answered
}

/// The attempt of a forward that could not even be made (a header the client refuses), with why.
fn not_sent(
    id: i64,
    url: String,
    outgoing: &crate::net::client::Outgoing,
    error: String,
) -> crate::domain::attempt::Attempt {
    let request = (outgoing.headers.clone(), outgoing.body.clone());
    crate::domain::attempt::Attempt {
        error: Some(error),
        ..crate::domain::attempt::Attempt::unanswered(
            AttemptKind::Forward,
            url,
            Some(id),
            now_ms(),
            request,
        )
    }
}

/// Reports the stored delivery to the front end, then answers the sender: the endpoint's body
/// and headers when it has them (a refused body always gets hookscope's own explanation).
async fn answer(shared: &Shared, stored: StoredDelivery, how: Answer<'_>) -> Response {
    let id = report(shared, stored).await;
    let status = StatusCode::from_u16(how.status).unwrap_or(StatusCode::OK);
    let (body, content_type) = match (status == StatusCode::PAYLOAD_TOO_LARGE, how.body) {
        (true, _) => (
            format!(
                "{{\"error\":\"body over the {} limit\",\"delivery_id\":{id}}}\n",
                exact_size(how.limit)
            ),
            "application/json",
        ),
        (false, Some(body)) => {
            let json = body.trim_start().starts_with(['{', '[']);
            let kind = if json {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            (body.to_string(), kind)
        }
        (false, None) => (
            format!("{{\"received\":true,\"delivery_id\":{id}}}\n"),
            "application/json",
        ),
    };
    // A refused body always gets hookscope's own explanation, without the endpoint's headers.
    let headers = if status == StatusCode::PAYLOAD_TOO_LARGE {
        &[]
    } else {
        how.headers
    };
    response(status, Some(content_type), body, headers, id)
}
