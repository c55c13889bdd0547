//! Captures out and back in: test fixtures, HAR 1.2 and curl, and HAR import.
//!
//! A fixture keeps the body exactly (text when it is UTF-8, base64 otherwise) and says how it
//! was signed: *as captured* (the original signature headers, no secret written) or re-signed
//! with a generated test secret that is written into the fixture, so it verifies in the
//! developer's own tests while the real secret never leaves hookscope. Redaction replaces JSON
//! values in place (the rest of the bytes untouched) before re-signing.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use crate::delivery::{Delivery, Header};
use crate::report::rfc3339_ms;
use crate::scheme::{Family, Scheme, Secret};
use crate::store::StoredDelivery;

/// Errors exporting or importing.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Re-signing needs a scheme and the delivery has none.
    #[error("delivery #{0} has no scheme to re-sign with: pass one (--scheme)")]
    NoScheme(i64),
    /// A redaction pointer is not in the body.
    #[error("delivery #{id}: {reason}")]
    Redact {
        /// The delivery.
        id: i64,
        /// What went wrong.
        reason: String,
    },
    /// Signing failed.
    #[error("cannot sign: {0}")]
    Sign(#[from] crate::scheme::KeyError),
    /// A file is not a fixture or not a HAR.
    #[error("{0}")]
    Format(String),
}

/// How an export signs the fixtures.
#[derive(Debug, Clone, Default)]
pub struct FixtureOptions {
    /// Re-sign with a generated test secret (and this scheme, or the delivery's).
    pub resign_with_test_secret: bool,
    /// The scheme to re-sign with when the delivery has none.
    pub scheme: Option<Scheme>,
    /// JSON pointers whose values are replaced by `"[redacted]"`.
    pub redact: Vec<String>,
}

fn bytes_json(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({ "text": text }),
        Err(_) => json!({ "base64": B64.encode(bytes) }),
    }
}

fn bytes_from_json(value: &Value) -> Option<Vec<u8>> {
    if let Some(text) = value.get("text").and_then(Value::as_str) {
        return Some(text.as_bytes().to_vec());
    }
    value
        .get("base64")
        .and_then(Value::as_str)
        .and_then(|b| B64.decode(b).ok())
}

fn headers_json(headers: &[Header]) -> Value {
    Value::Array(
        headers
            .iter()
            .map(|h| match std::str::from_utf8(&h.value) {
                Ok(text) => json!([h.name, text]),
                Err(_) => json!([h.name, { "base64": B64.encode(&h.value) }]),
            })
            .collect(),
    )
}

fn headers_from_json(value: &Value) -> Option<Vec<Header>> {
    value
        .as_array()?
        .iter()
        .map(|pair| {
            let name = pair.get(0)?.as_str()?;
            let v = pair.get(1)?;
            let bytes = match v.as_str() {
                Some(text) => text.as_bytes().to_vec(),
                None => bytes_from_json(v)?,
            };
            Some(Header::new(name, bytes))
        })
        .collect()
}

/// A test secret of the shape the scheme's family uses.
pub fn test_secret(scheme: &Scheme) -> Secret {
    match scheme.family {
        Family::StandardWebhooks => crate::engine::generate_secret(),
        _ => {
            let mut bytes = [0u8; 24];
            let _ = getrandom::fill(&mut bytes);
            Secret::new(format!("test_secret_{}", hex::encode(bytes)))
        }
    }
}

/// Replaces the values at JSON `pointers` in `body` by `"[redacted]"`, leaving every other byte
/// as it was.
pub fn redact(body: &[u8], pointers: &[String]) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(body)
        .map_err(|_| "the body is not UTF-8 JSON, so it cannot be redacted".to_string())?;
    let mut spans = Vec::new();
    for pointer in pointers {
        match json_span(text, pointer) {
            Some(span) => spans.push(span),
            None => return Err(format!("{pointer} is not in the body")),
        }
    }
    spans.sort();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            continue; // inside a value already redacted
        }
        out.push_str(&text[at..start]);
        out.push_str("\"[redacted]\"");
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out.into_bytes())
}

/// The byte range of the value at a JSON pointer in raw JSON text.
fn json_span(text: &str, pointer: &str) -> Option<(usize, usize)> {
    let path: Vec<String> = pointer
        .strip_prefix('/')?
        .split('/')
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect();
    let bytes = text.as_bytes();
    let mut pos = 0;
    for segment in &path {
        pos = skip_ws(bytes, pos);
        match bytes.get(pos)? {
            b'{' => {
                pos += 1;
                loop {
                    pos = skip_ws(bytes, pos);
                    if bytes.get(pos)? == &b'}' {
                        return None;
                    }
                    let key_end = value_end(bytes, pos)?;
                    let key: String = serde_json::from_str(&text[pos..key_end]).ok()?;
                    pos = skip_ws(bytes, key_end);
                    if bytes.get(pos)? != &b':' {
                        return None;
                    }
                    pos = skip_ws(bytes, pos + 1);
                    if key == *segment {
                        break;
                    }
                    pos = skip_ws(bytes, value_end(bytes, pos)?);
                    if bytes.get(pos)? == &b',' {
                        pos += 1;
                    }
                }
            }
            b'[' => {
                let index: usize = segment.parse().ok()?;
                pos += 1;
                for _ in 0..index {
                    pos = skip_ws(bytes, pos);
                    pos = skip_ws(bytes, value_end(bytes, pos)?);
                    if bytes.get(pos)? != &b',' {
                        return None;
                    }
                    pos += 1;
                }
                pos = skip_ws(bytes, pos);
                if bytes.get(pos)? == &b']' {
                    return None;
                }
            }
            _ => return None,
        }
    }
    let start = skip_ws(bytes, pos);
    Some((start, value_end(bytes, start)?))
}

fn skip_ws(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(|b| b.is_ascii_whitespace()) {
        pos += 1;
    }
    pos
}

/// Where the JSON value starting at `pos` ends.
fn value_end(bytes: &[u8], pos: usize) -> Option<usize> {
    match bytes.get(pos)? {
        b'"' => {
            let mut i = pos + 1;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 2,
                    b'"' => return Some(i + 1),
                    _ => i += 1,
                }
            }
            None
        }
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = pos;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = value_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = pos;
            while i < bytes.len()
                && !matches!(bytes[i], b',' | b'}' | b']')
                && !bytes[i].is_ascii_whitespace()
            {
                i += 1;
            }
            (i > pos).then_some(i)
        }
    }
}

fn scheme_json(scheme: &Scheme) -> Value {
    json!({
        "name": scheme.name,
        "family": scheme.family.config_name(),
        "signature_header": scheme.signature_header,
        "timestamp_header": scheme.timestamp_header,
        "event_id_header": scheme.event_id_header,
        "encoding": match scheme.encoding { crate::scheme::Encoding::Hex => "hex", crate::scheme::Encoding::Base64 => "base64" },
        "prefix": scheme.prefix,
    })
}

/// One delivery as a fixture.
pub fn fixture(stored: &StoredDelivery, options: &FixtureOptions) -> Result<Value, ExportError> {
    let d = &stored.delivery;
    let mut headers = d.headers.clone();
    let mut body = d.body.clone();
    if !options.redact.is_empty() {
        body = redact(&body, &options.redact).map_err(|reason| ExportError::Redact {
            id: stored.id,
            reason,
        })?;
    }
    let signing = if options.resign_with_test_secret {
        let scheme = options
            .scheme
            .clone()
            .or_else(|| {
                stored
                    .scheme
                    .as_deref()
                    .and_then(|n| Scheme::preset(n.split(' ').next().unwrap_or(n)))
            })
            .ok_or(ExportError::NoScheme(stored.id))?;
        let secret = test_secret(&scheme);
        let timestamp = d.received_at_ms.div_euclid(1000);
        let event_id = stored
            .event_id
            .clone()
            .unwrap_or_else(crate::send::new_event_id);
        let mut drop = vec![scheme.signature_header.clone()];
        drop.extend(scheme.timestamp_header.clone());
        drop.extend(scheme.event_id_header.clone());
        headers.retain(|h| !drop.iter().any(|n| n.eq_ignore_ascii_case(&h.name)));
        headers.extend(scheme.sign(std::slice::from_ref(&secret), &event_id, timestamp, &body)?);
        json!({
            "mode": "test_secret",
            "scheme": scheme_json(&scheme),
            "secret": secret.expose(),
            "timestamp": timestamp,
            "event_id": event_id,
        })
    } else {
        json!({
            "mode": "as_captured",
            "scheme": stored.scheme.as_deref().and_then(Scheme::preset).map(|s| scheme_json(&s)),
            "note": "The original signature headers; no secret is written. Verify with your own secret, at the recorded time.",
        })
    };
    // The length header must describe the body as exported.
    for h in headers.iter_mut() {
        if h.name == "content-length" {
            h.value = body.len().to_string().into_bytes();
        }
    }
    Ok(json!({
        "hookscope_fixture": 1,
        "source_delivery_id": stored.id,
        "received_at": rfc3339_ms(d.received_at_ms),
        "received_at_unix": d.received_at_ms.div_euclid(1000),
        "method": d.method,
        "path": d.path,
        "query": d.query,
        "headers": headers_json(&headers),
        "body": bytes_json(&body),
        "scheme": stored.scheme,
        "event_id": stored.event_id,
        "event_type": stored.event_type,
        "recorded_checks": stored.checks,
        "signing": signing,
        "redacted": options.redact,
    }))
}

/// The formats an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// hookscope fixtures.
    Fixture,
    /// HAR 1.2.
    Har,
    /// A shell script of curl commands.
    Curl,
}

/// Writes `selected` to `out` in `format`; returns the files written. For fixtures, a directory
/// (existing, or a path ending in `/`) gets one file per delivery; a file gets one fixture or a
/// bundle. HAR and curl write one file (binary bodies for curl beside it).
pub fn write_export(
    selected: &[StoredDelivery],
    format: Format,
    options: &FixtureOptions,
    snippets_too: bool,
    out: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, ExportError> {
    use std::path::{Path, PathBuf};
    let into_dir = out.is_dir() || out.as_os_str().to_string_lossy().ends_with('/');
    let mut written = Vec::new();
    let write =
        |path: &Path, bytes: &[u8], written: &mut Vec<PathBuf>| -> Result<(), ExportError> {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| {
                    ExportError::Format(format!("cannot create {}: {e}", parent.display()))
                })?;
            }
            std::fs::write(path, bytes).map_err(|e| {
                ExportError::Format(format!("cannot write {}: {e}", path.display()))
            })?;
            written.push(path.to_path_buf());
            Ok(())
        };
    let pretty = |value: &Value| serde_json::to_string_pretty(value).unwrap_or_default();
    match format {
        Format::Fixture => {
            let mut fixtures = Vec::new();
            for stored in selected {
                fixtures.push((stored.id, fixture(stored, options)?));
            }
            let mut files: Vec<(PathBuf, Value)> = Vec::new();
            if into_dir {
                for (id, f) in fixtures {
                    files.push((out.join(format!("delivery-{id}.json")), f));
                }
            } else if fixtures.len() == 1 {
                files.push((out.to_path_buf(), fixtures.remove(0).1));
            } else {
                files.push((
                    out.to_path_buf(),
                    bundle(fixtures.into_iter().map(|(_, f)| f).collect()),
                ));
            }
            for (path, value) in files {
                write(&path, pretty(&value).as_bytes(), &mut written)?;
                if snippets_too {
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    for (snippet, text) in snippets(&name) {
                        write(&path.with_file_name(snippet), text.as_bytes(), &mut written)?;
                    }
                }
            }
        }
        Format::Har => {
            let path = if into_dir {
                out.join("hookscope.har")
            } else {
                out.to_path_buf()
            };
            write(&path, pretty(&har(selected)).as_bytes(), &mut written)?;
        }
        Format::Curl => {
            let path = if into_dir {
                out.join("hookscope-curl.sh")
            } else {
                out.to_path_buf()
            };
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "curl".into());
            let mut script = String::from(
                "#!/bin/sh\n# Generated by hookscope: each delivery sent again, bytes as captured.\nset -e\ncd \"$(dirname \"$0\")\"\n",
            );
            for stored in selected {
                let body_file = format!("{stem}-body-{}.bin", stored.id);
                let (command, needs_file) = curl(stored, &body_file);
                if needs_file {
                    write(
                        &path.with_file_name(&body_file),
                        &stored.delivery.body,
                        &mut written,
                    )?;
                }
                script.push_str(&format!("\n# delivery #{}\n{command}\n", stored.id));
            }
            write(&path, script.as_bytes(), &mut written)?;
        }
    }
    Ok(written)
}

/// The records a HAR import stores: each request checked with `settings` at its recorded time.
pub fn import_records(
    requests: Vec<HarRequest>,
    source_name: &str,
    settings: &crate::config::Settings,
) -> Vec<crate::store::NewRecord> {
    requests
        .into_iter()
        .enumerate()
        .map(|(n, request)| {
            let endpoint = settings.endpoint_for(&request.delivery.path);
            let evaluation =
                crate::checks::evaluate(&request.delivery, endpoint, request.delivery.received_at_ms.div_euclid(1000));
            crate::store::NewRecord {
                delivery: request.delivery,
                endpoint: endpoint.path.clone(),
                evaluation,
                response_status: request.response_status,
                latency_ms: 0,
                note: Some(format!(
                    "Imported from {source_name} (entry {}); the response status is the original server's, checks use this machine's endpoints at the recorded time.",
                    n + 1
                )),
            }
        })
        .collect()
}

/// Several fixtures in one file.
pub fn bundle(fixtures: Vec<Value>) -> Value {
    json!({ "hookscope_fixtures": 1, "fixtures": fixtures })
}

/// A fixture read back: the request and when it was recorded.
pub struct LoadedFixture {
    /// The request.
    pub delivery: Delivery,
    /// The secret written into it (re-signed fixtures only).
    pub secret: Option<Secret>,
    /// The scheme named in it.
    pub scheme: Option<String>,
}

/// Reads a fixture (or the first fixture of a bundle).
pub fn load_fixture(text: &str) -> Result<LoadedFixture, ExportError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| ExportError::Format(format!("not JSON: {e}")))?;
    let fixture = match value.get("fixtures").and_then(Value::as_array) {
        Some(list) => list
            .first()
            .cloned()
            .ok_or_else(|| ExportError::Format("the bundle is empty".into()))?,
        None => value,
    };
    if fixture.get("hookscope_fixture").is_none() {
        return Err(ExportError::Format(
            "not a hookscope fixture (no \"hookscope_fixture\" field)".into(),
        ));
    }
    let missing = |what: &str| ExportError::Format(format!("the fixture has no valid \"{what}\""));
    let headers = fixture
        .get("headers")
        .and_then(headers_from_json)
        .ok_or_else(|| missing("headers"))?;
    let body = fixture
        .get("body")
        .and_then(bytes_from_json)
        .ok_or_else(|| missing("body"))?;
    let received = fixture
        .get("received_at_unix")
        .and_then(Value::as_i64)
        .ok_or_else(|| missing("received_at_unix"))?;
    let signing = fixture.get("signing");
    Ok(LoadedFixture {
        delivery: Delivery {
            received_at_ms: received * 1000,
            method: fixture
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("POST")
                .to_string(),
            path: fixture
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("/")
                .to_string(),
            query: fixture
                .get("query")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            headers,
            body_size: body.len() as u64,
            body,
            body_complete: true,
            remote_addr: None,
        },
        secret: signing
            .and_then(|s| s.get("secret"))
            .and_then(Value::as_str)
            .map(Secret::new),
        scheme: signing
            .and_then(|s| s.get("scheme"))
            .and_then(|s| s.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| {
                fixture
                    .get("scheme")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            }),
    })
}

fn host_of(d: &Delivery) -> String {
    d.header_str("host").unwrap_or("127.0.0.1:7878").to_string()
}

fn url_of(d: &Delivery) -> String {
    let query = if d.query.is_empty() {
        String::new()
    } else {
        format!("?{}", d.query)
    };
    format!("http://{}{}{query}", host_of(d), d.path)
}

/// A HAR 1.2 log of deliveries: each request and hookscope's answer.
pub fn har(deliveries: &[StoredDelivery]) -> Value {
    let entries: Vec<Value> = deliveries
        .iter()
        .map(|s| {
            let d = &s.delivery;
            let mime = d.header_str("content-type").unwrap_or("application/octet-stream").to_string();
            let post_data = match std::str::from_utf8(&d.body) {
                Ok(text) => json!({ "mimeType": mime, "text": text }),
                Err(_) => json!({ "mimeType": mime, "text": B64.encode(&d.body), "encoding": "base64" }),
            };
            let query: Vec<Value> = d
                .query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (n, v) = p.split_once('=').unwrap_or((p, ""));
                    json!({ "name": n, "value": v })
                })
                .collect();
            let answer = if s.response_status == 413 {
                format!("{{\"error\":\"body over the limit\",\"delivery_id\":{}}}\n", s.id)
            } else {
                format!("{{\"received\":true,\"delivery_id\":{}}}\n", s.id)
            };
            json!({
                "startedDateTime": rfc3339_ms(d.received_at_ms),
                "time": s.latency_ms,
                "request": {
                    "method": d.method,
                    "url": url_of(d),
                    "httpVersion": "HTTP/1.1",
                    "cookies": [],
                    "headers": d.headers.iter().map(|h| json!({ "name": h.name, "value": h.value_lossy() })).collect::<Vec<_>>(),
                    "queryString": query,
                    "postData": post_data,
                    "headersSize": -1,
                    "bodySize": d.body.len(),
                },
                "response": {
                    "status": s.response_status,
                    "statusText": "",
                    "httpVersion": "HTTP/1.1",
                    "cookies": [],
                    "headers": [{ "name": "content-type", "value": "application/json" }, { "name": "x-hookscope-delivery-id", "value": s.id.to_string() }],
                    "content": { "size": answer.len(), "mimeType": "application/json", "text": answer },
                    "redirectURL": "",
                    "headersSize": -1,
                    "bodySize": answer.len(),
                },
                "cache": {},
                "timings": { "send": 0, "wait": s.latency_ms, "receive": 0 },
                "comment": format!("hookscope delivery #{}", s.id),
            })
        })
        .collect();
    json!({
        "log": {
            "version": "1.2",
            "creator": { "name": "hookscope", "version": env!("CARGO_PKG_VERSION") },
            "entries": entries,
        }
    })
}

/// A request from a HAR entry, and the status the original server answered.
pub struct HarRequest {
    /// The request.
    pub delivery: Delivery,
    /// The original answer's status (0 when the HAR has none).
    pub response_status: u16,
}

/// Reads the requests of a HAR file (any tool's).
pub fn read_har(text: &str) -> Result<Vec<HarRequest>, ExportError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| ExportError::Format(format!("not JSON: {e}")))?;
    let entries = value
        .pointer("/log/entries")
        .and_then(Value::as_array)
        .ok_or_else(|| ExportError::Format("not a HAR file (no log.entries)".into()))?;
    let mut out = Vec::new();
    for (n, entry) in entries.iter().enumerate() {
        let bad = |what: &str| ExportError::Format(format!("entry {}: {what}", n + 1));
        let request = entry.get("request").ok_or_else(|| bad("no request"))?;
        let url = request
            .get("url")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no url"))?;
        let parsed = reqwest::Url::parse(url).map_err(|e| bad(&format!("bad url: {e}")))?;
        let headers: Vec<Header> = request
            .get("headers")
            .and_then(Value::as_array)
            .map(|hs| {
                hs.iter()
                    .filter_map(|h| {
                        Some(Header::new(
                            h.get("name")?.as_str()?,
                            h.get("value")?.as_str()?,
                        ))
                    })
                    // HTTP/2 pseudo-headers (:method, :path…) are not headers of the request.
                    .filter(|h| !h.name.starts_with(':'))
                    .collect()
            })
            .unwrap_or_default();
        let body = match request.get("postData") {
            Some(post) => {
                let text = post.get("text").and_then(Value::as_str).unwrap_or("");
                if post.get("encoding").and_then(Value::as_str) == Some("base64") {
                    B64.decode(text)
                        .map_err(|e| bad(&format!("postData is not base64: {e}")))?
                } else {
                    text.as_bytes().to_vec()
                }
            }
            None => Vec::new(),
        };
        let received_at_ms = entry
            .get("startedDateTime")
            .and_then(Value::as_str)
            .and_then(|t| {
                time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
            })
            .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
            .unwrap_or(0);
        out.push(HarRequest {
            delivery: Delivery {
                received_at_ms,
                method: request
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or("POST")
                    .to_string(),
                path: parsed.path().to_string(),
                query: parsed.query().unwrap_or("").to_string(),
                headers,
                body_size: body.len() as u64,
                body,
                body_complete: true,
                remote_addr: None,
            },
            response_status: entry
                .pointer("/response/status")
                .and_then(Value::as_u64)
                .map(|s| s.min(999) as u16)
                .unwrap_or(0),
        });
    }
    Ok(out)
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A curl command that sends the delivery again. Text bodies are inline (`--data-raw`); others
/// are referenced as `--data-binary @FILE`, with `body_file` the name the caller writes them to.
pub fn curl(stored: &StoredDelivery, body_file: &str) -> (String, bool) {
    let d = &stored.delivery;
    let mut parts = vec![
        "curl".to_string(),
        "-X".into(),
        d.method.clone(),
        shell_quote(&url_of(d)),
    ];
    for h in &d.headers {
        if ["host", "content-length", "connection", "accept-encoding"].contains(&h.name.as_str()) {
            continue;
        }
        parts.push("-H".into());
        parts.push(shell_quote(&format!("{}: {}", h.name, h.value_lossy())));
    }
    let plain = std::str::from_utf8(&d.body).is_ok_and(|t| {
        !t.chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r')
    });
    if d.body.is_empty() {
        (parts.join(" "), false)
    } else if plain {
        parts.push("--data-raw".into());
        parts.push(shell_quote(&String::from_utf8_lossy(&d.body)));
        (parts.join(" "), false)
    } else {
        parts.push("--data-binary".into());
        parts.push(shell_quote(&format!("@{body_file}")));
        (parts.join(" "), true)
    }
}

/// The test snippets that come with a fixture, as (file name, contents), from the templates in
/// `assets/snippets/`.
pub fn snippets(fixture_file: &str) -> Vec<(String, String)> {
    let fill = |template: &str| template.replace("{{FIXTURE}}", fixture_file);
    let stem = fixture_file
        .trim_end_matches(".json")
        .replace(['-', '.'], "_");
    vec![
        (
            format!("test_{stem}.py"),
            fill(include_str!("../assets/snippets/pytest.py")),
        ),
        (
            format!("{stem}.test.mjs"),
            fill(include_str!("../assets/snippets/node_test.mjs")),
        ),
        (
            format!("{stem}_test.rs"),
            fill(include_str!("../assets/snippets/rust_test.rs")),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_replaces_values_and_keeps_every_other_byte() {
        let body = br#"{ "name" : "Ada Lovelace", "data": {"member_id": 42, "tags": ["a", {"x": "y"}]}, "keep":1 }"#;
        let out = redact(
            body,
            &[
                "/name".into(),
                "/data/member_id".into(),
                "/data/tags/1".into(),
            ],
        )
        .expect("redacts");
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            r#"{ "name" : "[redacted]", "data": {"member_id": "[redacted]", "tags": ["a", "[redacted]"]}, "keep":1 }"#
        );
        assert!(redact(body, &["/nope".into()]).is_err());
    }
}
