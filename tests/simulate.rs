//! The provider simulator against handlers and clients written for these tests: the scorecard
//! fails exactly the wrong ones. Idempotency in both styles, every status path and the in-flight
//! race; chaos with a fixed seed; every attempt in the store.

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use axum::http::StatusCode;
use common::handler::{Flavour, SECRET, Server, serve};
use common::run;
use serde_json::{Value, json};

/// `hookscope simulate --until-done --json ARGS…` against `server`: exit code and scorecard.
fn simulate(dir: &Path, server: &Server, args: &[&str]) -> (i32, Value) {
    let target = format!("http://{}/webhooks", server.addr);
    let mut all = vec![
        "simulate",
        "--target",
        &target,
        "--secret",
        SECRET,
        "--until-done",
        "--json",
    ];
    all.extend_from_slice(args);
    let out = run(dir, &all);
    (out.status.code().unwrap_or(-1), scorecard(&out))
}

fn scorecard(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no scorecard ({e}): {} / {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The names of the failed checks.
fn failed(card: &Value) -> Vec<String> {
    card["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect()
}

fn check<'a>(card: &'a Value, name: &str) -> &'a Value {
    card["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no {name} in {card}"))
}

#[test]
fn a_correct_handler_passes_and_each_wrong_one_fails_its_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chaos = [
        "--time-scale",
        "3600",
        "--jobs",
        "8",
        "--duplicate-rate",
        "0.5",
        "--reorder-rate",
        "0.5",
        "--late-retry-rate",
        "0.5",
        "--seed",
        "3",
    ];
    let good = serve(Flavour::Correct, StatusCode::OK);
    let (code, card) = simulate(dir.path(), &good, &chaos);
    assert_eq!(failed(&card), Vec::<String>::new(), "{card}");
    assert_eq!(code, 0);
    assert_eq!(
        check(&card, "duplicates_acknowledged")["status"],
        "pass",
        "{card}"
    );
    assert_eq!(
        check(&card, "refuses_forgeries")["status"],
        "pass",
        "{card}"
    );

    // Deduplicating on the job id: the second event of a job meets 409 forever.
    let by_job = serve(Flavour::DedupesOnJobId, StatusCode::OK);
    let (code, card) = simulate(
        dir.path(),
        &by_job,
        &[
            "--jobs",
            "3",
            "--schedule",
            "media",
            "--time-scale",
            "36000",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(failed(&card), ["acknowledged"], "{card}");

    // Work done inline, slower than the timeout.
    let slow = serve(Flavour::WorksInline, StatusCode::OK);
    let (code, card) = simulate(
        dir.path(),
        &slow,
        &[
            "--jobs",
            "1",
            "--timeout-secs",
            "1",
            "--preset",
            "document",
            "--time-scale",
            "360000",
        ],
    );
    assert_eq!(code, 1);
    assert!(failed(&card).contains(&"answer_time".to_string()), "{card}");
    assert!(
        check(&card, "answer_time")["detail"]
            .as_str()
            .unwrap_or("")
            .contains("1000 ms timeout"),
        "{card}"
    );

    // Re-serialising before verifying: every signature fails (the bodies are pretty-printed).
    let reserializes = serve(Flavour::Reserializes, StatusCode::OK);
    let (code, card) = simulate(
        dir.path(),
        &reserializes,
        &["--jobs", "2", "--time-scale", "36000"],
    );
    assert_eq!(code, 1);
    assert!(
        failed(&card).contains(&"acknowledged".to_string()),
        "{card}"
    );
    assert_eq!(
        check(&card, "refuses_forgeries")["status"],
        "pass",
        "it does refuse forgeries"
    );
}

/// A simulate child serving the job API, its address read from stderr.
struct Simulator {
    child: Child,
    api: String,
}

impl Drop for Simulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn simulator(dir: &Path, args: &[&str]) -> Simulator {
    let mut child = Command::new(common::bin())
        .arg("simulate")
        .args(["--secret", SECRET, "--json"])
        .args(args)
        .env("HOOKSCOPE_DATA_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("simulate");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("read");
    let api = line
        .trim()
        .strip_prefix("api on ")
        .unwrap_or_else(|| panic!("no api line: {line}"))
        .to_string();
    Simulator { child, api }
}

/// Stops a simulator serving a client (SIGTERM, as Ctrl+C would) and reads its scorecard.
fn stop(mut sim: Simulator) -> (i32, Value) {
    let pid = sim.child.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    finish_child(&mut sim)
}

fn finish_child(sim: &mut Simulator) -> (i32, Value) {
    let child = std::mem::replace(&mut sim.child, Command::new("true").spawn().expect("true"));
    let out = child.wait_with_output().expect("output");
    (out.status.code().unwrap_or(-1), scorecard(&out))
}

/// A plain HTTP client for the tests' own clients of the job API.
struct Http {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
}

/// An answer: status, `Retry-After` in seconds, JSON body.
type Answer = (u16, Option<u64>, Value);

impl Http {
    fn new(timeout: Duration) -> Http {
        hookscope::net::client::install_tls_provider();
        Http {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            client: reqwest::Client::builder()
                .timeout(timeout)
                .build()
                .expect("client"),
        }
    }

    fn answer(&self, request: reqwest::RequestBuilder) -> Option<Answer> {
        self.rt.block_on(async {
            let r = request.send().await.ok()?;
            let status = r.status().as_u16();
            let retry = r
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok());
            let bytes = r.bytes().await.unwrap_or_default();
            let body = serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null);
            Some((status, retry, body))
        })
    }

    fn submit(&self, api: &str, key: Option<&str>, body: &str) -> Option<Answer> {
        let mut request = self
            .client
            .post(format!("{api}/v1/jobs"))
            .body(body.to_string());
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        self.answer(request)
    }

    fn poll(&self, api: &str, job: &str) -> Option<Answer> {
        self.answer(self.client.get(format!("{api}/v1/jobs/{job}")))
    }
}

#[test]
fn a_client_that_sends_a_fresh_key_per_retry_creates_two_jobs_and_fails() {
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let target = format!("http://{}/webhooks", handler.addr);
    for (fresh_keys, expected) in [(false, "pass"), (true, "fail")] {
        let dir = tempfile::tempdir().expect("tempdir");
        let sim = simulator(
            dir.path(),
            &[
                "--target",
                &target,
                "--time-scale",
                "3600",
                "--submit-delay-ms",
                "400",
            ],
        );
        // The client gives up after 150 ms twice (the submit takes 400 ms), then waits longer.
        let (impatient, patient) = (
            Http::new(Duration::from_millis(150)),
            Http::new(Duration::from_secs(3)),
        );
        let body = json!({"document": "invoice-17.pdf"}).to_string();
        let mut key = "order-17-ocr".to_string();
        let mut created = Vec::new();
        for attempt in 0..6 {
            if fresh_keys {
                key = format!("uuid-{attempt}");
            }
            let client = if attempt < 2 { &impatient } else { &patient };
            match client.submit(&sim.api, Some(&key), &body) {
                Some((202, _, job)) => {
                    created.push(job["job_id"].clone());
                    break;
                }
                _ => std::thread::sleep(Duration::from_millis(300)),
            }
        }
        assert_eq!(created.len(), 1, "the client saw one answer");
        let (_, card) = stop(sim);
        assert_eq!(
            check(&card, "idempotent_submits")["status"],
            expected,
            "fresh keys {fresh_keys}: {card}"
        );
    }
}

#[test]
fn a_client_that_polls_every_100_ms_and_ignores_retry_after_fails() {
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let target = format!("http://{}/webhooks", handler.addr);
    for (gap_ms, honours, expected) in [(100u64, false, "fail"), (600, true, "pass")] {
        let dir = tempfile::tempdir().expect("tempdir");
        let sim = simulator(
            dir.path(),
            &[
                "--target",
                &target,
                "--jobs",
                "0",
                "--rate-limit-gap-ms",
                "1000",
                "--drop-rate",
                "1",
                "--preset",
                "document",
                "--time-scale",
                "10",
            ],
        );
        let client = Http::new(Duration::from_secs(5));
        let (_, _, job) = client.submit(&sim.api, Some("k1"), "{}").expect("submit");
        let id = job["job_id"].as_str().expect("job id").to_string();
        let mut wait = Duration::from_millis(gap_ms);
        for _ in 0..8 {
            std::thread::sleep(wait);
            let (_, asked, _) = client.poll(&sim.api, &id).expect("poll");
            if honours {
                wait = match asked {
                    Some(secs) => Duration::from_secs(secs),
                    None => (wait * 3 / 2).min(Duration::from_secs(2)),
                };
            }
        }
        drop(client);
        let (_, card) = stop(sim);
        assert_eq!(
            check(&card, "polling_backoff")["status"],
            expected,
            "gap {gap_ms} ms: {card}"
        );
        assert_eq!(
            check(&card, "reconciled_dropped")["status"],
            "pass",
            "{card}"
        );
    }
}

#[test]
fn idempotency_keys_answer_every_path_in_both_styles_and_the_in_flight_race_makes_one_job() {
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let target = format!("http://{}/webhooks", handler.addr);
    for (style, missing, reuse, in_flight) in [("draft", 400, 422, 409), ("infro", 400, 400, 400)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let sim = simulator(
            dir.path(),
            &[
                "--target",
                &target,
                "--idempotency-style",
                style,
                "--key-required",
                "--submit-delay-ms",
                "300",
            ],
        );
        let client = Http::new(Duration::from_secs(5));
        let code = |a: &Option<Answer>| {
            a.as_ref()
                .map(|(s, _, b)| (*s, b["error"]["code"].as_str().unwrap_or("").to_string()))
        };
        // Missing key.
        let answer = client.submit(&sim.api, None, "{}");
        assert_eq!(
            code(&answer),
            Some((missing, "idempotency_key_missing".into())),
            "{style}"
        );
        // The in-flight race: 8 at once with one key make one job; the others meet in_progress.
        let answers: Vec<Option<Answer>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let api = sim.api.clone();
                    scope.spawn(move || {
                        Http::new(Duration::from_secs(5)).submit(
                            &api,
                            Some("race-1"),
                            "{\"doc\":1}",
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        let created: Vec<&Answer> = answers
            .iter()
            .flatten()
            .filter(|(s, _, _)| *s == 202)
            .collect();
        assert_eq!(created.len(), 1, "{style}: {answers:?}");
        let busy = answers
            .iter()
            .filter(|a| code(a) == Some((in_flight, "idempotency_key_in_progress".into())))
            .count();
        assert_eq!(busy, 7, "{style}: {answers:?}");
        if style == "infro" {
            let (_, _, body) = answers
                .iter()
                .flatten()
                .find(|(s, _, _)| *s == 400)
                .expect("a refusal");
            assert_eq!(body["error"]["type"], "invalid_request_error");
        }
        // A repeat with the same body replays the first answer: the same job.
        let again = client
            .submit(&sim.api, Some("race-1"), "{\"doc\":1}")
            .expect("replay");
        assert_eq!(again.0, 202);
        assert_eq!(again.2["job_id"], created[0].2["job_id"], "{style}");
        // The same key with another body.
        let answer = client.submit(&sim.api, Some("race-1"), "{\"doc\":2}");
        assert_eq!(
            code(&answer),
            Some((reuse, "idempotency_key_reuse".into())),
            "{style}"
        );
        let _ = stop(sim);
    }
}

#[test]
fn chaos_with_a_fixed_seed_duplicates_reorders_and_drops_as_configured_and_every_attempt_is_stored()
{
    let dir = tempfile::tempdir().expect("tempdir");
    // Every first attempt duplicated, every non-terminal event held back behind the next.
    let recorder = serve(Flavour::Correct, StatusCode::OK);
    let (code, card) = simulate(
        dir.path(),
        &recorder,
        &[
            "--jobs",
            "4",
            "--preset",
            "render",
            "--duplicate-rate",
            "1",
            "--reorder-rate",
            "1",
            "--seed",
            "42",
            "--time-scale",
            "3600",
        ],
    );
    assert_eq!(code, 0, "{card}");
    let received = recorder.handler.received.lock().expect("lock").clone();
    let events: Vec<(String, String)> = received
        .iter()
        .filter_map(|(h, b)| {
            let id = h.get("webhook-id")?.to_str().ok()?.to_string();
            let body: Value = serde_json::from_slice(b).ok()?;
            Some((id, body["data"]["id"].as_str().unwrap_or("").to_string()))
        })
        .collect();
    // 4 jobs × 3 events, each sent twice, plus the tampered and stale probes.
    assert_eq!(received.len(), 4 * 3 * 2 + 2, "{}", received.len());
    let attempts = card["progress"]["attempts"].as_u64().expect("attempts");
    assert_eq!(attempts as usize, received.len());
    // Reordered: every non-terminal event is held until the job's next one was answered, so a
    // later event arrives before an earlier one: terminal, then running, then queued.
    let mut jobs: Vec<String> = events.iter().map(|(_, j)| j.clone()).collect();
    jobs.sort();
    jobs.dedup();
    assert_eq!(jobs.len(), 4);
    for job in &jobs {
        let states: Vec<String> = received
            .iter()
            .filter_map(|(_, b)| serde_json::from_slice::<Value>(b).ok())
            .filter(|v| v["data"]["id"] == job.as_str())
            .map(|v| v["data"]["status"].as_str().unwrap_or("").to_string())
            .collect();
        let running = states.iter().position(|s| s == "running").expect("running");
        let terminal = states
            .iter()
            .position(|s| matches!(s.as_str(), "succeeded" | "failed" | "canceled"))
            .expect("terminal");
        let queued = states.iter().position(|s| s == "queued").expect("queued");
        // Each held event goes once the next one was answered: the chain arrives reversed.
        assert!(terminal < running && running < queued, "{job}: {states:?}");
    }
    // Every attempt is in the store, with its job.
    let reader =
        hookscope::store::Reader::open(&dir.path().join("hookscope.sqlite")).expect("store");
    let stored = reader
        .count_attempts(hookscope::domain::attempt::AttemptKind::Simulate)
        .expect("count");
    assert_eq!(stored as u64, attempts);
    let per_job: Vec<usize> = jobs
        .iter()
        .map(|j| reader.attempts_for_job(j).expect("attempts").len())
        .collect();
    assert_eq!(per_job.iter().sum::<usize>() as u64, attempts);
    // 3 events × 2 copies each; the job of the run's first event also carries the 2 probes.
    assert!(per_job.iter().all(|n| *n == 6 || *n == 8), "{per_job:?}");

    // Everything dropped: nothing is delivered; only the job API knows.
    let dir = tempfile::tempdir().expect("tempdir");
    let quiet = serve(Flavour::Correct, StatusCode::OK);
    let (_, card) = simulate(
        dir.path(),
        &quiet,
        &[
            "--jobs",
            "3",
            "--drop-rate",
            "1",
            "--seed",
            "42",
            "--time-scale",
            "3600",
        ],
    );
    assert!(quiet.handler.received.lock().expect("lock").is_empty());
    assert_eq!(card["progress"]["dropped"], 9, "{card}");
    assert_eq!(
        check(&card, "reconciled_dropped")["status"],
        "fail",
        "nobody asked the API: {card}"
    );

    // The same seed twice: the same duplicates.
    let counts: Vec<usize> = (0..2)
        .map(|_| {
            let dir = tempfile::tempdir().expect("tempdir");
            let h = serve(Flavour::Correct, StatusCode::OK);
            simulate(
                dir.path(),
                &h,
                &[
                    "--jobs",
                    "6",
                    "--duplicate-rate",
                    "0.5",
                    "--seed",
                    "9",
                    "--time-scale",
                    "3600",
                ],
            );
            h.handler.received.lock().expect("lock").len()
        })
        .collect();
    assert_eq!(counts[0], counts[1], "{counts:?}");
}

#[test]
fn a_scenario_file_sets_the_lifecycle_schedule_and_signing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let scenario = dir.path().join("ocr.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"
[lifecycle]
name = "two-step"
steps = [["pending", 60]]
outcomes = [["completed", 1]]
shape = "header-only"
full = false

[delivery]
schedule_secs = [60, 60]
time_scale = 3600
jobs = 2

[signing]
scheme = "standard-webhooks"
secrets = ["{SECRET}"]
"#
        ),
    )
    .expect("scenario");
    let target = format!("http://{}/webhooks", handler.addr);
    let out = run(
        dir.path(),
        &[
            "simulate",
            "--target",
            &target,
            "--scenario",
            &scenario.to_string_lossy(),
            "--until-done",
            "--json",
        ],
    );
    let card = scorecard(&out);
    assert_eq!(out.status.code(), Some(0), "{card}");
    assert_eq!(card["progress"]["jobs"], 2);
    let received = handler.handler.received.lock().expect("lock").clone();
    let states: Vec<String> = received
        .iter()
        .filter_map(|(_, b)| serde_json::from_slice::<Value>(b).ok())
        .map(|v| v["status"].as_str().unwrap_or("").to_string())
        .collect();
    // 2 jobs × (pending, completed), the header-only shape, plus the 2 probes.
    assert_eq!(states.len(), 6, "{states:?}");
    assert!(
        states.iter().all(|s| s == "pending" || s == "completed"),
        "{states:?}"
    );
    let attempts = hookscope::store::Reader::open(&dir.path().join("hookscope.sqlite"))
        .expect("store")
        .count_attempts(hookscope::domain::attempt::AttemptKind::Simulate)
        .expect("count");
    assert_eq!(attempts, 6);
    // A scenario that does not parse is one sentence naming the file.
    std::fs::write(&scenario, "[lifecycle]\nsteps = 3\n").expect("scenario");
    let bad = run(
        dir.path(),
        &[
            "simulate",
            "--target",
            &target,
            "--scenario",
            &scenario.to_string_lossy(),
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("ocr.toml"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

#[test]
fn with_a_contract_each_event_body_is_built_on_its_example_and_still_tells_the_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The provider's AsyncAPI contract describes job.queued, with an example carrying a field
    // the built-in body has no reason to have.
    let contract = dir.path().join("provider.yaml");
    std::fs::write(
        &contract,
        "asyncapi: 3.0.0\ninfo: {title: p, version: '1'}\nchannels:\n  jobs:\n    messages:\n      queued:\n        name: job.queued\n        payload:\n          type: object\n          required: [type, queue]\n          properties:\n            type: {const: job.queued}\n            queue: {type: string}\n        examples:\n          - payload: {type: job.queued, queue: ocr-high, id: evt_example}\n",
    )
    .expect("contract");
    let good = serve(Flavour::Correct, StatusCode::OK);
    let (code, card) = simulate(
        dir.path(),
        &good,
        &[
            "--time-scale",
            "3600",
            "--jobs",
            "3",
            "--preset",
            "render",
            "--contract",
            contract.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(code, 0, "{card}");
    let bodies: Vec<Value> = good
        .handler
        .received
        .lock()
        .expect("lock")
        .iter()
        .filter_map(|(_, b)| serde_json::from_slice(b).ok())
        .collect();
    let queued: Vec<&Value> = bodies
        .iter()
        .filter(|b| b["type"] == "job.queued")
        .collect();
    assert!(!queued.is_empty());
    for body in &queued {
        // The example's member, and the simulator's own written over the example's.
        assert_eq!(body["queue"], "ocr-high", "{body}");
        assert_ne!(body["id"], "evt_example", "{body}");
        assert!(
            body["data"]["id"].as_str().is_some_and(|j| !j.is_empty()),
            "{body}"
        );
    }
    // Types the contract lacks keep the built-in body.
    assert!(
        bodies
            .iter()
            .filter(|b| b["type"] != "job.queued")
            .all(|b| b.get("queue").is_none())
    );

    // A contract with none of the simulated types is refused, naming both sides.
    let out = common::run(
        dir.path(),
        &[
            "simulate",
            "--target",
            "http://127.0.0.1:9/",
            "--secret",
            SECRET,
            "--preset",
            "review",
            "--contract",
            contract.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("none of the simulated event types (document.queued"),
        "{said}"
    );
    assert!(
        said.contains("is in provider.yaml (it has: job.queued)"),
        "{said}"
    );
}
