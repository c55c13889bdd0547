//! The filter language, parsed and then run: every filter that parses must run as SQL against a
//! real store (a syntax error, a wrong bind count or a type error in the generated SQL is a
//! bug), and a filter never matches more deliveries than the store holds.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

struct Fixture {
    reader: hookscope::store::Reader,
    total: i64,
    _dir: std::path::PathBuf,
}

fn fixture() -> &'static std::sync::Mutex<Fixture> {
    static STORE: OnceLock<std::sync::Mutex<Fixture>> = OnceLock::new();
    STORE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("hookscope-fuzz-filter-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("hookscope.sqlite");
        let store = hookscope::store::Store::open(&path).expect("store");
        let settings = hookscope::config::Settings::resolve(
            &hookscope::config::ConfigFile::default(),
            &hookscope::config::Overrides::default(),
        )
        .expect("settings");
        let writer = store.writer();
        let records: Vec<_> = (0..40)
            .map(|n| {
                let body = format!(
                    r#"{{"id":"evt_{}","type":"job.{}","data":{{"job_id":"job_{}","status":"{}"}}}}"#,
                    n % 30,
                    ["queued", "completed", "failed"][n % 3],
                    n % 7,
                    ["queued", "completed", "failed"][n % 3]
                );
                let delivery = hookscope::domain::delivery::Delivery {
                    received_at_ms: 1_790_000_000_000 + n as i64 * 60_000,
                    method: "POST".into(),
                    path: format!("/hooks/{}", ["a", "b"][n % 2]),
                    query: String::new(),
                    headers: vec![hookscope::domain::delivery::Header::new("webhook-id", format!("evt_{}", n % 30).as_str())],
                    body_size: body.len() as u64,
                    body: body.into_bytes(),
                    body_complete: true,
                    remote_addr: None,
                };
                let endpoint = settings.endpoint_for(&delivery.path);
                hookscope::store::NewRecord::checked(delivery, endpoint, 1_790_000_000)
            })
            .collect();
        writer.insert_many_blocking(records).expect("seed");
        drop(writer);
        store.shutdown();
        let reader = hookscope::store::Reader::open(&path).expect("reader");
        let total = reader.count().expect("count");
        std::sync::Mutex::new(Fixture { reader, total, _dir: dir })
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(filter) = hookscope::domain::filter::Filter::parse(text) else { return };
    let fixture = fixture().lock().unwrap_or_else(|e| e.into_inner());
    let matched = fixture
        .reader
        .count_matching(&filter)
        .unwrap_or_else(|e| panic!("the filter {text:?} parsed but did not run: {e}"));
    assert!((0..=fixture.total).contains(&matched), "{matched} of {}", fixture.total);
    let page = fixture
        .reader
        .page(&filter, 0, 10)
        .unwrap_or_else(|e| panic!("the filter {text:?} parsed but its page did not run: {e}"));
    assert!(page.len() as i64 <= matched.min(10));
});
