//! `hookscope diff A B` over a real store filled by `hookscope listen` on loopback: what differs
//! between two deliveries, by JSON pointer, with a re-serialisation said.

mod common;

use common::{Listener, run};

#[test]
fn diff_says_what_changed_by_pointer_and_that_a_body_was_re_serialised() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = common::http_client();
    for (tenant, body) in [
        (
            "t1",
            r#"{"id":"evt_1","type":"job.queued","data":{"status":"queued"}}"#,
        ),
        (
            "t2",
            r#"{"id":"evt_1","type":"job.queued","data":{"status":"completed","priority":2}}"#,
        ),
        (
            "t1",
            "{\n  \"id\": \"evt_1\",\n  \"type\": \"job.queued\",\n  \"data\": {\"status\": \"queued\"}\n}",
        ),
    ] {
        rt.block_on(
            client
                .post(format!("{}/hooks/x", listener.base_url))
                .header("x-tenant", tenant)
                .header("traceparent", format!("00-{tenant}"))
                .body(body)
                .send(),
        )
        .expect("post");
        listener.next_json();
    }
    drop(listener);

    let out = run(dir.path(), &["diff", "1", "2", "--json"]);
    assert_eq!(out.status.code(), Some(1), "they differ");
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let changes: Vec<(String, String)> = c["body"]["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|ch| {
            (
                ch["pointer"].as_str().unwrap_or("").to_string(),
                ch["change"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("/data/status".to_string(), "changed".to_string()),
            ("/data/priority".to_string(), "added".to_string())
        ]
    );
    let headers = c["headers"].as_array().expect("headers");
    let tenant = headers
        .iter()
        .find(|h| h["name"] == "x-tenant")
        .expect("x-tenant");
    assert_eq!(
        (&tenant["old"], &tenant["new"], &tenant["expected"]),
        (&"t1".into(), &"t2".into(), &false.into())
    );
    let trace = headers
        .iter()
        .find(|h| h["name"] == "traceparent")
        .expect("traceparent");
    assert_eq!(trace["expected"], true);
    assert_eq!(c["checks"][2]["a"], "first");
    assert_eq!(c["checks"][2]["b"], "duplicate");

    // The same event re-serialised: one sentence says so.
    let out = run(dir.path(), &["diff", "1", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("same JSON value in other bytes"), "{text}");
    // A delivery against itself: nothing differs.
    assert_eq!(run(dir.path(), &["diff", "2", "2"]).status.code(), Some(0));
    // An id not in the store is bad usage.
    let out = run(dir.path(), &["diff", "1", "99"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no delivery #99"));

    // Compared with its partner: a retry with the first delivery of its event.
    let out = run(dir.path(), &["diff", "3", "--with", "first", "--json"]);
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!((c["a"].as_i64(), c["b"].as_i64()), (Some(1), Some(3)));
    assert_eq!(c["title"], "#1 -> #3");
    // Each partner it does not have is one sentence and bad usage.
    for (with, said) in [
        ("first", "delivery #1 is no retry"),
        ("previous", "delivery #1 belongs to no job"),
        ("forwarded", "delivery #1 was not forwarded"),
    ] {
        let out = run(dir.path(), &["diff", "1", "--with", with]);
        assert_eq!(out.status.code(), Some(2), "{with}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(said), "{said} in {stderr}");
    }
}

#[test]
fn a_jobs_delivery_is_compared_with_the_one_stored_before_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The seed's deliveries 1-5 are one job's five states, in order.
    common::seed(dir.path(), 10);
    let out = run(dir.path(), &["diff", "3", "--with", "previous", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!((c["a"].as_i64(), c["b"].as_i64()), (Some(2), Some(3)));
    let pointers: Vec<&str> = c["body"]["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(|ch| ch["pointer"].as_str())
        .collect();
    assert!(pointers.contains(&"/data/status"), "{pointers:?}");
    let out = run(dir.path(), &["diff", "1", "--with", "previous"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is the first stored of job job_0000000")
    );
}
