//! One subscriber's stream: the channel's deliveries after its resume point, read from the
//! store in batches, then each new one as it is stored, as Server-Sent Events; a comment every
//! [`HEARTBEAT`] while there is nothing to send, so both ends notice a dead connection.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use base64::Engine as _;
use tokio::sync::{mpsc, watch};

use crate::domain::clock::now_ms;
use crate::relay::store;

/// The longest a stream stays silent.
pub const HEARTBEAT: Duration = Duration::from_secs(15);

/// Deliveries read from the store at a time.
const BATCH: usize = 256;
/// About the most bytes read from the store at a time.
const BATCH_BYTES: usize = 8 * 1024 * 1024;

/// A subscriber's stream, before it runs.
pub(crate) struct Stream {
    pub(crate) data_dir: PathBuf,
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
        let conn = match store::open_reader(&self.data_dir) {
            Ok(conn) => Arc::new(Mutex::new(conn)),
            Err(e) => {
                eprintln!("relay: a subscriber's stream could not read the store: {e}");
                return;
            }
        };
        self.revoked.mark_unchanged();
        let hello = serde_json::json!({"latest": *self.latest.borrow(), "channel": self.uid});
        let hello = format!("event: hello\ndata: {hello}\n\n");
        if sender.send(Bytes::from(hello)).await.is_err() {
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
        conn: &Arc<Mutex<rusqlite::Connection>>,
        cursor: u64,
    ) -> Option<Vec<store::Sealed>> {
        let (conn, channel) = (Arc::clone(conn), self.channel.clone());
        let read = tokio::task::spawn_blocking(move || {
            let conn = conn
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
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

    /// Sends a batch; `false` once the subscriber is gone.
    async fn send(&self, sender: &mpsc::Sender<Bytes>, batch: &[store::Sealed]) -> bool {
        let latest = *self.latest.borrow();
        let now = now_ms();
        for sealed in batch {
            let data = serde_json::json!({
                "seq": sealed.seq,
                "received_at_ms": sealed.received_ms,
                "size": sealed.size,
                "latest": latest.max(sealed.seq),
                "awaiting": now - sealed.received_ms <= self.answer_window_ms,
                "sealed": base64::engine::general_purpose::STANDARD.encode(&sealed.sealed),
            });
            let event = format!("id: {}\nevent: delivery\ndata: {data}\n\n", sealed.seq);
            if sender.send(Bytes::from(event)).await.is_err() {
                return false;
            }
        }
        true
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
