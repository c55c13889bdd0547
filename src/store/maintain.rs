//! Changes to the store other than new deliveries: re-checks, answers, attempts, polls, and
//! deletes (by id, retention, clearing). Each runs in one transaction of the writer's
//! ([`crate::store::writer`]).
//!
//! Deleted means gone: a delete takes the delivery's row, its attempts (which carry copies of
//! its body), its text-index entry and its share of its job's counts; `secure_delete` zeroes
//! the freed bytes (src/store/schema.rs), and the writer truncates the WAL once it is idle.
//! Ids never go back: `id_floor` keeps the newest id a delete took out of the table.

use rusqlite::{Connection, OptionalExtension as _, params};

use crate::domain::attempt::Attempt;
use crate::domain::checks::{
    Checks, DuplicateCheck, SignatureCheck, SignatureStatus, TimestampCheck,
};
use crate::store::headers::encode_headers;

/// Stores an attempt; answers its id, or 0 when the delivery it was made from has been deleted
/// meanwhile (a forward or a resend still in flight): its copy of the body goes with it.
pub(crate) fn write_attempt(conn: &Connection, a: &Attempt) -> Result<i64, rusqlite::Error> {
    if let Some(id) = a.delivery_id {
        let exists = conn
            .prepare_cached("SELECT 1 FROM deliveries WHERE id = ?1")?
            .query_row(params![id], |_| Ok(()))
            .optional()?
            .is_some();
        if !exists {
            return Ok(0);
        }
    }
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
        /// The new schema check (its endpoint's contract may have changed, or gone).
        schema: Option<Box<crate::domain::contract::SchemaCheck>>,
    },
    /// Records outbound attempts in one transaction (the simulator's, many at a time).
    RecordAttempts(Vec<Attempt>),
    /// Records one poll of a job API (a job the store has not seen gets a row in `jobs`).
    /// Touches 1 row: the poll's id is what `maintain` answers.
    RecordPoll(Box<crate::domain::reconcile::Poll>),
    /// Deletes deliveries by id.
    Delete(Vec<i64>),
    /// Moves a relay's cursor past a delivery that is not stored (sealed to another key): after
    /// the deliveries submitted before it, as the writer takes jobs in order.
    SkipRelayed(crate::store::Relayed),
    /// Records which channel a relay's cursor counts in; a channel made anew (another uid)
    /// starts the cursor over. Touches 1 when it did.
    RelayChannel {
        /// The relay's subscribe URL.
        source: String,
        /// The channel's uid, as its stream said.
        uid: String,
    },
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

pub(crate) fn maintain(
    conn: &mut Connection,
    text: Option<&Connection>,
    task: &Maintenance,
) -> Result<usize, rusqlite::Error> {
    use crate::store::text::{DeleteGuard, Forget};
    // A deletion takes the text index's lock before the store's (src/store/text.rs), so the
    // indexer cannot index what is being deleted; the index's entries go in its transaction,
    // read from the rows before they go, and commit once the store's deletion has.
    let deletes = matches!(
        task,
        Maintenance::Delete(_) | Maintenance::Clear | Maintenance::Retain { .. }
    );
    let guard = match text {
        Some(text) if deletes => Some(DeleteGuard::lock(text)?),
        _ => None,
    };
    let unindex = |tx: &Connection, what: Forget<'_>| match &guard {
        Some(guard) => guard.unindex(tx, what),
        None => Ok(()),
    };
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let touched = match task {
        Maintenance::Recheck {
            id,
            scheme,
            signature,
            timestamp,
            advice,
            schema,
        } => recheck(
            &tx,
            *id,
            scheme.as_deref(),
            (signature, timestamp, advice),
            schema.as_deref(),
        )?,
        Maintenance::RecordPoll(poll) => record_poll(&tx, poll)?,
        Maintenance::RelayChannel { source, uid } => relay_channel(&tx, source, uid)?,
        Maintenance::SkipRelayed(relayed) => {
            usize::from(advance_relay_cursor(&tx, relayed)?.is_ok())
        }
        Maintenance::RecordAttempts(attempts) => {
            for attempt in attempts {
                write_attempt(&tx, attempt)?;
            }
            attempts.len()
        }
        Maintenance::Delete(ids) => {
            // Each once: the index deletes an entry given its text, and twice would corrupt it.
            let mut ids = ids.clone();
            ids.sort_unstable();
            ids.dedup();
            unindex(&tx, Forget::Ids(&ids))?;
            delete(&tx, &ids)?
        }
        Maintenance::Clear => {
            unindex(&tx, Forget::All)?;
            raise_id_floor(&tx, "SELECT MAX(id) FROM deliveries", params![])?;
            let n = tx.execute("DELETE FROM deliveries", [])?;
            tx.execute("DELETE FROM event_ids", [])?;
            tx.execute("DELETE FROM jobs", [])?;
            tx.execute("DELETE FROM attempts", [])?;
            tx.execute("DELETE FROM polls", [])?;
            n
        }
        Maintenance::Retain {
            max_age_ms,
            max_count,
            now_ms,
            steady_ms,
        } => {
            let cutoff = retention_cutoff(&tx, *max_age_ms, *max_count, *now_ms, *steady_ms)?;
            unindex(&tx, Forget::UpTo(cutoff))?;
            delete_up_to(&tx, cutoff)?
        }
    };
    tx.commit()?;
    if let Some(guard) = guard {
        // The store's deletion is done. An index that fails to follow keeps entries of deleted
        // deliveries, which no list shows; the indexer's next start finds the index out of step
        // with the store and builds it again.
        let _ = guard.commit();
    }
    Ok(touched)
}

/// Records the status hookscope actually answered delivery `id` (when it mirrored a forwarded
/// handler) and the note that says why, in the caller's transaction: the forward's attempt's.
pub(crate) fn set_response(
    tx: &Connection,
    id: i64,
    status: u16,
    note: &str,
) -> Result<usize, rusqlite::Error> {
    tx.prepare_cached(
        "UPDATE deliveries SET response_status = ?2, note = COALESCE(note || ' ', '') || ?3 WHERE id = ?1",
    )?
    .execute(params![id, status, note])
}

/// `checks::duplicate_scope` of a stored row, in SQL over `deliveries`' columns (schema v16's
/// `event_source` included): *Re-check* reads the scope of rows already stored with it.
pub(crate) const SCOPE_SQL: &str = "(CASE WHEN endpoint = '/' THEN path ELSE endpoint END || ' (' || COALESCE(scheme, 'no scheme') || ')' || COALESCE(' from ' || event_source, ''))";

/// Replaces a delivery's signature and timestamp verdicts and its advice, and decides its
/// duplicate verdict again by today's rule (an event id is unique within its scope).
fn recheck(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    scheme: Option<&str>,
    (signature, timestamp, advice): (
        &SignatureCheck,
        &TimestampCheck,
        &crate::domain::advice::AdviceCheck,
    ),
    schema: Option<&crate::domain::contract::SchemaCheck>,
) -> Result<usize, rusqlite::Error> {
    #[allow(clippy::type_complexity)]
    let stored: Option<(Option<Checks>, String, String, Option<String>, Option<String>, bool)> = tx
        .query_row(
            "SELECT checks_json, endpoint, path, event_id, event_source, handshake IS NOT NULL FROM deliveries WHERE id = ?1",
            params![id],
            |r| {
                Ok((
                    crate::store::records::read_checks(r.get_ref(0)?).ok(),
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, bool>(5)?,
                ))
            },
        )
        .optional()?;
    let Some((Some(mut checks), endpoint, path, event_id, source, handshake)) = stored else {
        return Ok(0);
    };
    let scope = crate::domain::checks::duplicate_scope(&endpoint, &path, scheme, source.as_deref());
    checks.signature = signature.clone();
    checks.timestamp = timestamp.clone();
    checks.advice = advice.clone();
    checks.schema = schema.cloned();
    checks.duplicate = if handshake {
        DuplicateCheck::handshake()
    } else {
        redecide_duplicate(tx, id, event_id.as_deref(), &scope, signature.status)?
    };
    let json = crate::store::records::checks_column(&checks)?;
    tx.execute(
        "UPDATE deliveries SET scheme = ?2, sig_status = ?3, ts_status = ?4, dup_status = ?5, first_id = ?6, checks_json = ?7, schema_status = ?8 WHERE id = ?1",
        params![
            id,
            scheme,
            checks.signature.status.as_str(),
            checks.timestamp.status.as_str(),
            checks.duplicate.status.as_str(),
            checks.duplicate.first_id,
            json,
            checks.schema.as_ref().map(|s| s.status.as_str()),
        ],
    )
}

/// The duplicate verdict of stored delivery `id` in `scope`, from the deliveries stored before
/// it: a duplicate of the first earlier copy whose signature did not fail (the writer's rule),
/// else the first, which then claims the event id in its scope for the copies still to come.
fn redecide_duplicate(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    event_id: Option<&str>,
    scope: &str,
    signature: SignatureStatus,
) -> Result<DuplicateCheck, rusqlite::Error> {
    let Some(event_id) = event_id else {
        return Ok(DuplicateCheck::skipped());
    };
    let earlier: Vec<(i64, String)> = tx
        .prepare_cached(&format!(
            "SELECT id, sig_status FROM deliveries WHERE event_id = ?1 AND id < ?2 AND {} = ?3 ORDER BY id",
            SCOPE_SQL
        ))?
        .query_map(params![event_id, id, scope], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let claim = earlier
        .iter()
        .position(|(_, sig)| sig != SignatureStatus::Fail.as_str());
    Ok(match claim {
        Some(at) => {
            DuplicateCheck::duplicate(earlier[at].0, event_id, (earlier.len() - at) as u64, scope)
        }
        None if signature == SignatureStatus::Fail => {
            DuplicateCheck::first_unverified(id, event_id, scope)
        }
        None => {
            tx.execute(
                "INSERT INTO event_ids (scope, event_id, first_delivery_id) VALUES (?1, ?2, ?3)
                 ON CONFLICT (scope, event_id) DO UPDATE
                 SET first_delivery_id = MIN(first_delivery_id, excluded.first_delivery_id)",
                params![scope, event_id, id],
            )?;
            DuplicateCheck::first(id, event_id, scope)
        }
    })
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

/// Deletes deliveries by id and recounts their jobs only.
fn delete(tx: &rusqlite::Transaction<'_>, ids: &[i64]) -> Result<usize, rusqlite::Error> {
    let mut job_of = tx.prepare_cached("SELECT job_id FROM deliveries WHERE id = ?1")?;
    let mut delete = tx.prepare_cached("DELETE FROM deliveries WHERE id = ?1")?;
    // An attempt carries the delivery's body (a resend, a forward): it goes with it.
    let mut attempts = tx.prepare_cached("DELETE FROM attempts WHERE delivery_id = ?1")?;
    let mut jobs: Vec<String> = Vec::new();
    let (mut n, mut newest) = (0, 0);
    for id in ids {
        if let Some(Some(job)) = job_of
            .query_row(params![id], |r| r.get::<_, Option<String>>(0))
            .optional()?
        {
            jobs.push(job);
        }
        if delete.execute(params![id])? > 0 {
            n += 1;
            newest = newest.max(*id);
        }
        attempts.execute(params![id])?;
    }
    if newest > 0 {
        raise_id_floor(tx, "SELECT ?1", [newest])?;
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

/// The newest id retention deletes up to: deliveries older than `max_age_ms` before `now_ms`,
/// and the oldest beyond `max_count` (0: none).
fn retention_cutoff(
    tx: &rusqlite::Transaction<'_>,
    max_age_ms: Option<i64>,
    max_count: Option<i64>,
    now_ms: i64,
    steady_ms: i64,
) -> Result<i64, rusqlite::Error> {
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
    Ok(cutoff_id)
}

/// Deletes the deliveries up to `cutoff_id` and recounts the jobs that lose deliveries;
/// answers how many it deleted.
fn delete_up_to(tx: &rusqlite::Transaction<'_>, cutoff_id: i64) -> Result<usize, rusqlite::Error> {
    // The jobs that lose deliveries are recounted from what remains (or forgotten).
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS touched_jobs (job_id TEXT PRIMARY KEY);
         DELETE FROM touched_jobs;",
    )?;
    tx.execute(
        "INSERT OR IGNORE INTO touched_jobs SELECT job_id FROM deliveries WHERE id <= ?1 AND job_id IS NOT NULL",
        params![cutoff_id],
    )?;
    raise_id_floor(
        tx,
        "SELECT MAX(id) FROM deliveries WHERE id <= ?1",
        [cutoff_id],
    )?;
    let n = tx.execute("DELETE FROM deliveries WHERE id <= ?1", params![cutoff_id])?;
    tx.execute(
        "DELETE FROM attempts WHERE delivery_id <= ?1",
        params![cutoff_id],
    )?;
    tx.execute_batch(
        "DELETE FROM jobs WHERE job_id IN (SELECT job_id FROM touched_jobs);
         INSERT INTO jobs SELECT job_id, MIN(received_at_ms), MAX(received_at_ms), MAX(id), COUNT(*)
             FROM deliveries WHERE job_id IN (SELECT job_id FROM touched_jobs) GROUP BY job_id;",
    )?;
    Ok(n)
}

/// Keeps the newest id `newest_sql` names in `id_floor` before a delete takes it out of the
/// table: new ids follow it.
fn raise_id_floor<P: rusqlite::Params>(
    tx: &Connection,
    newest_sql: &str,
    params: P,
) -> Result<(), rusqlite::Error> {
    let newest: Option<i64> = tx.query_row(newest_sql, params, |r| r.get(0))?;
    if let Some(newest) = newest {
        tx.execute(
            "UPDATE id_floor SET newest = MAX(newest, ?1)",
            params![newest],
        )?;
    }
    Ok(())
}

/// Records the channel a relay's cursor counts in: 1 when a cursor kept for another channel
/// started over.
fn relay_channel(conn: &Connection, source: &str, uid: &str) -> Result<usize, rusqlite::Error> {
    let reset = conn.execute(
        "UPDATE relay_cursors SET seq = 0, channel_uid = ?2
         WHERE source = ?1 AND channel_uid IS NOT NULL AND channel_uid <> ?2",
        params![source, uid],
    )?;
    conn.execute(
        "INSERT INTO relay_cursors (source, seq, channel_uid) VALUES (?1, 0, ?2)
         ON CONFLICT (source) DO UPDATE SET channel_uid = excluded.channel_uid",
        params![source, uid],
    )?;
    Ok(reset)
}

/// Moves a relay's cursor to a relayed delivery's sequence number, in the caller's
/// transaction, when it stands where the delivery's stream had it before (`after`). Refused,
/// with nothing changed: a sequence number the cursor has passed (a reconnect sent it again),
/// and one whose predecessor was not stored (the stream must start again from the cursor).
pub(crate) fn advance_relay_cursor(
    conn: &Connection,
    relayed: &crate::store::Relayed,
) -> Result<Result<(), crate::store::error::StoreError>, rusqlite::Error> {
    use rusqlite::OptionalExtension as _;
    let cursor: u64 = conn
        .prepare_cached("SELECT seq FROM relay_cursors WHERE source = ?1")?
        .query_row([&relayed.source], |r| r.get::<_, i64>(0))
        .optional()?
        .unwrap_or(0)
        .max(0) as u64;
    if cursor >= relayed.seq {
        return Ok(Err(crate::store::error::StoreError::RelayRepeat(
            relayed.seq,
        )));
    }
    if cursor < relayed.after {
        return Ok(Err(crate::store::error::StoreError::RelayGap {
            seq: relayed.seq,
            cursor,
        }));
    }
    conn.prepare_cached(
        "INSERT INTO relay_cursors (source, seq) VALUES (?1, ?2)
         ON CONFLICT (source) DO UPDATE SET seq = excluded.seq",
    )?
    .execute(params![relayed.source, relayed.seq as i64])?;
    Ok(Ok(()))
}
