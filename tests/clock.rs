//! The clock jumps mid-run: back an hour, then forward a day, through hookscope's injectable
//! clock (`domain::clock::shift`, which moves this process's wall clock as the system clock
//! jumping would, and leaves the steady clock alone). The receiver, the store and the checks
//! run in this test process on a real loopback port and a real SQLite file. One test in its own
//! binary, since the clock is the process's.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hookscope::capture::{Controls, SharedSettings};
use hookscope::config::{ConfigFile, Overrides, RetentionSection, Settings};
use hookscope::domain::clock;
use hookscope::domain::scheme::{Scheme, Secret};
use hookscope::domain::timeline::FlagKind;
use hookscope::net::receiver::Receiver;
use hookscope::store::{Reader, Store};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// The sender's clock, which is right all along.
fn sender_now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64
}

/// Posts a signed job event; returns the delivery id hookscope answered with.
fn post(addr: SocketAddr, msg: &str, state: &str) -> i64 {
    let body = format!(
        r#"{{"id":"{msg}","type":"job.{state}","created_at":{},"data":{{"job_id":"job_clock","status":"{state}"}}}}"#,
        sender_now_secs()
    );
    let headers = Scheme::preset("standard-webhooks")
        .expect("preset")
        .sign(
            &[Secret::new(SECRET)],
            msg,
            sender_now_secs(),
            body.as_bytes(),
        )
        .expect("signs");
    let mut request = format!(
        "POST /hooks/jobs HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for h in &headers {
        request.push_str(&format!(
            "{}: {}\r\n",
            h.name,
            String::from_utf8_lossy(&h.value)
        ));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    answer
        .lines()
        .find_map(|l| l.strip_prefix("x-hookscope-delivery-id: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the delivery id")
}

#[test]
fn a_clock_that_jumps_back_then_forward_changes_no_order_no_span_and_deletes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(&dir.path().join("hookscope.sqlite")).expect("store");
    let settings = Settings::resolve(
        &ConfigFile::default(),
        &Overrides {
            scheme: Some("standard-webhooks".into()),
            secrets: vec![Secret::new(SECRET)],
            ..Overrides::default()
        },
    )
    .expect("settings");
    let receiver = Receiver::start(
        [127, 0, 0, 1].into(),
        0,
        SharedSettings::new(settings),
        store.writer(),
        None,
        Arc::new(Controls::default()),
    )
    .expect("receiver");
    let addr = receiver.local_addr();

    let queued = post(addr, "msg_1", "queued");
    clock::shift(-HOUR);
    let processing = post(addr, "msg_2", "processing");
    clock::shift(HOUR + DAY);
    let completed = post(addr, "msg_3", "completed");

    // Ids and the list follow arrival, whatever the clock said.
    assert!(queued < processing && processing < completed);
    let reader = Reader::open(store.path()).expect("reader");
    let listed: Vec<i64> = reader
        .list(10, None)
        .expect("list")
        .iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(listed, [completed, processing, queued], "newest first");

    // The timestamp check used the clock as it read, and says the clock moved.
    let check = |id: i64| {
        reader
            .get(id)
            .expect("read")
            .expect("stored")
            .checks
            .timestamp
    };
    let before = check(queued);
    assert_eq!(before.status.as_str(), "pass", "{}", before.detail);
    assert!(
        before.detail.contains("by this machine's clock"),
        "{}",
        before.detail
    );
    let back = check(processing);
    assert!(
        back.detail.contains("(1 h) in the future")
            && back
                .detail
                .contains("This machine's clock moved 1 h back while hookscope ran"),
        "{}",
        back.detail
    );
    let forward = check(completed);
    assert!(
        forward.detail.contains("old") && forward.detail.contains("forward while hookscope ran"),
        "{}",
        forward.detail
    );

    // The job's timeline: arrival order is the store's; the step back is flagged, not drawn
    // backwards; no negative span.
    let timeline =
        hookscope::app::jobs::timeline_of(&reader, "job_clock", clock::now_ms(), 10 * DAY)
            .expect("timeline");
    assert_eq!(timeline.arrival_order, [queued, processing, completed]);
    let skew = timeline
        .flags
        .iter()
        .find(|f| f.kind == FlagKind::ClockSkew)
        .expect("clock skew flagged");
    assert_eq!(skew.delivery_ids, [processing]);
    assert!(
        skew.detail.contains("stamped 1 h before"),
        "{}",
        skew.detail
    );
    assert!(timeline.last_seen_ms >= timeline.first_seen_ms);
    assert!(
        !timeline
            .flags
            .iter()
            .any(|f| f.kind == FlagKind::OutOfOrder),
        "created in order, so not out of order: {:?}",
        timeline.flags
    );
    let drawn = hookscope::domain::timeline::monotone(timeline.arrival_order.iter().map(|id| {
        reader
            .get(*id)
            .expect("read")
            .expect("row")
            .delivery
            .received_at_ms
    }));
    assert!(drawn.windows(2).all(|w| w[0] <= w[1]));

    // Retention of one day, a day "later" by the jumped clock: nothing captured in this run is
    // a day old, so nothing goes.
    let removed = hookscope::app::history::apply_retention(
        &store.writer(),
        &RetentionSection {
            max_days: Some(1),
            max_deliveries: None,
        },
        clock::now_ms(),
    )
    .expect("retention");
    assert_eq!(removed, 0, "the clock going forward deleted captures");
    assert_eq!(reader.count().expect("count"), 3);

    receiver.stop();
    store.shutdown();
}
