//! The writer thread: the only write connection, group commit, duplicates decided against the
//! unique index, and maintenance (delete, clear, retention, re-checks, answers). The free-text
//! index has a file and a thread of its own (src/store/text.rs), which the writer kicks after
//! each commit.

use rusqlite::{Connection, OptionalExtension as _, params};
use tokio::sync::{mpsc, oneshot};

use crate::domain::attempt::Attempt;
use crate::domain::checks::{
    Checks, DuplicateCheck, SignatureCheck, SignatureStatus, TimestampCheck,
};
use crate::domain::delivery::encode_headers;
use crate::store::error::StoreError;
use crate::store::health::{self, Health, Identity, Trouble};
use crate::store::journal::{EventEffect, Row};
use crate::store::pack::{Packing, Unpacker};
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

    /// The same for a failed write or sync of a file beside the store (the journal, the WAL):
    /// any such failure is the disk's, recorded and answered with its sentence.
    fn io_failure(&self, err: &std::io::Error, refused: u64) -> StoreError {
        let trouble = health::classify_io(err, self.path);
        let sentence = trouble.sentence(self.path);
        self.health.failed(trouble, refused);
        StoreError::Refused(sentence)
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

/// Rows per transaction of the text index when a bulk write (import, seeding) indexes its own
/// rows before answering.
const BULK_INDEX_CHUNK: usize = 512;
/// How long acknowledged deliveries may wait in the open transaction before it commits: what
/// readers (the window, `list`) may lag behind the acknowledgement. The journal holds them on
/// disk meanwhile.
pub const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(80);
/// Under load (an open transaction of [`BUSY_ROWS`] or more), it commits after this long
/// instead. At 2,000/s with 80 ms, a reader in another process saw some deliveries 98–115 ms
/// after their acknowledgement, over the 100 ms they may take, though every commit came within
/// 90 ms of its transaction's start (traced): the rest is the reader's own turn on 2 busy cores.
/// Short commits hold the writer (and the deliveries waiting for it) for less each time: against
/// 50 ms, 10 ms brought the p99 acknowledgement at 2,000/s right after a burst from a mean of
/// 4.70 to 4.41 ms (16 phases each with the host's steal under 1 %; over 5 ms in 6 and in 2 of
/// them), readers see a delivery ~11 ms after its answer instead of ~51 (p99), and a burst leaves
/// a WAL of 18–45 MB instead of 178–376 MB. The price: ~55 % more bytes written at 2,000/s and
/// ~10 % more of the writer's CPU there (BENCHMARKS.md, issue 19, tenth pass). A trickle keeps
/// [`COMMIT_EVERY`]: each commit rewrites pages, and at ~150/s committing every 60 ms wrote
/// 10.0 × each delivery's size, against 8.7 ×.
const COMMIT_BUSY: std::time::Duration = std::time::Duration::from_millis(10);
/// Rows in the open transaction from which it commits after [`COMMIT_BUSY`] (2,000/s fills
/// this in 8 ms; a trickle of 150/s holds ~12 rows when [`COMMIT_EVERY`] commits them, so it
/// never gets here).
const BUSY_ROWS: usize = 16;
/// The most rows one open transaction gathers before it commits regardless of time.
const COMMIT_ROWS: usize = 8192;
/// After this long without a write, the store checkpoints its WAL into the database file,
/// truncates the WAL and empties the journal.
pub const IDLE_CHECKPOINT: std::time::Duration = std::time::Duration::from_secs(1);
/// Beyond this size the journal is emptied after a commit even under load (the WAL is synced
/// first, which makes every commit before it durable).
const JOURNAL_LIMIT: u64 = 16 * 1024 * 1024;

/// Why a batch was not written.
enum BatchError {
    /// SQLite refused it (a record's own failure, or the disk).
    Sql(rusqlite::Error),
    /// The journal could not be written or synced.
    Journal(std::io::Error),
}

/// The writer thread's state: the connection, the journal, the transaction it keeps open
/// across batches, and the text index's file and thread.
struct Writer<'a> {
    conn: Connection,
    journal: Option<crate::store::journal::Journal>,
    place: Place<'a>,
    /// When the open transaction began (none is open when `None`).
    open_since: Option<std::time::Instant>,
    /// Rows written in the open transaction, and the newest id among them.
    open_rows: usize,
    open_newest: i64,
    /// The journal holds acknowledged rows the store lost (a failed commit): write them again
    /// before anything else.
    needs_replay: bool,
    /// Something was committed since the last complete checkpoint.
    dirty: bool,
    last_write: std::time::Instant,
    /// The thread that checkpoints the WAL (when journaled).
    checkpointer: Option<Checkpointer>,
    /// The dictionary new rows are packed with, once the store has one.
    packing: Option<Packing>,
    /// Rows written unpacked since the last try at making a dictionary.
    unpacked: usize,
    /// Dictionaries read to unpack rows for the text index (bulk writes index their own rows).
    unpacker: Unpacker,
    /// The text index's file, for deletes and bulk writes (`None` when it cannot be opened:
    /// free text then lags, nothing else does).
    text: Option<Connection>,
    /// The thread that fills the text index (run by the writer that owns the journal).
    indexer: Option<crate::store::text::Indexer>,
}

pub(crate) fn writer_loop(
    conn: Connection,
    mut receiver: mpsc::Receiver<WriteJob>,
    path: &std::path::Path,
    health: &Health,
) {
    let journal = crate::store::journal::Journal::open(path);
    let mut w = Writer {
        conn,
        journal: None,
        place: Place {
            path,
            identity: Identity::new(path),
            health,
        },
        open_since: None,
        open_rows: 0,
        open_newest: 0,
        needs_replay: false,
        dirty: true,
        last_write: std::time::Instant::now(),
        checkpointer: None,
        packing: None,
        unpacked: 0,
        unpacker: Unpacker::default(),
        text: None,
        indexer: None,
    };
    match journal {
        Ok(journal) => w.journal = journal,
        Err(e) => health.failed(health::classify_io(&e, path), 0),
    }
    if w.journal.is_some() {
        // Commits need no sync of their own: the journal is synced before every answer, and a
        // checkpoint (which syncs) comes before the journal is emptied.
        let _ = w.conn.pragma_update(None, "synchronous", "NORMAL");
        w.needs_replay = true;
        w.replay();
    } else {
        // Another writer owns the journal (it is capturing): this one syncs every commit.
        w.publish_newest();
    }
    w.packing = Packing::newest(&w.conn).ok().flatten();
    w.text = crate::store::text::open_for_writing(path, &w.conn).ok();
    // One indexer per store: the capturing writer's (a second writer indexes its bulk writes).
    if w.journal.is_some() {
        w.indexer = crate::store::text::Indexer::start(path);
    }
    // Checkpoints run on their own thread and connection, so the writer never stops to copy
    // the WAL into the database file and sync both (that stall was the p99 at 2,000/s).
    w.checkpointer = w.journal.is_some().then(|| {
        let _ = w.conn.pragma_update(None, "wal_autocheckpoint", 0);
        // No `journal_size_limit`: with one, the first commit after the WAL started over cut
        // the file back, and cutting back the tens of MB a burst left took that commit 50–100 ms
        // (waiting on their writeback): the p99 right after a burst. The WAL file keeps the size
        // a burst gave it until the writer is idle for a second, when the TRUNCATE checkpoint
        // cuts it to zero.
        let frames = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
        let seen = std::sync::Arc::clone(&frames);
        // After each commit SQLite says how many frames the WAL holds.
        let _ = w
            .conn
            .wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
                seen.store(i64::from(pages), std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }));
        Checkpointer::start(path, frames)
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .ok();
    let mut pending = None;
    loop {
        let next = match pending.take() {
            Some(job) => Some(job),
            None => match receiver.try_recv() {
                Ok(job) => Some(job),
                Err(mpsc::error::TryRecvError::Disconnected) => None,
                Err(mpsc::error::TryRecvError::Empty) => match w.idle_step() {
                    Some(wait) => match &runtime {
                        Some(rt) => match rt
                            .block_on(async { tokio::time::timeout(wait, receiver.recv()).await })
                        {
                            Ok(job) => job,
                            Err(_elapsed) => continue,
                        },
                        None => {
                            std::thread::sleep(wait.min(COMMIT_EVERY));
                            continue;
                        }
                    },
                    None => continue,
                },
            },
        };
        let Some(first) = next else {
            w.close();
            break;
        };
        let (record, reply) = match first {
            WriteJob::Insert { record, reply } => (record, reply),
            WriteJob::Maintain { task, reply } => {
                let text = w.text.take();
                let result = w.durably(|conn| maintain(conn, text.as_ref(), &task));
                w.text = text;
                if matches!(*task, Maintenance::Clear) && result.is_ok() {
                    // The dictionary went with the history: the next deliveries make another.
                    w.packing = None;
                    w.unpacked = 0;
                }
                let _ = reply.send(result);
                continue;
            }
            WriteJob::Attempt { attempt, reply } => {
                let result = w.durably(|conn| write_attempt(conn, &attempt));
                let _ = reply.send(result);
                continue;
            }
            WriteJob::InsertMany { records, reply } => {
                // Bulk writes (imports, seeding) are committed with a sync of their own, and are
                // searchable as soon as they are answered.
                let packing = w.packing.take();
                let result = w.durably(|conn| {
                    let tx = conn.transaction()?;
                    let n = write_rows(&tx, &records.iter().collect::<Vec<_>>(), packing.as_ref())?
                        .0
                        .len();
                    tx.commit()?;
                    Ok(n)
                });
                w.packing = packing;
                if let Ok(n) = &result {
                    w.count_unpacked(*n);
                    if let Some(text) = &w.text {
                        while crate::store::text::index_pending(
                            &w.conn,
                            text,
                            BULK_INDEX_CHUNK,
                            &w.unpacker,
                            &|_| {},
                        )
                        .is_ok_and(|n| n > 0)
                        {}
                    }
                }
                let _ = reply.send(result);
                continue;
            }
        };
        // Group commit: take every insert already waiting, up to a batch.
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
}

type Reply = oneshot::Sender<Result<StoredDelivery, StoreError>>;

impl Writer<'_> {
    /// Opens the transaction batches are written in, when none is.
    fn begin(&mut self) -> Result<(), rusqlite::Error> {
        if self.open_since.is_none() {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            self.open_since = Some(std::time::Instant::now());
            self.open_rows = 0;
        }
        Ok(())
    }

    /// Commits the open transaction. When the commit fails, what it held is still in the
    /// journal: the store writes it again before taking new deliveries.
    fn commit(&mut self) -> Result<(), StoreError> {
        self.commit_sql().map_err(|err| self.place.failure(err, 0))
    }

    /// [`Writer::commit`], answering SQLite's error as it is.
    fn commit_sql(&mut self) -> Result<(), rusqlite::Error> {
        if self.open_since.is_none() {
            return Ok(());
        }
        self.dirty = true;
        self.last_write = std::time::Instant::now();
        match self.conn.execute_batch("COMMIT") {
            Ok(()) => {
                self.open_since = None;
                self.open_rows = 0;
                self.made_visible(self.open_newest);
                Ok(())
            }
            Err(err) => {
                // A failed commit may leave its transaction open (SQLite's choice): roll back;
                // the journal, when there is one, holds what it had.
                self.abandon();
                Err(err)
            }
        }
    }

    /// Writes the rows the journal holds and the store lost (after a crash, a power cut or a
    /// failed commit). Until that succeeds, new deliveries are refused: their ids would follow
    /// rows that are not there yet.
    fn replay(&mut self) -> bool {
        if !self.needs_replay {
            return true;
        }
        if self.journal.is_none() {
            self.needs_replay = false;
            return true;
        }
        if !self.conn.is_autocommit() {
            // A failed commit can leave its transaction open: it must go before the replay.
            self.abandon();
        }
        let Some(journal) = &mut self.journal else {
            return true;
        };
        let _ = self.conn.pragma_update(None, "synchronous", "FULL");
        let result = replay_journal(&mut self.conn, journal);
        let _ = self.conn.pragma_update(None, "synchronous", "NORMAL");
        match result {
            Ok(_) => {
                self.needs_replay = false;
                self.publish_newest();
                let _ = self.place.health.ok();
                true
            }
            Err(ReplayError::Journal(e)) => {
                let _ = self.place.io_failure(&e, 0);
                false
            }
            Err(ReplayError::Sql(err)) => {
                let _ = self.place.failure(err, 0);
                false
            }
        }
    }

    /// Makes every commit durable and empties the journal. When idle (`truncate`), by a
    /// checkpoint that copies the WAL into the database file (synced) and cuts the WAL to zero;
    /// under load, or when readers hold the WAL, by syncing the WAL file. Never waits for
    /// readers.
    fn make_durable(&mut self, truncate: bool) {
        if self.open_since.is_some() || self.needs_replay {
            return;
        }
        if truncate {
            let _ = self.conn.busy_timeout(std::time::Duration::ZERO);
            let done = self
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .is_ok_and(|(busy, log, done)| busy == 0 && log == done);
            let _ = self.conn.busy_timeout(std::time::Duration::from_secs(5));
            if done {
                self.dirty = false;
                self.clear_journal();
                return;
            }
        }
        let wal = {
            let mut name = self.place.path.as_os_str().to_owned();
            name.push("-wal");
            std::path::PathBuf::from(name)
        };
        // Opened for writing: Windows flushes a file only through a handle that may write it.
        match std::fs::OpenOptions::new()
            .write(true)
            .open(&wal)
            .and_then(|f| f.sync_data())
        {
            Ok(()) => self.clear_journal(),
            // No WAL file: nothing committed waits in it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self.clear_journal(),
            Err(e) => {
                let _ = self.place.io_failure(&e, 0);
            }
        }
    }

    fn clear_journal(&mut self) {
        if let Some(journal) = &mut self.journal
            && let Err(e) = journal.clear()
        {
            let _ = self.place.io_failure(&e, 0);
        }
    }

    /// What the writer does when its queue is empty: commits a transaction that is due,
    /// checkpoints when idle. Answers how long to wait for the next job (`None`: look again at
    /// once).
    fn idle_step(&mut self) -> Option<std::time::Duration> {
        use std::time::{Duration, Instant};
        if self.needs_replay {
            self.replay();
        }
        let now = Instant::now();
        let mut wait = Duration::from_secs(3600);
        if let Some(since) = self.open_since {
            let due = since + self.commit_after();
            if now < due {
                return Some(due - now);
            }
            let _ = self.commit();
            self.after_commit();
        }
        if self.dirty {
            let quiet = self.last_write.elapsed();
            if quiet >= IDLE_CHECKPOINT {
                self.make_durable(true);
                if self.dirty {
                    // Readers held the WAL: try again later.
                    wait = wait.min(IDLE_CHECKPOINT);
                }
            } else {
                wait = wait.min(IDLE_CHECKPOINT - quiet);
            }
        }
        if self.needs_replay {
            wait = wait.min(IDLE_CHECKPOINT);
        }
        Some(wait)
    }

    /// Counts rows written without a dictionary, and makes one once there are enough.
    fn count_unpacked(&mut self, rows: usize) {
        if self.packing.is_some() {
            return;
        }
        self.unpacked += rows;
        if self.unpacked >= crate::store::pack::SAMPLES {
            // In the open transaction, when there is one: the rows packed with the dictionary
            // commit with it.
            self.unpacked = 0;
            match Packing::learn(&self.conn) {
                Ok(packing) => self.packing = packing,
                Err(err) => {
                    let _ = self.place.failure(err, 0);
                }
            }
        }
    }

    /// After a commit: keep the WAL and the journal bounded under a sustained load.
    fn after_commit(&mut self) {
        if let Some(checkpointer) = &self.checkpointer {
            use std::sync::atomic::Ordering::Relaxed;
            let frames = checkpointer.frames.load(Relaxed);
            let backfilled = checkpointer.backfilled.load(Relaxed);
            if frames >= CHECKPOINT_AT && backfilled > 0 && frames - backfilled <= CHECKPOINT_REST {
                // The checkpointer copied nearly all of the WAL; copying the rest here (a commit
                // or two) lets the next transaction start the WAL over instead of growing it.
                let _ = self
                    .conn
                    .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                checkpointer.backfilled.store(0, Relaxed);
            }
        }
        if self
            .journal
            .as_ref()
            .is_some_and(|j| j.len() > JOURNAL_LIMIT)
        {
            self.make_durable(false);
        }
    }

    /// Runs `work` in its own transaction, committed with a sync (maintenance, attempts and
    /// bulk writes are answered only once durable), after committing the open one.
    fn durably<T>(
        &mut self,
        work: impl FnOnce(&mut Connection) -> Result<T, rusqlite::Error>,
    ) -> Result<T, StoreError> {
        self.place.writable(0)?;
        if !self.replay() {
            return Err(self.refusal());
        }
        self.commit()?;
        let journaled = self.journal.is_some();
        if journaled {
            let _ = self.conn.pragma_update(None, "synchronous", "FULL");
        }
        let result = work(&mut self.conn).map_err(|e| self.place.failure(e, 0));
        if journaled {
            let _ = self.conn.pragma_update(None, "synchronous", "NORMAL");
        }
        self.dirty = true;
        self.last_write = std::time::Instant::now();
        self.publish_newest();
        result
    }

    /// Deliveries up to `id` are committed: readers may wait for them, the indexer may index them.
    fn made_visible(&self, id: i64) {
        self.place.health.made_visible(id);
        if let Some(indexer) = &self.indexer {
            indexer.kick();
        }
    }

    /// Makes the newest stored id visible (after writes outside the open transaction).
    fn publish_newest(&self) {
        if let Ok(Some(id)) = self
            .conn
            .query_row("SELECT MAX(id) FROM deliveries", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
        {
            self.made_visible(id);
        }
    }

    /// The sentence a delivery is refused with while the store is in trouble.
    fn refusal(&self) -> StoreError {
        let report = self.place.health.report();
        StoreError::Refused(
            report
                .trouble
                .map(|t| t.sentence(self.place.path))
                .unwrap_or_else(|| "the store could not be written".into()),
        )
    }

    /// Writes a batch of deliveries and answers each: appended to the journal and synced
    /// before any answer, written in the open transaction.
    fn insert_batch(&mut self, batch: Vec<(Box<NewRecord>, Reply)>) {
        let refuse = |batch: Vec<(Box<NewRecord>, Reply)>, refusal: &StoreError| {
            for (_, reply) in batch {
                let _ = reply.send(Err(refusal_copy(refusal)));
            }
        };
        if let Err(refusal) = self.place.writable(batch.len() as u64) {
            return refuse(batch, &refusal);
        }
        if !self.replay() {
            let refusal = self.refusal();
            self.place.health.refused(batch.len() as u64);
            return refuse(batch, &refusal);
        }
        let records: Vec<&NewRecord> = batch.iter().map(|(record, _)| record.as_ref()).collect();
        match self.write_journaled(&records) {
            Ok((rows, verdicts)) => {
                let _ = self.place.health.ok();
                for ((record, reply), (id, duplicate)) in batch.into_iter().zip(verdicts) {
                    let _ = reply.send(Ok(record.into_stored(id, duplicate)));
                }
                self.apply_journaled(&rows);
            }
            Err(BatchError::Journal(e)) => {
                let refusal = self.place.io_failure(&e, batch.len() as u64);
                refuse(batch, &refusal);
            }
            Err(BatchError::Sql(err)) => match self.place.failure(err, batch.len() as u64) {
                // The disk, not a record: every delivery of the batch is refused alike.
                refusal @ StoreError::Refused(_) => refuse(batch, &refusal),
                _ => {
                    // One bad record must not fail its neighbours: write each alone, so
                    // every delivery gets its own verdict.
                    for (record, reply) in batch {
                        // A failed write took the open transaction with it: what that held
                        // is written again from the journal first.
                        if !self.replay() {
                            self.place.health.refused(1);
                            let _ = reply.send(Err(self.refusal()));
                            continue;
                        }
                        match self.write_journaled(&[&record]) {
                            Ok((rows, mut verdicts)) => {
                                let _ = self.place.health.ok();
                                let (id, duplicate) = verdicts.remove(0);
                                let _ = reply.send(Ok(record.into_stored(id, duplicate)));
                                self.apply_journaled(&rows);
                            }
                            Err(BatchError::Sql(e)) => {
                                let _ = reply.send(Err(self.place.failure(e, 1)));
                            }
                            Err(BatchError::Journal(e)) => {
                                let _ = reply.send(Err(self.place.io_failure(&e, 1)));
                            }
                        }
                    }
                }
            },
        }
        // Journaled deliveries are committed every COMMIT_EVERY (without a journal each batch
        // already was, in `write_journaled`).
        if self
            .open_since
            .is_some_and(|since| since.elapsed() >= self.commit_after())
            || self.open_rows >= COMMIT_ROWS
        {
            let _ = self.commit();
            self.after_commit();
        }
    }

    /// How long the open transaction may stay open: [`COMMIT_BUSY`] under load, else
    /// [`COMMIT_EVERY`].
    fn commit_after(&self) -> std::time::Duration {
        if self.open_rows >= BUSY_ROWS {
            COMMIT_BUSY
        } else {
            COMMIT_EVERY
        }
    }

    /// Decides the records' ids and duplicate verdicts and journals their rows, which are then
    /// answered and written by [`Writer::apply`]. Without a journal (another writer owns it),
    /// the rows are written and committed here: the synced commit is what makes the answer
    /// true, so it comes before the answer.
    ///
    /// With a journal, the batch's SQL comes after its answers: a delivery waits for its
    /// journal's synced write, not for its batch's inserts too. There is no savepoint around a
    /// batch: when a batch's SQL fails, the whole open transaction is rolled back
    /// ([`Writer::abandon`]), and the replay writes what it held again from the journal before
    /// anything else. (Under a savepoint SQLite copied every page a batch touched into its
    /// sub-journal first: ~8 % of the writer's CPU under wrk; BENCHMARKS.md, issue 19, eleventh
    /// pass.)
    fn write_journaled(&mut self, records: &[&NewRecord]) -> Result<Written, BatchError> {
        self.begin().map_err(BatchError::Sql)?;
        let written = decide_rows(&self.conn, records).map_err(BatchError::Sql)?;
        match &mut self.journal {
            Some(journal) => journal.append(&written.0).map_err(BatchError::Journal)?,
            None => {
                let applied = self.apply(&written.0);
                if let Err(e) = applied.and_then(|()| self.commit_sql()) {
                    self.abandon();
                    return Err(BatchError::Sql(e));
                }
            }
        }
        Ok(written)
    }

    /// Writes decided rows in the open transaction.
    fn apply(&mut self, rows: &[Row]) -> Result<(), rusqlite::Error> {
        apply_rows(&self.conn, rows, self.packing.as_ref())?;
        self.open_rows += rows.len();
        self.open_newest = self.open_newest.max(rows.last().map_or(0, |r| r.id));
        self.count_unpacked(rows.len());
        Ok(())
    }

    /// Writes journaled (and answered) rows; when that fails, the open transaction is rolled
    /// back and the journal holds them: the replay writes them before anything else.
    fn apply_journaled(&mut self, rows: &[Row]) {
        if self.journal.is_none() {
            return;
        }
        if let Err(err) = self.apply(rows) {
            let _ = self.place.failure(err, 0);
            self.abandon();
        }
    }

    /// Drops the open transaction; the journal holds what it had.
    fn abandon(&mut self) {
        let _ = self.conn.execute_batch("ROLLBACK");
        self.open_since = None;
        self.open_rows = 0;
        self.needs_replay = true;
        // A dictionary made in the rolled-back transaction went with it: rows must not name it.
        self.packing = Packing::newest(&self.conn).ok().flatten();
    }

    /// Closing: commit, checkpoint and empty the journal, and let the indexer index what is
    /// left, so the next start finds it done.
    fn close(&mut self) {
        self.checkpointer = None;
        let _ = self.commit();
        if self.replay() {
            self.make_durable(true);
        }
        // Dropping the indexer lets it index what is committed, for at most 2 s.
        self.indexer = None;
    }
}

/// Once the WAL holds this many frames (SQLite's default autocheckpoint: 1,000 pages), the
/// writer finishes the checkpointer's copy so the WAL starts over.
const CHECKPOINT_AT: i64 = 1000;
/// The checkpointer copies the WAL in steps of this many new frames...
const CHECKPOINT_STEP: i64 = 250;
/// ...and once the WAL holds [`CHECKPOINT_AT`], the writer copies the rest itself after a
/// commit when at most this many frames are left (so the next transaction starts the WAL over).
const CHECKPOINT_REST: i64 = 128;

/// A thread with its own connection that checkpoints the WAL whenever it has grown by
/// [`CHECKPOINT_STEP`] frames (`PASSIVE`: it never waits for the writer or readers). Stops when
/// dropped.
struct Checkpointer {
    /// Frames in the WAL after the writer's last commit (SQLite's WAL hook).
    frames: std::sync::Arc<std::sync::atomic::AtomicI64>,
    /// Frames the last checkpoint copied (0: none since the WAL started over).
    backfilled: std::sync::Arc<std::sync::atomic::AtomicI64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    fn start(
        path: &std::path::Path,
        frames: std::sync::Arc<std::sync::atomic::AtomicI64>,
    ) -> Checkpointer {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let backfilled = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
        let thread = {
            let stop = std::sync::Arc::clone(&stop);
            let frames = std::sync::Arc::clone(&frames);
            let backfilled = std::sync::Arc::clone(&backfilled);
            let path = path.to_path_buf();
            std::thread::Builder::new()
                .name("hookscope-store-checkpoint".into())
                .spawn(move || {
                    let Ok(conn) = crate::store::schema::open_connection(&path, false) else {
                        return;
                    };
                    // Synced checkpoints (the WAL before copying, the file after), no waits.
                    let _ = conn.pragma_update(None, "synchronous", "NORMAL");
                    let _ = conn.pragma_update(None, "wal_autocheckpoint", 0);
                    let _ = conn.busy_timeout(std::time::Duration::ZERO);
                    let mut done = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        let now = frames.load(std::sync::atomic::Ordering::Relaxed);
                        if now < done {
                            // The writer started the WAL over.
                            done = 0;
                        }
                        if now - done >= CHECKPOINT_STEP {
                            let copied = conn
                                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                                    r.get::<_, i64>(2)
                                })
                                .unwrap_or(0);
                            backfilled.store(copied, std::sync::atomic::Ordering::Relaxed);
                            done = now;
                        }
                    }
                })
                .ok()
        };
        Checkpointer {
            frames,
            backfilled,
            stop,
            thread,
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Why the journal could not be replayed.
pub(crate) enum ReplayError {
    Sql(rusqlite::Error),
    Journal(std::io::Error),
}

/// Writes the journal's rows the tables lack (after `journal_state.built_id`) in one
/// transaction, committed with the connection's sync setting (callers use `FULL`), then empties
/// the journal: its rows are durable in the store. Answers how many rows were written.
pub(crate) fn replay_journal(
    conn: &mut Connection,
    journal: &mut crate::store::journal::Journal,
) -> Result<usize, ReplayError> {
    if journal.len() == 0 {
        return Ok(0);
    }
    let rows = journal.rows().map_err(ReplayError::Journal)?;
    let n = (|| {
        let tx = conn.transaction()?;
        let built: i64 = tx.query_row("SELECT built_id FROM journal_state", [], |r| r.get(0))?;
        let packing = Packing::newest(&tx)?;
        let n = apply_rows(
            &tx,
            rows.iter().filter(|row| row.id > built),
            packing.as_ref(),
        )?;
        tx.commit()?;
        Ok(n)
    })()
    .map_err(ReplayError::Sql)?;
    journal.clear().map_err(ReplayError::Journal)?;
    Ok(n)
}

/// For a reader: when the journal beside `path` holds rows and no writer owns it (the process
/// that captured them died), writes them into the tables now, so `list` after a crash shows
/// every acknowledged delivery. Best effort: on any failure the next writer does it.
pub(crate) fn recover_orphaned_journal(path: &std::path::Path) {
    let journal_path = crate::store::journal::path_beside(path);
    if std::fs::metadata(&journal_path).map_or(true, |m| m.len() == 0) {
        return;
    }
    let Ok(Some(mut journal)) = crate::store::journal::Journal::open(path) else {
        return;
    };
    if let Ok(mut conn) = crate::store::schema::open_connection(path, false) {
        let _ = replay_journal(&mut conn, &mut journal);
    }
}

/// The same refusal for each delivery of a batch.
fn refusal_copy(refusal: &StoreError) -> StoreError {
    StoreError::Refused(refusal.to_string())
}

fn maintain(
    conn: &mut Connection,
    text: Option<&Connection>,
    task: &Maintenance,
) -> Result<usize, rusqlite::Error> {
    use crate::store::text::{DeleteGuard, Forget};
    // A deletion takes the text index's lock before the store's (src/store/text.rs), so the
    // indexer cannot index what is being deleted; the index forgets once the store committed.
    let deletes = matches!(
        task,
        Maintenance::Delete(_) | Maintenance::Clear | Maintenance::Retain { .. }
    );
    let guard = match text {
        Some(text) if deletes => Some(DeleteGuard::lock(text)?),
        _ => None,
    };
    let mut forget = None;
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
        Maintenance::Delete(ids) => {
            forget = Some(Forget::Ids(ids));
            delete(&tx, ids)?
        }
        Maintenance::Clear => {
            forget = Some(Forget::All);
            let n = tx.execute("DELETE FROM deliveries", [])?;
            tx.execute("DELETE FROM event_ids", [])?;
            tx.execute("DELETE FROM jobs", [])?;
            tx.execute("DELETE FROM attempts", [])?;
            tx.execute("DELETE FROM polls", [])?;
            tx.execute("DELETE FROM dictionaries", [])?;
            n
        }
        Maintenance::Retain {
            max_age_ms,
            max_count,
            now_ms,
            steady_ms,
        } => {
            let (n, cutoff_id) = retain(&tx, *max_age_ms, *max_count, *now_ms, *steady_ms)?;
            forget = Some(Forget::UpTo(cutoff_id));
            n
        }
    };
    tx.commit()?;
    if let (Some(guard), Some(forget)) = (guard, forget) {
        // The store's deletion is done; an index that fails to follow keeps entries of deleted
        // deliveries, which no list shows (the indexer's next start removes most of them).
        let _ = guard.forget(forget);
    }
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
    let stored: Option<Checks> = tx
        .query_row(
            "SELECT checks_json FROM deliveries WHERE id = ?1",
            params![id],
            |r| Ok(crate::store::compact::read_checks(r.get_ref(0)?).ok()),
        )
        .optional()?
        .flatten();
    Ok(match stored {
        None => 0,
        Some(mut checks) => {
            checks.signature = signature.clone();
            checks.timestamp = timestamp.clone();
            checks.advice = advice.clone();
            let json = crate::store::compact::checks_column(&checks)?;
            tx.execute(
                "UPDATE deliveries SET scheme = ?2, sig_status = ?3, ts_status = ?4, checks_json = ?5 WHERE id = ?1",
                params![id, scheme, checks.signature.status.as_str(), checks.timestamp.status.as_str(), json],
            )?
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
/// `max_count`, and recounts the jobs that lose deliveries. Answers how many it deleted, and
/// the newest id it deleted up to.
fn retain(
    tx: &rusqlite::Transaction<'_>,
    max_age_ms: Option<i64>,
    max_count: Option<i64>,
    now_ms: i64,
    steady_ms: i64,
) -> Result<(usize, i64), rusqlite::Error> {
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
    Ok((n, cutoff_id))
}

/// The (endpoint, event id) pairs a batch has claimed or counted before they are written: their
/// first delivery and how many copies are seen, as the table will say once they are.
type BatchClaims<'a> = std::collections::HashMap<(&'a str, &'a str), (i64, i64)>;

/// The duplicate verdict of a delivery about to get `id`, decided against the unique index on
/// (endpoint, event id) and the batch's own claims (rows decided before it in the same batch,
/// not written yet), and what it does to that table.
fn decide_duplicate<'a>(
    find_event: &mut rusqlite::CachedStatement<'_>,
    claims: &mut BatchClaims<'a>,
    record: &'a NewRecord,
    id: i64,
) -> Result<(DuplicateCheck, EventEffect), rusqlite::Error> {
    let evaluation = &record.evaluation;
    let Some(event_id) = &evaluation.event_id else {
        return Ok((DuplicateCheck::skipped(), EventEffect::None));
    };
    let key = (record.endpoint.as_str(), event_id.as_str());
    let seen: Option<(i64, i64)> = match claims.get(&key) {
        Some(&claimed) => Some(claimed),
        None => find_event
            .query_row(params![record.endpoint, event_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?,
    };
    Ok(match seen {
        Some((first_id, seen_before)) => {
            claims.insert(key, (first_id, seen_before + 1));
            (
                DuplicateCheck::duplicate(first_id, event_id, seen_before.max(1) as u64),
                EventEffect::Counted,
            )
        }
        // A delivery that fails verification must not claim the event id, or a forged first
        // copy would make the real one look like a retry.
        None if evaluation.signature.status == SignatureStatus::Fail => (
            DuplicateCheck::first_unverified(id, event_id),
            EventEffect::None,
        ),
        // The primary key on (endpoint, event_id) is what makes this the only `first`: a
        // second insert of the same pair would fail.
        None => {
            claims.insert(key, (id, 1));
            (DuplicateCheck::first(id, event_id), EventEffect::Claimed)
        }
    })
}

/// Writes one row: the delivery, its effect on the event-id table, its job. The one way a
/// delivery enters the tables, for new deliveries and for rows replayed from the journal.
fn apply_row(
    conn: &Connection,
    row: &Row,
    packing: Option<&Packing>,
) -> Result<(), rusqlite::Error> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO deliveries (id, received_at_ms, method, path, query, headers, body, body_size,
            body_complete, remote_addr, endpoint, scheme, event_id, event_type, job_id, job_status,
            sig_status, ts_status, dup_status, first_id, checks_json, response_status, latency_ms, note,
            job_created_at_ms, packed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
    )?;
    let packed = packing.and_then(|p| Some((p.id, p.pack(&row.headers, &row.body)?)));
    let (packed_id, headers, body) = match &packed {
        Some((id, (headers, body))) => (Some(*id), &headers[..], &body[..]),
        None => (None, &row.headers[..], &row.body[..]),
    };
    insert.execute(params![
        row.id,
        row.received_at_ms,
        row.method,
        row.path,
        row.query,
        headers,
        body,
        row.body_size,
        row.body_complete,
        row.remote_addr,
        row.endpoint,
        row.scheme,
        row.event_id,
        row.event_type,
        row.job_id,
        row.job_status,
        row.sig_status,
        row.ts_status,
        row.dup_status,
        row.first_id,
        row.checks,
        row.response_status,
        row.latency_ms,
        row.note,
        row.job_created_at_ms,
        packed_id,
    ])?;
    match (row.event, &row.event_id) {
        (EventEffect::Claimed, Some(event_id)) => {
            conn.prepare_cached(
                "INSERT INTO event_ids (endpoint, event_id, first_delivery_id) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![row.endpoint, event_id, row.id])?;
        }
        (EventEffect::Counted, Some(event_id)) => {
            conn.prepare_cached(
                "UPDATE event_ids SET seen = seen + 1 WHERE endpoint = ?1 AND event_id = ?2",
            )?
            .execute(params![row.endpoint, event_id])?;
        }
        _ => {}
    }
    if let Some(job_id) = &row.job_id {
        conn.prepare_cached(
            "INSERT INTO jobs (job_id, first_seen_ms, last_seen_ms, last_delivery_id, deliveries) VALUES (?1, ?2, ?2, ?3, 1)
             ON CONFLICT (job_id) DO UPDATE SET last_seen_ms = MAX(last_seen_ms, ?2),
                 first_seen_ms = MIN(first_seen_ms, ?2), last_delivery_id = ?3, deliveries = deliveries + 1",
        )?
        .execute(params![job_id, row.received_at_ms, row.id])?;
    }
    Ok(())
}

/// At most how many bytes `row` takes in the table (unpacked): its variable columns, and room for
/// the fixed ones and the record's header.
fn row_size(row: &Row) -> usize {
    let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
    row.method.len()
        + row.path.len()
        + row.query.len()
        + row.headers.len()
        + row.body.len()
        + text(&row.remote_addr)
        + row.endpoint.len()
        + text(&row.scheme)
        + text(&row.event_id)
        + text(&row.event_type)
        + text(&row.job_id)
        + text(&row.job_status)
        + row.sig_status.len()
        + row.ts_status.len()
        + row.dup_status.len()
        + row.checks.len()
        + text(&row.note)
        + 1024
}

/// What [`decide_rows`] answers: the rows (for the journal and the tables), and each record's
/// id and duplicate verdict.
type Written = (Vec<Row>, Vec<(i64, DuplicateCheck)>);

/// Decides each record's id and duplicate verdict and makes its row, reading the caller's
/// transaction and writing nothing (the caller moves the record into its [`StoredDelivery`]
/// with [`NewRecord::into_stored`]: copying every delivery and its checks here was a body and a
/// score of small allocations per delivery on the writer). [`apply_rows`] writes the rows.
fn decide_rows(conn: &Connection, records: &[&NewRecord]) -> Result<Written, rusqlite::Error> {
    let mut rows = Vec::with_capacity(records.len());
    let mut verdicts = Vec::with_capacity(records.len());
    let mut claims = BatchClaims::new();
    let mut find_event = conn.prepare_cached(
        "SELECT first_delivery_id, seen FROM event_ids WHERE endpoint = ?1 AND event_id = ?2",
    )?;
    // Ids never go back: not after deletes, not after clearing the history.
    let next_id: i64 = conn
        .prepare_cached(
            "SELECT MAX(COALESCE((SELECT MAX(id) FROM deliveries), 0), (SELECT built_id FROM journal_state)) + 1",
        )?
        .query_row([], |r| r.get(0))?;
    // The most bytes SQLite takes in one value or row. A row over it would be journaled and
    // answered, then refused by every write and every replay: refused here instead, before it
    // is journaled (only a body limit raised near 1 GB lets such a body in).
    let max_len = usize::try_from(conn.limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH)?)
        .unwrap_or(usize::MAX);
    for (offset, record) in records.iter().enumerate() {
        let id = next_id + offset as i64;
        let d = &record.delivery;
        let evaluation = &record.evaluation;
        let (duplicate, event) = decide_duplicate(&mut find_event, &mut claims, record, id)?;
        let checks_column = crate::store::compact::checks_column_of(
            &evaluation.signature,
            &evaluation.timestamp,
            &duplicate,
            &evaluation.advice,
        )?;
        let row = Row {
            id,
            received_at_ms: d.received_at_ms,
            method: d.method.clone(),
            path: d.path.clone(),
            query: d.query.clone(),
            headers: encode_headers(&d.headers),
            body: d.body.to_vec(),
            body_size: d.body_size as i64,
            body_complete: d.body_complete,
            remote_addr: d.remote_addr.clone(),
            endpoint: record.endpoint.clone(),
            scheme: evaluation.scheme.clone(),
            event_id: evaluation.event_id.clone(),
            event_type: evaluation.event_type.clone(),
            job_id: evaluation.job.as_ref().map(|j| j.job_id.clone()),
            job_status: evaluation.job.as_ref().and_then(|j| j.status.clone()),
            sig_status: evaluation.signature.status.as_str().to_string(),
            ts_status: evaluation.timestamp.status.as_str().to_string(),
            dup_status: duplicate.status.as_str().to_string(),
            first_id: duplicate.first_id,
            checks: checks_column,
            response_status: i64::from(record.response_status),
            latency_ms: record.latency_ms as i64,
            note: record.note.clone(),
            job_created_at_ms: evaluation.job.as_ref().and_then(|j| j.created_at_ms),
            event,
        };
        let size = row_size(&row);
        if size > max_len {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_TOOBIG),
                Some(format!(
                    "the delivery's row would take {size} bytes, over the {max_len} the store takes in one row"
                )),
            ));
        }
        rows.push(row);
        verdicts.push((id, duplicate));
    }
    Ok((rows, verdicts))
}

/// Writes rows (made by [`decide_rows`], or read back from the journal) in the caller's
/// transaction, and records the newest as built; answers how many.
fn apply_rows<'r>(
    conn: &Connection,
    rows: impl IntoIterator<Item = &'r Row>,
    packing: Option<&Packing>,
) -> Result<usize, rusqlite::Error> {
    let (mut n, mut newest) = (0, None);
    for row in rows {
        apply_row(conn, row, packing)?;
        n += 1;
        newest = newest.max(Some(row.id));
    }
    if let Some(newest) = newest {
        conn.prepare_cached("UPDATE journal_state SET built_id = ?1")?
            .execute(params![newest])?;
    }
    Ok(n)
}

/// [`decide_rows`] then [`apply_rows`], in the caller's transaction (bulk writes).
fn write_rows(
    conn: &Connection,
    records: &[&NewRecord],
    packing: Option<&Packing>,
) -> Result<Written, rusqlite::Error> {
    let written = decide_rows(conn, records)?;
    apply_rows(conn, &written.0, packing)?;
    Ok(written)
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

    /// A row SQLite would refuse must be refused before it is journaled: journaled and answered,
    /// it would fail every write and every replay after, and the store would refuse everything.
    #[test]
    fn a_row_over_sqlites_limit_is_refused_before_its_journal_and_capture_goes_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hookscope.sqlite");
        let conn = crate::store::schema::open_connection(&path, false).expect("open");
        crate::store::schema::migrate(&conn, &path).expect("migrate");
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, 100_000)
            .expect("limit");
        let (sender, receiver) = mpsc::channel(16);
        let health = Health::default();
        let insert = |sender: &mpsc::Sender<WriteJob>, record: NewRecord| {
            let (reply, answer) = oneshot::channel();
            sender
                .blocking_send(WriteJob::Insert {
                    record: Box::new(record),
                    reply,
                })
                .expect("send");
            answer.blocking_recv().expect("answer")
        };
        std::thread::scope(|scope| {
            let writer = std::thread::Builder::new()
                .name("test-writer".into())
                .spawn_scoped(scope, || writer_loop(conn, receiver, &path, &health))
                .expect("writer");
            let first = insert(&sender, record(1, 100)).expect("a small delivery is stored");
            let refused = match insert(&sender, record(2, 200_000)) {
                Ok(stored) => panic!("a row over the limit was acknowledged as #{}", stored.id),
                Err(e) => e,
            };
            assert!(
                refused.to_string().contains("over the 100000"),
                "the refusal says why: {refused}"
            );
            let next = insert(&sender, record(3, 100)).expect("capture goes on after the refusal");
            assert_eq!(next.id, first.id + 1, "the refused delivery took no id");
            drop(sender);
            writer.join().expect("writer stops");
        });
        let reader = crate::store::Reader::open(&path).expect("reader");
        let ids: Vec<i64> = reader
            .list(10, None)
            .expect("list")
            .iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(ids.len(), 2, "{ids:?}");
    }
}
