//! The store on a real SQLite file: filtered pages by position, free text, counts, and the
//! maintenance tasks (re-check, delete, clear, retention).

use hookscope::domain::checks::{SignatureStatus, status_word};
use hookscope::domain::filter::Filter;
use hookscope::store::{CaptureLock, Maintenance, Reader, Store};

mod common;

use common::seed;

/// The store in `dir` opened as the capturing process opens it (with the text indexer).
fn capturing(dir: &std::path::Path) -> Store {
    let lock = CaptureLock::acquire(dir).expect("lock");
    let (store, recovered) =
        Store::open_capturing(&dir.join("hookscope.sqlite"), &lock).expect("store");
    assert_eq!(recovered, None);
    store
}

fn seeded(count: usize) -> (tempfile::TempDir, Store, Reader) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = capturing(dir.path());
    let records = (0..count).map(seed::record).collect();
    assert_eq!(
        store
            .writer()
            .insert_many_blocking(records)
            .expect("insert")
            .len(),
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
fn or_parentheses_and_type_wildcards_select_in_the_store() {
    let (_dir, _store, reader) = seeded(200);
    // Five states, 40 each: job.queued, job.processing, job.needs_review, job.completed,
    // job.failed.
    assert_eq!(count(&reader, "type:job.*"), 200);
    assert_eq!(
        count(&reader, "type:job.needs_review OR type:job.failed"),
        80
    );
    assert_eq!(count(&reader, "type:*review"), 40);
    // `?` and `[` are literal in a pattern, not GLOB's.
    assert_eq!(count(&reader, "type:job.?ailed*"), 0);
    // OR binds looser than AND: (needs_review on ocr) OR failed.
    let ocr_review = count(&reader, "type:job.needs_review path:/hooks/ocr");
    assert!(ocr_review > 0 && ocr_review < 40, "{ocr_review}");
    assert_eq!(
        count(
            &reader,
            "type:job.needs_review path:/hooks/ocr OR type:job.failed"
        ),
        ocr_review + 40
    );
    // Parentheses group, and `-` negates a group.
    assert_eq!(
        count(
            &reader,
            "(type:job.needs_review OR type:job.failed) path:/hooks/ocr"
        ),
        count(&reader, "type:job.needs_review path:/hooks/ocr")
            + count(&reader, "type:job.failed path:/hooks/ocr")
    );
    assert_eq!(
        count(&reader, "-(type:job.needs_review OR type:job.failed)"),
        120
    );
    assert_eq!(count(&reader, "-type:job.n*"), 160);
    // Free text inside an alternative.
    assert_eq!(
        count(&reader, "needs_review OR sig:fail"),
        40 + 10 - count(&reader, "needs_review sig:fail")
    );
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
    // Events whose index is a multiple of 3 go to ocr, and their retries with them (49 of 48,
    // 199 of 198; 99 is a retry of 98 and goes to docs): 67 - 1 + 2.
    assert_eq!(count(&reader, "path:/hooks/ocr"), 68);
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
fn a_recheck_replaces_the_signature_verdict_and_decides_the_duplicate_one_as_the_writer_did() {
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
            schema: None,
        };
        assert_eq!(store.writer().maintain_blocking(task).expect("recheck"), 1);
    }
    let row = reader.get(20).expect("get").expect("row");
    assert_eq!(status_word(&row.checks.signature.status), "pass");
    assert_eq!(row.checks.signature.detail, "now verified");
    assert_eq!(
        reader.get(50).expect("get").expect("row").checks.duplicate,
        duplicate_before,
        "a re-check decides the duplicate verdict as the writer did"
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

/// A 2xx means the delivery is in the store's files: a copy of the database file and its WAL
/// taken at any answer (what a crash leaves) holds every delivery answered so far, with its
/// verdicts as answered. (That the commit was synced before the answer is
/// tests/faults.rs's slow-disk test.)
#[test]
fn the_files_at_any_answer_hold_every_acknowledged_delivery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookscope.sqlite");
    let store = Store::open(&path).expect("store");
    let writer = store.writer();
    let mut acknowledged = Vec::new();
    for n in 0..40 {
        acknowledged.push(writer.insert_blocking(seed::record(n)).expect("insert"));
        if n % 13 != 12 {
            continue;
        }
        let copy = tempfile::tempdir().expect("tempdir");
        for suffix in ["", "-wal"] {
            let from = dir.path().join(format!("hookscope.sqlite{suffix}"));
            if from.exists() {
                std::fs::copy(&from, copy.path().join(format!("hookscope.sqlite{suffix}")))
                    .expect("copy");
            }
        }
        let reader = Reader::open(&copy.path().join("hookscope.sqlite")).expect("the copy");
        assert_eq!(reader.count().expect("count"), acknowledged.len() as i64);
        for before in &acknowledged {
            let after = reader.get(before.id).expect("get").expect("acknowledged");
            assert_eq!(after.delivery.body, before.delivery.body);
            assert_eq!(after.checks, before.checks, "verdicts as answered");
        }
    }
}

/// A second writer on the same store (an `import` beside a capturing `listen`) commits, synced,
/// before it answers, so what it acknowledged is readable at once by any connection.
#[test]
fn a_second_writer_answers_only_after_its_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookscope.sqlite");
    let owner = capturing(dir.path());
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
/// from before (schema v12, the index inside the store) loses the old index (its words of
/// deleted deliveries with it) and the capturing writer's indexer builds it again, old
/// deliveries and new.
#[test]
fn an_upgraded_store_has_its_text_index_built_again_in_a_file_of_its_own() {
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
    assert_eq!(count(&reader, "invoice_42"), 0, "not indexed yet");
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
    // The writer's indexer builds it: new deliveries are found, and so is the old.
    let store = capturing(dir.path());
    let writer = store.writer();
    let stored = writer.insert_blocking(seed::record(2)).expect("insert");
    assert_eq!(stored.id, 8);
    let reader = store.reader().expect("reader");
    wait_for_count(&reader, "needs_review", 1);
    wait_for_count(&reader, "invoice_42", 1);
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
    let second = capturing(other.path());
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
    let store = capturing(dir.path());
    let reader = store.reader().expect("reader");
    wait_for_count(&reader, "needs_review", 10);
    drop(reader);
    store.shutdown();
}

/// The files a schema-13 store left (tests/fixtures/store-v13), copied into `dir`.
fn v13_store(dir: &std::path::Path) -> std::path::PathBuf {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v13");
    for name in [
        "hookscope.sqlite",
        "hookscope.sqlite-wal",
        "hookscope.sqlite-text",
        "hookscope.journal",
    ] {
        std::fs::copy(fixture.join(name), dir.join(name)).expect("fixture file");
    }
    dir.join("hookscope.sqlite")
}

/// The body the fixture's maker posted as delivery `n` (Python's `json.dumps`).
fn v13_body(n: usize) -> String {
    let event = if n.is_multiple_of(10) { n - 1 } else { n };
    let (kind, status) = if n % 5 == 4 {
        ("job.completed", "completed")
    } else {
        ("job.processing", "processing")
    };
    format!(
        r#"{{"id": "evt_{event:04}", "type": "{kind}", "data": {{"job_id": "job_{:03}", "status": "{status}", "marker": "v13body{n:04}"}}}}"#,
        n / 5
    )
}

/// What a reader of `path` lists, newest first, as `list --json` prints it.
fn listed_json(path: &std::path::Path) -> Vec<serde_json::Value> {
    let reader = Reader::open(path).expect("reader");
    reader
        .list(500, None)
        .expect("list")
        .iter()
        .map(|d| {
            let attempts = reader.attempts_for(d.id).expect("attempts");
            hookscope::app::report::delivery_json(d, &attempts)
        })
        .collect()
}

fn table_names(path: &std::path::Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).expect("open");
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .expect("prepare");
    stmt.query_map([], |r| r.get(0))
        .expect("names")
        .collect::<Result<_, _>>()
        .expect("names")
}

/// A store from the build before this one: 137 deliveries in its tables (73 packed against a
/// learned dictionary, every checks column compacted) and a capture journal whose last three
/// rows no table holds. The migration makes every delivery readable exactly as that build
/// listed it, recovers the three journaled ones once, and leaves no packed row, dictionary or
/// journal behind.
#[test]
fn a_schema_13_store_migrates_with_every_delivery_and_its_journaled_rows_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = v13_store(dir.path());
    let listed = listed_json(&path);
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/store-v13/list.ndjson");
    let expected: Vec<serde_json::Value> = std::fs::read_to_string(fixture)
        .expect("list.ndjson")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    assert_eq!(
        listed.len(),
        140,
        "137 from the tables and 3 from the journal"
    );
    for (now, then) in listed.iter().zip(&expected) {
        // Fields added to the delivery JSON since that build have their empty value for every
        // old delivery; every other field is as that build listed it.
        let mut now = now.clone();
        if let Some(checks) = now.get_mut("checks").and_then(|c| c.as_object_mut()) {
            assert_eq!(
                checks.remove("schema"),
                Some(serde_json::Value::Null),
                "no contract, no schema check: null"
            );
        }
        for (added, empty) in [
            ("handshake", serde_json::Value::Null),
            ("cloudevent", serde_json::Value::Null),
            ("attempts", serde_json::json!([])),
            ("unrouted", serde_json::json!(false)),
            ("relay", serde_json::Value::Null),
        ] {
            let value = now
                .as_object_mut()
                .and_then(|o| o.remove(added))
                .unwrap_or_else(|| panic!("delivery {} has no {added} field", then["id"]));
            assert_eq!(value, empty, "delivery {}: {added}", then["id"]);
        }
        assert_eq!(
            &now, then,
            "delivery {} as the old build listed it",
            then["id"]
        );
    }
    let reader = Reader::open(&path).expect("reader");
    for stored in reader.list(500, None).expect("list") {
        let n: usize = stored
            .delivery
            .headers
            .iter()
            .find(|h| h.name == "x-test")
            .map(|h| h.value_lossy()[1..].parse().expect("n"))
            .expect("x-test");
        assert_eq!(stored.id, n as i64);
        assert_eq!(String::from_utf8_lossy(&stored.delivery.body), v13_body(n));
    }
    assert!(
        !dir.path().join("hookscope.journal").exists(),
        "the journal's rows are in the tables: the file goes"
    );
    let tables = table_names(&path);
    for gone in ["dictionaries", "journal_state"] {
        assert!(!tables.contains(&gone.to_string()), "{tables:?}");
    }
    let conn = rusqlite::Connection::open(&path).expect("raw");
    let (packed, blobs): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM pragma_table_info('deliveries') WHERE name = 'packed'),
                    (SELECT COUNT(*) FROM deliveries WHERE typeof(checks_json) <> 'text')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("columns");
    assert_eq!((packed, blobs), (0, 0));
    drop(reader);
    // Once: opened again (by the capturing writer, which indexes), nothing comes twice, and the
    // next delivery follows the journal's last id.
    let store = capturing(dir.path());
    assert_eq!(listed_json(&path), listed);
    let next = store
        .writer()
        .insert_blocking(seed::record(1))
        .expect("insert");
    assert_eq!(next.id, 141);
    let reader = store.reader().expect("reader");
    // Free text: the old index (moved to its own file by schema 13) and the recovered rows.
    wait_for_count(&reader, "v13body0005", 1);
    wait_for_count(&reader, "v13body0139", 1);
    reader.integrity_check().expect("integrity");
}

/// Opening a reader writes nothing: not the store, and not an orphaned capture journal's rows
/// (the build before replayed one from `Reader::open`, racing any writer for it).
#[test]
fn opening_a_reader_writes_nothing_even_beside_an_orphaned_journal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = v13_store(dir.path());
    Store::open(&path).expect("migrates").shutdown();
    assert_eq!(
        Reader::open(&path).expect("reader").count().expect("count"),
        140
    );
    // An orphaned journal beside the current store, holding rows 121..=140 again.
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v13");
    std::fs::copy(
        fixture.join("hookscope.journal"),
        dir.path().join("hookscope.journal"),
    )
    .expect("journal");
    Store::open(&path).expect("writer").shutdown();
    let bytes = |name: &str| std::fs::read(dir.path().join(name)).unwrap_or_default();
    let (db, wal, journal) = (
        bytes("hookscope.sqlite"),
        bytes("hookscope.sqlite-wal"),
        bytes("hookscope.journal"),
    );
    let reader = Reader::open(&path).expect("reader");
    assert_eq!(reader.count().expect("count"), 140);
    assert_eq!(reader.list(500, None).expect("list").len(), 140);
    drop(reader);
    assert!(bytes("hookscope.sqlite") == db, "the database file changed");
    assert!(bytes("hookscope.sqlite-wal") == wal, "the WAL changed");
    assert!(bytes("hookscope.journal") == journal, "the journal changed");
}

/// A damaged store is moved aside with an older build's journal beside it: the fresh store
/// never takes the damaged one's rows for its own.
#[test]
fn a_damaged_stores_journal_goes_aside_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = v13_store(dir.path());
    std::fs::write(&path, b"not a database at all, not even close to one").expect("garbage");
    let _ = std::fs::remove_file(dir.path().join("hookscope.sqlite-wal"));
    let lock = CaptureLock::acquire(dir.path()).expect("lock");
    let (store, recovered) = Store::open_capturing(&path, &lock).expect("store");
    assert!(recovered.is_some_and(|s| s.contains("kept aside")));
    assert_eq!(store.reader().expect("reader").count().expect("count"), 0);
    assert!(!dir.path().join("hookscope.journal").exists());
    let aside: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("damaged") && name.ends_with("hookscope.journal"))
        .collect();
    assert_eq!(aside.len(), 1, "kept aside, never deleted");
    drop(store);
    // An older build's leftover journal beside a new store: never replayed, kept aside.
    let fresh = tempfile::tempdir().expect("tempdir");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v13");
    std::fs::copy(
        fixture.join("hookscope.journal"),
        fresh.path().join("hookscope.journal"),
    )
    .expect("journal");
    let reader = Reader::open(&fresh.path().join("hookscope.sqlite")).expect("a new store");
    assert_eq!(reader.count().expect("count"), 0);
    assert!(!fresh.path().join("hookscope.journal").exists());
}

/// Another process holding the write lock (an import's long transaction) is waited out once
/// per batch, not once per delivery, and said in the health; held past the writer's longest
/// wait, the deliveries are refused with that sentence, and capture goes on after.
#[test]
fn a_store_busy_with_another_writer_is_waited_out_once_and_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = capturing(dir.path());
    let writer = store.writer();
    writer.insert_blocking(seed::record(0)).expect("first");
    let other = rusqlite::Connection::open(dir.path().join("hookscope.sqlite")).expect("raw");
    other.execute_batch("BEGIN IMMEDIATE").expect("the lock");
    let started = std::time::Instant::now();
    let senders: Vec<_> = (1..=40)
        .map(|n| {
            let writer = writer.clone();
            std::thread::Builder::new()
                .name(format!("insert-{n}"))
                .spawn(move || writer.insert_blocking(seed::record(n)))
                .expect("thread")
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let health = writer.health();
    assert_eq!(health.trouble, Some(hookscope::store::Trouble::Busy));
    let sentence = hookscope::store::Trouble::Busy.sentence(&dir.path().join("hookscope.sqlite"));
    assert!(sentence.contains("another hookscope command is writing to the store"));
    other.execute_batch("COMMIT").expect("released");
    for sender in senders {
        sender
            .join()
            .expect("sender")
            .expect("stored once the lock is free");
    }
    let waited = started.elapsed();
    // 40 deliveries: a wait per delivery (5 s each in the build before) would take minutes.
    assert!(waited < std::time::Duration::from_secs(5), "{waited:?}");
    assert_eq!(
        writer.health().trouble,
        None,
        "said until the batch went through"
    );
    assert_eq!(store.reader().expect("reader").count().expect("count"), 41);
    // Held past the longest wait: refused, saying why.
    other
        .execute_batch("BEGIN IMMEDIATE")
        .expect("the lock again");
    let refused = writer
        .insert_blocking(seed::record(41))
        .expect_err("refused after the longest wait");
    assert!(
        refused.to_string().contains("another hookscope command"),
        "{refused}"
    );
    other.execute_batch("COMMIT").expect("released");
    writer
        .insert_blocking(seed::record(42))
        .expect("capture goes on");
}

/// Every file of the data dir, searched for `needle`.
fn files_holding(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            std::fs::read(p).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
        })
        .map(|p| p.display().to_string())
        .collect()
}

/// Waits until the idle writer has truncated the store's WAL and the text index's.
fn wait_for_idle_checkpoint(dir: &std::path::Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let wal_bytes = || {
        ["hookscope.sqlite-wal", "hookscope.sqlite-text-wal"]
            .iter()
            .map(|name| std::fs::metadata(dir.join(name)).map_or(0, |m| m.len()))
            .sum::<u64>()
    };
    while wal_bytes() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "never checkpointed when idle"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Deleted means gone: after a delete, retention or *Clear history*, and the idle checkpoint,
/// no file of the data dir holds a byte of a removed body: not the database (a small body, a
/// 20 KiB one in overflow pages), not an attempt that carried it, not the WAL, not the text
/// index. The markers' tails are searched for, so that a prefix the text index shares with
/// another word cannot hide one.
#[test]
fn removed_bodies_leave_no_byte_in_any_file_of_the_data_dir() {
    type Removal = fn(&[i64]) -> Maintenance;
    let tasks: [(&str, Removal); 3] = [
        ("delete", |ids| Maintenance::Delete(ids.to_vec())),
        ("retention", |_| Maintenance::Retain {
            max_age_ms: None,
            max_count: Some(20),
            now_ms: 1_790_000_000_000,
            steady_ms: 1_790_000_000_000,
        }),
        ("clear", |_| Maintenance::Clear),
    ];
    for (name, task) in tasks {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = capturing(dir.path());
        let writer = store.writer();
        let tails = ["c0ffee51a7e", "b16b0d7f00d", "5ecre7a77e5"];
        let mut small = seed::record(1);
        small.delivery.body = format!("{{\"note\":\"zzsmall{}\"}}", tails[0]).into_bytes();
        let mut big = seed::record(2);
        big.delivery.body = format!(
            "{{\"pad\":\"{}\",\"note\":\"zzbig{}\"}}",
            "p".repeat(20_000),
            tails[1]
        )
        .into_bytes();
        let small = writer.insert_blocking(small).expect("small");
        let big = writer.insert_blocking(big).expect("big");
        writer
            .maintain_blocking(Maintenance::RecordAttempts(vec![
                hookscope::domain::attempt::Attempt {
                    id: 0,
                    delivery_id: Some(small.id),
                    kind: hookscope::domain::attempt::AttemptKind::Resend,
                    url: "http://127.0.0.1:9/".into(),
                    sent_at_ms: 1,
                    request_headers: Vec::new(),
                    request_body: format!("{{\"note\":\"zzattempt{}\"}}", tails[2]).into_bytes(),
                    status: Some(200),
                    response_headers: Vec::new(),
                    response_body: Vec::new(),
                    latency_ms: 1,
                    error: None,
                    job_id: None,
                    attempt_number: None,
                },
            ]))
            .expect("attempt");
        for n in 3..30 {
            writer.insert_blocking(seed::record(n)).expect("insert");
        }
        let reader = store.reader().expect("reader");
        wait_for_count(&reader, &format!("zzbig{}", tails[1]), 1);
        wait_for_idle_checkpoint(dir.path());
        for tail in tails {
            assert!(
                !files_holding(dir.path(), tail.as_bytes()).is_empty(),
                "{name}: stored first"
            );
        }
        writer
            .maintain_blocking(task(&[small.id, big.id]))
            .expect("removed");
        assert_eq!(reader.get(small.id).expect("get"), None);
        assert_eq!(count(&reader, &format!("zzbig{}", tails[1])), 0);
        wait_for_idle_checkpoint(dir.path());
        for tail in tails {
            let holding = files_holding(dir.path(), tail.as_bytes());
            assert!(holding.is_empty(), "{name}: {tail} still in {holding:?}");
        }
    }
}

/// A schema-13 store whose journal an older hookscope still holds (it is capturing) is not
/// migrated: the migration would take acknowledged deliveries from under it. It says so, and
/// the store is left as it was.
#[test]
fn a_store_an_older_hookscope_captures_into_is_not_migrated_under_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = v13_store(dir.path());
    let journal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.path().join("hookscope.journal"))
        .expect("journal");
    journal.try_lock().expect("the older writer's lock");
    let refused = match Reader::open(&path) {
        Ok(_) => panic!("migrated under the older writer"),
        Err(e) => e.to_string(),
    };
    assert!(
        refused.contains("an older hookscope is capturing"),
        "{refused}"
    );
    let version: i64 = rusqlite::Connection::open(&path)
        .expect("raw")
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, 13);
    drop(journal);
    assert_eq!(listed_json(&path).len(), 140, "migrated once it is free");
}

/// A delivery the way the catch-all endpoint sees it: on `path`, with `headers`, carrying the
/// body id `evt_1`.
fn provider_delivery(
    path: &str,
    headers: &[(&str, String)],
) -> hookscope::domain::delivery::Delivery {
    use hookscope::domain::delivery::{Delivery, Header};
    let body = br#"{"id":"evt_1","type":"ping"}"#.to_vec();
    Delivery {
        received_at_ms: common::now_secs() * 1000,
        method: "POST".into(),
        path: path.into(),
        query: String::new(),
        headers: headers
            .iter()
            .map(|(n, v)| Header::new(n, v.as_str()))
            .collect(),
        body_size: body.len() as u64,
        body,
        body_complete: true,
        remote_addr: None,
    }
}

/// A store written before duplicates were scoped holds a Slack delivery marked as a
/// duplicate of a Stripe one with the same body id. Opening it keeps that stored verdict,
/// scopes the event id by its first delivery, and *Re-check* applies the new rule; the next
/// Slack retry is then a duplicate of the Slack delivery, the next Stripe retry of the Stripe one.
#[test]
fn an_old_store_keeps_its_verdicts_and_a_recheck_scopes_the_duplicate() {
    use hookscope::domain::checks::{Checks, DuplicateCheck, DuplicateStatus, evaluate};
    use hookscope::domain::endpoint::Endpoint;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookscope.sqlite");
    let now = common::now_secs();
    let stripe = provider_delivery(
        "/hooks/stripe",
        &[(
            "stripe-signature",
            format!("t={now},v1={}", "ab".repeat(32)),
        )],
    );
    let slack = provider_delivery(
        "/hooks/slack",
        &[
            ("x-slack-signature", format!("v0={}", "cd".repeat(32))),
            ("x-slack-request-timestamp", now.to_string()),
        ],
    );
    // The store as the previous version left it: v14, event ids unique per endpoint.
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        for migration in &hookscope::store::schema::MIGRATIONS[..14] {
            conn.execute_batch(migration).expect("old migration");
        }
        conn.pragma_update(None, "user_version", 14)
            .expect("version");
        for (id, delivery, duplicate) in [
            (1, &stripe, DuplicateCheck::first(1, "evt_1", "/")),
            (2, &slack, DuplicateCheck::duplicate(1, "evt_1", 1, "/")),
        ] {
            let e = evaluate(delivery, &Endpoint::catch_all(), now);
            let checks = Checks {
                signature: e.signature,
                timestamp: e.timestamp,
                duplicate: duplicate.clone(),
                advice: e.advice,
                schema: None,
            };
            conn.execute(
                "INSERT INTO deliveries (id, received_at_ms, method, path, query, headers, body, body_size,
                    body_complete, endpoint, scheme, event_id, sig_status, ts_status, dup_status, first_id,
                    checks_json, response_status, latency_ms)
                 VALUES (?1, ?2, 'POST', ?3, '', ?4, ?5, ?6, 1, '/', ?7, 'evt_1', ?8, ?9, ?10, ?11, ?12, 200, 1)",
                rusqlite::params![
                    id,
                    delivery.received_at_ms,
                    delivery.path,
                    hookscope::store::headers::encode_headers(&delivery.headers),
                    delivery.body,
                    delivery.body_size as i64,
                    e.scheme,
                    checks.signature.status.as_str(),
                    checks.timestamp.status.as_str(),
                    duplicate.status.as_str(),
                    duplicate.first_id,
                    serde_json::to_string(&checks).expect("checks json"),
                ],
            )
            .expect("old row");
        }
        conn.execute(
            "INSERT INTO event_ids (endpoint, event_id, first_delivery_id, seen) VALUES ('/', 'evt_1', 1, 2)",
            [],
        )
        .expect("old event id");
        conn.execute("INSERT INTO id_floor VALUES (2)", []).ok();
    }
    let store = capturing(dir.path());
    let reader = store.reader().expect("reader");
    let scoped: Vec<(String, String, i64)> = rusqlite::Connection::open(&path)
        .expect("open")
        .prepare("SELECT scope, event_id, first_delivery_id FROM event_ids")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        scoped,
        [("/hooks/stripe (stripe)".to_string(), "evt_1".to_string(), 1)]
    );
    let duplicate_of = |id: i64| reader.get(id).expect("get").expect("row").checks.duplicate;
    assert_eq!(
        duplicate_of(2).status,
        DuplicateStatus::Duplicate,
        "stored verdicts stay"
    );

    let settings = hookscope::config::Settings::default();
    assert!(
        hookscope::app::history::recheck(&reader, &store.writer(), &settings, 2).expect("recheck")
    );
    let rechecked = duplicate_of(2);
    assert_eq!(
        rechecked.status,
        DuplicateStatus::First,
        "{}",
        rechecked.detail
    );
    assert!(
        rechecked.detail.contains("evt_1 on /hooks/slack (slack)"),
        "{}",
        rechecked.detail
    );
    assert!(
        hookscope::app::history::recheck(&reader, &store.writer(), &settings, 1).expect("recheck")
    );
    assert_eq!(duplicate_of(1).status, DuplicateStatus::First);

    let catch_all = Endpoint::catch_all();
    let insert = |delivery: &hookscope::domain::delivery::Delivery| {
        store
            .writer()
            .insert_blocking(hookscope::store::NewRecord::checked(
                delivery.clone(),
                &catch_all,
                now,
            ))
            .expect("insert")
            .checks
            .duplicate
    };
    let slack_retry = insert(&slack);
    assert_eq!(
        (slack_retry.status, slack_retry.first_id),
        (DuplicateStatus::Duplicate, Some(2))
    );
    let stripe_retry = insert(&stripe);
    assert_eq!(
        (stripe_retry.status, stripe_retry.first_id),
        (DuplicateStatus::Duplicate, Some(1))
    );
}
