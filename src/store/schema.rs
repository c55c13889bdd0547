//! The schema, one migration per version (`PRAGMA user_version` counts them), and how a
//! connection is opened (WAL, `synchronous = FULL`, `secure_delete`, the page cache).

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::store::error::StoreError;

/// The schema, one entry per version; `PRAGMA user_version` says how many were applied.
pub const MIGRATIONS: &[&str] = &[
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
    // v6: what the job API said when hookscope reconciled a job, one row per poll. A job known
    // to the API only gets a `jobs` row with no deliveries (last_delivery_id 0).
    "CREATE TABLE polls (
        id INTEGER PRIMARY KEY,
        job_id TEXT NOT NULL,
        endpoint TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        status INTEGER,
        state TEXT,
        latency_ms INTEGER NOT NULL,
        error TEXT,
        result_url TEXT,
        expires_at_ms INTEGER,
        output_status INTEGER
    );
    CREATE INDEX polls_by_job ON polls(job_id, id);",
    // v7: the provider simulator's attempts name their job, so its timeline shows what was sent.
    "ALTER TABLE attempts ADD COLUMN job_id TEXT;
    ALTER TABLE attempts ADD COLUMN attempt_no INTEGER;
    CREATE INDEX attempts_by_job ON attempts(job_id, id) WHERE job_id IS NOT NULL;",
    // v8: the capture journal (`hookscope.journal`) holds acknowledged deliveries until the store
    // holds them durably; this row says the newest id the tables were written up to, so a start
    // writes again only the journal's rows after it.
    "CREATE TABLE journal_state (built_id INTEGER NOT NULL);
    INSERT INTO journal_state SELECT MAX(COALESCE((SELECT MAX(id) FROM deliveries), 0), (SELECT last_id FROM fts_state));",
    // v9: `checks_json` holds new deliveries' checks compacted against a dictionary (a blob,
    // src/store/compact.rs); older rows keep their JSON text. Nothing to change in the rows:
    // the version is there so an older hookscope refuses the store instead of misreading it.
    "-- checks_json: JSON text or a compacted blob",
    // v10: the filter indexes name one column. Every index of a rowid table already ends with
    // the rowid, so `(event_type)` is walked in id order as `(event_type, id)` was, with the
    // same query plans; naming `id` stored it twice (~4 bytes per index per delivery).
    "DROP INDEX deliveries_event_id;
    CREATE INDEX deliveries_event_id ON deliveries(event_id);
    DROP INDEX deliveries_job_id;
    CREATE INDEX deliveries_job_id ON deliveries(job_id);
    DROP INDEX deliveries_event_type;
    CREATE INDEX deliveries_event_type ON deliveries(event_type);
    DROP INDEX deliveries_path;
    CREATE INDEX deliveries_path ON deliveries(path);
    DROP INDEX deliveries_sig_status;
    CREATE INDEX deliveries_sig_status ON deliveries(sig_status);
    DROP INDEX deliveries_ts_status;
    CREATE INDEX deliveries_ts_status ON deliveries(ts_status);
    DROP INDEX deliveries_dup_status;
    CREATE INDEX deliveries_dup_status ON deliveries(dup_status);",
    // v11: bodies and header blobs packed against a dictionary made from the store's first
    // deliveries (src/store/pack.rs); `packed` names it (NULL: stored as received). Ids are
    // never reused (readers keep the dictionaries they read, by id).
    "CREATE TABLE dictionaries (id INTEGER PRIMARY KEY AUTOINCREMENT, bytes BLOB NOT NULL);
    ALTER TABLE deliveries ADD COLUMN packed INTEGER;",
    // v12: the verdict indexes hold only the deliveries that need a look (a signature that did
    // not pass, a timestamp that did not pass, a duplicate): a healthy delivery writes none of
    // them. `sig:pass` and the like read the table (140 ms to count 950,000 of 1,000,000).
    // src/store/query.rs repeats each condition so SQLite uses these indexes.
    "DROP INDEX deliveries_sig_status;
    CREATE INDEX deliveries_sig_status ON deliveries(sig_status) WHERE sig_status <> 'pass';
    DROP INDEX deliveries_ts_status;
    CREATE INDEX deliveries_ts_status ON deliveries(ts_status) WHERE ts_status <> 'pass';
    DROP INDEX deliveries_dup_status;
    CREATE INDEX deliveries_dup_status ON deliveries(dup_status) WHERE dup_status <> 'first';",
    // v13: the text index moves to a file of its own beside the store, filled by its own thread
    // (src/store/text.rs), which builds it from the store (the build that made v13 copied the
    // old index there first; its text file's version 2 builds it again). The store gets an identity, which the
    // text file records, so a text file never serves another store. Ids still never go back:
    // `journal_state.built_id` (v8) has counted every id given since `fts_state` was last needed.
    "CREATE TABLE store_identity (uid BLOB NOT NULL);
    INSERT INTO store_identity VALUES (randomblob(16));
    DROP TABLE deliveries_fts;
    DROP TABLE fts_state;",
    // v14: SQLite's own durability. The capture journal (v8) and the packed rows (v11) go:
    // `legacy::upgrade` first writes back the journal's rows the tables lack and rewrites every
    // packed row and compacted checks column as received. Ids still never go back: `id_floor`
    // holds the newest id ever given once deletes have taken it out of the table.
    "CREATE TABLE id_floor (newest INTEGER NOT NULL);
    INSERT INTO id_floor SELECT MAX(COALESCE((SELECT MAX(id) FROM deliveries), 0),
        COALESCE((SELECT built_id FROM journal_state), 0));
    DROP TABLE journal_state;
    DROP TABLE dictionaries;
    ALTER TABLE deliveries DROP COLUMN packed;",
    // v15: an event id is unique within its scope (`checks::duplicate_scope`: the endpoint and
    // the scheme, and on the catch-all endpoint the path), not within the endpoint: a Slack
    // and a Stripe delivery with the same body id are not the same event. Each event id is
    // scoped by its first delivery (the expression below, which `maintain::SCOPE_SQL` extended
    // in v16 with a CloudEvent's source); when two land in
    // one scope the earlier stays, and `seen` counts the copies within the scope. The verdicts
    // already stored stay as they were; *Re-check* decides a delivery's again. An event id
    // whose first delivery was deleted goes: its scope cannot be told.
    "CREATE TABLE event_scopes (
        scope TEXT NOT NULL,
        event_id TEXT NOT NULL,
        first_delivery_id INTEGER NOT NULL,
        seen INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (scope, event_id)
    ) WITHOUT ROWID;
    INSERT OR IGNORE INTO event_scopes (scope, event_id, first_delivery_id, seen)
        SELECT (CASE WHEN d.endpoint = '/' THEN d.path ELSE d.endpoint END || ' (' || COALESCE(d.scheme, 'no scheme') || ')'),
            e.event_id, e.first_delivery_id,
            (SELECT COUNT(*) FROM deliveries c WHERE c.event_id = e.event_id AND c.id >= e.first_delivery_id
                AND (CASE WHEN c.endpoint = '/' THEN c.path ELSE c.endpoint END)
                    = (CASE WHEN d.endpoint = '/' THEN d.path ELSE d.endpoint END)
                AND c.scheme IS d.scheme)
        FROM event_ids e JOIN deliveries d ON d.id = e.first_delivery_id
        ORDER BY e.first_delivery_id;
    DROP TABLE event_ids;
    ALTER TABLE event_scopes RENAME TO event_ids;",
    // v16: handshakes and CloudEvents. `handshake` holds what a provider's challenge asked and
    // what was answered (JSON), NULL for a delivery; `handshake:yes` walks its partial index.
    // `event_source` is a CloudEvent's `source`, which joins its duplicate scope (its id is
    // unique within the source). Older rows have neither, so their scopes are unchanged.
    "ALTER TABLE deliveries ADD COLUMN event_source TEXT;
    ALTER TABLE deliveries ADD COLUMN handshake TEXT;
    CREATE INDEX deliveries_handshake ON deliveries(id) WHERE handshake IS NOT NULL;",
    // v17: forwarding rules. `unrouted` is how many rules its endpoint had when a delivery
    // matched none of them (NULL otherwise); the count walks its partial index.
    "ALTER TABLE deliveries ADD COLUMN unrouted INTEGER;
    CREATE INDEX deliveries_unrouted ON deliveries(id) WHERE unrouted IS NOT NULL;",
    // v18: contracts. `schema_status` is the schema check's verdict word (`pass`, `fail`,
    // `skipped`), NULL where the endpoint had no contract; `schema:` walks its partial index.
    "ALTER TABLE deliveries ADD COLUMN schema_status TEXT;
    CREATE INDEX deliveries_schema_status ON deliveries(schema_status) WHERE schema_status IS NOT NULL;",
    // v19: the relay. A delivery taken from a relay keeps the relay's sequence number and how
    // long it waited there (`received_at_ms` is the relay's time); `relay_cursors` holds, per
    // relay channel, the newest sequence number stored, written in the same transaction as the
    // delivery, so a reconnect resumes after it and a repeat is skipped; and the channel's uid,
    // so that a channel made anew under the same URL starts the cursor over.
    "ALTER TABLE deliveries ADD COLUMN relay_seq INTEGER;
    ALTER TABLE deliveries ADD COLUMN relay_delay_ms INTEGER;
    CREATE TABLE relay_cursors (source TEXT PRIMARY KEY, seq INTEGER NOT NULL, channel_uid TEXT) WITHOUT ROWID;",
];

/// The schema version whose migration retires the capture journal and the packed rows.
const SQLITE_DURABILITY: usize = 14;
/// The first schema version with a capture journal beside the store.
const JOURNAL_SINCE: i64 = 8;

/// The page size of a new store.
const PAGE_SIZE: i64 = 2048;
/// The most bytes the WAL keeps once SQLite starts it over (`journal_size_limit`).
pub(crate) const WAL_LIMIT: i64 = 4 * 1024 * 1024;
/// The writer's page cache, in KiB as `PRAGMA cache_size` takes it (negative).
const WRITER_CACHE_KIB: i64 = -8_192;

pub(crate) fn open_connection(path: &Path, read_only: bool) -> Result<Connection, StoreError> {
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
        // A new store's page size (an existing store keeps its own: SQLite applies it only to a
        // file that holds no table yet). Each commit writes every page it touched, whole: at a
        // trickle of 1 KiB deliveries, 2 KiB pages wrote 31 x each delivery's size, 4 KiB
        // pages 47 x (BENCHMARKS.md).
        conn.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(open_err)?;
        // Every commit is synced before it returns: a 2xx after COMMIT means on disk.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(open_err)?;
        // Deleted means gone: freed cells and pages are overwritten with zeros (`ON`, not
        // `FAST`: `FAST` leaves freed overflow pages, a large body's, as they were).
        conn.pragma_update(None, "secure_delete", "ON")
            .map_err(open_err)?;
        // After SQLite's checkpoint starts the WAL over, a WAL that a burst made larger is cut
        // back to this; the writer truncates it to nothing once it is idle.
        conn.pragma_update(None, "journal_size_limit", WAL_LIMIT)
            .map_err(open_err)?;
        // The writer's page cache: the pages it touches per delivery (the table's and the
        // indexes' rightmost pages, the event-id and job tables' paths) and no more. SQLite
        // sweeps this cache's whole hash table at the end of every transaction that split a
        // page (a split renumbers pages through the lock-byte page, 524,289 at 2 KiB pages, so
        // the cache holds a page past the file's end at COMMIT): at 64 MiB that sweep was 15 %
        // of the writer's CPU under load (BENCHMARKS.md). 8 MiB keeps it an eighth of that.
        conn.pragma_update(None, "cache_size", WRITER_CACHE_KIB)
            .map_err(open_err)?;
        // Statement journals (upserts, multi-row updates and deletes) in memory, not in temp files
        // on disk: each was a second copy of every page a statement touched.
        conn.pragma_update(None, "temp_store", "MEMORY")
            .map_err(open_err)?;
    }
    Ok(conn)
}

/// A read-only connection that takes no locks and makes no `-shm` file (SQLite's `immutable`):
/// for a store on a read-only volume, which nobody can be writing to.
pub(crate) fn open_immutable(path: &Path) -> Result<Connection, StoreError> {
    let uri = crate::store::text::immutable_uri(path);
    Connection::open_with_flags(
        &uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    })
}

/// Brings the store up to [`MIGRATIONS`]' version. Each step runs in a `BEGIN IMMEDIATE`
/// transaction that reads the version again under SQLite's write lock, so two processes that
/// open an old store at once apply each migration once.
pub(crate) fn migrate(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let open_err = |source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    };
    let version = |conn: &Connection| -> Result<i64, StoreError> {
        conn.pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(open_err)
    };
    let supported = MIGRATIONS.len() as i64;
    let started_at = version(conn)?;
    if started_at > supported {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: started_at,
            supported,
        });
    }
    let mut journal_replayed = false;
    loop {
        let current = version(conn)?;
        if current >= supported {
            break;
        }
        let step = (current + 1) as usize;
        let tx =
            rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)
                .map_err(open_err)?;
        if version(&tx)? != current {
            // Another process migrated meanwhile.
            continue;
        }
        if step == SQLITE_DURABILITY {
            crate::store::legacy::upgrade(&tx, path, started_at >= JOURNAL_SINCE)
                .map_err(open_err)?;
            journal_replayed = started_at >= JOURNAL_SINCE;
        }
        tx.execute_batch(MIGRATIONS[step - 1]).map_err(open_err)?;
        tx.pragma_update(None, "user_version", step as i64)
            .map_err(open_err)?;
        tx.commit().map_err(open_err)?;
    }
    let journal = crate::store::legacy::journal_beside(path);
    if journal_replayed {
        // Its rows are in the tables now, durably: the file (acknowledged bodies) goes.
        let _ = std::fs::remove_file(&journal);
    } else if started_at < JOURNAL_SINCE && journal.exists() {
        // A journal beside a new store belongs to another one (a damaged store an older
        // hookscope moved aside without it): never replayed here, kept aside, never deleted.
        let aside = journal.with_file_name(format!(
            "{}.unclaimed-{}",
            crate::store::legacy::JOURNAL_FILE,
            crate::domain::clock::now_secs()
        ));
        let _ = std::fs::rename(&journal, aside);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::handle::Store;
    use crate::store::reader::Reader;

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
