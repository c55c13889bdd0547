//! The free-text index, in a database file of its own beside the store (`<store>-text`), filled
//! by its own thread behind the committed deliveries.
//!
//! FTS5 writes a segment, and merges segments, at every commit that added rows. Inside the
//! writer's transaction those pauses held the deliveries waiting for their answer: while the
//! index caught up after a burst, p99 at 2,000 deliveries/s was 12–16 ms. In its own file, with its own lock, its own WAL and its own
//! thread, the index never holds the writer: the writer does not even read it.
//!
//! The index is derived data. Its file names the store it was built from (`text_state.store_uid`
//! against the store's `store_identity`): a text file that belongs to another store (a damaged
//! store kept aside and replaced, a copied file) is emptied and built again. Readers attach it as
//! `text`, and the filter SQL names `deliveries_fts` unqualified. A reader that cannot attach it
//! (a read-only volume without one) gets an empty index of its own: free text finds nothing
//! there, everything else works.
//!
//! Deletes keep the two files in step by lock order: the writer takes the text file's write lock
//! first, deletes the index's entries of the deliveries it deletes (given the text they were
//! indexed with, read from their rows: a contentless index deletes an entry so, and with FTS5's
//! `secure-delete` its words go with it), commits the store's deletion, then the index's. The
//! indexer reads the store only while it holds that lock, so it never indexes a row the writer
//! is deleting. A crash between the two commits leaves the index with entries of deleted
//! deliveries; the indexer's next start finds it out of step and builds it again.
//!
//! Only the capturing process runs an indexer ([`crate::store::Store::open_capturing`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar};

use crate::domain::sync::Lock;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, params};

use crate::store::headers::decode_headers;

/// The index's table, in its file and in a reader's `temp` fallback alike: contentless (the text
/// is not stored twice), and identifiers such as `job_8f3a` or `msg-12` are one token each.
const FTS5: &str = "fts5(path, headers, body, content='',
    tokenize = \"unicode61 tokenchars '_-'\")";

/// The text index's schema, `user_version` 2. Version 1's table was `contentless_delete=1`,
/// whose deletes only mark an entry (a tombstone) and keep its words in the index until a merge
/// of its segment: a deleted body's words stayed on disk. Version 2 deletes an entry with its
/// words (a contentless table's `delete` command, given the text that was indexed, with FTS5's
/// `secure-delete` option, which rewrites the index's pages without them). The table is made
/// anew and filled again from the store: what an older index kept of deleted deliveries goes
/// with it.
fn schema() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS text_state (last_id INTEGER NOT NULL, store_uid BLOB);
        INSERT INTO text_state (last_id) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM text_state);
        DROP TABLE IF EXISTS deliveries_fts;
        CREATE VIRTUAL TABLE deliveries_fts USING {FTS5};
        INSERT INTO deliveries_fts (deliveries_fts, rank) VALUES ('secure-delete', 1);
        UPDATE text_state SET last_id = 0;
        PRAGMA user_version = 2;"
    )
}

/// The suffixes of the text index's files after the store's name: the database, its WAL and its
/// shared memory.
pub(crate) const FILE_SUFFIXES: [&str; 3] = ["-text", "-text-wal", "-text-shm"];

/// The store's path with `suffix` after its name.
fn beside(store: &Path, suffix: &str) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The text index's file beside the store's.
pub(crate) fn path_beside(store: &Path) -> PathBuf {
    beside(store, FILE_SUFFIXES[0])
}

/// The store's identity (made by schema v13), which the text index records as the store it was
/// built from.
fn store_uid(store: &Connection) -> Result<Option<Vec<u8>>, rusqlite::Error> {
    store
        .query_row("SELECT uid FROM store_identity", [], |r| r.get(0))
        .optional()
}

/// Opens the text index for writing, creating it, and empties it when it was built from another
/// store. A file that is not a database (damaged) is deleted and made again: it is derived data.
pub(crate) fn open_for_writing(
    store_path: &Path,
    store: &Connection,
) -> Result<Connection, rusqlite::Error> {
    let path = path_beside(store_path);
    let conn = match open_and_check(&path) {
        Ok(conn) => conn,
        Err(err) if is_damage(&err) => {
            for suffix in FILE_SUFFIXES {
                let _ = std::fs::remove_file(beside(store_path, suffix));
            }
            open_and_check(&path)?
        }
        Err(err) => return Err(err),
    };
    let uid = store_uid(store)?;
    let recorded: Option<Vec<u8>> =
        conn.query_row("SELECT store_uid FROM text_state", [], |r| r.get(0))?;
    if recorded != uid {
        let tx = conn.unchecked_transaction()?;
        if recorded.is_some() {
            tx.execute_batch("INSERT INTO deliveries_fts (deliveries_fts) VALUES ('delete-all')")?;
        }
        tx.execute(
            "UPDATE text_state SET store_uid = ?1, last_id = CASE WHEN ?2 THEN 0 ELSE last_id END",
            params![uid, recorded.is_some()],
        )?;
        tx.commit()?;
    }
    Ok(conn)
}

fn open_and_check(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // Derived data: a power cut may take its last commits back, and `last_id` with them.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // No `journal_size_limit`: with one, every time the WAL started over (each few hundred ms
    // while the index caught up after a burst) SQLite cut it back to the limit, freeing a few MB
    // that the file system must discard (`discard` mounts) and allocate again, each freeing a
    // commit of the file system's own journal that the store's synced writes then waited on.
    // The WAL keeps its size while the index is written, and is cut to nothing once it rests
    // (`IDLE_CHECKPOINT`) and when the indexer stops.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // Deleted means gone here too: freed pages are overwritten with zeros.
    conn.pragma_update(None, "secure_delete", "ON")?;
    // Made once: setting `user_version` on every open wrote a frame to the WAL each time.
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version < 2 {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(&schema())?;
        tx.commit()?;
    }
    Ok(conn)
}

/// A path as an SQLite URI that opens it `immutable` (no locks, no `-shm`: a read-only volume):
/// for the text index here and the store (`schema::open_immutable`).
pub(crate) fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            '\\' => uri.push('/'),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// The newest delivery the index holds (every earlier one was indexed or is gone).
fn indexed_up_to(text: &Connection) -> Result<i64, rusqlite::Error> {
    text.query_row("SELECT last_id FROM text_state", [], |r| r.get(0))
}

fn is_damage(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

/// Attaches the text index to a reader's connection as `text` (making the file when there is
/// none yet); when it cannot (none on a read-only volume, a damaged one), makes an empty one in
/// `temp`, so free text finds nothing instead of failing.
pub(crate) fn attach(conn: &Connection, store_path: &Path, immutable: bool) {
    let path = path_beside(store_path);
    if !immutable && !path.exists() {
        // Made now, empty, when the writer has not made it yet (a new store: readers open as
        // soon as the store does): attached to the empty `temp` index instead, this connection
        // would never see what the indexer writes.
        let _ = open_and_check(&path);
    }
    let target = if immutable {
        immutable_uri(&path)
    } else {
        path.to_string_lossy().into_owned()
    };
    let attached = path.exists()
        && conn
            .execute("ATTACH DATABASE ?1 AS text", params![target])
            .is_ok()
        && conn
            .query_row(
                "SELECT COUNT(*) FROM text.sqlite_master WHERE name = 'deliveries_fts'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .is_ok_and(|n| n == 1);
    if !attached {
        let _ = conn.execute("DETACH DATABASE text", []);
        let _ = conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.deliveries_fts USING {FTS5};"
        ));
    }
}

/// Adds up to `max` committed deliveries not yet in the text index, in one transaction of the
/// index, and answers how many. Holds the index's write lock while it reads the store, so a
/// delete (which takes that lock first) never races it. The store's rows are read into memory
/// first, so its read snapshot ends before the index work starts: the indexer thread runs at idle
/// priority, and a snapshot it held while starved of CPU kept the checkpointer from copying the
/// WAL past it, and the WAL from starting over, for as long as a burst lasted. `reading` is
/// called with `true` before that read and `false` after it (the indexer reads at normal
/// priority).
pub(crate) fn index_pending(
    store: &Connection,
    text: &Connection,
    max: usize,
    reading: &dyn Fn(bool),
) -> Result<usize, rusqlite::Error> {
    text.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        let last = indexed_up_to(text)?;
        type Pending = (i64, String, Vec<u8>, Vec<u8>);
        reading(true);
        let rows: Result<Vec<Pending>, rusqlite::Error> = (|| {
            let mut select = store.prepare_cached(
                "SELECT id, path, headers, body FROM deliveries WHERE id > ?1 ORDER BY id LIMIT ?2",
            )?;
            select
                .query_map(params![last, max as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect()
        })();
        reading(false);
        let rows = rows?;
        let mut insert = text.prepare_cached(
            "INSERT INTO deliveries_fts (rowid, path, headers, body) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let (count, newest) = (rows.len(), rows.last().map(|row| row.0));
        for (id, path, headers, body) in rows {
            let (headers, body) = searchable(&headers, &body);
            insert.execute(params![id, path, headers, body])?;
        }
        if let Some(newest) = newest {
            text.execute("UPDATE text_state SET last_id = ?1", params![newest])?;
        }
        Ok(count)
    })();
    let result = result.and_then(|done| text.execute_batch("COMMIT").map(|()| done));
    if !text.is_autocommit() {
        let _ = text.execute_batch("ROLLBACK");
    }
    result
}

/// The deliveries a delete takes out of the index.
pub(crate) enum Forget<'a> {
    Ids(&'a [i64]),
    UpTo(i64),
    All,
}

/// Holds the text index's write lock across a deletion in the store (see the module's doc): the
/// index's entries of the deleted deliveries are deleted in its transaction, from the store's
/// rows before they go, and committed once the store's deletion has.
pub(crate) struct DeleteGuard<'a> {
    text: &'a Connection,
}

impl<'a> DeleteGuard<'a> {
    pub(crate) fn lock(text: &'a Connection) -> Result<DeleteGuard<'a>, rusqlite::Error> {
        text.execute_batch("BEGIN IMMEDIATE")?;
        Ok(DeleteGuard { text })
    }

    /// Deletes the entries of the deliveries `what` names, reading what was indexed of each
    /// from `store` (in the store's transaction, before its delete): a contentless index
    /// deletes an entry given the text it indexed. Deliveries not indexed yet have none.
    pub(crate) fn unindex(
        &self,
        store: &Connection,
        what: Forget<'_>,
    ) -> Result<(), rusqlite::Error> {
        let last = indexed_up_to(self.text)?;
        let (condition, bound) = match what {
            Forget::All => {
                return self.text.execute_batch(
                    "INSERT INTO deliveries_fts (deliveries_fts) VALUES ('delete-all')",
                );
            }
            Forget::UpTo(id) => ("id <= ?1", id.min(last)),
            Forget::Ids(ids) => {
                for id in ids.iter().filter(|id| **id <= last) {
                    self.unindex_where(store, "id = ?1", *id)?;
                }
                return Ok(());
            }
        };
        self.unindex_where(store, condition, bound)
    }

    fn unindex_where(
        &self,
        store: &Connection,
        condition: &str,
        bound: i64,
    ) -> Result<(), rusqlite::Error> {
        let mut rows = store.prepare_cached(&format!(
            "SELECT id, path, headers, body FROM deliveries WHERE {condition}"
        ))?;
        let mut delete = self.text.prepare_cached(
            "INSERT INTO deliveries_fts (deliveries_fts, rowid, path, headers, body) VALUES ('delete', ?1, ?2, ?3, ?4)",
        )?;
        let mut rows = rows.query(params![bound])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let path: String = row.get(1)?;
            let (headers, body) =
                searchable(row.get_ref(2)?.as_blob()?, row.get_ref(3)?.as_blob()?);
            delete.execute(params![id, path, headers, body])?;
        }
        Ok(())
    }

    /// The store's deletion committed: so does the index's.
    pub(crate) fn commit(self) -> Result<(), rusqlite::Error> {
        let committed = self.text.execute_batch("COMMIT");
        if committed.is_ok() {
            std::mem::forget(self);
        }
        committed
    }
}

impl Drop for DeleteGuard<'_> {
    /// The store's deletion failed: the index keeps what it had.
    fn drop(&mut self) {
        let _ = self.text.execute_batch("ROLLBACK");
    }
}

/// Whether the index holds exactly one entry per delivery it has indexed that the store still
/// holds. Not so after a crash between a delete's two commits (the store's, then the index's):
/// the index then holds entries, and words, of deleted deliveries, and is built again.
fn consistent(store: &Connection, text: &Connection) -> Result<bool, rusqlite::Error> {
    let last = indexed_up_to(text)?;
    let entries: i64 = text.query_row("SELECT COUNT(*) FROM deliveries_fts_docsize", [], |r| {
        r.get(0)
    })?;
    let stored: i64 = store.query_row(
        "SELECT COUNT(*) FROM deliveries WHERE id <= ?1",
        params![last],
        |r| r.get(0),
    )?;
    Ok(entries == stored)
}

/// The indexer starts a run once this many committed deliveries wait...
const BATCH: i64 = 256;
/// ...or once the oldest of them has waited this long (a delivery is searchable within a second
/// of its answer)...
const DELAY: Duration = Duration::from_millis(500);
/// ...or once deliveries stopped coming for this long.
const QUIET: Duration = Duration::from_millis(200);
/// Rows per transaction of the index: one FTS5 segment each. Larger than when the index shared
/// the writer's transaction (64), since its pauses no longer hold anyone: fewer segments to merge.
const PER_COMMIT: usize = 512;
/// On a stop, the indexer indexes what is committed for at most this long.
const STOP_WITHIN: Duration = Duration::from_secs(2);

/// The thread that fills the text index behind the writer's commits. Stops when dropped, after
/// indexing what is committed for at most [`STOP_WITHIN`] (the next start does the rest).
pub(crate) struct Indexer {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Set by the writer after each commit; the indexer waits on it.
    kicked: Lock<bool>,
    kick: Condvar,
}

impl Shared {
    /// Waits for a kick, at most `timeout`.
    fn wait(&self, timeout: Duration) {
        let guard = self.kicked.lock();
        let (mut guard, _) = self
            .kick
            .wait_timeout_while(guard, timeout, |kicked| !*kicked)
            .unwrap_or_else(|e| e.into_inner());
        *guard = false;
    }
}

impl Indexer {
    pub(crate) fn start(store_path: &Path) -> Option<Indexer> {
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = Arc::clone(&shared);
            let path = store_path.to_path_buf();
            std::thread::Builder::new()
                .name("hookscope-text-index".into())
                .spawn(move || indexer_loop(&path, &shared))
                .ok()?
        };
        Some(Indexer {
            shared,
            thread: Some(thread),
        })
    }

    /// The writer committed deliveries.
    pub(crate) fn kick(&self) {
        *self.shared.kicked.lock() = true;
        self.shared.kick.notify_one();
    }
}

impl Drop for Indexer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.kick();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs the calling thread under Linux's `SCHED_IDLE` policy (`idle`) or its normal one. Idle,
/// it gets a core only when nothing else wants it, so catching up after a burst never takes CPU
/// from answering deliveries: under wrk, `listen` answered 20.0–20.3k req/s with the indexer
/// idle, 20.9–21.9k with no indexer at all, and 17.2–18.4k with it at normal priority or at
/// nice 19. It reads the store at normal priority
/// ([`index_pending`]): a read
/// snapshot must not wait for a core. Elsewhere the thread keeps the default priority: its
/// pauses still hold no one; it only shares the CPU. `unsafe` (one of two, with src/main.rs's
/// allocator setting): std has no way to set a thread's scheduling policy.
#[allow(unsafe_code)]
fn set_idle(idle: bool) {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setscheduler reads the sched_param it is given, which lives on this stack
    // for the whole call; pid 0 names the calling thread.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        let policy = if idle {
            libc::SCHED_IDLE
        } else {
            libc::SCHED_OTHER
        };
        libc::sched_setscheduler(0, policy, &param);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = idle;
}

/// The indexer's connections: the store read-only (the writer owns its writes), the index for
/// writing.
fn open_index(path: &Path) -> Option<(Connection, Connection)> {
    let store = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?;
    let _ = store.busy_timeout(Duration::from_secs(5));
    let text = open_for_writing(path, &store).ok()?;
    Some((store, text))
}

/// Builds the index again when it is out of step with the store ([`consistent`]). Counting
/// both at a million deliveries takes a few hundred milliseconds: done once the indexer has
/// been idle a while after its start, not while the window reads its first rows.
fn rebuild_if_out_of_step(store: &Connection, text: &Connection) {
    if consistent(store, text).is_ok_and(|ok| !ok) {
        let rebuilt = text.execute_batch(
            "BEGIN IMMEDIATE;
             INSERT INTO deliveries_fts (deliveries_fts) VALUES ('delete-all');
             UPDATE text_state SET last_id = 0;
             COMMIT;",
        );
        if rebuilt.is_err() && !text.is_autocommit() {
            let _ = text.execute_batch("ROLLBACK");
        }
    }
}

/// How long after its start the indexer checks the index against the store, when idle.
const CHECK_AFTER: Duration = Duration::from_secs(3);

/// Indexes what is committed until nothing is left or a stop comes; when already stopping, for
/// at most [`STOP_WITHIN`], so a quit after a burst is not held up (the next start indexes the
/// rest).
fn catch_up(store: &Connection, text: &Connection, shared: &Shared, stopping: bool) {
    let stop_by = Instant::now() + STOP_WITHIN;
    while let Ok(n) = index_pending(store, text, PER_COMMIT, &|reading| set_idle(!reading)) {
        let stop_now = if stopping {
            Instant::now() >= stop_by
        } else {
            shared.stop.load(Ordering::Relaxed)
        };
        if n == 0 || stop_now {
            break;
        }
    }
}

fn indexer_loop(path: &Path, shared: &Shared) {
    set_idle(true);
    let Some((store, text)) = open_index(path) else {
        return;
    };
    let newest = |store: &Connection| {
        store
            .query_row("SELECT COALESCE(MAX(id), 0) FROM deliveries", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap_or(0)
    };
    let mut last = indexed_up_to(&text).unwrap_or(0);
    let mut waiting_since: Option<Instant> = None;
    let mut seen = newest(&store);
    let mut seen_moved = Instant::now();
    let (started, mut checked) = (Instant::now(), false);
    loop {
        let stopping = shared.stop.load(Ordering::Relaxed);
        let now = Instant::now();
        let committed = newest(&store);
        if committed != seen {
            seen = committed;
            seen_moved = now;
        }
        let backlog = committed - last;
        let due = backlog > 0
            && (stopping
                || backlog >= BATCH
                || waiting_since.is_some_and(|since| now >= since + DELAY)
                || now >= seen_moved + QUIET);
        if due {
            catch_up(&store, &text, shared, stopping);
            last = indexed_up_to(&text).unwrap_or(0);
            waiting_since = None;
            continue;
        }
        if stopping {
            break;
        }
        if backlog == 0 && !checked && started.elapsed() >= CHECK_AFTER {
            rebuild_if_out_of_step(&store, &text);
            last = indexed_up_to(&text).unwrap_or(0);
            checked = true;
            continue;
        }
        // The writer truncates the index's WAL once idle (src/store/writer.rs).
        let wait = if backlog > 0 {
            let since = *waiting_since.get_or_insert(now);
            (since + DELAY)
                .min(seen_moved + QUIET)
                .saturating_duration_since(now)
        } else {
            // Cleared: ids go on after the newest ever given, so nothing below `last` comes.
            Duration::from_millis(250)
        };
        shared.wait(wait.clamp(Duration::from_millis(1), Duration::from_millis(250)));
    }
    let _ = text.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
}

/// What the index holds of a delivery, from its stored header blob and body: the headers as
/// text (none when they cannot be decoded) and the body's text. Deleting an entry gives the
/// index the same.
fn searchable(headers: &[u8], body: &[u8]) -> (String, Option<String>) {
    let headers = decode_headers(headers).unwrap_or_default();
    (searchable_headers(&headers), searchable_body(body))
}

/// The most of a body the free-text index holds.
const BODY_LIMIT: usize = 64 * 1024;

/// The headers as text for the text index: names and values, except signature values (random
/// per delivery, never searched for, and a third of the index; the name stays, so a search for
/// `webhook-signature` still finds the deliveries that carry one).
fn searchable_headers(headers: &[crate::domain::delivery::Header]) -> String {
    let mut text = String::new();
    for h in headers {
        text.push_str(&h.name);
        text.push_str(": ");
        if !crate::domain::scheme::is_signature_header(&h.name) {
            text.push_str(&h.value_lossy());
        }
        text.push('\n');
    }
    text
}

fn searchable_body(body: &[u8]) -> Option<String> {
    let head = &body[..body.len().min(BODY_LIMIT)];
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
