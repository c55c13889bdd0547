//! The store on a real SQLite file: filtered pages by position, free text, counts, and the
//! maintenance tasks (re-check, delete, clear, retention).

use hookscope::domain::checks::{SignatureStatus, status_word};
use hookscope::domain::filter::Filter;
use hookscope::store::{Maintenance, Reader, Store};

mod common;

use common::seed;

fn seeded(count: usize) -> (tempfile::TempDir, Store, Reader) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&dir.path().join("hookscope.sqlite")).expect("store");
    let records = (0..count).map(seed::record).collect();
    assert_eq!(
        store
            .writer()
            .insert_many_blocking(records)
            .expect("insert"),
        count
    );
    let reader = store.reader().expect("reader");
    (dir, store, reader)
}

fn count(reader: &Reader, filter: &str) -> i64 {
    reader
        .count_matching(&Filter::parse(filter).expect("filter"))
        .expect("count")
}

/// Waits until `filter` counts `expected` (the text index fills behind the writer's commits);
/// fails after 5 s.
fn wait_for_count(reader: &Reader, filter: &str, expected: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let now = count(reader, filter);
        if now == expected {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{filter}: {now} matches after 5 s, expected {expected}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn filters_count_what_the_seed_put_there() {
    let (_dir, _store, reader) = seeded(200);
    assert_eq!(count(&reader, ""), 200);
    // Every 20th signature is tampered with.
    assert_eq!(count(&reader, "sig:fail"), 10);
    // Every 50th delivery repeats the previous event id.
    assert_eq!(count(&reader, "dup:yes"), 4);
    // One event in five is needs_review: found by type, and by free text in the body.
    assert_eq!(count(&reader, "type:job.needs_review"), 40);
    assert_eq!(count(&reader, "needs_review"), 40);
    assert_eq!(count(&reader, "path:/hooks/ocr"), 67);
    assert_eq!(count(&reader, "path:/hooks/ocr sig:fail"), 3);
    assert_eq!(count(&reader, "job:job_0000003"), 5);
    // Free text reaches headers too, and word prefixes match.
    assert_eq!(count(&reader, "seed"), 200);
    assert_eq!(count(&reader, "doc_000000"), 50);
    assert_eq!(count(&reader, "nothing-like-this"), 0);
    // Signature values are not in the text index (random per delivery); the header's name and
    // the event id are.
    let first = seed::record(0);
    let signature = first
        .delivery
        .header("webhook-signature")
        .expect("signed")
        .to_vec();
    let fragment: String = String::from_utf8(signature).expect("ascii")[3..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    assert!(fragment.len() >= 6, "{fragment}");
    assert_eq!(count(&reader, &format!("\"{fragment}\"")), 0);
    assert_eq!(count(&reader, "webhook-signature"), 200);
    assert_eq!(count(&reader, "msg_00000007"), 1);
    // Control characters are separators, not an SQL error (found by the `filter` fuzz target:
    // a NUL ended FTS5's query string).
    assert_eq!(count(&reader, "doc_000000\u{0}"), 50);
    assert_eq!(count(&reader, "\u{4}\u{0}\u{0}\u{0}"), 200);
}

#[test]
fn pages_are_positions_in_id_order_under_a_filter() {
    let (_dir, _store, reader) = seeded(200);
    let all = reader.page(&Filter::default(), 10, 5).expect("page");
    assert_eq!(
        all.iter().map(|r| r.id).collect::<Vec<_>>(),
        [11, 12, 13, 14, 15]
    );
    let failing = reader
        .page(&Filter::parse("sig:fail").expect("filter"), 1, 3)
        .expect("page");
    assert_eq!(
        failing.iter().map(|r| r.id).collect::<Vec<_>>(),
        [40, 60, 80]
    );
    assert!(
        failing
            .iter()
            .all(|r| r.checks.signature.status == SignatureStatus::Fail)
    );
    assert_eq!(
        reader
            .position_of(&Filter::parse("sig:fail").expect("filter"), 60)
            .expect("position"),
        2
    );
    // Free text alone is counted in the text index; with a typed term, through the table. Both
    // agree with the pages: one delivery in five is needs_review.
    for text in ["needs_review", "needs_review path:/hooks"] {
        let filter = Filter::parse(text).expect("filter");
        let rows = reader.page(&filter, 0, 100).expect("page");
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), 40, "{text}");
        assert!(ids.windows(2).all(|w| w[1] - w[0] == 5), "{text}: {ids:?}");
        for (position, id) in ids.iter().enumerate() {
            assert_eq!(
                reader.position_of(&filter, *id).expect("position"),
                position as i64,
                "{text}: #{id}"
            );
        }
        // A delivery the filter hides sits where the next matching one would.
        assert_eq!(
            reader.position_of(&filter, ids[2] - 1).expect("position"),
            2
        );
    }
    // Past the end is empty, not an error.
    assert!(
        reader
            .page(&Filter::default(), 500, 10)
            .expect("page")
            .is_empty()
    );
}

#[test]
fn a_recheck_replaces_the_signature_verdict_and_keeps_the_duplicate_one() {
    let (_dir, store, reader) = seeded(100);
    // Delivery 50 repeats the previous event id: its duplicate verdict is not the default.
    let duplicate_before = reader.get(50).expect("get").expect("row").checks.duplicate;
    assert_eq!(status_word(&duplicate_before.status), "duplicate");
    let row = reader.get(20).expect("get").expect("row");
    assert_eq!(row.checks.signature.status, SignatureStatus::Fail);
    for id in [20, 50] {
        let row = reader.get(id).expect("get").expect("row");
        let mut signature = row.checks.signature.clone();
        signature.status = SignatureStatus::Pass;
        signature.detail = "now verified".into();
        let task = Maintenance::Recheck {
            id,
            scheme: row.scheme.clone(),
            signature: Box::new(signature),
            timestamp: Box::new(row.checks.timestamp.clone()),
            advice: Box::new(row.checks.advice.clone()),
        };
        assert_eq!(store.writer().maintain_blocking(task).expect("recheck"), 1);
    }
    let row = reader.get(20).expect("get").expect("row");
    assert_eq!(status_word(&row.checks.signature.status), "pass");
    assert_eq!(row.checks.signature.detail, "now verified");
    assert_eq!(
        reader.get(50).expect("get").expect("row").checks.duplicate,
        duplicate_before,
        "a re-check leaves the duplicate verdict as the writer decided it"
    );
    assert_eq!(count(&reader, "sig:fail"), 4);
}

#[test]
fn deleting_removes_rows_from_the_table_the_text_index_and_their_jobs() {
    let (_dir, store, reader) = seeded(100);
    assert_eq!(reader.job_deliveries("job_0000000").expect("job").len(), 5);
    assert_eq!(
        store
            .writer()
            .maintain_blocking(Maintenance::Delete(vec![1, 2, 3]))
            .expect("delete"),
        3
    );
    assert_eq!(count(&reader, ""), 97);
    assert_eq!(count(&reader, "seed"), 97);
    assert_eq!(reader.job_deliveries("job_0000000").expect("job").len(), 2);
    assert_eq!(reader.count_jobs().expect("jobs"), 20);
}

#[test]
fn retention_by_count_keeps_the_newest_and_drops_emptied_jobs() {
    let (_dir, store, reader) = seeded(100);
    let task = Maintenance::Retain {
        max_age_ms: None,
        max_count: Some(10),
        now_ms: 0,
        steady_ms: 0,
    };
    assert_eq!(store.writer().maintain_blocking(task).expect("retain"), 90);
    let kept = reader.page(&Filter::default(), 0, 100).expect("page");
    assert_eq!(kept.first().map(|r| r.id), Some(91));
    assert_eq!(count(&reader, "seed"), 10);
    // Jobs whose deliveries are all gone are gone too.
    assert_eq!(
        reader.recent_jobs("", 100).expect("jobs"),
        ["job_0000019", "job_0000018"]
    );
}

#[test]
fn retention_by_age_keeps_what_arrived_within_the_window() {
    let (_dir, store, reader) = seeded(100);
    // The seed receives delivery n at 1_790_000_000 s + n s; "now" is just after the 95th.
    let task = Maintenance::Retain {
        max_age_ms: Some(1),
        max_count: None,
        now_ms: 1_790_000_000_000 + 95 * 1000,
        steady_ms: 1_790_000_000_000 + 95 * 1000,
    };
    assert_eq!(store.writer().maintain_blocking(task).expect("retain"), 95);
    assert_eq!(count(&reader, ""), 5);
    let kept = reader.page(&Filter::default(), 0, 10).expect("page");
    assert_eq!(
        kept.iter().map(|r| r.id).collect::<Vec<_>>(),
        [96, 97, 98, 99, 100]
    );
}

#[test]
fn retention_never_deletes_because_the_clock_went_forward() {
    let (_dir, store, reader) = seeded(100);
    // The seed's newest delivery arrived at 1_790_000_100 s; an hour's retention.
    let newest = 1_790_000_000_000 + 100 * 1000;
    let hour = 3_600_000;
    // The wall clock jumped a day ahead of the steady clock: nothing is an hour old yet.
    let jumped = Maintenance::Retain {
        max_age_ms: Some(hour),
        max_count: None,
        now_ms: newest + 86_400_000,
        steady_ms: newest + 1_000,
    };
    assert_eq!(store.writer().maintain_blocking(jumped).expect("retain"), 0);
    assert_eq!(count(&reader, ""), 100);
    // The same "now" with a steady clock that agrees: a day really passed, and all go.
    let passed = Maintenance::Retain {
        max_age_ms: Some(hour),
        max_count: None,
        now_ms: newest + 86_400_000,
        steady_ms: newest + 86_400_000,
    };
    assert_eq!(
        store.writer().maintain_blocking(passed).expect("retain"),
        100
    );
}

#[test]
fn clearing_forgets_event_ids_too() {
    let (_dir, store, reader) = seeded(100);
    let writer = store.writer();
    writer.maintain_blocking(Maintenance::Clear).expect("clear");
    assert_eq!(count(&reader, ""), 0);
    // The same event is a first again.
    let again = writer.insert_blocking(seed::record(0)).expect("insert");
    assert_eq!(status_word(&again.checks.duplicate.status), "first");
    reader.integrity_check().expect("integrity");
}

#[test]
fn the_tail_walked_from_the_newest_end_equals_the_last_page() {
    let (_dir, _store, reader) = seeded(300);
    for text in [
        "",
        "sig:fail",
        "needs_review",
        "type:job.failed dup:yes",
        "path:/hooks/ocr seed",
    ] {
        let filter = Filter::parse(text).expect("filter");
        let total = reader.count_matching(&filter).expect("count") as usize;
        let tail = reader.page_tail(&filter, 7).expect("tail");
        let page = reader
            .page(&filter, total.saturating_sub(7), 7)
            .expect("page");
        assert_eq!(
            tail.iter().map(|r| r.id).collect::<Vec<_>>(),
            page.iter().map(|r| r.id).collect::<Vec<_>>(),
            "{text}"
        );
    }
}

#[test]
fn single_deliveries_become_searchable_once_the_writer_is_idle() {
    let (_dir, store, reader) = seeded(0);
    let writer = store.writer();
    let stored = writer.insert_blocking(seed::record(7)).expect("insert");
    wait_for_count(&reader, "needs_review", 1);
    // A deleted newest id is never given to another delivery (its text would be lost).
    writer
        .maintain_blocking(Maintenance::Delete(vec![stored.id]))
        .expect("delete");
    let next = writer.insert_blocking(seed::record(8)).expect("insert");
    assert!(next.id > stored.id);
}

#[test]
fn negated_terms_and_time_bounds_count_on_a_real_store() {
    let (_dir, _store, reader) = seeded(100);
    assert_eq!(count(&reader, "sig:fail"), 5);
    assert_eq!(count(&reader, "-sig:fail"), 95);
    assert_eq!(count(&reader, "-needs_review"), 80);
    // Deliveries without an event type are kept by `-type:` (IS NOT, not NOT =).
    assert_eq!(
        count(&reader, "type:job.failed") + count(&reader, "-type:job.failed"),
        100
    );
    // The seed receives delivery n at 1_790_000_000 s + n s.
    let from = hookscope::domain::fmt::rfc3339_ms(1_790_000_050_000);
    assert_eq!(count(&reader, &format!("after:{from}")), 50);
    assert_eq!(count(&reader, &format!("before:{from}")), 50);
    assert_eq!(count(&reader, &format!("after:{from} -sig:fail")), 47);
}

/// A power cut loses what the system had not synced. hookscope syncs only the capture journal
/// before it answers; the WAL's commits are synced later (a checkpoint, or a sync of the WAL
/// before the journal is emptied). So the disk after a cut holds, at worst, the database file as
/// of the last checkpoint and the journal: no WAL at all. Every acknowledged delivery must be
/// back, once, with its verdicts, when the store is opened again.
#[test]
fn a_power_cut_loses_no_acknowledged_delivery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookscope.sqlite");
    let store = Store::open(&path).expect("store");
    let writer = store.writer();
    let mut acknowledged = Vec::new();
    // More than one transaction's share of the text index (64), so indexing them takes two.
    for n in 0..100 {
        acknowledged.push(writer.insert_blocking(seed::record(n)).expect("insert"));
    }
    // Idle: the writer indexes them, checkpoints into the database file, truncates the WAL,
    // empties the journal.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !hookscope::store::journal::journaled_ids(&path).is_empty()
        || std::fs::metadata(dir.path().join("hookscope.sqlite-wal")).map_or(0, |m| m.len()) > 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "never checkpointed when idle"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for n in 100..150 {
        acknowledged.push(writer.insert_blocking(seed::record(n)).expect("insert"));
    }
    // The cut, now: the database file and the journal as they are; the WAL lost.
    let after = tempfile::tempdir().expect("tempdir");
    let cut = after.path().join("hookscope.sqlite");
    std::fs::copy(&path, &cut).expect("database file");
    std::fs::copy(
        dir.path().join("hookscope.journal"),
        after.path().join("hookscope.journal"),
    )
    .expect("journal");
    let in_the_file: i64 = rusqlite::Connection::open(&cut)
        .expect("raw")
        .query_row("SELECT COUNT(*) FROM deliveries", [], |r| r.get(0))
        .expect("count");
    assert_eq!(
        in_the_file, 100,
        "the database file alone lacks the last 50"
    );
    drop(store);

    let reopened = Store::open(&cut).expect("reopen after the cut");
    let reader = reopened.reader().expect("reader");
    assert_eq!(reader.count().expect("count"), 150);
    for before in &acknowledged {
        let after = reader
            .get(before.id)
            .expect("get")
            .expect("every acknowledged id");
        assert_eq!(after.delivery.body, before.delivery.body);
        assert_eq!(after.checks, before.checks, "verdicts as answered");
    }
    // Written again once, not once per start.
    drop(reader);
    drop(reopened);
    let again = Store::open(&cut).expect("third open");
    assert_eq!(again.reader().expect("reader").count().expect("count"), 150);
    again
        .reader()
        .expect("reader")
        .integrity_check()
        .expect("integrity");
}

/// A second writer on a store whose journal another one owns (an `import` beside a capturing
/// `listen`, a second `Store` in one process) has no journal: it must commit, synced, before it
/// answers, so what it acknowledged is readable at once.
#[test]
fn a_writer_without_the_journal_answers_only_after_its_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookscope.sqlite");
    let owner = Store::open(&path).expect("the journal's owner");
    // Its writer thread takes the journal when it starts: one answered insert says it has. (Both
    // writer threads starting at once, the second could win the journal: the test failed so
    // once in ~10 full runs.)
    owner
        .writer()
        .insert_blocking(seed::record(1000))
        .expect("the owner writes");
    let second = Store::open(&path).expect("a second writer");
    let raw = rusqlite::Connection::open(&path).expect("raw");
    for n in 0..20 {
        let stored = second
            .writer()
            .insert_blocking(seed::record(n))
            .expect("insert");
        let found: i64 = raw
            .query_row(
                "SELECT COUNT(*) FROM deliveries WHERE id = ?1",
                [stored.id],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(
            found, 1,
            "delivery {} answered before its commit",
            stored.id
        );
    }
    drop(owner);
}

/// The raw `packed` column of every row, read through a connection of its own.
fn packed_column(path: &std::path::Path) -> Vec<Option<i64>> {
    let conn = rusqlite::Connection::open(path).expect("open");
    let mut stmt = conn
        .prepare("SELECT packed FROM deliveries ORDER BY id")
        .expect("prepare");
    stmt.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
fn rows_packed_against_the_learned_dictionary_read_back_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookscope.sqlite");
    let store = Store::open(&path).expect("store");
    let writer = store.writer();
    // One at a time, as a receiver writes them: the first 64 are stored as received and make
    // the dictionary; the ones after are packed.
    for n in 0..150 {
        writer.insert_blocking(seed::record(n)).expect("insert");
    }
    // A bulk import packs too, and a body over the limit is stored as received.
    let mut big = seed::record(150);
    big.delivery.body = vec![b'x'; 20 * 1024];
    let mut records: Vec<_> = (151..200).map(seed::record).collect();
    records.insert(0, big.clone());
    writer.insert_many_blocking(records).expect("import");
    let packed = packed_column(&path);
    assert_eq!(packed.len(), 200);
    assert!(packed[..64].iter().all(Option::is_none), "{packed:?}");
    let dictionary = packed[149].expect("packed once there is a dictionary");
    assert!(packed[70..150].iter().all(|p| *p == Some(dictionary)));
    assert_eq!(packed[150], None, "a 20 KiB body is stored as received");
    assert!(packed[151..].iter().all(|p| *p == Some(dictionary)));

    let reader = store.reader().expect("reader");
    for n in 0..200 {
        let expected = if n == 150 {
            big.clone()
        } else {
            seed::record(n)
        };
        let stored = reader.get(n as i64 + 1).expect("read").expect("row");
        assert_eq!(stored.delivery.body, expected.delivery.body, "#{}", n + 1);
        assert_eq!(
            stored.delivery.headers,
            expected.delivery.headers,
            "#{}",
            n + 1
        );
    }
    // The text index reads packed rows too.
    assert_eq!(count(&reader, "needs_review"), 40);
    assert_eq!(count(&reader, "msg_00000123"), 1);
    // And they are smaller: the packed rows' body and header columns are less than half.
    let conn = rusqlite::Connection::open(&path).expect("open");
    let (raw, packed): (f64, f64) = conn
        .query_row(
            "SELECT (SELECT AVG(LENGTH(body) + LENGTH(headers)) FROM deliveries WHERE packed IS NULL AND id <= 64),
                    (SELECT AVG(LENGTH(body) + LENGTH(headers)) FROM deliveries WHERE packed IS NOT NULL)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("sizes");
    assert!(packed * 2.0 < raw, "packed {packed} B, as received {raw} B");

    reader
        .integrity_check()
        .expect("integrity before the clear");
    // Clearing the history takes the dictionary with it; the next deliveries make another.
    writer.maintain_blocking(Maintenance::Clear).expect("clear");
    let left: i64 = conn
        .query_row("SELECT COUNT(*) FROM dictionaries", [], |r| r.get(0))
        .expect("count");
    assert_eq!(left, 0);
    for n in 0..70 {
        writer.insert_blocking(seed::record(n)).expect("insert");
    }
    // Committed within the writer's commit interval.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let again = loop {
        let again = packed_column(&path);
        if again.len() == 70 || std::time::Instant::now() > deadline {
            break again;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(again[..64].iter().all(Option::is_none), "{again:?}");
    // Under another id: a reader keeps the dictionaries it has read, by id.
    assert!(
        again[64..]
            .iter()
            .all(|p| p.is_some_and(|d| d != dictionary)),
        "{again:?}"
    );
    let reread = reader.get(70 + 200).expect("read").expect("row");
    assert_eq!(reread.delivery.body, seed::record(69).delivery.body);
    // On a connection of its own: SQLite's check of the text index, run first thing on a
    // connection that read the index before the clear, reports "corruption found reading blob"
    // (its cached view of the index; queries on that connection answer right, and the same
    // check passes after one of them or on a new connection).
    store
        .reader()
        .expect("reader")
        .integrity_check()
        .expect("integrity");
}

#[test]
fn verdict_filters_use_the_partial_indexes_and_the_usual_verdict_reads_the_table() {
    let (dir, _store, reader) = seeded(100);
    let conn = rusqlite::Connection::open(dir.path().join("hookscope.sqlite")).expect("open");
    let plan = |filter: &str| -> String {
        let (condition, params) =
            hookscope::store::query::condition(&Filter::parse(filter).expect("filter"));
        let mut stmt = conn
            .prepare(&format!(
                "EXPLAIN QUERY PLAN SELECT id FROM deliveries WHERE {condition} ORDER BY id DESC LIMIT 10"
            ))
            .expect("prepare");
        let rows: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(params.iter()), |r| r.get(3))
            .expect("plan")
            .collect::<Result<_, _>>()
            .expect("rows");
        rows.join("; ")
    };
    assert!(
        plan("sig:fail").contains("deliveries_sig_status"),
        "{}",
        plan("sig:fail")
    );
    assert!(
        plan("ts:fail").contains("deliveries_ts_status"),
        "{}",
        plan("ts:fail")
    );
    assert!(
        plan("dup:yes").contains("deliveries_dup_status"),
        "{}",
        plan("dup:yes")
    );
    // Walked in id order: no sort of the matches.
    assert!(
        !plan("dup:yes").contains("TEMP B-TREE"),
        "{}",
        plan("dup:yes")
    );
    assert!(
        !plan("sig:pass").contains("deliveries_sig_status"),
        "{}",
        plan("sig:pass")
    );
    // And the counts are what the seed put there, either way.
    assert_eq!(count(&reader, "sig:fail") + count(&reader, "sig:pass"), 100);
    assert_eq!(count(&reader, "dup:yes") + count(&reader, "dup:no"), 100);
}

/// The text index lives in `<store>-text`, filled by its own thread (src/store/text.rs). A store
/// from before (schema v12, the index inside the store) keeps its index: the upgrade copies it
/// there, so old deliveries are found at once, by a reader alone, and the indexer goes on after
/// them instead of starting over.
#[test]
fn an_upgraded_store_keeps_its_text_index_in_a_file_of_its_own() {
    use hookscope::store::schema::MIGRATIONS;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookscope.sqlite");
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        for (index, sql) in MIGRATIONS[..12].iter().enumerate() {
            conn.execute_batch(sql).expect("an older schema");
            conn.pragma_update(None, "user_version", index as i64 + 1)
                .expect("version");
        }
        // One delivery as schema v12's writer left it: its row and its entry in the text index.
        conn.execute(
            "INSERT INTO deliveries (id, received_at_ms, method, path, query, headers, body, body_size, body_complete,
                endpoint, sig_status, ts_status, dup_status, checks_json, response_status, latency_ms)
             VALUES (7, 1000, 'POST', '/hooks/ocr', '', x'', CAST('{\"doc\":\"invoice_42\"}' AS BLOB), 19, 1, '/hooks/ocr',
                'skipped', 'skipped', 'skipped', '{}', 200, 0)",
            [],
        )
        .expect("a v12 row");
        conn.execute(
            "INSERT INTO deliveries_fts (rowid, path, headers, body) VALUES (7, '/hooks/ocr', '', '{\"doc\":\"invoice_42\"}')",
            [],
        )
        .expect("its text");
        conn.execute_batch(
            "UPDATE fts_state SET last_id = 7; UPDATE journal_state SET built_id = 7;",
        )
        .expect("state");
    }
    // A reader upgrades the store; nothing indexes anything meanwhile.
    let reader = Reader::open(&path).expect("upgrades");
    assert_eq!(count(&reader, "invoice_42"), 1);
    let tables = |path: &std::path::Path| -> Vec<String> {
        let conn = rusqlite::Connection::open(path).expect("open");
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE name LIKE '%fts%' OR name LIKE 'text_state' ORDER BY name")
            .expect("prepare");
        stmt.query_map([], |r| r.get(0))
            .expect("names")
            .collect::<Result<_, _>>()
            .expect("names")
    };
    assert!(
        tables(&path).is_empty(),
        "left in the store: {:?}",
        tables(&path)
    );
    let text = dir.path().join("hookscope.sqlite-text");
    assert!(
        tables(&text).contains(&"deliveries_fts".to_string()),
        "{:?}",
        tables(&text)
    );
    drop(reader);
    // The writer's indexer goes on from delivery 7: new deliveries are found, and so is the old.
    let store = Store::open(&path).expect("store");
    let writer = store.writer();
    let stored = writer.insert_blocking(seed::record(2)).expect("insert");
    assert_eq!(stored.id, 8);
    let reader = store.reader().expect("reader");
    wait_for_count(&reader, "needs_review", 1);
    assert_eq!(count(&reader, "invoice_42"), 1);
    assert_eq!(count(&reader, "hooks"), 2);
    reader
        .integrity_check()
        .expect("both files pass integrity_check");
}

/// A text file that was built from another store (the store was replaced, or the files were
/// copied about) never answers for this one: it is emptied and built again from this store.
#[test]
fn a_text_index_built_from_another_store_is_built_again() {
    let (dir, store, reader) = seeded(20);
    assert_eq!(count(&reader, "needs_review"), 4);
    drop(reader);
    store.shutdown();
    let other = tempfile::tempdir().expect("tempdir");
    let other_path = other.path().join("hookscope.sqlite");
    // Another store: 5 deliveries of its own, then the first store's text file beside it.
    let second = Store::open(&other_path).expect("other store");
    second
        .writer()
        .insert_many_blocking((100..105).map(seed::record).collect())
        .expect("insert");
    second.shutdown();
    std::fs::copy(
        dir.path().join("hookscope.sqlite-text"),
        other.path().join("hookscope.sqlite-text"),
    )
    .expect("copy the text file");
    let second = Store::open(&other_path).expect("reopen");
    let reader = second.reader().expect("reader");
    // Seed 100..105 has one needs_review (n = 102); the copied file had four of another store.
    wait_for_count(&reader, "needs_review", 1);
    assert_eq!(count(&reader, "seed"), 5);
}

/// The text file is derived data: deleted, free text finds nothing (and fails nothing) until the
/// next writer's indexer has built it again from the store.
#[test]
fn a_deleted_text_index_is_built_again_and_nothing_fails_meanwhile() {
    let (dir, store, reader) = seeded(50);
    assert_eq!(count(&reader, "needs_review"), 10);
    drop(reader);
    store.shutdown();
    for name in [
        "hookscope.sqlite-text",
        "hookscope.sqlite-text-wal",
        "hookscope.sqlite-text-shm",
    ] {
        let _ = std::fs::remove_file(dir.path().join(name));
    }
    let path = dir.path().join("hookscope.sqlite");
    let reader = Reader::open(&path).expect("a reader without the text file");
    assert_eq!(
        count(&reader, "needs_review"),
        0,
        "an empty index, not an error"
    );
    assert_eq!(
        count(&reader, "sig:fail"),
        2,
        "other filters are not behind"
    );
    drop(reader);
    let store = Store::open(&path).expect("store");
    let reader = store.reader().expect("reader");
    wait_for_count(&reader, "needs_review", 10);
    drop(reader);
    store.shutdown();
}
