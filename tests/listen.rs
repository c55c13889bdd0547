//! `hookscope listen` over real HTTP on loopback: JSON lines, the store on disk, duplicates under
//! concurrency, the body limit, durability across SIGKILL, and start-up errors.

mod common;

use common::{Listener, now_secs, run};
use hookscope::domain::checks::DuplicateStatus;
use hookscope::domain::scheme::{Scheme, Secret};
use hookscope::store::Reader;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn signed_request(
    client: &reqwest::Client,
    url: &str,
    event_id: &str,
    body: &[u8],
) -> reqwest::RequestBuilder {
    let scheme = Scheme::preset("standard-webhooks").expect("preset");
    let headers = scheme
        .sign(&[Secret::new(SECRET)], event_id, now_secs(), body)
        .expect("signs");
    let mut request = client.post(url).body(body.to_vec());
    for h in headers {
        request = request.header(h.name, h.value);
    }
    request
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn signed_delivery_passes_and_a_flipped_signature_fails_with_a_sentence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(
        dir.path(),
        &["--scheme", "standard-webhooks", "--secret", SECRET],
    );
    let url = format!("{}/hooks/ocr?batch=7", listener.base_url);
    let body = br#"{"type":"job.completed","data":{"job_id":"job_8f3a1c2b","status":"completed"}}"#;
    let rt = runtime();
    let client = common::http_client();

    let response = rt
        .block_on(signed_request(&client, &url, "msg_1", body).send())
        .expect("post");
    assert_eq!(response.status(), 200);
    let line = listener.next_json();
    assert_eq!(line["checks"]["signature"]["status"], "pass", "{line}");
    assert_eq!(line["checks"]["timestamp"]["status"], "pass");
    assert_eq!(line["checks"]["duplicate"]["status"], "first");
    assert_eq!(line["path"], "/hooks/ocr");
    assert_eq!(line["query"], "batch=7");
    assert_eq!(line["event_id"], "msg_1");
    assert_eq!(line["event_type"], "job.completed");
    assert_eq!(line["job"]["job_id"], "job_8f3a1c2b");
    assert_eq!(line["response"]["status"], 200);
    assert!(line["received_at"].as_str().expect("time").ends_with('Z'));

    // Flip one character of the signature: same event id, so also a duplicate.
    let scheme = Scheme::preset("standard-webhooks").expect("preset");
    let mut headers = scheme
        .sign(&[Secret::new(SECRET)], "msg_2", now_secs(), body)
        .expect("signs");
    for h in &mut headers {
        if h.name == "webhook-signature" {
            h.value[5] = if h.value[5] == b'A' { b'B' } else { b'A' };
        }
    }
    let mut request = client.post(&url).body(body.to_vec());
    for h in headers {
        request = request.header(h.name, h.value);
    }
    let response = rt.block_on(request.send()).expect("post");
    assert_eq!(
        response.status(),
        200,
        "hookscope answers its configured status even to a bad signature"
    );
    let line = listener.next_json();
    assert_eq!(line["checks"]["signature"]["status"], "fail", "{line}");
    let detail = line["checks"]["signature"]["detail"]
        .as_str()
        .expect("detail");
    assert!(
        detail.contains("No Standard Webhooks signature matches") && detail.contains("secret"),
        "{detail}"
    );

    // The store holds both, with the exact body bytes.
    let reader = Reader::open(&listener.store_path()).expect("store");
    let rows = reader.list(10, None).expect("list");
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.delivery.body == body));
    assert_eq!(
        rows[0].checks.signature.status,
        hookscope::domain::checks::SignatureStatus::Fail
    );

    // `list --json` prints the same shape from the store.
    let out = run(dir.path(), &["list", "--json", "--limit", "1"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("list JSON");
    assert_eq!(listed["id"], rows[0].id);
    assert_eq!(listed["checks"]["signature"]["status"], "fail");
}

#[test]
fn two_hundred_concurrent_retries_of_one_event_yield_exactly_one_first() {
    // The issue's figure: 200 copies in flight at once, over as many connections.
    const COPIES: usize = 200;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(
        dir.path(),
        &["--scheme", "standard-webhooks", "--secret", SECRET],
    );
    let url = format!("{}/hooks", listener.base_url);
    let rt = runtime();
    let client = common::http_client();
    let statuses = rt.block_on(async {
        let mut tasks = Vec::new();
        for attempt in 0..COPIES {
            let request = signed_request(
                &client,
                &url,
                "evt_same",
                format!("{{\"attempt\":{attempt}}}").as_bytes(),
            );
            tasks.push(tokio::spawn(async move {
                request.send().await.map(|r| r.status().as_u16())
            }));
        }
        let mut statuses = Vec::new();
        for t in tasks {
            statuses.push(t.await.expect("task").expect("post"));
        }
        statuses
    });
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let lines: Vec<serde_json::Value> = (0..COPIES).map(|_| listener.next_json()).collect();
    let firsts = lines
        .iter()
        .filter(|l| l["checks"]["duplicate"]["status"] == "first")
        .count();
    assert_eq!(firsts, 1);
    let reader = Reader::open(&listener.store_path()).expect("store");
    assert_eq!(reader.count().expect("count"), COPIES as i64);
    assert_eq!(
        reader
            .count_duplicates(DuplicateStatus::First)
            .expect("firsts"),
        1
    );
    assert_eq!(
        reader
            .count_duplicates(DuplicateStatus::Duplicate)
            .expect("dups"),
        COPIES as i64 - 1
    );
    // Every duplicate points at the one first delivery.
    let first_id = lines
        .iter()
        .find(|l| l["checks"]["duplicate"]["status"] == "first")
        .map(|l| l["id"].clone())
        .expect("first");
    assert!(
        lines
            .iter()
            .all(|l| l["checks"]["duplicate"]["first_id"] == first_id)
    );
}

#[test]
fn acknowledged_delivery_survives_sigkill_right_after_the_response() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let url = format!("{}/hooks/render", listener.base_url);
    // A body with every byte value, so "exact bytes" means exact.
    let body: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let rt = runtime();
    let client = common::http_client();
    let response = rt
        .block_on(
            client
                .post(&url)
                .header("x-event-id", "evt_kill")
                .body(body.clone())
                .send(),
        )
        .expect("post");
    assert_eq!(response.status(), 200);
    let id: i64 = response.headers()["x-hookscope-delivery-id"]
        .to_str()
        .expect("id")
        .parse()
        .expect("number");
    listener.child.kill().expect("SIGKILL");
    listener.child.wait().expect("reaped");

    let reader = Reader::open(&listener.store_path()).expect("store reopens");
    reader.integrity_check().expect("integrity_check says ok");
    let stored = reader
        .get(id)
        .expect("query")
        .expect("the acknowledged delivery is on disk");
    assert_eq!(stored.delivery.body, body);
    assert_eq!(stored.event_id.as_deref(), Some("evt_kill"));

    // A restarted receiver on the same store continues the numbering and the duplicate index.
    let mut again = Listener::start(dir.path(), &[]);
    let response = rt
        .block_on(
            client
                .post(format!("{}/hooks/render", again.base_url))
                .header("x-event-id", "evt_kill")
                .body("retry")
                .send(),
        )
        .expect("post");
    assert_eq!(response.status(), 200);
    let line = again.next_json();
    assert_eq!(line["id"], id + 1);
    assert_eq!(line["checks"]["duplicate"]["status"], "duplicate");
    assert_eq!(line["checks"]["duplicate"]["first_id"], id);
}

#[test]
fn body_over_the_limit_gets_413_and_is_still_recorded_with_its_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        "[receiver]\nbody_limit_bytes = 1024\n",
    )
    .expect("config");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = runtime();
    let client = common::http_client();
    let url = format!("{}/big", listener.base_url);

    let at_limit = rt
        .block_on(client.post(&url).body(vec![b'a'; 1024]).send())
        .expect("post");
    assert_eq!(at_limit.status(), 200);
    let line = listener.next_json();
    assert_eq!(line["body_size"], 1024);
    assert_eq!(line["body_complete"], true);

    let over = rt
        .block_on(client.post(&url).body(vec![b'a'; 5000]).send())
        .expect("post");
    assert_eq!(over.status(), 413);
    let line = listener.next_json();
    assert_eq!(line["body_size"], 5000);
    assert_eq!(line["body_complete"], false);
    assert_eq!(line["response"]["status"], 413);
    assert!(
        line["note"]
            .as_str()
            .expect("note")
            .contains("over the 1 KiB limit"),
        "{line}"
    );

    // A chunked body (no Content-Length) is cut off at the limit as well.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..8).map(|_| Ok(vec![b'b'; 512])).collect();
    let stream = reqwest::Body::wrap_stream(futures_stream(chunks));
    let chunked = rt
        .block_on(client.post(&url).body(stream).send())
        .expect("post");
    assert_eq!(chunked.status(), 413);
    let line = listener.next_json();
    assert_eq!(line["body_complete"], false);
    assert!(
        line["note"].as_str().expect("note").contains("at least"),
        "{line}"
    );
}

fn futures_stream(
    items: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_core::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + Sync + 'static {
    struct Iter(std::vec::IntoIter<Result<Vec<u8>, std::io::Error>>);
    impl futures_core::Stream for Iter {
        type Item = Result<Vec<u8>, std::io::Error>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            std::task::Poll::Ready(self.0.next())
        }
    }
    Iter(items.into_iter())
}

#[test]
fn without_a_scheme_the_scheme_is_detected_and_timestamp_and_duplicate_still_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = runtime();
    let client = common::http_client();
    let stale = now_secs() - 900;
    let response = rt
        .block_on(
            client
                .post(format!("{}/stripe", listener.base_url))
                .header(
                    "Stripe-Signature",
                    format!("t={stale},v1={}", "ab".repeat(32)),
                )
                .body(r#"{"id":"evt_9","type":"invoice.paid"}"#)
                .send(),
        )
        .expect("post");
    assert_eq!(response.status(), 200);
    let line = listener.next_json();
    assert_eq!(line["scheme"], "stripe");
    assert_eq!(line["checks"]["signature"]["status"], "skipped");
    let detail = line["checks"]["signature"]["detail"]
        .as_str()
        .expect("detail");
    assert!(
        detail.contains("Looks like Stripe") && detail.contains("secret"),
        "{detail}"
    );
    assert_eq!(line["checks"]["timestamp"]["status"], "fail");
    assert_eq!(line["checks"]["duplicate"]["status"], "first");
    assert_eq!(line["event_id"], "evt_9");
}

#[test]
fn configured_status_and_delay_are_applied_after_the_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        "[[endpoint]]\npath = \"/slow\"\nrespond_status = 503\nrespond_delay_ms = 300\n",
    )
    .expect("config");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = runtime();
    let client = common::http_client();
    let started = std::time::Instant::now();
    let response = rt
        .block_on(
            client
                .put(format!("{}/slow/x", listener.base_url))
                .body("{}")
                .send(),
        )
        .expect("send");
    assert_eq!(response.status(), 503);
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
    let line = listener.next_json();
    assert_eq!(line["method"], "PUT");
    assert_eq!(line["endpoint"], "/slow");
    assert_eq!(line["response"]["status"], 503);
    // Other paths fall through to the catch-all.
    let other = rt
        .block_on(client.get(format!("{}/fast", listener.base_url)).send())
        .expect("send");
    assert_eq!(other.status(), 200);
}

#[test]
fn port_in_use_is_one_line_naming_the_port() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(dir.path(), &["listen", "--port", &port]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("port {port} is already in use")),
        "{stderr}"
    );
}

#[test]
fn binding_beyond_loopback_prints_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = Listener::start(dir.path(), &["--bind", "0.0.0.0"]);
    assert!(
        listener
            .stderr_head
            .contains("warning: listening on 0.0.0.0"),
        "{}",
        listener.stderr_head
    );
}

#[test]
fn a_broken_config_is_a_clear_error_not_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        "[[endpoint]]\npath = \"/x\"\nscheme = \"stirpe\"\n",
    )
    .expect("config");
    let out = run(dir.path(), &["listen", "--port", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("scheme \"stirpe\""), "{stderr}");
}

#[cfg(unix)]
#[test]
fn sigterm_finishes_the_delivery_in_flight_and_exits_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Each answer waits 800 ms after the commit: SIGTERM arrives while one is in flight.
    let mut listener = Listener::start(dir.path(), &["--respond-delay-ms", "800"]);
    let url = format!("{}/hooks/term", listener.base_url);
    let in_flight = std::thread::Builder::new()
        .name("test-in-flight".into())
        .spawn(move || {
            let rt = runtime();
            rt.block_on(
                common::http_client()
                    .post(&url)
                    .header("x-event-id", "evt_term")
                    .body("{}")
                    .send(),
            )
            .map(|r| r.status().as_u16())
        })
        .expect("thread");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pid = listener.child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    assert_eq!(
        in_flight.join().expect("joined").expect("answered"),
        200,
        "the delivery in flight is answered"
    );
    let status = listener.child.wait().expect("exits");
    assert_eq!(status.code(), Some(0), "a clean exit on SIGTERM");
    // Answered after the signal, and printed all the same: a script reading `--json` misses
    // no delivery that was acknowledged.
    let printed = listener.next_json();
    assert_eq!(printed["event_id"], "evt_term", "{printed}");
    let reader = Reader::open(&listener.store_path()).expect("store");
    let rows = reader.list(10, None).expect("list");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].event_id.as_deref(), Some("evt_term"));
}

#[test]
fn an_endpoint_answers_with_its_own_body_and_headers() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        "[[endpoint]]\npath = \"/hooks/slack\"\nrespond_body = \"ok\"\nrespond_headers = { \"X-Slack-No-Retry\" = \"1\" }\n\n[[endpoint]]\npath = \"/hooks/json\"\nrespond_status = 202\nrespond_body = '{\"accepted\":true}'\n",
    )
    .expect("config");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = runtime();
    let client = common::http_client();
    let response = rt
        .block_on(
            client
                .post(format!("{}/hooks/slack", listener.base_url))
                .body("x")
                .send(),
        )
        .expect("post");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-slack-no-retry"], "1");
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    assert!(response.headers().contains_key("x-hookscope-delivery-id"));
    assert_eq!(rt.block_on(response.text()).expect("body"), "ok");
    listener.next_json();

    let response = rt
        .block_on(
            client
                .post(format!("{}/hooks/json", listener.base_url))
                .body("x")
                .send(),
        )
        .expect("post");
    assert_eq!(response.status(), 202);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(
        rt.block_on(response.text()).expect("body"),
        r#"{"accepted":true}"#
    );

    // Anything else keeps hookscope's own answer.
    let response = rt
        .block_on(
            client
                .post(format!("{}/other", listener.base_url))
                .body("x")
                .send(),
        )
        .expect("post");
    assert!(
        rt.block_on(response.text())
            .expect("body")
            .starts_with("{\"received\":true")
    );
}

#[test]
fn an_answer_header_that_http_cannot_carry_is_a_config_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        "[[endpoint]]\npath = \"/hooks\"\nrespond_headers = { \"Bad Name\" = \"1\" }\n",
    )
    .expect("config");
    let out = run(dir.path(), &["listen", "--port", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "endpoint /hooks is invalid: respond_headers: \"Bad Name\" is not a header name"
        ),
        "{stderr}"
    );
}

/// The one-line form says in a few words why no scheme was found, where the JSON's sentence says
/// it at length.
#[test]
fn an_unknown_scheme_says_why_on_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = runtime();
    let client = common::http_client();
    for (path, header) in [("/plain", None), ("/acme", Some("x-acme-signature"))] {
        let mut request = client
            .post(format!("{}{path}", listener.base_url))
            .body(r#"{"id":"evt_1"}"#);
        if let Some(name) = header {
            request = request.header(name, "deadbeef");
        }
        assert_eq!(rt.block_on(request.send()).expect("post").status(), 200);
        assert!(listener.next_json()["scheme"].is_null());
    }
    let listed = common::run(dir.path(), &["list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    let line_of = |path: &str| {
        text.lines()
            .find(|l| l.contains(&format!("POST {path} ")))
            .unwrap_or_else(|| panic!("no line for {path}: {text}"))
            .to_string()
    };
    assert!(
        line_of("/plain").contains(" unknown-scheme (no signature header) "),
        "{text}"
    );
    assert!(
        line_of("/acme").contains(" unknown-scheme (headers match no preset: x-acme-signature) "),
        "{text}"
    );
}

/// With nothing configured every path falls under the catch-all endpoint, yet a
/// Slack delivery is never a duplicate of a Stripe one that happens to carry the same body id;
/// a real retry (same path, same scheme) still is, and each sentence says the scope.
#[test]
fn the_same_body_id_from_two_providers_is_two_events_and_a_retry_is_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = runtime();
    let client = common::http_client();
    let now = now_secs();
    let body = r#"{"id":"evt_1","type":"invoice.paid"}"#;
    let mut post = |path: &str, headers: &[(&str, String)]| {
        let mut request = client
            .post(format!("{}{path}", listener.base_url))
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        assert_eq!(rt.block_on(request.send()).expect("post").status(), 200);
        listener.next_json()
    };
    let stripe = [(
        "Stripe-Signature",
        format!("t={now},v1={}", "ab".repeat(32)),
    )];
    let slack = [
        ("X-Slack-Signature", format!("v0={}", "cd".repeat(32))),
        ("X-Slack-Request-Timestamp", now.to_string()),
    ];
    let first = post("/hooks/stripe", &stripe);
    let other_provider = post("/hooks/slack", &slack);
    let other_path = post("/hooks/stripe-eu", &stripe);
    let retry = post("/hooks/stripe", &stripe);
    let duplicate = |line: &serde_json::Value| {
        (
            line["checks"]["duplicate"]["status"]
                .as_str()
                .map(str::to_string),
            line["checks"]["duplicate"]["detail"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        )
    };
    assert_eq!(other_provider["scheme"], "slack");
    let (status, detail) = duplicate(&first);
    assert_eq!(status.as_deref(), Some("first"));
    assert!(
        detail.contains("evt_1 on /hooks/stripe (stripe)"),
        "{detail}"
    );
    let (status, detail) = duplicate(&other_provider);
    assert_eq!(status.as_deref(), Some("first"), "{detail}");
    assert!(detail.contains("on /hooks/slack (slack)"), "{detail}");
    assert_eq!(duplicate(&other_path).0.as_deref(), Some("first"));
    let (status, detail) = duplicate(&retry);
    assert_eq!(status.as_deref(), Some("duplicate"), "{detail}");
    assert_eq!(retry["checks"]["duplicate"]["first_id"], first["id"]);
    assert!(
        detail.contains("evt_1 on /hooks/stripe (stripe) was already received once"),
        "{detail}"
    );
}
