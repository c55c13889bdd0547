//! Times as a person reads them: human output in local time (`TZ` honoured) with the date when
//! it is not today, `--utc` on request, and JSON always RFC 3339 in UTC.

mod common;

use std::process::Command;

/// A store holding one delivery received at 2021-02-25T15:02:10.123Z (a HAR import keeps the
/// recorded time).
fn store_with_one_old_delivery() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let har = dir.path().join("old.har");
    std::fs::write(
        &har,
        r#"{"log": {"entries": [{"startedDateTime": "2021-02-25T15:02:10.123Z",
            "request": {"method": "POST", "url": "http://127.0.0.1/hooks/old",
                        "headers": [{"name": "content-type", "value": "application/json"}],
                        "postData": {"text": "{\"id\":\"evt_1\",\"type\":\"job.completed\",\"data\":{\"job_id\":\"job_1\",\"status\":\"completed\"}}"}},
            "response": {"status": 200}}]}}"#,
    )
    .expect("har");
    let out = common::run(dir.path(), &["import", har.to_str().expect("path")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn run_in(dir: &std::path::Path, tz: &str, args: &[&str]) -> String {
    let out = Command::new(common::bin())
        .args(args)
        .env("HOOKSCOPE_DATA_DIR", dir)
        .env("TZ", tz)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn human_output_is_local_time_with_the_date_and_utc_on_request() {
    let dir = store_with_one_old_delivery();
    // Tokyo is UTC+9: the delivery is on the 26th there, at 00:02.
    let tokyo = run_in(dir.path(), "JST-9", &["list"]);
    assert!(
        tokyo.starts_with("#1 2021-02-26 00:02 POST /hooks/old"),
        "{tokyo}"
    );
    let utc = run_in(dir.path(), "JST-9", &["list", "--utc"]);
    assert!(
        utc.starts_with("#1 2021-02-25 15:02 POST /hooks/old"),
        "{utc}"
    );

    // Job timelines carry the offset with every time.
    let job = run_in(dir.path(), "JST-9", &["jobs", "show", "job_1"]);
    assert!(job.contains("2021-02-26T00:02:10.123+09:00"), "{job}");
    assert!(
        job.contains("first seen 2021-02-26 00:02:10.123 JST (UTC+09)"),
        "{job}"
    );
    let job = run_in(dir.path(), "JST-9", &["--utc", "jobs", "show", "job_1"]);
    assert!(
        job.contains("first seen 2021-02-25 15:02:10.123 UTC"),
        "{job}"
    );

    // JSON stays RFC 3339 in UTC whatever the zone.
    let json = run_in(dir.path(), "JST-9", &["list", "--json"]);
    let value: serde_json::Value = serde_json::from_str(json.trim()).expect("json");
    assert_eq!(value["received_at"], "2021-02-25T15:02:10.123Z");
}
