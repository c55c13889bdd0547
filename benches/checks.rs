//! `cargo bench --bench checks`: the pure parts on realistic inputs, timed with a plain loop
//! (median of several runs) and printed. No assertion on time: the figures go in BENCHMARKS.md.

use std::time::{Duration, Instant};

use base64::Engine as _;
use hookscope::domain::checks;
use hookscope::domain::delivery::{Delivery, Header};
use hookscope::domain::endpoint::Endpoint;
use hookscope::domain::scheme::{Scheme, Secret};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn median(mut f: impl FnMut(), runs: usize) -> Duration {
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    samples.sort();
    samples[runs / 2]
}

fn json_body(size: usize) -> String {
    let mut body = String::from(
        r#"{"type":"job.completed","data":{"job_id":"job_1","status":"completed","pages":["#,
    );
    let mut i = 0;
    while body.len() < size - 40 {
        body.push_str(&format!(
            r#"{{"n":{i},"text":"lorem ipsum dolor sit amet"}},"#
        ));
        i += 1;
    }
    body.push_str(r#"{"n":-1}]}}"#);
    body
}

fn delivery(body: &str, signature: String) -> Delivery {
    Delivery {
        received_at_ms: 1_700_000_000_000,
        method: "POST".into(),
        path: "/hooks".into(),
        query: String::new(),
        headers: vec![
            Header::new("webhook-id", "msg_1"),
            Header::new("webhook-timestamp", "1700000000"),
            Header::new("webhook-signature", signature),
        ],
        body: body.as_bytes().to_vec(),
        body_size: body.len() as u64,
        body_complete: true,
        remote_addr: None,
    }
}

/// A delivery as `bench/run.sh`'s wrk requests make it (`bench/common.sh`, `wrk_prepare`): the
/// 1 KiB body and its headers.
fn wrk_delivery(scheme: &Scheme, n: u64) -> Delivery {
    let pad = "a".repeat(1024 - 90);
    let body = format!(
        r#"{{"id":"evt_{n}","type":"job.completed","data":{{"job_id":"job_{}","status":"completed","pad":"{pad}"}}}}"#,
        n / 3
    );
    let mut headers = vec![
        Header::new("host", "127.0.0.1:40123"),
        Header::new("content-type", "application/json"),
    ];
    headers.extend(
        scheme
            .sign(
                &[Secret::new(SECRET)],
                &format!("wrk_{n}"),
                1_700_000_000,
                body.as_bytes(),
            )
            .expect("signs"),
    );
    headers.push(Header::new("content-length", body.len().to_string()));
    Delivery {
        headers,
        ..delivery(&body, String::new())
    }
}

fn main() {
    let scheme = Scheme::preset("standard-webhooks").expect("preset");
    let endpoint = Endpoint {
        scheme: Some(scheme.clone()),
        secrets: vec![Secret::new(SECRET)],
        ..Endpoint::catch_all()
    };
    // The same endpoint with the payload advice off, to show what the advice costs.
    let quiet = Endpoint {
        advice: hookscope::domain::advice::Rules {
            enabled: false,
            ..Default::default()
        },
        ..endpoint.clone()
    };
    let wrk = wrk_delivery(&scheme, 7);
    assert_eq!(
        checks::evaluate(&wrk, &endpoint, 1_700_000_000)
            .signature
            .status,
        hookscope::domain::checks::SignatureStatus::Pass
    );
    let took = median(
        || {
            for _ in 0..100 {
                drop(checks::evaluate(&wrk, &endpoint, 1_700_000_000));
            }
        },
        201,
    );
    println!(
        "checks on a wrk delivery ({} B body, 6 keys): {:.2} us",
        wrk.body.len(),
        took.as_secs_f64() * 1e6 / 100.0
    );
    for size in [1024usize, 1024 * 1024] {
        let body = json_body(size);
        let signed = scheme
            .sign(
                &[Secret::new(SECRET)],
                "msg_1",
                1_700_000_000,
                body.as_bytes(),
            )
            .expect("signs");
        let good = signed
            .iter()
            .find(|h| h.name == "webhook-signature")
            .map(|h| h.value_lossy())
            .expect("header");
        let passing = delivery(&body, good);
        // Unknown cause: every hypothesis runs, the worst case.
        let failing = delivery(
            &body,
            format!(
                "v1,{}",
                base64::engine::general_purpose::STANDARD.encode([7u8; 32])
            ),
        );
        let runs = if size > 100_000 { 15 } else { 2001 };
        let pass = median(
            || drop(checks::evaluate(&passing, &endpoint, 1_700_000_000)),
            runs,
        );
        let pass_quiet = median(
            || drop(checks::evaluate(&passing, &quiet, 1_700_000_000)),
            runs,
        );
        let fail = median(
            || drop(checks::evaluate(&failing, &endpoint, 1_700_000_000)),
            runs,
        );
        let tried = checks::evaluate(&failing, &endpoint, 1_700_000_000)
            .signature
            .diagnosis
            .map(|d| d.tried.len())
            .unwrap_or(0);
        println!(
            "{:>8} B body: checks on a passing delivery {:>10.4} ms ({:.4} ms with the advice off); failing, with the full diagnosis ({tried} hypotheses) {:>9.3} ms",
            body.len(),
            pass.as_secs_f64() * 1000.0,
            pass_quiet.as_secs_f64() * 1000.0,
            fail.as_secs_f64() * 1000.0
        );
    }
}
