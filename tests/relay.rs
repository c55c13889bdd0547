//! The relay end to end, as a user runs it: `hookscope relay serve` on one port, `hookscope
//! listen --relay` on another, real HTTP on loopback, deliveries signed by the Standard
//! Webhooks library itself; what the relay keeps is opened with `age`.

#[path = "relay/cluster.rs"]
mod cluster;
mod common;
#[path = "relay/nats.rs"]
mod nats;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Listener;

/// A `hookscope relay serve` child process; killed when dropped.
struct Relay {
    child: Child,
    base: String,
    data_dir: PathBuf,
    /// What it wrote on stderr so far.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Relay {
    fn start(data_dir: &Path, args: &[&str]) -> Relay {
        let port = if args.contains(&"--port") {
            &[][..]
        } else {
            &["--port", "0"][..]
        };
        let mut child = Command::new(common::bin())
            .args(["relay", "serve"])
            .args(port)
            .args(args)
            .env("HOOKSCOPE_DATA_DIR", data_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the relay starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        // What it says before it listens (a cluster's limits, say) is kept in its log.
        let mut said = String::new();
        let base = loop {
            let mut line = String::new();
            let n = stderr.read_line(&mut line).expect("reads");
            assert!(n > 0, "the relay stopped before it listened: {said}");
            eprint!("[relay] {line}");
            said.push_str(&line);
            if let Some(base) = line.trim().strip_prefix("relay listening on ") {
                break base.to_string();
            }
        };
        let log = std::sync::Arc::new(std::sync::Mutex::new(said));
        let kept = std::sync::Arc::clone(&log);
        std::thread::Builder::new()
            .name("test-relay-stderr".into())
            .spawn(move || {
                let mut sink = String::new();
                while stderr.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                    eprint!("[relay] {sink}");
                    kept.lock().expect("log").push_str(&sink);
                    sink.clear();
                }
            })
            .expect("drain");
        Relay {
            child,
            base,
            data_dir: data_dir.to_path_buf(),
            log,
        }
    }

    fn ingest(&self, channel: &str, path: &str) -> String {
        format!("{}/in/{channel}{path}", self.base)
    }

    fn subscribe(&self, channel: &str) -> String {
        format!("{}/sub/{channel}", self.base)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The laptop's relay key (its public half), made in `laptop`.
fn relay_key(laptop: &Path) -> String {
    let out = common::run(laptop, &["relay", "key"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Where the relay under test keeps what it takes: its data dir (SQLite), or a JetStream
/// server. The tests of both run from one body.
enum Store {
    Sqlite,
    JetStream(nats::Nats),
}

impl Store {
    /// A single `nats-server -js` (`None`, said skipped, where there is none).
    fn jetstream() -> Option<Store> {
        nats::available().then(|| Store::JetStream(nats::Nats::start(1)))
    }

    /// `extra`, then `--store URL` on JetStream.
    fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
        if let Store::JetStream(nats) = self {
            args.extend(nats.store_args());
        }
        args
    }

    /// Runs `hookscope ARGS` on this store, over `data_dir`.
    fn run(&self, data_dir: &Path, args: &[&str]) -> std::process::Output {
        let args = self.args(args);
        common::run(
            data_dir,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    }

    /// Starts a relay on this store.
    fn relay(&self, relay_dir: &Path, extra: &[&str]) -> Relay {
        let args = self.args(extra);
        Relay::start(
            relay_dir,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    }

    /// Every file the store keeps (the SQLite file and its WAL, or the servers' store dirs).
    fn files(&self, relay_dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        match self {
            Store::Sqlite => every_file(relay_dir),
            Store::JetStream(nats) => every_file(nats.store_dir()),
        }
    }
}

/// Makes a channel sealed to `recipients`; answers its token.
fn add_channel(relay_dir: &Path, name: &str, recipients: &[&str]) -> String {
    add_channel_on(&Store::Sqlite, relay_dir, name, recipients)
}

/// Makes a channel on `store`.
fn add_channel_on(store: &Store, relay_dir: &Path, name: &str, recipients: &[&str]) -> String {
    let mut args = vec!["relay", "channel", "add", name, "--json"];
    for r in recipients {
        args.extend(["--recipient", r]);
    }
    let out = store.run(relay_dir, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(made["ingest_path"], format!("/in/{name}/"));
    assert_eq!(made["subscribe_path"], format!("/sub/{name}"));
    made["token"].as_str().expect("token").to_string()
}

/// `listen --relay` over `laptop`, with the token in a file.
fn listen_relayed(
    laptop: &Path,
    relay: &Relay,
    channel: &str,
    token: &str,
    args: &[&str],
) -> Listener {
    let token_file = laptop.join(format!("{channel}.token"));
    std::fs::write(&token_file, token).expect("token file");
    let mut all = vec![
        "--relay".to_string(),
        relay.subscribe(channel),
        "--relay-token-file".to_string(),
        token_file.display().to_string(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    Listener::start(laptop, &all)
}

/// A runtime for a test's own requests: current-thread for 0 workers, else that many.
fn runtime(workers: usize) -> tokio::runtime::Runtime {
    let mut builder = if workers == 0 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(workers);
        builder
    };
    builder.enable_all().build().expect("runtime")
}

/// A relay's data dir with channel `team` sealed to a laptop's key, and that laptop's data dir
/// (the set-up of most tests here; the relay is started by the test, with its flags).
struct Team {
    relay_dir: tempfile::TempDir,
    laptop: tempfile::TempDir,
    key: String,
    token: String,
}

fn team() -> Team {
    team_on(&Store::Sqlite)
}

fn team_on(store: &Store) -> Team {
    let (relay_dir, laptop) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let key = relay_key(laptop.path());
    let token = add_channel_on(store, relay_dir.path(), "team", &[&key]);
    Team {
        relay_dir,
        laptop,
        key,
        token,
    }
}

/// `listen --relay` on channel `team`, its stderr kept in a file to read (what it said);
/// answers the child and the file.
fn listen_logged(laptop: &Path, relay: &Relay, token: &str) -> (Child, PathBuf) {
    let token_file = laptop.join("token");
    std::fs::write(&token_file, token).expect("token");
    let stderr_file = laptop.join("listen.err");
    let listen = Command::new(common::bin())
        .args([
            "listen",
            "--port",
            "0",
            "--relay",
            &relay.subscribe("team"),
            "--relay-token-file",
        ])
        .arg(&token_file)
        .env("HOOKSCOPE_DATA_DIR", laptop)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_file).expect("file"))
        .spawn()
        .expect("listen");
    (listen, stderr_file)
}

/// What the laptop's store holds: (relay seq, received_at_ms, sig, ts) in id order.
fn stored(laptop: &Path) -> Vec<(i64, i64, String, String)> {
    let conn = rusqlite::Connection::open(laptop.join("hookscope.sqlite")).expect("opens");
    let mut stmt = conn
        .prepare(
            "SELECT relay_seq, received_at_ms, sig_status, ts_status FROM deliveries ORDER BY id",
        )
        .expect("prepares");
    stmt.query_map([], |r| {
        Ok((
            r.get::<_, Option<i64>>(0)?.unwrap_or(-1),
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
        ))
    })
    .expect("queries")
    .collect::<Result<_, _>>()
    .expect("rows")
}

/// Waits until the laptop holds `n` deliveries (or the time is up); answers what it holds.
fn wait_for(laptop: &Path, n: usize, within: Duration) -> Vec<(i64, i64, String, String)> {
    let deadline = Instant::now() + within;
    loop {
        let rows = if laptop.join("hookscope.sqlite").exists() {
            stored(laptop)
        } else {
            Vec::new()
        };
        if rows.len() >= n || Instant::now() > deadline {
            return rows;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One delivery as the relay's own stream gives it.
struct Event {
    seq: i64,
    received_ms: i64,
    /// The age file.
    sealed: Vec<u8>,
}

/// The first `n` deliveries of `channel`, read from the relay's stream as a subscriber reads
/// them (whatever the store).
fn relay_events(relay: &Relay, channel: &str, token: &str, n: usize) -> Vec<Event> {
    use base64::Engine as _;
    let runtime = runtime(0);
    runtime.block_on(async {
        // A store that cannot answer yet (a cluster electing its leaders) is 503: a subscriber
        // tries again, as the laptop does.
        let since = Instant::now();
        let mut response = loop {
            let response = common::http_client()
                .get(relay.subscribe(channel))
                .bearer_auth(token)
                .send()
                .await
                .expect("subscribes");
            let status = response.status().as_u16();
            if status != 503 || since.elapsed() > Duration::from_secs(30) {
                assert_eq!(status, 200);
                break response;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let (mut text, mut events) = (String::new(), Vec::new());
        while events.len() < n {
            let chunk = tokio::time::timeout(Duration::from_secs(30), response.chunk())
                .await
                .expect("the stream goes on")
                .expect("reads")
                .expect("not ended");
            text.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = text.find("\n\n") {
                let event: String = text.drain(..end + 2).collect();
                if !event.contains("event: delivery") {
                    continue;
                }
                let data = event
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .expect("data");
                let data: serde_json::Value = serde_json::from_str(data).expect("JSON");
                events.push(Event {
                    seq: data["seq"].as_i64().expect("seq"),
                    received_ms: data["received_at_ms"].as_i64().expect("time"),
                    sealed: base64::engine::general_purpose::STANDARD
                        .decode(data["sealed"].as_str().expect("sealed"))
                        .expect("base64"),
                });
            }
        }
        events.truncate(n);
        events
    })
}

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A request to post: its headers and body.
type Request = (Vec<(String, String)>, String);

/// `count` requests signed by the standardwebhooks library, as (headers, body).
fn signed_by_the_library(count: usize) -> Option<Vec<Request>> {
    let python = common::pip_target(
        "py-relay-standardwebhooks",
        "standardwebhooks/webhooks.py",
        &[
            "standardwebhooks==1.3.0",
            "attrs==25.4.0",
            "python-dateutil==2.9.0.post0",
            "six==1.17.0",
            "Deprecated==1.3.1",
            "wrapt==2.0.1",
            "httpx==0.28.1",
            "typing_extensions==4.16.0",
        ],
    )?;
    let script = format!(
        r#"
import json, sys, datetime
from standardwebhooks.webhooks import Webhook
wh = Webhook("{SECRET}")
now = datetime.datetime.now(tz=datetime.timezone.utc)
out = []
for n in range({count}):
    body = json.dumps({{"type": "job.completed", "data": {{"job_id": "job_%d" % n}}}})
    msg_id = "msg_%06d" % n
    sig = wh.sign(msg_id, now, body)
    out.append([[["webhook-id", msg_id], ["webhook-timestamp", str(int(now.timestamp()))], ["webhook-signature", sig], ["content-type", "application/json"]], body])
json.dump(out, sys.stdout)
"#
    );
    let (ok, out) = common::run_tool("python3", &["-c", &script], Some(&python));
    assert!(ok, "the library signs: {out}");
    let parsed: Vec<Request> = serde_json::from_str(&out).expect("JSON");
    Some(parsed)
}

/// Posts each request to `url` with 32 at a time; answers each status in order.
fn post_all(url: &str, requests: Vec<Request>) -> Vec<u16> {
    let runtime = runtime(2);
    runtime.block_on(async {
        let client = common::http_client();
        let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(32));
        let mut tasks = Vec::new();
        for (headers, body) in requests {
            let (client, url) = (client.clone(), url.to_string());
            let permit = std::sync::Arc::clone(&semaphore)
                .acquire_owned()
                .await
                .expect("permit");
            tasks.push(tokio::spawn(async move {
                let _permit = permit;
                let mut request = client.post(&url).body(body);
                for (name, value) in headers {
                    request = request.header(name, value);
                }
                request
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0)
            }));
        }
        let mut statuses = Vec::new();
        for task in tasks {
            statuses.push(task.await.expect("joins"));
        }
        statuses
    })
}

/// 10,000 deliveries signed by the Standard Webhooks library arrive while no laptop listens,
/// each acknowledged 202; `listen --relay` then stores every one exactly once, in sequence
/// order, at the relay's time (so each passes its timestamp check), and a restart adds none.
#[test]
fn what_came_while_the_laptop_was_away_is_stored_once_in_order() {
    laptop_away(&Store::Sqlite);
}

/// The same on JetStream.
#[test]
fn what_came_while_the_laptop_was_away_is_stored_once_in_order_on_jetstream() {
    if let Some(store) = Store::jetstream() {
        laptop_away(&store);
    }
}

/// The tests that load this machine's two cores for a minute (10,000 or 20,000 deliveries)
/// take turns: side by side, each starves the other's relay, and what they time (a stall, a
/// provider's patience) then measures the starvation.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn laptop_away(store: &Store) {
    let _turn = heavy();
    let Some(requests) = signed_by_the_library(10_000) else {
        return;
    };
    let Team {
        relay_dir,
        laptop,
        key: _,
        token,
    } = team_on(store);
    let relay = store.relay(relay_dir.path(), &[]);
    let statuses = post_all(&relay.ingest("team", "/webhooks"), requests);
    assert!(
        statuses.iter().all(|s| *s == 202),
        "{:?}",
        statuses
            .iter()
            .filter(|s| **s != 202)
            .take(5)
            .collect::<Vec<_>>()
    );
    let secret = format!("--secret={SECRET}");
    let mut listener = listen_relayed(
        laptop.path(),
        &relay,
        "team",
        &token,
        &["--scheme", "standard-webhooks", &secret],
    );
    // `listen --json` prints each once it is answered (handled side by side, so not in
    // order), with its place at the relay.
    let mut printed: Vec<u64> = (0..10_000)
        .map(|_| {
            listener.next_json()["relay"]["seq"]
                .as_u64()
                .expect("relay.seq")
        })
        .collect();
    printed.sort_unstable();
    printed.dedup();
    assert_eq!(printed.len(), 10_000, "each printed once");
    let rows = wait_for(laptop.path(), 10_000, Duration::from_secs(10));
    assert_eq!(rows.len(), 10_000, "stored");
    // Stored in sequence order: the n-th delivery stored is the relay's n-th.
    let out_of_order = rows.iter().zip(1..).find(|(row, n)| row.0 != *n);
    assert_eq!(out_of_order, None, "exactly once, in sequence order");
    assert!(
        rows.iter().all(|r| r.2 == "pass" && r.3 == "pass"),
        "{:?}",
        rows.iter().find(|r| r.2 != "pass" || r.3 != "pass")
    );
    let times = relay_events(&relay, "team", &token, 10_000);
    assert!(
        rows.iter()
            .zip(&times)
            .all(|(row, event)| row.0 == event.seq && row.1 == event.received_ms),
        "the relay's receive time"
    );
    drop(listener);
    let listener = listen_relayed(
        laptop.path(),
        &relay,
        "team",
        &token,
        &["--scheme", "standard-webhooks", &secret],
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        stored(laptop.path()).len(),
        10_000,
        "the same count after a restart"
    );
    drop(listener);
}

/// One request's answer: status, content type, body.
struct Answered {
    status: u16,
    content_type: Option<String>,
    body: String,
}

/// Posts `body` to `url`, signed with a preset `scheme` under `secret` when one is given.
fn post(url: &str, signing: Option<(&str, &str)>, body: &str) -> Answered {
    use hookscope::domain::scheme::{Scheme, Secret};
    let runtime = runtime(0);
    let client = common::http_client();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some((scheme, secret)) = signing {
        let headers = Scheme::preset(scheme)
            .expect("preset")
            .sign(
                &[Secret::new(secret)],
                "evt_1",
                common::now_secs(),
                body.as_bytes(),
            )
            .expect("signs");
        for h in headers {
            request = request.header(h.name, h.value);
        }
    }
    runtime.block_on(async {
        let response = request.send().await.expect("the relay answers");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().expect("text").to_string());
        Answered {
            status,
            content_type,
            body: response.text().await.expect("body"),
        }
    })
}

/// Slack's and Zoom's handshakes through the relay get hookscope's exact answers, a laptop that
/// answers 500 reaches the sender as 500, and with the laptop gone the sender gets the offline
/// answer.
#[test]
fn the_provider_gets_the_laptops_answer_through_the_relay() {
    let Team {
        relay_dir,
        laptop,
        key: _,
        token,
    } = team();
    let relay = Relay::start(relay_dir.path(), &[]);
    std::fs::write(
        laptop.path().join("config.toml"),
        "[[endpoint]]\npath = \"/slack\"\nscheme = \"slack\"\nsecrets = [\"slack-secret\"]\n\n[[endpoint]]\npath = \"/zoom\"\nscheme = \"zoom\"\nsecrets = [\"zoom-secret-token\"]\n\n[[endpoint]]\npath = \"/fails\"\nrespond_status = 500\n",
    )
    .expect("config");
    let mut listener = listen_relayed(laptop.path(), &relay, "team", &token, &[]);
    let probes = wait_until_live(&relay);
    let challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P";
    let slack = post(
        &relay.ingest("team", "/slack"),
        Some(("slack", "slack-secret")),
        &format!(r#"{{"token":"t","challenge":"{challenge}","type":"url_verification"}}"#),
    );
    assert_eq!((slack.status, slack.body.as_str()), (200, challenge));
    let zoom = post(
        &relay.ingest("team", "/zoom"),
        Some(("zoom", "zoom-secret-token")),
        r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#,
    );
    let encrypted = hex_hmac("zoom-secret-token", "qgg8vlvZRS6UYooatFL8Aw");
    assert_eq!(zoom.status, 200);
    assert_eq!(zoom.content_type.as_deref(), Some("application/json"));
    assert_eq!(
        zoom.body,
        format!(r#"{{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"{encrypted}"}}"#)
    );
    let failed = post(&relay.ingest("team", "/fails"), None, "{}");
    assert_eq!(failed.status, 500, "the laptop's response rule");
    for _ in 0..probes + 3 {
        let stored = listener.next_json();
        assert!(stored["relay"]["seq"].as_u64().is_some(), "{stored}");
    }
    drop(listener);
    let offline = post(&relay.ingest("team", "/fails"), None, "{}");
    assert_eq!(offline.status, 202, "no laptop: the offline answer");
    let body: serde_json::Value = serde_json::from_str(&offline.body).expect("json");
    assert_eq!(body["relayed"], true);
    assert_eq!(body["seq"].as_u64(), Some(probes as u64 + 4));
}

fn hex_hmac(key: &str, message: &str) -> String {
    use hmac::{KeyInit as _, Mac as _};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()).expect("key");
    mac.update(message.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Waits until a laptop is subscribed and caught up: a probe delivery is answered by it (not
/// the offline 202). Answers how many probes were sent.
fn wait_until_live(relay: &Relay) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut sent = 0;
    while Instant::now() < deadline {
        sent += 1;
        if post(&relay.ingest("team", "/probe"), None, "{}").status == 200 {
            return sent;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("no laptop answered through the relay");
}

/// Every file under `dir`, recursively, as bytes (the SQLite store, its WAL and shared memory;
/// a NATS server's stream files).
fn every_file(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("reads").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

fn holds(bytes: &[u8], marker: &str) -> bool {
    bytes.windows(marker.len()).any(|w| w == marker.as_bytes())
}

/// After 100 deliveries with a marker in the body and one in a header, no file of the relay's
/// data dir holds either (the WAL included); what it keeps opens with `age -d` and this
/// laptop's key, and reads as the request.
#[test]
fn the_relay_keeps_nothing_it_can_read() {
    keeps_nothing_readable(&Store::Sqlite);
}

/// The same on JetStream: no file of the NATS server's store holds a marker.
#[test]
fn the_relay_keeps_nothing_it_can_read_on_jetstream() {
    if let Some(store) = Store::jetstream() {
        keeps_nothing_readable(&store);
    }
}

fn keeps_nothing_readable(store: &Store) {
    let Team {
        relay_dir,
        laptop,
        key,
        token,
    } = team_on(store);
    let relay = store.relay(relay_dir.path(), &[]);
    let (in_body, in_header) = ("BODYMARKER-7f3a91", "HEADERMARKER-9c1e55");
    let requests = (0..100)
        .map(|n| {
            let headers = vec![("x-marker".to_string(), in_header.to_string())];
            (headers, format!(r#"{{"n":{n},"secret":"{in_body}"}}"#))
        })
        .collect();
    let statuses = post_all(
        &relay.ingest("team", "/hooks?token=QUERYMARKER-31d"),
        requests,
    );
    assert!(statuses.iter().all(|s| *s == 202));
    // Refusals are logged without the payload, the query or a token: a channel over its 1 MiB
    // quota refuses its second 600 KiB delivery with 429, and says so.
    let out = store.run(
        relay_dir.path(),
        &[
            "relay",
            "channel",
            "add",
            "tiny",
            "--recipient",
            &key,
            "--keep-mib",
            "1",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let big = format!(
        r#"{{"secret":"{in_body}","pad":"{}"}}"#,
        "p".repeat(600 * 1024)
    );
    let url = relay.ingest("tiny", "/hooks?token=QUERYMARKER-31d");
    assert_eq!(post(&url, None, &big).status, 202);
    assert_eq!(post(&url, None, &big).status, 429, "over the quota");
    std::thread::sleep(Duration::from_millis(200));
    let log = relay.log.lock().expect("log").clone();
    assert!(
        log.contains("429") && log.contains("quota"),
        "the refusal is logged: {log}"
    );
    for marker in [in_body, in_header, "QUERYMARKER-31d", "hsr_"] {
        assert!(
            !log.contains(marker),
            "the relay's log holds {marker}: {log}"
        );
    }
    let files = store.files(&relay.data_dir);
    if matches!(store, Store::Sqlite) {
        assert!(
            files.iter().any(|(p, _)| p.ends_with("relay.sqlite-wal")),
            "the WAL is there to look in"
        );
    } else {
        let kept: usize = files.iter().map(|(_, b)| b.len()).sum();
        assert!(
            kept > 100 * 100,
            "the server's store holds the deliveries: {kept} bytes"
        );
    }
    for (path, bytes) in &files {
        for marker in [in_body, in_header, "QUERYMARKER-31d"] {
            assert!(!holds(bytes, marker), "{} holds {marker}", path.display());
        }
    }
    if !common::tool_runs(&["age", "--version"]) {
        return;
    }
    let sealed = relay_events(&relay, "team", &token, 7)
        .pop()
        .expect("seq 7")
        .sealed;
    let file = laptop.path().join("seven.age");
    std::fs::write(&file, sealed).expect("writes");
    let key_file = laptop.path().join("relay-key.txt");
    let out = Command::new("age")
        .arg("-d")
        .arg("-i")
        .arg(&key_file)
        .arg(&file)
        .output()
        .expect("age runs");
    assert!(
        out.status.success(),
        "age -d: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("POST /hooks?token=QUERYMARKER-31d HTTP/1.1\r\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!("x-marker: {in_header}\r\n")),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(r#"{{"n":7,"secret":"{in_body}"}}"#)) || text.contains(in_body),
        "{text}"
    );
}

/// The status and body of a subscribe attempt with `token`.
fn subscribe_with(relay: &Relay, channel: &str, token: Option<&str>) -> (u16, String) {
    let runtime = runtime(0);
    runtime.block_on(async {
        let mut request = common::http_client().get(relay.subscribe(channel));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("answers");
        let status = response.status().as_u16();
        if status != 200 {
            return (status, response.text().await.unwrap_or_default());
        }
        // The stream: its first event (the hello), then whatever came in 300 ms.
        let mut response = response;
        let mut text = String::new();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(300);
        while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, response.chunk()).await {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        (status, text)
    })
}

/// No token, a wrong one, another channel's and a rotated-away one each get 401 and no
/// delivery; the new token works; an unknown channel's ingest is 404.
#[test]
fn only_the_channels_current_token_subscribes() {
    current_token_only(&Store::Sqlite);
}

/// The same on JetStream.
#[test]
fn only_the_channels_current_token_subscribes_on_jetstream() {
    if let Some(store) = Store::jetstream() {
        current_token_only(&store);
    }
}

fn current_token_only(store: &Store) {
    let (relay_dir, laptop) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let key = relay_key(laptop.path());
    let team = add_channel_on(store, relay_dir.path(), "team", &[&key]);
    let other = add_channel_on(store, relay_dir.path(), "other", &[&key]);
    let relay = store.relay(relay_dir.path(), &[]);
    assert_eq!(post(&relay.ingest("team", "/x"), None, "{}").status, 202);
    let (status, stream) = subscribe_with(&relay, "team", Some(&team));
    assert_eq!(status, 200);
    assert!(stream.contains("event: delivery"), "{stream}");
    let out = store.run(
        relay_dir.path(),
        &["relay", "channel", "rotate", "team", "--json"],
    );
    assert!(out.status.success());
    let rotated: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let new_token = rotated["token"].as_str().expect("token");
    assert_ne!(new_token, team);
    for (token, what) in [
        (None, "no token"),
        (Some("hsr_wrong"), "a wrong token"),
        (Some(other.as_str()), "another channel's token"),
        (Some(team.as_str()), "a rotated-away token"),
    ] {
        let (status, body) = subscribe_with(&relay, "team", token);
        assert_eq!(status, 401, "{what}");
        assert!(
            !body.contains("delivery") && !body.contains("team"),
            "{what}: {body}"
        );
    }
    let (status, stream) = subscribe_with(&relay, "team", Some(new_token));
    assert_eq!(status, 200);
    assert!(stream.contains("event: delivery"), "{stream}");
    assert_eq!(post(&relay.ingest("nope", "/x"), None, "{}").status, 404);
}

/// A 25 MiB body reaches the laptop byte-exact (the same SHA-256 on both sides); one byte more
/// is refused with 413.
#[test]
fn a_body_at_the_limit_is_relayed_byte_exact_and_one_byte_more_is_refused() {
    body_at_the_limit(&Store::Sqlite);
}

/// The same on JetStream (its servers take 32 MiB messages).
#[test]
fn a_body_at_the_limit_is_relayed_byte_exact_and_one_byte_more_is_refused_on_jetstream() {
    if let Some(store) = Store::jetstream() {
        body_at_the_limit(&store);
    }
}

fn body_at_the_limit(store: &Store) {
    use sha2::Digest as _;
    let Team {
        relay_dir,
        laptop,
        key: _,
        token,
    } = team_on(store);
    let relay = store.relay(relay_dir.path(), &[]);
    let limit = 25 * 1024 * 1024;
    let body: Vec<u8> = (0..limit).map(|i| (i * 7 % 251) as u8).collect();
    let sent = sha2::Sha256::digest(&body);
    let runtime = runtime(0);
    let client = common::http_client();
    let status = |body: Vec<u8>| {
        runtime.block_on(async {
            let response = client
                .post(relay.ingest("team", "/big"))
                .body(body)
                .send()
                .await
                .expect("answers");
            response.status().as_u16()
        })
    };
    let mut over = body.clone();
    over.push(0);
    assert_eq!(status(over), 413, "one byte over");
    assert_eq!(status(body), 202);
    let _listener = listen_relayed(laptop.path(), &relay, "team", &token, &[]);
    assert_eq!(wait_for(laptop.path(), 1, Duration::from_secs(60)).len(), 1);
    let conn = rusqlite::Connection::open(laptop.path().join("hookscope.sqlite")).expect("opens");
    let (stored, complete): (Vec<u8>, bool) = conn
        .query_row("SELECT body, body_complete FROM deliveries", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("row");
    assert!(complete);
    assert_eq!(sha2::Sha256::digest(&stored), sent, "byte-exact");
}

/// A delivery sealed to another laptop's key is counted and said once, never stored as an
/// empty delivery; the cursor passes it, and once this laptop's key is added to the channel the
/// next delivery is stored.
#[test]
fn a_delivery_sealed_to_another_key_is_said_once_and_passed() {
    let (relay_dir, laptop, elsewhere) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let key = relay_key(laptop.path());
    let other_key = relay_key(elsewhere.path());
    let token = add_channel(relay_dir.path(), "team", &[&other_key]);
    let relay = Relay::start(relay_dir.path(), &[]);
    for _ in 0..3 {
        assert_eq!(post(&relay.ingest("team", "/x"), None, "{}").status, 202);
    }
    let (mut listen, stderr_file) = listen_logged(laptop.path(), &relay, &token);
    let cursor = || -> i64 {
        rusqlite::Connection::open(laptop.path().join("hookscope.sqlite"))
            .ok()
            .and_then(|c| {
                c.query_row("SELECT seq FROM relay_cursors", [], |r| r.get(0))
                    .ok()
            })
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while cursor() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(cursor(), 3, "passed");
    assert_eq!(stored(laptop.path()).len(), 0, "nothing stored");
    let out = common::run(
        relay_dir.path(),
        &["relay", "channel", "add-recipient", "team", &key],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The relay reads the change within its next second.
    std::thread::sleep(Duration::from_millis(1500));
    post(&relay.ingest("team", "/y"), None, "{}");
    let rows = wait_for(laptop.path(), 1, Duration::from_secs(20));
    assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), [4]);
    let _ = listen.kill();
    let _ = listen.wait();
    let said = std::fs::read_to_string(&stderr_file).expect("stderr");
    let sentences = said.matches("cannot be opened").count();
    assert_eq!(sentences, 1, "said once: {said}");
    assert!(said.contains("add-recipient"), "{said}");
}

/// Posts `count` small deliveries, 16 at a time, until done or `stop` says so; answers the
/// relay's sequence numbers of those acknowledged 2xx.
fn post_until(url: &str, count: usize, stop: &std::sync::atomic::AtomicBool) -> Vec<u64> {
    let runtime = runtime(2);
    runtime.block_on(async {
        let client = common::http_client();
        let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(16));
        let mut tasks = Vec::new();
        for n in 0..count {
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            let permit = std::sync::Arc::clone(&semaphore)
                .acquire_owned()
                .await
                .expect("permit");
            let (client, url) = (client.clone(), url.to_string());
            tasks.push(tokio::spawn(async move {
                let _permit = permit;
                let response = client
                    .post(&url)
                    .body(format!(r#"{{"n":{n}}}"#))
                    .send()
                    .await
                    .ok()?;
                if !response.status().is_success() {
                    return None;
                }
                let body: serde_json::Value =
                    serde_json::from_str(&response.text().await.ok()?).ok()?;
                body["seq"].as_u64()
            }));
        }
        let mut acked = Vec::new();
        for task in tasks {
            if let Ok(Some(seq)) = task.await {
                acked.push(seq);
            }
        }
        acked
    })
}

/// The relay killed with SIGKILL while providers post: every delivery a provider got a 2xx
/// for reaches the laptop once the relay is back.
#[test]
fn what_the_relay_acknowledged_survives_its_sigkill() {
    let Team {
        relay_dir,
        laptop,
        key: _,
        token,
    } = team();
    let mut relay = Relay::start(relay_dir.path(), &[]);
    let port = relay.base.rsplit(':').next().expect("port").to_string();
    let url = relay.ingest("team", "/load");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poster = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::Builder::new()
            .name("test-poster".into())
            .spawn(move || post_until(&url, 100_000, &stop))
            .expect("spawns")
    };
    std::thread::sleep(Duration::from_millis(1500));
    let _ = relay.child.kill();
    let _ = relay.child.wait();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let acked = poster.join().expect("poster");
    assert!(
        acked.len() > 50,
        "the load ran: {} acknowledged",
        acked.len()
    );
    let relay = Relay::start(relay_dir.path(), &["--port", &port]);
    let _listener = listen_relayed(laptop.path(), &relay, "team", &token, &[]);
    let most = *acked.iter().max().expect("some") as usize;
    let rows = wait_for(laptop.path(), most, Duration::from_secs(60));
    let stored: std::collections::HashSet<i64> = rows.iter().map(|r| r.0).collect();
    let lost: Vec<&u64> = acked
        .iter()
        .filter(|s| !stored.contains(&(**s as i64)))
        .collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged deliveries lost, first {:?}",
        lost.len(),
        lost.first()
    );
}

/// `listen` killed with SIGKILL while it catches up: after a restart every delivery is stored
/// once, in sequence order.
#[test]
fn a_catch_up_killed_midway_loses_and_repeats_nothing() {
    let Team {
        relay_dir,
        laptop,
        key: _,
        token,
    } = team();
    let relay = Relay::start(relay_dir.path(), &[]);
    let requests = (0..3000)
        .map(|n| (vec![], format!(r#"{{"n":{n}}}"#)))
        .collect();
    assert!(
        post_all(&relay.ingest("team", "/x"), requests)
            .iter()
            .all(|s| *s == 202)
    );
    let listener = listen_relayed(laptop.path(), &relay, "team", &token, &[]);
    let partial = wait_for(laptop.path(), 200, Duration::from_secs(30)).len();
    drop(listener); // SIGKILL
    assert!(
        partial > 0 && partial < 3000,
        "killed midway: {partial} stored"
    );
    let _listener = listen_relayed(laptop.path(), &relay, "team", &token, &[]);
    let rows = wait_for(laptop.path(), 3000, Duration::from_secs(60));
    assert_eq!(rows.len(), 3000);
    let out_of_order = rows.iter().zip(1..).find(|(row, n)| row.0 != *n);
    assert_eq!(out_of_order, None, "no loss, no repeat");
}

/// 500 connections trickle their headers a byte a second (from 20 loopback addresses, 25
/// each) while 100 ordinary deliveries are posted: each is acknowledged within 1 s, and the
/// relay closes the slow ones once their headers are late.
#[test]
fn slow_clients_hold_nothing_up() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let Team {
        relay_dir,
        laptop: _laptop,
        key: _,
        token: _,
    } = team();
    let relay = Relay::start(relay_dir.path(), &[]);
    let addr: std::net::SocketAddr = relay
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    let runtime = runtime(2);
    runtime.block_on(async {
        let mut slow = Vec::new();
        for n in 0..500u32 {
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            let source = std::net::Ipv4Addr::new(127, 0, 1, 1 + (n % 20) as u8);
            socket
                .bind((source, 0).into())
                .expect("bind a loopback source");
            let mut stream = socket.connect(addr).await.expect("connects");
            stream
                .write_all(b"POST /in/team/slow HTTP/1.1\r\nHost: x\r\n")
                .await
                .expect("writes");
            slow.push(tokio::spawn(async move {
                // A header byte a second, until the relay closes the connection.
                let started = std::time::Instant::now();
                let mut buf = [0u8; 256];
                loop {
                    if stream.write_all(b"x").await.is_err() {
                        return started.elapsed();
                    }
                    let read = tokio::time::timeout(Duration::from_secs(1), stream.read(&mut buf));
                    if let Ok(Ok(0) | Err(_)) = read.await {
                        return started.elapsed();
                    }
                    if started.elapsed() > Duration::from_secs(60) {
                        return started.elapsed();
                    }
                }
            }));
        }
        let client = common::http_client();
        let mut slowest = Duration::ZERO;
        for n in 0..100 {
            let started = std::time::Instant::now();
            let response = client
                .post(relay.ingest("team", "/normal"))
                .body(format!(r#"{{"n":{n}}}"#))
                .send()
                .await
                .expect("answers");
            assert_eq!(response.status().as_u16(), 202);
            slowest = slowest.max(started.elapsed());
        }
        assert!(
            slowest < Duration::from_secs(1),
            "an ordinary delivery waited {slowest:?}"
        );
        for task in slow {
            let held = task.await.expect("joins");
            assert!(
                held < Duration::from_secs(20),
                "a slow client held its connection {held:?}"
            );
        }
    });
}

/// A connection that stops carrying bytes (the relay paused with SIGSTOP) is noticed within
/// 45 s; after SIGCONT the laptop reconnects by itself and takes what came.
#[cfg(unix)]
#[test]
fn a_dead_connection_is_noticed_and_the_stream_resumes() {
    let Team {
        relay_dir,
        laptop,
        key: _,
        token,
    } = team();
    let relay = Relay::start(relay_dir.path(), &[]);
    let (mut listen, stderr_file) = listen_logged(laptop.path(), &relay, &token);
    wait_until_live(&relay);
    let said = || std::fs::read_to_string(&stderr_file).unwrap_or_default();
    let signal = |name: &str| {
        let ok = Command::new("kill")
            .args([name, &relay.child.id().to_string()])
            .status()
            .expect("kill runs")
            .success();
        assert!(ok, "kill {name}");
    };
    signal("-STOP");
    let stopped = Instant::now();
    while !said().contains("the connection is dead") && stopped.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(250));
    }
    let noticed = stopped.elapsed();
    signal("-CONT");
    assert!(
        said().contains("the connection is dead"),
        "never noticed: {}",
        said()
    );
    assert!(
        noticed <= Duration::from_secs(47),
        "noticed after {noticed:?}"
    );
    let before = stored(laptop.path()).len();
    assert_eq!(
        post(&relay.ingest("team", "/after"), None, "{}").status / 100,
        2
    );
    let rows = wait_for(laptop.path(), before + 1, Duration::from_secs(60));
    assert_eq!(rows.len(), before + 1, "resumed after SIGCONT: {}", said());
    let _ = listen.kill();
    let _ = listen.wait();
}

/// A channel removed and made again under the same name (the same URL) is another channel: the
/// laptop's cursor starts over and its first delivery is stored, not skipped as a repeat.
#[test]
fn a_channel_made_anew_starts_the_cursor_over() {
    made_anew(&Store::Sqlite);
}

/// The same on JetStream: the new channel's stream is its own, its sequence numbers start
/// over, and nothing of the old one is read again.
#[test]
fn a_channel_made_anew_starts_the_cursor_over_on_jetstream() {
    if let Some(store) = Store::jetstream() {
        made_anew(&store);
    }
}

fn made_anew(store: &Store) {
    let Team {
        relay_dir,
        laptop,
        key,
        token,
    } = team_on(store);
    let relay = store.relay(relay_dir.path(), &[]);
    for _ in 0..2 {
        assert_eq!(post(&relay.ingest("team", "/old"), None, "{}").status, 202);
    }
    let listener = listen_relayed(laptop.path(), &relay, "team", &token, &[]);
    assert_eq!(wait_for(laptop.path(), 2, Duration::from_secs(20)).len(), 2);
    drop(listener);
    let out = store.run(relay_dir.path(), &["relay", "channel", "remove", "team"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = add_channel_on(store, relay_dir.path(), "team", &[&key]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(post(&relay.ingest("team", "/new"), None, "{}").status, 202);
    let _listener = listen_relayed(laptop.path(), &relay, "team", &token, &[]);
    let rows = wait_for(laptop.path(), 3, Duration::from_secs(20));
    assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2, 1]);
}

/// `--tls-cert` and `--tls-key`: the relay serves https with its own certificate; a provider
/// posts over TLS and a subscriber that trusts the certificate gets the stream.
#[test]
fn the_relay_serves_https_with_its_own_certificate() {
    let Team {
        relay_dir,
        laptop: _laptop,
        key: _,
        token,
    } = team();
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).expect("certificate");
    let (cert, private) = (
        relay_dir.path().join("cert.pem"),
        relay_dir.path().join("key.pem"),
    );
    std::fs::write(&cert, certified.cert.pem()).expect("cert");
    std::fs::write(&private, certified.signing_key.serialize_pem()).expect("key");
    let relay = Relay::start(
        relay_dir.path(),
        &[
            "--tls-cert",
            &cert.display().to_string(),
            "--tls-key",
            &private.display().to_string(),
        ],
    );
    assert!(relay.base.starts_with("https://"), "{}", relay.base);
    hookscope::net::client::install_tls_provider();
    let client = reqwest::Client::builder()
        .add_root_certificate(
            reqwest::Certificate::from_pem(certified.cert.pem().as_bytes()).expect("pem"),
        )
        .build()
        .expect("client");
    let runtime = runtime(0);
    runtime.block_on(async {
        let posted = client
            .post(relay.ingest("team", "/tls"))
            .body("{}")
            .send()
            .await
            .expect("https");
        assert_eq!(posted.status().as_u16(), 202);
        let mut stream = client
            .get(relay.subscribe("team"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("https");
        assert_eq!(stream.status().as_u16(), 200);
        let mut text = String::new();
        while !text.contains("event: delivery") {
            let chunk = tokio::time::timeout(Duration::from_secs(5), stream.chunk())
                .await
                .expect("in time")
                .expect("reads")
                .expect("a chunk");
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
    });
}

/// `--offline-answer retry`: with no laptop the provider gets 503 with Retry-After, and the
/// delivery is kept all the same.
#[test]
fn the_retry_offline_answer_asks_for_a_retry_and_keeps_the_delivery() {
    let Team {
        relay_dir,
        laptop,
        key: _,
        token,
    } = team();
    let relay = Relay::start(relay_dir.path(), &["--offline-answer", "retry"]);
    let runtime = runtime(0);
    let (status, retry_after) = runtime.block_on(async {
        let response = common::http_client()
            .post(relay.ingest("team", "/later"))
            .body("{}")
            .send()
            .await
            .expect("answers");
        let retry = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().expect("text").to_string());
        (response.status().as_u16(), retry)
    });
    assert_eq!((status, retry_after.as_deref()), (503, Some("60")));
    let _listener = listen_relayed(laptop.path(), &relay, "team", &token, &[]);
    assert_eq!(
        wait_for(laptop.path(), 1, Duration::from_secs(20)).len(),
        1,
        "kept, and taken"
    );
}

/// A team: two laptops subscribed to one channel (sealed to both keys) each store every
/// delivery; the provider gets one answer.
#[test]
fn every_subscriber_of_a_channel_gets_every_delivery() {
    let relay_dir = tempfile::tempdir().expect("dir");
    let (a, b) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let (key_a, key_b) = (relay_key(a.path()), relay_key(b.path()));
    let token = add_channel(relay_dir.path(), "team", &[&key_a, &key_b]);
    let relay = Relay::start(relay_dir.path(), &[]);
    let _first = listen_relayed(a.path(), &relay, "team", &token, &[]);
    let _second = listen_relayed(b.path(), &relay, "team", &token, &[]);
    let probes = wait_until_live(&relay);
    // Both caught up: each probe after the first live one is answered by one of them.
    std::thread::sleep(Duration::from_millis(500));
    for n in 0..5 {
        let answered = post(
            &relay.ingest("team", "/both"),
            None,
            &format!(r#"{{"n":{n}}}"#),
        );
        assert_eq!(answered.status, 200, "a laptop's answer");
    }
    let total = probes + 5;
    assert_eq!(
        wait_for(a.path(), total, Duration::from_secs(20)).len(),
        total
    );
    assert_eq!(
        wait_for(b.path(), total, Duration::from_secs(20)).len(),
        total
    );
}
