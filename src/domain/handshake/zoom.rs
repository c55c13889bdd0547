//! Zoom's `endpoint.url_validation`: a signed POST whose `plainToken` is answered with itself
//! and its HMAC-SHA256 under the app's secret token, in hex.

use super::challenge::{Challenge, Expected, Sending, json_body};
use super::rules::{Answered, Asked, Request, Respond, Rules, json_reply, short};
use super::{Context, Provider};
use crate::domain::scheme::hmac_sha256;

pub(super) const RULES: Rules = Rules {
    provider: Provider::Zoom,
    name: "zoom",
    label: "Zoom",
    what: "endpoint.url_validation",
    field: "plainToken",
    signs: true,
    recognise,
    phrase,
    respond: Respond::Answer(answer),
    send,
};

/// A body of `"event": "endpoint.url_validation"`; its payload carries the plain token.
fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("POST") || request.text("/event").as_deref() != Some("endpoint.url_validation") {
        return None;
    }
    Some(Asked::new(
        request.text("/payload/plainToken").unwrap_or_default(),
    ))
}

fn phrase(asked: &Asked) -> String {
    format!("plainToken {}", short(&asked.value))
}

/// The plain token's HMAC under `secret`, in hex.
fn encrypted_token(secret: &str, plain_token: &str) -> String {
    hex::encode(hmac_sha256(secret.as_bytes(), &[plain_token.as_bytes()]))
}

fn answer(asked: &Asked, context: &Context<'_>) -> Result<Answered, String> {
    let Some(secret) = context.answering_secret() else {
        return Err(format!(
            "no secret token is configured for {}, and Zoom's answer is an HMAC of plainToken under it: add the app's Secret Token to this endpoint",
            context.path
        ));
    };
    Ok(json_reply(serde_json::json!({
        "plainToken": asked.value,
        "encryptedToken": encrypted_token(secret.expose(), &asked.value),
    }))
    .into())
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    challenge.body = json_body(serde_json::json!({
        "payload": {"plainToken": sending.value},
        "event_ts": sending.now_secs * 1000,
        "event": "endpoint.url_validation"
    }));
    let signed = sending.signed("zoom", "", &challenge.body)?;
    challenge.headers.extend(signed);
    let encrypted = encrypted_token(sending.secret()?.expose(), &sending.value);
    challenge.expected = Expected::Json(vec![
        ("plainToken", sending.value.clone()),
        ("encryptedToken", encrypted),
    ]);
    Ok(())
}
