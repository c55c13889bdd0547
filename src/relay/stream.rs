//! One subscriber's stream: the channel's deliveries after its resume point, read from the
//! store in batches, then each new one as it is stored, as Server-Sent Events; a comment every
//! [`HEARTBEAT`] while there is nothing to send, so both ends notice a dead connection. On a
//! cluster, the deliveries come from an ordered consumer of the channel's stream, which sees
//! what every instance stored.

use std::path::PathBuf;
use std::sync::Arc;

use crate::domain::sync::Lock;
use std::time::Duration;

use axum::body::Bytes;
use base64::Engine as _;
use tokio::sync::{mpsc, watch};

use crate::domain::clock::now_ms;
use crate::relay::jet::Jet;
use crate::relay::store;

/// Deliveries a cluster stream may be behind and still count as caught up: past it, a provider
/// would wait its whole answer timeout for an answer that comes only once the laptop catches
/// up, so none is held for it until it has (providers get the offline answer at once).
const FALLEN_BEHIND: u64 = 256;

/// The longest a stream stays silent.
pub const HEARTBEAT: Duration = Duration::from_secs(15);

/// Deliveries read from the store at a time.
const BATCH: usize = 256;
/// About the most bytes read from the store at a time.
const BATCH_BYTES: usize = 8 * 1024 * 1024;

/// Where a stream reads the channel's deliveries.
pub(crate) enum Source {
    /// The SQLite store in this data dir.
    Sqlite(PathBuf),
    /// The cluster.
    Cluster(Arc<Jet>),
}

/// A subscriber's stream, before it runs.
pub(crate) struct Stream {
    pub(crate) source: Source,
    pub(crate) channel: String,
    /// The channel's uid, said in the `hello` event.
    pub(crate) uid: String,
    pub(crate) after: u64,
    /// A delivery younger than this may still have its provider waiting for an answer.
    pub(crate) answer_window_ms: i64,
    pub(crate) latest: watch::Receiver<u64>,
    pub(crate) revoked: watch::Receiver<u64>,
    /// Subscribers caught up on this channel (the ones that can answer in time).
    pub(crate) live_subscribers: Arc<std::sync::atomic::AtomicUsize>,
}

impl Stream {
    /// Sends the stream's events on `sender` until the subscriber goes, its token is rotated or
    /// its channel removed.
    pub(crate) async fn run(mut self, sender: mpsc::Sender<Bytes>) {
        self.revoked.mark_unchanged();
        let data_dir = match &self.source {
            Source::Sqlite(data_dir) => data_dir.clone(),
            Source::Cluster(jet) => {
                let jet = Arc::clone(jet);
                return self.run_on_cluster(&jet, sender).await;
            }
        };
        let conn = match store::open_reader(&data_dir) {
            Ok(conn) => Arc::new(Lock::new(conn)),
            Err(e) => {
                eprintln!("relay: a subscriber's stream could not read the store: {e}");
                return;
            }
        };
        let latest = *self.latest.borrow();
        if !self.hello(&sender, latest).await {
            return;
        }
        let mut caught_up = false;
        let mut cursor = self.after;
        loop {
            let batch = match self.read(&conn, cursor).await {
                Some(batch) => batch,
                None => break,
            };
            if batch.is_empty() {
                if !caught_up {
                    caught_up = true;
                    self.live_subscribers
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                if !self.wait(&sender).await {
                    break;
                }
                continue;
            }
            if !self.send(&sender, &batch).await {
                break;
            }
            cursor = batch.last().map_or(cursor, |s| s.seq);
        }
        if caught_up {
            self.live_subscribers
                .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// The next batch after `cursor` (`None`: the store failed).
    async fn read(
        &self,
        conn: &Arc<Lock<rusqlite::Connection>>,
        cursor: u64,
    ) -> Option<Vec<store::Sealed>> {
        let (conn, channel) = (Arc::clone(conn), self.channel.clone());
        let read = tokio::task::spawn_blocking(move || {
            let conn = conn.lock();
            store::read_after(&conn, &channel, cursor, BATCH, BATCH_BYTES)
        })
        .await;
        match read {
            Ok(Ok(batch)) => Some(batch),
            Ok(Err(e)) => {
                eprintln!("relay: a subscriber's stream could not read the store: {e}");
                None
            }
            Err(_) => None,
        }
    }

    /// The first event: the newest sequence number and the channel's uid.
    async fn hello(&self, sender: &mpsc::Sender<Bytes>, latest: u64) -> bool {
        let hello = serde_json::json!({"latest": latest, "channel": self.uid});
        let hello = format!("event: hello\ndata: {hello}\n\n");
        sender.send(Bytes::from(hello)).await.is_ok()
    }

    /// Sends a batch; `false` once the subscriber is gone.
    async fn send(&self, sender: &mpsc::Sender<Bytes>, batch: &[store::Sealed]) -> bool {
        let latest = *self.latest.borrow();
        for sealed in batch {
            let event = self.event(sealed, latest.max(sealed.seq), true);
            if sender.send(Bytes::from(event)).await.is_err() {
                return false;
            }
        }
        true
    }

    /// A delivery as the subscriber reads it; `held`: its provider may be waiting for an
    /// answer, if it is young enough.
    fn event(&self, sealed: &store::Sealed, latest: u64, held: bool) -> String {
        let data = serde_json::json!({
            "seq": sealed.seq,
            "received_at_ms": sealed.received_ms,
            "size": sealed.size,
            "latest": latest,
            "awaiting": held && now_ms() - sealed.received_ms <= self.answer_window_ms,
            "sealed": base64::engine::general_purpose::STANDARD.encode(&sealed.sealed),
        });
        format!("id: {}\nevent: delivery\ndata: {data}\n\n", sealed.seq)
    }

    /// The stream on a cluster: an ordered consumer from the resume point, made again from
    /// the last delivery sent when it fails (the cluster electing a new leader, say).
    async fn run_on_cluster(mut self, jet: &Jet, sender: mpsc::Sender<Bytes>) {
        let latest = jet.latest(&self.channel, &self.uid).await;
        if !self.hello(&sender, latest).await {
            return;
        }
        let mut caught_up = Caught::new(&self.live_subscribers, jet, &self.channel);
        if latest <= self.after {
            caught_up.now().await;
        }
        let mut cursor = self.after;
        loop {
            let reading = match jet.read_after(&self.channel, &self.uid, cursor).await {
                Ok(reading) => reading,
                Err(e) => {
                    eprintln!("relay: a subscriber's stream could not read the cluster: {e}");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        _ = self.revoked.changed() => break,
                        () = sender.closed() => break,
                    }
                }
            };
            tokio::pin!(reading);
            loop {
                tokio::select! {
                    next = futures_util::StreamExt::next(&mut reading) => match next {
                        Some(Ok(read)) => {
                            let seq = read.delivery.seq;
                            let event = self.event(&read.delivery, seq + read.pending, read.held);
                            if sender.send(Bytes::from(event)).await.is_err() {
                                return caught_up.gone().await;
                            }
                            cursor = seq;
                            if read.pending == 0 {
                                caught_up.now().await;
                            } else if read.pending > FALLEN_BEHIND {
                                caught_up.behind().await;
                            }
                        }
                        Some(Err(e)) => {
                            eprintln!("relay: a subscriber's stream: {e}; reading again from #{cursor}");
                            break;
                        }
                        None => break,
                    },
                    _ = self.revoked.changed() => return caught_up.gone().await,
                    () = sender.closed() => return caught_up.gone().await,
                    () = tokio::time::sleep(HEARTBEAT) => {
                        if sender.send(Bytes::from_static(b": ping\n\n")).await.is_err() {
                            return caught_up.gone().await;
                        }
                    }
                }
            }
        }
        caught_up.gone().await;
    }

    /// Waits for a new delivery, sending a heartbeat each [`HEARTBEAT`]; `false` when the
    /// stream must end.
    async fn wait(&mut self, sender: &mpsc::Sender<Bytes>) -> bool {
        loop {
            tokio::select! {
                changed = self.latest.changed() => return changed.is_ok(),
                _ = self.revoked.changed() => return false,
                () = sender.closed() => return false,
                () = tokio::time::sleep(HEARTBEAT) => {
                    if sender.send(Bytes::from_static(b": ping\n\n")).await.is_err() {
                        return false;
                    }
                }
            }
        }
    }
}

/// The stream's chunks, as a response body takes them.
pub(crate) struct Chunks(pub(crate) mpsc::Receiver<Bytes>);

impl futures_core::Stream for Chunks {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(Ok))
    }
}

/// A cluster stream's place in the count of caught-up subscribers, said to the other
/// instances as it changes.
struct Caught<'a> {
    count: &'a std::sync::atomic::AtomicUsize,
    jet: &'a Jet,
    channel: &'a str,
    counted: bool,
}

impl<'a> Caught<'a> {
    fn new(count: &'a Arc<std::sync::atomic::AtomicUsize>, jet: &'a Jet, channel: &'a str) -> Self {
        Caught {
            count,
            jet,
            channel,
            counted: false,
        }
    }

    async fn now(&mut self) {
        if !self.counted {
            self.counted = true;
            let n = self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            self.jet
                .say_present(&[(self.channel.to_string(), n as u64)])
                .await;
        }
    }

    async fn gone(mut self) {
        self.behind().await;
    }

    /// No longer caught up (fallen behind, or gone): providers are not held for its answers.
    async fn behind(&mut self) {
        if self.counted {
            self.counted = false;
            let n = self.count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) - 1;
            self.jet
                .say_present(&[(self.channel.to_string(), n as u64)])
                .await;
        }
    }
}
