//! The ceiling and the floors for the benchmarks (`hookscope-dev bare`): a bare axum server on
//! the receiver's runtime shape (2 workers) that reads each body and answers 200 without
//! checking or storing.
//!
//! With `--durable DIR` it is instead the floor of any receiver whose 2xx means "on disk": it
//! checks each Standard Webhooks signature (`--secret`, with the library's own functions), and
//! one thread appends every body waiting to `DIR/bare.log`, `fdatasync`s once and answers them
//! all (a group commit). Nothing else.
//!
//! With `--sqlite DIR` it is the reference the store is measured against: the same
//! check, then one thread takes every delivery waiting into one SQLite transaction (WAL,
//! `synchronous = FULL`) of one small row each (id, time, the event id `UNIQUE`: a duplicate
//! is ignored), and answers them all after `COMMIT`. No body, no headers, no checks, no
//! indexes the list needs, no jobs, no text index, no output.

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::http::{HeaderMap, StatusCode};
use tokio::sync::oneshot;

use hookscope::domain::scheme::{Key, Scheme, Secret};

/// What the durable thread writes: a body, its event id, and who waits for its sync.
type Pending = (axum::body::Bytes, String, oneshot::Sender<bool>);

/// Where a durable bare server writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Floor {
    /// Bodies appended to a file, group-committed `fdatasync`.
    File,
    /// Small rows in SQLite, a transaction per waiting batch, `synchronous = FULL`.
    Sqlite,
}

/// Serves until killed. `durable`: where to write, how, and the secret to verify with.
pub fn serve_bare(
    addr: SocketAddr,
    durable: Option<(PathBuf, Secret, Floor)>,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let durable = durable.map(start_durable).transpose()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| e.to_string())?;
        eprintln!(
            "listening on http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let app = match durable {
            None => axum::Router::new().fallback(|body: axum::body::Bytes| async move {
                let _ = body.len();
                (StatusCode::OK, "{\"received\":true}\n")
            }),
            Some((queue, scheme, key)) => {
                axum::Router::new().fallback(move |headers: HeaderMap, body: axum::body::Bytes| {
                    let (queue, scheme, key) = (queue.clone(), scheme.clone(), key.clone());
                    async move {
                        let Some(id) = verified(&scheme, &key, &headers, &body) else {
                            return (StatusCode::UNAUTHORIZED, "{\"received\":false}\n");
                        };
                        let (done, synced) = oneshot::channel();
                        if queue.send((body, id.to_owned(), done)).is_err()
                            || synced.await != Ok(true)
                        {
                            return (StatusCode::SERVICE_UNAVAILABLE, "{\"received\":false}\n");
                        }
                        (StatusCode::OK, "{\"received\":true}\n")
                    }
                })
            }
        };
        axum::serve(listener, app).await.map_err(|e| e.to_string())
    })
}

/// The delivery's `webhook-id` when one of its Standard Webhooks signatures is `key`'s: the
/// library's own header parsing and constant-time match, without building a `Delivery`.
fn verified<'h>(
    scheme: &Scheme,
    key: &Key,
    headers: &'h HeaderMap,
    body: &[u8],
) -> Option<&'h str> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(id), Some(ts), Some(signatures)) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        headers.get("webhook-signature"),
    ) else {
        return None;
    };
    let parsed = scheme.parse_header(signatures.as_bytes()).ok()?;
    let messages = [scheme.signed_payload(id, ts, body)];
    parsed
        .signatures
        .iter()
        .any(|(kind, signature)| scheme.matches(key, *kind, signature, &messages, None))
        .then_some(id)
}

/// Starts the thread that writes what the handlers verified: appended to `DIR/bare.log`, or
/// rows of `DIR/bare.sqlite`.
#[allow(clippy::type_complexity)]
fn start_durable(
    (dir, secret, floor): (PathBuf, Secret, Floor),
) -> Result<
    (
        std::sync::mpsc::SyncSender<Pending>,
        Scheme,
        std::sync::Arc<Key>,
    ),
    String,
> {
    let scheme = Scheme::preset("standard-webhooks").ok_or("no standard-webhooks preset")?;
    let key = match scheme.key(&secret) {
        Ok(key @ Key::Mac(_)) => key,
        _ => return Err("--secret is not a Standard Webhooks HMAC secret (whsec_…)".into()),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut write: Box<dyn FnMut(&[Pending]) -> bool + Send> = match floor {
        Floor::File => Box::new(append_to(&dir.join("bare.log"))?),
        Floor::Sqlite => Box::new(insert_into(&dir.join("bare.sqlite"))?),
    };
    let (queue, bodies) = std::sync::mpsc::sync_channel::<Pending>(4096);
    std::thread::Builder::new()
        .name("bare-group-commit".into())
        .spawn(move || {
            let mut waiting = Vec::new();
            while let Ok(first) = bodies.recv() {
                waiting.push(first);
                waiting.extend(bodies.try_iter().take(255));
                let ok = write(&waiting);
                for (_, _, done) in waiting.drain(..) {
                    let _ = done.send(ok);
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok((queue, scheme, std::sync::Arc::new(key)))
}

/// Appends every waiting body to `path` and `fdatasync`s once.
fn append_to(
    path: &std::path::Path,
) -> Result<impl FnMut(&[Pending]) -> bool + Send + use<>, String> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buffer = Vec::new();
    Ok(move |waiting: &[Pending]| {
        buffer.clear();
        for (body, _, _) in waiting {
            buffer.extend_from_slice(&(body.len() as u32).to_le_bytes());
            buffer.extend_from_slice(body);
        }
        file.write_all(&buffer)
            .and_then(|()| file.sync_data())
            .is_ok()
    })
}

/// Inserts a small row per waiting delivery into `path` in one transaction, committed synced.
fn insert_into(
    path: &std::path::Path,
) -> Result<impl FnMut(&[Pending]) -> bool + Send + use<>, String> {
    let conn = rusqlite::Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE IF NOT EXISTS deliveries (id INTEGER PRIMARY KEY, received_at_ms INTEGER NOT NULL,
             event_id TEXT NOT NULL UNIQUE);",
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(move |waiting: &[Pending]| {
        let written = (|| {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let mut insert = conn.prepare_cached(
                "INSERT OR IGNORE INTO deliveries (received_at_ms, event_id) VALUES (?1, ?2)",
            )?;
            let now = hookscope::domain::clock::now_ms();
            for (_, id, _) in waiting {
                insert.execute(rusqlite::params![now, id])?;
            }
            conn.execute_batch("COMMIT")
        })();
        if written.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        written.is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each floor does the work it is measured as doing: what it acknowledges is in its file,
    /// and for the SQLite reference a row per event (a duplicate is one row), committed.
    #[test]
    fn the_floors_write_what_they_acknowledge() {
        let sent = [
            ("msg_1", "{\"type\":\"job.started\"}"),
            ("msg_2", "{\"type\":\"job.completed\"}"),
            ("msg_1", "{\"type\":\"job.started\"}"),
        ];
        for floor in [Floor::File, Floor::Sqlite] {
            let dir = tempfile::tempdir().expect("temp dir");
            let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_string());
            let (queue, _, _) =
                start_durable((dir.path().to_path_buf(), secret, floor)).expect("start");
            let answers: Vec<_> = sent
                .iter()
                .map(|(id, body)| {
                    let (done, synced) = oneshot::channel();
                    let body = axum::body::Bytes::from_static(body.as_bytes());
                    queue.send((body, (*id).to_string(), done)).expect("queued");
                    synced
                })
                .collect();
            for synced in answers {
                assert_eq!(synced.blocking_recv(), Ok(true));
            }
            match floor {
                Floor::File => {
                    let log = std::fs::read(dir.path().join("bare.log")).expect("log");
                    let logged: usize = sent.iter().map(|(_, body)| 4 + body.len()).sum();
                    assert_eq!(log.len(), logged);
                }
                Floor::Sqlite => {
                    let conn =
                        rusqlite::Connection::open(dir.path().join("bare.sqlite")).expect("open");
                    let ids: Vec<String> = conn
                        .prepare("SELECT event_id FROM deliveries ORDER BY id")
                        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect::<Result<_, _>>())
                        .expect("rows");
                    assert_eq!(ids, ["msg_1", "msg_2"]);
                }
            }
        }
    }
}
