//! One delivery per mistake: signed with that mistake, it is diagnosed as that mistake; signed
//! correctly, it gets no diagnosis. Each case goes through `checks::evaluate_with`, as the
//! receiver runs it, and the JSON shape is checked through `hookscope verify --json`.

mod common;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hookscope::domain::checks::{self, SignatureStatus};
use hookscope::domain::delivery::{Delivery, Header};
use hookscope::domain::diagnose::{Cause, LabelledSecret};
use hookscope::domain::endpoint::Endpoint;
use hookscope::domain::scheme::{Scheme, Secret, hmac_sha256};

const SW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const PLAIN_SECRET: &str = "It's a Secret to Everybody";
const TS: i64 = 1_700_000_000;
const BODY: &str = r#"{"type":"job.completed","data":{"job_id":"job_1","status":"completed"}}"#;

fn sw_key() -> Vec<u8> {
    B64.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .expect("base64")
}

fn delivery(headers: Vec<Header>, body: &[u8]) -> Delivery {
    Delivery {
        received_at_ms: TS * 1000,
        method: "POST".into(),
        path: "/hooks".into(),
        query: String::new(),
        headers,
        body: body.to_vec(),
        body_size: body.len() as u64,
        body_complete: true,
        remote_addr: None,
    }
}

fn sw_headers(signature: &[u8]) -> Vec<Header> {
    vec![
        Header::new("webhook-id", "msg_1"),
        Header::new("webhook-timestamp", TS.to_string()),
        Header::new("webhook-signature", format!("v1,{}", B64.encode(signature))),
    ]
}

fn endpoint(scheme: &str, secret: &str) -> Endpoint {
    Endpoint {
        scheme: Scheme::preset(scheme),
        secrets: vec![Secret::new(secret)],
        ..Endpoint::catch_all()
    }
}

/// The cause found for a delivery, or `None` when the signature passes.
fn cause_with(d: &Delivery, endpoint: &Endpoint, others: &[LabelledSecret]) -> Option<Cause> {
    let evaluation = checks::evaluate_with(d, endpoint, others, TS);
    match evaluation.signature.status {
        SignatureStatus::Pass => {
            assert!(evaluation.signature.diagnosis.is_none());
            None
        }
        _ => {
            let diagnosis = evaluation
                .signature
                .diagnosis
                .expect("a failing signature is diagnosed");
            assert!(!diagnosis.detail.is_empty() && !diagnosis.tried.is_empty());
            Some(diagnosis.cause)
        }
    }
}

fn cause(d: &Delivery, endpoint: &Endpoint) -> Option<Cause> {
    cause_with(d, endpoint, &[])
}

#[test]
fn a_correct_delivery_gets_no_diagnosis() {
    let mac = hmac_sha256(&sw_key(), &[format!("msg_1.{TS}.{BODY}").as_bytes()]);
    assert_eq!(
        cause(
            &delivery(sw_headers(&mac), BODY.as_bytes()),
            &endpoint("standard-webhooks", SW_SECRET)
        ),
        None
    );
}

#[test]
fn body_reserialized_pretty_printed_before_signing() {
    let pretty = serde_json::to_string_pretty(
        &serde_json::from_str::<serde_json::Value>(BODY).expect("json"),
    )
    .expect("pretty");
    let mac = hmac_sha256(&sw_key(), &[format!("msg_1.{TS}.{pretty}").as_bytes()]);
    let d = delivery(sw_headers(&mac), BODY.as_bytes());
    assert_eq!(
        cause(&d, &endpoint("standard-webhooks", SW_SECRET)),
        Some(Cause::BodyReserialized)
    );
}

#[test]
fn body_reserialized_compact_while_the_wire_had_spaces() {
    let spaced = r#"{ "b": 1, "a": [1, 2] }"#;
    let mac = hmac_sha256(PLAIN_SECRET.as_bytes(), &[br#"{"b":1,"a":[1,2]}"#]);
    let d = delivery(
        vec![Header::new(
            "x-hub-signature-256",
            format!("sha256={}", hex::encode(mac)),
        )],
        spaced.as_bytes(),
    );
    assert_eq!(
        cause(&d, &endpoint("github", PLAIN_SECRET)),
        Some(Cause::BodyReserialized)
    );
}

#[test]
fn key_derivation_secret_used_as_text_instead_of_base64() {
    let mac = hmac_sha256(
        SW_SECRET.as_bytes(),
        &[format!("msg_1.{TS}.{BODY}").as_bytes()],
    );
    let d = delivery(sw_headers(&mac), BODY.as_bytes());
    assert_eq!(
        cause(&d, &endpoint("standard-webhooks", SW_SECRET)),
        Some(Cause::KeyDerivation)
    );
}

#[test]
fn key_derivation_whsec_prefix_stripped_for_stripe() {
    let mac = hmac_sha256(b"test_secret", &[format!("{TS}.{BODY}").as_bytes()]);
    let d = delivery(
        vec![Header::new(
            "stripe-signature",
            format!("t={TS},v1={}", hex::encode(mac)),
        )],
        BODY.as_bytes(),
    );
    assert_eq!(
        cause(&d, &endpoint("stripe", "whsec_test_secret")),
        Some(Cause::KeyDerivation)
    );
}

#[test]
fn encoding_base64_where_hex_is_expected() {
    let mac = hmac_sha256(PLAIN_SECRET.as_bytes(), &[BODY.as_bytes()]);
    let d = delivery(
        vec![Header::new(
            "x-hub-signature-256",
            format!("sha256={}", B64.encode(mac)),
        )],
        BODY.as_bytes(),
    );
    assert_eq!(
        cause(&d, &endpoint("github", PLAIN_SECRET)),
        Some(Cause::Encoding)
    );
}

#[test]
fn encoding_missing_prefix() {
    let mac = hmac_sha256(PLAIN_SECRET.as_bytes(), &[BODY.as_bytes()]);
    let d = delivery(
        vec![Header::new("x-hub-signature-256", hex::encode(mac))],
        BODY.as_bytes(),
    );
    let evaluation = checks::evaluate(&d, &endpoint("github", PLAIN_SECRET), TS);
    let diagnosis = evaluation.signature.diagnosis.expect("diagnosed");
    assert_eq!(diagnosis.cause, Cause::Encoding);
    assert!(diagnosis.detail.contains("sha256="), "{}", diagnosis.detail);
}

#[test]
fn template_stripe_style_string_under_slack() {
    let mac = hmac_sha256(b"slack-secret", &[format!("{TS}.{BODY}").as_bytes()]);
    let d = delivery(
        vec![
            Header::new("x-slack-request-timestamp", TS.to_string()),
            Header::new("x-slack-signature", format!("v0={}", hex::encode(mac))),
        ],
        BODY.as_bytes(),
    );
    assert_eq!(
        cause(&d, &endpoint("slack", "slack-secret")),
        Some(Cause::TemplateMismatch)
    );
}

#[test]
fn timestamp_in_milliseconds_inside_the_signed_string() {
    let mac = hmac_sha256(
        b"whsec_test_secret",
        &[format!("{}.{BODY}", TS * 1000).as_bytes()],
    );
    let d = delivery(
        vec![Header::new(
            "stripe-signature",
            format!("t={TS},v1={}", hex::encode(mac)),
        )],
        BODY.as_bytes(),
    );
    assert_eq!(
        cause(&d, &endpoint("stripe", "whsec_test_secret")),
        Some(Cause::TimestampMs)
    );
}

#[test]
fn trailing_newline_added_before_signing() {
    let mac = hmac_sha256(PLAIN_SECRET.as_bytes(), &[format!("{BODY}\n").as_bytes()]);
    let d = delivery(
        vec![Header::new(
            "x-hub-signature-256",
            format!("sha256={}", hex::encode(mac)),
        )],
        BODY.as_bytes(),
    );
    assert_eq!(
        cause(&d, &endpoint("github", PLAIN_SECRET)),
        Some(Cause::TrailingNewline)
    );
}

#[test]
fn line_endings_converted_to_crlf() {
    let body = "line one\nline two\nline three";
    let mac = hmac_sha256(
        PLAIN_SECRET.as_bytes(),
        &[body.replace('\n', "\r\n").as_bytes()],
    );
    let d = delivery(
        vec![Header::new(
            "x-hub-signature-256",
            format!("sha256={}", hex::encode(mac)),
        )],
        body.as_bytes(),
    );
    assert_eq!(
        cause(&d, &endpoint("github", PLAIN_SECRET)),
        Some(Cause::LineEndings)
    );
}

#[test]
fn wrong_scheme_stripe_header_on_a_standard_webhooks_endpoint() {
    let mac = hmac_sha256(SW_SECRET.as_bytes(), &[format!("{TS}.{BODY}").as_bytes()]);
    let d = delivery(
        vec![Header::new(
            "stripe-signature",
            format!("t={TS},v1={}", hex::encode(mac)),
        )],
        BODY.as_bytes(),
    );
    let evaluation = checks::evaluate(&d, &endpoint("standard-webhooks", SW_SECRET), TS);
    let diagnosis = evaluation.signature.diagnosis.expect("diagnosed");
    assert_eq!(diagnosis.cause, Cause::WrongScheme);
    assert!(
        diagnosis.detail.contains("\"stripe\""),
        "{}",
        diagnosis.detail
    );
}

#[test]
fn other_secret_from_another_endpoint() {
    let mac = hmac_sha256(b"the-other-one", &[BODY.as_bytes()]);
    let d = delivery(
        vec![Header::new(
            "x-hub-signature-256",
            format!("sha256={}", hex::encode(mac)),
        )],
        BODY.as_bytes(),
    );
    let others = [LabelledSecret {
        label: "secret #1 of endpoint /hooks/b".into(),
        secret: Secret::new("the-other-one"),
    }];
    let evaluation = checks::evaluate_with(&d, &endpoint("github", PLAIN_SECRET), &others, TS);
    let diagnosis = evaluation.signature.diagnosis.expect("diagnosed");
    assert_eq!(diagnosis.cause, Cause::OtherSecret);
    assert!(diagnosis.detail.contains("endpoint /hooks/b"));
    // The secret itself is never in the sentence.
    assert!(!diagnosis.detail.contains("the-other-one"));
}

#[test]
fn algorithm_sha1_signature_in_a_sha256_header() {
    use hmac::{KeyInit, Mac};
    let mut mac =
        <hmac::Hmac<sha1::Sha1> as KeyInit>::new_from_slice(PLAIN_SECRET.as_bytes()).expect("key");
    mac.update(BODY.as_bytes());
    let sha1 = mac.finalize().into_bytes();
    let d = delivery(
        vec![Header::new(
            "x-hub-signature-256",
            format!("sha256={}", hex::encode(sha1)),
        )],
        BODY.as_bytes(),
    );
    assert_eq!(
        cause(&d, &endpoint("github", PLAIN_SECRET)),
        Some(Cause::Algorithm)
    );
}

#[test]
fn unknown_when_nothing_reproduces_it_and_says_what_was_tried() {
    let d = delivery(sw_headers(&[7u8; 32]), BODY.as_bytes());
    let evaluation = checks::evaluate(&d, &endpoint("standard-webhooks", SW_SECRET), TS);
    let diagnosis = evaluation.signature.diagnosis.expect("diagnosed");
    assert_eq!(diagnosis.cause, Cause::Unknown);
    assert!(diagnosis.tried.len() >= 10, "{:?}", diagnosis.tried);
    assert!(
        diagnosis.detail.contains("secret differs"),
        "{}",
        diagnosis.detail
    );
    assert_eq!(
        diagnosis.received.as_deref(),
        Some(format!("v1,{}", B64.encode([7u8; 32])).as_str())
    );
    assert!(
        diagnosis
            .expected
            .as_deref()
            .is_some_and(|e| e.starts_with("v1,"))
    );
    assert_eq!(
        diagnosis.expected_signed.as_deref(),
        Some(format!("msg_1.{TS}.{BODY}").as_str())
    );
}

#[test]
fn verify_json_carries_the_diagnosis_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mac = hmac_sha256(PLAIN_SECRET.as_bytes(), &[format!("{BODY}\n").as_bytes()]);
    let out = common::run(
        dir.path(),
        &[
            "verify",
            "--json",
            "--scheme",
            "github",
            "--secret",
            PLAIN_SECRET,
            "-H",
            &format!("X-Hub-Signature-256: sha256={}", hex::encode(mac)),
            "--data",
            BODY,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let diagnosis = &json["checks"]["signature"]["diagnosis"];
    assert_eq!(diagnosis["cause"], "trailing_newline");
    assert!(
        diagnosis["detail"]
            .as_str()
            .is_some_and(|d| d.contains("newline"))
    );
    assert!(diagnosis["tried"].as_array().is_some_and(|t| !t.is_empty()));
}
