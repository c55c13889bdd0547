//! The writer thread: the only write connection, group commit, duplicates decided against the
//! unique index, the free-text index filled when the queue is idle, and maintenance (delete,
//! clear, retention, re-checks, answers).

use rusqlite::{Connection, OptionalExtension as _, params};
use tokio::sync::{mpsc, oneshot};

use crate::domain::attempt::Attempt;
use crate::domain::checks::{
    Checks, DuplicateCheck, SignatureCheck, SignatureStatus, TimestampCheck,
};
use crate::domain::delivery::{decode_headers, encode_headers};
use crate::store::error::StoreError;
use crate::store::health::{self, Health, Identity, Trouble};
use crate::store::records::{NewRecord, StoredDelivery};

/// How many pending writes the channel holds before senders wait.
pub(crate) const WRITE_QUEUE: usize = 4096;
/// The largest number of deliveries committed in one transaction.
const MAX_BATCH: usize = 256;

pub(crate) enum WriteJob {
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
            WriteJob::InsertMany { reply, .. } | WriteJob::Maintain { reply, .. } => {
                let _ = reply.send(Err(err()));
            }
        }
    }
}

/// What the writer knows about where it writes: the file, whether it is still there, and the
/// health it reports.
struct Place<'a> {
    path: &'a std::path::Path,
    identity: Identity,
    health: &'a Health,
}

impl Place<'_> {
    /// Turns a failed write into the error to answer. A cause outside the record (disk full,
    /// read-only, gone) is recorded in the health and answered with its sentence; anything
    /// else is the record's own failure.
    fn failure(&self, err: rusqlite::Error, refused: u64) -> StoreError {
        match health::classify(&err, self.path) {
            Trouble::Failing(_) => StoreError::Write(err.to_string()),
            trouble => {
                let sentence = trouble.sentence(self.path);
                self.health.failed(trouble, refused);
                StoreError::Refused(sentence)
            }
        }
    }

    /// Whether a write may be tried: not when the file is known to be gone, or was just found
    /// gone (writing on would land in a deleted file).
    fn writable(&mut self, refused: u64) -> Result<(), StoreError> {
        if !self.health.vanished() && self.identity.still_there() {
            return Ok(());
        }
        self.health.failed(Trouble::Vanished, refused);
        Err(StoreError::Refused(Trouble::Vanished.sentence(self.path)))
    }
}

fn write_attempt(conn: &Connection, a: &Attempt) -> Result<i64, rusqlite::Error> {
    conn.execute(
        "INSERT INTO attempts (delivery_id, kind, url, sent_at_ms, request_headers, request_body, status,
            response_headers, response_body, latency_ms, error, job_id, attempt_no) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            a.delivery_id,
            a.kind.as_str(),
            a.url,
            a.sent_at_ms,
            encode_headers(&a.request_headers),
            a.request_body,
            a.status,
            encode_headers(&a.response_headers),
            a.response_body,
            a.latency_ms as i64,
            a.error,
            a.job_id,
            a.attempt_number,
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
        signature: Box<crate::domain::checks::SignatureCheck>,
        /// The new timestamp verdict.
        timestamp: Box<crate::domain::checks::TimestampCheck>,
        /// The new payload advice (its endpoint's `advice` switch may have changed).
        advice: Box<crate::domain::advice::AdviceCheck>,
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
    /// Records outbound attempts in one transaction (the simulator's, many at a time).
    RecordAttempts(Vec<Attempt>),
    /// Records one poll of a job API (a job the store has not seen gets a row in `jobs`).
    /// Touches 1 row: the poll's id is what `maintain` answers.
    RecordPoll(Box<crate::domain::reconcile::Poll>),
    /// Deletes deliveries by id.
    Delete(Vec<i64>),
    /// Deletes every delivery.
    Clear,
    /// Deletes deliveries older than `max_age_ms` before now, and the oldest beyond `max_count`.
    /// When the clock looks wrong (it jumped since start by more than
    /// [`crate::domain::clock::JUMP_THRESHOLD_MS`], or reads earlier than the newest capture),
    /// age is counted from the earliest of now, the steady clock and the newest capture, so a
    /// clock that went forward never deletes anything.
    Retain {
        /// Keep deliveries received within this many milliseconds.
        max_age_ms: Option<i64>,
        /// Keep at most this many deliveries.
        max_count: Option<i64>,
        /// The current time, in Unix milliseconds.
        now_ms: i64,
        /// The steady clock ([`crate::domain::clock::steady_ms`]) at the same moment.
        steady_ms: i64,
    },
}

/// Rows indexed per idle step of the writer.
const INDEX_CHUNK: usize = 64;
/// Beyond this many deliveries not yet in the text index, the writer indexes a little after every
/// batch even when busy, so a sustained load cannot starve the index.
const INDEX_BACKLOG: i64 = 20_000;

pub(crate) fn writer_loop(
    mut conn: Connection,
    mut receiver: mpsc::Receiver<WriteJob>,
    path: &std::path::Path,
    health: &Health,
) {
    let mut place = Place {
        path,
        identity: Identity::new(path),
        health,
    };
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
                let result = place
                    .writable(0)
                    .and_then(|()| maintain(&mut conn, &task).map_err(|e| place.failure(e, 0)));
                let _ = reply.send(result);
                continue;
            }
            WriteJob::Attempt { attempt, reply } => {
                let result = place
                    .writable(0)
                    .and_then(|()| write_attempt(&conn, &attempt).map_err(|e| place.failure(e, 0)));
                let _ = reply.send(result);
                continue;
            }
            WriteJob::InsertMany { records, reply } => {
                // Bulk writes (imports, seeding) are searchable as soon as they are answered.
                let refs: Vec<&NewRecord> = records.iter().collect();
                let result = place.writable(0).and_then(|()| {
                    write_batch(&mut conn, &refs)
                        .map(|stored| stored.len())
                        .and_then(|n| {
                            while index_pending(&mut conn, INDEX_CHUNK * 8)? > 0 {}
                            Ok(n)
                        })
                        .map_err(|e| place.failure(e, 0))
                });
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
        if let Err(refusal) = place.writable(batch.len() as u64) {
            for (_, reply) in batch {
                let _ = reply.send(Err(refusal_copy(&refusal)));
            }
            continue;
        }
        match write_batch(&mut conn, &records) {
            Ok(stored) => {
                if place.health.ok() {
                    // The text index may have stopped while writes failed: count again what
                    // it still lacks, so it catches up.
                    backlog = index_backlog(&conn).unwrap_or(backlog);
                }
                for ((_, reply), stored) in batch.into_iter().zip(stored) {
                    let _ = reply.send(Ok(stored));
                }
            }
            Err(err) => match place.failure(err, batch.len() as u64) {
                // The disk, not a record: every delivery of the batch is refused alike.
                refusal @ StoreError::Refused(_) => {
                    for (_, reply) in batch {
                        let _ = reply.send(Err(refusal_copy(&refusal)));
                    }
                }
                _ => {
                    // One bad record must not fail its neighbours: write each alone, so
                    // every delivery gets its own verdict.
                    for (record, reply) in batch {
                        let result = write_batch(&mut conn, &[&record])
                            .map(|mut v| v.remove(0))
                            .map_err(|e| place.failure(e, 1));
                        if result.is_ok() {
                            let _ = place.health.ok();
                        }
                        let _ = reply.send(result);
                    }
                }
            },
        }
    }
}

/// The same refusal for each delivery of a batch.
fn refusal_copy(refusal: &StoreError) -> StoreError {
    StoreError::Refused(refusal.to_string())
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
            advice,
        } => recheck(&tx, *id, scheme.as_deref(), signature, timestamp, advice)?,
        Maintenance::SetResponse { id, status, note } => tx.execute(
            "UPDATE deliveries SET response_status = ?2, note = COALESCE(note || ' ', '') || ?3 WHERE id = ?1",
            params![id, status, note],
        )?,
        Maintenance::RecordPoll(poll) => record_poll(&tx, poll)?,
        Maintenance::RecordAttempts(attempts) => {
            for attempt in attempts {
                write_attempt(&tx, attempt)?;
            }
            attempts.len()
        }
        Maintenance::Delete(ids) => delete(&tx, ids)?,
        Maintenance::Clear => {
            let n = tx.execute("DELETE FROM deliveries", [])?;
            tx.execute("DELETE FROM deliveries_fts", [])?;
            tx.execute("DELETE FROM event_ids", [])?;
            tx.execute("DELETE FROM jobs", [])?;
            tx.execute("DELETE FROM attempts", [])?;
            tx.execute("DELETE FROM polls", [])?;
            tx.execute("UPDATE fts_state SET last_id = 0", [])?;
            n
        }
        Maintenance::Retain {
            max_age_ms,
            max_count,
            now_ms,
            steady_ms,
        } => retain(&tx, *max_age_ms, *max_count, *now_ms, *steady_ms)?,
    };
    tx.commit()?;
    Ok(touched)
}

/// Replaces a delivery's signature and timestamp verdicts and its advice; the duplicate
/// verdict stays.
fn recheck(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    scheme: Option<&str>,
    signature: &SignatureCheck,
    timestamp: &TimestampCheck,
    advice: &crate::domain::advice::AdviceCheck,
) -> Result<usize, rusqlite::Error> {
    let json: Option<String> = tx
        .query_row(
            "SELECT checks_json FROM deliveries WHERE id = ?1",
            params![id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(
        match json.and_then(|j| serde_json::from_str::<Checks>(&j).ok()) {
            None => 0,
            Some(mut checks) => {
                checks.signature = signature.clone();
                checks.timestamp = timestamp.clone();
                checks.advice = advice.clone();
                let json = serde_json::to_string(&checks)
                    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
                tx.execute(
                "UPDATE deliveries SET scheme = ?2, sig_status = ?3, ts_status = ?4, checks_json = ?5 WHERE id = ?1",
                params![id, scheme, checks.signature.status.as_str(), checks.timestamp.status.as_str(), json],
            )?
            }
        },
    )
}

/// Stores a poll; answers its id.
fn record_poll(
    tx: &rusqlite::Transaction<'_>,
    poll: &crate::domain::reconcile::Poll,
) -> Result<usize, rusqlite::Error> {
    tx.execute(
        "INSERT INTO polls (job_id, endpoint, at_ms, status, state, latency_ms, error, result_url, expires_at_ms, output_status)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            poll.job_id,
            poll.endpoint,
            poll.at_ms,
            poll.status,
            poll.state,
            poll.latency_ms as i64,
            poll.error,
            poll.result_url,
            poll.expires_at_ms,
            poll.output_status
        ],
    )?;
    let id = tx.last_insert_rowid();
    tx.execute(
        "INSERT OR IGNORE INTO jobs (job_id, first_seen_ms, last_seen_ms, last_delivery_id, deliveries) VALUES (?1, ?2, ?2, 0, 0)",
        params![poll.job_id, poll.at_ms],
    )?;
    Ok(id.max(0) as usize)
}

/// Deletes deliveries by id, from the table and the text index, and recounts their jobs only.
fn delete(tx: &rusqlite::Transaction<'_>, ids: &[i64]) -> Result<usize, rusqlite::Error> {
    let mut job_of = tx.prepare_cached("SELECT job_id FROM deliveries WHERE id = ?1")?;
    let mut delete = tx.prepare_cached("DELETE FROM deliveries WHERE id = ?1")?;
    let mut delete_fts = tx.prepare_cached("DELETE FROM deliveries_fts WHERE rowid = ?1")?;
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
    Ok(n)
}

/// Deletes deliveries older than `max_age_ms` before `now_ms` and the oldest beyond
/// `max_count`, and recounts the jobs that lose deliveries.
fn retain(
    tx: &rusqlite::Transaction<'_>,
    max_age_ms: Option<i64>,
    max_count: Option<i64>,
    now_ms: i64,
    steady_ms: i64,
) -> Result<usize, rusqlite::Error> {
    let mut cutoff_id = 0i64;
    if let Some(age) = max_age_ms {
        let newest: Option<i64> =
            tx.query_row("SELECT MAX(received_at_ms) FROM deliveries", [], |r| {
                r.get(0)
            })?;
        let reference = if crate::domain::clock::looks_wrong_at(now_ms, steady_ms, newest) {
            now_ms.min(steady_ms).min(newest.unwrap_or(now_ms))
        } else {
            now_ms
        };
        // Deliveries are deleted in id (arrival) order, up to the newest one that is old
        // enough: a capture stamped by a clock that was behind is not a reason to delete the
        // ones that arrived before it.
        let id: Option<i64> = tx.query_row(
            "SELECT MIN(id) - 1 FROM deliveries WHERE received_at_ms >= ?1",
            params![reference - age],
            |r| r.get(0),
        )?;
        let id = match id {
            Some(id) => Some(id),
            // Every delivery is old enough.
            None => tx.query_row("SELECT MAX(id) FROM deliveries", [], |r| r.get(0))?,
        };
        cutoff_id = cutoff_id.max(id.unwrap_or(0));
    }
    if let Some(count) = max_count {
        let id: Option<i64> = tx
            .query_row(
                "SELECT id FROM deliveries ORDER BY id DESC LIMIT 1 OFFSET ?1",
                params![count.max(0)],
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
    Ok(n)
}

/// The duplicate verdict of a delivery about to get `id`, decided against the unique index on
/// (endpoint, event id) inside the writer's transaction.
fn decide_duplicate(
    find_event: &mut rusqlite::CachedStatement<'_>,
    add_event: &mut rusqlite::CachedStatement<'_>,
    record: &NewRecord,
    id: i64,
) -> Result<DuplicateCheck, rusqlite::Error> {
    let evaluation = &record.evaluation;
    let Some(event_id) = &evaluation.event_id else {
        return Ok(DuplicateCheck::skipped());
    };
    let seen: Option<(i64, i64)> = find_event
        .query_row(params![record.endpoint, event_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    Ok(match seen {
        Some((first_id, seen_before)) => {
            DuplicateCheck::duplicate(first_id, event_id, seen_before.max(1) as u64)
        }
        None if evaluation.signature.status == SignatureStatus::Fail => {
            // A delivery that fails verification must not claim the event id, or a forged
            // first copy would make the real one look like a retry.
            DuplicateCheck::first_unverified(id, event_id)
        }
        None => {
            // The primary key on (endpoint, event_id) is what makes this the only `first`: a
            // second insert of the same pair would fail.
            add_event.execute(params![record.endpoint, event_id, id])?;
            DuplicateCheck::first(id, event_id)
        }
    })
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
            let duplicate = decide_duplicate(&mut find_event, &mut add_event, record, id)?;
            let checks = Checks {
                signature: evaluation.signature.clone(),
                timestamp: evaluation.timestamp.clone(),
                duplicate,
                advice: evaluation.advice.clone(),
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

fn searchable_headers(headers: &[crate::domain::delivery::Header]) -> String {
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
