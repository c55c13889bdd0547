//! HTTPS for everything that goes out: a handler on a certificate generated in the test and
//! signed by nobody. Resend, probe and forward succeed with `--insecure` and fail without it in
//! one sentence that names the host and the reason.

mod common;

use axum::http::StatusCode;
use common::handler::{Flavour, SECRET, serve_tls};
use common::{Listener, now_secs, run};
use hookscope::domain::scheme::{Scheme, Secret};

/// Captures one correctly signed Standard Webhooks delivery through `listen`; returns its id.
fn capture(listener: &mut Listener) -> i64 {
    let scheme = Scheme::preset("standard-webhooks").expect("preset");
    let body = br#"{"id":"evt_tls","type":"job.completed","data":{"job_id":"job_tls"}}"#;
    let headers = scheme
        .sign(&[Secret::new(SECRET)], "msg_tls", now_secs(), body)
        .expect("signs");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut request = common::http_client()
        .post(format!("{}/hooks/in", listener.base_url))
        .body(body.to_vec());
    for h in headers {
        request = request.header(h.name, h.value);
    }
    assert_eq!(rt.block_on(request.send()).expect("post").status(), 200);
    listener.next_json()["id"].as_i64().expect("id")
}

#[test]
fn resend_and_probe_over_https_need_insecure_for_a_self_signed_certificate() {
    let server = serve_tls(Flavour::Correct, StatusCode::OK);
    let url = format!("https://127.0.0.1:{}/webhooks", server.addr.port());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(
        dir.path(),
        &["--scheme", "standard-webhooks", "--secret", SECRET],
    );
    let id = capture(&mut listener).to_string();

    // Without --insecure: refused before anything is sent, in one sentence.
    // (The listener's --secret is not in the config: the resend is given it too.)
    let out = run(
        dir.path(),
        &["resend", &id, "--to", &url, "--resign", "--secret", SECRET],
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("TLS with 127.0.0.1 failed: its certificate is not signed by an authority this machine trusts"),
        "{text}"
    );
    assert!(text.contains("pass --insecure"), "{text}");
    assert!(server.handler.received.lock().expect("lock").is_empty());

    // With it: the handler verifies the re-signed delivery by the specification.
    let out = run(
        dir.path(),
        &[
            "resend",
            &id,
            "--to",
            &url,
            "--resign",
            "--secret",
            SECRET,
            "--insecure",
            "--json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let attempt: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(attempt["status"], 200);
    assert_eq!(server.handler.received.lock().expect("lock").len(), 1);

    // The probe: every case fails on the handshake without --insecure, and passes with it.
    let probe = |extra: &[&str]| {
        let mut args = vec![
            "probe",
            &url,
            "--scheme",
            "standard-webhooks",
            "--secret",
            SECRET,
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = run(dir.path(), &args);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        (out.status.code(), report)
    };
    let (code, report) = probe(&[]);
    assert_eq!(code, Some(1));
    let valid = &report["cases"][0];
    assert_eq!(valid["name"], "valid");
    assert_eq!(valid["verdict"], "fail");
    assert!(
        valid["detail"]
            .as_str()
            .expect("detail")
            .contains("TLS with 127.0.0.1 failed"),
        "{valid}"
    );
    let (code, report) = probe(&["--insecure"]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["passed"], true);
}

#[test]
fn forwarding_to_an_https_handler_with_insecure_delivers_byte_exact() {
    let server = serve_tls(Flavour::Correct, StatusCode::OK);
    let url = format!("https://127.0.0.1:{}/webhooks", server.addr.port());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(
        dir.path(),
        &[
            "--scheme",
            "standard-webhooks",
            "--secret",
            SECRET,
            "--forward-to",
            &url,
            "--insecure",
            "--mirror-response",
        ],
    );
    capture(&mut listener);
    let received = server.handler.received.lock().expect("lock").clone();
    assert_eq!(
        received.len(),
        1,
        "the mirrored answer waited for the forward"
    );
    assert_eq!(received[0].0["webhook-id"], "msg_tls");
}
