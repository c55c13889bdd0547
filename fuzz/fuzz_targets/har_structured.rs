//! HAR import on HAR-shaped input: entries built from arbitrary parts (methods, URLs, headers,
//! text or base64 bodies, dates, statuses), so the fuzzer spends its time inside the importer
//! rather than in the JSON parser. Properties: no panic; every entry with a parseable URL is
//! imported; a base64 body comes back byte for byte; the checks run on every import.
#![no_main]
use arbitrary::Arbitrary;
use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Debug, Arbitrary)]
struct Har {
    entries: Vec<Entry>,
    creator: Option<String>,
}

#[derive(Debug, Arbitrary)]
struct Entry {
    started: Started,
    method: Option<String>,
    url: Url,
    headers: Vec<(String, String)>,
    body: Option<Body>,
    status: Option<u64>,
    extra_field: Option<(String, String)>,
}

#[derive(Debug, Arbitrary)]
enum Started {
    Missing,
    Rfc3339(u32, u8),
    Text(String),
}

#[derive(Debug, Arbitrary)]
enum Url {
    Hook(String, Option<String>),
    Text(String),
    Number(i64),
}

#[derive(Debug, Arbitrary)]
enum Body {
    Text(String, Option<String>),
    Base64(Vec<u8>),
    BadBase64(String),
    NotAString(i64),
}

fuzz_target!(|har: Har| {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut expected_bodies: Vec<Option<Vec<u8>>> = Vec::new();
    let mut bad_base64 = false;
    let entries: Vec<Value> = har
        .entries
        .iter()
        .map(|e| {
            let url = match &e.url {
                Url::Hook(path, query) => json!(format!(
                    "http://127.0.0.1:7878/{}{}",
                    path,
                    query.as_ref().map(|q| format!("?{q}")).unwrap_or_default()
                )),
                Url::Text(t) => json!(t),
                Url::Number(n) => json!(n),
            };
            let mut request = json!({
                "method": e.method,
                "url": url,
                "headers": e.headers.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
            });
            let expected = match &e.body {
                Some(Body::Text(text, mime)) => {
                    request["postData"] = json!({"mimeType": mime, "text": text});
                    Some(text.as_bytes().to_vec())
                }
                Some(Body::Base64(bytes)) => {
                    request["postData"] = json!({"text": b64.encode(bytes), "encoding": "base64"});
                    Some(bytes.clone())
                }
                Some(Body::BadBase64(text)) => {
                    request["postData"] = json!({"text": format!("{text}!"), "encoding": "base64"});
                    bad_base64 = true;
                    None
                }
                Some(Body::NotAString(n)) => {
                    request["postData"] = json!({"text": n});
                    Some(Vec::new())
                }
                None => Some(Vec::new()),
            };
            expected_bodies.push(expected);
            let started = match &e.started {
                Started::Missing => Value::Null,
                Started::Rfc3339(secs, frac) => json!(format!(
                    "2026-01-01T00:00:{:02}.{:03}Z",
                    secs % 60,
                    frac
                )),
                Started::Text(t) => json!(t),
            };
            let mut entry = json!({
                "startedDateTime": started,
                "request": request,
                "response": {"status": e.status},
            });
            if let Some((k, v)) = &e.extra_field {
                entry[k.as_str()] = json!(v);
            }
            entry
        })
        .collect();
    let text = json!({"log": {"version": "1.2", "creator": {"name": har.creator}, "entries": entries}})
        .to_string();
    let settings = hookscope::config::Settings::resolve(
        &hookscope::config::ConfigFile::default(),
        &hookscope::config::Overrides::default(),
    )
    .expect("default settings resolve");
    match hookscope::export::read_har(&text) {
        Ok(requests) => {
            assert_eq!(requests.len(), har.entries.len(), "one request per entry");
            for (request, expected) in requests.iter().zip(&expected_bodies) {
                if let Some(body) = expected {
                    assert_eq!(&request.delivery.body, body, "the body comes back whole");
                }
                let endpoint = settings.endpoint_for(&request.delivery.path);
                let _ = hookscope::domain::checks::evaluate(&request.delivery, endpoint, 1_790_000_000);
            }
        }
        Err(e) => {
            // Only a URL that does not parse or a body that is not base64 refuses an entry.
            let url_bad = har.entries.iter().any(|e| !matches!(e.url, Url::Hook(..)));
            assert!(
                url_bad || bad_base64 || e.to_string().contains("bad url"),
                "refused a well-formed HAR: {e}"
            );
        }
    }
});
