//! A forgery hookscope sends is forged (`Scheme::forge`, used by `probe` and `simulate`): for
//! every preset and every custom family, with random secrets and bodies, the forged header is in
//! the scheme's own form, each signature in it differs from the genuine one by exactly one bit
//! of its bytes (so no decoder, strict or lenient, reads it as the genuine one), and it fails
//! verification while the genuine one passes, in hookscope and in the providers' own libraries
//! (`standardwebhooks`, `svix`, `stripe`, `slack_sdk`, `twilio`, pynacl). Then `probe` and
//! `simulate` against handlers built on those libraries, with random secrets, never blame them.

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hookscope::domain::delivery::{Delivery, Header};
use hookscope::domain::scheme::{
    Encoding, Family, Scheme, Secret, SigKind, Verification, ed25519, presets,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const URL: &str = "https://hooks.example.com/hooks?src=forgery";

fn delivery(headers: Vec<Header>, body: &[u8], query: &str) -> Delivery {
    Delivery {
        received_at_ms: 1_700_000_000_000,
        method: "POST".into(),
        path: "/hooks".into(),
        query: query.into(),
        headers,
        body_size: body.len() as u64,
        body: body.to_vec(),
        body_complete: true,
        remote_addr: None,
    }
}

/// Every preset, then custom schemes of each family in the encodings and prefixes a `[[scheme]]`
/// can choose.
fn schemes() -> Vec<Scheme> {
    let mut all = presets();
    let base = |name: &str| Scheme::preset(name).expect("preset");
    for (encoding, prefix) in [
        (Encoding::Hex, ""),
        (Encoding::Hex, "sha256="),
        (Encoding::Base64, ""),
        (Encoding::Base64, "sha256="),
        (Encoding::Base64, "v1="),
    ] {
        let mut custom = base("github");
        custom.name = format!("custom-hmac-{encoding:?}-{prefix}");
        custom.signature_header = "x-custom-signature".into();
        custom.encoding = encoding;
        custom.prefix = prefix.into();
        all.push(custom);
    }
    for family in Family::ALL {
        let Some(mut custom) = presets().into_iter().find(|s| s.family == family) else {
            continue;
        };
        custom.name = format!("custom-{}", family.config_name());
        custom.signature_header = "x-acme-signature".into();
        all.push(custom);
    }
    all
}

/// Secrets a scheme signs with and verifies with, from random bytes: Standard Webhooks' are
/// `whsec_` keys or (`ed25519`) `whsk_` signing keys verified by their `whpk_`; Discord's an
/// ed25519 key in hex; the rest text. Families that carry several signatures get `count`.
fn keys(scheme: &Scheme, seeds: &[[u8; 32]], ed25519: bool) -> (Vec<Secret>, Vec<Secret>) {
    let several = matches!(
        scheme.family,
        Family::StandardWebhooks | Family::Stripe | Family::Paddle
    );
    let seeds = if several { seeds } else { &seeds[..1] };
    let mut signing = Vec::new();
    let mut verifying = Vec::new();
    for (i, seed) in seeds.iter().enumerate() {
        let (s, v) = match scheme.family {
            Family::StandardWebhooks if ed25519 && i % 2 == 0 => {
                let key = ed25519::SigningKey::from_bytes(seed).expect("seed");
                (
                    format!("whsk_{}", B64.encode(seed)),
                    format!("whpk_{}", B64.encode(key.public().0)),
                )
            }
            Family::StandardWebhooks => {
                let len = 16 + usize::from(seed[0]) % 17;
                let s = format!("whsec_{}", B64.encode(&seed[..len]));
                (s.clone(), s)
            }
            Family::Discord => {
                let key = ed25519::SigningKey::from_bytes(seed).expect("seed");
                (
                    format!("{}{}", hex::encode(seed), hex::encode(key.public().0)),
                    hex::encode(key.public().0),
                )
            }
            _ => {
                let len = 8 + usize::from(seed[0]) % 24;
                let s = hex::encode(&seed[..len / 2 + 1]);
                (s.clone(), s)
            }
        };
        signing.push(Secret::new(s));
        verifying.push(Secret::new(v));
    }
    (signing, verifying)
}

fn verified(v: &Verification) -> bool {
    matches!(v, Verification::Verified { .. })
}

fn value_of<'a>(headers: &'a [Header], name: &str) -> &'a [u8] {
    &headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .unwrap_or_else(|| panic!("no {name}"))
        .value
}

/// Bits that differ between two byte strings of one length.
fn bits_apart(a: &[u8], b: &[u8]) -> u32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// One scheme, one draw: the property's assertions, as a `Result` so proptest can shrink.
fn forged_is_forged(
    scheme: &Scheme,
    seeds: &[[u8; 32]],
    ed25519: bool,
    body: &[u8],
    event_id: &str,
    ts: i64,
) -> Result<(), TestCaseError> {
    let mut scheme = scheme.clone();
    scheme.public_url = Some(URL.into());
    let (signing, verifying) = keys(&scheme, seeds, ed25519);
    let genuine = scheme.sign(&signing, event_id, ts, body).expect("signs");
    let forged = scheme.forge(&signing, event_id, ts, body).expect("forges");
    let sent_to = scheme.request_url(URL, body);
    let query = sent_to.split_once('?').map_or("", |(_, q)| q);
    let name = &scheme.name;
    prop_assert!(
        verified(&scheme.verify(&delivery(genuine.clone(), body, query), &verifying)),
        "{name}: the genuine signature does not verify"
    );
    let verdict = scheme.verify(&delivery(forged.clone(), body, query), &verifying);
    prop_assert!(!verified(&verdict), "{name}: the forgery verifies");
    // The same headers, in the same order; only the signature header differs.
    let names = |h: &[Header]| h.iter().map(|h| h.name.clone()).collect::<Vec<_>>();
    prop_assert_eq!(names(&genuine), names(&forged));
    for (g, f) in genuine.iter().zip(&forged) {
        if g.name != scheme.signature_header {
            prop_assert_eq!(g, f);
        }
    }
    // The forged header reads in the scheme's own strict form: same timestamp, as many
    // signatures, each one bit away from its genuine twin (a token: another token).
    let header = &scheme.signature_header;
    let real = scheme
        .parse_header(value_of(&genuine, header))
        .expect("parses");
    let fake = scheme
        .parse_header(value_of(&forged, header))
        .map_err(|e| TestCaseError::fail(format!("{name}: the forgery is malformed: {e}")))?;
    prop_assert_eq!(&real.timestamp, &fake.timestamp);
    prop_assert_eq!(real.signatures.len(), fake.signatures.len(), "{}", name);
    prop_assert!(fake.ignored.is_empty(), "{name}: {:?}", fake.ignored);
    for ((kind, r), (fake_kind, f)) in real.signatures.iter().zip(&fake.signatures) {
        prop_assert_eq!(kind, fake_kind);
        if *kind == SigKind::Token {
            prop_assert_ne!(r, f, "{}: the token is unchanged", name);
        } else {
            prop_assert_eq!(bits_apart(r, f), 1, "{}: not one bit apart", name);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Fails on the old way (changing the last alphanumeric character of the header): for a
    /// 32-byte MAC in base64, `A`→`B` changes only padding bits, which a strict decoder refuses
    /// as malformed and a lenient one drops, reading the genuine MAC.
    #[test]
    fn a_forged_signature_is_one_bit_off_in_the_schemes_own_form_and_never_verifies(
        seeds in prop::collection::vec(any::<[u8; 32]>(), 1..4),
        ed25519 in any::<bool>(),
        body in prop::collection::vec(any::<u8>(), 0..300),
        event_id in "[a-z0-9_]{1,30}",
        ts in 1_000_000_000i64..4_000_000_000,
    ) {
        for scheme in schemes() {
            forged_is_forged(&scheme, &seeds, ed25519, &body, &event_id, ts)?;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The providers' own libraries.

/// The reference libraries, installed on first use with pip from PyPI (no dependencies beyond
/// the ones listed). `None` (skipped, and saying so) without python3 and pip.
fn reference_python() -> Option<PathBuf> {
    common::pip_target(
        "py-forgery-references",
        "nacl/signing.py",
        &[
            "standardwebhooks==1.3.0",
            "svix==2.9.1",
            "stripe==16.1.0",
            "typing_extensions==4.16.0",
            "slack_sdk==3.48.0",
            "twilio==9.13.0",
            "pynacl==1.6.2",
            "cffi==2.1.1",
            "pycparser==3.12",
        ],
    )
}

/// Verifies a request the way each library does. Shared by the batch check and the handlers:
/// `verify(kind, key, url, headers, body)` is true when the library accepts it. `kind` names the
/// library; `key` is the secret (for `v1a`, the `whpk_` key; for Discord, its public key in hex).
const VERIFY_PY: &str = r#"
import base64, hashlib, hmac, importlib.util, json, os, sys, time
from urllib.parse import parse_qsl
import standardwebhooks.webhooks as sw
import stripe
from slack_sdk.signature import SignatureVerifier
from twilio.request_validator import RequestValidator
from nacl.signing import VerifyKey
from nacl.exceptions import BadSignatureError

# svix's package imports its HTTP client; its webhooks module alone is what verifies.
_spec = importlib.util.spec_from_file_location(
    "svix_webhooks", os.path.join(os.path.dirname(sw.__file__), "..", "svix", "webhooks.py"))
svix = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(svix)

class Form(dict):
    def getlist(self, name):
        return self[name]

def ed25519_ok(key, message, signature):
    try:
        VerifyKey(key).verify(message, signature)
        return True
    except (BadSignatureError, ValueError):
        return False

def verify(kind, key, url, headers, body):
    h = {k.lower(): v for k, v in headers.items()}
    try:
        if kind == "standardwebhooks":
            sw.Webhook(key).verify(body, h)
            return True
        if kind == "svix":
            svix.Webhook(key).verify(body, h)
            return True
        if kind == "stripe":
            stripe.WebhookSignature.verify_header(body.decode("utf-8"), h.get("stripe-signature"), key, 300)
            return True
        if kind == "slack":
            return SignatureVerifier(key).is_valid(body, h.get("x-slack-request-timestamp"), h.get("x-slack-signature"))
        if kind == "twilio":
            ct = h.get("content-type") or ""
            if ct.startswith("application/x-www-form-urlencoded"):
                params = Form()
                for k, v in parse_qsl(body.decode("utf-8"), keep_blank_values=True):
                    params.setdefault(k, []).append(v)
            else:
                params = body.decode("utf-8")
            return RequestValidator(key).validate(url, params, h.get("x-twilio-signature", ""))
        if kind == "v1a":
            # Standard Webhooks' asymmetric signatures, with pynacl; the library checks the age.
            ts = int(h["webhook-timestamp"])
            if abs(time.time() - ts) > 300:
                return False
            public = base64.b64decode(key[len("whpk_"):])
            message = ("%s.%s." % (h["webhook-id"], h["webhook-timestamp"])).encode() + body
            entries = [e.split(",", 1) for e in h.get("webhook-signature", "").split(" ")]
            return any(v == "v1a" and ed25519_ok(public, message, base64.b64decode(s))
                       for v, s in (e for e in entries if len(e) == 2))
        if kind == "discord":
            message = h["x-signature-timestamp"].encode() + body
            return ed25519_ok(bytes.fromhex(key), message, bytes.fromhex(h.get("x-signature-ed25519", "")))
    except Exception:
        return False
    raise ValueError("unknown kind " + kind)
"#;

/// The batch: each case's genuine request must verify with every secret it was signed with, its
/// forgery with none; and every forged base64 signature, decoded leniently (Python's
/// `b64decode`, as a hand-written handler does), must differ from the genuine one.
const BATCH_PY: &str = r##"
cases = json.load(open(sys.argv[1]))
bad = []
for i, c in enumerate(cases):
    body = base64.b64decode(c["body"])
    for key in c["keys"]:
        if not verify(c["kind"], key, c["url"], c["genuine"], body):
            bad.append("#%d %s: the genuine request was refused" % (i, c["kind"]))
        if verify(c["kind"], key, c["url"], c["forged"], body):
            bad.append("#%d %s: the forgery was accepted" % (i, c["kind"]))
    for g, f in zip(c["genuine_b64"], c["forged_b64"]):
        if base64.b64decode(g + "==") == base64.b64decode(f + "=="):
            bad.append("#%d %s: the forgery decodes to the genuine bytes" % (i, c["kind"]))
print(json.dumps({"cases": len(cases), "bad": bad[:20], "failures": len(bad)}))
"##;

/// The scheme a library verifies, and how its secrets are drawn.
const LIBRARIES: &[(&str, &str)] = &[
    ("standardwebhooks", "standard-webhooks"),
    ("svix", "svix"),
    ("stripe", "stripe"),
    ("slack", "slack"),
    ("twilio", "twilio"),
    ("v1a", "standard-webhooks"),
    ("discord", "discord"),
];

/// 32 random bytes.
fn random32() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("random");
    bytes
}

/// The base64 signatures of a header, as written (Standard Webhooks' entries, Twilio's value).
fn base64_signatures(kind: &str, value: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(value);
    match kind {
        "twilio" => vec![text.into_owned()],
        "standardwebhooks" | "svix" | "v1a" => text
            .split(' ')
            .filter_map(|e| {
                e.split_once(',')
                    .map(|(_, s)| s.trim_end_matches('=').to_string())
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// One case for the batch: a random body and secrets, signed and forged now.
fn library_case(kind: &str, scheme_name: &str) -> Value {
    let mut scheme = Scheme::preset(scheme_name).expect("preset");
    let url = "https://hooks.example.com/twilio/sms?batch=7";
    scheme.public_url = Some(url.into());
    let seeds: Vec<[u8; 32]> = (0..1 + random32()[0] % 3).map(|_| random32()).collect();
    let (signing, verifying) = keys(&scheme, &seeds, kind == "v1a");
    // v1a: only the ed25519 keys (every other one) are checked by pynacl.
    let (signing, verifying): (Vec<Secret>, Vec<Secret>) = if kind == "v1a" {
        (
            signing.into_iter().step_by(2).collect(),
            verifying.into_iter().step_by(2).collect(),
        )
    } else {
        (signing, verifying)
    };
    let body = if kind == "twilio" {
        format!(
            "MessageSid=SM{}&Body=hello+{}",
            hex::encode(&seeds[0][..8]),
            hex::encode(&seeds[0][8..12])
        )
        .into_bytes()
    } else {
        format!(
            r#"{{"id":"evt_{}","type":"job.completed","n":{}}}"#,
            hex::encode(&seeds[0][..8]),
            seeds[0][9]
        )
        .into_bytes()
    };
    let id = format!("msg_{}", hex::encode(&seeds[0][12..20]));
    let now = hookscope::domain::clock::now_secs();
    let mut genuine = scheme.sign(&signing, &id, now, &body).expect("signs");
    let mut forged = scheme.forge(&signing, &id, now, &body).expect("forges");
    if kind == "twilio" {
        for h in [&mut genuine, &mut forged] {
            h.push(Header::new(
                "content-type",
                "application/x-www-form-urlencoded",
            ));
        }
    }
    let map = |headers: &[Header]| {
        headers
            .iter()
            .map(|h| (h.name.clone(), json!(String::from_utf8_lossy(&h.value))))
            .collect::<serde_json::Map<_, _>>()
    };
    let header = &scheme.signature_header;
    json!({
        "kind": kind,
        "keys": verifying.iter().map(Secret::expose).collect::<Vec<_>>(),
        "url": url,
        "body": B64.encode(&body),
        "genuine": map(&genuine),
        "forged": map(&forged),
        "genuine_b64": base64_signatures(kind, value_of(&genuine, header)),
        "forged_b64": base64_signatures(kind, value_of(&forged, header)),
    })
}

#[test]
fn the_providers_own_libraries_refuse_every_forgery_and_accept_the_genuine() {
    let Some(site) = reference_python() else {
        return;
    };
    let cases: Vec<Value> = LIBRARIES
        .iter()
        .flat_map(|(kind, scheme)| (0..300).map(|_| library_case(kind, scheme)))
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("cases.json");
    std::fs::write(&file, serde_json::to_vec(&cases).expect("json")).expect("write");
    let script = format!("{VERIFY_PY}\n{BATCH_PY}");
    let file = file.to_string_lossy();
    let (ok, said) = common::run_tool("python3", &["-c", &script, &file], Some(&site));
    assert!(ok, "{said}");
    let summary: Value =
        serde_json::from_str(said.trim()).unwrap_or_else(|e| panic!("{e}: {said}"));
    assert_eq!(summary["cases"], cases.len(), "{summary}");
    assert_eq!(summary["failures"], 0, "{summary}");
}

// ---------------------------------------------------------------------------------------------
// `probe` and `simulate` against handlers built on those libraries.

/// A handler on loopback: `POST /KIND/KEY_HEX/…` verifies with library KIND and key KEY (hex of
/// its text), answers 204 when it accepts and 401 when it refuses.
const HANDLER_PY: &str = r#"
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        parts = self.path.split("/")
        kind, key = parts[1], bytes.fromhex(parts[2]).decode()
        url = "http://%s%s" % (self.headers["host"], self.path)
        ok = verify(kind, key, url, dict(self.headers.items()), body)
        self.send_response(204 if ok else 401)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

struct PyHandler {
    child: std::process::Child,
    port: u16,
}

impl Drop for PyHandler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn py_handler(site: &Path) -> PyHandler {
    let mut child = Command::new("python3")
        .args(["-c", &format!("{VERIFY_PY}\n{HANDLER_PY}")])
        .env("PYTHONPATH", site)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("port");
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no port: {line}"));
    PyHandler { child, port }
}

/// A random secret for the scheme a library verifies: what hookscope signs with, and the key
/// the handler verifies with.
fn random_secret(kind: &str, scheme: &Scheme) -> (String, String) {
    let (signing, verifying) = keys(scheme, &[random32()], kind == "v1a");
    (
        signing[0].expose().to_string(),
        verifying[0].expose().to_string(),
    )
}

/// How many runs: `default`, or `HOOKSCOPE_FORGERY_RUNS` for every library (200 for the issue's
/// own count: `HOOKSCOPE_FORGERY_RUNS=200 cargo test --test forgeries`).
fn run_count(default: usize) -> usize {
    std::env::var("HOOKSCOPE_FORGERY_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn handler_url(port: u16, kind: &str, key: &str) -> String {
    format!("http://127.0.0.1:{port}/{kind}/{}/hooks", hex::encode(key))
}

/// `hookscope probe` many times with fresh random secrets: never a failed case.
#[test]
fn probe_never_blames_a_handler_that_verifies_with_the_providers_library() {
    let Some(site) = reference_python() else {
        return;
    };
    let handler = py_handler(&site);
    for (kind, scheme_name, runs) in [
        ("standardwebhooks", "standard-webhooks", 200),
        ("stripe", "stripe", 50),
        ("twilio", "twilio", 50),
        ("v1a", "standard-webhooks", 50),
    ] {
        let scheme = Scheme::preset(scheme_name).expect("preset");
        let mut blamed = Vec::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let runs = run_count(runs);
        for _ in 0..runs {
            let (secret, key) = random_secret(kind, &scheme);
            let url = handler_url(handler.port, kind, &key);
            let request = hookscope::app::probe::ProbeRequest::new(&url, scheme_name, vec![secret]);
            let file = hookscope::config::ConfigFile::default();
            let prepared = hookscope::app::probe::prepare(&file, request).expect("prepares");
            let report = rt
                .block_on(hookscope::app::probe::run(&prepared))
                .expect("runs");
            for case in report
                .cases
                .iter()
                .filter(|c| c.verdict == hookscope::net::probe::Verdict::Fail)
            {
                blamed.push(format!("{}: {}", case.name, case.detail));
            }
        }
        assert!(
            blamed.is_empty(),
            "{kind}: {} of {runs} probes blamed the handler: {:?}",
            blamed.len(),
            &blamed[..blamed.len().min(5)]
        );
    }
}

/// `hookscope simulate` with fresh random secrets: `refuses_forgeries` passes, no check fails.
#[test]
fn simulate_never_blames_a_handler_that_verifies_with_the_providers_library() {
    let Some(site) = reference_python() else {
        return;
    };
    let handler = py_handler(&site);
    let dir = tempfile::tempdir().expect("tempdir");
    for (kind, scheme_name, runs) in [
        ("standardwebhooks", "standard-webhooks", 6),
        ("stripe", "stripe", 2),
        ("twilio", "twilio", 2),
        ("v1a", "standard-webhooks", 2),
    ] {
        let scheme = Scheme::preset(scheme_name).expect("preset");
        for _ in 0..run_count(runs) {
            let (secret, key) = random_secret(kind, &scheme);
            let url = handler_url(handler.port, kind, &key);
            let out = common::run(
                dir.path(),
                &[
                    "simulate",
                    "--target",
                    &url,
                    "--scheme",
                    scheme_name,
                    "--secret",
                    &secret,
                    "--jobs",
                    "1",
                    "--time-scale",
                    "36000",
                    "--until-done",
                    "--json",
                ],
            );
            let card: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                panic!(
                    "no scorecard ({e}): {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
            let checks = card["checks"].as_array().expect("checks");
            let forgeries = checks
                .iter()
                .find(|c| c["name"] == "refuses_forgeries")
                .expect("line");
            assert_eq!(forgeries["status"], "pass", "{kind}: {card}");
            assert!(
                checks.iter().all(|c| c["status"] != "fail"),
                "{kind}: {card}"
            );
        }
    }
}
