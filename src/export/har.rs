//! HAR 1.2 out (every delivery with its answer) and in (the requests of any HAR file: Chrome
//! DevTools, Insomnia, HTTP Toolkit, hookscope).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use crate::domain::delivery::{Delivery, Header};
use crate::domain::fmt::rfc3339_ms;
use crate::export::error::ExportError;
use crate::store::StoredDelivery;

pub(crate) fn host_of(d: &Delivery) -> String {
    d.header_str("host").unwrap_or("127.0.0.1:7878").to_string()
}

pub(crate) fn url_of(d: &Delivery) -> String {
    let query = if d.query.is_empty() {
        String::new()
    } else {
        format!("?{}", d.shown_query())
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
                .shown_query()
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (n, v) = p.split_once('=').unwrap_or((p, ""));
                    json!({ "name": n, "value": v })
                })
                .collect();
            // A handshake's answer is the one it got, exactly; any other is hookscope's own.
            let reply = s.handshake.as_ref().and_then(|h| h.answer.as_ref());
            let answer = match reply {
                Some(reply) => reply.body.clone(),
                None if s.response_status == 413 => {
                    format!("{{\"error\":\"body over the limit\",\"delivery_id\":{}}}\n", s.id)
                }
                None => format!("{{\"received\":true,\"delivery_id\":{}}}\n", s.id),
            };
            let mime = reply
                .map(|r| r.content_type.clone().unwrap_or_default())
                .unwrap_or_else(|| "application/json".into());
            let mut answer_headers = vec![json!({ "name": "content-type", "value": mime })];
            if let Some(reply) = reply {
                answer_headers.extend(reply.headers.iter().map(|(n, v)| json!({ "name": n, "value": v })));
            }
            answer_headers.push(json!({ "name": "x-hookscope-delivery-id", "value": s.id.to_string() }));
            json!({
                "startedDateTime": rfc3339_ms(d.received_at_ms),
                "time": s.latency_ms,
                "request": {
                    "method": d.method,
                    "url": url_of(d),
                    "httpVersion": "HTTP/1.1",
                    "cookies": [],
                    "headers": d.headers.iter().map(|h| json!({ "name": h.name, "value": h.shown_lossy() })).collect::<Vec<_>>(),
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
                    "headers": answer_headers,
                    "content": { "size": answer.len(), "mimeType": mime, "text": answer },
                    "redirectURL": "",
                    "headersSize": -1,
                    "bodySize": answer.len(),
                },
                "cache": {},
                "timings": { "send": 0, "wait": s.latency_ms, "receive": 0 },
                "comment": match &s.handshake {
                    Some(h) => format!("hookscope delivery #{}: {}", s.id, h.detail),
                    None => format!("hookscope delivery #{}", s.id),
                },
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
