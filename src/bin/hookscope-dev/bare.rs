//! The ceiling for the benchmarks (`hookscope-dev bare`): a bare axum server on the receiver's
//! runtime shape (2 workers) that reads each body and answers 200 without checking or storing.
//!
//! With `--durable DIR` it is instead the floor of what issue 19 asks of a receiver, and nothing
//! more: it checks each Standard Webhooks signature (`--secret`, with the library's own
//! functions) and answers 200 only once the body is on disk. Handlers hand their bodies to one
//! thread that appends every body waiting, `fdatasync`s once and answers them all (a group
//! commit). No duplicate check, no tables, no index, no output: what any receiver that
//! verifies and means "on disk" by its 2xx must at least spend.
//!
//! With `--tables` too, it is the floor of a receiver that also meets the rest of issue 19:
//! the group-commit thread decides each event id (`webhook-id`) first or duplicate before the
//! answer (a set in memory), and a second thread writes every synced body to a SQLite table
//! (`DIR/bare.sqlite`: id, time, event id, first, body) and a contentless full-text index of it,
//! committed every 50 ms (unsynced: the log is what is durable), so that a reader sees it within
//! 100 ms and free text answers without reading every body (`listen` commits every 10 ms under
//! load, for its p99, which costs it more). One table, one index, no headers, no checks, no
//! jobs, no output.

use std::net::SocketAddr;
use std::path::PathBuf;

use axum::http::{HeaderMap, StatusCode};
use tokio::sync::oneshot;

use hookscope::domain::scheme::{Key, Scheme, Secret};

/// What `--durable` appends and syncs: a body, its event id (with `--tables`), and who waits
/// for its sync.
type Pending = (axum::body::Bytes, Option<String>, oneshot::Sender<bool>);

/// What the tables thread writes: an event id, whether it was the first, and the body.
type Synced = (String, bool, axum::body::Bytes);

/// How often the tables thread commits (as the store's writer does under load: with 80 ms, a
/// reader on 2 busy cores saw some deliveries over 100 ms after their answer).
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Serves until killed. `durable`: where to append, and the secret to verify with; `tables`:
/// with the duplicate check, the table and the text index too.
pub fn serve_bare(
    addr: SocketAddr,
    durable: Option<(PathBuf, Secret)>,
    tables: bool,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let durable = durable
        .map(|durable| start_durable(durable, tables))
        .transpose()?;
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
                        let id = tables.then(|| id.to_owned());
                        let (done, synced) = oneshot::channel();
                        if queue.send((body, id, done)).is_err() || synced.await != Ok(true) {
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

/// Starts the group-commit thread appending to `DIR/bare.log` (and with `tables`, the thread
/// writing `DIR/bare.sqlite`).
#[allow(clippy::type_complexity)]
fn start_durable(
    (dir, secret): (PathBuf, Secret),
    tables: bool,
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
    let path = dir.join("bare.log");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let (queue, bodies) = std::sync::mpsc::sync_channel::<Pending>(4096);
    let to_tables = tables.then(|| start_tables(&dir)).transpose()?;
    std::thread::Builder::new()
        .name("bare-group-commit".into())
        .spawn(move || {
            use std::io::Write as _;
            let mut buffer = Vec::new();
            let mut waiting = Vec::new();
            let mut seen = std::collections::HashSet::new();
            while let Ok(first) = bodies.recv() {
                waiting.push(first);
                waiting.extend(bodies.try_iter());
                buffer.clear();
                for (body, _, _) in &waiting {
                    buffer.extend_from_slice(&(body.len() as u32).to_le_bytes());
                    buffer.extend_from_slice(body);
                }
                let ok = file
                    .write_all(&buffer)
                    .and_then(|()| file.sync_data())
                    .is_ok();
                for (body, id, done) in waiting.drain(..) {
                    if let (true, Some(to_tables), Some(id)) = (ok, &to_tables, id) {
                        let first = seen.insert(id.clone());
                        let _ = to_tables.send((id, first, body));
                    }
                    let _ = done.send(ok);
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok((queue, scheme, std::sync::Arc::new(key)))
}

/// Starts the thread that writes synced bodies to `DIR/bare.sqlite`, committing every
/// [`COMMIT_EVERY`].
fn start_tables(dir: &std::path::Path) -> Result<std::sync::mpsc::SyncSender<Synced>, String> {
    let path = dir.join("bare.sqlite");
    let conn = rusqlite::Connection::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;
         CREATE TABLE IF NOT EXISTS deliveries (id INTEGER PRIMARY KEY, received_at_ms INTEGER,
             event_id TEXT, first INTEGER, body BLOB);
         CREATE VIRTUAL TABLE IF NOT EXISTS text USING fts5(body, content = '');",
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    // Bounded: if the table falls behind, the group commit (and so the answers) waits for it.
    let (to_tables, synced) = std::sync::mpsc::sync_channel::<Synced>(16 * 1024);
    std::thread::Builder::new()
        .name("bare-tables".into())
        .spawn(move || {
            let mut open_since: Option<std::time::Instant> = None;
            loop {
                let wait = open_since.map_or(std::time::Duration::from_secs(3600), |since| {
                    COMMIT_EVERY.saturating_sub(since.elapsed())
                });
                match synced.recv_timeout(wait) {
                    Ok((id, first, body)) => {
                        if open_since.is_none() && conn.execute_batch("BEGIN").is_ok() {
                            open_since = Some(std::time::Instant::now());
                        }
                        let _ = insert(&conn, &id, first, &body);
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
                if open_since.is_some_and(|since| since.elapsed() >= COMMIT_EVERY) {
                    let _ = conn.execute_batch("COMMIT");
                    open_since = None;
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(to_tables)
}

/// One synced body: its row and its text.
fn insert(conn: &rusqlite::Connection, id: &str, first: bool, body: &[u8]) -> rusqlite::Result<()> {
    let now = hookscope::domain::clock::now_ms();
    conn.prepare_cached(
        "INSERT INTO deliveries (received_at_ms, event_id, first, body) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(rusqlite::params![now, id, first, body])?;
    let row = conn.last_insert_rowid();
    conn.prepare_cached("INSERT INTO text (rowid, body) VALUES (?1, ?2)")?
        .execute(rusqlite::params![row, String::from_utf8_lossy(body)])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables floor does the work it is measured as doing: every body it acknowledges is
    /// in the log and, within a commit, in the table with its duplicate verdict and in the
    /// text index.
    #[test]
    fn the_tables_floor_logs_stores_decides_duplicates_and_indexes_what_it_acknowledges() {
        let dir = tempfile::tempdir().expect("temp dir");
        let secret = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_string());
        let (queue, _, _) = start_durable((dir.path().to_path_buf(), secret), true).expect("start");
        let sent = [
            ("msg_1", "{\"type\":\"job.started\"}"),
            ("msg_2", "{\"type\":\"job.completed\"}"),
            ("msg_1", "{\"type\":\"job.started\"}"),
        ];
        let answers: Vec<_> = sent
            .iter()
            .map(|(id, body)| {
                let (done, synced) = oneshot::channel();
                queue
                    .send((
                        axum::body::Bytes::from_static(body.as_bytes()),
                        Some((*id).to_string()),
                        done,
                    ))
                    .expect("queued");
                synced
            })
            .collect();
        for synced in answers {
            assert_eq!(synced.blocking_recv(), Ok(true));
        }
        let log = std::fs::read(dir.path().join("bare.log")).expect("log");
        let logged: usize = sent.iter().map(|(_, body)| 4 + body.len()).sum();
        assert_eq!(log.len(), logged);
        std::thread::sleep(COMMIT_EVERY * 3);
        let conn = rusqlite::Connection::open(dir.path().join("bare.sqlite")).expect("open");
        let rows: Vec<(String, bool)> = conn
            .prepare("SELECT event_id, first FROM deliveries ORDER BY id")
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<_, _>>()
            })
            .expect("rows");
        let expected = [("msg_1", true), ("msg_2", true), ("msg_1", false)];
        assert_eq!(
            rows,
            expected.map(|(id, first)| (id.to_string(), first)).to_vec()
        );
        let found: Vec<i64> = conn
            .prepare("SELECT rowid FROM text WHERE text MATCH 'started' ORDER BY rowid")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect::<Result<_, _>>())
            .expect("search");
        assert_eq!(found, vec![1, 3]);
    }
}
