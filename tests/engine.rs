//! The window's engine driven directly, with no window: commands in, events out, over a real
//! receiver on loopback, a real SQLite file and a real handler. And the same resend through the
//! CLI and through the engine, with the same outcome.

/// The command line's words for a refusal (the binary's own file), so that the engine's
/// refusals and the CLI's can be compared.
#[allow(dead_code)]
#[path = "../src/cli/refused.rs"]
mod cli_refused;
mod common;

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use common::handler::{Flavour, SECRET, serve};
use hookscope::app::probe::ProbeRequest;
use hookscope::app::resend::ResendRequest;
use hookscope::domain::attempt::AttemptKind;
use hookscope::engine::{self, Command, EngineHandle, EngineOptions, Event, ReceiverState};

/// A data dir whose config gives the test endpoint a known Standard Webhooks secret, so the
/// engine's test delivery is signed with [`SECRET`].
fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        format!(
            "[[endpoint]]\npath = \"/hookscope-test\"\nscheme = \"standard-webhooks\"\nsecrets = [\"{SECRET}\"]\n"
        ),
    )
    .expect("config");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(dir.path().join("config.toml"), private).expect("chmod");
    }
    dir
}

fn start(dir: &std::path::Path) -> EngineHandle {
    engine::spawn(
        EngineOptions {
            data_dir: dir.to_path_buf(),
            config_path: dir.join("config.toml"),
            bind: [127, 0, 0, 1].into(),
            port: Some(0),
        },
        Arc::new(|| {}),
    )
    .expect("engine starts")
}

/// The next event `pick` accepts, skipping others; fails after 20 s.
fn wait_for<T>(engine: &EngineHandle, what: &str, mut pick: impl FnMut(Event) -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match engine.try_recv() {
            Some(event) => {
                if let Some(found) = pick(event) {
                    return found;
                }
            }
            None => {
                assert!(Instant::now() < deadline, "no {what} within 20 s");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

fn running(engine: &EngineHandle) -> SocketAddr {
    wait_for(engine, "running receiver", |e| match e {
        Event::Receiver(ReceiverState::Running { addr }) => Some(addr),
        Event::Receiver(ReceiverState::Failed(why)) => panic!("receiver failed: {why}"),
        _ => None,
    })
}

fn notice(engine: &EngineHandle, what: &str) -> String {
    wait_for(engine, what, |e| match e {
        Event::Notice(text) => Some(text),
        Event::Error(text) => panic!("{what}: error instead: {text}"),
        Event::Refused { refused, .. } => panic!("{what}: refused instead: {refused}"),
        _ => None,
    })
}

/// The next error's sentence; a refusal said as the command line says it.
fn error(engine: &EngineHandle, what: &str) -> String {
    wait_for(engine, what, |e| match e {
        Event::Error(text) => Some(text),
        Event::Refused { context, refused } => {
            Some(format!("{context}{}", cli_refused::say(&refused)))
        }
        _ => None,
    })
}

/// Sends the engine's test delivery and waits until it is stored; returns its id.
fn test_delivery(engine: &EngineHandle) -> i64 {
    let before = engine.latest_id.load(std::sync::atomic::Ordering::SeqCst);
    assert!(engine.send(Command::SendTestDelivery));
    let text = notice(engine, "test delivery");
    assert_eq!(text, "test delivery sent: hookscope answered 200");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let latest = engine.latest_id.load(std::sync::atomic::Ordering::SeqCst);
        if latest > before {
            return latest;
        }
        assert!(
            Instant::now() < deadline,
            "the test delivery never showed up"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_receiver_starts_stops_and_restarts_on_command() {
    let dir = data_dir();
    let engine = start(dir.path());
    let first = running(&engine);
    assert!(TcpStream::connect(first).is_ok(), "listening at {first}");

    assert!(engine.send(Command::StopReceiver));
    wait_for(&engine, "stopped receiver", |e| {
        matches!(e, Event::Receiver(ReceiverState::Stopped)).then_some(())
    });
    assert!(
        TcpStream::connect(first).is_err(),
        "{first} still accepts connections after the stop"
    );
    assert!(engine.send(Command::SendTestDelivery));
    assert!(error(&engine, "refusal").contains("start the receiver first"));

    assert!(engine.send(Command::StartReceiver { port: 0 }));
    let second = running(&engine);
    assert!(
        TcpStream::connect(second).is_ok(),
        "listening again at {second}"
    );
}

#[test]
fn queries_page_the_history_and_a_bad_filter_fails_with_its_generation() {
    let dir = data_dir();
    let engine = start(dir.path());
    running(&engine);
    let first = test_delivery(&engine);
    let second = test_delivery(&engine);

    assert!(engine.send(Command::Query {
        generation: 7,
        filter: "sig:pass path:/hookscope-test".into(),
        offset: usize::MAX,
        limit: 10,
    }));
    let (offset, total, ids) = wait_for(&engine, "page", |e| match e {
        Event::Page {
            generation: 7,
            offset,
            total,
            rows,
        } => Some((offset, total, rows.iter().map(|r| r.id).collect::<Vec<_>>())),
        _ => None,
    });
    assert_eq!((offset, total), (0, 2));
    assert_eq!(ids, [first, second]);

    assert!(engine.send(Command::Query {
        generation: 8,
        filter: "sig:maybe".into(),
        offset: 0,
        limit: 10,
    }));
    let message = wait_for(&engine, "query failure", |e| match e {
        Event::QueryFailed {
            generation: 8,
            message,
        } => Some(message),
        _ => None,
    });
    assert_eq!(message, "sig: takes pass, fail, skipped, not \"maybe\"");

    assert!(engine.send(Command::Locate {
        id: second,
        filter: "sig:fail".into(),
    }));
    let position = wait_for(&engine, "located", |e| match e {
        Event::Located { id, position } if id == second => Some(position),
        _ => None,
    });
    assert_eq!(position, None, "a passing delivery is not under sig:fail");
}

#[test]
fn resend_and_probe_run_against_a_real_handler_and_report_back() {
    let dir = data_dir();
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let url = format!("http://{}/webhooks", handler.addr);
    let engine = start(dir.path());
    running(&engine);
    let id = test_delivery(&engine);

    // Re-signed with nothing given: the delivery's scheme and its endpoint's secret.
    assert!(engine.send(Command::Resend(ResendRequest {
        resign: true,
        ..ResendRequest::as_captured(id, url.clone())
    })));
    let text = notice(&engine, "resend");
    assert!(
        text.starts_with(&format!("resent #{id} re-signed to {url}: 200 in ")),
        "{text}"
    );
    let attempts = wait_for(&engine, "attempts", |e| match e {
        Event::Attempts {
            delivery_id,
            attempts,
        } if delivery_id == id => Some(attempts),
        _ => None,
    });
    assert_eq!(attempts.len(), 1);
    assert_eq!(
        (attempts[0].kind, attempts[0].status),
        (AttemptKind::Resend, Some(200))
    );

    assert!(engine.send(Command::Probe(ProbeRequest::new(
        url.clone(),
        "standard-webhooks",
        vec![SECRET.into()],
    ))));
    let report = wait_for(&engine, "probe report", |e| match e {
        Event::Probed(report) => Some(report),
        _ => None,
    })
    .expect("the probe ran");
    let failed: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.verdict == hookscope::net::probe::Verdict::Fail)
        .map(|c| c.name.clone())
        .collect();
    assert!(report.passed, "failed cases: {failed:?}");

    assert!(engine.send(Command::Probe(ProbeRequest::new(url, "nope", vec![]))));
    let refused = wait_for(&engine, "probe refusal", |e| match e {
        Event::Probed(report) => Some(report),
        _ => None,
    })
    .expect_err("an unknown scheme is refused");
    assert!(refused.starts_with("unknown scheme \"nope\""), "{refused}");
}

#[test]
fn the_cli_and_the_engine_resend_alike_with_the_same_fallbacks_and_refusals() {
    let dir = data_dir();
    let handler = serve(Flavour::Correct, StatusCode::OK);
    let url = format!("http://{}/webhooks", handler.addr);
    let engine = start(dir.path());
    running(&engine);
    let id = test_delivery(&engine);

    // The same re-signed resend, with the scheme and secret left to their defaults.
    assert!(engine.send(Command::Resend(ResendRequest {
        resign: true,
        ..ResendRequest::as_captured(id, url.clone())
    })));
    let from_engine = notice(&engine, "engine resend");
    let out = common::run(
        dir.path(),
        &["resend", &id.to_string(), "--to", &url, "--resign"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_cli = String::from_utf8_lossy(&out.stdout).into_owned();
    let prefix = format!("resent #{id} re-signed to {url}: 200 in ");
    assert!(from_engine.starts_with(&prefix), "engine: {from_engine}");
    assert!(from_cli.starts_with(&prefix), "cli: {from_cli}");

    // The handler verified both by the specification, and both kept the event id and body.
    let received = handler.handler.received.lock().expect("lock").clone();
    assert_eq!(received.len(), 2);
    let event_ids: Vec<_> = received
        .iter()
        .map(|(h, _)| h["webhook-id"].to_str().expect("id").to_string())
        .collect();
    assert_eq!(event_ids[0], event_ids[1]);
    assert!(event_ids[0].starts_with("msg_test_"), "{}", event_ids[0]);
    assert_eq!(received[0].1, received[1].1, "the same body bytes");

    // The same refusals, in the same words: an unknown scheme and a missing delivery.
    assert!(engine.send(Command::Resend(ResendRequest {
        resign: true,
        scheme: Some("nope".into()),
        ..ResendRequest::as_captured(id, url.clone())
    })));
    let engine_refusal = error(&engine, "unknown scheme");
    let out = common::run(
        dir.path(),
        &[
            "resend",
            &id.to_string(),
            "--to",
            &url,
            "--resign",
            "--scheme",
            "nope",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!("hookscope: {engine_refusal}")
    );
    assert!(
        engine_refusal.starts_with("--resign needs a scheme: the delivery has nope"),
        "{engine_refusal}"
    );

    assert!(engine.send(Command::Resend(ResendRequest::as_captured(
        999,
        url.clone()
    ))));
    let engine_missing = error(&engine, "missing delivery");
    let out = common::run(dir.path(), &["resend", "999", "--to", &url]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!("hookscope: {engine_missing}")
    );
    assert_eq!(engine_missing, "no delivery #999 in the store");
    assert_eq!(handler.handler.received.lock().expect("lock").len(), 2);
}

#[test]
fn a_bad_filter_reads_the_same_in_the_window_and_on_the_command_line() {
    let dir = data_dir();
    let engine = start(dir.path());
    running(&engine);
    assert!(engine.send(Command::Query {
        generation: 3,
        filter: "sgi:fail".into(),
        offset: 0,
        limit: 10,
    }));
    let in_window = wait_for(&engine, "query failure", |e| match e {
        Event::QueryFailed {
            generation: 3,
            message,
        } => Some(message),
        _ => None,
    });
    assert!(
        in_window.starts_with("sgi: is not a filter key"),
        "{in_window}"
    );
    let out = common::run(dir.path(), &["list", "--filter", "sgi:fail"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!("hookscope: --filter: {in_window}")
    );
}
