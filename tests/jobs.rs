//! Job timelines end to end: a scrambled, duplicated lifecycle for three jobs posted over HTTP
//! to `hookscope listen`, then `hookscope jobs --json` and `jobs show`.

mod common;

use common::{Listener, now_secs, run};

fn post(rt: &tokio::runtime::Runtime, client: &reqwest::Client, url: &str, body: String) {
    let status = rt
        .block_on(
            client
                .post(url)
                .header("content-type", "application/json")
                .body(body)
                .send(),
        )
        .expect("post")
        .status();
    assert_eq!(status, 200);
}

fn event(id: &str, job: &str, state: &str, created: i64) -> String {
    format!(
        r#"{{"id":"{id}","type":"job.{state}","created_at":{created},"data":{{"job_id":"{job}","status":"{state}"}}}}"#
    )
}

fn flags(job: &serde_json::Value) -> Vec<String> {
    job["flags"]
        .as_array()
        .expect("flags")
        .iter()
        .map(|f| f["kind"].as_str().expect("kind").to_string())
        .collect()
}

#[test]
fn jobs_json_reports_each_flag_of_a_scrambled_lifecycle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let url = format!("{}/hooks/jobs", listener.base_url);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = common::http_client();
    let t = now_secs() - 600;

    // Job A: completed arrives before processing, which was created earlier.
    post(&rt, &client, &url, event("evt_a1", "job_a", "queued", t));
    post(
        &rt,
        &client,
        &url,
        event("evt_a3", "job_a", "completed", t + 120),
    );
    post(
        &rt,
        &client,
        &url,
        event("evt_a2", "job_a", "processing", t + 60),
    );
    // Job B: completed twice (a retry), then failed.
    post(
        &rt,
        &client,
        &url,
        event("evt_b1", "job_b", "completed", t + 10),
    );
    post(
        &rt,
        &client,
        &url,
        event("evt_b1", "job_b", "completed", t + 10),
    );
    post(
        &rt,
        &client,
        &url,
        event("evt_b2", "job_b", "failed", t + 20),
    );
    // Job C: waiting for a human.
    post(&rt, &client, &url, event("evt_c1", "job_c", "queued", t));
    post(
        &rt,
        &client,
        &url,
        event("evt_c2", "job_c", "needs_review", t + 30),
    );
    // No job id at all: not a job.
    post(
        &rt,
        &client,
        &url,
        r#"{"id":"evt_x","type":"ping"}"#.to_string(),
    );
    for _ in 0..9 {
        listener.next_json();
    }

    let out = run(dir.path(), &["jobs", "--json", "--stuck-after-mins", "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let jobs: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(jobs.len(), 3, "{jobs:?}");
    let job = |id: &str| {
        jobs.iter()
            .find(|j| j["job_id"] == id)
            .unwrap_or_else(|| panic!("{id} listed"))
    };

    let a = job("job_a");
    assert_eq!(flags(a), ["out_of_order", "regression", "dedupe_by_job_id"]);
    assert_eq!(a["current_state"], "completed");
    assert_eq!(a["terminal"], true);

    let b = job("job_b");
    assert_eq!(
        flags(b),
        [
            "conflicting_terminal",
            "duplicate_delivery",
            "dedupe_by_job_id"
        ]
    );
    assert_eq!(
        (b["events"].as_u64(), b["deliveries"].as_u64()),
        (Some(2), Some(3))
    );

    let c = job("job_c");
    assert_eq!(flags(c), ["stuck", "dedupe_by_job_id"]);
    // The dedupe advice is a hint, apart from the problems.
    assert_eq!(c["flags"][0]["severity"], "problem");
    assert_eq!(c["flags"][1]["severity"], "hint");
    assert_eq!(c["current_state"], "needs_review");
    let stuck = c["flags"][0]["detail"].as_str().expect("detail");
    assert!(
        stuck.contains("needs_review can legitimately last hours"),
        "{stuck}"
    );

    // Most recently active first.
    assert_eq!(jobs[0]["job_id"], "job_c");

    // One timeline, by event time, with its arrival ranks.
    let out = run(dir.path(), &["jobs", "show", "job_a"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let order: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  20"))
        .map(|l| l.split_whitespace().nth(1).expect("state"))
        .collect();
    assert_eq!(order, ["queued", "processing", "completed"], "{text}");
    assert!(text.contains("arrived 3rd"), "{text}");
    assert!(text.contains("regression: processing"), "{text}");

    let out = run(dir.path(), &["jobs", "show", "job_nope"]);
    assert_eq!(out.status.code(), Some(2));
}
