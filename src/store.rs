//! The local SQLite store: every delivery, its exact bytes and its verdicts, kept across runs.
//!
//! One writer thread owns the only write connection. It takes jobs from a bounded channel,
//! commits them in small batches (group commit) in WAL mode with `synchronous = FULL`, and only
//! then answers each job: the receiver acknowledges a delivery after that answer, so a 2xx from
//! hookscope means the capture is on disk. Duplicates are decided inside the writer against a
//! unique index on (endpoint, event id), so concurrent retries of one event yield one `first`.
//! Readers open their own connections and never wait for the writer (WAL).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, params};
use tokio::sync::{mpsc, oneshot};

use crate::checks::{Checks, DuplicateCheck, DuplicateStatus, Evaluation, JobRef, SignatureStatus};
use crate::delivery::{Delivery, decode_headers, encode_headers};
use crate::filter::Filter;

/// How many pending writes the channel holds before senders wait.
const WRITE_QUEUE: usize = 4096;
/// The largest number of deliveries committed in one transaction.
const MAX_BATCH: usize = 256;

/// The schema, one entry per version; `PRAGMA user_version` says how many were applied.
const MIGRATIONS: &[&str] = &[
    // v1: deliveries and the event-id index that decides duplicates.
    "CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY,
        received_at_ms INTEGER NOT NULL,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        query TEXT NOT NULL,
        headers BLOB NOT NULL,
        body BLOB NOT NULL,
        body_size INTEGER NOT NULL,
        body_complete INTEGER NOT NULL,
        remote_addr TEXT,
        endpoint TEXT NOT NULL,
        scheme TEXT,
        event_id TEXT,
        event_type TEXT,
        job_id TEXT,
        job_status TEXT,
        sig_status TEXT NOT NULL,
        ts_status TEXT NOT NULL,
        dup_status TEXT NOT NULL,
        first_id INTEGER,
        checks_json TEXT NOT NULL,
        response_status INTEGER NOT NULL,
        latency_ms INTEGER NOT NULL,
        note TEXT
    );
    CREATE TABLE event_ids (
        endpoint TEXT NOT NULL,
        event_id TEXT NOT NULL,
        first_delivery_id INTEGER NOT NULL,
        seen INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (endpoint, event_id)
    ) WITHOUT ROWID;
    -- Narrow indexes ending in id, so that a filtered page is an index range walked in id order.
    CREATE INDEX deliveries_by_id ON deliveries(id);
    CREATE INDEX deliveries_event_id ON deliveries(event_id, id);
    CREATE INDEX deliveries_job_id ON deliveries(job_id, id);
    CREATE INDEX deliveries_event_type ON deliveries(event_type, id);
    CREATE INDEX deliveries_path ON deliveries(path, id);
    CREATE INDEX deliveries_sig_status ON deliveries(sig_status, id);
    CREATE INDEX deliveries_ts_status ON deliveries(ts_status, id);
    CREATE INDEX deliveries_dup_status ON deliveries(dup_status, id);
    CREATE INDEX deliveries_received_at ON deliveries(received_at_ms);
    -- Free text over path, headers and the first 64 KiB of text bodies; contentless, so the
    -- text is not stored twice.
    CREATE VIRTUAL TABLE deliveries_fts USING fts5(path, headers, body, content='', contentless_delete=1);",
    // v2: job timelines: the event's creation time, and one row per job kept by the writer so
    // the jobs list is an index walk, not a GROUP BY over the history.
    "ALTER TABLE deliveries ADD COLUMN job_created_at_ms INTEGER;
    CREATE TABLE jobs (
        job_id TEXT PRIMARY KEY,
        first_seen_ms INTEGER NOT NULL,
        last_seen_ms INTEGER NOT NULL,
        last_delivery_id INTEGER NOT NULL,
        deliveries INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX jobs_by_last_delivery ON jobs(last_delivery_id);
    INSERT INTO jobs SELECT job_id, MIN(received_at_ms), MAX(received_at_ms), MAX(id), COUNT(*)
        FROM deliveries WHERE job_id IS NOT NULL GROUP BY job_id;",
    // v3: outbound attempts (resend, forward, probe), linked to the delivery they came from.
    "CREATE TABLE attempts (
        id INTEGER PRIMARY KEY,
        delivery_id INTEGER,
        kind TEXT NOT NULL,
        url TEXT NOT NULL,
        sent_at_ms INTEGER NOT NULL,
        request_headers BLOB NOT NULL,
        request_body BLOB NOT NULL,
        status INTEGER,
        response_headers BLOB NOT NULL,
        response_body BLOB NOT NULL,
        latency_ms INTEGER NOT NULL,
        error TEXT
    );
    CREATE INDEX attempts_by_delivery ON attempts(delivery_id, id);",
    // v4: the text index is filled by the writer when it is idle, behind the deliveries; this
    // row says how far it got (every earlier delivery was indexed when it was written).
    "CREATE TABLE fts_state (last_id INTEGER NOT NULL);
    INSERT INTO fts_state SELECT COALESCE(MAX(id), 0) FROM deliveries;",
    // v5: identifiers such as job_8f3a or msg-12 are one token each, so searching one is a
    // single-term lookup rather than a phrase over every position of its parts. The writer
    // rebuilds the index behind the deliveries, as it fills it for new ones.
    "DROP TABLE deliveries_fts;
    CREATE VIRTUAL TABLE deliveries_fts USING fts5(path, headers, body, content='', contentless_delete=1,
        tokenize = \"unicode61 tokenchars '_-'\");
    UPDATE fts_state SET last_id = 0;",
];

/// Errors from the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file could not be opened or set up.
    #[error("cannot open the store {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The file was written by a newer hookscope.
    #[error(
        "the store {path} has schema version {found}, newer than this hookscope supports ({supported}); upgrade hookscope or use another --data-dir"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A query failed.
    #[error("store query failed: {0}")]
    Query(#[from] rusqlite::Error),
    /// A write failed; the delivery was not stored (and must not be acknowledged).
    #[error("store write failed: {0}")]
    Write(String),
    /// The writer thread has stopped.
    #[error("the store writer has stopped")]
    WriterGone,
    /// Another process holds a lock on the database.
    #[error(
        "the store {path} is locked by another process (a program holding a write transaction open on it, such as a sqlite3 shell inside BEGIN EXCLUSIVE); close it and start hookscope again"
    )]
    Locked {
        /// The database file.
        path: PathBuf,
    },
    /// The file is not a usable database (garbage, truncated, corrupt).
    #[error("the store {path} is damaged: {what}")]
    DamagedFile {
        /// The database file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A row could not be decoded.
    #[error("delivery {id} is damaged in the store: {what}")]
    Damaged {
        /// The delivery id.
        id: i64,
        /// What could not be read.
        what: String,
    },
}

/// A delivery and its verdicts, ready to be written.
#[derive(Debug, Clone)]
pub struct NewRecord {
    /// The captured request.
    pub delivery: Delivery,
    /// The endpoint (path prefix) it matched.
    pub endpoint: String,
    /// What the pure checks found.
    pub evaluation: Evaluation,
    /// The status hookscope answers.
    pub response_status: u16,
    /// Milliseconds from arrival to the answer (including any configured delay).
    pub latency_ms: u64,
    /// A note on anything unusual (oversized body, client gone).
    pub note: Option<String>,
}

/// A delivery as stored, with its id and all its verdicts.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDelivery {
    /// The delivery id (increasing).
    pub id: i64,
    /// The captured request.
    pub delivery: Delivery,
    /// The endpoint (path prefix) it matched.
    pub endpoint: String,
    /// The scheme used or detected.
    pub scheme: Option<String>,
    /// The event id.
    pub event_id: Option<String>,
    /// The event type.
    pub event_type: Option<String>,
    /// The job it reports on.
    pub job: Option<JobRef>,
    /// All verdicts.
    pub checks: Checks,
    /// The status hookscope answered.
    pub response_status: u16,
    /// Milliseconds from arrival to the answer.
    pub latency_ms: u64,
    /// A note on anything unusual.
    pub note: Option<String>,
}

enum WriteJob {
    Insert {
        record: Box<NewRecord>,
        reply: oneshot::Sender<Result<StoredDelivery, StoreError>>,
    },
    Attempt {
        attempt: Box<Attempt>,
        reply: oneshot::Sender<Result<i64, StoreError>>,
    },
    InsertMany {
        records: Vec<NewRecord>,
        reply: oneshot::Sender<Result<usize, StoreError>>,
    },
    Maintain {
        task: Box<Maintenance>,
        reply: oneshot::Sender<Result<usize, StoreError>>,
    },
}

/// An outbound request hookscope made (resend, forward, probe) and what came back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Attempt {
    /// The attempt's id (0 before it is stored).
    pub id: i64,
    /// The delivery it re-sent or forwarded, if any.
    pub delivery_id: Option<i64>,
    /// `resend`, `forward` or `probe`.
    pub kind: String,
    /// Where it went.
    pub url: String,
    /// When it was sent, Unix milliseconds.
    pub sent_at_ms: i64,
    /// The request headers as sent.
    #[serde(serialize_with = "headers_as_pairs")]
    pub request_headers: Vec<crate::delivery::Header>,
    /// The request body as sent.
    #[serde(skip)]
    pub request_body: Vec<u8>,
    /// The response status, when one came back.
    pub status: Option<u16>,
    /// The response headers.
    #[serde(serialize_with = "headers_as_pairs")]
    pub response_headers: Vec<crate::delivery::Header>,
    /// The response body.
    #[serde(serialize_with = "bytes_as_text")]
    pub response_body: Vec<u8>,
    /// Milliseconds until the response (or the error).
    pub latency_ms: u64,
    /// What went wrong, when nothing came back.
    pub error: Option<String>,
}

fn headers_as_pairs<S: serde::Serializer>(
    headers: &[crate::delivery::Header],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq as _;
    let mut seq = s.serialize_seq(Some(headers.len()))?;
    for h in headers {
        seq.serialize_element(&(&h.name, h.value_lossy()))?;
    }
    seq.end()
}

fn bytes_as_text<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(bytes))
}

fn write_attempt(conn: &Connection, a: &Attempt) -> Result<i64, rusqlite::Error> {
    conn.execute(
        "INSERT INTO attempts (delivery_id, kind, url, sent_at_ms, request_headers, request_body, status,
            response_headers, response_body, latency_ms, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            a.delivery_id,
            a.kind,
            a.url,
            a.sent_at_ms,
            encode_headers(&a.request_headers),
            a.request_body,
            a.status,
            encode_headers(&a.response_headers),
            a.response_body,
            a.latency_ms as i64,
            a.error,
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Changes to stored deliveries other than new ones.
#[derive(Debug, Clone, PartialEq)]
pub enum Maintenance {
    /// Replaces a delivery's signature and timestamp verdicts (after its endpoint changed).
    Recheck {
        /// The delivery.
        id: i64,
        /// The scheme now used or detected.
        scheme: Option<String>,
        /// The new signature verdict.
        signature: Box<crate::checks::SignatureCheck>,
        /// The new timestamp verdict.
        timestamp: Box<crate::checks::TimestampCheck>,
    },
    /// Records the status hookscope actually answered (when it mirrored a forwarded handler).
    SetResponse {
        /// The delivery.
        id: i64,
        /// The status answered.
        status: u16,
        /// A note on why.
        note: String,
    },
    /// Deletes deliveries by id.
    Delete(Vec<i64>),
    /// Deletes every delivery.
    Clear,
    /// Deletes deliveries older than `max_age_ms` before now, and the oldest beyond `max_count`.
    Retain {
        /// Keep deliveries received within this many milliseconds.
        max_age_ms: Option<i64>,
        /// Keep at most this many deliveries.
        max_count: Option<i64>,
        /// The current time, in Unix milliseconds.
        now_ms: i64,
    },
}

/// The store: a path and the channel to its writer thread.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    writer: StoreWriter,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A cloneable handle that submits writes to the writer thread.
#[derive(Debug, Clone)]
pub struct StoreWriter {
    sender: mpsc::Sender<WriteJob>,
}

impl Store {
    /// Opens (or creates) the store at `path`, migrates it, and starts its writer thread.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                path: path.to_path_buf(),
                source: rusqlite::Error::ToSqlConversionFailure(Box::new(e)),
            })?;
        }
        check_not_truncated(path)?;
        let conn = open_connection(path, false).map_err(|e| classify(e, path))?;
        migrate(&conn, path).map_err(|e| classify(e, path))?;
        // Touch the newest rows, so a file damaged in its last pages is noticed now rather
        // than on the first delivery.
        conn.query_row("SELECT MAX(id) FROM deliveries", [], |r| {
            r.get::<_, Option<i64>>(0)
        })
        .map_err(|e| classify(StoreError::Query(e), path))?;
        let (sender, receiver) = mpsc::channel(WRITE_QUEUE);
        let thread = std::thread::Builder::new()
            .name("hookscope-store-writer".into())
            .spawn(move || writer_loop(conn, receiver))
            .map_err(|e| StoreError::Write(format!("cannot start the writer thread: {e}")))?;
        Ok(Store {
            path: path.to_path_buf(),
            writer: StoreWriter { sender },
            thread: Some(thread),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the store; if the file is damaged (not a database, truncated, corrupt, or from a
    /// newer hookscope), keeps it aside, renamed and never deleted, and continues on a fresh
    /// store, returning the sentence that says so. A lock held by another process is an error.
    pub fn open_or_recover(path: &Path) -> Result<(Store, Option<String>), StoreError> {
        match Store::open(path) {
            Ok(store) => Ok((store, None)),
            Err(err @ (StoreError::DamagedFile { .. } | StoreError::NewerSchema { .. })) => {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0);
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let aside = path.with_file_name(format!("{name}.damaged-{stamp}"));
                let move_err = |e: std::io::Error| {
                    StoreError::Write(format!("cannot move the damaged store aside: {e}"))
                };
                std::fs::rename(path, &aside).map_err(move_err)?;
                for suffix in ["-wal", "-shm"] {
                    let side = path.with_file_name(format!("{name}{suffix}"));
                    if side.exists() {
                        std::fs::rename(
                            &side,
                            aside.with_file_name(format!("{name}.damaged-{stamp}{suffix}")),
                        )
                        .map_err(move_err)?;
                    }
                }
                let store = Store::open(path)?;
                let reason = match &err {
                    StoreError::DamagedFile { what, .. } => what.clone(),
                    other => other.to_string(),
                };
                Ok((
                    store,
                    Some(format!(
                        "The store {} could not be used ({reason}); it was kept aside as {} and hookscope continues on a fresh store.",
                        path.display(),
                        aside.display()
                    )),
                ))
            }
            Err(other) => Err(other),
        }
    }

    /// A handle for submitting writes.
    pub fn writer(&self) -> StoreWriter {
        self.writer.clone()
    }

    /// A new read connection.
    pub fn reader(&self) -> Result<Reader, StoreError> {
        Reader::open(&self.path)
    }
}

impl Store {
    /// Stops accepting writes from this handle and waits for the writer thread to finish what
    /// it holds. Returns once every other [`StoreWriter`] clone has been dropped too.
    pub fn shutdown(mut self) {
        let (dead, _) = mpsc::channel(1);
        self.writer = StoreWriter { sender: dead };
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl StoreWriter {
    /// Writes a delivery and returns it as stored, after its transaction has committed.
    pub async fn insert(&self, record: NewRecord) -> Result<StoredDelivery, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(WriteJob::Insert {
                record: Box::new(record),
                reply,
            })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Writes many deliveries in one transaction (imports, seeding a store for benchmarks);
    /// returns how many were written.
    pub fn insert_many_blocking(&self, records: Vec<NewRecord>) -> Result<usize, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .blocking_send(WriteJob::InsertMany { records, reply })
            .map_err(|_| StoreError::WriterGone)?;
        answer.blocking_recv().map_err(|_| StoreError::WriterGone)?
    }

    /// Records an outbound attempt; returns its id.
    pub async fn attempt(&self, attempt: Attempt) -> Result<i64, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(WriteJob::Attempt {
                attempt: Box::new(attempt),
                reply,
            })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Applies a maintenance task from async code.
    pub async fn maintain(&self, task: Maintenance) -> Result<usize, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(WriteJob::Maintain {
                task: Box::new(task),
                reply,
            })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Applies a maintenance task; returns how many deliveries it touched.
    pub fn maintain_blocking(&self, task: Maintenance) -> Result<usize, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .blocking_send(WriteJob::Maintain {
                task: Box::new(task),
                reply,
            })
            .map_err(|_| StoreError::WriterGone)?;
        answer.blocking_recv().map_err(|_| StoreError::WriterGone)?
    }

    /// The same as [`StoreWriter::insert`], for code outside the async runtime.
    pub fn insert_blocking(&self, record: NewRecord) -> Result<StoredDelivery, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .blocking_send(WriteJob::Insert {
                record: Box::new(record),
                reply,
            })
            .map_err(|_| StoreError::WriterGone)?;
        answer.blocking_recv().map_err(|_| StoreError::WriterGone)?
    }
}

/// Turns SQLite's "not a database", "corrupt" and "busy" answers into what they mean here.
fn classify(err: StoreError, path: &Path) -> StoreError {
    let source = match &err {
        StoreError::Open { source, .. } | StoreError::Query(source) => source,
        _ => return err,
    };
    match source.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => StoreError::DamagedFile {
            path: path.to_path_buf(),
            what: "it is not a SQLite database".into(),
        },
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => StoreError::DamagedFile {
            path: path.to_path_buf(),
            what: "SQLite reports it as corrupt".into(),
        },
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Locked {
                path: path.to_path_buf(),
            }
        }
        _ => err,
    }
}

/// A file shorter than the size its header declares lost its end (a copy or a disk that
/// stopped short). Checked only without a pending write-ahead log, where the header is exact.
fn check_not_truncated(path: &Path) -> Result<(), StoreError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let wal = path.with_file_name(format!(
        "{}-wal",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) || meta.len() == 0 {
        return Ok(());
    }
    let mut header = [0u8; 100];
    let read =
        std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header));
    let damaged = |what: String| StoreError::DamagedFile {
        path: path.to_path_buf(),
        what,
    };
    if read.is_err() || &header[..16] != b"SQLite format 3\0" {
        return Err(damaged("it is not a SQLite database".into()));
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536u64,
        n => u64::from(n),
    };
    let pages = u64::from(u32::from_be_bytes([
        header[28], header[29], header[30], header[31],
    ]));
    if pages > 0 && meta.len() < pages * page_size {
        return Err(damaged(format!(
            "it is truncated: {} bytes where its header declares {}",
            meta.len(),
            pages * page_size
        )));
    }
    Ok(())
}

fn open_connection(path: &Path, read_only: bool) -> Result<Connection, StoreError> {
    let open_err = |source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    };
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(open_err)?;
    if !read_only {
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(open_err)?;
        // The writer touches ten indexes and the text index per delivery: keep their hot pages
        // in memory (64 MiB), and checkpoint the log in larger, rarer steps.
        conn.pragma_update(None, "cache_size", -65_536)
            .map_err(open_err)?;
        conn.pragma_update(None, "wal_autocheckpoint", 8_192)
            .map_err(open_err)?;
    }
    Ok(conn)
}

fn migrate(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let open_err = |source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    };
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(open_err)?;
    let supported = MIGRATIONS.len() as i64;
    if version > supported {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        let tx = conn.unchecked_transaction().map_err(open_err)?;
        tx.execute_batch(sql).map_err(open_err)?;
        tx.pragma_update(None, "user_version", (index + 1) as i64)
            .map_err(open_err)?;
        tx.commit().map_err(open_err)?;
    }
    Ok(())
}

/// Rows indexed per idle step of the writer.
const INDEX_CHUNK: usize = 64;
/// Beyond this many deliveries not yet in the text index, the writer indexes a little after every
/// batch even when busy, so a sustained load cannot starve the index.
const INDEX_BACKLOG: i64 = 20_000;

fn writer_loop(mut conn: Connection, mut receiver: mpsc::Receiver<WriteJob>) {
    let mut pending = None;
    // Acknowledging comes first: the text index is derived data, filled when the queue is
    // empty (milliseconds behind when idle).
    let mut backlog = index_backlog(&conn).unwrap_or(0);
    loop {
        let next = match pending.take() {
            Some(job) => Some(job),
            None => match receiver.try_recv() {
                Ok(job) => Some(job),
                Err(mpsc::error::TryRecvError::Disconnected) => None,
                Err(mpsc::error::TryRecvError::Empty) => {
                    if backlog > 0 {
                        match index_pending(&mut conn, INDEX_CHUNK) {
                            Ok(n) if n > 0 => {
                                backlog = backlog.saturating_sub(n as i64);
                                continue;
                            }
                            _ => backlog = 0,
                        }
                    }
                    receiver.blocking_recv()
                }
            },
        };
        let Some(first) = next else {
            // Closing: index what is left, so the next start finds it done.
            while index_pending(&mut conn, INDEX_CHUNK).is_ok_and(|n| n > 0) {}
            break;
        };
        let (record, reply) = match first {
            WriteJob::Insert { record, reply } => (record, reply),
            WriteJob::Maintain { task, reply } => {
                let _ = reply.send(maintain(&mut conn, &task).map_err(StoreError::from));
                continue;
            }
            WriteJob::Attempt { attempt, reply } => {
                let _ = reply.send(write_attempt(&conn, &attempt).map_err(StoreError::from));
                continue;
            }
            WriteJob::InsertMany { records, reply } => {
                // Bulk writes (imports, seeding) are searchable as soon as they are answered.
                let refs: Vec<&NewRecord> = records.iter().collect();
                let result = write_batch(&mut conn, &refs)
                    .map(|stored| stored.len())
                    .and_then(|n| {
                        while index_pending(&mut conn, INDEX_CHUNK * 8)? > 0 {}
                        Ok(n)
                    })
                    .map_err(|e| StoreError::Write(e.to_string()));
                let _ = reply.send(result);
                continue;
            }
        };
        // Group commit: take every insert already waiting, up to a batch, into one transaction.
        let mut batch = vec![(record, reply)];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(WriteJob::Insert { record, reply }) => batch.push((record, reply)),
                Ok(other) => {
                    pending = Some(other);
                    break;
                }
                Err(_) => break,
            }
        }
        let records: Vec<&NewRecord> = batch.iter().map(|(record, _)| record.as_ref()).collect();
        backlog += records.len() as i64;
        if backlog > INDEX_BACKLOG
            && let Ok(n) = index_pending(&mut conn, records.len())
        {
            backlog -= n as i64;
        }
        match write_batch(&mut conn, &records) {
            Ok(stored) => {
                for ((_, reply), stored) in batch.into_iter().zip(stored) {
                    let _ = reply.send(Ok(stored));
                }
            }
            Err(_) => {
                // One bad record must not fail its neighbours: write each alone, so every
                // delivery gets its own verdict.
                for (record, reply) in batch {
                    let result = write_batch(&mut conn, &[&record])
                        .map(|mut v| v.remove(0))
                        .map_err(|e| StoreError::Write(e.to_string()));
                    let _ = reply.send(result);
                }
            }
        }
    }
}

/// How many deliveries are not yet in the text index.
fn index_backlog(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.query_row(
        "SELECT COALESCE((SELECT MAX(id) FROM deliveries), 0) - (SELECT last_id FROM fts_state)",
        [],
        |r| r.get(0),
    )
}

/// Adds up to `max` deliveries not yet in the text index; returns how many.
fn index_pending(conn: &mut Connection, max: usize) -> Result<usize, rusqlite::Error> {
    let tx = conn.transaction()?;
    let last: i64 = tx.query_row("SELECT last_id FROM fts_state", [], |r| r.get(0))?;
    let mut done = 0;
    let mut newest = last;
    {
        let mut select = tx.prepare_cached(
            "SELECT id, path, headers, body FROM deliveries WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO deliveries_fts (rowid, path, headers, body) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut rows = select.query(params![last, max as i64])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let path: String = row.get(1)?;
            let headers = decode_headers(&row.get::<_, Vec<u8>>(2)?).unwrap_or_default();
            let body: Vec<u8> = row.get(3)?;
            insert.execute(params![
                id,
                path,
                searchable_headers(&headers),
                searchable_body(&body)
            ])?;
            newest = id;
            done += 1;
        }
    }
    if done > 0 {
        tx.execute("UPDATE fts_state SET last_id = ?1", params![newest])?;
    }
    tx.commit()?;
    Ok(done)
}

fn maintain(conn: &mut Connection, task: &Maintenance) -> Result<usize, rusqlite::Error> {
    let tx = conn.transaction()?;
    let touched = match task {
        Maintenance::Recheck {
            id,
            scheme,
            signature,
            timestamp,
        } => {
            let json: Option<String> = tx
                .query_row(
                    "SELECT checks_json FROM deliveries WHERE id = ?1",
                    params![id],
                    |r| r.get(0),
                )
                .optional()?;
            match json.and_then(|j| serde_json::from_str::<Checks>(&j).ok()) {
                None => 0,
                Some(mut checks) => {
                    checks.signature = (**signature).clone();
                    checks.timestamp = (**timestamp).clone();
                    let json = serde_json::to_string(&checks)
                        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
                    tx.execute(
                        "UPDATE deliveries SET scheme = ?2, sig_status = ?3, ts_status = ?4, checks_json = ?5 WHERE id = ?1",
                        params![id, scheme, checks.signature.status.as_str(), checks.timestamp.status.as_str(), json],
                    )?
                }
            }
        }
        Maintenance::SetResponse { id, status, note } => tx.execute(
            "UPDATE deliveries SET response_status = ?2, note = COALESCE(note || ' ', '') || ?3 WHERE id = ?1",
            params![id, status, note],
        )?,
        Maintenance::Delete(ids) => {
            let mut job_of = tx.prepare_cached("SELECT job_id FROM deliveries WHERE id = ?1")?;
            let mut delete = tx.prepare_cached("DELETE FROM deliveries WHERE id = ?1")?;
            let mut delete_fts =
                tx.prepare_cached("DELETE FROM deliveries_fts WHERE rowid = ?1")?;
            let mut jobs: Vec<String> = Vec::new();
            let mut n = 0;
            for id in ids {
                if let Some(Some(job)) = job_of
                    .query_row(params![id], |r| r.get::<_, Option<String>>(0))
                    .optional()?
                {
                    jobs.push(job);
                }
                n += delete.execute(params![id])?;
                delete_fts.execute(params![id])?;
            }
            // Only the jobs of the deleted deliveries change: recount those, not the history.
            jobs.sort();
            jobs.dedup();
            let mut forget = tx.prepare_cached("DELETE FROM jobs WHERE job_id = ?1")?;
            let mut recount = tx.prepare_cached(
                "INSERT INTO jobs SELECT job_id, MIN(received_at_ms), MAX(received_at_ms), MAX(id), COUNT(*)
                 FROM deliveries WHERE job_id = ?1 GROUP BY job_id",
            )?;
            for job in &jobs {
                forget.execute(params![job])?;
                recount.execute(params![job])?;
            }
            n
        }
        Maintenance::Clear => {
            let n = tx.execute("DELETE FROM deliveries", [])?;
            tx.execute("DELETE FROM deliveries_fts", [])?;
            tx.execute("DELETE FROM event_ids", [])?;
            tx.execute("DELETE FROM jobs", [])?;
            tx.execute("DELETE FROM attempts", [])?;
            tx.execute("UPDATE fts_state SET last_id = 0", [])?;
            n
        }
        Maintenance::Retain {
            max_age_ms,
            max_count,
            now_ms,
        } => {
            let mut cutoff_id = 0i64;
            if let Some(age) = max_age_ms {
                let id: Option<i64> = tx.query_row(
                    "SELECT MAX(id) FROM deliveries WHERE received_at_ms < ?1",
                    params![now_ms - age],
                    |r| r.get(0),
                )?;
                cutoff_id = cutoff_id.max(id.unwrap_or(0));
            }
            if let Some(count) = max_count {
                let id: Option<i64> = tx
                    .query_row(
                        "SELECT id FROM deliveries ORDER BY id DESC LIMIT 1 OFFSET ?1",
                        params![(*count).max(0)],
                        |r| r.get(0),
                    )
                    .optional()?;
                cutoff_id = cutoff_id.max(id.unwrap_or(0));
            }
            tx.execute(
                "DELETE FROM deliveries_fts WHERE rowid <= ?1",
                params![cutoff_id],
            )?;
            // The jobs that lose deliveries are recounted from what remains (or forgotten).
            tx.execute_batch(
                "CREATE TEMP TABLE IF NOT EXISTS touched_jobs (job_id TEXT PRIMARY KEY);
                 DELETE FROM touched_jobs;",
            )?;
            tx.execute(
                "INSERT OR IGNORE INTO touched_jobs SELECT job_id FROM deliveries WHERE id <= ?1 AND job_id IS NOT NULL",
                params![cutoff_id],
            )?;
            let n = tx.execute("DELETE FROM deliveries WHERE id <= ?1", params![cutoff_id])?;
            tx.execute_batch(
                "DELETE FROM jobs WHERE job_id IN (SELECT job_id FROM touched_jobs);
                 INSERT INTO jobs SELECT job_id, MIN(received_at_ms), MAX(received_at_ms), MAX(id), COUNT(*)
                     FROM deliveries WHERE job_id IN (SELECT job_id FROM touched_jobs) GROUP BY job_id;",
            )?;
            n
        }
    };
    tx.commit()?;
    Ok(touched)
}

fn write_batch(
    conn: &mut Connection,
    records: &[&NewRecord],
) -> Result<Vec<StoredDelivery>, rusqlite::Error> {
    let tx = conn.transaction()?;
    let mut stored = Vec::with_capacity(records.len());
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO deliveries (id, received_at_ms, method, path, query, headers, body, body_size,
                body_complete, remote_addr, endpoint, scheme, event_id, event_type, job_id, job_status,
                sig_status, ts_status, dup_status, first_id, checks_json, response_status, latency_ms, note,
                job_created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
        )?;
        let mut find_event = tx.prepare_cached(
            "UPDATE event_ids SET seen = seen + 1 WHERE endpoint = ?1 AND event_id = ?2
             RETURNING first_delivery_id, seen - 1",
        )?;
        let mut upsert_job = tx.prepare_cached(
            "INSERT INTO jobs (job_id, first_seen_ms, last_seen_ms, last_delivery_id, deliveries) VALUES (?1, ?2, ?2, ?3, 1)
             ON CONFLICT (job_id) DO UPDATE SET last_seen_ms = MAX(last_seen_ms, ?2),
                 first_seen_ms = MIN(first_seen_ms, ?2), last_delivery_id = ?3, deliveries = deliveries + 1",
        )?;
        let mut add_event = tx.prepare_cached(
            "INSERT INTO event_ids (endpoint, event_id, first_delivery_id) VALUES (?1, ?2, ?3)",
        )?;
        let next_id: i64 =
            tx.query_row("SELECT MAX(COALESCE((SELECT MAX(id) FROM deliveries), 0), (SELECT last_id FROM fts_state)) + 1", [], |r| {
                r.get(0)
            })?;
        for (offset, record) in records.iter().enumerate() {
            let id = next_id + offset as i64;
            let evaluation = &record.evaluation;
            let duplicate = match &evaluation.event_id {
                None => DuplicateCheck::skipped(),
                Some(event_id) => {
                    let seen: Option<(i64, i64)> = find_event
                        .query_row(params![record.endpoint, event_id], |r| {
                            Ok((r.get(0)?, r.get(1)?))
                        })
                        .optional()?;
                    match seen {
                        Some((first_id, seen_before)) => {
                            DuplicateCheck::duplicate(first_id, event_id, seen_before.max(1) as u64)
                        }
                        None if evaluation.signature.status == SignatureStatus::Fail => {
                            // A delivery that fails verification must not claim the event id,
                            // or a forged first copy would make the real one look like a retry.
                            DuplicateCheck::first_unverified(id, event_id)
                        }
                        None => {
                            // The primary key on (endpoint, event_id) is what makes this the
                            // only `first`: a second insert of the same pair would fail.
                            add_event.execute(params![record.endpoint, event_id, id])?;
                            DuplicateCheck::first(id, event_id)
                        }
                    }
                }
            };
            let checks = Checks {
                signature: evaluation.signature.clone(),
                timestamp: evaluation.timestamp.clone(),
                duplicate,
            };
            let checks_json = serde_json::to_string(&checks)
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
            let d = &record.delivery;
            insert.execute(params![
                id,
                d.received_at_ms,
                d.method,
                d.path,
                d.query,
                encode_headers(&d.headers),
                d.body,
                d.body_size as i64,
                d.body_complete,
                d.remote_addr,
                record.endpoint,
                evaluation.scheme,
                evaluation.event_id,
                evaluation.event_type,
                evaluation.job.as_ref().map(|j| j.job_id.clone()),
                evaluation.job.as_ref().and_then(|j| j.status.clone()),
                checks.signature.status.as_str(),
                checks.timestamp.status.as_str(),
                checks.duplicate.status.as_str(),
                checks.duplicate.first_id,
                checks_json,
                record.response_status,
                record.latency_ms as i64,
                record.note,
                evaluation.job.as_ref().and_then(|j| j.created_at_ms),
            ])?;
            if let Some(job) = &evaluation.job {
                upsert_job.execute(params![job.job_id, d.received_at_ms, id])?;
            }
            stored.push(StoredDelivery {
                id,
                delivery: record.delivery.clone(),
                endpoint: record.endpoint.clone(),
                scheme: evaluation.scheme.clone(),
                event_id: evaluation.event_id.clone(),
                event_type: evaluation.event_type.clone(),
                job: evaluation.job.clone(),
                checks,
                response_status: record.response_status,
                latency_ms: record.latency_ms,
                note: record.note.clone(),
            });
        }
    }
    tx.commit()?;
    Ok(stored)
}

/// The most of a body the free-text index holds.
const FTS_BODY_LIMIT: usize = 64 * 1024;

fn searchable_headers(headers: &[crate::delivery::Header]) -> String {
    let mut text = String::new();
    for h in headers {
        text.push_str(&h.name);
        text.push_str(": ");
        text.push_str(&h.value_lossy());
        text.push('\n');
    }
    text
}

fn searchable_body(body: &[u8]) -> Option<String> {
    let head = &body[..body.len().min(FTS_BODY_LIMIT)];
    match std::str::from_utf8(head) {
        Ok(text) => Some(text.to_string()),
        // Cut inside a character: keep the valid part.
        Err(e) if e.error_len().is_none() => {
            Some(String::from_utf8_lossy(&head[..e.valid_up_to()]).into_owned())
        }
        // Binary bodies are not words.
        Err(_) => None,
    }
}

/// One line of the deliveries list: what the list shows, without the body.
#[derive(Debug, Clone, PartialEq)]
pub struct ListRow {
    /// The delivery id.
    pub id: i64,
    /// Arrival time, Unix milliseconds.
    pub received_at_ms: i64,
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Event type.
    pub event_type: Option<String>,
    /// Event id.
    pub event_id: Option<String>,
    /// Job id.
    pub job_id: Option<String>,
    /// Verdicts (for the badges and their hover text).
    pub checks: Checks,
    /// Body size in bytes.
    pub body_size: u64,
    /// The status hookscope answered.
    pub response_status: u16,
}

/// A read connection.
pub struct Reader {
    conn: Connection,
}

const SELECT_COLUMNS: &str = "id, received_at_ms, method, path, query, headers, body, body_size, body_complete,
    remote_addr, endpoint, scheme, event_id, event_type, job_id, job_status, checks_json, response_status,
    latency_ms, note, job_created_at_ms";

impl Reader {
    /// Opens a read connection to an existing store (creating and migrating it if absent).
    pub fn open(path: &Path) -> Result<Reader, StoreError> {
        let current = if path.exists() {
            let conn = open_connection(path, true)?;
            conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))?
        } else {
            0
        };
        if current < MIGRATIONS.len() as i64 {
            // A store from an older hookscope (or none yet): bring it up to date first.
            let conn = open_connection(path, false)?;
            migrate(&conn, path)?;
        } else if current > MIGRATIONS.len() as i64 {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: current,
                supported: MIGRATIONS.len() as i64,
            });
        }
        Ok(Reader {
            conn: open_connection(path, true)?,
        })
    }

    /// How many deliveries the store holds.
    pub fn count(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM deliveries", [], |r| r.get(0))?)
    }

    /// The newest deliveries first, at most `limit`, older than `before_id` when given.
    pub fn list(
        &self,
        limit: usize,
        before_id: Option<i64>,
    ) -> Result<Vec<StoredDelivery>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SELECT_COLUMNS} FROM deliveries WHERE id < ?1 ORDER BY id DESC LIMIT ?2"
        ))?;
        let rows = stmt.query_map(
            params![before_id.unwrap_or(i64::MAX), limit as i64],
            read_row,
        )?;
        rows.map(|r| r?).collect()
    }

    /// One delivery by id.
    pub fn get(&self, id: i64) -> Result<Option<StoredDelivery>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SELECT_COLUMNS} FROM deliveries WHERE id = ?1"
        ))?;
        match stmt.query_row(params![id], read_row).optional()? {
            Some(row) => Ok(Some(row?)),
            None => Ok(None),
        }
    }

    /// How many deliveries match a filter.
    pub fn count_matching(&self, filter: &Filter) -> Result<i64, StoreError> {
        if let Some(query) = filter.text_only() {
            // Free text alone: the index knows the count without joining the table.
            let mut stmt = self.conn.prepare_cached(
                "SELECT COUNT(*) FROM deliveries_fts WHERE deliveries_fts MATCH ?1",
            )?;
            return Ok(stmt.query_row(params![query], |r| r.get(0))?);
        }
        let (condition, params) = filter.to_sql();
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT COUNT(*) FROM deliveries WHERE {condition}"
        ))?;
        Ok(stmt.query_row(rusqlite::params_from_iter(params.iter()), |r| r.get(0))?)
    }

    /// The rows at positions `offset..offset + limit` of the filtered list, oldest first.
    pub fn page(
        &self,
        filter: &Filter,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<ListRow>, StoreError> {
        let (condition, mut params) = filter.to_sql();
        params.push(limit.to_string());
        params.push(offset.to_string());
        let n = params.len();
        // Unfiltered, walk the narrow id index rather than the table, whose rows carry bodies.
        let source = if filter.is_empty() {
            "deliveries INDEXED BY deliveries_by_id"
        } else {
            "deliveries"
        };
        let ids_sql = format!(
            "SELECT id FROM {source} WHERE {condition} ORDER BY id LIMIT ?{} OFFSET ?{n}",
            n - 1
        );
        let sql =
            format!("SELECT {LIST_COLUMNS} FROM deliveries WHERE id IN ({ids_sql}) ORDER BY id");
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), raw_list_row)?;
        rows.map(|row| list_row(row?)).collect()
    }

    /// The last `limit` rows of the filtered list, oldest first: walked from the newest end, so
    /// the tail of a long history costs the same as its head (no OFFSET).
    pub fn page_tail(&self, filter: &Filter, limit: usize) -> Result<Vec<ListRow>, StoreError> {
        let ids: Vec<i64> = match filter.text_only() {
            Some(query) => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT rowid FROM deliveries_fts WHERE deliveries_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2",
                )?;
                let rows = stmt.query_map(params![query, limit as i64], |r| r.get(0))?;
                rows.collect::<Result<_, _>>()?
            }
            None => {
                let (condition, mut params) = filter.to_sql();
                params.push(limit.to_string());
                let source = if filter.is_empty() {
                    "deliveries INDEXED BY deliveries_by_id"
                } else {
                    "deliveries"
                };
                let sql = format!(
                    "SELECT id FROM {source} WHERE {condition} ORDER BY id DESC LIMIT ?{}",
                    params.len()
                );
                let mut stmt = self.conn.prepare_cached(&sql)?;
                let rows =
                    stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| r.get(0))?;
                rows.collect::<Result<_, _>>()?
            }
        };
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // The ids are integers this function just read: safe to inline.
        let list: Vec<String> = ids.iter().map(i64::to_string).collect();
        let sql = format!(
            "SELECT {LIST_COLUMNS} FROM deliveries WHERE id IN ({}) ORDER BY id",
            list.join(",")
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([], raw_list_row)?;
        rows.map(|row| list_row(row?)).collect()
    }

    /// The position of a delivery in the filtered list (for keeping a selection in view).
    pub fn position_of(&self, filter: &Filter, id: i64) -> Result<i64, StoreError> {
        let (condition, mut params) = filter.to_sql();
        params.push(id.to_string());
        let sql = format!(
            "SELECT COUNT(*) FROM deliveries WHERE {condition} AND id < ?{}",
            params.len()
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        Ok(stmt.query_row(rusqlite::params_from_iter(params.iter()), |r| r.get(0))?)
    }

    /// The most recently active jobs, newest first, whose id starts with `prefix`.
    pub fn recent_jobs(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT job_id FROM jobs WHERE job_id >= ?1 AND job_id < ?2 ORDER BY last_delivery_id DESC LIMIT ?3",
        )?;
        let end = format!("{prefix}\u{10FFFF}");
        let rows = stmt.query_map(params![prefix, end, limit as i64], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many jobs the store knows.
    pub fn count_jobs(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM jobs", [], |r| r.get(0))?)
    }

    /// The deliveries of one job, for its timeline.
    pub fn job_deliveries(
        &self,
        job_id: &str,
    ) -> Result<Vec<crate::timeline::JobDelivery>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, event_id, event_type, job_status, job_created_at_ms, received_at_ms, sig_status, ts_status, dup_status
             FROM deliveries WHERE job_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![job_id], |r| {
            Ok(crate::timeline::JobDelivery {
                delivery_id: r.get(0)?,
                event_id: r.get(1)?,
                event_type: r.get(2)?,
                state: r.get(3)?,
                created_at_ms: r.get(4)?,
                received_at_ms: r.get(5)?,
                signature: r.get(6)?,
                timestamp: r.get(7)?,
                duplicate: r.get(8)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The outbound attempts made from a delivery, oldest first.
    pub fn attempts_for(&self, delivery_id: i64) -> Result<Vec<Attempt>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, delivery_id, kind, url, sent_at_ms, request_headers, request_body, status, response_headers,
                response_body, latency_ms, error FROM attempts WHERE delivery_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![delivery_id], |r| {
            Ok(Attempt {
                id: r.get(0)?,
                delivery_id: r.get(1)?,
                kind: r.get(2)?,
                url: r.get(3)?,
                sent_at_ms: r.get(4)?,
                request_headers: decode_headers(&r.get::<_, Vec<u8>>(5)?).unwrap_or_default(),
                request_body: r.get(6)?,
                status: r.get(7)?,
                response_headers: decode_headers(&r.get::<_, Vec<u8>>(8)?).unwrap_or_default(),
                response_body: r.get(9)?,
                latency_ms: r.get::<_, i64>(10)?.max(0) as u64,
                error: r.get(11)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many deliveries have each duplicate status, for summaries and tests.
    pub fn count_duplicates(&self, status: DuplicateStatus) -> Result<i64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM deliveries WHERE dup_status = ?1",
            params![status.as_str()],
            |r| r.get(0),
        )?)
    }

    /// Runs `PRAGMA integrity_check`; `Ok(())` when SQLite answers `ok`.
    pub fn integrity_check(&self) -> Result<(), StoreError> {
        let answer: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        if answer == "ok" {
            Ok(())
        } else {
            Err(StoreError::Damaged {
                id: 0,
                what: answer,
            })
        }
    }
}

const LIST_COLUMNS: &str = "id, received_at_ms, method, path, event_type, event_id, job_id, checks_json, body_size, response_status";

type RawListRow = (
    i64,
    i64,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    i64,
    i64,
);

fn raw_list_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawListRow> {
    Ok((
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
        row.get(8)?,
        row.get(9)?,
    ))
}

fn list_row(raw: RawListRow) -> Result<ListRow, StoreError> {
    let (id, received_at_ms, method, path, event_type, event_id, job_id, checks_json, size, status) =
        raw;
    let checks = serde_json::from_str::<Checks>(&checks_json).map_err(|e| StoreError::Damaged {
        id,
        what: format!("its checks cannot be decoded: {e}"),
    })?;
    Ok(ListRow {
        id,
        received_at_ms,
        method,
        path,
        event_type,
        event_id,
        job_id,
        checks,
        body_size: size.max(0) as u64,
        response_status: status.clamp(0, u16::MAX as i64) as u16,
    })
}

type RowResult = Result<StoredDelivery, StoreError>;

fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RowResult> {
    let id: i64 = row.get(0)?;
    let header_blob: Vec<u8> = row.get(5)?;
    let checks_json: String = row.get(16)?;
    let Some(headers) = decode_headers(&header_blob) else {
        return Ok(Err(StoreError::Damaged {
            id,
            what: "its headers cannot be decoded".into(),
        }));
    };
    let checks: Checks = match serde_json::from_str(&checks_json) {
        Ok(c) => c,
        Err(e) => {
            return Ok(Err(StoreError::Damaged {
                id,
                what: format!("its checks cannot be decoded: {e}"),
            }));
        }
    };
    let job_id: Option<String> = row.get(14)?;
    let job_status: Option<String> = row.get(15)?;
    Ok(Ok(StoredDelivery {
        id,
        delivery: Delivery {
            received_at_ms: row.get(1)?,
            method: row.get(2)?,
            path: row.get(3)?,
            query: row.get(4)?,
            headers,
            body: row.get(6)?,
            body_size: row.get::<_, i64>(7)?.max(0) as u64,
            body_complete: row.get(8)?,
            remote_addr: row.get(9)?,
        },
        endpoint: row.get(10)?,
        scheme: row.get(11)?,
        event_id: row.get(12)?,
        event_type: row.get(13)?,
        job: job_id.map(|job_id| JobRef {
            job_id,
            status: job_status,
            created_at_ms: row.get(20).ok().flatten(),
        }),
        checks,
        response_status: row.get::<_, i64>(17)?.clamp(0, u16::MAX as i64) as u16,
        latency_ms: row.get::<_, i64>(18)?.max(0) as u64,
        note: row.get(19)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_from_a_newer_hookscope_is_refused_with_its_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store.sqlite");
        let conn = Connection::open(&path).expect("open");
        conn.pragma_update(None, "user_version", 99)
            .expect("set version");
        drop(conn);
        let err = Store::open(&path).expect_err("newer schema");
        assert!(err.to_string().contains("schema version 99"), "{err}");
    }

    #[test]
    fn a_version_1_store_is_migrated_and_its_jobs_backfilled() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store.sqlite");
        let conn = Connection::open(&path).expect("open");
        let tx = conn.unchecked_transaction().expect("tx");
        tx.execute_batch(MIGRATIONS[0]).expect("v1");
        tx.pragma_update(None, "user_version", 1).expect("version");
        tx.execute(
            "INSERT INTO deliveries (id, received_at_ms, method, path, query, headers, body, body_size, body_complete,
                endpoint, job_id, sig_status, ts_status, dup_status, checks_json, response_status, latency_ms)
             VALUES (7, 1000, 'POST', '/', '', x'', x'', 0, 1, '/', 'job_1', 'skipped', 'skipped', 'skipped', '{}', 200, 0)",
            [],
        )
        .expect("a v1 row");
        tx.commit().expect("commit");
        drop(conn);
        let reader = Reader::open(&path).expect("migrates");
        assert_eq!(reader.recent_jobs("", 10).expect("jobs"), ["job_1"]);
        assert_eq!(
            reader.job_deliveries("job_1").expect("deliveries")[0].delivery_id,
            7
        );
    }

    #[test]
    fn reopening_applies_no_migration_twice() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store.sqlite");
        drop(Store::open(&path).expect("first open"));
        drop(Store::open(&path).expect("second open"));
        let reader = Reader::open(&path).expect("reader");
        assert_eq!(reader.count().expect("count"), 0);
    }
}
