//! The reconciler against a job API started in the test (`tests/common/job_api.rs`): missed
//! terminal events, mismatches, jobs only the API knows, `429` and `Retry-After`, backoff and
//! its cap, the deadline, the cursor, the API key kept out of every output, and an API that
//! cannot be reached. Each runs the real binary over a real store.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::job_api::{JobApi, serve};
use common::{Listener, run};
use serde_json::{Value, json};

const KEY: &str = "sk_live_reconcile_4f9a1c2e";

/// Writes the config: one endpoint at /hooks/ocr whose job API is `api`, with `extra` lines
/// in its `[endpoint.reconcile]` table.
fn configure(dir: &Path, api: &str, extra: &str) {
    std::fs::write(
        dir.join("config.toml"),
        format!(
            r#"[[endpoint]]
path = "/hooks/ocr"

[endpoint.reconcile]
job_url = "{api}/v1/jobs/{{job_id}}"
list_url = "{api}/v1/jobs?limit=2"
{extra}
"#
        ),
    )
    .expect("config");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            dir.join("config.toml"),
            std::fs::Permissions::from_mode(0o600),
        )
        .expect("chmod");
    }
}

/// Posts job webhooks through a real `listen`, then stops it.
fn webhooks(dir: &Path, events: &[(&str, &str)]) {
    let mut listener = Listener::start(dir, &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = common::http_client();
    for (n, (job, state)) in events.iter().enumerate() {
        let body = json!({
            "id": format!("evt_{job}_{n}"),
            "type": format!("job.{state}"),
            "data": {"job_id": job, "status": state},
        });
        let response = rt
            .block_on(
                client
                    .post(format!("{}/hooks/ocr", listener.base_url))
                    .body(body.to_string())
                    .send(),
            )
            .expect("post");
        assert_eq!(response.status(), 200);
        listener.next_json();
    }
}

/// `hookscope reconcile --job JOB --endpoint /hooks/ocr --json`: the job's line.
fn reconcile_job(dir: &Path, job: &str) -> Value {
    let out = run(
        dir,
        &[
            "reconcile",
            "--job",
            job,
            "--endpoint",
            "/hooks/ocr",
            "--json",
        ],
    );
    lines(&out).remove(0)
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!(
                    "not JSON ({e}): {l}\nstderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
        })
        .collect()
}

fn flags(job: &Value) -> Vec<String> {
    job["flags"]
        .as_array()
        .map(|f| {
            f.iter()
                .map(|f| f["kind"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn find<'a>(jobs: &'a [Value], id: &str) -> &'a Value {
    jobs.iter()
        .find(|j| j["job_id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {jobs:?}"))
}

fn api_with_jobs() -> JobApi {
    let api = serve();
    api.job("job_1", json!({"job_id": "job_1", "status": "completed"}));
    api.job("job_2", json!({"job_id": "job_2", "status": "completed"}));
    api.job("job_3", json!({"job_id": "job_3", "status": "processing"}));
    api
}

#[test]
fn a_dropped_terminal_event_and_a_job_only_the_api_knows_are_found_and_exit_1() {
    let api = api_with_jobs();
    let dir = tempfile::tempdir().expect("tempdir");
    configure(dir.path(), &api.url(), "");
    webhooks(
        dir.path(),
        &[
            ("job_1", "queued"),
            ("job_1", "processing"),
            ("job_3", "processing"),
        ],
    );
    // Listed only now, and counted from here: `listen` above read the (then empty) listing
    // at its start-up.
    {
        let mut s = api.state.lock().expect("lock");
        s.in_flight = ["job_3", "job_7", "job_8", "job_9", "job_10"]
            .map(String::from)
            .to_vec();
        s.requests.clear();
    }
    let out = run(
        dir.path(),
        &["reconcile", "--json", "--stuck-after-mins", "0"],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let jobs = lines(&out);
    let job_1 = find(&jobs, "job_1");
    assert_eq!(job_1["webhook_state"], "processing");
    assert_eq!(job_1["api_state"], "completed");
    assert_eq!(flags(job_1), ["missed_terminal_event"], "{job_1}");
    let job_3 = find(&jobs, "job_3");
    assert_eq!(job_3["api_state"], "processing");
    assert!(!flags(job_3).iter().any(|f| f == "missed_terminal_event"));
    // The listing was read to its end through the cursor: 5 jobs in pages of 2.
    let pages: Vec<String> = api
        .paths()
        .into_iter()
        .filter(|p| p == "/v1/jobs" || p.starts_with("/v1/jobs?"))
        .collect();
    assert_eq!(
        pages,
        ["/v1/jobs", "/v1/jobs?after=cur_2", "/v1/jobs?after=cur_4"]
    );
    for id in ["job_7", "job_8", "job_9", "job_10"] {
        let job = find(&jobs, id);
        assert_eq!(flags(job), ["never_notified"], "{job}");
        assert_eq!(job["deliveries"], 0);
    }
    // The people's form says the same, each flag with its sentence.
    let human = run(dir.path(), &["reconcile", "--job", "job_1"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.starts_with("job_1  webhooks: processing  api: completed  missed_terminal_event"),
        "{text}"
    );
    assert!(text.contains("no terminal webhook arrived"), "{text}");
    // jobs --json shows the API's state and the new flags; jobs show has the third lane.
    let listed = run(dir.path(), &["jobs", "--json"]);
    let all = lines(&listed);
    let job_1 = find(&all, "job_1");
    assert_eq!(job_1["api_state"], "completed");
    assert!(
        flags(job_1).contains(&"missed_terminal_event".to_string()),
        "{job_1}"
    );
    assert!(
        all.iter().any(|j| j["job_id"] == "job_9"),
        "a job only the API knows is listed"
    );
    let shown = run(dir.path(), &["jobs", "show", "job_1"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("job resource (2 polls):"), "{text}");
}

#[test]
fn a_state_mismatch_is_found() {
    let api = api_with_jobs();
    let dir = tempfile::tempdir().expect("tempdir");
    configure(dir.path(), &api.url(), "");
    webhooks(
        dir.path(),
        &[
            ("job_2", "processing"),
            ("job_2", "failed"),
            ("job_3", "queued"),
        ],
    );
    let out = run(dir.path(), &["reconcile", "--job", "job_2", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let jobs = lines(&out);
    assert_eq!(flags(&jobs[0]), ["state_mismatch"], "{:?}", jobs[0]);
    let detail = jobs[0]["flags"][0]["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("A webhook says failed, and the job API says completed"),
        "{detail}"
    );
    // Agreeing answers exit 0.
    let agree = run(
        dir.path(),
        &[
            "reconcile",
            "--job",
            "job_3",
            "--endpoint",
            "/hooks/ocr",
            "--json",
        ],
    );
    assert_eq!(
        agree.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&agree.stdout)
    );
}

#[test]
fn retry_after_is_honoured_in_seconds_and_as_an_http_date() {
    let api = api_with_jobs();
    let date = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(4))
        .expect("time");
    let http_date = jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&date)
        .expect("http date");
    api.state
        .lock()
        .expect("lock")
        .refuse
        .insert("job_1".into(), ["1".to_string(), http_date].into());
    let dir = tempfile::tempdir().expect("tempdir");
    configure(dir.path(), &api.url(), "");
    let job = reconcile_job(dir.path(), "job_1");
    assert_eq!(job["api_state"], "completed", "{job}");
    let times = api.times("/v1/jobs/job_1");
    assert_eq!(times.len(), 3, "two refusals, then the answer");
    let first_gap = times[1] - times[0];
    let second_gap = times[2] - times[1];
    assert!(
        first_gap >= Duration::from_millis(990),
        "Retry-After: 1 waited {first_gap:?}"
    );
    // An HTTP date has whole seconds: at least 3 s ahead when written, and the first wait
    // took 1 s of it, so the second wait is at least about 2 s.
    assert!(
        second_gap >= Duration::from_millis(1800),
        "the HTTP date waited {second_gap:?}"
    );
    // Someone who asks for longer than the patience gets the refusal recorded instead.
    api.state
        .lock()
        .expect("lock")
        .refuse
        .insert("job_3".into(), ["3600".to_string()].into());
    let job = &reconcile_job(dir.path(), "job_3");
    assert_eq!(flags(job), ["unreachable"], "{job}");
    assert!(
        job["flags"][0]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("429"),
        "{job}"
    );
}

#[test]
fn follow_polls_with_a_growing_capped_backoff_until_the_job_finishes() {
    let api = serve();
    api.state.lock().expect("lock").script.insert(
        "job_5".into(),
        [
            "queued",
            "processing",
            "processing",
            "processing",
            "processing",
            "processing",
            "completed",
        ]
        .map(String::from)
        .into(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    configure(
        dir.path(),
        &api.url(),
        "poll_initial_ms = 400\npoll_max_ms = 900",
    );
    let out = run(
        dir.path(),
        &[
            "follow",
            "--endpoint",
            "/hooks/ocr",
            "--job",
            "job_5",
            "--json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = lines(&out);
    let states: Vec<&str> = printed
        .iter()
        .filter(|l| l.get("at").is_some())
        .map(|l| l["state"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(states.len(), 7, "{printed:?}");
    assert_eq!(states[6], "completed");
    let times = api.times("/v1/jobs/job_5");
    let gaps: Vec<f64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .collect();
    // 400 ms × 1.5ⁿ capped at 900 ms, each ±10 %: 400, 600, 900, 900, 900, 900. The upper
    // bound leaves 0.3 s for a busy machine and still catches a missing cap (1,350 ms next).
    let expected = [0.4, 0.6, 0.9, 0.9, 0.9, 0.9];
    for (gap, want) in gaps.iter().zip(expected) {
        assert!(
            *gap >= want * 0.88 && *gap <= want * 1.1 + 0.3,
            "gap {gap:.3} s where {want} s (±10 %) was due: {gaps:?}"
        );
    }
    let timeline = printed.last().expect("timeline");
    assert_eq!(timeline["api_state"], "completed");
    assert_eq!(
        flags(timeline),
        ["never_notified"],
        "polling alone: no webhook ever came"
    );
}

#[test]
fn the_deadline_stops_following_a_job_that_never_finishes() {
    let api = serve();
    api.job(
        "job_6",
        json!({"job_id": "job_6", "status": "needs_review"}),
    );
    api.job("job_4", json!({"job_id": "job_4", "status": "processing"}));
    let dir = tempfile::tempdir().expect("tempdir");
    configure(
        dir.path(),
        &api.url(),
        "poll_initial_ms = 100\npoll_max_ms = 200\ndeadline_secs = 2",
    );
    let started = std::time::Instant::now();
    let out = run(
        dir.path(),
        &[
            "follow",
            "--endpoint",
            "/hooks/ocr",
            "--job",
            "job_6",
            "--job",
            "job_4",
        ],
    );
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "not finished: exit 1");
    assert!(
        took < Duration::from_secs(6),
        "follow stopped at its deadline, took {took:?}"
    );
    // needs_review is asked far less often than processing.
    let review = api.times("/v1/jobs/job_6").len();
    let processing = api.times("/v1/jobs/job_4").len();
    assert!(
        review <= 2 && processing >= 6,
        "needs_review {review} polls, processing {processing}"
    );
}

#[test]
fn the_api_key_is_sent_and_appears_in_no_output_file_or_store() {
    let api = api_with_jobs();
    api.state.lock().expect("lock").api_key = Some(KEY.to_string());
    api.job(
        "job_1",
        json!({"job_id": "job_1", "status": "completed", "result_url": format!("{}/results/job_1", api.url()), "expires_at": "2020-01-01T00:00:00Z"}),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    configure(dir.path(), &api.url(), "auth_env = \"INFRO_API_KEY\"");
    webhooks(dir.path(), &[("job_1", "processing")]);
    let with_key = |args: &[&str]| {
        Command::new(common::bin())
            .args(args)
            .env("HOOKSCOPE_DATA_DIR", dir.path())
            .env("INFRO_API_KEY", KEY)
            .env("RUST_LOG", "trace")
            .output()
            .expect("runs")
    };
    let outputs = [
        with_key(&["reconcile", "--stuck-after-mins", "0"]),
        with_key(&["reconcile", "--json", "--job", "job_1"]),
        with_key(&["follow", "--endpoint", "/hooks/ocr", "--job", "job_2"]),
        with_key(&["jobs", "show", "job_1", "--json"]),
        with_key(&["list", "--json"]),
    ];
    let jobs = lines(&outputs[1]);
    assert_eq!(
        jobs[0]["api_state"], "completed",
        "the key was accepted: {:?}",
        jobs[0]
    );
    assert!(
        flags(&jobs[0]).contains(&"output_expired".to_string()),
        "{:?}",
        jobs[0]
    );
    for out in &outputs {
        for stream in [&out.stdout, &out.stderr] {
            assert!(
                !String::from_utf8_lossy(stream).contains(KEY),
                "the key leaked"
            );
        }
    }
    let requests = api.state.lock().expect("lock").requests.clone();
    assert!(requests.iter().any(|(_, p, a)| p.starts_with("/v1/jobs/")
        && a.as_deref() == Some(&format!("Bearer {KEY}") as &str)));
    // The result lives on the API's own origin here, so the key went along to it too.
    for entry in std::fs::read_dir(dir.path()).expect("dir") {
        let bytes = std::fs::read(entry.expect("entry").path()).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in a file"
        );
    }
    // Without the variable: one sentence naming it, no request without a key.
    let without = run(dir.path(), &["reconcile", "--job", "job_1", "--json"]);
    let job = &lines(&without)[0];
    let detail = job["flags"][0]["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("INFRO_API_KEY (auth_env) is not set"),
        "{job}"
    );
}

#[test]
fn an_unreachable_api_gives_one_sentence_and_no_crash() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let dir = tempfile::tempdir().expect("tempdir");
    configure(dir.path(), &format!("http://127.0.0.1:{port}"), "");
    webhooks(dir.path(), &[("job_1", "processing")]);
    let out = run(dir.path(), &["reconcile", "--stuck-after-mins", "0"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "an unreachable API is not a disagreement"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("job_1  webhooks: processing  api: not answered  stuck, unreachable"),
        "{text}"
    );
    assert!(
        text.contains("cannot connect to http://127.0.0.1:"),
        "{text}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the in-flight listing of endpoint /hooks/ocr could not be read"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn without_a_job_api_reconcile_says_what_to_configure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(dir.path(), &["reconcile"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("[endpoint.reconcile]"));
}

#[test]
fn listen_reconciles_quiet_jobs_at_start_up_and_stores_what_the_api_said() {
    let api = api_with_jobs();
    let dir = tempfile::tempdir().expect("tempdir");
    configure(dir.path(), &api.url(), "");
    webhooks(dir.path(), &[("job_1", "processing")]);
    // Every job is quiet at once.
    let mut config = std::fs::read_to_string(dir.path().join("config.toml")).expect("config");
    config.push_str("\n[jobs]\nstuck_after_minutes = 0\n");
    std::fs::write(dir.path().join("config.toml"), config).expect("config");
    let listener = Listener::start(dir.path(), &[]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let polls = loop {
        let reader = hookscope::store::Reader::open(&listener.store_path()).expect("store");
        let polls = reader.polls_for("job_1").expect("polls");
        if !polls.is_empty() || std::time::Instant::now() > deadline {
            break polls;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(polls.len(), 1, "one poll at start-up: {polls:?}");
    assert_eq!(polls[0].state.as_deref(), Some("completed"));
    assert_eq!(polls[0].endpoint, "/hooks/ocr");
    // The next pass is a minute away: no second question in the meantime.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(api.times("/v1/jobs/job_1").len(), 1);
    let shown = run(dir.path(), &["jobs", "--json"]);
    let job = lines(&shown)
        .into_iter()
        .find(|j| j["job_id"] == "job_1")
        .expect("job_1");
    assert!(
        flags(&job).contains(&"missed_terminal_event".to_string()),
        "{job}"
    );
}

#[test]
fn an_https_job_api_is_asked_with_the_projects_client() {
    let api = common::job_api::serve_tls();
    api.job("job_1", json!({"job_id": "job_1", "status": "completed"}));
    assert!(api.url().starts_with("https://"));
    let dir = tempfile::tempdir().expect("tempdir");
    // A self-signed certificate is refused unless the API is marked insecure.
    configure(dir.path(), &api.url(), "");
    let job = &reconcile_job(dir.path(), "job_1");
    assert_eq!(flags(job), ["unreachable"], "{job}");
    assert!(
        job["flags"][0]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("TLS with 127.0.0.1 failed"),
        "{job}"
    );
    assert!(
        job["flags"][0]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("set insecure = true in its [endpoint.reconcile]"),
        "{job}"
    );
    assert!(
        api.times("/v1/jobs/job_1").is_empty(),
        "the handshake failed before any request"
    );
    configure(dir.path(), &api.url(), "insecure = true");
    let job = &reconcile_job(dir.path(), "job_1");
    assert_eq!(job["api_state"], "completed", "{job}");
    assert_eq!(api.times("/v1/jobs/job_1").len(), 1);
}

/// `reconcile` with no job named asks about every job seen in the last 24 hours,
/// finished or not. A job whose webhook says `failed` while the API says `completed` is found
/// without `--job`; a job whose webhooks all arrived is listed as `ok`; `--limit` and `--since`
/// bound the pass and say what they left out; `--quiet-only` is the background pass's choice.
#[test]
fn reconcile_on_demand_checks_finished_jobs_too_and_lists_each_one() {
    let api = api_with_jobs();
    let dir = tempfile::tempdir().expect("tempdir");
    configure(dir.path(), &api.url(), "");
    webhooks(
        dir.path(),
        &[
            ("job_1", "processing"),
            ("job_1", "completed"),
            ("job_2", "failed"),
        ],
    );
    let out = run(dir.path(), &["reconcile"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line_of = |job: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{job}  ")))
            .unwrap_or_else(|| panic!("no line for {job}: {text}"))
            .to_string()
    };
    assert_eq!(
        line_of("job_1"),
        "job_1  webhooks: completed  api: completed  ok"
    );
    assert!(
        line_of("job_2").ends_with("api: completed  state_mismatch"),
        "{text}"
    );
    assert!(
        text.contains("A webhook says failed, and the job API says completed"),
        "{text}"
    );

    // At most one job: the most recently seen (job_2), and a sentence for the one left out.
    let limited = run(dir.path(), &["reconcile", "--limit", "1", "--json"]);
    let jobs = lines(&limited);
    assert_eq!(
        jobs.iter().map(|j| j["job_id"].clone()).collect::<Vec<_>>(),
        ["job_2"]
    );
    let said = String::from_utf8_lossy(&limited.stderr);
    assert!(said.contains("1 more were seen within --since"), "{said}");

    // Nothing was seen in the last second once a second has passed.
    std::thread::sleep(Duration::from_millis(1100));
    let recent = run(dir.path(), &["reconcile", "--since", "1s"]);
    let text = String::from_utf8_lossy(&recent.stdout);
    assert_eq!(recent.status.code(), Some(0), "{text}");
    assert_eq!(
        text.trim(),
        "no job to reconcile: none was seen in the last 1 s, and no listing named a new one"
    );

    // The background pass's choice: both jobs have a terminal webhook, so neither is asked.
    let quiet = run(dir.path(), &["reconcile", "--quiet-only", "--json"]);
    assert_eq!(lines(&quiet).len(), 0);

    let bad = run(dir.path(), &["reconcile", "--since", "0h"]);
    assert_eq!(bad.status.code(), Some(2));
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.contains("takes a span of time such as 24h"), "{said}");
}
