//! Faults a laptop really has, provoked for real: a full disk and a volume that goes away
//! (a size-limited tmpfs in a private mount namespace, so the volume is real and nothing
//! outside the test sees it), a read-only data dir at start, a second hookscope on the same dir
//! through a symlink. docs/reliability.md says what each proves and what could not be provoked.

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::bin;

/// An answer over raw HTTP: status, headers (lower-case names) and the delivery id.
#[derive(Debug)]
struct Answer {
    status: u16,
    text: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.text.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

fn post(port: u16, path: &str, body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    stream.write_all(&request).expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    Answer { status, text }
}

/// A distinct ~2 KiB JSON body.
fn body(n: usize) -> Vec<u8> {
    let pad: String = (0..2000)
        .map(|i| (b'a' + ((i + n) % 26) as u8) as char)
        .collect();
    format!("{{\"id\":\"evt_{n}\",\"type\":\"job.completed\",\"pad\":\"{pad}\"}}").into_bytes()
}

/// Whether this process may make mount namespaces (root, or the test is skipped and says so:
/// on a developer's machine without root there is no real small volume to fill).
#[cfg(target_os = "linux")]
fn can_mount() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        common::skip(
            "a real full or vanished volume needs a mount namespace (root); docs/reliability.md says so",
        );
    }
    root && common::tool_runs(&["unshare", "--version"])
}

/// `hookscope listen` whose data dir is a fresh tmpfs of `size` in a private mount namespace.
/// The test reaches the volume through `/proc/PID/root`, as any process outside could.
#[cfg(target_os = "linux")]
struct OnVolume {
    child: Child,
    port: u16,
    /// The mount point as the namespace sees it.
    mount: PathBuf,
    stderr: Arc<Mutex<String>>,
    _outside: tempfile::TempDir,
}

#[cfg(target_os = "linux")]
impl OnVolume {
    /// `before` runs in the namespace after the mount and before `listen` (shell).
    fn start(size: &str, before: &str) -> Result<OnVolume, String> {
        let outside = tempfile::tempdir().expect("tempdir");
        let mount = outside.path().join("volume");
        std::fs::create_dir(&mount).expect("mount point");
        let config = outside.path().join("config.toml");
        std::fs::write(&config, "").expect("an empty config");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600))
                .expect("chmod 600");
        }
        let script = format!(
            "mount -t tmpfs -o size={size} hookscope-test \"$0\" || exit 97\n{before}\nexec \"$1\" listen --port 0 --data-dir \"$0\""
        );
        let mut child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .arg(&mount)
            .arg(bin())
            .env_remove("HOOKSCOPE_DATA_DIR")
            .env("HOOKSCOPE_CONFIG", outside.path().join("config.toml"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("unshare: {e}"))?;
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let log = Arc::new(Mutex::new(String::new()));
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap_or(0) == 0 || Instant::now() > deadline {
                let _ = child.wait();
                return Err(format!(
                    "listen did not start: {}{line}",
                    log.lock().expect("log")
                ));
            }
            log.lock().expect("log").push_str(&line);
            if let Some(port) = common::listening_port(&line) {
                break port;
            }
        };
        let drain = Arc::clone(&log);
        std::thread::Builder::new()
            .name("test-stderr-log".into())
            .spawn(move || {
                let mut line = String::new();
                while stderr.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                    drain.lock().expect("log").push_str(&line);
                    line.clear();
                }
            })
            .expect("log thread");
        Ok(OnVolume {
            child,
            port,
            mount,
            stderr: log,
            _outside: outside,
        })
    }

    /// The volume as seen from outside the namespace.
    fn outside(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.child.id()))
            .join(self.mount.strip_prefix("/").expect("absolute"))
            .join(name)
    }

    fn stderr(&self) -> String {
        self.stderr.lock().expect("log").clone()
    }

    /// Waits until stderr holds `needle`; returns stderr.
    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = self.stderr();
            if text.contains(needle) {
                return text;
            }
            assert!(Instant::now() < deadline, "never said {needle:?}: {text}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs a command inside the namespace (nsenter), e.g. to unmount the volume.
    fn inside(&self, args: &[&str]) {
        let out = Command::new("nsenter")
            .arg(format!("--mount=/proc/{}/ns/mnt", self.child.id()))
            .args(args)
            .output()
            .expect("nsenter");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[cfg(target_os = "linux")]
impl Drop for OnVolume {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Fills the volume with one file until the system says it is full; returns its size.
#[cfg(target_os = "linux")]
fn fill(path: &Path) -> u64 {
    let mut file = std::fs::File::create(path).expect("filler");
    let chunk = vec![0x5au8; 64 * 1024];
    let mut written = 0u64;
    loop {
        match file.write(&chunk) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(e) => {
                assert_eq!(
                    e.kind(),
                    std::io::ErrorKind::StorageFull,
                    "the volume fills: {e}"
                );
                break;
            }
        }
    }
    let _ = file.sync_all();
    written
}

/// Every acknowledged body is in the store, and the store passes `integrity_check`.
#[cfg(target_os = "linux")]
fn assert_all_stored(store: &Path, acknowledged: &[Vec<u8>]) {
    let conn = rusqlite::Connection::open(store).expect("open the store");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(check, "ok");
    // The bodies as hookscope reads them back (past its first 64 deliveries a store keeps them
    // packed, so the column itself is not the body).
    let stored: Vec<Vec<u8>> = hookscope::store::Reader::open(store)
        .expect("reader")
        .list(1_000_000, None)
        .expect("list")
        .into_iter()
        .map(|d| d.delivery.body)
        .collect();
    for (n, body) in acknowledged.iter().enumerate() {
        let found = stored.iter().filter(|b| *b == body).count();
        assert_eq!(found, 1, "acknowledged delivery {n} is stored once");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_refuses_with_503_and_capture_resumes_when_space_returns() {
    if !can_mount() {
        return;
    }
    let listen = OnVolume::start("6m", "").expect("listen on a 6 MiB tmpfs");
    let mut acknowledged = Vec::new();
    let mut n = 0;
    let mut send = |acknowledged: &mut Vec<Vec<u8>>| {
        n += 1;
        let body = body(n);
        let answer = post(listen.port, "/hooks/full", &body);
        if answer.status == 200 {
            acknowledged.push(body);
        }
        answer
    };
    // Before: capture works.
    for _ in 0..20 {
        assert_eq!(send(&mut acknowledged).status, 200);
    }
    // During: the volume is full.
    let filler = listen.outside("filler");
    let filled = fill(&filler);
    assert!(filled > 1_000_000, "the filler took the space: {filled} B");
    let mut refused = 0;
    let mut in_a_row = 0;
    for _ in 0..400 {
        let answer = send(&mut acknowledged);
        match answer.status {
            200 => in_a_row = 0,
            503 => {
                refused += 1;
                in_a_row += 1;
                assert_eq!(
                    answer.header("retry-after"),
                    Some("30"),
                    "a refusal says when to retry: {}",
                    answer.text
                );
                assert!(
                    answer.text.contains("disk full"),
                    "the body says why: {}",
                    answer.text
                );
            }
            other => panic!("neither stored nor refused: {other}: {}", answer.text),
        }
        if in_a_row == 25 {
            break;
        }
    }
    assert_eq!(in_a_row, 25, "a full volume refuses deliveries");
    eprintln!(
        "full volume: {} acknowledged so far, {refused} refused with 503",
        acknowledged.len()
    );
    let said = listen.wait_for("disk full: deliveries are being refused");
    assert_eq!(
        said.matches("disk full").count(),
        1,
        "said once, not per request ({refused} refused): {said}"
    );
    // After: space returns, capture resumes without a restart.
    std::fs::remove_file(&filler).expect("free the space");
    for _ in 0..20 {
        let answer = send(&mut acknowledged);
        assert_eq!(answer.status, 200, "capture resumed: {}", answer.text);
    }
    let said = listen.wait_for("capture resumed");
    assert_eq!(said.matches("capture resumed").count(), 1, "{said}");
    assert!(
        said.contains(&format!("{refused} deliveries were refused")),
        "counts the refusals: {said}"
    );
    // SQLite resolves /proc/PID/root back to the mount point outside, so the store is copied
    // out from inside the namespace while the listener is idle, then checked.
    let copy = tempfile::tempdir().expect("tempdir");
    let mount = listen.mount.display().to_string();
    let to = copy.path().display().to_string();
    listen.inside(&[
        "sh",
        "-c",
        &format!("cp \"{mount}\"/hookscope.sqlite* \"{to}/\""),
    ]);
    assert_all_stored(&copy.path().join("hookscope.sqlite"), &acknowledged);
}

#[cfg(target_os = "linux")]
#[test]
fn an_unmounted_volume_is_noticed_and_nothing_more_is_acknowledged() {
    if !can_mount() {
        return;
    }
    let listen = OnVolume::start("16m", "").expect("listen on a tmpfs");
    for n in 0..5 {
        assert_eq!(post(listen.port, "/hooks/gone", &body(n)).status, 200);
    }
    // Lazily: hookscope's open files keep the old volume alive, as when a USB disk's mount is
    // pulled away under a running program; the path now leads nowhere.
    let mount = listen.mount.display().to_string();
    listen.inside(&["umount", "-l", &mount]);
    std::thread::sleep(Duration::from_millis(1100));
    for n in 5..15 {
        let answer = post(listen.port, "/hooks/gone", &body(n));
        assert_eq!(
            answer.status, 503,
            "no 2xx for a delivery written to a file nobody can open again: {}",
            answer.text
        );
    }
    let said = listen.wait_for("is gone");
    eprintln!("{said}");
    assert_eq!(said.matches("is gone").count(), 1, "{said}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_read_only_data_dir_at_start_is_one_sentence_and_no_listening() {
    if !can_mount() {
        return;
    }
    // A store is made and closed cleanly (no `-shm` left), the volume turns read-only, the
    // history can still be read (`list` exits 0, exit 99 otherwise), then `listen` starts on it.
    let err = OnVolume::start(
        "8m",
        "\"$1\" --data-dir \"$0\" listen --port 0 2>/dev/null & p=$!; sleep 2; kill -TERM $p; wait $p
        test ! -e \"$0/hookscope.sqlite-shm\" || exit 97
        mount -o remount,ro \"$0\" || exit 98
        \"$1\" --data-dir \"$0\" list --json >/dev/null || exit 99",
    )
    .err()
    .expect("listen refuses a read-only data dir");
    assert!(
        err.contains("cannot be written (Read-only file system)"),
        "names the reason: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    eprintln!("{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains("hookscope:")).count(),
        1,
        "one sentence: {err}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn an_older_store_on_a_read_only_volume_is_one_sentence_not_a_query_error() {
    if !can_mount() || !common::tool_runs(&["python3", "--version"]) {
        return;
    }
    // A store of schema 15 (today's with v16's columns taken out again) on a volume that turned
    // read-only cannot be migrated there: `list` says so in one sentence, not `no such column`.
    let err = OnVolume::start(
        "8m",
        "\"$1\" --data-dir \"$0\" listen --port 0 2>/dev/null & p=$!; sleep 2; kill -TERM $p; wait $p
        python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(\"DROP INDEX deliveries_handshake; ALTER TABLE deliveries DROP COLUMN handshake; ALTER TABLE deliveries DROP COLUMN event_source; PRAGMA user_version = 15\"); c.close()' \"$0/hookscope.sqlite\" || exit 96
        mount -o remount,ro \"$0\" || exit 98
        \"$1\" --data-dir \"$0\" list --json >&2; echo \"list exit $?\" >&2; exit 1",
    )
    .err()
    .expect("the script stops before listen");
    assert!(
        err.contains("has schema version 15, older than this hookscope reads")
            && err.contains("copy the data dir somewhere writable"),
        "{err}"
    );
    assert!(err.contains("list exit 1"), "{err}");
    assert!(
        !err.contains("no such column") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn a_second_listen_on_the_same_dir_through_a_symlink_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().join("real");
    std::fs::create_dir(&real).expect("dir");
    let first = common::Listener::start(&real, &[]);
    let link = dir.path().join("link");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    #[cfg(not(unix))]
    let link = real.clone();
    let out = Command::new(bin())
        .args(["listen", "--port", "0"])
        .env("HOOKSCOPE_DATA_DIR", &link)
        .output()
        .expect("second listen");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "another hookscope (process {}) is already capturing into {}",
            first.child.id(),
            std::fs::canonicalize(&real).expect("real").display()
        )),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one sentence: {stderr}");
    // The first is untouched.
    assert_eq!(post(first.port, "/hooks/x", b"{}").status, 200);
}

/// `listen` on `data` with the slow-disk shim loaded and these of its settings; `None` (the test
/// skipped, and saying so) without a C compiler.
#[cfg(target_os = "linux")]
fn listen_on_shim(data: &std::path::Path, settings: &[(&str, &str)]) -> Option<common::Listener> {
    if !common::tool_runs(&["cc", "--version"]) {
        return None;
    }
    let shim = slow_fsync_shim();
    let mut env = vec![("LD_PRELOAD", shim.to_str().expect("utf-8 path"))];
    env.extend_from_slice(settings);
    Some(common::Listener::start_with_env(data, &[], &env))
}

/// Builds the slow-disk shim (`tests/common/slow_fsync.c`) with the system's C compiler.
#[cfg(target_os = "linux")]
fn slow_fsync_shim() -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libslowfsync.so");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/slow_fsync.c");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&source)
        .arg("-ldl")
        .output()
        .expect("a C compiler (cc) builds the slow-disk shim");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    out
}

#[cfg(target_os = "linux")]
#[test]
fn a_slow_disk_slows_acknowledgements_but_never_answers_before_the_delivery_is_on_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let count = dir.path().join("fsyncs");
    let Some(listen) = listen_on_shim(
        &dir.path().join("data"),
        &[
            ("SLOW_FSYNC_MS", "200"),
            ("SLOW_FSYNC_COUNT", count.to_str().expect("utf-8 path")),
        ],
    ) else {
        return;
    };
    let store = listen.store_path();
    let port = listen.port;
    let started = Instant::now();
    let senders: Vec<_> = (0..8)
        .map(|sender| {
            let store = store.clone();
            std::thread::Builder::new()
                .name(format!("slow-sender-{sender}"))
                .spawn(move || {
                    let reader = hookscope::store::Reader::open(&store).expect("reader");
                    let mut latencies = Vec::new();
                    for n in 0..6 {
                        let sent = Instant::now();
                        let answer = post(port, "/hooks/slow", &body(sender * 100 + n));
                        latencies.push(sent.elapsed());
                        assert_eq!(answer.status, 200, "{}", answer.text);
                        let id: i64 = answer
                            .header("x-hookscope-delivery-id")
                            .and_then(|v| v.parse().ok())
                            .expect("the answer names its delivery");
                        // On disk before the answer, and so seen by every reader at once:
                        // the answer comes after the synced commit.
                        assert!(
                            reader.get(id).expect("read").is_some(),
                            "delivery {id} was acknowledged before it was committed"
                        );
                    }
                    latencies
                })
                .expect("sender thread")
        })
        .collect();
    let mut latencies: Vec<Duration> = senders
        .into_iter()
        .flat_map(|s| s.join().expect("sender"))
        .collect();
    let elapsed = started.elapsed();
    latencies.sort();
    let fsyncs = std::fs::read(&count).map(|c| c.len()).unwrap_or(0);
    eprintln!(
        "slow disk (fsync +200 ms): 48 deliveries by 8 senders in {elapsed:?}, ack min {:?} median {:?} max {:?}, {fsyncs} fsyncs",
        latencies[0],
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    assert!(fsyncs > 0, "the shim slowed the store's syncs");
    assert!(
        latencies[0] >= Duration::from_millis(200),
        "no acknowledgement came before its fsync: fastest {:?}",
        latencies[0]
    );
    // Group commit: eight senders share each slow sync, so the whole run takes far less than
    // 48 syncs one after another.
    assert!(
        elapsed < Duration::from_millis(48 * 200),
        "commits were grouped: {elapsed:?}"
    );
}

/// The `sync`-th sync of the WAL fails with EIO (it syncs nothing; the others are real), while
/// thirty deliveries come one at a time: exactly one is refused (503, saying why), and the store
/// holds every acknowledged one, once, and not the refused one.
#[cfg(target_os = "linux")]
#[test]
fn a_failed_wal_sync_refuses_its_delivery_and_keeps_every_acknowledged_one() {
    for sync in [3, 12] {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        // Made and migrated by another process first: the syncs counted are the deliveries'.
        std::fs::create_dir_all(&data).expect("data dir");
        drop(hookscope::store::Reader::open(&data.join("hookscope.sqlite")).expect("made"));
        let from = sync.to_string();
        let Some(listen) = listen_on_shim(
            &data,
            &[
                ("SLOW_FSYNC_MS", "0"),
                ("FAIL_SYNC_SUFFIX", "hookscope.sqlite-wal"),
                ("FAIL_SYNC_FROM", &from),
                ("FAIL_SYNC_TIMES", "1"),
            ],
        ) else {
            return;
        };
        let store = listen.store_path();
        let mut acknowledged = Vec::new();
        let mut refused = Vec::new();
        for n in 1..=30 {
            let answer = post(listen.port, "/hooks/flaky", &body(n));
            match answer.status {
                200 => acknowledged.push(n),
                503 => {
                    assert!(
                        answer.text.contains("I/O error"),
                        "the refusal says why: {}",
                        answer.text
                    );
                    refused.push(n);
                }
                other => panic!("delivery {n}: {other} {}", answer.text),
            }
        }
        assert_eq!(refused.len(), 1, "sync {sync}: refused {refused:?}");
        drop(listen);
        assert_eq!(stored_numbers(&store), acknowledged, "sync {sync}");
    }
}

/// The numbers of the deliveries (`body(n)`) the store holds, in order.
#[cfg(target_os = "linux")]
fn stored_numbers(store: &std::path::Path) -> Vec<usize> {
    let reader = hookscope::store::Reader::open(store).expect("reader");
    let mut stored: Vec<usize> = reader
        .list(100, None)
        .expect("list")
        .iter()
        .map(|d| {
            let json: serde_json::Value = serde_json::from_slice(&d.delivery.body).expect("json");
            json["id"].as_str().expect("id")[4..].parse().expect("n")
        })
        .collect();
    stored.sort_unstable();
    stored
}

/// While every write to the WAL fails with EIO, every delivery is refused (503) and none is
/// acknowledged; once writes succeed, capture resumes without a restart, and the store holds
/// every acknowledged delivery exactly.
#[cfg(target_os = "linux")]
#[test]
fn a_wal_that_refuses_writes_refuses_deliveries_until_it_takes_them_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flag = dir.path().join("wal-refuses-writes");
    let Some(listen) = listen_on_shim(
        &dir.path().join("data"),
        &[
            ("SLOW_FSYNC_MS", "0"),
            ("FAIL_WRITE_SUFFIX", "hookscope.sqlite-wal"),
            ("FAIL_WRITE_WHILE", flag.to_str().expect("utf-8 path")),
        ],
    ) else {
        return;
    };
    let store = listen.store_path();
    let mut acknowledged = Vec::new();
    for n in 0..50 {
        assert_eq!(post(listen.port, "/hooks/x", &body(n)).status, 200);
        acknowledged.push(body(n));
    }
    std::fs::write(&flag, b"").expect("flag");
    for n in 50..60 {
        let answer = post(listen.port, "/hooks/x", &body(n));
        assert_eq!(answer.status, 503, "delivery {n}: {}", answer.text);
    }
    std::fs::remove_file(&flag).expect("unflag");
    for n in 60..160 {
        let answer = post(listen.port, "/hooks/x", &body(n));
        assert_eq!(answer.status, 200, "delivery {n}: {}", answer.text);
        acknowledged.push(body(n));
    }
    // Every reader sees them at once, before the process goes.
    let reader = hookscope::store::Reader::open(&store).expect("reader");
    assert_eq!(reader.count().expect("count"), acknowledged.len() as i64);
    drop(listen);
    assert_all_stored(&store, &acknowledged);
}

/// A version-1 store (the oldest schema) of `count` deliveries over 1,000 jobs.
fn version_1_store(path: &Path, count: i64) {
    // Verdicts as hookscope writes them, taken from a delivery the seeder checked.
    let seeded = tempfile::tempdir().expect("tempdir");
    common::seed(seeded.path(), 1);
    // As JSON text, the form version 1 stored.
    let checks = serde_json::to_string(
        &hookscope::store::Reader::open(&seeded.path().join("hookscope.sqlite"))
            .expect("seeded store")
            .get(1)
            .expect("read")
            .expect("the seeded delivery")
            .checks,
    )
    .expect("checks as JSON");
    let conn = rusqlite::Connection::open(path).expect("create");
    let tx = conn.unchecked_transaction().expect("tx");
    tx.execute_batch(hookscope::store::schema::MIGRATIONS[0])
        .expect("v1 schema");
    tx.pragma_update(None, "user_version", 1).expect("version");
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO deliveries (id, received_at_ms, method, path, query, headers, body, body_size,
                    body_complete, endpoint, event_id, job_id, sig_status, ts_status, dup_status,
                    checks_json, response_status, latency_ms)
                 VALUES (?1, ?2, 'POST', '/hooks/old', '', x'', ?3, ?4, 1, '/', ?5, ?6, 'skipped',
                    'skipped', 'first', ?7, 200, 1)",
            )
            .expect("prepare");
        for id in 1..=count {
            let body = format!("{{\"id\":\"evt_{id}\",\"job_id\":\"job_{}\"}}", id % 1000);
            insert
                .execute(rusqlite::params![
                    id,
                    1_700_000_000_000 + id,
                    body.as_bytes(),
                    body.len() as i64,
                    format!("evt_{id}"),
                    format!("job_{}", id % 1000),
                    checks,
                ])
                .expect("insert");
        }
    }
    tx.commit().expect("commit");
}

/// What must survive: the count, and sums over every id and body.
fn fingerprint(path: &Path) -> (i64, i64, i64) {
    let conn = rusqlite::Connection::open(path).expect("open");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(check, "ok");
    conn.query_row(
        "SELECT COUNT(*), SUM(id), SUM(length(body) + unicode(substr(body, 9, 1))) FROM deliveries",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .expect("fingerprint")
}

fn user_version(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .expect("open")
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("user_version")
}

#[test]
fn sigkill_during_the_migration_of_a_large_old_store_loses_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("dir");
    let store = data.join("hookscope.sqlite");
    let count = 120_000;
    version_1_store(&store, count);
    let expected = fingerprint(&store);
    assert_eq!(expected.0, count);
    let latest = hookscope::store::schema::MIGRATIONS.len() as i64;
    let wal = data.join("hookscope.sqlite-wal");
    let mut seen = Vec::new();
    // Each round starts `listen` on the store and kills it a little later than the last, once
    // the migration has begun writing (the write-ahead log appears).
    for delay_ms in [0u64, 2, 5, 10, 20, 40, 80, 160] {
        let mut child = Command::new(bin())
            .args(["listen", "--port", "0"])
            .env("HOOKSCOPE_DATA_DIR", &data)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("listen");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        let version = user_version(&store);
        seen.push(version);
        assert!((1..=latest).contains(&version), "version {version}");
        assert_eq!(
            fingerprint(&store),
            expected,
            "after a kill at version {version}"
        );
    }
    eprintln!("schema version after each SIGKILL: {seen:?} (of {latest})");
    assert!(
        seen.iter().any(|v| *v < latest),
        "at least one kill landed before the migration finished: {seen:?}"
    );
    // The next start completes it.
    let out = common::run(&data, &["list", "--limit", "1", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(user_version(&store), latest);
    assert_eq!(fingerprint(&store), expected);
    let conn = rusqlite::Connection::open(&store).expect("open");
    let jobs: i64 = conn
        .query_row("SELECT COUNT(*) FROM jobs", [], |r| r.get(0))
        .expect("jobs");
    assert_eq!(jobs, 1000, "jobs back-filled");
}

/// Forwarding rules are decided in the delivery's own write transaction: a delivery
/// that meets none of them is marked unrouted there, and a mirrored handler's status is recorded
/// with the forward's attempt, so each costs one synced commit fewer than a second round trip
/// to the store would. Counted as fsyncs (the slow-disk shim's counter) over 6 deliveries of
/// each kind, after `listen` has settled.
#[cfg(target_os = "linux")]
#[test]
fn routing_and_a_mirrored_answer_cost_no_write_transaction_of_their_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let handler = common::handler::serve(
        common::handler::Flavour::Correct,
        axum::http::StatusCode::ACCEPTED,
    );
    std::fs::write(
        data.join("config.toml"),
        format!(
            "[[endpoint]]\npath = \"/hooks/r\"\n\n[[endpoint.forward]]\nto = \"http://{}/record\"\nwhen = \"type:wanted\"\nanswer = \"mirror\"\n",
            handler.addr
        ),
    )
    .expect("config");
    let count = dir.path().join("fsyncs");
    let Some(listen) = listen_on_shim(
        &data,
        &[
            ("SLOW_FSYNC_MS", "1"),
            ("SLOW_FSYNC_COUNT", count.to_str().expect("utf-8 path")),
        ],
    ) else {
        return;
    };
    let syncs = || std::fs::read(&count).map(|b| b.len()).unwrap_or(0);
    // Settled: no sync for 1.5 s (the start-up's, and the idle checkpoint's).
    let mut settled = syncs();
    loop {
        std::thread::sleep(Duration::from_millis(1500));
        let now = syncs();
        if now == settled {
            break;
        }
        settled = now;
    }
    let send = |kind: &str| {
        for n in 0..6 {
            let body = format!("{{\"id\":\"evt_{kind}_{n}\",\"type\":\"{kind}\"}}");
            let answer = post(listen.port, "/hooks/r", body.as_bytes());
            let expected = if kind == "wanted" { 202 } else { 200 };
            assert_eq!(answer.status, expected, "{}", answer.text);
        }
    };
    send("other");
    let unrouted = syncs() - settled;
    // One synced commit per delivery; the first after the idle checkpoint may sync the WAL's
    // header too. Marking each unrouted in a transaction of its own made it 12.
    assert!(
        unrouted <= 6 + 2,
        "{unrouted} syncs for 6 unrouted deliveries"
    );
    let before = syncs();
    send("wanted");
    let mirrored = syncs() - before;
    // The delivery's commit, then its forward's attempt with the mirrored status: 12. The
    // status in a transaction of its own made it 18.
    assert!(
        mirrored <= 12 + 2,
        "{mirrored} syncs for 6 mirrored deliveries"
    );
    let reader = hookscope::store::Reader::open(&listen.store_path()).expect("reader");
    assert_eq!(reader.count_unrouted().expect("count"), 6);
    let rows = reader.list(20, None).expect("list");
    assert_eq!(rows.iter().filter(|r| r.response_status == 202).count(), 6);
}
