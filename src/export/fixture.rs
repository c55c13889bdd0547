//! hookscope fixtures: one delivery as JSON with its exact body, how it was signed and, when
//! re-signed, the generated test secret; and reading one back (`verify --fixture`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use crate::domain::delivery::{Delivery, Header};
use crate::domain::fmt::rfc3339_ms;
use crate::domain::scheme::{Family, Scheme, Secret, generate_secret, new_event_id};
use crate::export::error::{ExportError, FixtureOptions};
use crate::export::redact::redact;
use crate::store::StoredDelivery;

pub(crate) fn bytes_json(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!({ "text": text }),
        Err(_) => json!({ "base64": B64.encode(bytes) }),
    }
}

pub(crate) fn bytes_from_json(value: &Value) -> Option<Vec<u8>> {
    if let Some(text) = value.get("text").and_then(Value::as_str) {
        return Some(text.as_bytes().to_vec());
    }
    value
        .get("base64")
        .and_then(Value::as_str)
        .and_then(|b| B64.decode(b).ok())
}

pub(crate) fn headers_json(headers: &[Header]) -> Value {
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

pub(crate) fn headers_from_json(value: &Value) -> Option<Vec<Header>> {
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

/// A test secret of the shape the scheme's family uses. `asymmetric` asks Standard Webhooks
/// for a `whsk_` signing key (a capture signed with `v1a` only) instead of a `whsec_` secret.
pub fn test_secret(scheme: &Scheme, asymmetric: bool) -> Secret {
    let seed = || {
        let mut seed = [0u8; 32];
        let _ = getrandom::fill(&mut seed);
        seed
    };
    match scheme.family {
        Family::StandardWebhooks if asymmetric => Secret::new(format!(
            "whsk_{}",
            base64::engine::general_purpose::STANDARD.encode(seed())
        )),
        Family::StandardWebhooks => generate_secret(),
        // A signing key (seed then public key, in hex): it signs, and verifies as Discord's
        // public key would.
        Family::Discord => {
            let seed = seed();
            let public = crate::domain::scheme::ed25519::SigningKey::from_bytes(&seed)
                .map(|k| k.public().0)
                .unwrap_or_default();
            Secret::new(format!("{}{}", hex::encode(seed), hex::encode(public)))
        }
        _ => {
            let mut bytes = [0u8; 24];
            let _ = getrandom::fill(&mut bytes);
            Secret::new(format!("test_secret_{}", hex::encode(bytes)))
        }
    }
}

pub(crate) fn scheme_json(scheme: &Scheme) -> Value {
    json!({
        "name": scheme.name,
        "family": scheme.family.config_name(),
        "signature_header": scheme.signature_header,
        "timestamp_header": scheme.timestamp_header,
        "event_id_header": scheme.event_id_header,
        "encoding": match scheme.encoding { crate::domain::scheme::Encoding::Hex => "hex", crate::domain::scheme::Encoding::Base64 => "base64" },
        "prefix": scheme.prefix,
    })
}

/// One delivery as a fixture.
pub fn fixture(stored: &StoredDelivery, options: &FixtureOptions) -> Result<Value, ExportError> {
    let d = &stored.delivery;
    let mut headers = d.headers.clone();
    let mut body = d.body.clone();
    let mut query = d.shown_query().into_owned();
    if !options.redact.is_empty() {
        body = redact(&body, &options.redact).map_err(|reason| ExportError::Redact {
            id: stored.id,
            reason,
        })?;
    }
    let signing = if options.resign_with_test_secret {
        resign(stored, options, &mut headers, &body, &mut query)?
    } else {
        json!({
            "mode": "as_captured",
            "scheme": stored.scheme.as_deref().and_then(Scheme::preset).map(|s| scheme_json(&s)),
            "note": "The original signature headers; no secret is written. Verify with your own secret, at the recorded time.",
        })
    };
    // A captured credential (GitLab's token) is the endpoint's secret: never written. A test
    // token written by re-signing is the fixture's own and stays.
    if !options.resign_with_test_secret {
        hide_credentials(&mut headers);
    }
    set_content_length(&mut headers, body.len());
    Ok(json!({
        "hookscope_fixture": 1,
        "source_delivery_id": stored.id,
        "received_at": rfc3339_ms(d.received_at_ms),
        "received_at_unix": d.received_at_ms.div_euclid(1000),
        "method": d.method,
        "path": d.path,
        "query": query,
        "headers": headers_json(&headers),
        "body": bytes_json(&body),
        "scheme": stored.scheme,
        "event_id": stored.event_id,
        "event_type": stored.event_type,
        "recorded_checks": stored.checks,
        "contract": contract_json(stored, options, &body),
        "handshake": stored.handshake,
        "signing": signing,
        "redacted": options.redact,
    }))
}

/// Which contract and schema the body was checked against, and the verdict then. With the
/// contract its endpoint has now, also that schema bundled into one JSON Schema
/// (`json_schema`), and this fixture's body (redacted, if it was) checked against it now
/// (`json_schema_status`, `json_schema_detail`): the example tests assert it when it passed.
/// Without one, `json_schema_detail` says why.
fn contract_json(stored: &StoredDelivery, options: &FixtureOptions, body: &[u8]) -> Value {
    let Some(recorded) = stored.checks.schema.as_ref() else {
        return Value::Null;
    };
    let mut out = json!({
        "file": recorded.contract,
        "schema": recorded.schema,
        "status": recorded.status,
    });
    let contract = match options.contracts.get(&stored.id) {
        Some(Ok(contract)) => contract,
        Some(Err(why)) => {
            out["json_schema_detail"] = why.clone().into();
            return out;
        }
        None => return out,
    };
    let bundle = stored
        .event_type
        .as_deref()
        .and_then(|t| Some((t, contract.bundle(t)?)));
    match bundle {
        Some((event_type, bundle)) => {
            let now = contract.check(Some(event_type), body);
            out["json_schema"] = bundle;
            out["json_schema_status"] = json!(now.status);
            out["json_schema_detail"] = now.detail.into();
        }
        None => {
            out["json_schema_detail"] = format!(
                "{} has no schema for this delivery's event type ({}) now",
                contract.name,
                stored.event_type.as_deref().unwrap_or("none was read")
            )
            .into();
        }
    }
    out
}

/// Re-signs the (redacted) `body` with a new test secret at the recorded time: replaces the
/// signature headers in `headers`, sets `query` to the one the scheme sends to, and answers the
/// fixture's `signing` field.
fn resign(
    stored: &StoredDelivery,
    options: &FixtureOptions,
    headers: &mut Vec<Header>,
    body: &[u8],
    query: &mut String,
) -> Result<Value, ExportError> {
    let d = &stored.delivery;
    let scheme = resigning_scheme(stored, options)?;
    if let Some(url) = &scheme.public_url {
        let sent_to = scheme.request_url(url, body);
        if let Some(sent_query) = sent_to
            .split_once('?')
            .map(|(_, q)| q.split('#').next().unwrap_or(q).to_string())
        {
            *query = sent_query;
        }
    }
    // A capture signed only with ed25519 (`v1a`) is re-signed the same way.
    let asymmetric = signed_only_with_ed25519(&scheme, d);
    let secret = test_secret(&scheme, asymmetric);
    let timestamp = d.received_at_ms.div_euclid(1000);
    let event_id = stored.event_id.clone().unwrap_or_else(new_event_id);
    let mut drop = vec![scheme.signature_header.clone()];
    drop.extend(scheme.timestamp_header.clone());
    drop.extend(scheme.event_id_header.clone());
    headers.retain(|h| !drop.iter().any(|n| n.eq_ignore_ascii_case(&h.name)));
    headers.extend(scheme.sign(std::slice::from_ref(&secret), &event_id, timestamp, body)?);
    Ok(test_secret_signing(
        &scheme, &secret, timestamp, &event_id, body,
    ))
}

/// The scheme a fixture is re-signed with: the one asked for, else the preset the capture was
/// checked as; with no public URL, the capture's own URL, as its headers tell it.
fn resigning_scheme(
    stored: &StoredDelivery,
    options: &FixtureOptions,
) -> Result<Scheme, ExportError> {
    let mut scheme = options
        .scheme
        .clone()
        .or_else(|| {
            stored
                .scheme
                .as_deref()
                .and_then(|n| Scheme::preset(n.split(' ').next().unwrap_or(n)))
        })
        .ok_or(ExportError::NoScheme(stored.id))?;
    if scheme.public_url.is_none() {
        // Twilio signs the URL: the capture's own, as its headers tell it.
        scheme.public_url = Some(scheme.signed_url(&stored.delivery));
    }
    Ok(scheme)
}

/// Whether the delivery's signature header holds signatures, all of them ed25519 (`v1a`).
fn signed_only_with_ed25519(scheme: &Scheme, d: &Delivery) -> bool {
    d.header(&scheme.signature_header)
        .and_then(|v| scheme.parse_header(v).ok())
        .is_some_and(|p| {
            !p.signatures.is_empty()
                && p.signatures
                    .iter()
                    .all(|(kind, _)| *kind == crate::domain::scheme::SigKind::Ed25519)
        })
}

/// A re-signed fixture's `signing` field: the scheme, the test secret, the timestamp and event
/// id signed, and for Twilio the URL signed, for ed25519 the public key.
fn test_secret_signing(
    scheme: &Scheme,
    secret: &Secret,
    timestamp: i64,
    event_id: &str,
    body: &[u8],
) -> Value {
    let mut signing = json!({
        "mode": "test_secret",
        "scheme": scheme_json(scheme),
        "secret": secret.expose(),
        "timestamp": timestamp,
        "event_id": event_id,
    });
    if scheme.family == Family::Twilio
        && let (Some(url), Some(obj)) = (&scheme.public_url, signing.as_object_mut())
    {
        // The URL Twilio's signature covers, for tests that verify it.
        obj.insert("url".into(), json!(scheme.request_url(url, body)));
    }
    if let (Ok(crate::domain::scheme::Key::Signing(key)), Some(obj)) =
        (scheme.key(secret), signing.as_object_mut())
    {
        // The ed25519 public key, in hex, for tests that verify without deriving it.
        obj.insert("public_key".into(), json!(hex::encode(key.public().0)));
    }
    signing
}

/// Writes captured credential headers (GitLab's token) as they are shown, masked.
fn hide_credentials(headers: &mut [Header]) {
    for h in headers.iter_mut().filter(|h| h.is_credential()) {
        h.value = h.shown_lossy().into_bytes();
    }
}

/// Makes the length header describe the body as exported.
fn set_content_length(headers: &mut [Header], body_len: usize) {
    for h in headers.iter_mut() {
        if h.name == "content-length" {
            h.value = body_len.to_string().into_bytes();
        }
    }
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
    load_fixtures(text)?
        .into_iter()
        .next()
        .ok_or_else(|| ExportError::Format("the bundle is empty".into()))
}

/// Reads a fixture, or every fixture of a bundle, in order.
pub fn load_fixtures(text: &str) -> Result<Vec<LoadedFixture>, ExportError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| ExportError::Format(format!("not JSON: {e}")))?;
    match value.get("fixtures").and_then(Value::as_array) {
        Some(list) => list.iter().map(one_fixture).collect(),
        None => one_fixture(&value).map(|f| vec![f]),
    }
}

fn one_fixture(fixture: &Value) -> Result<LoadedFixture, ExportError> {
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
