//! The senders added after the first seven: Standard Webhooks `v1a` (ed25519), Twilio, GitLab
//! and Discord. Each runs against its published vectors through `hookscope verify`, as a user
//! runs it, and makes a live round trip: hookscope re-signs a capture and sends it to a receiver
//! that verifies it (hookscope's own `listen`, and for Twilio the `twilio` Python package's
//! `RequestValidator`, installed into the target directory on first use).

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use common::{Listener, run};
use hookscope::domain::scheme::ed25519;

/// RFC 8032, section 7.1, TEST 1.
const SEED_HEX: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const PUBLIC_HEX: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

/// twilio-python's tests/unit/test_request_validator.py.
const TW_TOKEN: &str = "12345";
const TW_URI: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
const TW_FORM: &str = "CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1234&From=%2B14158675309&To=%2B18005551212";
const TW_BODY: &str = "{\"property\": \"value\", \"boolean\": true}";
const TW_BODY_HASH: &str = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620";

const GITLAB_TOKEN: &str = "glwht-correct-horse-battery";

fn whpk() -> String {
    format!("whpk_{}", B64.encode(hex::decode(PUBLIC_HEX).expect("hex")))
}

fn whsk() -> String {
    format!("whsk_{}", B64.encode(hex::decode(SEED_HEX).expect("hex")))
}

fn rfc_key() -> ed25519::SigningKey {
    ed25519::SigningKey::from_bytes(&hex::decode(SEED_HEX).expect("hex")).expect("seed")
}

/// `hookscope verify --json ARGS…`: the exit code and the JSON.
fn verify(args: &[&str]) -> (i32, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut all = vec!["verify", "--json"];
    all.extend_from_slice(args);
    let out = run(dir.path(), &all);
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verify printed no JSON ({e}): {} / {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), json)
}

fn signature(json: &serde_json::Value) -> (&str, &str) {
    (
        json["checks"]["signature"]["status"]
            .as_str()
            .unwrap_or("?"),
        json["checks"]["signature"]["detail"].as_str().unwrap_or(""),
    )
}

fn twilio(
    url: &str,
    signature_value: &str,
    content_type: &str,
    body: &str,
) -> (i32, serde_json::Value) {
    verify(&[
        "--scheme",
        "twilio",
        "--secret",
        TW_TOKEN,
        "--url",
        url,
        "-H",
        &format!("X-Twilio-Signature: {signature_value}"),
        "-H",
        &format!("Content-Type: {content_type}"),
        "--data",
        body,
    ])
}

const FORM: &str = "application/x-www-form-urlencoded";

#[test]
fn twilio_python_vectors_pass_through_verify() {
    // test_compute_signature / test_validation.
    let (code, json) = twilio(TW_URI, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", FORM, TW_FORM);
    assert_eq!((code, signature(&json).0), (0, "pass"), "{json}");
    // test_validation_removes_port_on_https: the signature of the URL without :1234.
    let with_port = TW_URI.replace(".com", ".com:1234");
    let (code, json) = twilio(&with_port, "RSOYDt4T1cUTdK1PDd93/VVr8B8=", FORM, TW_FORM);
    assert_eq!(code, 0, "{json}");
    // test_validation_removes_port_on_http.
    let http_port = with_port.replace("https", "http");
    let (code, json) = twilio(&http_port, "Zmvh+3yNM1Phv2jhDCwEM3q5ebU=", FORM, TW_FORM);
    assert_eq!(code, 0, "{json}");
    // test_validation_adds_port_on_https / _on_http: signed with :443 / :80.
    let (code, json) = twilio(TW_URI, "kvajT1Ptam85bY51eRf/AJRuM3w=", FORM, TW_FORM);
    assert_eq!(code, 0, "{json}");
    let http = TW_URI.replace("https", "http");
    let (code, json) = twilio(&http, "0ZXoZLH/DfblKGATFgpif+LLRf4=", FORM, TW_FORM);
    assert_eq!(code, 0, "{json}");
    // test_compute_signature_duplicate_*: a repeated name is sorted by value.
    let duplicate = "Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234";
    let (code, json) = twilio(TW_URI, "IK+Dwps556ElfBT0I3Rgjkr1wJU=", FORM, duplicate);
    assert_eq!(code, 0, "{json}");
    // test_validation_of_body_succeeds: JSON through bodySHA256, the URL alone signed.
    let with_body = format!("{TW_URI}&bodySHA256={TW_BODY_HASH}");
    let (code, json) = twilio(
        &with_body,
        "a9nBmqA0ju/hNViExpshrM61xv4=",
        "application/json",
        TW_BODY,
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(
        hookscope::domain::scheme::twilio::body_hash(TW_BODY.as_bytes()),
        TW_BODY_HASH,
        "test_compute_hash_unicode"
    );
    // The same signature with one parameter changed fails, and says over what it was checked.
    let (code, json) = twilio(
        TW_URI,
        "RSOYDt4T1cUTdK1PDd93/VVr8B8=",
        FORM,
        &TW_FORM.replace("1234", "1235"),
    );
    assert_eq!((code, signature(&json).0), (1, "fail"), "{json}");
    assert!(
        signature(&json)
            .1
            .contains(TW_URI.split('?').next().unwrap_or("")),
        "{json}"
    );
    // A changed JSON body fails on its hash even though the URL's signature matches.
    let (code, json) = twilio(
        &with_body,
        "a9nBmqA0ju/hNViExpshrM61xv4=",
        "application/json",
        "{\"property\": \"value\", \"boolean\": false}",
    );
    assert_eq!(code, 1);
    assert!(signature(&json).1.contains("bodySHA256"), "{json}");
}

#[test]
fn twilio_diagnosis_names_the_public_url_that_was_signed() {
    // Signed for the tunnel's https URL, checked with the local http one.
    let (code, json) = verify(&[
        "--scheme",
        "twilio",
        "--secret",
        TW_TOKEN,
        "--url",
        "http://mycompany.com/myapp.php?foo=1&bar=2",
        "-H",
        "X-Twilio-Signature: RSOYDt4T1cUTdK1PDd93/VVr8B8=",
        "-H",
        "Host: mycompany.com",
        "-H",
        &format!("Content-Type: {FORM}"),
        "--data",
        TW_FORM,
    ]);
    assert_eq!(code, 1);
    let diagnosis = &json["checks"]["signature"]["diagnosis"];
    assert_eq!(diagnosis["cause"], "public_url_mismatch", "{json}");
    let detail = diagnosis["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("https://mycompany.com/myapp.php?foo=1&bar=2"),
        "{detail}"
    );
    assert!(detail.contains("public_url"), "{detail}");

    // Configured for the tunnel, but the sender signed the local URL (it posted straight to
    // the laptop): the diagnosis finds the URL from the Host header.
    let mut local = hookscope::domain::scheme::Scheme::preset("twilio").expect("preset");
    local.public_url = Some("http://127.0.0.1:7878/sms?x=1".into());
    let headers = local
        .sign(
            &[hookscope::domain::scheme::Secret::new(TW_TOKEN)],
            "",
            0,
            TW_FORM.as_bytes(),
        )
        .expect("sign");
    let value = headers[headers.len() - 1].value_lossy();
    let (code, json) = verify(&[
        "--scheme",
        "twilio",
        "--secret",
        TW_TOKEN,
        "--url",
        "https://abc123.ngrok.app/sms?x=1",
        "-H",
        &format!("X-Twilio-Signature: {value}"),
        "-H",
        "Host: 127.0.0.1:7878",
        "-H",
        &format!("Content-Type: {FORM}"),
        "--data",
        TW_FORM,
    ]);
    assert_eq!(code, 1);
    let diagnosis = &json["checks"]["signature"]["diagnosis"];
    assert_eq!(diagnosis["cause"], "public_url_mismatch", "{json}");
    assert!(
        diagnosis["detail"]
            .as_str()
            .unwrap_or("")
            .contains("http://127.0.0.1"),
        "{diagnosis}"
    );
}

#[test]
fn standard_webhooks_v1a_verifies_with_whpk_and_never_with_an_hmac_secret() {
    let (id, ts, body) = (
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        "1614265330",
        r#"{"test": 2432232314}"#,
    );
    let sig = rfc_key().sign(format!("{id}.{ts}.{body}").as_bytes());
    // The spec's header shape: a v1 entry (here a stranger's) and the v1a entry, space-separated.
    let header = format!(
        "webhook-signature: v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1a,{}",
        B64.encode(&sig)
    );
    let args = |secret: &str| {
        verify(&[
            "--scheme",
            "standard-webhooks",
            "--secret",
            secret,
            "--now",
            ts,
            "-H",
            &format!("webhook-id: {id}"),
            "-H",
            &format!("webhook-timestamp: {ts}"),
            "-H",
            &header,
            "--data",
            body,
        ])
    };
    let (code, json) = args(&whpk());
    assert_eq!((code, signature(&json).0), (0, "pass"), "{json}");
    assert!(
        signature(&json).1.contains("signature 2 in the header"),
        "{json}"
    );
    // The HMAC secret of the spec's own v1 vector accepts neither entry here.
    let (code, json) = args("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    assert_eq!(code, 1, "{json}");
    // A v1a-only header with only an HMAC secret: the diagnosis says which key is missing.
    let only_v1a = format!("webhook-signature: v1a,{}", B64.encode(&sig));
    let (code, json) = verify(&[
        "--scheme",
        "standard-webhooks",
        "--secret",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "--now",
        ts,
        "-H",
        &format!("webhook-id: {id}"),
        "-H",
        &format!("webhook-timestamp: {ts}"),
        "-H",
        &only_v1a,
        "--data",
        body,
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        json["checks"]["signature"]["diagnosis"]["cause"], "key_kind",
        "{json}"
    );
    // A reserialised body under v1a is diagnosed like under v1.
    let pretty = "{\n  \"test\": 2432232314\n}";
    let pretty_sig = rfc_key().sign(format!("{id}.{ts}.{pretty}").as_bytes());
    let (code, json) = verify(&[
        "--scheme",
        "standard-webhooks",
        "--secret",
        &whpk(),
        "--now",
        ts,
        "-H",
        &format!("webhook-id: {id}"),
        "-H",
        &format!("webhook-timestamp: {ts}"),
        "-H",
        &format!("webhook-signature: v1a,{}", B64.encode(&pretty_sig)),
        "--data",
        body,
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        json["checks"]["signature"]["diagnosis"]["cause"], "body_reserialized",
        "{json}"
    );
}

#[test]
fn discord_verifies_with_the_application_public_key_in_hex() {
    let (ts, body) = ("1700000000", r#"{"id":"1234","type":1}"#);
    let sig = hex::encode(rfc_key().sign(format!("{ts}{body}").as_bytes()));
    let run_with = |data: &str| {
        verify(&[
            "--scheme",
            "discord",
            "--secret",
            PUBLIC_HEX,
            "--now",
            ts,
            "-H",
            &format!("X-Signature-Ed25519: {sig}"),
            "-H",
            &format!("X-Signature-Timestamp: {ts}"),
            "--data",
            data,
        ])
    };
    let (code, json) = run_with(body);
    assert_eq!((code, signature(&json).0), (0, "pass"), "{json}");
    assert_eq!(
        json["event_id"], "1234",
        "the interaction id is the event id"
    );
    assert_eq!(json["checks"]["timestamp"]["status"], "skipped");
    assert!(
        json["checks"]["timestamp"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("no tolerance"),
        "{json}"
    );
    let (code, json) = run_with(r#"{"id":"1234","type":2}"#);
    assert_eq!((code, signature(&json).0), (1, "fail"), "{json}");
    assert!(signature(&json).1.contains("public key"), "{json}");
}

#[test]
fn gitlab_compares_the_token_says_it_signs_nothing_and_never_prints_it() {
    let body = r#"{"object_kind":"pipeline"}"#;
    let check = |token: &str| {
        verify(&[
            "--scheme",
            "gitlab",
            "--secret",
            GITLAB_TOKEN,
            "-H",
            &format!("X-Gitlab-Token: {token}"),
            "-H",
            "X-Gitlab-Event: Pipeline Hook",
            "-H",
            "Idempotency-Key: 2b4e0f3c-1111-4d5e-9e21-6f0a1b2c3d4e",
            "-H",
            "X-Gitlab-Event-UUID: 0e3b2c1a-2222-4a5b-8c9d-0e1f2a3b4c5d",
            "--data",
            body,
        ])
    };
    let (code, json) = check(GITLAB_TOKEN);
    assert_eq!((code, signature(&json).0), (0, "pass"), "{json}");
    let detail = signature(&json).1;
    assert!(
        detail.contains("signs nothing") && detail.contains("constant time"),
        "{detail}"
    );
    assert!(detail.contains("x-gitlab-event-uuid 0e3b2c1a"), "{detail}");
    assert_eq!(json["event_id"], "2b4e0f3c-1111-4d5e-9e21-6f0a1b2c3d4e");
    assert_eq!(json["event_type"], "Pipeline Hook");
    let text = json.to_string();
    assert!(!text.contains(GITLAB_TOKEN), "the token is printed: {text}");
    assert!(text.contains("[redacted: "), "{text}");

    let (code, json) = check("glwht-wrong");
    assert_eq!((code, signature(&json).0), (1, "fail"), "{json}");
    // A token configured with the newline it was copied with (`verify` trims -H values, so the
    // stray whitespace is on the secret's side here; the diagnosis covers both sides).
    let (code, json) = verify(&[
        "--scheme",
        "gitlab",
        "--secret",
        &format!("{GITLAB_TOKEN}\n"),
        "-H",
        &format!("X-Gitlab-Token: {GITLAB_TOKEN}"),
        "--data",
        body,
    ]);
    assert_eq!(code, 1);
    let diagnosis = &json["checks"]["signature"]["diagnosis"];
    assert_eq!(diagnosis["cause"], "trailing_newline", "{json}");
    assert!(!json.to_string().contains(GITLAB_TOKEN), "{json}");
}

/// `hookscope resend ID --to URL --resign --scheme SCHEME --secret SECRET --json`.
fn resend_resigned(
    dir: &std::path::Path,
    id: &str,
    url: &str,
    scheme: &str,
    secret: &str,
) -> std::process::Output {
    run(
        dir,
        &[
            "resend", id, "--to", url, "--resign", "--scheme", scheme, "--secret", secret, "--json",
        ],
    )
}

/// Starts `listen` with one endpoint per new scheme, each holding the verifying key.
fn receiver(dir: &std::path::Path) -> Listener {
    std::fs::write(
        dir.join("config.toml"),
        format!(
            r#"
[[endpoint]]
path = "/tw"
scheme = "twilio"
secrets = ["twilio-live-token"]

[[endpoint]]
path = "/gl"
scheme = "gitlab"
secrets = ["{GITLAB_TOKEN}"]

[[endpoint]]
path = "/dc"
scheme = "discord"
secrets = ["{PUBLIC_HEX}"]

[[endpoint]]
path = "/sw"
scheme = "standard-webhooks"
secrets = ["{whpk}"]
"#,
            whpk = whpk()
        ),
    )
    .expect("config");
    Listener::start(dir, &[])
}

#[test]
fn each_new_scheme_round_trips_hookscope_resigns_and_listen_verifies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = receiver(dir.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = common::http_client();
    let body = r#"{"id":"evt_live_1","type":"job.completed","data":{"job_id":"job_1","status":"completed"}}"#;
    let posted = rt
        .block_on(
            client
                .post(format!("{}/in", listener.base_url))
                .body(body)
                .send(),
        )
        .expect("post");
    assert_eq!(posted.status(), 200);
    let id = listener.next_json()["id"].as_i64().expect("id").to_string();
    let discord_signing = format!("{SEED_HEX}{PUBLIC_HEX}");
    for (path, scheme, secret) in [
        ("/tw", "twilio", "twilio-live-token".to_string()),
        ("/gl", "gitlab", GITLAB_TOKEN.to_string()),
        ("/dc", "discord", discord_signing.clone()),
        ("/sw", "standard-webhooks", whsk()),
    ] {
        let url = format!("{}{path}", listener.base_url);
        let out = resend_resigned(dir.path(), &id, &url, scheme, &secret);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{scheme}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let arrived = listener.next_json();
        assert_eq!(arrived["scheme"], scheme, "{arrived}");
        assert_eq!(
            arrived["checks"]["signature"]["status"], "pass",
            "{scheme} did not verify after re-signing: {arrived}"
        );
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            !printed.contains(GITLAB_TOKEN),
            "resend printed the token: {printed}"
        );
    }
    // A public key cannot sign: the resend says what it needs instead of sending.
    let url = format!("{}/sw", listener.base_url);
    let out = run(
        dir.path(),
        &[
            "resend",
            &id,
            "--to",
            &url,
            "--resign",
            "--scheme",
            "standard-webhooks",
            "--secret",
            &whpk(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("whsk_"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `twilio` (the official Python package) in the target directory, installed on first use
/// with pip from PyPI; only `twilio.request_validator` is used, which needs nothing else.
/// `None` (the test skipped, and saying so) without python3 and pip, or when PyPI is out of reach.
fn twilio_python() -> Option<PathBuf> {
    common::pip_target(
        "py-twilio-9.13.0",
        "twilio/request_validator.py",
        &["twilio==9.13.0"],
    )
}

const TWILIO_HANDLER: &str = r#"
import sys, json
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qsl
from twilio.request_validator import RequestValidator

validator = RequestValidator(sys.argv[1])

class Form(dict):
    def getlist(self, name):
        return self[name]

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0"))).decode("utf-8")
        url = "http://%s%s" % (self.headers["host"], self.path)
        signature = self.headers.get("x-twilio-signature", "")
        if (self.headers.get("content-type") or "").startswith("application/x-www-form-urlencoded"):
            params = Form()
            for k, v in parse_qsl(body, keep_blank_values=True):
                params.setdefault(k, []).append(v)
        else:
            params = body
        ok = validator.validate(url, params, signature)
        self.send_response(204 if ok else 403)
        self.end_headers()

    def log_message(self, *args):
        pass

server = HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

#[test]
fn twilio_python_request_validator_accepts_what_hookscope_signs() {
    let Some(site) = twilio_python() else {
        return;
    };
    let mut handler = Command::new("python3")
        .args(["-c", TWILIO_HANDLER, "live-auth-token"])
        .env("PYTHONPATH", &site)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(handler.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("port");
    let port: u16 = line.trim().parse().expect("the handler prints its port");
    let url = format!("http://127.0.0.1:{port}/twilio/status");

    // The probe: every case signed the Twilio way (JSON through bodySHA256), judged by the
    // official validator.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        &[
            "probe",
            &url,
            "--scheme",
            "twilio",
            "--secret",
            "live-auth-token",
            "--json",
        ],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let verdict = |name: &str| {
        report["cases"]
            .as_array()
            .and_then(|cases| cases.iter().find(|c| c["name"] == name))
            .map(|c| {
                (
                    c["verdict"].as_str().unwrap_or("").to_string(),
                    c["statuses"].clone(),
                )
            })
            .unwrap_or_default()
    };
    assert_eq!(verdict("valid").0, "pass", "{report}");
    assert_eq!(verdict("valid").1, serde_json::json!([204]), "{report}");
    assert_eq!(
        verdict("tampered_signature").1,
        serde_json::json!([403]),
        "{report}"
    );
    assert_eq!(verdict("respaced_json").0, "pass", "{report}");
    assert_eq!(out.status.code(), Some(0), "{report}");

    // A form-encoded capture re-signed by resend: names sorted, repeated names sorted by value.
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let form =
        "To=%2B18005551212&From=%2B14158675309&Digits=5678&Digits=1234&Body=caf%C3%A9+ok&Empty=";
    let posted = rt
        .block_on(
            common::http_client()
                .post(format!("{}/in", listener.base_url))
                .header("content-type", FORM)
                .body(form)
                .send(),
        )
        .expect("post");
    assert_eq!(posted.status(), 200);
    let id = listener.next_json()["id"].as_i64().expect("id").to_string();
    let resent = resend_resigned(dir.path(), &id, &url, "twilio", "live-auth-token");
    let attempt: serde_json::Value = serde_json::from_slice(&resent.stdout).expect("json");
    assert_eq!(attempt["status"], 204, "{attempt}");
    let wrong = resend_resigned(dir.path(), &id, &url, "twilio", "another-token");
    let attempt: serde_json::Value = serde_json::from_slice(&wrong.stdout).expect("json");
    assert_eq!(attempt["status"], 403, "{attempt}");
    let _ = handler.kill();
    let _ = handler.wait();
}

fn stdout_of(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn fixtures_of_the_new_schemes_verify_in_hookscope_python_and_node_and_hold_no_token() {
    if !common::tool_runs(&["python3", "--version"]) || !common::tool_runs(&["node", "--version"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = receiver(dir.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = common::http_client();
    let mut post = |path: &str, headers: &[(&str, &str)], body: &str| {
        let mut request = client
            .post(format!("{}{path}", listener.base_url))
            .body(body.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        assert_eq!(rt.block_on(request.send()).expect("post").status(), 200);
        listener.next_json()["id"].as_i64().expect("id")
    };
    let gitlab = post(
        "/gl/hooks",
        &[
            ("x-gitlab-token", GITLAB_TOKEN),
            ("idempotency-key", "b1c2"),
            ("content-type", "application/json"),
        ],
        r#"{"object_kind":"push"}"#,
    );
    let twilio = post(
        "/tw/sms",
        &[
            ("x-twilio-signature", "captured-signature"),
            ("content-type", FORM),
        ],
        "MessageSid=SM1&Body=hello+there&To=%2B15558675310",
    );
    let discord = post(
        "/dc/interactions",
        &[
            ("x-signature-ed25519", &"ab".repeat(64)),
            ("x-signature-timestamp", "1700000000"),
            ("content-type", "application/json"),
        ],
        r#"{"id":"987","type":1}"#,
    );
    let v1a = format!("v1a,{}", B64.encode([7u8; 64]));
    let asymmetric = post(
        "/sw/jobs",
        &[
            ("webhook-id", "msg_v1a"),
            ("webhook-timestamp", "1700000000"),
            ("webhook-signature", &v1a),
            ("content-type", "application/json"),
        ],
        r#"{"type":"job.completed","data":{"job_id":"j9"}}"#,
    );
    let out = tempfile::tempdir().expect("out");
    let target = format!("{}/", out.path().display());
    for id in [gitlab, twilio, discord, asymmetric] {
        let id = id.to_string();
        let export = run(
            dir.path(),
            &[
                "export",
                "--format",
                "fixture",
                "--ids",
                &id,
                "--resign-with-test-secret",
                "--snippets",
                "--out",
                &target,
            ],
        );
        assert!(export.status.success(), "{}", stdout_of(&export));
        let fixture = out.path().join(format!("delivery-{id}.json"));
        if id == asymmetric.to_string() {
            let text = std::fs::read_to_string(&fixture).expect("fixture");
            let json: serde_json::Value = serde_json::from_str(&text).expect("json");
            let secret = json["signing"]["secret"].as_str().unwrap_or("");
            assert!(
                secret.starts_with("whsk_"),
                "a v1a capture is re-signed with a whsk_ key: {json}"
            );
            let header = json["headers"]
                .as_array()
                .and_then(|h| h.iter().find(|h| h[0] == "webhook-signature"))
                .and_then(|h| h[1].as_str())
                .unwrap_or("");
            assert!(
                header.starts_with("v1a,") && !header.contains(&v1a),
                "{header}"
            );
        }
        let verified = run(
            dir.path(),
            &["verify", "--fixture", &fixture.to_string_lossy()],
        );
        assert_eq!(
            verified.status.code(),
            Some(0),
            "#{id}: {}",
            stdout_of(&verified)
        );

        let python = Command::new("python3")
            .arg(out.path().join(format!("test_delivery_{id}.py")))
            .output()
            .expect("python3 runs");
        let said = stdout_of(&python);
        let skipped_ed25519 = (id == discord.to_string() || id == asymmetric.to_string())
            && said.contains("ed25519 needs the cryptography package");
        let skipped_token =
            id == gitlab.to_string() && said.contains("skipped: a token (GitLab) signs nothing");
        assert!(
            python.status.success()
                && (said.contains("ok: 2 tests passed") || skipped_ed25519 || skipped_token),
            "#{id} python: {said}"
        );
        let node = Command::new("node")
            .arg("--test")
            .arg(out.path().join(format!("delivery_{id}.test.mjs")))
            .output()
            .expect("node runs");
        let report = stdout_of(&node);
        assert!(report.contains("# fail 0"), "#{id} node: {report}");
        let passes = if id == gitlab.to_string() {
            "# pass 1"
        } else {
            "# pass 2"
        };
        assert!(report.contains(passes), "#{id} node: {report}");
    }
    // As captured, the GitLab token is in no export, while the store keeps it for resends.
    for format in ["fixture", "har", "curl"] {
        let file = out.path().join(format!("captured-{format}"));
        let export = run(
            dir.path(),
            &[
                "export",
                "--format",
                format,
                "--ids",
                &gitlab.to_string(),
                "--out",
                &file.to_string_lossy(),
            ],
        );
        assert!(export.status.success(), "{format}: {}", stdout_of(&export));
        let text = std::fs::read_to_string(&file).expect("export written");
        assert!(
            !text.contains(GITLAB_TOKEN),
            "{format} holds the token: {text}"
        );
        assert!(text.contains("[redacted: 27 bytes]"), "{format}: {text}");
    }
    let listed = run(dir.path(), &["list", "--json"]);
    assert!(!String::from_utf8_lossy(&listed.stdout).contains(GITLAB_TOKEN));
}

#[test]
fn the_probe_signs_its_cases_the_new_ways() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = receiver(dir.path());
    let discord_signing = format!("{SEED_HEX}{PUBLIC_HEX}");
    // What listen (holding the verifying keys) makes of each request the probe sends, in order:
    // valid, tampered, missing, [stale, future,] the retry twice, respaced, [rotation].
    for (path, scheme, secret, expected) in [
        (
            "/gl",
            "gitlab",
            GITLAB_TOKEN.to_string(),
            vec!["pass", "fail", "fail", "pass", "pass", "pass"],
        ),
        (
            "/tw",
            "twilio",
            "twilio-live-token".to_string(),
            vec!["pass", "fail", "fail", "pass", "pass", "pass"],
        ),
        (
            "/dc",
            "discord",
            discord_signing,
            vec!["pass", "fail", "fail", "pass", "pass", "pass"],
        ),
        (
            "/sw",
            "standard-webhooks",
            whsk(),
            vec![
                "pass", "fail", "fail", "pass", "pass", "pass", "pass", "pass", "pass",
            ],
        ),
    ] {
        let url = format!("{}{path}", listener.base_url);
        let out = run(
            dir.path(),
            &[
                "probe", &url, "--scheme", scheme, "--secret", &secret, "--json",
            ],
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{scheme}: {e}: {}", stdout_of(&out)));
        let sent: usize = report["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .map(|c| c["statuses"].as_array().map_or(0, Vec::len))
            .sum();
        let seen: Vec<serde_json::Value> = (0..sent).map(|_| listener.next_json()).collect();
        let statuses: Vec<&str> = seen
            .iter()
            .map(|d| d["checks"]["signature"]["status"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(statuses, expected, "{scheme}: {report}");
        if scheme == "standard-webhooks" {
            // Stale and future: signed right, judged on the timestamp.
            assert_eq!(seen[3]["checks"]["timestamp"]["status"], "fail");
            assert_eq!(seen[4]["checks"]["timestamp"]["status"], "fail");
            // The rotation: a stranger's v1 entry first, the real v1a second.
            let last = seen.last().expect("rotation");
            let header = last["headers"]
                .as_array()
                .and_then(|h| h.iter().find(|h| h[0] == "webhook-signature"))
                .map(|h| h[1].as_str().unwrap_or("").to_string())
                .unwrap_or_default();
            assert!(
                header.starts_with("v1,") && header.contains(" v1a,"),
                "{header}"
            );
            assert!(
                last["checks"]["signature"]["detail"]
                    .as_str()
                    .unwrap_or("")
                    .contains("signature 2 in the header"),
                "{last}"
            );
        } else {
            let skipped: Vec<&str> = report["cases"]
                .as_array()
                .expect("cases")
                .iter()
                .filter(|c| c["verdict"] == "skipped")
                .map(|c| c["name"].as_str().unwrap_or(""))
                .collect();
            assert_eq!(
                skipped,
                [
                    "stale_timestamp",
                    "future_timestamp",
                    "rotation_two_signatures"
                ],
                "{scheme}"
            );
        }
    }
}

#[test]
fn listen_gives_payload_advice_by_endpoint_and_never_fails_a_delivery_for_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        r#"
[advice]
max_body_bytes = 1024

[[endpoint]]
path = "/quiet"
advice = false
"#,
    )
    .expect("config");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = common::http_client();
    let body = format!(
        r#"{{"id":"evt_a","data":{{"member_id":"M-1","email":"pat@example.org","notes":"{}"}}}}"#,
        "x".repeat(1500)
    );
    for path in ["/loud", "/quiet"] {
        let response = rt
            .block_on(
                client
                    .post(format!("{}{path}", listener.base_url))
                    .body(body.clone())
                    .send(),
            )
            .expect("post");
        assert_eq!(response.status(), 200, "advice never refuses a delivery");
    }
    let loud = listener.next_json();
    let advice = &loud["checks"]["advice"];
    assert_eq!(advice["status"], "advice", "{loud}");
    let kinds: Vec<(&str, &str)> = advice["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap_or(""),
                i["pointer"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("size", ""),
            ("sensitive_field", "/data/member_id"),
            ("email", "/data/email")
        ],
        "{advice}"
    );
    assert!(
        advice["items"][0]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("1 KiB"),
        "{advice}"
    );
    assert!(!advice.to_string().contains("pat@example.org"), "{advice}");
    let quiet = listener.next_json();
    assert_eq!(quiet["checks"]["advice"]["status"], "none", "{quiet}");
    assert_eq!(quiet["checks"]["advice"]["items"], serde_json::json!([]));
    // The human line says it too.
    drop(listener);
    let listed = run(dir.path(), &["list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(text.matches("advice: ").count(), 1, "{text}");
}
