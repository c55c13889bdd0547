//! The relay for a team: relay instances over a real 3-node NATS JetStream cluster, with
//! servers and instances killed by SIGKILL while providers post.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::nats::{self, Balancer, Nats};
use super::{Relay, Store, Team, common, post, runtime, team_on, wait_until_live};

/// A child process killed when dropped (a failed assertion leaves none behind).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `listen --relay URL` over `laptop`, its stdout dropped and its stderr in `listen.err`.
fn listen_through(laptop: &Path, url: &str, token: &str) -> Killed {
    let token_file = laptop.join("token");
    std::fs::write(&token_file, token).expect("token");
    let child = Command::new(common::bin())
        .args([
            "listen",
            "--port",
            "0",
            "--relay",
            url,
            "--relay-token-file",
        ])
        .arg(&token_file)
        .env("HOOKSCOPE_DATA_DIR", laptop)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(laptop.join("listen.err")).expect("file"))
        .spawn()
        .expect("listen");
    Killed(child)
}

/// What the laptop stored: (relay seq, the delivery's number from its body), in store order.
fn stored_numbers(laptop: &Path) -> Vec<(i64, u64)> {
    let conn = rusqlite::Connection::open(laptop.join("hookscope.sqlite")).expect("opens");
    let mut stmt = conn
        .prepare("SELECT relay_seq, body FROM deliveries ORDER BY id")
        .expect("prepares");
    stmt.query_map([], |r| {
        let body: Vec<u8> = r.get(1)?;
        let n = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["n"].as_u64())
            .unwrap_or(u64::MAX);
        Ok((r.get::<_, Option<i64>>(0)?.unwrap_or(-1), n))
    })
    .expect("queries")
    .collect::<Result<_, _>>()
    .expect("rows")
}

/// One delivery's fate at the provider: its attempts, and whether one got a 2xx.
#[derive(Default, Clone)]
struct Fate {
    attempts: u32,
    acknowledged: bool,
}

/// What the providers saw: each delivery's fate, and when each non-2xx answer came (ms since
/// the load began, and the status; 0 for no answer).
struct Load {
    fates: Vec<Fate>,
    refusals: Vec<(u128, u16)>,
}

/// Posts `count` deliveries, numbered in their bodies, 32 at a time, alternating between the
/// instances; a delivery not acknowledged with a 2xx is retried on the other instance (as a
/// provider retries), for up to two minutes. `progress` counts the acknowledged ones.
fn provide(instances: [String; 2], count: usize, progress: Arc<AtomicUsize>) -> Load {
    runtime(2).block_on(async move {
        let client = common::http_client();
        let started = Instant::now();
        let refusals = Arc::new(std::sync::Mutex::new(Vec::new()));
        let semaphore = Arc::new(tokio::sync::Semaphore::new(32));
        let mut tasks = Vec::new();
        for n in 0..count {
            let permit = Arc::clone(&semaphore)
                .acquire_owned()
                .await
                .expect("permit");
            let (client, instances) = (client.clone(), instances.clone());
            let (progress, refusals) = (Arc::clone(&progress), Arc::clone(&refusals));
            tasks.push(tokio::spawn(async move {
                let _permit = permit;
                let mut fate = Fate::default();
                let body = format!(r#"{{"type":"job.completed","n":{n}}}"#);
                while started.elapsed() < Duration::from_secs(120) {
                    let instance = &instances[(n + fate.attempts as usize) % 2];
                    fate.attempts += 1;
                    let status = client
                        .post(format!("{instance}/in/team/hooks"))
                        .header("content-type", "application/json")
                        .timeout(Duration::from_secs(15))
                        .body(body.clone())
                        .send()
                        .await
                        .map_or(0, |r| r.status().as_u16());
                    if (200..300).contains(&status) {
                        fate.acknowledged = true;
                        progress.fetch_add(1, Ordering::SeqCst);
                        break;
                    }
                    let at = started.elapsed().as_millis();
                    refusals.lock().expect("refusals").push((at, status));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                fate
            }));
        }
        let mut fates = Vec::new();
        for task in tasks {
            fates.push(task.await.expect("joins"));
        }
        let refusals = refusals.lock().expect("refusals").clone();
        Load { fates, refusals }
    })
}

fn wait_until(progress: &AtomicUsize, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while progress.load(Ordering::SeqCst) < n {
        assert!(Instant::now() < deadline, "the load stalled before {n}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 20,000 deliveries reach two relay instances on a 3-node cluster, alternating, while the
/// node leading the channel's stream is killed with SIGKILL (and later restarted) and one
/// instance is killed and restarted. Every delivery a provider got a 2xx for is on the laptop
/// exactly once (a copy more only for a delivery whose earlier attempt was refused yet kept),
/// in stream order; the laptop, behind a balancer, moved to the surviving instance by itself.
#[test]
fn a_team_relay_keeps_every_acknowledged_delivery_through_a_node_and_an_instance_killed() {
    if !nats::available() {
        return;
    }
    let _turn = super::heavy();
    const COUNT: usize = 20_000;
    let mut nats_cluster = Nats::start(3);
    let url = nats_cluster.url();
    let store = Store::JetStream(Nats::attach(&url));
    let Team {
        relay_dir,
        laptop,
        key: _,
        token,
    } = team_on(&store);
    let second_dir = tempfile::tempdir().expect("dir");
    let ports = [nats::free_port(), nats::free_port()];
    let (port_a, port_b) = (ports[0].to_string(), ports[1].to_string());
    let mut a = Some(store.relay(relay_dir.path(), &["--port", &port_a]));
    let _b = store.relay(second_dir.path(), &["--port", &port_b]);
    let addrs: Vec<SocketAddr> = ports
        .iter()
        .map(|p| SocketAddr::from(([127, 0, 0, 1], *p)))
        .collect();
    let balancer = Balancer::start(addrs);
    let listen = listen_through(
        laptop.path(),
        &format!("http://{}/sub/team", balancer.addr),
        &token,
    );
    let progress = Arc::new(AtomicUsize::new(0));
    let instances = [
        format!("http://127.0.0.1:{port_a}"),
        format!("http://127.0.0.1:{port_b}"),
    ];
    let load = {
        let progress = Arc::clone(&progress);
        std::thread::Builder::new()
            .name("test-providers".into())
            .spawn(move || provide(instances, COUNT, progress))
            .expect("spawns")
    };
    wait_until(&progress, 4_000);
    let leader = nats_cluster.leader_of(&nats_cluster.stream_named("hookscope-relay-team-"));
    let killed = nats_cluster.index_of(&leader);
    nats_cluster.kill(killed);
    eprintln!(
        "killed the stream's leader {leader} at {}",
        progress.load(Ordering::SeqCst)
    );
    wait_until(&progress, 9_000);
    drop(a.take());
    eprintln!("killed instance A at {}", progress.load(Ordering::SeqCst));
    // While A is down the laptop can only be on B: its store must grow (it moved by itself,
    // through the balancer) before A comes back.
    let (before, since) = (stored_numbers(laptop.path()).len(), Instant::now());
    while stored_numbers(laptop.path()).len() < before + 500 {
        assert!(
            since.elapsed() < Duration::from_secs(60),
            "the laptop did not move to B"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "the laptop took 500 more through B in {:?}",
        since.elapsed()
    );
    a = Some(store.relay(relay_dir.path(), &["--port", &port_a]));
    wait_until(&progress, 13_000);
    nats_cluster.restart(killed);
    eprintln!("restarted {leader} at {}", progress.load(Ordering::SeqCst));
    let load = load.join().expect("the load");
    let acknowledged = load.fates.iter().filter(|f| f.acknowledged).count();
    eprintln!(
        "{acknowledged} of {COUNT} acknowledged; {} refusals: {:?}",
        load.refusals.len(),
        refusals_by_second(&load.refusals)
    );
    assert_eq!(acknowledged, COUNT, "every delivery was taken in the end");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut rows = Vec::new();
    while Instant::now() < deadline {
        rows = stored_numbers(laptop.path());
        let distinct: std::collections::HashSet<u64> = rows.iter().map(|(_, n)| *n).collect();
        if distinct.len() >= COUNT {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    drop(listen);
    let said = std::fs::read_to_string(laptop.path().join("listen.err")).unwrap_or_default();
    let mut copies: HashMap<u64, u32> = HashMap::new();
    for (_, n) in &rows {
        *copies.entry(*n).or_default() += 1;
    }
    for (n, fate) in load.fates.iter().enumerate() {
        let held = copies.get(&(n as u64)).copied().unwrap_or(0);
        assert!(
            held >= 1,
            "delivery {n} was acknowledged but is not on the laptop: {said}"
        );
        assert!(
            held <= fate.attempts,
            "delivery {n} is there {held} times, sent {} times",
            fate.attempts
        );
        if fate.attempts == 1 {
            assert_eq!(held, 1, "delivery {n}, sent once, is there once");
        }
    }
    assert!(
        rows.windows(2).all(|w| w[0].0 < w[1].0),
        "stored in stream order, none twice"
    );
    drop(a);
}

/// Non-2xx answers by second of the load: (second, count).
fn refusals_by_second(refusals: &[(u128, u16)]) -> Vec<(u128, usize)> {
    let mut by: std::collections::BTreeMap<u128, usize> = Default::default();
    for (at, _) in refusals {
        *by.entry(at / 1000).or_default() += 1;
    }
    by.into_iter().collect()
}

/// Slack's challenge posted to instance A is answered by a laptop subscribed on instance B.
#[test]
fn a_challenge_sent_to_one_instance_is_answered_by_a_laptop_on_another() {
    if !nats::available() {
        return;
    }
    let store = Store::JetStream(Nats::start(3));
    let Team {
        relay_dir,
        laptop,
        key: _,
        token,
    } = team_on(&store);
    let second_dir = tempfile::tempdir().expect("dir");
    let a = store.relay(relay_dir.path(), &[]);
    let b = store.relay(second_dir.path(), &[]);
    let _listener = super::listen_relayed(laptop.path(), &b, "team", &token, &[]);
    wait_until_live(&a);
    let challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P";
    let slack = post(
        &a.ingest("team", "/slack"),
        None,
        &format!(r#"{{"token":"t","challenge":"{challenge}","type":"url_verification"}}"#),
    );
    assert_eq!((slack.status, slack.body.as_str()), (200, challenge));
}

/// With two of three servers down, ingest answers 503 with Retry-After (never a 2xx it could
/// not keep), and takes deliveries again by itself once a server returns.
#[test]
fn without_a_quorum_ingest_refuses_and_resumes_by_itself() {
    if !nats::available() {
        return;
    }
    let mut nats_cluster = Nats::start(3);
    let store = Store::JetStream(Nats::attach(&nats_cluster.url()));
    let Team {
        relay_dir,
        laptop: _,
        key: _,
        token,
    } = team_on(&store);
    let relay: Relay = store.relay(relay_dir.path(), &[]);
    let first = post(&relay.ingest("team", "/x"), None, r#"{"n":0}"#);
    assert_eq!(first.status, 202);
    nats_cluster.kill(1);
    nats_cluster.kill(2);
    let runtime = runtime(0);
    let client = common::http_client();
    for n in 1..=2 {
        let (status, retry_after) = runtime.block_on(async {
            let response = client
                .post(relay.ingest("team", "/x"))
                .body(format!(r#"{{"n":{n}}}"#))
                .send()
                .await
                .expect("the relay answers");
            let retry = response.headers().get("retry-after").cloned();
            (response.status().as_u16(), retry)
        });
        assert_eq!(status, 503, "no quorum: refused");
        assert!(retry_after.is_some(), "with Retry-After");
    }
    nats_cluster.restart(1);
    let started = Instant::now();
    let taken = loop {
        let answer = post(&relay.ingest("team", "/x"), None, r#"{"n":3}"#);
        if answer.status == 202 {
            break answer;
        }
        assert_eq!(answer.status, 503, "{}", answer.body);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "ingest never resumed"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!(
        "ingest resumed {:?} after a server came back",
        started.elapsed()
    );
    let seq: serde_json::Value = serde_json::from_str(&taken.body).expect("JSON");
    let seq = seq["seq"].as_i64().expect("seq");
    // Sequence numbers are dense: every one up to the delivery taken is there to read.
    let events = super::relay_events(&relay, "team", &token, seq as usize);
    assert_eq!(
        events.last().map(|e| e.seq),
        Some(seq),
        "the delivery taken is kept"
    );
}

/// A channel's stream found with other settings than the channel's (edited by hand) is said
/// once on stderr and left as it is.
#[test]
fn a_stream_with_other_settings_is_said_and_left_alone() {
    if !nats::available() {
        return;
    }
    let store = Store::JetStream(Nats::start(1));
    let Team { relay_dir, .. } = team_on(&store);
    let Store::JetStream(nats) = &store else {
        unreachable!("made above")
    };
    let edited = Duration::from_secs(3600);
    let name = nats.stream_named("hookscope-relay-team-");
    let stream_config = || {
        nats.with_js(async |js| {
            let mut stream = js.get_stream(&name).await.expect("stream");
            stream.info().await.expect("info").config.clone()
        })
    };
    let mut config = stream_config();
    assert_eq!(
        config.max_age,
        Duration::from_secs(7 * 86_400),
        "the channel's retention"
    );
    config.max_age = edited;
    nats.with_js(async |js| js.update_stream(config).await.expect("edited by hand"));
    let relay = store.relay(relay_dir.path(), &[]);
    assert_eq!(post(&relay.ingest("team", "/x"), None, "{}").status, 202);
    let log = relay.log.lock().expect("log").clone();
    assert!(
        log.contains(&format!(
            "{name} exists with other settings (max_age 3600 s, not 604800 s)"
        )),
        "{log}"
    );
    assert_eq!(stream_config().max_age, edited, "left as it is");
}
