//! Export and import round trips on real captures: fixtures verify offline (as captured with the
//! real secret, re-signed with their own test secret, redacted), HAR goes out and comes back
//! identical, binary bodies survive every format, the generated Python and Node tests run, and
//! the real secret is in no exported file.

mod common;

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use common::{Listener, now_secs, run};
use hmac::{KeyInit, Mac};
use hookscope::domain::scheme::{Scheme, Secret};
use hookscope::store::Reader;

const REAL_SECRET: &str = "whsec_c2VjcmV0LXRoYXQtbXVzdC1uZXZlci1sZWF2ZQ==";

/// Starts `listen` with the real secret and captures a signed JSON delivery and a binary one.
fn captured(dir: &Path) -> (i64, i64) {
    let mut listener = Listener::start(
        dir,
        &["--scheme", "standard-webhooks", "--secret", REAL_SECRET],
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = common::http_client();
    let scheme = Scheme::preset("standard-webhooks").expect("preset");
    let mut ids = Vec::new();
    let json = br#"{"type":"job.completed","data":{"job_id":"job_1","patient":{"name":"Ada Lovelace"}},"n":1.50}"#.to_vec();
    let binary: Vec<u8> = vec![0x00, 0xff, 0xfe, b'\n', 0x80, b'{', 0x01];
    for (event, body) in [("msg_json", json), ("msg_bin", binary)] {
        let headers = scheme
            .sign(&[Secret::new(REAL_SECRET)], event, now_secs(), &body)
            .expect("sign");
        let mut request = client
            .post(format!("{}/hooks/ocr?x=1", listener.base_url))
            .body(body);
        for h in headers {
            request = request.header(h.name, h.value);
        }
        assert_eq!(rt.block_on(request.send()).expect("post").status(), 200);
        let line = listener.next_json();
        assert_eq!(line["checks"]["signature"]["status"], "pass");
        ids.push(line["id"].as_i64().expect("id"));
    }
    (ids[0], ids[1])
}

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

#[test]
fn fixtures_verify_offline_as_captured_resigned_and_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (json_id, _) = captured(dir.path());
    let out = tempfile::tempdir().expect("out");
    let id = json_id.to_string();
    let d = |name: &str| out.path().join(name).to_string_lossy().into_owned();

    // As captured: the original signature, verified with the real secret at the recorded time.
    ok(&run(
        dir.path(),
        &[
            "export",
            "--format",
            "fixture",
            "--ids",
            &id,
            "--out",
            &d("captured.json"),
        ],
    ));
    let captured = read_json(&out.path().join("captured.json"));
    assert_eq!(captured["signing"]["mode"], "as_captured");
    ok(&run(
        dir.path(),
        &[
            "verify",
            "--fixture",
            &d("captured.json"),
            "--secret",
            REAL_SECRET,
        ],
    ));
    let without = run(dir.path(), &["verify", "--fixture", &d("captured.json")]);
    assert_eq!(
        without.status.code(),
        Some(2),
        "an as-captured fixture holds no secret"
    );

    // Re-signed: verifies with the secret written into it, and by the reference algorithm.
    ok(&run(
        dir.path(),
        &[
            "export",
            "--format",
            "fixture",
            "--ids",
            &id,
            "--resign-with-test-secret",
            "--out",
            &d("resigned.json"),
        ],
    ));
    let resigned = read_json(&out.path().join("resigned.json"));
    assert_eq!(resigned["signing"]["mode"], "test_secret");
    ok(&run(
        dir.path(),
        &["verify", "--fixture", &d("resigned.json")],
    ));
    let secret = resigned["signing"]["secret"].as_str().expect("secret");
    assert!(secret.starts_with("whsec_") && secret != REAL_SECRET);
    let header = |name: &str| {
        resigned["headers"]
            .as_array()
            .expect("headers")
            .iter()
            .find(|h| h[0] == name)
            .map(|h| h[1].as_str().expect("text").to_string())
            .expect(name)
    };
    let body = resigned["body"]["text"].as_str().expect("text body");
    let key = B64
        .decode(secret.trim_start_matches("whsec_"))
        .expect("key");
    let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&key).expect("key");
    mac.update(
        format!(
            "{}.{}.{body}",
            header("webhook-id"),
            header("webhook-timestamp")
        )
        .as_bytes(),
    );
    assert_eq!(
        header("webhook-signature"),
        format!("v1,{}", B64.encode(mac.finalize().into_bytes()))
    );
    assert_eq!(
        body,
        r#"{"type":"job.completed","data":{"job_id":"job_1","patient":{"name":"Ada Lovelace"}},"n":1.50}"#,
        "never re-serialised"
    );

    // Redacted: the value is gone, every other byte kept, and the fixture still verifies.
    ok(&run(
        dir.path(),
        &[
            "export",
            "--format",
            "fixture",
            "--ids",
            &id,
            "--resign-with-test-secret",
            "--redact",
            "/data/patient/name",
            "--out",
            &d("redacted.json"),
        ],
    ));
    let redacted = read_json(&out.path().join("redacted.json"));
    assert_eq!(
        redacted["body"]["text"],
        r#"{"type":"job.completed","data":{"job_id":"job_1","patient":{"name":"[redacted]"}},"n":1.50}"#
    );
    ok(&run(
        dir.path(),
        &["verify", "--fixture", &d("redacted.json")],
    ));
    let refused = run(
        dir.path(),
        &[
            "export",
            "--format",
            "fixture",
            "--ids",
            &id,
            "--redact",
            "/data/patient/name",
            "--out",
            &d("x.json"),
        ],
    );
    assert_eq!(
        refused.status.code(),
        Some(2),
        "redacting without re-signing would break the signature"
    );
}

#[test]
fn har_round_trip_and_binary_bodies_survive_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (json_id, bin_id) = captured(dir.path());
    let out = tempfile::tempdir().expect("out");
    let har = out.path().join("captures.har");
    ok(&run(
        dir.path(),
        &[
            "export",
            "--format",
            "har",
            "--ids",
            &json_id.to_string(),
            &bin_id.to_string(),
            "--out",
            &har.to_string_lossy(),
        ],
    ));
    let log = read_json(&har);
    assert_eq!(log["log"]["version"], "1.2");
    assert_eq!(
        log["log"]["entries"][0]["request"]["url"]
            .as_str()
            .map(|u| u.ends_with("/hooks/ocr?x=1")),
        Some(true)
    );
    assert_eq!(
        log["log"]["entries"][1]["request"]["postData"]["encoding"],
        "base64"
    );

    // Import into another store: identical bodies and headers, checked again on arrival.
    let other = tempfile::tempdir().expect("other store");
    ok(&run(other.path(), &["import", &har.to_string_lossy()]));
    let original = Reader::open(&dir.path().join("hookscope.sqlite")).expect("store");
    let imported = Reader::open(&other.path().join("hookscope.sqlite")).expect("store");
    for (source, copy) in [(json_id, 1), (bin_id, 2)] {
        let a = original.get(source).expect("get").expect("original");
        let b = imported.get(copy).expect("get").expect("imported");
        assert_eq!(a.delivery.body, b.delivery.body);
        assert_eq!(a.delivery.headers, b.delivery.headers);
        assert_eq!(
            (a.delivery.path.as_str(), a.delivery.query.as_str()),
            (b.delivery.path.as_str(), b.delivery.query.as_str())
        );
        assert!(
            b.note
                .as_deref()
                .is_some_and(|n| n.contains("Imported from captures.har"))
        );
    }

    // The binary body as a fixture (base64) and as curl (--data-binary @file).
    let bin = bin_id.to_string();
    let fixture = out.path().join("bin.json");
    ok(&run(
        dir.path(),
        &[
            "export",
            "--format",
            "fixture",
            "--ids",
            &bin,
            "--out",
            &fixture.to_string_lossy(),
        ],
    ));
    let loaded = hookscope::export::load_fixture(&std::fs::read_to_string(&fixture).expect("read"))
        .expect("fixture");
    let stored = original.get(bin_id).expect("get").expect("stored");
    assert_eq!(loaded.delivery.body, stored.delivery.body);
    ok(&run(
        dir.path(),
        &[
            "verify",
            "--fixture",
            &fixture.to_string_lossy(),
            "--secret",
            REAL_SECRET,
        ],
    ));
    let script = out.path().join("replay.sh");
    ok(&run(
        dir.path(),
        &[
            "export",
            "--format",
            "curl",
            "--ids",
            &bin,
            "--out",
            &script.to_string_lossy(),
        ],
    ));
    let text = std::fs::read_to_string(&script).expect("script");
    assert!(
        text.contains(&format!("--data-binary '@replay-body-{bin_id}.bin'")),
        "{text}"
    );
    assert_eq!(
        std::fs::read(out.path().join(format!("replay-body-{bin_id}.bin"))).expect("body file"),
        stored.delivery.body
    );
}

#[test]
fn the_generated_python_and_node_tests_run_against_their_fixture() {
    if !common::tool_runs(&["python3", "--version"]) || !common::tool_runs(&["node", "--version"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (json_id, _) = captured(dir.path());
    let out = tempfile::tempdir().expect("out");
    let target = format!("{}/", out.path().display());
    ok(&run(
        dir.path(),
        &[
            "export",
            "--format",
            "fixture",
            "--ids",
            &json_id.to_string(),
            "--resign-with-test-secret",
            "--snippets",
            "--out",
            &target,
        ],
    ));
    let python = Command::new("python3")
        .arg(out.path().join(format!("test_delivery_{json_id}.py")))
        .output()
        .expect("python3 runs");
    assert!(ok(&python).contains("ok: 2 tests passed"));
    let node = Command::new("node")
        .arg("--test")
        .arg(out.path().join(format!("delivery_{json_id}.test.mjs")))
        .output()
        .expect("node runs");
    let report = ok(&node);
    assert!(
        report.contains("# pass 2") && report.contains("# fail 0"),
        "{report}"
    );
}

#[test]
fn the_real_secret_is_in_no_exported_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (json_id, bin_id) = captured(dir.path());
    let out = tempfile::tempdir().expect("out");
    let ids = [json_id.to_string(), bin_id.to_string()];
    let base = out.path().to_string_lossy().into_owned();
    for args in [
        vec!["--format", "fixture", "--out", &format!("{base}/captured/")],
        vec![
            "--format",
            "fixture",
            "--resign-with-test-secret",
            "--snippets",
            "--out",
            &format!("{base}/resigned/"),
        ],
        vec![
            "--format",
            "fixture",
            "--out",
            &format!("{base}/bundle.json"),
        ],
        vec!["--format", "har", "--out", &format!("{base}/all.har")],
        vec!["--format", "curl", "--out", &format!("{base}/all.sh")],
    ] {
        let mut all = vec!["export", "--ids", &ids[0], &ids[1]];
        all.extend(args.iter().map(|s| &**s));
        ok(&run(dir.path(), &all));
    }
    let raw_key = B64
        .decode(REAL_SECRET.trim_start_matches("whsec_"))
        .expect("key");
    let mut files = 0;
    for entry in walk(out.path()) {
        let bytes = std::fs::read(&entry).expect("read");
        files += 1;
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(REAL_SECRET),
            "{} holds the real secret",
            entry.display()
        );
        assert!(
            !text.contains(REAL_SECRET.trim_start_matches("whsec_")),
            "{} holds its base64",
            entry.display()
        );
        assert!(
            !bytes
                .windows(raw_key.len())
                .any(|w| w == raw_key.as_slice()),
            "{} holds its key bytes",
            entry.display()
        );
    }
    assert!(files >= 10, "{files} files checked");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn the_generated_rust_test_compiles_and_passes_against_its_fixture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (json_id, _) = captured(dir.path());
    let project = tempfile::tempdir().expect("project");
    let tests = project.path().join("tests");
    ok(&run(
        dir.path(),
        &[
            "export",
            "--format",
            "fixture",
            "--ids",
            &json_id.to_string(),
            "--resign-with-test-secret",
            "--snippets",
            "--out",
            &format!("{}/", tests.display()),
        ],
    ));
    // A crate of the developer's own, with the dependencies the snippet names; built offline
    // from the crates hookscope itself was built with, in a target dir kept between runs.
    std::fs::write(
        project.path().join("Cargo.toml"),
        "[package]\nname = \"snippet-check\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dev-dependencies]\nbase64 = \"0.22\"\nhmac = \"0.13\"\nsha2 = \"0.11\"\nserde_json = \"1\"\n",
    )
    .expect("manifest");
    std::fs::create_dir_all(project.path().join("src")).expect("src");
    std::fs::write(project.path().join("src/lib.rs"), "").expect("lib");
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/snippet-check");
    let out = Command::new(env!("CARGO"))
        .args(["test", "--offline", "--quiet"])
        .current_dir(project.path())
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cargo runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{report}");
    assert!(report.contains("2 passed"), "{report}");
}
