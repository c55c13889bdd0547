//! Published signature vectors and the rules of docs/webhooks.md, run through `hookscope verify` exactly
//! as a user would run it.

mod common;

use common::run;

const SW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SW_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const SW_TS: &str = "1614265330";
const SW_BODY: &str = r#"{"test": 2432232314}"#;
const SW_SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

struct Verdict {
    code: i32,
    json: serde_json::Value,
}

impl Verdict {
    fn signature(&self) -> &str {
        self.json["checks"]["signature"]["status"]
            .as_str()
            .unwrap_or("?")
    }
    fn timestamp(&self) -> &str {
        self.json["checks"]["timestamp"]["status"]
            .as_str()
            .unwrap_or("?")
    }
    fn detail(&self, check: &str) -> &str {
        self.json["checks"][check]["detail"].as_str().unwrap_or("")
    }
}

fn verify(args: &[&str]) -> Verdict {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut all = vec!["verify", "--json"];
    all.extend_from_slice(args);
    let out = run(dir.path(), &all);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "verify printed no JSON ({e}): {stdout} / {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Verdict {
        code: out.status.code().unwrap_or(-1),
        json,
    }
}

fn sw(now: &str, secret: &str, sig: &str, body: &str) -> Verdict {
    let id = format!("webhook-id: {SW_ID}");
    let ts = format!("webhook-timestamp: {SW_TS}");
    let sig = format!("webhook-signature: {sig}");
    verify(&[
        "--scheme",
        "standard-webhooks",
        "--secret",
        secret,
        "--now",
        now,
        "-H",
        &id,
        "-H",
        &ts,
        "-H",
        &sig,
        "--data",
        body,
    ])
}

#[test]
fn standard_webhooks_reference_vector_passes() {
    let v = sw(SW_TS, SW_SECRET, SW_SIG, SW_BODY);
    assert_eq!(
        (v.code, v.signature(), v.timestamp()),
        (0, "pass", "pass"),
        "{}",
        v.json
    );
    assert_eq!(v.json["event_id"], SW_ID);
}

#[test]
fn standard_webhooks_secret_without_whsec_prefix_is_the_same_key() {
    let v = sw(SW_TS, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", SW_SIG, SW_BODY);
    assert_eq!(v.signature(), "pass");
}

#[test]
fn svix_reference_vector_passes_with_svix_headers() {
    let v = verify(&[
        "--scheme",
        "svix",
        "--secret",
        SW_SECRET,
        "--now",
        SW_TS,
        "-H",
        &format!("svix-id: {SW_ID}"),
        "-H",
        &format!("svix-timestamp: {SW_TS}"),
        "-H",
        &format!("svix-signature: {SW_SIG}"),
        "--data",
        SW_BODY,
    ]);
    assert_eq!((v.code, v.signature()), (0, "pass"), "{}", v.json);
}

#[test]
fn signing_reproduces_the_standard_webhooks_vector() {
    let scheme = hookscope::domain::scheme::Scheme::preset("standard-webhooks").expect("preset");
    let headers = scheme
        .sign(
            &[hookscope::domain::scheme::Secret::new(SW_SECRET)],
            SW_ID,
            1_614_265_330,
            SW_BODY.as_bytes(),
        )
        .expect("signs");
    let signature = headers
        .iter()
        .find(|h| h.name == "webhook-signature")
        .expect("signature header");
    assert_eq!(signature.value, SW_SIG.as_bytes());
}

#[test]
fn tampered_body_fails_and_says_what_was_tried() {
    let v = sw(SW_TS, SW_SECRET, SW_SIG, r#"{"test": 2432232315}"#);
    assert_eq!((v.code, v.signature()), (1, "fail"));
    assert!(
        v.detail("signature").contains("checked against 1 secret"),
        "{}",
        v.detail("signature")
    );
}

#[test]
fn re_spaced_json_fails_because_the_bytes_changed() {
    let v = sw(SW_TS, SW_SECRET, SW_SIG, r#"{"test":2432232314}"#);
    assert_eq!((v.code, v.signature()), (1, "fail"));
}

#[test]
fn wrong_secret_fails() {
    let v = sw(
        SW_TS,
        "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        SW_SIG,
        SW_BODY,
    );
    assert_eq!((v.code, v.signature()), (1, "fail"));
}

#[test]
fn one_flipped_signature_character_fails() {
    let flipped = SW_SIG.replacen("g0hM", "h0hM", 1);
    let v = sw(SW_TS, SW_SECRET, &flipped, SW_BODY);
    assert_eq!((v.code, v.signature()), (1, "fail"));
}

#[test]
fn the_300_second_edge_passes_and_301_fails_in_both_directions() {
    let ts: i64 = SW_TS.parse().expect("number");
    let at = |now: i64| sw(&now.to_string(), SW_SECRET, SW_SIG, SW_BODY);
    assert_eq!(at(ts + 300).timestamp(), "pass");
    assert_eq!(at(ts - 300).timestamp(), "pass");
    let stale = at(ts + 301);
    assert_eq!((stale.code, stale.timestamp()), (1, "fail"));
    assert_eq!(stale.json["checks"]["timestamp"]["skew_secs"], -301);
    assert!(
        stale.detail("timestamp").contains("301 s (5 min) old"),
        "{}",
        stale.detail("timestamp")
    );
    assert!(
        stale.detail("timestamp").contains(
            "The sender stamped it 2021-02-25T15:02:10Z; this machine received it at 2021-02-25T15:07:11Z."
        ),
        "{}",
        stale.detail("timestamp")
    );
    let future = at(ts - 301);
    assert_eq!((future.code, future.timestamp()), (1, "fail"));
    assert!(future.detail("timestamp").contains("in the future"));
    // The signature itself is still good: the two checks are reported apart.
    assert_eq!(stale.signature(), "pass");
}

#[test]
fn rotation_two_signatures_in_the_header_one_matching_passes() {
    let header = format!("v1,Zm9vYmFyYmF6cXV4eHl6enl4d3Z1dHNycXBvbm1sa2o= {SW_SIG}");
    let v = sw(SW_TS, SW_SECRET, &header, SW_BODY);
    assert_eq!((v.code, v.signature()), (0, "pass"), "{}", v.json);
    assert!(v.detail("signature").contains("signature 2 in the header"));
}

#[test]
fn rotation_two_secrets_reports_which_one_matched() {
    let v = verify(&[
        "--scheme",
        "standard-webhooks",
        "--secret",
        "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "--secret",
        SW_SECRET,
        "--now",
        SW_TS,
        "-H",
        &format!("webhook-id: {SW_ID}"),
        "-H",
        &format!("webhook-timestamp: {SW_TS}"),
        "-H",
        &format!("webhook-signature: {SW_SIG}"),
        "--data",
        SW_BODY,
    ]);
    assert_eq!((v.code, v.signature()), (0, "pass"));
    assert_eq!(v.json["checks"]["signature"]["secret"], "secret #2");
    assert!(
        v.detail("signature").contains("secret #2 of 2"),
        "{}",
        v.detail("signature")
    );
}

#[test]
fn rotation_with_no_signature_matching_fails() {
    let header = "v1,Zm9vYmFyYmF6cXV4eHl6enl4d3Z1dHNycXBvbm1sa2o= v1,YmF6cXV4eHl6enl4d3Z1dHNycXBvbm1sa2pmb29iYXI=";
    let v = sw(SW_TS, SW_SECRET, header, SW_BODY);
    assert_eq!((v.code, v.signature()), (1, "fail"));
    assert!(
        v.detail("signature").contains("all 2 signatures"),
        "{}",
        v.detail("signature")
    );
}

#[test]
fn timestamp_in_milliseconds_is_recognised_and_said_so() {
    let v = verify(&[
        "--scheme",
        "standard-webhooks",
        "--secret",
        SW_SECRET,
        "--now",
        SW_TS,
        "-H",
        &format!("webhook-id: {SW_ID}"),
        "-H",
        "webhook-timestamp: 1614265330000",
        "-H",
        &format!("webhook-signature: {SW_SIG}"),
        "--data",
        SW_BODY,
    ]);
    assert_eq!((v.code, v.timestamp()), (1, "fail"));
    assert_eq!(v.json["checks"]["timestamp"]["milliseconds"], true);
    assert!(v.detail("timestamp").contains("milliseconds"));
}

// GitHub's documentation example ("Validating webhook deliveries").
#[test]
fn github_documentation_example_passes() {
    let v = verify(&[
        "--scheme",
        "github",
        "--secret",
        "It's a Secret to Everybody",
        "-H",
        "X-Hub-Signature-256: sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        "-H",
        "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "--data",
        "Hello, World!",
    ]);
    assert_eq!(
        (v.code, v.signature(), v.timestamp()),
        (0, "pass", "skipped"),
        "{}",
        v.json
    );
    assert!(v.detail("timestamp").contains("signs no timestamp"));
    assert_eq!(v.json["event_id"], "72d3162e-cc78-11e3-81ab-4c9367dc0958");
}

// Slack's documentation example ("Verifying requests from Slack").
#[test]
fn slack_documentation_example_passes() {
    let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    let v = verify(&[
        "--scheme",
        "slack",
        "--secret",
        "8f742231b10e8888abcd99yyyzzz85a5",
        "--now",
        "1531420618",
        "-H",
        "X-Slack-Request-Timestamp: 1531420618",
        "-H",
        "X-Slack-Signature: v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
        "--data",
        body,
    ]);
    assert_eq!(
        (v.code, v.signature(), v.timestamp()),
        (0, "pass", "pass"),
        "{}",
        v.json
    );
}

// Paddle's Node SDK tests (webhooks-validator.test.ts): secret VALID_SECRET, ts 2023-11-01.
const PADDLE_HEADER: &str = "Paddle-Signature: ts=1698796800;h1=a300428748dce5c70e4da19bffd60769591ea969c99dea3105d0ec9612cf43f9";

fn paddle(now: &str, secret: &str, header: &str, body: &str) -> Verdict {
    verify(&[
        "--scheme", "paddle", "--secret", secret, "--now", now, "-H", header, "--data", body,
    ])
}

#[test]
fn paddle_sdk_vectors() {
    let body = r#"{"data": ["1", "2"]}"#;
    assert_eq!(
        paddle("1698796801", "VALID_SECRET", PADDLE_HEADER, body).code,
        0
    );
    assert_eq!(
        paddle("1698796805", "VALID_SECRET", PADDLE_HEADER, body).code,
        0,
        "5 s is the SDK's limit"
    );
    let late = paddle("1698796806", "VALID_SECRET", PADDLE_HEADER, body);
    assert_eq!(
        (late.code, late.timestamp(), late.signature()),
        (1, "fail", "pass")
    );
    assert_eq!(
        paddle("1698796800", "INVALID_VALID_SECRET", PADDLE_HEADER, body).signature(),
        "fail"
    );
    assert_eq!(
        paddle(
            "1698796800",
            "VALID_SECRET",
            PADDLE_HEADER,
            r#"{ "data": [ "1", "2" ]}"#
        )
        .signature(),
        "fail"
    );
    let several = "Paddle-Signature: ts=1698796800;h1=28981e941fae76e53db32f3d2a83cb69db41476595e84e1970a1b5d98f62b261;h1=28981e941fae76e53db32f3d2a83cb69db41476595e84e1970a1b5d98f62b261;h2=RANDOM_HASH";
    assert_eq!(
        paddle(
            "1698796800",
            "VALID_SECRET",
            several,
            r#"{"data": "value"}"#
        )
        .code,
        0
    );
    let missing_ts = paddle(
        "1698796800",
        "VALID_SECRET",
        "Paddle-Signature: h1=invalid_header",
        body,
    );
    assert_eq!(missing_ts.signature(), "fail");
    assert!(
        missing_ts
            .detail("signature")
            .contains("no `ts=` timestamp"),
        "{}",
        missing_ts.detail("signature")
    );
}

// No published Stripe vector exists; this one was computed with Python's hmac module
// (hmac.new(b"whsec_test_secret", b"1614265330." + body, sha256)), an implementation independent
// of this crate, over the whole secret including `whsec_` as Stripe's libraries use it.
const STRIPE_BODY: &str = r#"{"id":"evt_1","type":"invoice.paid"}"#;
const STRIPE_V1: &str = "1c85623cfb52e27f927d9e4eac778cbe54c3d4f90b17edce4689e027779c4380";

fn stripe(now: &str, header_value: &str) -> Verdict {
    verify(&[
        "--scheme",
        "stripe",
        "--secret",
        "whsec_test_secret",
        "--now",
        now,
        "-H",
        &format!("Stripe-Signature: {header_value}"),
        "--data",
        STRIPE_BODY,
    ])
}

#[test]
fn stripe_signature_uses_the_whole_secret_and_reads_the_event_id_from_the_body() {
    let v = stripe(
        "1614265330",
        &format!("t=1614265330,v1={STRIPE_V1},v0=deadbeef"),
    );
    assert_eq!((v.code, v.signature()), (0, "pass"), "{}", v.json);
    assert_eq!(v.json["event_id"], "evt_1");
    assert_eq!(v.json["event_type"], "invoice.paid");
}

#[test]
fn stripe_rotation_second_v1_matches() {
    let v = stripe(
        "1614265330",
        &format!("t=1614265330,v1={},v1={STRIPE_V1}", "ab".repeat(32)),
    );
    assert_eq!(v.signature(), "pass");
}

#[test]
fn stripe_future_timestamp_is_a_warning_and_stale_is_a_failure() {
    let future = stripe("1614264000", &format!("t=1614265330,v1={STRIPE_V1}"));
    assert_eq!(
        (future.code, future.timestamp()),
        (0, "warn"),
        "{}",
        future.json
    );
    let stale = stripe("1614265631", &format!("t=1614265330,v1={STRIPE_V1}"));
    assert_eq!((stale.code, stale.timestamp()), (1, "fail"));
}

// Computed with Python's hmac module (base64 of HMAC-SHA256 of the body under "hush").
#[test]
fn shopify_base64_body_hmac_passes() {
    let v = verify(&[
        "--scheme",
        "shopify",
        "--secret",
        "hush",
        "-H",
        "X-Shopify-Hmac-Sha256: qBvrsZF7RfB1iS6BX6IHqJTp5L911P7intnPeTPsH0I=",
        "-H",
        "X-Shopify-Webhook-Id: b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
        "--data",
        r#"{"id":820982911946154508}"#,
    ]);
    assert_eq!((v.code, v.signature()), (0, "pass"), "{}", v.json);
}

#[test]
fn bad_usage_exits_2_with_a_sentence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let unknown = run(
        dir.path(),
        &["verify", "--scheme", "nope", "--secret", "s", "--data", "x"],
    );
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown scheme \"nope\""));
    let bad_header = run(
        dir.path(),
        &[
            "verify", "--scheme", "github", "--secret", "s", "-H", "nocolon", "--data", "x",
        ],
    );
    assert_eq!(bad_header.status.code(), Some(2));
    let no_secret = run(dir.path(), &["verify", "--scheme", "github", "--data", "x"]);
    assert_eq!(no_secret.status.code(), Some(2));
}

#[test]
fn garbage_and_missing_signature_headers_fail_with_a_reason_not_a_crash() {
    for header in [
        "webhook-signature: ",
        "webhook-signature: v1,",
        "webhook-signature: garbage!!",
        "webhook-signature: v1,%%%% v2,abc",
    ] {
        let v = verify(&[
            "--scheme",
            "standard-webhooks",
            "--secret",
            SW_SECRET,
            "--now",
            SW_TS,
            "-H",
            &format!("webhook-id: {SW_ID}"),
            "-H",
            &format!("webhook-timestamp: {SW_TS}"),
            "-H",
            header,
            "--data",
            SW_BODY,
        ]);
        assert_eq!((v.code, v.signature()), (1, "fail"), "{header}");
        assert!(!v.detail("signature").is_empty());
    }
    let missing = verify(&[
        "--scheme",
        "standard-webhooks",
        "--secret",
        SW_SECRET,
        "--data",
        SW_BODY,
    ]);
    assert!(
        missing
            .detail("signature")
            .contains("webhook-signature header is missing")
    );
}
