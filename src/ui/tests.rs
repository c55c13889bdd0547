//! The window driven through egui_kittest over a real engine: a real receiver on a loopback
//! port, a real SQLite store in a temporary directory, deliveries posted over HTTP.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use eframe::egui;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable as _;
use hookscope::checks::SignatureStatus;
use hookscope::engine::{EngineOptions, ReceiverState};
use hookscope::scheme::{Scheme, Secret};

use super::{HookscopeApp, UiState};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn harness(dir: &std::path::Path) -> Harness<'static, HookscopeApp> {
    let ctx = egui::Context::default();
    let app = HookscopeApp::new(
        &ctx,
        EngineOptions {
            data_dir: dir.to_path_buf(),
            config_path: dir.join("config.toml"),
            bind: [127, 0, 0, 1].into(),
            port: Some(0),
        },
        UiState::default(),
    )
    .expect("app starts");
    Harness::builder()
        .with_size(egui::vec2(1300.0, 850.0))
        .build_ui_state(|ui, app: &mut HookscopeApp| app.draw(ui), app)
}

/// Steps the window until `done` holds, or fails after `secs`.
fn wait_until(
    harness: &mut Harness<'_, HookscopeApp>,
    what: &str,
    done: impl Fn(&Harness<'_, HookscopeApp>) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        harness.step();
        if done(harness) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(15));
    }
}

fn receiver_addr(harness: &mut Harness<'_, HookscopeApp>) -> SocketAddr {
    wait_until(harness, "the receiver", |h| {
        matches!(h.state().receiver, ReceiverState::Running { .. })
    });
    match harness.state().receiver {
        ReceiverState::Running { addr } => addr,
        _ => unreachable!("checked above"),
    }
}

/// Posts a Standard Webhooks delivery over real HTTP; `tamper` flips one signature character.
fn post_signed(addr: SocketAddr, path: &str, event_id: &str, body: &str, tamper: bool) -> u16 {
    let scheme = Scheme::preset("standard-webhooks").expect("preset");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    let mut headers = scheme
        .sign(&[Secret::new(SECRET)], event_id, now, body.as_bytes())
        .expect("signs");
    if tamper {
        for h in &mut headers {
            if h.name == "webhook-signature" {
                h.value[4] = if h.value[4] == b'A' { b'B' } else { b'A' };
            }
        }
    }
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    )
    .into_bytes();
    for h in headers {
        request.extend_from_slice(format!("{}: ", h.name).as_bytes());
        request.extend_from_slice(&h.value);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"\r\n");
    request.extend_from_slice(body.as_bytes());
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(&request).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("answer");
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status")
}

#[test]
fn a_posted_delivery_appears_and_selecting_it_shows_its_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        format!("[[endpoint]]\npath = \"/hooks\"\nscheme = \"standard-webhooks\"\nsecrets = [\"{SECRET}\"]\n"),
    )
    .expect("config");
    let mut harness = harness(dir.path());
    let addr = receiver_addr(&mut harness);
    assert_eq!(
        post_signed(
            addr,
            "/hooks/ocr",
            "msg_good",
            r#"{"type":"job.completed","data":{"job_id":"job_1"}}"#,
            false
        ),
        200
    );
    assert_eq!(
        post_signed(
            addr,
            "/hooks/ocr",
            "msg_bad",
            r#"{"type":"job.failed","data":{"job_id":"job_1"}}"#,
            true
        ),
        200
    );

    wait_until(&mut harness, "both rows", |h| {
        h.query_by_label("msg_good").is_some() && h.query_by_label("msg_bad").is_some()
    });

    harness.get_by_label("msg_good").click();
    wait_until(&mut harness, "the detail pane", |h| {
        h.state()
            .detail
            .as_ref()
            .is_some_and(|d| d.event_id.as_deref() == Some("msg_good"))
    });
    assert!(
        harness
            .query_by_label_contains("Standard Webhooks signature verified")
            .is_some()
    );

    // The failing one explains itself.
    harness.get_by_label("msg_bad").click();
    wait_until(&mut harness, "the failing delivery", |h| {
        h.query_by_label_contains("No Standard Webhooks signature matches")
            .is_some()
    });

    // Up moves the selection back to the first row.
    harness.key_press(egui::Key::ArrowUp);
    wait_until(&mut harness, "the selection to move up", |h| {
        h.state()
            .detail
            .as_ref()
            .is_some_and(|d| d.event_id.as_deref() == Some("msg_good"))
    });
}

#[test]
fn the_filter_sig_fail_narrows_the_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[[endpoint]]\npath = \"/\"\nscheme = \"standard-webhooks\"\nsecrets = [\"{SECRET}\"]\n"
        ),
    )
    .expect("config");
    let mut harness = harness(dir.path());
    let addr = receiver_addr(&mut harness);
    for (id, tamper) in [
        ("evt_a", false),
        ("evt_b", true),
        ("evt_c", false),
        ("evt_d", true),
    ] {
        post_signed(
            addr,
            "/hooks",
            id,
            &format!(r#"{{"type":"job.completed","id":"{id}"}}"#),
            tamper,
        );
    }
    wait_until(&mut harness, "four rows", |h| h.state().list.total == 4);

    let filter = harness.get_by_role_and_label(egui::accesskit::Role::TextInput, "Filter");
    filter.focus();
    filter.type_text("sig:fail");
    wait_until(&mut harness, "the filtered list", |h| {
        h.state().list.total == 2 && h.query_by_label("evt_a").is_none()
    });
    assert!(harness.query_by_label("evt_b").is_some());
    assert!(harness.query_by_label("evt_d").is_some());
    assert!(
        harness
            .query_by_label_contains("2 deliveries match the filter")
            .is_some()
    );
}

#[test]
fn adding_a_secret_in_the_endpoints_panel_turns_skipped_into_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut harness = harness(dir.path());
    let addr = receiver_addr(&mut harness);
    post_signed(
        addr,
        "/hooks/ocr",
        "msg_1",
        r#"{"type":"job.completed"}"#,
        false,
    );
    wait_until(&mut harness, "the row", |h| {
        h.query_by_label("msg_1").is_some()
    });
    harness.get_by_label("msg_1").click();
    wait_until(&mut harness, "the skipped signature", |h| {
        h.state()
            .detail
            .as_ref()
            .is_some_and(|d| d.checks.signature.status == SignatureStatus::Skipped)
    });
    assert!(
        harness
            .query_by_label_contains("Looks like Standard Webhooks")
            .is_some()
    );

    harness.get_by_label("Endpoints & secrets").click();
    harness.run_steps(2);
    harness.get_by_label("Add endpoint").click();
    harness.run_steps(2);
    harness.get_by_label("Add secret").click();
    harness.run_steps(2);
    let secret = harness.get_by_role_and_label(egui::accesskit::Role::TextInput, "#1");
    secret.focus();
    secret.type_text(SECRET);
    harness.run_steps(2);
    harness.get_by_label("Save").click();

    wait_until(&mut harness, "the re-checked signature", |h| {
        h.state()
            .detail
            .as_ref()
            .is_some_and(|d| d.checks.signature.status == SignatureStatus::Pass)
    });
    assert!(
        harness
            .query_by_label_contains("Standard Webhooks signature verified")
            .is_some()
    );
    // Saved to the config file, private to the user.
    let saved = std::fs::read_to_string(dir.path().join("config.toml")).expect("config written");
    assert!(saved.contains(SECRET));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join("config.toml"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn the_empty_state_test_delivery_arrives_green() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut harness = harness(dir.path());
    receiver_addr(&mut harness);
    wait_until(&mut harness, "the empty state", |h| {
        h.query_by_label("No deliveries yet").is_some()
    });
    harness.get_by_label("Send a test delivery").click();
    wait_until(&mut harness, "the test row", |h| {
        h.state().list.total == 1 && h.query_by_label("job.completed").is_some()
    });
    let row = &harness.state().list.rows[0];
    assert_eq!(
        row.checks.signature.status,
        SignatureStatus::Pass,
        "{}",
        row.checks.signature.detail
    );
    assert_eq!(
        row.checks.timestamp.status,
        hookscope::checks::TimestampStatus::Pass
    );
    assert_eq!(
        row.checks.duplicate.status,
        hookscope::checks::DuplicateStatus::First
    );
    assert!(row.path.starts_with(hookscope::engine::TEST_ENDPOINT));
}
