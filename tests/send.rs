//! Resend, forward and probe against small handlers written for these tests: real axum servers
//! on loopback whose verification is written here from the schemes' specifications (HMAC over
//! the raw bytes), independent of hookscope's own verifier.

mod common;

use axum::http::StatusCode;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use common::handler::{Flavour, SECRET, Server, hmac_b64, serve};
use common::{Listener, now_secs, run};

fn probe(server: &Server) -> (i32, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://{}/webhooks", server.addr);
    let out = run(
        dir.path(),
        &[
            "probe",
            &url,
            "--scheme",
            "standard-webhooks",
            "--secret",
            SECRET,
            "--json",
        ],
    );
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), json)
}

fn verdicts(report: &serde_json::Value) -> Vec<(String, String)> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().expect("name").to_string(),
                c["verdict"].as_str().expect("verdict").to_string(),
            )
        })
        .collect()
}

fn failing(report: &serde_json::Value) -> Vec<String> {
    verdicts(report)
        .into_iter()
        .filter(|(_, v)| v == "fail")
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn a_correct_handler_passes_every_case() {
    let server = serve(Flavour::Correct, StatusCode::OK);
    let (code, report) = probe(&server);
    assert_eq!(failing(&report), Vec::<String>::new(), "{report}");
    assert_eq!(code, 0);
    assert_eq!(verdicts(&report).len(), 9);
}

#[test]
fn a_handler_that_reserializes_fails_only_the_respaced_case_and_is_told_why() {
    let server = serve(Flavour::Reserializes, StatusCode::OK);
    let (code, report) = probe(&server);
    assert_eq!(failing(&report), ["respaced_json"]);
    assert_eq!(code, 1);
    let case = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["name"] == "respaced_json")
        .expect("case");
    assert!(
        case["detail"]
            .as_str()
            .expect("detail")
            .contains("verifies a re-serialised body"),
        "{case}"
    );
}

#[test]
fn a_handler_that_ignores_timestamps_fails_the_stale_and_future_cases() {
    let server = serve(Flavour::IgnoresTimestamps, StatusCode::OK);
    let (code, report) = probe(&server);
    assert_eq!(failing(&report), ["stale_timestamp", "future_timestamp"]);
    assert_eq!(code, 1);
}

#[test]
fn a_handler_that_rejects_duplicates_with_409_fails_the_replay_case() {
    let server = serve(Flavour::RejectsDuplicates, StatusCode::OK);
    let (_, report) = probe(&server);
    assert_eq!(failing(&report), ["replay_same_event"]);
    let case = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["name"] == "replay_same_event")
        .expect("case");
    assert_eq!(case["statuses"], serde_json::json!([200, 409]));
}

fn capture(
    listener: &mut Listener,
    rt: &tokio::runtime::Runtime,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> i64 {
    let client = common::http_client();
    let mut request = client
        .post(format!("{}/hooks/in", listener.base_url))
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    assert_eq!(rt.block_on(request.send()).expect("post").status(), 200);
    listener.next_json()["id"].as_i64().expect("id")
}

#[test]
fn resend_as_captured_is_an_honest_stale_replay_and_resigned_verifies_by_the_spec() {
    let server = serve(Flavour::Correct, StatusCode::OK);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Signed correctly, ten minutes ago.
    let ts = now_secs() - 600;
    let body = br#"{"type":"job.completed","data":{"job_id":"job_1"}}"#.to_vec();
    let key = B64
        .decode(SECRET.trim_start_matches("whsec_"))
        .expect("key");
    let signature = hmac_b64(
        &key,
        &[b"msg_old.", ts.to_string().as_bytes(), b".", &body].concat(),
    );
    let id = capture(
        &mut listener,
        &rt,
        &[
            ("webhook-id", "msg_old".into()),
            ("webhook-timestamp", ts.to_string()),
            ("webhook-signature", format!("v1,{signature}")),
        ],
        body.clone(),
    );
    let url = format!("http://{}/webhooks", server.addr);
    let id_text = id.to_string();

    let replay = run(dir.path(), &["resend", &id_text, "--to", &url, "--json"]);
    assert_eq!(replay.status.code(), Some(1), "the stale replay is refused");
    let attempt: serde_json::Value = serde_json::from_slice(&replay.stdout).expect("json");
    assert_eq!(attempt["status"], 400);

    let resigned = run(
        dir.path(),
        &[
            "resend",
            &id_text,
            "--to",
            &url,
            "--resign",
            "--scheme",
            "standard-webhooks",
            "--secret",
            SECRET,
            "--json",
        ],
    );
    assert_eq!(
        resigned.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resigned.stdout)
    );
    let retry = run(
        dir.path(),
        &[
            "resend",
            &id_text,
            "--to",
            &url,
            "--resign",
            "--new-id",
            "--scheme",
            "standard-webhooks",
            "--secret",
            SECRET,
        ],
    );
    assert_eq!(retry.status.code(), Some(0));

    let received = server.handler.received.lock().expect("lock").clone();
    assert_eq!(received.len(), 3);
    assert!(
        received.iter().all(|(_, b)| *b == body),
        "the body is sent byte for byte"
    );
    let ids: Vec<&str> = received
        .iter()
        .map(|(h, _)| h["webhook-id"].to_str().expect("id"))
        .collect();
    assert_eq!(ids[0], "msg_old");
    assert_eq!(ids[1], "msg_old", "a re-signed retry keeps the event id");
    assert_ne!(ids[2], "msg_old", "--new-id makes a new event");

    // Every attempt is kept beside the delivery.
    drop(listener);
    let reader =
        hookscope::store::Reader::open(&dir.path().join("hookscope.sqlite")).expect("store");
    let attempts = reader.attempts_for(id).expect("attempts");
    assert_eq!(
        attempts.iter().map(|a| a.status).collect::<Vec<_>>(),
        [Some(400), Some(200), Some(200)]
    );
    assert!(
        attempts
            .iter()
            .all(|a| a.kind.as_str() == "resend" && a.url == url)
    );
}

#[test]
fn resend_resigned_as_stripe_verifies_with_the_whole_secret() {
    let server = serve(Flavour::Correct, StatusCode::OK);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let body = br#"{"id":"evt_1","type":"invoice.paid"}"#.to_vec();
    let id = capture(
        &mut listener,
        &rt,
        &[(
            "stripe-signature",
            format!("t={},v1={}", now_secs() - 900, "00".repeat(32)),
        )],
        body,
    );
    let url = format!("http://{}/stripe", server.addr);
    let out = run(
        dir.path(),
        &[
            "resend",
            &id.to_string(),
            "--to",
            &url,
            "--resign",
            "--secret",
            "whsec_stripe_test",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run(
        dir.path(),
        &[
            "resend",
            &id.to_string(),
            "--to",
            &url,
            "--resign",
            "--new-id",
            "--secret",
            "whsec_stripe_test",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let received = server.handler.received.lock().expect("lock").clone();
    assert!(
        String::from_utf8_lossy(&received[1].1).contains("\"id\":\"msg_"),
        "the new id replaces the body's id"
    );
}

#[test]
fn forwarding_keeps_the_body_byte_exact_and_records_the_handlers_answer() {
    let server = serve(Flavour::Correct, StatusCode::ACCEPTED);
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://{}/record", server.addr);
    let mut listener = Listener::start(dir.path(), &["--forward-to", &url]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let body: Vec<u8> = [
        b"{ \"a\" :\t1 ,\r\n  \"b\":\"\xff\xfe\" }  \n".as_slice(),
        &[0, 1, 2, 0x80],
    ]
    .concat();
    let id = capture(
        &mut listener,
        &rt,
        &[
            ("x-odd", "  spaced  ".into()),
            ("webhook-id", "msg_fwd".into()),
        ],
        body.clone(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while server.handler.received.lock().expect("lock").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the forward did not arrive"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (headers, forwarded) = server.handler.received.lock().expect("lock")[0].clone();
    assert_eq!(forwarded, body);
    assert_eq!(
        headers["x-odd"].as_bytes(),
        b"  spaced  ".trim_ascii(),
        "header values as captured (HTTP trims edges)"
    );
    assert_eq!(headers["webhook-id"], "msg_fwd");

    // The handler's answer is kept beside the delivery; the sender got hookscope's own 200.
    let reader =
        hookscope::store::Reader::open(&dir.path().join("hookscope.sqlite")).expect("store");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let attempts = reader.attempts_for(id).expect("attempts");
        if let Some(a) = attempts.first() {
            assert_eq!((a.kind.as_str(), a.status), ("forward", Some(202)));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the forward was not recorded"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn mirror_response_passes_the_handlers_failure_to_the_sender() {
    let server = serve(Flavour::Correct, StatusCode::SERVICE_UNAVAILABLE);
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://{}/record", server.addr);
    let mut listener = Listener::start(dir.path(), &["--forward-to", &url, "--mirror-response"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = common::http_client();
    let response = rt
        .block_on(
            client
                .post(format!("{}/hooks/in", listener.base_url))
                .body("{}")
                .send(),
        )
        .expect("post");
    assert_eq!(response.status(), 503);
    let id = listener.next_json()["id"].as_i64().expect("id");
    let reader =
        hookscope::store::Reader::open(&dir.path().join("hookscope.sqlite")).expect("store");
    let stored = reader
        .get(id)
        .expect("get")
        .expect("stored before answering");
    assert_eq!(stored.response_status, 503);
    assert!(
        stored
            .note
            .as_deref()
            .is_some_and(|n| n.contains("Answered 503, the forwarded handler's status"))
    );
}
