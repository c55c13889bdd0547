//! The relay's HTTP server: the public side a provider posts to (`/in/CHANNEL/…`), and the
//! subscribers' side (`/sub/CHANNEL`: a Server-Sent Events stream of the channel's sealed
//! deliveries, with the answers and acknowledgements posted back).
//!
//! Why Server-Sent Events rather than a WebSocket: a subscriber only reads, SSE's
//! `Last-Event-ID` is the resume point the protocol already has, it is plain HTTP that every
//! proxy passes (Caddy and nginx need no upgrade rule), and the few writes back (an answer, an
//! acknowledgement) are ordinary POSTs.
//!
//! It faces the internet, so hyper is driven by hand rather than through `axum::serve`: each
//! connection counts against a total and a per-address cap, a request's headers must arrive
//! within [`Limits::header_timeout`], and its body at [`Limits::min_body_rate`] or better.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::domain::sync::Lock;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Method, Request, Response, StatusCode, header};
use base64::Engine as _;
use http_body_util::BodyExt as _;
use tokio::sync::{mpsc, oneshot, watch};

use crate::domain::clock::now_ms;
use crate::domain::delivery::Header;
use crate::relay::backing::{Backing, StoreChoice};
use crate::relay::envelope;
use crate::relay::seal::Sealer;
use crate::relay::store::{Channel, RelayStoreError};

/// What the provider is answered when no subscriber answers in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OfflineAnswer {
    /// `202` with `{"relayed": true, "seq": N}`.
    #[default]
    Accepted,
    /// `503` with `Retry-After`, so the provider's own retries are exercised.
    Retry,
}

/// The limits that keep a slow or idle client from holding the relay.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The largest body taken (GitHub's own limit by default).
    pub body_limit: usize,
    /// The time a request's headers may take.
    pub header_timeout: Duration,
    /// The slowest body accepted, in bytes a second, after a first [`Limits::header_timeout`].
    pub min_body_rate: u64,
    /// Open connections, in total.
    pub max_connections: usize,
    /// Open connections from one address.
    pub max_per_address: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            body_limit: 25 * 1024 * 1024,
            header_timeout: Duration::from_secs(10),
            min_body_rate: 16 * 1024,
            max_connections: 4096,
            max_per_address: 128,
        }
    }
}

/// How the relay is run.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where it keeps channels and deliveries.
    pub store: StoreChoice,
    /// The address and port to listen on.
    pub addr: SocketAddr,
    /// A certificate chain and key (PEM) to serve https.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// How long a provider waits for a subscriber's answer.
    pub answer_timeout: Duration,
    /// The answer when none comes.
    pub offline: OfflineAnswer,
    /// The limits.
    pub limits: Limits,
}

/// Errors starting the relay.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The port is taken or the address is not this machine's.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The certificate or key cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// The store cannot be opened.
    #[error(transparent)]
    Store(#[from] RelayStoreError),
}

/// An answer a subscriber gives for a delivery, passed to the provider.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// The headers, in order.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The body, base64.
    #[serde(default)]
    pub body_base64: String,
}

/// A provider's request waiting for an answer, or an answer that came first.
enum Slot {
    Waiting(oneshot::Sender<Answer>),
    Answered(Answer, Instant),
    /// The provider got an answer: later ones are refused.
    Done(Instant),
}

/// A channel as the running relay holds it.
struct Live {
    row: Lock<Channel>,
    sealer: Lock<Sealer>,
    latest: watch::Sender<u64>,
    /// Bumped when the token changes or the channel goes: open streams end.
    revoked: watch::Sender<u64>,
    /// Subscribers that have caught up (the ones that can answer in time).
    live_subscribers: Arc<AtomicUsize>,
    /// The count said last on the cluster's presence subject.
    said_present: std::sync::atomic::AtomicU64,
    slots: Lock<HashMap<u64, Slot>>,
}

struct State {
    options: ServeOptions,
    backing: Backing,
    channels: Lock<HashMap<String, Arc<Live>>>,
    connections: Lock<HashMap<IpAddr, usize>>,
    open: AtomicUsize,
    failures: Lock<HashMap<IpAddr, (u32, Instant)>>,
    in_flight: AtomicUsize,
}

/// The relay, bound and ready to serve.
pub struct Server {
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    state: Arc<State>,
}

impl Server {
    /// Opens the store and binds the address (in a tokio runtime).
    pub async fn bind(options: ServeOptions) -> Result<Server, ServeError> {
        let tls = match &options.tls {
            Some((cert, key)) => {
                Some(crate::relay::tls::acceptor(cert, key).map_err(ServeError::Tls)?)
            }
            None => None,
        };
        let backing = Backing::open(&options.store).await?;
        let mut options = options;
        if let Some(jet) = backing.cluster() {
            let most = jet
                .max_payload()
                .saturating_sub(crate::relay::jet::OVERHEAD);
            if options.limits.body_limit > most {
                eprintln!(
                    "relay: the cluster takes messages up to {} bytes (its max_payload): bodies over {most} bytes get 413 (raise max_payload in the servers' config to take more)",
                    jet.max_payload()
                );
                options.limits.body_limit = most;
            }
        }
        let listener = tokio::net::TcpListener::bind(options.addr)
            .await
            .map_err(|source| ServeError::Bind {
                addr: options.addr,
                source,
            })?;
        let state = Arc::new(State {
            options,
            backing,
            channels: Lock::new(HashMap::new()),
            connections: Lock::new(HashMap::new()),
            open: AtomicUsize::new(0),
            failures: Lock::new(HashMap::new()),
            in_flight: AtomicUsize::new(0),
        });
        state.reload_channels().await;
        Ok(Server {
            listener,
            tls,
            state,
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Whether it serves https.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Serves until `stop` completes, then lets the deliveries being stored finish (up to 10 s).
    pub async fn run(self, stop: impl std::future::Future<Output = ()>) {
        let housekeeping = tokio::spawn(housekeeping(Arc::clone(&self.state)));
        // On a cluster: hearing the other instances' presence, and saying this one's every
        // second in a task of its own (housekeeping may wait seconds on a busy cluster).
        let presence = self.state.backing.cluster().map(|jet| {
            let (jet, state) = (Arc::clone(jet), Arc::clone(&self.state));
            tokio::spawn(async move {
                let hear = jet.hear_presence();
                let say = async {
                    let mut tick = tokio::time::interval(Duration::from_secs(1));
                    loop {
                        tick.tick().await;
                        jet.say_present(&state.caught_up()).await;
                    }
                };
                tokio::join!(hear, say);
            })
        });
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => self.accept(stream, peer),
                    Err(e) => {
                        eprintln!("relay: accepting a connection failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }
        housekeeping.abort();
        if let Some(presence) = presence {
            presence.abort();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.state.in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Takes a connection within the caps, or closes it at once.
    fn accept(&self, stream: tokio::net::TcpStream, peer: SocketAddr) {
        let Some(guard) = ConnectionGuard::take(&self.state, peer.ip()) else {
            return;
        };
        let _ = stream.set_nodelay(true);
        notice_dead_peers(&stream);
        let (state, tls) = (Arc::clone(&self.state), self.tls.clone());
        tokio::spawn(async move {
            let _guard = guard;
            match tls {
                Some(acceptor) => {
                    let timeout = state.options.limits.header_timeout;
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(timeout, acceptor.accept(stream)).await
                    {
                        serve_connection(state, stream, peer).await;
                    }
                }
                None => serve_connection(state, stream, peer).await,
            }
        });
    }
}

/// A subscriber that vanished (its laptop asleep, its network gone, no FIN) must not count as
/// connected for long: TCP keepalive probes an idle connection every 15 s, and where the OS
/// has `TCP_USER_TIMEOUT` data unacknowledged for 45 s ends it, so the stream's next heartbeat
/// fails and providers get the offline answer again without waiting for an answer.
fn notice_dead_peers(stream: &tokio::net::TcpStream) {
    let socket = socket2::SockRef::from(stream);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(15))
        .with_interval(Duration::from_secs(10));
    let _ = socket.set_tcp_keepalive(&keepalive);
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "fuchsia"))]
    let _ = socket.set_tcp_user_timeout(Some(Duration::from_secs(45)));
}

/// A delivery being stored, counted while it lives: the relay stops once none is left.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn count(state: &'a State) -> InFlight<'a> {
        state.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(&state.in_flight)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One open connection, counted against the caps while it lives.
struct ConnectionGuard {
    state: Arc<State>,
    ip: IpAddr,
}

impl ConnectionGuard {
    fn take(state: &Arc<State>, ip: IpAddr) -> Option<ConnectionGuard> {
        let limits = &state.options.limits;
        let mut by_address = state.connections.lock();
        // Refused before any entry is made: a full relay keeps no entry for an address it refused.
        let here = by_address.get(&ip).copied().unwrap_or(0);
        if here >= limits.max_per_address
            || state.open.load(Ordering::SeqCst) >= limits.max_connections
        {
            return None;
        }
        by_address.insert(ip, here + 1);
        state.open.fetch_add(1, Ordering::SeqCst);
        Some(ConnectionGuard {
            state: Arc::clone(state),
            ip,
        })
    }
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        let mut by_address = self.state.connections.lock();
        if let Some(n) = by_address.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                by_address.remove(&self.ip);
            }
        }
        self.state.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve_connection<S>(state: Arc<State>, stream: S, peer: SocketAddr)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let io = hyper_util::rt::TokioIo::new(stream);
    let timeout = state.options.limits.header_timeout;
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        let state = Arc::clone(&state);
        async move {
            let request = request.map(Body::new);
            Ok::<_, Infallible>(route(state, peer, request).await)
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(timeout)
        .serve_connection(io, service)
        .await;
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Body::from(format!("{text}\n")));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Body::from(format!("{value}\n")));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Sends each request where it goes.
async fn route(state: Arc<State>, peer: SocketAddr, request: Request<Body>) -> Response<Body> {
    let path = request.uri().path().to_string();
    let mut parts = path.trim_start_matches('/').splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("in"), Some(name), rest) => {
            let name = name.to_string();
            let rest = format!("/{}", rest.unwrap_or(""));
            // Counted until it ends, answered or dropped (a provider that went away).
            let _in_flight = InFlight::count(&state);
            ingest(&state, peer, request, &name, rest).await
        }
        (Some("sub"), Some(name), None) if request.method() == Method::GET => {
            subscribe(&state, peer, request, name).await
        }
        (Some("sub"), Some(name), Some("ack")) if request.method() == Method::POST => {
            acknowledge(&state, peer, request, name).await
        }
        (Some("sub"), Some(name), Some(rest)) if request.method() == Method::POST => {
            match rest
                .strip_prefix("answers/")
                .and_then(|s| s.parse::<u64>().ok())
            {
                Some(seq) => answer(&state, peer, request, name, seq).await,
                None => plain(StatusCode::NOT_FOUND, "not found"),
            }
        }
        (Some("health"), None, None) => plain(StatusCode::OK, "ok"),
        _ => plain(StatusCode::NOT_FOUND, "not found"),
    }
}

impl State {
    /// Each channel with subscribers caught up here, with how many (and those that had some a
    /// second ago, with 0, so the other instances hear at once that they went).
    fn caught_up(&self) -> Vec<(String, u64)> {
        self.channels
            .lock()
            .iter()
            .filter_map(|(name, live)| {
                let now = live.live_subscribers.load(Ordering::SeqCst) as u64;
                let before = live.said_present.swap(now, Ordering::SeqCst);
                (now > 0 || before > 0).then(|| (name.clone(), now))
            })
            .collect()
    }

    /// The channel, from memory or (made since the last reload) from the store; `Err` when the
    /// store cannot say.
    async fn live(&self, name: &str) -> Result<Option<Arc<Live>>, RelayStoreError> {
        if let Some(live) = self.channels.lock().get(name) {
            return Ok(Some(Arc::clone(live)));
        }
        let Some(row) = self.backing.channel(name).await? else {
            return Ok(None);
        };
        self.backing.prepare(&row).await;
        let Some(made) = Live::new(row) else {
            return Ok(None);
        };
        // One `Live` per channel, whoever made it first (a reload, or another request).
        let mut channels = self.channels.lock();
        let live = channels
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(made));
        Ok(Some(Arc::clone(live)))
    }

    /// Brings the channels in memory in line with the store: new ones, removed ones (their
    /// streams end), a rotated token (its streams end), recipients added.
    async fn reload_channels(&self) {
        let rows = match self.backing.channels().await {
            Ok(rows) => rows,
            Err(e) => {
                eprintln!("relay: the channels could not be read: {e}");
                return;
            }
        };
        for row in &rows {
            let known = self
                .channels
                .lock()
                .get(&row.name)
                .is_some_and(|live| live.row.lock().uid == row.uid);
            if !known {
                self.backing.prepare(row).await;
            }
        }
        let mut channels = self.channels.lock();
        let names: std::collections::HashSet<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        channels.retain(|name, live| {
            let keep = names.contains(name.as_str());
            if !keep {
                live.revoked.send_modify(|n| *n += 1);
            }
            keep
        });
        for row in rows {
            match channels.get(&row.name) {
                // The same channel: a new token or recipients.
                Some(live) if live.row.lock().uid == row.uid => live.update(row),
                // New, or removed and made again under its name: a channel of its own, whose
                // sequence numbers start over (the old one's streams end).
                found => {
                    if let Some(old) = found {
                        old.revoked.send_modify(|n| *n += 1);
                    }
                    match Live::new(row.clone()) {
                        Some(live) => {
                            channels.insert(row.name, Arc::new(live));
                        }
                        None => {
                            channels.remove(&row.name);
                        }
                    }
                }
            }
        }
    }

    /// Waits before a refusal of a failed authentication, longer for an address that keeps
    /// failing.
    async fn slow_down(&self, ip: IpAddr) {
        let failures = {
            let mut failures = self.failures.lock();
            let entry = failures.entry(ip).or_insert((0, Instant::now()));
            if entry.1.elapsed() > Duration::from_secs(600) {
                *entry = (0, Instant::now());
            }
            entry.0 += 1;
            entry.0
        };
        if failures > 3 {
            let wait = Duration::from_millis(250 * u64::from(failures.min(20) - 3));
            tokio::time::sleep(wait).await;
        }
    }

    /// The channel when `request` carries its current token; otherwise the `401` to answer
    /// (the same for an unknown channel, a wrong or an old token: it says nothing of the
    /// channel).
    async fn authorised(
        &self,
        peer: SocketAddr,
        headers: &axum::http::HeaderMap,
        name: &str,
    ) -> Result<Arc<Live>, Response<Body>> {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        // The store's row, not the copy in memory: a rotated token stops working at once. A
        // store that cannot say is not a refusal of the token.
        let row = self.backing.channel(name).await.map_err(unavailable)?;
        let live = match row.filter(|row| crate::relay::token::matches(token, &row.token_hash)) {
            Some(_) => self.live(name).await.map_err(unavailable)?,
            None => None,
        };
        match live {
            Some(live) => Ok(live),
            None => {
                self.slow_down(peer.ip()).await;
                let mut refused = plain(StatusCode::UNAUTHORIZED, "unauthorized");
                refused
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                Err(refused)
            }
        }
    }
}

impl Live {
    fn new(row: Channel) -> Option<Live> {
        let sealer = sealer_for(&row)?;
        Some(Live {
            latest: watch::Sender::new(row.last_seq),
            revoked: watch::Sender::new(0),
            row: Lock::new(row),
            sealer: Lock::new(sealer),
            live_subscribers: Arc::new(AtomicUsize::new(0)),
            said_present: std::sync::atomic::AtomicU64::new(0),
            slots: Lock::new(HashMap::new()),
        })
    }

    fn update(&self, row: Channel) {
        let mut current = self.row.lock();
        if current.token_hash != row.token_hash {
            self.revoked.send_modify(|n| *n += 1);
        }
        if current.recipients != row.recipients
            && let Some(sealer) = sealer_for(&row)
        {
            *self.sealer.lock() = sealer;
        }
        *current = row;
    }

    /// Takes an answer for `seq`: the first one wins.
    fn answered(&self, seq: u64, answer: Answer) -> bool {
        // Only for a delivery the channel has, or is about to say it has (not a number made up
        // to fill memory).
        if seq == 0 || seq > *self.latest.borrow() + 1024 {
            return false;
        }
        let mut slots = self.slots.lock();
        match slots.remove(&seq) {
            Some(Slot::Waiting(waiter)) => {
                slots.insert(seq, Slot::Done(Instant::now()));
                waiter.send(answer).is_ok()
            }
            Some(taken @ (Slot::Answered(..) | Slot::Done(_))) => {
                slots.insert(seq, taken);
                false
            }
            None => {
                slots.insert(seq, Slot::Answered(answer, Instant::now()));
                true
            }
        }
    }

    /// Waits for `seq`'s answer (one may have come already).
    fn wait_for(&self, seq: u64) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        let mut slots = self.slots.lock();
        match slots.remove(&seq) {
            Some(Slot::Answered(answer, _)) => {
                let _ = tx.send(answer);
            }
            _ => {
                slots.insert(seq, Slot::Waiting(tx));
            }
        }
        rx
    }
}

fn sealer_for(row: &Channel) -> Option<Sealer> {
    let sealed = crate::relay::seal::recipients(&row.recipients).and_then(Sealer::new);
    match sealed {
        Ok(sealer) => Some(sealer),
        Err(e) => {
            eprintln!("relay: channel {} cannot seal: {e}", row.name);
            None
        }
    }
}

/// Every second: channels changed by `relay channel …`, file keys past their minute, answers
/// nobody waited for; every minute, the retention.
async fn housekeeping(state: Arc<State>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_retention = Instant::now() - Duration::from_secs(3600);
    loop {
        tick.tick().await;
        state.reload_channels().await;
        let keep_answers = state.options.answer_timeout * 2;
        for live in state.channels.lock().values() {
            live.sealer.lock().expire();
            live.slots.lock().retain(|_, slot| match slot {
                Slot::Waiting(waiter) => !waiter.is_closed(),
                Slot::Answered(_, at) | Slot::Done(at) => at.elapsed() < keep_answers,
            });
        }
        state
            .failures
            .lock()
            .retain(|_, (_, since)| since.elapsed() < Duration::from_secs(600));
        if last_retention.elapsed() >= Duration::from_secs(60) {
            last_retention = Instant::now();
            match state.backing.retain(now_ms()).await {
                Ok(0) => {}
                Ok(n) => eprintln!("relay: retention dropped {n} deliveries"),
                Err(e) => eprintln!("relay: retention failed: {e}"),
            }
        }
    }
}

/// Reads a body up to the limit, at the minimum rate or better. `Err` is the answer.
async fn read_body(
    limits: &Limits,
    body: Body,
    declared: Option<u64>,
) -> Result<Vec<u8>, Response<Body>> {
    let too_large = || plain(StatusCode::PAYLOAD_TOO_LARGE, "body over the relay's limit");
    if declared.is_some_and(|n| n > limits.body_limit as u64) {
        drain(limits, body, declared).await;
        return Err(too_large());
    }
    let started = Instant::now();
    let mut body = body;
    let mut bytes =
        Vec::with_capacity(declared.unwrap_or(0).min(limits.body_limit as u64) as usize);
    loop {
        // Allowed so far: the header timeout, plus the bytes read at the minimum rate.
        let allowed = limits.header_timeout
            + Duration::from_secs_f64(bytes.len() as f64 / limits.min_body_rate as f64);
        let left = allowed
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(1));
        match tokio::time::timeout(left, body.frame()).await {
            Err(_) => {
                return Err(plain(
                    StatusCode::REQUEST_TIMEOUT,
                    "the body came too slowly",
                ));
            }
            Ok(None) => return Ok(bytes),
            Ok(Some(Err(_))) => {
                return Err(plain(StatusCode::BAD_REQUEST, "the body was cut short"));
            }
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if bytes.len() + data.len() > limits.body_limit {
                        drain(limits, body, None).await;
                        return Err(too_large());
                    }
                    bytes.extend_from_slice(data);
                }
            }
        }
    }
}

/// Reads and drops the rest of a body over the limit, up to twice the limit and at the minimum
/// rate, so that its sender, still sending, reads the `413` rather than a reset connection;
/// past that the connection is closed.
async fn drain(limits: &Limits, mut body: Body, declared: Option<u64>) {
    let most = 2 * limits.body_limit as u64;
    if declared.is_some_and(|n| n > most) {
        return;
    }
    let deadline = limits.header_timeout + Duration::from_secs(most / limits.min_body_rate.max(1));
    let _ = tokio::time::timeout(deadline, async {
        let mut seen = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, |d| d.len() as u64);
            if seen > most {
                return;
            }
        }
    })
    .await;
}

/// A provider's delivery: read, sealed, stored (synced) and only then answered, with the
/// first subscriber's answer or the offline answer.
async fn ingest(
    state: &State,
    peer: SocketAddr,
    request: Request<Body>,
    name: &str,
    path: String,
) -> Response<Body> {
    let live = match state.live(name).await {
        Ok(Some(live)) => live,
        Ok(None) => return plain(StatusCode::NOT_FOUND, "not found"),
        Err(e) => return unavailable(e),
    };
    let (parts, body) = request.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    let body = match read_body(&state.options.limits, body, declared).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let request = envelope::Request {
        method: parts.method.as_str().to_string(),
        path,
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| Header {
                name: n.as_str().to_string(),
                value: v.as_bytes().to_vec(),
            })
            .collect(),
        body,
        remote_addr: Some(peer.to_string()),
    };
    let plaintext = request.encode();
    drop(request);
    let sealed = live.sealer.lock().seal(&plaintext);
    let size = plaintext.len() as u64;
    drop(plaintext);
    let row = live.row.lock().clone();
    if let Some(jet) = state.backing.cluster() {
        return ingest_on_cluster(state, jet, &live, &row, size, sealed).await;
    }
    let seq = match state
        .backing
        .insert(&row, now_ms(), size, sealed, None)
        .await
    {
        Ok(seq) => seq,
        Err(e) => return refused_to_store(name, e),
    };
    let waiting = (live.live_subscribers.load(Ordering::SeqCst) > 0).then(|| live.wait_for(seq));
    live.latest.send_if_modified(|latest| {
        let newer = seq > *latest;
        *latest = (*latest).max(seq);
        newer
    });
    if let Some(waiting) = waiting {
        if let Ok(Ok(answer)) = tokio::time::timeout(state.options.answer_timeout, waiting).await {
            return passed_through(answer);
        }
        live.slots.lock().remove(&seq);
    }
    offline_answer(state.options.offline, seq)
}

/// A delivery on a cluster: when a laptop is caught up on any instance, this instance listens
/// for its answer on an inbox the delivery names, so that the instance the laptop posts the
/// answer to can send it here.
async fn ingest_on_cluster(
    state: &State,
    jet: &crate::relay::jet::Jet,
    live: &Live,
    row: &Channel,
    size: u64,
    sealed: Vec<u8>,
) -> Response<Body> {
    let name = row.name.as_str();
    let here = live.live_subscribers.load(Ordering::SeqCst) > 0;
    let inbox = if here || jet.present(name) {
        jet.answers_inbox().await.ok()
    } else {
        None
    };
    let reply = inbox.as_ref().map(|(subject, _)| subject.as_str());
    let seq = match state
        .backing
        .insert(row, now_ms(), size, sealed, reply)
        .await
    {
        Ok(seq) => seq,
        Err(e) => return refused_to_store(name, e),
    };
    if let Some((_, subscriber)) = inbox
        && let Some(bytes) = jet
            .first_answer(subscriber, state.options.answer_timeout)
            .await
        && let Ok(answer) = serde_json::from_slice::<Answer>(&bytes)
    {
        return passed_through(answer);
    }
    offline_answer(state.options.offline, seq)
}

fn refused_to_store(name: &str, e: RelayStoreError) -> Response<Body> {
    match e {
        RelayStoreError::NoChannel(_) => plain(StatusCode::NOT_FOUND, "not found"),
        RelayStoreError::OverQuota { .. } => {
            eprintln!("relay: refused a delivery (429): {e}");
            plain(
                StatusCode::TOO_MANY_REQUESTS,
                "this channel is over its quota",
            )
        }
        e => {
            eprintln!("relay: a delivery to channel {name} could not be stored (503): {e}");
            retry_later("the relay could not store this delivery")
        }
    }
}

/// `503` with `Retry-After: 5`.
fn retry_later(text: &str) -> Response<Body> {
    let mut response = plain(StatusCode::SERVICE_UNAVAILABLE, text);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    response
}

/// The store could not answer (a cluster without a quorum, say): `503`, said on stderr.
fn unavailable(e: RelayStoreError) -> Response<Body> {
    eprintln!("relay: the store cannot answer (503): {e}");
    retry_later("the relay's store cannot answer now")
}

fn offline_answer(offline: OfflineAnswer, seq: u64) -> Response<Body> {
    match offline {
        OfflineAnswer::Accepted => json(
            StatusCode::ACCEPTED,
            &serde_json::json!({"relayed": true, "seq": seq}),
        ),
        OfflineAnswer::Retry => {
            let mut response = json(
                StatusCode::SERVICE_UNAVAILABLE,
                &serde_json::json!({"relayed": true, "seq": seq, "retry": true}),
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
            response
        }
    }
}

/// A subscriber's answer, as the provider gets it.
fn passed_through(answer: Answer) -> Response<Body> {
    let body = base64::engine::general_purpose::STANDARD
        .decode(answer.body_base64.as_bytes())
        .unwrap_or_default();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let headers = response.headers_mut();
    for (name, value) in &answer.headers {
        let hop_by_hop = [
            "connection",
            "transfer-encoding",
            "content-length",
            "keep-alive",
        ];
        if hop_by_hop.contains(&name.to_ascii_lowercase().as_str()) {
            continue;
        }
        if let (Ok(name), Ok(value)) = (
            header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    response
}

/// `GET /sub/CHANNEL`: the channel's deliveries after `Last-Event-ID` (or `?after=N`), as
/// Server-Sent Events, then each new one as it is stored, with a comment every
/// [`HEARTBEAT`] while there is none.
async fn subscribe(
    state: &Arc<State>,
    peer: SocketAddr,
    request: Request<Body>,
    name: &str,
) -> Response<Body> {
    let live = match state.authorised(peer, request.headers(), name).await {
        Ok(live) => live,
        Err(refused) => return refused,
    };
    let after = request
        .headers()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
        .or_else(|| {
            request
                .uri()
                .query()?
                .split('&')
                .find_map(|kv| kv.strip_prefix("after=")?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    let (sender, chunks) = mpsc::channel::<Bytes>(8);
    let stream = crate::relay::stream::Stream {
        source: match &state.backing {
            Backing::Sqlite(sqlite) => {
                crate::relay::stream::Source::Sqlite(sqlite.data_dir.clone())
            }
            Backing::Cluster(jet) => crate::relay::stream::Source::Cluster(Arc::clone(jet)),
        },
        channel: name.to_string(),
        uid: live.row.lock().uid.clone(),
        after,
        answer_window_ms: state.options.answer_timeout.as_millis() as i64,
        latest: live.latest.subscribe(),
        revoked: live.revoked.subscribe(),
        live_subscribers: Arc::clone(&live.live_subscribers),
    };
    tokio::spawn(stream.run(sender));
    let mut response = Response::new(Body::from_stream(crate::relay::stream::Chunks(chunks)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// `POST /sub/CHANNEL/answers/SEQ`: a subscriber's answer for a provider that may be waiting.
async fn answer(
    state: &State,
    peer: SocketAddr,
    request: Request<Body>,
    name: &str,
    seq: u64,
) -> Response<Body> {
    let live = match state.authorised(peer, request.headers(), name).await {
        Ok(live) => live,
        Err(refused) => return refused,
    };
    let limits = Limits {
        body_limit: state.options.limits.body_limit * 2,
        ..state.options.limits.clone()
    };
    let body = match read_body(&limits, request.into_body(), None).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    match serde_json::from_slice::<Answer>(&body) {
        Ok(answer) => {
            let taken = match state.backing.cluster() {
                Some(jet) => {
                    let row = live.row.lock().clone();
                    match jet.answer(&row, seq, body).await {
                        crate::relay::jet::Answered::Taken => true,
                        crate::relay::jet::Answered::NotWaiting => false,
                        crate::relay::jet::Answered::Failed(e) => return unavailable(e),
                    }
                }
                None => live.answered(seq, answer),
            };
            if taken {
                plain(StatusCode::NO_CONTENT, "")
            } else {
                plain(StatusCode::CONFLICT, "already answered")
            }
        }
        Err(e) => plain(StatusCode::BAD_REQUEST, &format!("not an answer: {e}")),
    }
}

/// `POST /sub/CHANNEL/ack` with `{"seq": N}`: the subscriber stored everything up to N.
async fn acknowledge(
    state: &State,
    peer: SocketAddr,
    request: Request<Body>,
    name: &str,
) -> Response<Body> {
    let live = match state.authorised(peer, request.headers(), name).await {
        Ok(live) => live,
        Err(refused) => return refused,
    };
    let body = match read_body(&Limits::default(), request.into_body(), None).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    match serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("seq")?.as_u64())
    {
        Some(seq) => {
            let row = live.row.lock().clone();
            state.backing.ack(&row, seq).await;
            plain(StatusCode::NO_CONTENT, "")
        }
        None => plain(StatusCode::BAD_REQUEST, "expected {\"seq\": N}"),
    }
}
