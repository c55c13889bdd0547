//! Trying hard to break it: damaged stores, hostile input over raw HTTP, SIGKILL under load,
//! concurrent retries, and secrets that must not leak. Each test names the guarantee it proves
//! (docs/reliability.md lists them).

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use common::{Listener, now_secs, run};
use hookscope::domain::scheme::{Scheme, Secret};
use hookscope::store::Reader;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// Sends raw bytes and returns what came back (possibly nothing, when the server closed).
fn raw(port: u16, request: &[u8]) -> String {
    try_raw(port, request).expect("connect")
}

/// [`raw`], for a server that may be gone (killed under load).
fn try_raw(port: u16, request: &[u8]) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    // The server may answer (and close) before taking a huge request whole.
    let _ = stream.write_all(request);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    Some(String::from_utf8_lossy(&answer).into_owned())
}

fn status_of(answer: &str) -> Option<u16> {
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
}

fn post(port: u16, headers: &str, body: &[u8]) -> String {
    post_bytes(port, headers.as_bytes(), body)
}

fn post_bytes(port: u16, headers: &[u8], body: &[u8]) -> String {
    let mut request = format!("POST /hooks/bad HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len()).into_bytes();
    request.extend_from_slice(headers);
    request.extend_from_slice(b"\r\n");
    request.extend_from_slice(body);
    raw(port, &request)
}

// --- A damaged store -------------------------------------------------------------------------

fn listen_stderr(dir: &std::path::Path) -> Listener {
    Listener::start(dir, &[])
}

#[test]
fn a_garbage_store_is_kept_aside_and_a_fresh_one_used() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = b"this is not a database, just bytes that happen to be here".repeat(100);
    std::fs::write(dir.path().join("hookscope.sqlite"), &garbage).expect("garbage");
    // Its text index goes aside with it: it indexes that store's deliveries, not the next's.
    let text = b"the damaged store's text index".to_vec();
    std::fs::write(dir.path().join("hookscope.sqlite-text"), &text).expect("text");
    let mut listener = listen_stderr(dir.path());
    assert!(
        listener.stderr_head.contains("not a SQLite database"),
        "{}",
        listener.stderr_head
    );
    assert!(
        listener.stderr_head.contains("kept aside as"),
        "{}",
        listener.stderr_head
    );
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("hookscope.sqlite.damaged-") && !name.ends_with("-text")
        })
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(
        std::fs::read(aside[0].path()).expect("kept"),
        garbage,
        "kept, byte for byte, never deleted"
    );
    let mut text_aside = aside[0].path().into_os_string();
    text_aside.push("-text");
    assert_eq!(std::fs::read(text_aside).expect("text kept"), text);
    assert!(post(listener.port, "", b"{}").starts_with("HTTP/1.1 200"));
    assert_eq!(listener.next_json()["id"], 1);
}

#[test]
fn a_truncated_store_is_noticed_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookscope.sqlite");
    common::seed(dir.path(), 3000);
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    drop(conn);
    let len = std::fs::metadata(&path).expect("meta").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open")
        .set_len(len / 2)
        .expect("truncate");
    let listener = listen_stderr(dir.path());
    assert!(
        listener.stderr_head.contains("truncated"),
        "{}",
        listener.stderr_head
    );
    assert!(
        listener.stderr_head.contains("continues on a fresh store"),
        "{}",
        listener.stderr_head
    );
}

#[test]
fn a_store_from_a_newer_hookscope_is_kept_aside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = rusqlite::Connection::open(dir.path().join("hookscope.sqlite")).expect("open");
    conn.pragma_update(None, "user_version", 999)
        .expect("version");
    drop(conn);
    let listener = listen_stderr(dir.path());
    assert!(
        listener.stderr_head.contains("schema version 999"),
        "{}",
        listener.stderr_head
    );
    assert!(
        listener.stderr_head.contains("kept aside"),
        "{}",
        listener.stderr_head
    );
}

#[test]
fn a_store_locked_by_another_process_is_named_and_the_exit_is_clean() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("hookscope.sqlite");
    drop(hookscope::store::Store::open(&path).expect("create"));
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
        .expect("lock");
    let out = run(dir.path(), &["listen", "--port", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("locked by another process"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    drop(conn);
}

// --- Bad input ----------------------------------------------------------------------------

#[test]
fn hostile_requests_are_answered_and_recorded_never_crashing() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("config.toml"), "[receiver]\nbody_limit_bytes = 65536\n[[endpoint]]\npath = \"/\"\nscheme = \"standard-webhooks\"\nsecrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]\n").expect("config");
    let mut listener = Listener::start(dir.path(), &[]);
    let port = listener.port;
    let ts = now_secs().to_string();
    let signature = |value: &str| {
        format!("webhook-id: msg_x\r\nwebhook-timestamp: {ts}\r\nwebhook-signature: {value}\r\n")
    };
    let mut recorded = 0;
    let mut expect = |what: &str, answer: String, status: u16, listener: &mut Listener| {
        assert_eq!(status_of(&answer), Some(status), "{what}: {answer}");
        let line = listener.next_json();
        assert!(
            line["checks"]["signature"]["detail"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "{what}: {line}"
        );
        recorded += 1;
        line
    };

    expect("empty body", post(port, "", b""), 200, &mut listener);
    expect(
        "body at the limit",
        post(port, "", &vec![b'a'; 65536]),
        200,
        &mut listener,
    );
    let over = expect(
        "body over the limit",
        post(port, "", &vec![b'a'; 65537]),
        413,
        &mut listener,
    );
    assert_eq!(over["body_size"], 65537);
    let binary = expect(
        "non-UTF-8 body",
        post(port, "", &[0xff, 0xfe, 0x00, 0x80]),
        200,
        &mut listener,
    );
    assert_eq!(binary["body_size"], 4);
    expect(
        "invalid JSON",
        post(
            port,
            "Content-Type: application/json\r\n",
            b"{\"unterminated",
        ),
        200,
        &mut listener,
    );
    let odd = expect(
        "invalid UTF-8 header value",
        post_bytes(port, b"X-Odd: caf\xe9\r\n", b"{}"),
        200,
        &mut listener,
    );
    assert!(
        odd["headers"]
            .as_array()
            .expect("headers")
            .iter()
            .any(|h| h[0] == "x-odd")
    );
    for (what, value) in [
        ("garbage signature", "!!!garbage!!!".to_string()),
        ("truncated signature", "v1,g0hM9SsE".to_string()),
        ("empty signature", String::new()),
        ("100 KB signature", format!("v1,{}", "A".repeat(100 * 1024))),
    ] {
        let line = expect(
            what,
            post(port, &signature(&value), b"{}"),
            200,
            &mut listener,
        );
        assert_eq!(line["checks"]["signature"]["status"], "fail", "{what}");
    }
    let repeated = format!("{}webhook-signature: v1,AAAA\r\n", signature("v1,BBBB"));
    expect(
        "repeated signature header",
        post(port, &repeated, b"{}"),
        200,
        &mut listener,
    );
    for (what, timestamp) in [
        ("negative", "-5"),
        ("float", "1700000000.5"),
        ("30 digits", "123456789012345678901234567890"),
        ("milliseconds", "1700000000000"),
    ] {
        let headers = format!(
            "webhook-id: msg_t\r\nwebhook-timestamp: {timestamp}\r\nwebhook-signature: v1,AAAA\r\n"
        );
        let line = expect(what, post(port, &headers, b"{}"), 200, &mut listener);
        assert_eq!(
            line["checks"]["timestamp"]["status"], "fail",
            "{what}: {line}"
        );
    }
    // Chunked, and HTTP/1.0.
    let chunked = raw(port, b"POST /hooks/chunked HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    let line = expect("chunked body", chunked, 200, &mut listener);
    assert_eq!(line["body_size"], 11);
    let old = raw(
        port,
        b"POST /hooks/old HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}",
    );
    expect("HTTP/1.0", old, 200, &mut listener);

    // Limits of the HTTP layer: refused with a clear status, nothing to record.
    let many: String = (0..10_000).map(|i| format!("X-H{i}: v\r\n")).collect();
    let answer = post(port, &many, b"{}");
    assert!(
        matches!(status_of(&answer), Some(431) | Some(400)) || answer.is_empty(),
        "10,000 headers: {answer}"
    );
    eprintln!("10,000 headers: {:?}", status_of(&answer));
    let huge = format!("X-Huge: {}\r\n", "a".repeat(1024 * 1024));
    let answer = post(port, &huge, b"{}");
    assert!(
        matches!(status_of(&answer), Some(431) | Some(400)) || answer.is_empty(),
        "1 MB header: {answer}"
    );
    eprintln!("1 MB header: {:?}", status_of(&answer));

    // Half a body, then the client goes away: recorded as cut short, never acknowledged.
    {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .write_all(b"POST /hooks/half HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"only\":\"half")
            .expect("send");
        stream.shutdown(std::net::Shutdown::Both).expect("hang up");
    }
    let line = listener.next_json();
    assert_eq!(line["path"], "/hooks/half");
    assert_eq!(line["body_complete"], false);
    assert_ne!(line["response"]["status"], 200);
    assert!(
        line["note"]
            .as_str()
            .is_some_and(|n| n.contains("stopped sending")),
        "{line}"
    );

    // Still alive, and everything is on disk.
    assert!(post(port, "", b"{}").starts_with("HTTP/1.1 200"));
    listener.next_json();
    let reader = Reader::open(&listener.store_path()).expect("store");
    assert_eq!(reader.count().expect("count"), recorded + 2);
    reader.integrity_check().expect("integrity");
}

// --- Crash safety ---------------------------------------------------------------------------

#[test]
fn sigkill_under_load_loses_nothing_that_was_acknowledged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut acknowledged: Vec<(i64, Vec<u8>)> = Vec::new();
    // A different moment in each round, without a random crate: the clock's nanoseconds.
    let jitter = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64 % 150)
            .unwrap_or(0)
    };
    for round in 0..4 {
        let mut listener = Listener::start(dir.path(), &[]);
        let port = listener.port;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut senders = Vec::new();
        for sender in 0..4 {
            let stop = std::sync::Arc::clone(&stop);
            senders.push(
                std::thread::Builder::new()
                    .name(format!("load-{round}-{sender}"))
                    .spawn(move || {
                        let mut acked = Vec::new();
                        let mut n = 0u32;
                        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                            let body: Vec<u8> = format!("{{\"round\":{round},\"sender\":{sender},\"n\":{n},\"pad\":\"")
                                .into_bytes()
                                .into_iter()
                                .chain((0..200u32).map(|i| b'a' + ((i + n) % 26) as u8))
                                .chain(*b"\"}")
                                .collect();
                            n += 1;
                            let mut request = format!(
                                "POST /hooks/load HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                                body.len()
                            )
                            .into_bytes();
                            request.extend_from_slice(&body);
                            let Some(answer) = try_raw(port, &request) else {
                                // The receiver is gone: killed, as planned.
                                break;
                            };
                            if answer.starts_with("HTTP/1.1 200") {
                                let id = answer
                                    .lines()
                                    .find_map(|l| l.strip_prefix("x-hookscope-delivery-id: "))
                                    .and_then(|v| v.trim().parse::<i64>().ok())
                                    .expect("an acknowledged delivery names its id");
                                acked.push((id, body));
                            }
                        }
                        acked
                    })
                    .expect("thread"),
            );
        }
        std::thread::sleep(Duration::from_millis(150 + jitter()));
        listener.child.kill().expect("SIGKILL");
        listener.child.wait().expect("reaped");
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for sender in senders {
            acknowledged.extend(sender.join().expect("sender"));
        }
    }
    assert!(
        acknowledged.len() > 20,
        "the load was real: {} acknowledged",
        acknowledged.len()
    );
    eprintln!(
        "{} deliveries acknowledged over 4 SIGKILLs, all present",
        acknowledged.len()
    );
    let reader = Reader::open(&dir.path().join("hookscope.sqlite")).expect("store");
    reader
        .integrity_check()
        .expect("PRAGMA integrity_check says ok");
    for (id, body) in &acknowledged {
        let stored = reader
            .get(*id)
            .expect("query")
            .unwrap_or_else(|| panic!("acknowledged delivery #{id} is missing"));
        assert_eq!(&stored.delivery.body, body, "delivery #{id}'s bytes");
    }
}

// --- Concurrency ----------------------------------------------------------------------------

#[test]
fn two_hundred_concurrent_deliveries_of_twenty_events_yield_twenty_firsts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(
        dir.path(),
        &["--scheme", "standard-webhooks", "--secret", SECRET],
    );
    let port = listener.port;
    let scheme = Scheme::preset("standard-webhooks").expect("preset");
    let mut threads = Vec::new();
    for n in 0..200 {
        let event = format!("evt_{}", n % 20);
        let body = format!("{{\"attempt\":{n}}}");
        let headers: String = scheme
            .sign(&[Secret::new(SECRET)], &event, now_secs(), body.as_bytes())
            .expect("sign")
            .iter()
            .map(|h| format!("{}: {}\r\n", h.name, h.value_lossy()))
            .collect();
        threads.push(
            std::thread::Builder::new()
                .name(format!("post-{n}"))
                .spawn(move || post(port, &headers, body.as_bytes()))
                .expect("thread"),
        );
    }
    for t in threads {
        assert!(t.join().expect("join").starts_with("HTTP/1.1 200"));
    }
    // The writer decides a batch's verdicts before it writes any of them: within a batch, as
    // across batches, each copy after the first names the first's id and counts the copies
    // before it exactly (1 to 9 for the ten copies of each event, each count once).
    // Per event id: the ids of its firsts, and each copy's first id and sentence.
    type Verdicts = (Vec<i64>, Vec<(i64, String)>);
    let mut by_event: std::collections::HashMap<String, Verdicts> =
        std::collections::HashMap::new();
    for _ in 0..200 {
        let delivery = listener.next_json();
        let duplicate = &delivery["checks"]["duplicate"];
        let event = delivery["event_id"].as_str().expect("event id").to_string();
        let (firsts, copies) = by_event.entry(event).or_default();
        match duplicate["status"].as_str() {
            Some("first") => firsts.push(delivery["id"].as_i64().expect("id")),
            Some("duplicate") => copies.push((
                duplicate["first_id"].as_i64().expect("first id"),
                duplicate["detail"].as_str().expect("detail").to_string(),
            )),
            other => panic!("verdict {other:?}: {duplicate}"),
        }
    }
    assert_eq!(by_event.len(), 20);
    for (event, (firsts, copies)) in &by_event {
        assert_eq!(firsts.len(), 1, "{event}: {firsts:?}");
        let mut counts: Vec<String> = copies
            .iter()
            .map(|(first_id, detail)| {
                assert_eq!(*first_id, firsts[0], "{event}: {detail}");
                detail
                    .split("already received ")
                    .nth(1)
                    .and_then(|rest| rest.split(" (").next())
                    .expect("a count")
                    .to_string()
            })
            .collect();
        counts.sort_by_key(|c| {
            c.split(' ')
                .next()
                .and_then(|n| n.parse::<u32>().ok())
                .unwrap_or(1)
        });
        let expected: Vec<String> = std::iter::once("once".to_string())
            .chain((2..=9).map(|n| format!("{n} times")))
            .collect();
        assert_eq!(counts, expected, "{event}");
    }
    let reader = Reader::open(&listener.store_path()).expect("store");
    assert_eq!(
        reader
            .count_duplicates(hookscope::domain::checks::DuplicateStatus::First)
            .expect("firsts"),
        20
    );
    assert_eq!(
        reader
            .count_duplicates(hookscope::domain::checks::DuplicateStatus::Duplicate)
            .expect("dups"),
        180
    );
}

/// The same 1,000 events posted to `listen` while `hookscope import` loads a HAR holding them:
/// two processes write one store at once, and each event still has exactly one `first` (both
/// decide it inside SQLite's write transaction, against the unique index).
#[test]
fn one_first_per_event_while_listen_and_an_import_write_the_same_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let port = listener.port;
    let bodies: Vec<String> = (0..1000)
        .map(|n| format!("{{\"id\":\"evt_{n}\",\"type\":\"job.completed\"}}"))
        .collect();
    let entries: Vec<serde_json::Value> = bodies
        .iter()
        .map(|body| {
            serde_json::json!({
                "startedDateTime": "2026-12-03T10:00:00.000Z", "time": 1,
                // The path `post` uses: on the catch-all endpoint an event id is scoped by path.
                "request": {"method": "POST", "url": "http://127.0.0.1:7878/hooks/bad",
                    "httpVersion": "HTTP/1.1", "cookies": [], "queryString": [],
                    "headers": [{"name": "content-type", "value": "application/json"}],
                    "postData": {"mimeType": "application/json", "text": body},
                    "headersSize": -1, "bodySize": body.len()},
                "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                    "cookies": [], "headers": [], "content": {"size": 0, "mimeType": "text/plain"},
                    "redirectURL": "", "headersSize": -1, "bodySize": 0},
                "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}
            })
        })
        .collect();
    let har = dir.path().join("same-events.har");
    let log = serde_json::json!({"log": {"version": "1.2",
        "creator": {"name": "test", "version": "1"}, "entries": entries}});
    std::fs::write(&har, log.to_string()).expect("har");
    let posters: Vec<_> = (0..4)
        .map(|t| {
            let mine: Vec<String> = bodies.iter().skip(t).step_by(4).cloned().collect();
            std::thread::Builder::new()
                .name(format!("post-{t}"))
                .spawn(move || {
                    for body in mine {
                        let answer =
                            post(port, "Content-Type: application/json\r\n", body.as_bytes());
                        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
                        // Spread over about a second, so the import's transaction lands
                        // among them.
                        std::thread::sleep(Duration::from_millis(4));
                    }
                })
                .expect("thread")
        })
        .collect();
    let import = std::process::Command::new(common::bin())
        .arg("import")
        .arg(&har)
        .env("HOOKSCOPE_DATA_DIR", dir.path())
        .output()
        .expect("import runs");
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
    for _ in 0..1000 {
        listener.next_json();
    }
    for poster in posters {
        poster.join().expect("poster");
    }
    let conn = rusqlite::Connection::open(listener.store_path()).expect("store");
    let (events, copies, firsts, imported_firsts): (i64, i64, i64, i64) = conn
        .query_row(
            "SELECT COUNT(*), MIN(n), MAX(firsts), SUM(imported) FROM (
                 SELECT COUNT(*) AS n, SUM(dup_status = 'first') AS firsts,
                        SUM(dup_status = 'first' AND note LIKE 'Imported%') AS imported
                 FROM deliveries GROUP BY event_id)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .expect("verdicts");
    let one_first: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM (SELECT event_id FROM deliveries GROUP BY event_id
                 HAVING SUM(dup_status = 'first') = 1)",
            [],
            |r| r.get(0),
        )
        .expect("firsts");
    eprintln!("{imported_firsts} of the 1,000 firsts came from the import");
    assert_eq!((events, copies, firsts, one_first), (1000, 2, 1, 1000));
}

// --- Security -------------------------------------------------------------------------------

#[test]
fn secrets_stay_out_of_every_output_even_at_trace_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new(common::bin())
        .args([
            "listen",
            "--port",
            "0",
            "--json",
            "--scheme",
            "standard-webhooks",
            "--secret",
            SECRET,
        ])
        .env("HOOKSCOPE_DATA_DIR", dir.path())
        .env("RUST_LOG", "trace")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("listen");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut head = String::new();
    let port: u16 = loop {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stderr, &mut line).expect("read");
        head.push_str(&line);
        if let Some(port) = common::listening_port(&line) {
            break port;
        }
    };
    let scheme = Scheme::preset("standard-webhooks").expect("preset");
    for (event, tamper) in [("evt_ok", false), ("evt_bad", true)] {
        let mut headers = scheme
            .sign(&[Secret::new(SECRET)], event, now_secs(), b"{}")
            .expect("sign");
        if tamper {
            headers.last_mut().expect("signature").value[5] ^= 1;
        }
        let text: String = headers
            .iter()
            .map(|h| format!("{}: {}\r\n", h.name, h.value_lossy()))
            .collect();
        assert!(post(port, &text, b"{}").starts_with("HTTP/1.1 200"));
    }
    std::thread::sleep(Duration::from_millis(300));
    let _ = child.kill();
    let _ = child.wait();
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("stdout");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).expect("stderr");
    let everything = format!("{head}{rest}{stdout}");
    assert!(stdout.lines().count() == 2, "{stdout}");
    assert!(
        everything.contains("diagnosis"),
        "the failing delivery was diagnosed"
    );
    assert!(!everything.contains(SECRET));
    assert!(!everything.contains(SECRET.trim_start_matches("whsec_")));
}

#[test]
fn a_world_readable_config_earns_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[[endpoint]]\npath = \"/\"\nsecrets = [\"s3cr3t\"]\n",
    )
    .expect("config");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let out = run(dir.path(), &["jobs"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("readable by other users (mode 644)"),
            "{stderr}"
        );
        assert!(!stderr.contains("s3cr3t"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let out = run(dir.path(), &["jobs"]);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("readable by other users"));
        // A config with no secret in it (a contract, a port) is no one's business.
        std::fs::write(
            &path,
            "[receiver]\nport = 7999\n[[endpoint]]\npath = \"/hooks\"\nscheme = \"stripe\"\n",
        )
        .expect("config");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let out = run(dir.path(), &["jobs"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("readable by other users"), "{stderr}");
    }
}
