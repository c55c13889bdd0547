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

/// A delivery of `body` with a Standard Webhooks signature that verifies with [`SECRET`].
fn signed_delivery(scheme: &Scheme, body: &str) -> Delivery {
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
    delivery(body, good)
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
        let passing = signed_delivery(&scheme, &body);
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
    contract_bench(&scheme, &endpoint);
    wrk_contract_bench(&scheme, &endpoint);
}

/// An OpenAPI 3.1 contract of 50 webhooks (`event.0` … `event.49`), each a `$ref` to an
/// envelope and a data schema of its own, in the shape of a provider's spec.
fn contract_of_50() -> hookscope::domain::contract::Contract {
    use serde_json::json;
    let mut webhooks = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    schemas.insert(
        "Envelope".into(),
        json!({"type": "object", "required": ["id", "type", "data"],
               "properties": {"id": {"type": "string"}, "type": {"type": "string"},
                              "created_at": {"type": "string", "format": "date-time"}}}),
    );
    for n in 0..50 {
        let name = format!("event.{n}");
        webhooks.insert(
            name.clone(),
            json!({"post": {"operationId": format!("event{n}"), "requestBody": {"content": {"application/json": {
                "schema": {"$ref": format!("#/components/schemas/Event{n}")}}}}}}),
        );
        schemas.insert(
            format!("Event{n}"),
            json!({"allOf": [{"$ref": "#/components/schemas/Envelope"},
                   {"properties": {"type": {"const": name},
                                   "data": {"type": "object", "required": ["job_id", "status", "items"],
                                            "properties": {"job_id": {"type": "string"},
                                                           "status": {"enum": ["queued", "processing", "completed"]},
                                                           "items": {"type": "array", "items": {"type": "object",
                                                               "required": ["n", "text"],
                                                               "properties": {"n": {"type": "integer"}, "text": {"type": "string", "maxLength": 200}}}}}}}}]}),
        );
    }
    let document = json!({"openapi": "3.1.0", "info": {"title": "bench", "version": "1"},
                          "webhooks": webhooks, "components": {"schemas": schemas}});
    hookscope::domain::contract::Contract::build(
        "bench.yaml",
        vec![hookscope::domain::contract::Document {
            uri: "file:///bench/bench.yaml".into(),
            value: document,
        }],
    )
    .expect("the bench contract compiles")
}

/// The schema check on a 10 KiB body against a 50-schema contract, alone and as part of the
/// checks (issue 38).
fn contract_bench(scheme: &Scheme, endpoint: &Endpoint) {
    let compiled = Instant::now();
    let contract = std::sync::Arc::new(contract_of_50());
    let compile = compiled.elapsed();
    let mut body = String::from(
        r#"{"id":"evt_1","type":"event.25","created_at":"2026-12-05T09:00:00Z","data":{"job_id":"job_1","status":"completed","items":["#,
    );
    let mut i = 0;
    while body.len() < 10 * 1024 - 40 {
        body.push_str(&format!(
            r#"{{"n":{i},"text":"lorem ipsum dolor sit amet"}},"#
        ));
        i += 1;
    }
    body.push_str(r#"{"n":-1,"text":""}]}}"#);
    let passing = signed_delivery(scheme, &body);
    let with_contract = Endpoint {
        contract: Some(std::sync::Arc::clone(&contract)),
        ..endpoint.clone()
    };
    let verdict = checks::evaluate(&passing, &with_contract, 1_700_000_000)
        .schema
        .expect("a schema check");
    assert_eq!(
        verdict.status,
        hookscope::domain::contract::SchemaStatus::Pass,
        "{verdict:?}"
    );
    let alone = median(
        || drop(contract.check(Some("event.25"), body.as_bytes())),
        2001,
    );
    let without = median(
        || drop(checks::evaluate(&passing, endpoint, 1_700_000_000)),
        2001,
    );
    let with = median(
        || drop(checks::evaluate(&passing, &with_contract, 1_700_000_000)),
        2001,
    );
    println!(
        "{:>8} B body, a 50-schema contract (compiled in {:.1} ms): the schema check alone {:.4} ms; all checks {:.4} ms without a contract, {:.4} ms with",
        body.len(),
        compile.as_secs_f64() * 1000.0,
        alone.as_secs_f64() * 1000.0,
        without.as_secs_f64() * 1000.0,
        with.as_secs_f64() * 1000.0
    );
}

/// Where the cost of a contract on the wrk delivery goes (bench/contract.sh measured 12 % of
/// the burst): all checks without and with bench/jobs-contract.yaml, the schema check alone,
/// and the parse into a `serde_json::Value` it starts with.
fn wrk_contract_bench(scheme: &Scheme, endpoint: &Endpoint) {
    let contract = hookscope::contracts::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/bench/jobs-contract.yaml"
    )))
    .expect("the jobs contract");
    let wrk = wrk_delivery(scheme, 7);
    let with_contract = Endpoint {
        contract: Some(std::sync::Arc::clone(&contract)),
        ..endpoint.clone()
    };
    let verdict = checks::evaluate(&wrk, &with_contract, 1_700_000_000);
    assert_eq!(
        verdict.schema.map(|s| s.status),
        Some(hookscope::domain::contract::SchemaStatus::Pass)
    );
    let runs = 20001;
    let without = median(
        || drop(checks::evaluate(&wrk, endpoint, 1_700_000_000)),
        runs,
    );
    let with = median(
        || drop(checks::evaluate(&wrk, &with_contract, 1_700_000_000)),
        runs,
    );
    let alone = median(
        || drop(contract.check(Some("job.completed"), &wrk.body)),
        runs,
    );
    let parse = median(
        || drop(serde_json::from_slice::<serde_json::Value>(&wrk.body)),
        runs,
    );
    let value: serde_json::Value = serde_json::from_slice(&wrk.body).expect("JSON");
    let valid = median(
        || {
            std::hint::black_box(contract.is_valid("job.completed", &value));
        },
        runs,
    );
    println!(
        "{:>8} B wrk body, bench/jobs-contract.yaml: all checks {:.2} µs without, {:.2} µs with; the schema check alone {:.2} µs (parsing {:.2} µs, is_valid {:.2} µs, the rest: drift and the sentence)",
        wrk.body.len(),
        without.as_secs_f64() * 1e6,
        with.as_secs_f64() * 1e6,
        alone.as_secs_f64() * 1e6,
        parse.as_secs_f64() * 1e6,
        valid.as_secs_f64() * 1e6,
    );
}
