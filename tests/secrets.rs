//! Secrets kept off the command line: `--secret-env` and `--secret-file` wherever `--secret` is
//! accepted, checked against the Standard Webhooks reference vector; a missing source is named,
//! never its value. And `HOOKSCOPE_CONFIG` names the config file like `--config`.

mod common;

use std::process::Command;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TS: &str = "1614265330";
const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const BODY: &str = r#"{"test": 2432232314}"#;

fn verify(dir: &std::path::Path, source: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let id = format!("webhook-id: {ID}");
    let ts = format!("webhook-timestamp: {TS}");
    let sig = format!("webhook-signature: {SIG}");
    let mut args = vec!["verify", "--scheme", "standard-webhooks", "--now", TS];
    args.extend_from_slice(source);
    args.extend_from_slice(&["-H", &id, "-H", &ts, "-H", &sig, "--data", BODY]);
    let mut command = Command::new(common::bin());
    command.args(&args).env("HOOKSCOPE_DATA_DIR", dir);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("runs")
}

#[test]
fn a_secret_from_the_environment_or_a_file_verifies_like_one_on_the_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = verify(
        dir.path(),
        &["--secret-env", "ACME_SECRET"],
        &[("ACME_SECRET", SECRET)],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let file = dir.path().join("secret.txt");
    std::fs::write(&file, format!("{SECRET}\n")).expect("write");
    let out = verify(
        dir.path(),
        &["--secret-file", file.to_str().expect("path")],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // A wrong secret on the command line and the right one from a file: rotation, secret #2.
    let out = verify(
        dir.path(),
        &[
            "--secret",
            "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "--secret-file",
            file.to_str().expect("path"),
            "--json",
        ],
        &[],
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["checks"]["signature"]["secret"], "secret #2", "{json}");
}

#[test]
fn a_missing_variable_or_file_is_named_and_no_secret_is_printed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = verify(dir.path(), &["--secret-env", "NOT_SET_ANYWHERE"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--secret-env NOT_SET_ANYWHERE: the variable is not set"),
        "{stderr}"
    );

    let out = verify(dir.path(), &["--secret-file", "/nonexistent/secret"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--secret-file /nonexistent/secret"));

    // probe takes the secret from the environment too (no --secret needed); a bad URL is the
    // error, and the secret appears nowhere.
    let out = Command::new(common::bin())
        .args([
            "probe",
            "not-a-url",
            "--scheme",
            "standard-webhooks",
            "--secret-env",
            "S",
        ])
        .env("HOOKSCOPE_DATA_DIR", dir.path())
        .env("S", SECRET)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("is not a URL"), "{all}");
    assert!(!all.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), "{all}");
}

#[test]
fn hookscope_config_names_the_config_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("elsewhere.toml");
    std::fs::write(
        &config,
        "[[scheme]]\nname = \"acme\"\nfamily = \"standard-webhooks\"\n",
    )
    .expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    // The custom scheme exists only in that file.
    let out = verify(
        dir.path(),
        &["--secret", SECRET],
        &[("HOOKSCOPE_CONFIG", config.to_str().expect("path"))],
    );
    assert_eq!(out.status.code(), Some(0));
    let id = format!("webhook-id: {ID}");
    let run = |env: Option<&str>| {
        let mut command = Command::new(common::bin());
        command
            .args([
                "verify", "--scheme", "acme", "--secret", SECRET, "--now", TS, "-H", &id,
            ])
            .args([
                "-H",
                &format!("webhook-timestamp: {TS}"),
                "-H",
                &format!("webhook-signature: {SIG}"),
            ])
            .args(["--data", BODY])
            .env("HOOKSCOPE_DATA_DIR", dir.path());
        if let Some(path) = env {
            command.env("HOOKSCOPE_CONFIG", path);
        }
        command.output().expect("runs")
    };
    assert_eq!(
        run(Some(config.to_str().expect("path"))).status.code(),
        Some(0)
    );
    let without = run(None);
    assert_eq!(without.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&without.stderr).contains("unknown scheme \"acme\""));
}
