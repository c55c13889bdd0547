//! `hookscope replay` over a real store and a real handler on loopback: a selection sent as
//! captured or re-signed, every attempt stored on its delivery and listed in its JSON, a JUnit
//! report, fixtures and HAR files replayed, bad input refused, and a stop midway summarised.

mod common;

use std::path::Path;

use axum::http::StatusCode;
use common::handler::{Flavour, SECRET, serve};
use common::run;
use serde_json::Value;

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The deliveries `list --json --filter F` prints, newest first.
fn listed(dir: &Path, filter: &str) -> Vec<Value> {
    let out = run(
        dir,
        &["list", "--json", "--limit", "1000", "--filter", filter],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn a_filtered_replay_re_signs_each_delivery_and_stores_every_attempt_on_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::seed(dir.path(), 60);
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let filter = "type:job.completed OR type:job.failed";
    let selected = listed(dir.path(), filter);
    assert_eq!(selected.len(), 24, "the seed's completed and failed events");
    let junit = dir.path().join("replay.xml");
    let url = format!("http://{}/webhooks", handler.addr);
    let out = run(
        dir.path(),
        &[
            "replay",
            "--filter",
            filter,
            "--to",
            &url,
            "--resign",
            "--secret",
            SECRET,
            "--rate",
            "200/s",
            "--json",
            "--junit",
            junit.to_str().expect("utf-8"),
        ],
    );
    let summary = json(&out);
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert_eq!(summary["selected"], 24);
    assert_eq!(summary["sent"], 24);
    assert_eq!(summary["by_status"]["200"], 24, "{summary}");
    assert!(summary["latency_ms"]["p99"].as_u64().is_some());

    // The handler verified each one (it answers 401 otherwise) and saw each event once, with
    // the event id it was captured with.
    let received = handler.handler.received.lock().expect("lock").clone();
    assert_eq!(received.len(), 24);
    let mut ids: Vec<String> = received
        .iter()
        .map(|(h, _)| h["webhook-id"].to_str().expect("id").to_string())
        .collect();
    ids.sort();
    let mut expected: Vec<String> = selected
        .iter()
        .map(|d| d["event_id"].as_str().expect("event id").to_string())
        .collect();
    expected.sort();
    assert_eq!(ids, expected);

    // Every attempt is on its delivery, in `list --json`.
    for delivery in listed(dir.path(), filter) {
        let attempts = delivery["attempts"].as_array().expect("attempts");
        assert_eq!(attempts.len(), 1, "{delivery}");
        assert_eq!(attempts[0]["kind"], "replay");
        assert_eq!(attempts[0]["status"], 200);
        assert_eq!(attempts[0]["url"], url);
    }
    assert!(
        listed(dir.path(), "type:job.queued")
            .iter()
            .all(|d| d["attempts"].as_array().is_some_and(Vec::is_empty)),
        "what was not selected was not sent"
    );
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert!(
        xml.contains("tests=\"24\" failures=\"0\" errors=\"0\""),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 24);
}

#[test]
fn as_captured_the_bytes_are_the_stored_ones_and_a_refusing_handler_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::seed(dir.path(), 10);
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let url = format!("http://{}/webhooks", handler.addr);
    // Captured weeks ago: the handler refuses the stale timestamps (400), as it should.
    let out = run(
        dir.path(),
        &[
            "replay",
            "--ids",
            "1-3,5",
            "--to",
            &url,
            "--concurrency",
            "1",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.starts_with("replayed 4 of 4 to "), "{text}");
    assert!(text.contains("4 × 400"), "{text}");
    for id in ["#1 job.queued: 400", "#5 job.failed: 400"] {
        assert!(text.contains(id), "{id} in {text}");
    }
    let received = handler.handler.received.lock().expect("lock").clone();
    let out_dir = dir.path().join("captured");
    std::fs::create_dir(&out_dir).expect("a folder: one fixture per file");
    let out = run(
        dir.path(),
        &[
            "export",
            "--ids",
            "1",
            "2",
            "3",
            "5",
            "--format",
            "fixture",
            "--out",
            out_dir.to_str().expect("utf-8"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored: Vec<Value> = [1, 2, 3, 5]
        .iter()
        .map(|id| {
            let text = std::fs::read_to_string(out_dir.join(format!("delivery-{id}.json")))
                .expect("fixture");
            serde_json::from_str(&text).expect("JSON")
        })
        .collect();
    assert_eq!(received.len(), 4);
    for ((_, body), fixture) in received.iter().zip(&stored) {
        assert_eq!(
            String::from_utf8_lossy(body),
            fixture["body"]["text"].as_str().expect("text body"),
            "sent in stored order, byte for byte"
        );
    }
}

#[test]
fn fixtures_and_har_files_are_stored_then_replayed() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::seed(dir.path(), 12);
    // No such folder: the export writes one bundle file, which replays as well.
    let fixtures = dir.path().join("fixtures.json");
    let exported = listed(dir.path(), "type:job.queued OR type:job.completed").len();
    let har = dir.path().join("morning.har");
    let out = run(
        dir.path(),
        &[
            "export",
            "--filter",
            "type:job.queued OR type:job.completed",
            "--format",
            "fixture",
            "--out",
            fixtures.to_str().expect("utf-8"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(
        dir.path(),
        &[
            "export",
            "--ids",
            "1",
            "2",
            "3",
            "--format",
            "har",
            "--out",
            har.to_str().expect("utf-8"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let handler = serve(Flavour::Correct, StatusCode::ACCEPTED);
    let url = format!("http://{}/record", handler.addr);
    let out = run(
        dir.path(),
        &[
            "replay",
            "--fixtures",
            fixtures.to_str().expect("utf-8"),
            "--to",
            &url,
            "--json",
        ],
    );
    let summary = json(&out);
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert_eq!(summary["sent"], exported, "{summary}");
    assert_eq!(summary["by_status"]["202"], exported);
    // Stored first, after the 12 seeded: each attempt is on a delivery of its own.
    let first = summary["attempts"][0]["delivery_id"].as_i64().expect("id");
    assert_eq!(first, 13);

    let out = run(
        dir.path(),
        &[
            "replay",
            "--har",
            har.to_str().expect("utf-8"),
            "--to",
            &url,
            "--json",
        ],
    );
    let summary = json(&out);
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert_eq!(summary["sent"], 3);
    assert_eq!(
        handler.handler.received.lock().expect("lock").len(),
        exported + 3
    );
    let ids: Vec<i64> = summary["attempts"]
        .as_array()
        .expect("attempts")
        .iter()
        .map(|a| a["delivery_id"].as_i64().expect("id"))
        .collect();
    let first = 13 + exported as i64;
    assert_eq!(ids, vec![first, first + 1, first + 2]);
}

#[test]
fn bad_input_is_one_sentence_and_an_unreachable_handler_stops_the_replay() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::seed(dir.path(), 40);
    let said = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).trim().to_string();

    let out = run(
        dir.path(),
        &[
            "replay",
            "--ids",
            "1",
            "--to",
            "http://127.0.0.1:9/",
            "--rate",
            "0/s",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        said(&out).contains("a rate of 0 sends nothing"),
        "{}",
        said(&out)
    );
    assert_eq!(said(&out).lines().count(), 1, "{}", said(&out));

    // A secret without --resign would be ignored: refused instead.
    let secret_file = dir.path().join("secret");
    std::fs::write(&secret_file, "whsec_x").expect("secret file");
    let out = run(
        dir.path(),
        &[
            "replay",
            "--ids",
            "1",
            "--to",
            "http://127.0.0.1:9/",
            "--secret-file",
            secret_file.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(said(&out).contains("are for --resign"), "{}", said(&out));

    let out = run(
        dir.path(),
        &[
            "replay",
            "--filter",
            "type:nothing.*",
            "--to",
            "http://127.0.0.1:9/",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        said(&out).contains("nothing to replay: no delivery matches type:nothing.*"),
        "{}",
        said(&out)
    );

    let out = run(
        dir.path(),
        &["replay", "--ids", "1,99", "--to", "http://127.0.0.1:9/"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        said(&out).contains("no delivery #99 in the store"),
        "{}",
        said(&out)
    );

    // A port nothing listens on: stopped after the first refusals, not 40 of them.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", closed.local_addr().expect("addr"));
    drop(closed);
    let out = run(
        dir.path(),
        &[
            "replay",
            "--filter",
            "",
            "--to",
            &url,
            "--concurrency",
            "2",
            "--rate",
            "50/s",
            "--json",
        ],
    );
    let summary = json(&out);
    assert_eq!(out.status.code(), Some(1), "{summary}");
    let stopped = summary["stopped"].as_str().expect("stopped");
    assert!(
        stopped.starts_with(&format!("nothing answered at {url}")),
        "{stopped}"
    );
    assert!(summary["sent"].as_u64().expect("sent") < 10, "{summary}");
    assert_eq!(summary["by_status"].get("200"), None);
}

#[cfg(unix)]
#[test]
fn a_replay_stopped_by_sigterm_keeps_and_summarises_every_attempt_made() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::seed(dir.path(), 40);
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let url = format!("http://{}/record", handler.addr);
    let junit = dir.path().join("stopped.xml");
    let child = std::process::Command::new(common::bin())
        .args([
            "replay", "--filter", "", "--to", &url, "--rate", "10/s", "--json", "--junit",
        ])
        .arg(&junit)
        .env("HOOKSCOPE_DATA_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("replay starts");
    // Wait for a few attempts, then ask it to stop as a service manager would.
    let started = std::time::Instant::now();
    while handler.handler.received.lock().expect("lock").len() < 5 {
        assert!(
            started.elapsed().as_secs() < 20,
            "the replay never got going"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let out = child.wait_with_output().expect("replay ends");
    let summary = json(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stopped short is not a success: {summary}"
    );
    assert_eq!(summary["stopped"], "terminated (SIGTERM)");
    let sent = summary["sent"].as_u64().expect("sent");
    assert!((5..40).contains(&sent), "{summary}");
    assert_eq!(
        handler.handler.received.lock().expect("lock").len() as u64,
        sent,
        "the summary counts what the handler saw"
    );
    let stored: usize = listed(dir.path(), "")
        .iter()
        .map(|d| d["attempts"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(stored as u64, sent, "every attempt made is stored");
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(xml.contains(&format!("skipped=\"{}\"", 40 - sent)), "{xml}");
}

#[test]
fn speed_keeps_the_original_spacing_scaled_and_new_ids_make_new_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The seed's deliveries arrived a second apart: five of them span 4 s.
    common::seed(dir.path(), 5);
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let url = format!("http://{}/webhooks", handler.addr);
    let out = run(
        dir.path(),
        &[
            "replay",
            "--ids",
            "1-5",
            "--to",
            &url,
            "--speed",
            "10",
            "--resign",
            "--secret",
            SECRET,
            "--new-ids",
            "--json",
        ],
    );
    let summary = json(&out);
    assert_eq!(out.status.code(), Some(0), "{summary}");
    // 4 s of spacing ten times faster: at least 0.4 s, and far from the original 4 s.
    let elapsed = summary["elapsed_ms"].as_u64().expect("elapsed");
    assert!((390..3000).contains(&elapsed), "{summary}");
    let received = handler.handler.received.lock().expect("lock").clone();
    assert_eq!(received.len(), 5);
    for (headers, _) in &received {
        let id = headers["webhook-id"].to_str().expect("id");
        assert!(
            !id.starts_with("msg_0000000"),
            "a new event id, not the captured {id}"
        );
    }
}

#[test]
fn deliveries_that_cannot_be_re_signed_are_not_sent_and_the_rest_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::seed(dir.path(), 9);
    // Only /hooks/ocr has a secret: its deliveries can be re-signed, the others cannot.
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[[endpoint]]\npath = \"/hooks/ocr\"\nsecrets = [\"{SECRET}\"]\n"),
    )
    .expect("config");
    let ocr = listed(dir.path(), "path:/hooks/ocr").len();
    assert!(ocr > 0 && ocr < 9);
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let url = format!("http://{}/webhooks", handler.addr);
    let out = run(
        dir.path(),
        &["replay", "--filter", "", "--to", &url, "--resign", "--json"],
    );
    let summary = json(&out);
    assert_eq!(out.status.code(), Some(1), "{summary}");
    assert_eq!(summary["sent"], ocr, "{summary}");
    assert_eq!(
        summary["by_status"]["200"], ocr,
        "each verified by the handler"
    );
    assert_eq!(summary["by_status"]["not sent"], 9 - ocr);
    let reason = summary["failures"][0]["error"].as_str().unwrap_or_default();
    assert!(reason.contains("has none"), "{reason}");
    assert_eq!(handler.handler.received.lock().expect("lock").len(), ocr);

    // When none can be, nothing is sent and the reason is the one sentence: exit 2.
    let out = run(
        dir.path(),
        &[
            "replay",
            "--filter",
            "path:/hooks/render",
            "--to",
            &url,
            "--resign",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("--resign needs a secret: endpoint / has none"),
        "{said}"
    );
}

#[test]
fn a_password_in_a_target_url_is_in_no_summary_report_attempt_or_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::seed(dir.path(), 6);
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let junit = dir.path().join("replay.xml");
    let password = "hunter2-pw";
    let url = format!("http://ci:{password}@{}/webhooks", handler.addr);
    let ran = |url: &str, json_out: bool| {
        let mut args = vec![
            "replay", "--ids", "1-3", "--to", url, "--resign", "--secret", SECRET,
        ];
        args.extend(["--junit", junit.to_str().expect("utf-8")]);
        if json_out {
            args.push("--json");
        }
        let out = run(dir.path(), &args);
        let said = format!(
            "{}{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&junit).unwrap_or_default()
        );
        (out, said)
    };
    let (out, said) = ran(&url, true);
    assert_eq!(out.status.code(), Some(0), "{said}");
    // The request carried the credentials (reqwest sends a URL's userinfo as Basic auth)...
    let received = handler.handler.received.lock().expect("lock").clone();
    assert_eq!(received.len(), 3);
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("ci:{password}")
        )
    );
    assert!(received.iter().all(|(headers, _)| {
        headers
            .get("authorization")
            .is_some_and(|v| v == basic.as_str())
    }));
    // ...and nothing hookscope wrote says them.
    assert!(!said.contains(password), "{said}");
    assert!(said.contains("http://ci:[redacted]@"), "{said}");
    let (_, said) = ran(&url, false);
    assert!(
        !said.contains(password) && said.contains("[redacted]"),
        "{said}"
    );
    let listed = run(dir.path(), &["list", "--json", "--limit", "10"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains("\"kind\":\"replay\""), "{text}");
    assert!(!text.contains(password), "{text}");
    // Nobody there: the stop sentence and the attempt's error do not say it either.
    let (out, said) = ran(&format!("http://ci:{password}@127.0.0.1:9/"), true);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("nothing answered at http://ci:[redacted]@127.0.0.1:9/"),
        "{said}"
    );
    assert!(!said.contains(password), "{said}");
    // Refused targets, a token written as the user, and a forward rule's: masked too.
    let (out, said) = ran(&format!("ftp://ci:{password}@127.0.0.1/"), true);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("ftp://ci:[redacted]@127.0.0.1/") && !said.contains(password),
        "{said}"
    );
    let (_, said) = ran(&format!("http://{password}@127.0.0.1:9/"), true);
    assert!(
        said.contains("http://[redacted]@127.0.0.1:9/") && !said.contains(password),
        "{said}"
    );
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[[endpoint]]\npath = \"/hooks\"\n[[endpoint.forward]]\nto = \"gopher://ci:{password}@h/\"\n"),
    )
    .expect("config");
    let out = run(dir.path(), &["listen", "--port", "0"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("gopher://ci:[redacted]@h/") && !said.contains(password),
        "{said}"
    );
}
