//! The writer thread: this process's only write connection. It takes every insert waiting (up
//! to [`MAX_BATCH`]) into one `BEGIN IMMEDIATE` transaction, decides each delivery's id and
//! duplicate verdict inside it, commits (`synchronous = FULL`: synced before `COMMIT` returns),
//! and only then answers each one. Maintenance ([`crate::store::maintain`]), attempts and bulk
//! writes run in transactions of their own between batches. When idle it truncates the WAL.

use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension as _, params};
use tokio::sync::{mpsc, oneshot};

use crate::domain::attempt::Attempt;
use crate::domain::checks::{DuplicateCheck, SignatureStatus, duplicate_scope};
use crate::store::error::StoreError;
use crate::store::headers::encode_headers;
use crate::store::health::{self, Health, Identity, Trouble};
use crate::store::maintain::{Maintenance, maintain, write_attempt};
use crate::store::records::{NewRecord, Routed, StoredDelivery, Written};

/// How many pending writes the channel holds before senders wait.
pub(crate) const WRITE_QUEUE: usize = 4096;
/// The most deliveries one transaction takes.
const MAX_BATCH: usize = 256;
/// How long a batch waits for another process's write lock before the health says so.
const BUSY_SAY_AFTER: Duration = Duration::from_secs(1);
/// The longest a batch waits for another process's write lock before it is refused (503).
const BUSY_GIVE_UP: Duration = Duration::from_secs(10);
/// The busy timeout of statements that need no wait of the batch's kind (maintenance, bulk).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// After this long without a write, the writer checkpoints the WAL into the database file and
/// truncates it (and the text index's).
const IDLE_CHECKPOINT: Duration = Duration::from_secs(1);
/// Rows per transaction of the text index when a bulk write (import, seeding) indexes its own
/// rows before answering.
const BULK_INDEX_CHUNK: usize = 512;

pub(crate) enum WriteJob {
    Insert {
        record: Box<NewRecord>,
        reply: Reply,
    },
    Attempt {
        attempt: Box<Attempt>,
        /// The status answered for the delivery (a mirrored handler's) and why, recorded in
        /// the same transaction.
        answered: Option<(u16, String)>,
        reply: oneshot::Sender<Result<i64, StoreError>>,
    },
    InsertMany {
        records: Vec<NewRecord>,
        reply: oneshot::Sender<Result<Vec<i64>, StoreError>>,
    },
    Maintain {
        task: Box<Maintenance>,
        reply: oneshot::Sender<Result<usize, StoreError>>,
    },
}

type Reply = oneshot::Sender<Result<StoredDelivery, StoreError>>;

impl WriteJob {
    /// Answers the job with a refusal without trying it (the store is known to be unwritable).
    pub(crate) fn refuse(self, sentence: &str, health: &Health) {
        let err = || StoreError::Refused(sentence.to_string());
        match self {
            WriteJob::Insert { reply, .. } => {
                health.refused(1);
                let _ = reply.send(Err(err()));
            }
            WriteJob::Attempt { reply, .. } => {
                let _ = reply.send(Err(err()));
            }
            WriteJob::InsertMany { reply, .. } => {
                let _ = reply.send(Err(err()));
            }
            WriteJob::Maintain { reply, .. } => {
                let _ = reply.send(Err(err()));
            }
        }
    }
}

/// Why a batch was not stored.
enum BatchError {
    /// One delivery's row was refused by SQLite (its own fault): the others are written again
    /// without it.
    Row(usize, rusqlite::Error),
    /// The store refused the whole batch (the disk, the lock, the file gone): this refusal.
    Store(StoreError),
}

/// The writer thread's state.
struct Writer<'a> {
    conn: Connection,
    path: &'a std::path::Path,
    identity: Identity,
    health: &'a Health,
    /// The text index's file, for deletes and bulk writes (`None` when it cannot be opened:
    /// free text then lags, nothing else does).
    text: Option<Connection>,
    /// The thread that fills the text index (only the capturing process runs one).
    indexer: Option<crate::store::text::Indexer>,
    /// Something was committed since the last complete idle checkpoint.
    dirty: bool,
    last_write: Instant,
}

/// Runs the writer until every handle is dropped. `index`: this process holds the capture lock
/// and runs the text indexer.
pub(crate) fn writer_loop(
    conn: Connection,
    mut receiver: mpsc::Receiver<WriteJob>,
    path: &std::path::Path,
    health: &Health,
    index: bool,
) {
    let text = crate::store::text::open_for_writing(path, &conn).ok();
    let mut w = Writer {
        conn,
        path,
        identity: Identity::new(path),
        health,
        text,
        indexer: index
            .then(|| crate::store::text::Indexer::start(path))
            .flatten(),
        dirty: true,
        last_write: Instant::now(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .ok();
    let mut pending = None;
    while let Some(job) = pending
        .take()
        .or_else(|| w.next_job(&mut receiver, runtime.as_ref()))
    {
        match job {
            WriteJob::Insert { record, reply } => {
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
                w.insert_batch(batch);
            }
            WriteJob::Maintain { task, reply } => {
                let _ = reply.send(w.maintain(&task));
            }
            WriteJob::Attempt {
                attempt,
                answered,
                reply,
            } => {
                let _ = reply.send(w.transact(|tx| {
                    let id = write_attempt(tx, &attempt)?;
                    if let (Some((status, note)), Some(delivery)) = (&answered, attempt.delivery_id)
                    {
                        crate::store::maintain::set_response(tx, delivery, *status, note)?;
                    }
                    Ok(id)
                }));
            }
            WriteJob::InsertMany { records, reply } => {
                let _ = reply.send(w.insert_many(&records));
            }
        }
    }
    w.close();
}

impl Writer<'_> {
    /// The next job, waiting for it; checkpoints once the store has been idle for
    /// [`IDLE_CHECKPOINT`]. `None` once every handle is gone.
    fn next_job(
        &mut self,
        receiver: &mut mpsc::Receiver<WriteJob>,
        runtime: Option<&tokio::runtime::Runtime>,
    ) -> Option<WriteJob> {
        loop {
            match receiver.try_recv() {
                Ok(job) => return Some(job),
                Err(mpsc::error::TryRecvError::Disconnected) => return None,
                Err(mpsc::error::TryRecvError::Empty) => {}
            }
            let wait = if self.dirty {
                let quiet = self.last_write.elapsed();
                if quiet >= IDLE_CHECKPOINT {
                    self.checkpoint();
                    // Readers held the WAL when `dirty` is still set: try again later.
                    IDLE_CHECKPOINT
                } else {
                    IDLE_CHECKPOINT - quiet
                }
            } else {
                Duration::from_secs(3600)
            };
            match runtime {
                Some(rt) => {
                    if let Ok(job) =
                        rt.block_on(async { tokio::time::timeout(wait, receiver.recv()).await })
                    {
                        return job;
                    }
                }
                None => return receiver.blocking_recv(),
            }
        }
    }

    /// Copies the WAL into the database file and truncates it, for the store and its text
    /// index; never waits for readers (it tries again at the next idle moment).
    fn checkpoint(&mut self) {
        let truncate = |conn: &Connection| {
            let _ = conn.busy_timeout(Duration::ZERO);
            let done = conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    Ok(r.get::<_, i64>(0)? == 0)
                })
                .unwrap_or(false);
            let _ = conn.busy_timeout(BUSY_TIMEOUT);
            done
        };
        let store = truncate(&self.conn);
        let text = self.text.as_ref().is_none_or(truncate);
        self.dirty = !(store && text);
    }

    /// A transaction was committed (or tried).
    fn wrote(&mut self) {
        self.dirty = true;
        self.last_write = Instant::now();
        if let Some(indexer) = &self.indexer {
            indexer.kick();
        }
    }

    /// Records `trouble` in the health (with `refused` deliveries) and answers its refusal; the
    /// next write that succeeds ends it.
    fn say_trouble(&self, trouble: Trouble, refused: u64) -> StoreError {
        let sentence = trouble.sentence(self.path);
        self.health.failed(trouble, refused);
        StoreError::Refused(sentence)
    }

    /// A failed statement as the error to answer: a cause outside the record (disk full,
    /// read-only, gone) is recorded and refused; anything else is the record's own failure.
    fn failure(&self, err: rusqlite::Error, refused: u64) -> StoreError {
        match health::classify(&err, self.path) {
            Trouble::Failing(_) => StoreError::Write(err.to_string()),
            trouble => self.say_trouble(trouble, refused),
        }
    }

    /// Whether a write may be tried: not when the file is known to be gone, or was just found
    /// gone (writing on would land in a deleted file).
    fn writable(&mut self, refused: u64) -> Result<(), StoreError> {
        if !self.health.vanished() && self.identity.still_there() {
            return Ok(());
        }
        Err(self.say_trouble(Trouble::Vanished, refused))
    }

    /// `BEGIN IMMEDIATE`, waiting for another process's write lock once: after
    /// [`BUSY_SAY_AFTER`] the health says so, after [`BUSY_GIVE_UP`] the batch is refused.
    fn begin(&mut self, refused: u64) -> Result<(), StoreError> {
        let is_busy = |e: &rusqlite::Error| {
            matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            )
        };
        let _ = self.conn.busy_timeout(BUSY_SAY_AFTER);
        let mut result = self.conn.execute_batch("BEGIN IMMEDIATE");
        if result.as_ref().is_err_and(is_busy) {
            self.health.failed(Trouble::Busy, 0);
            let _ = self.conn.busy_timeout(BUSY_GIVE_UP - BUSY_SAY_AFTER);
            result = self.conn.execute_batch("BEGIN IMMEDIATE");
        }
        let _ = self.conn.busy_timeout(BUSY_TIMEOUT);
        result.map_err(|e| {
            if is_busy(&e) {
                self.say_trouble(Trouble::Busy, refused)
            } else {
                self.failure(e, refused)
            }
        })
    }

    /// Rolls back whatever transaction a failed statement left open.
    fn rollback(&self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }

    /// Runs `work` in its own `BEGIN IMMEDIATE` transaction, committed with a sync.
    fn transact<T>(
        &mut self,
        work: impl FnOnce(&Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, StoreError> {
        self.writable(0)?;
        self.begin(0)?;
        let result = work(&self.conn).and_then(|value| {
            self.conn.execute_batch("COMMIT")?;
            Ok(value)
        });
        self.rollback();
        self.wrote();
        match result {
            Ok(value) => {
                self.health.ok();
                Ok(value)
            }
            Err(e) => Err(self.failure(e, 0)),
        }
    }

    /// A maintenance task, in its own transaction (`maintain` opens it: a delete takes the text
    /// index's lock first).
    fn maintain(&mut self, task: &Maintenance) -> Result<usize, StoreError> {
        self.writable(0)?;
        let text = self.text.take();
        let result = maintain(&mut self.conn, text.as_ref(), task);
        self.text = text;
        self.wrote();
        result.map_err(|e| self.failure(e, 0))
    }

    /// Bulk writes (imports, seeding): one transaction, then indexed for free text before the
    /// answer, so they are searchable as soon as they are answered.
    fn insert_many(&mut self, records: &[NewRecord]) -> Result<Vec<i64>, StoreError> {
        let refs: Vec<&NewRecord> = records.iter().collect();
        let ids: Vec<i64> = self
            .transact(|tx| write_rows(tx, &refs).map_err(|(_, e)| e))?
            .into_iter()
            .flatten()
            .map(|written| written.id)
            .collect();
        if let Some(text) = &self.text {
            while crate::store::text::index_pending(&self.conn, text, BULK_INDEX_CHUNK, &|_| {})
                .is_ok_and(|n| n > 0)
            {}
        }
        Ok(ids)
    }

    /// Stores a batch of deliveries in one transaction and answers each once it committed. A
    /// row SQLite refuses is answered alone with the reason, and the rest written again
    /// without it; a refusal of the store's refuses the batch.
    fn insert_batch(&mut self, mut batch: Vec<(Box<NewRecord>, Reply)>) {
        let refuse_all = |batch: Vec<(Box<NewRecord>, Reply)>, refusal: StoreError| {
            for (_, reply) in batch {
                let _ = reply.send(Err(StoreError::Refused(refusal.to_string())));
            }
        };
        if let Err(refusal) = self.writable(batch.len() as u64) {
            return refuse_all(batch, refusal);
        }
        loop {
            let records: Vec<&NewRecord> = batch.iter().map(|(r, _)| r.as_ref()).collect();
            match self.write_batch(&records) {
                Ok(verdicts) => {
                    self.health.ok();
                    for ((record, reply), written) in batch.into_iter().zip(verdicts) {
                        let _ = reply.send(written.map(|written| record.into_stored(written)));
                    }
                    return;
                }
                Err(BatchError::Store(refusal)) => return refuse_all(batch, refusal),
                Err(BatchError::Row(index, err)) => {
                    let (record, reply) = batch.remove(index);
                    let reason = format!(
                        "the store refused the delivery {} {} ({} bytes): {err}",
                        record.delivery.method, record.delivery.path, record.delivery.body_size
                    );
                    self.health.row_refused(&reason);
                    let _ = reply.send(Err(StoreError::Write(reason)));
                    if batch.is_empty() {
                        return;
                    }
                }
            }
        }
    }

    /// One transaction for the batch: ids and verdicts decided and rows written, then the
    /// synced commit.
    fn write_batch(
        &mut self,
        records: &[&NewRecord],
    ) -> Result<Vec<Result<Written, StoreError>>, BatchError> {
        let refused = records.len() as u64;
        self.begin(refused).map_err(BatchError::Store)?;
        let written = write_rows(&self.conn, records).and_then(|verdicts| {
            self.conn
                .execute_batch("COMMIT")
                .map(|()| verdicts)
                .map_err(|e| (None, e))
        });
        self.rollback();
        self.wrote();
        written.map_err(|(index, err)| match index {
            Some(index) if is_the_rows_own(&err) => BatchError::Row(index, err),
            // Any failure of the store's, `Failing` too, is said in the health.
            _ => BatchError::Store(self.say_trouble(health::classify(&err, self.path), refused)),
        })
    }

    /// Closing: checkpoint, and let the indexer index what is committed, so the next start
    /// finds it done.
    fn close(&mut self) {
        self.checkpoint();
        // Dropping the indexer lets it index what is committed, for at most 2 s.
        self.indexer = None;
    }
}

/// Whether SQLite refused a row for what it holds (too big, a constraint, a value it cannot
/// take), rather than for the disk or the file: such a row fails alone.
fn is_the_rows_own(err: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{ConstraintViolation, ParameterOutOfRange, TooBig, TypeMismatch};
    match err.sqlite_error_code() {
        Some(code) => matches!(
            code,
            TooBig | ConstraintViolation | TypeMismatch | ParameterOutOfRange
        ),
        // Not SQLite's own error: a value that could not be converted.
        None => true,
    }
}

/// The id the next delivery gets: ids never go back, not after deletes, not after clearing
/// the history (`id_floor` holds the newest id ever deleted).
fn next_id(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.prepare_cached(
        "SELECT MAX(COALESCE((SELECT MAX(id) FROM deliveries), 0), (SELECT newest FROM id_floor)) + 1",
    )?
    .query_row([], |r| r.get(0))
}

/// Why rows were not written: which record failed (`None`: not one record's), and SQLite's error.
type RowsError = (Option<usize>, rusqlite::Error);

/// Decides each record's id, duplicate verdict and routing and writes its row, in the caller's
/// transaction. A relayed record is written only when its relay's cursor moves to it
/// ([`crate::store::maintain::advance_relay_cursor`]); otherwise its refusal is its verdict.
fn write_rows(
    conn: &Connection,
    records: &[&NewRecord],
) -> Result<Vec<Result<Written, StoreError>>, RowsError> {
    let mut id = next_id(conn).map_err(|e| (None, e))?;
    let mut verdicts = Vec::with_capacity(records.len());
    for (offset, record) in records.iter().enumerate() {
        if let Some(relayed) = &record.relayed
            && let Err(refused) = crate::store::maintain::advance_relay_cursor(conn, relayed)
                .map_err(|e| (Some(offset), e))?
        {
            verdicts.push(Err(refused));
            continue;
        }
        let duplicate = write_row(conn, record, id).map_err(|e| (Some(offset), e))?;
        let (routed, unrouted) = route(conn, record, id).map_err(|e| (Some(offset), e))?;
        verdicts.push(Ok(Written {
            id,
            duplicate,
            routed,
            unrouted,
        }));
        id += 1;
    }
    Ok(verdicts)
}

/// Which of its routing conditions the delivery just written as `id` meets, with the list's SQL
/// on its row, and when it meets none of its rules, the mark that says so: in the same
/// transaction. A condition SQLite cannot decide leaves the rules undecided (the delivery is
/// stored all the same); only a failing write of the mark fails the row.
fn route(
    conn: &Connection,
    record: &NewRecord,
    id: i64,
) -> Result<(Routed, Option<u32>), rusqlite::Error> {
    let routing = &record.routing;
    if routing.rules == 0 {
        return Ok((Routed::NotRouted, None));
    }
    let met = match crate::store::query::meets(conn, id, &routing.conditions) {
        Ok(met) => met,
        Err(e) => return Ok((Routed::Undecided(e.to_string()), None)),
    };
    if routing.unconditional || met.contains(&true) {
        return Ok((Routed::Met(met), None));
    }
    conn.prepare_cached("UPDATE deliveries SET unrouted = ?2 WHERE id = ?1")?
        .execute(params![id, routing.rules])?;
    Ok((Routed::Met(met), Some(routing.rules)))
}

/// What a delivery does to the (scope, event id) table.
enum EventEffect {
    /// Nothing (no event id, or a failing signature that must not claim it).
    None,
    /// It claims the event id in its scope: the first verified copy.
    Claim,
    /// One more copy of an event already claimed.
    Count,
}

/// The duplicate verdict of a delivery about to get `id`, decided against the unique index on
/// (scope, event id) inside the write transaction, so it is exact across processes too.
fn decide_duplicate(
    conn: &Connection,
    record: &NewRecord,
    scope: &str,
    id: i64,
) -> Result<(DuplicateCheck, EventEffect), rusqlite::Error> {
    let evaluation = &record.evaluation;
    if evaluation.handshake.is_some() {
        return Ok((DuplicateCheck::handshake(), EventEffect::None));
    }
    let Some(event_id) = &evaluation.event_id else {
        return Ok((DuplicateCheck::skipped(), EventEffect::None));
    };
    let seen: Option<(i64, i64)> = conn
        .prepare_cached(
            "SELECT first_delivery_id, seen FROM event_ids WHERE scope = ?1 AND event_id = ?2",
        )?
        .query_row(params![scope, event_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    Ok(match seen {
        Some((first_id, seen_before)) => (
            DuplicateCheck::duplicate(first_id, event_id, seen_before.max(1) as u64, scope),
            EventEffect::Count,
        ),
        // A delivery that fails verification must not claim the event id, or a forged first
        // copy would make the real one look like a retry.
        None if evaluation.signature.status == SignatureStatus::Fail => (
            DuplicateCheck::first_unverified(id, event_id, scope),
            EventEffect::None,
        ),
        None => (
            DuplicateCheck::first(id, event_id, scope),
            EventEffect::Claim,
        ),
    })
}

/// Counts a delivery (`?3`, received at `?2`) in its job's row (`?1`): the jobs list's table.
pub(crate) const UPSERT_JOB: &str =
    "INSERT INTO jobs (job_id, first_seen_ms, last_seen_ms, last_delivery_id, deliveries)
    VALUES (?1, ?2, ?2, ?3, 1)
    ON CONFLICT (job_id) DO UPDATE SET last_seen_ms = MAX(last_seen_ms, ?2),
        first_seen_ms = MIN(first_seen_ms, ?2), last_delivery_id = ?3, deliveries = deliveries + 1";

/// Writes one delivery under `id`: its row, its effect on the event-id table, its job. The one
/// way a delivery enters the tables.
fn write_row(
    conn: &Connection,
    record: &NewRecord,
    id: i64,
) -> Result<DuplicateCheck, rusqlite::Error> {
    let d = &record.delivery;
    let e = &record.evaluation;
    let scope = duplicate_scope(
        &record.endpoint,
        &d.path,
        e.scheme.as_deref(),
        e.event_source.as_deref(),
    );
    let handshake = e
        .handshake
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|err| rusqlite::Error::ToSqlConversionFailure(Box::new(err)))?;
    let (duplicate, effect) = decide_duplicate(conn, record, &scope, id)?;
    let checks = crate::store::records::checks_column_of(
        &e.signature,
        &e.timestamp,
        &duplicate,
        &e.advice,
        e.schema.as_ref(),
    )?;
    let job = e.job.as_ref();
    conn.prepare_cached(
        "INSERT INTO deliveries (id, received_at_ms, method, path, query, headers, body, body_size,
            body_complete, remote_addr, endpoint, scheme, event_id, event_type, job_id, job_status,
            sig_status, ts_status, dup_status, first_id, checks_json, response_status, latency_ms, note,
            job_created_at_ms, event_source, handshake, schema_status, relay_seq, relay_delay_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)",
    )?
    .execute(params![
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
        e.scheme,
        e.event_id,
        e.event_type,
        job.map(|j| &j.job_id),
        job.and_then(|j| j.status.as_ref()),
        e.signature.status.as_str(),
        e.timestamp.status.as_str(),
        duplicate.status.as_str(),
        duplicate.first_id,
        checks,
        i64::from(record.response_status),
        record.latency_ms as i64,
        record.note,
        job.and_then(|j| j.created_at_ms),
        e.event_source,
        handshake,
        e.schema.as_ref().map(|s| s.status.as_str()),
        record.relayed.as_ref().map(|r| r.seq as i64),
        record.relayed.as_ref().map(|r| r.delay_ms),
    ])?;
    match (effect, &e.event_id) {
        // The primary key on (scope, event_id) is what makes this the only `first`.
        (EventEffect::Claim, Some(event_id)) => conn
            .prepare_cached(
                "INSERT INTO event_ids (scope, event_id, first_delivery_id) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![scope, event_id, id])?,
        (EventEffect::Count, Some(event_id)) => conn
            .prepare_cached(
                "UPDATE event_ids SET seen = seen + 1 WHERE scope = ?1 AND event_id = ?2",
            )?
            .execute(params![scope, event_id])?,
        _ => 0,
    };
    if let Some(job) = job {
        conn.prepare_cached(UPSERT_JOB)?
            .execute(params![job.job_id, d.received_at_ms, id])?;
    }
    Ok(duplicate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::delivery::{Delivery, Header};

    fn record(n: usize, body_len: usize) -> NewRecord {
        let body = format!(
            "{{\"id\":\"evt_{n}\",\"pad\":\"{}\"}}",
            "a".repeat(body_len)
        );
        let delivery = Delivery {
            received_at_ms: 1_790_000_000_000,
            method: "POST".into(),
            path: "/hooks".into(),
            query: String::new(),
            headers: vec![Header::new("content-type", "application/json")],
            body_size: body.len() as u64,
            body: body.into_bytes(),
            body_complete: true,
            remote_addr: None,
        };
        let endpoint = crate::domain::endpoint::Endpoint::catch_all();
        NewRecord::checked(delivery, &endpoint, 1_790_000_000)
    }

    /// A row SQLite refuses (here: over its largest row, lowered to 100,000 bytes) is answered
    /// alone with the reason, its batch's other deliveries are stored, and capture goes on.
    #[test]
    fn a_row_sqlite_refuses_fails_alone_and_capture_goes_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hookscope.sqlite");
        let conn = crate::store::schema::open_connection(&path, false).expect("open");
        crate::store::schema::migrate(&conn, &path).expect("migrate");
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, 100_000)
            .expect("limit");
        let (sender, receiver) = mpsc::channel(16);
        let health = Health::default();
        let submit = |sender: &mpsc::Sender<WriteJob>, record: NewRecord| {
            let (reply, answer) = oneshot::channel();
            sender
                .blocking_send(WriteJob::Insert {
                    record: Box::new(record),
                    reply,
                })
                .expect("send");
            answer
        };
        // Queued before the writer starts: one batch of three, the big one in the middle.
        let answers = [
            submit(&sender, record(1, 100)),
            submit(&sender, record(2, 200_000)),
            submit(&sender, record(3, 100)),
        ];
        std::thread::scope(|scope| {
            let (at, health) = (&path, &health);
            let writer = scope.spawn(move || writer_loop(conn, receiver, at, health, false));
            let [first, big, third] = answers.map(|a| a.blocking_recv().expect("answered"));
            let first = first.expect("a small delivery is stored");
            let refused = big.expect_err("a row over the limit is not acknowledged");
            assert!(refused.to_string().contains("too big"), "{refused}");
            let third = third.expect("its neighbour is stored");
            assert_eq!(third.id, first.id + 1, "the refused delivery took no id");
            let next = submit(&sender, record(4, 100))
                .blocking_recv()
                .expect("answered");
            assert_eq!(next.expect("capture goes on").id, third.id + 1);
            assert!(
                health
                    .report()
                    .refused_row
                    .is_some_and(|r| r.contains("too big")),
                "the health says it"
            );
            drop(sender);
            writer.join().expect("writer stops");
        });
        let reader = crate::store::Reader::open(&path).expect("reader");
        assert_eq!(reader.count().expect("count"), 3);
    }
}
