//! X (Twitter) Account Activity's CRC check: a GET with a `crc_token`, answered with its
//! HMAC-SHA256 under the app's consumer secret, in base64.

use base64::Engine as _;

use super::challenge::{Challenge, Expected, Sending, token};
use super::rules::{Answered, Asked, Request, Respond, Rules, json_reply, short};
use super::{Context, Provider};
use crate::domain::scheme::hmac_sha256;

pub(super) const RULES: Rules = Rules {
    provider: Provider::X,
    name: "x",
    label: "X",
    what: "CRC check",
    field: "crc_token",
    signs: false,
    recognise,
    phrase,
    respond: Respond::Answer(answer),
    send,
};

fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("GET") {
        return None;
    }
    let token = request.param("crc_token")?;
    Some(Asked::new(token.to_string()))
}

fn phrase(asked: &Asked) -> String {
    format!("crc_token {}", short(&asked.value))
}

/// `sha256=` and the token's HMAC under `secret`, in base64.
fn response_token(secret: &str, crc_token: &str) -> String {
    let mac = hmac_sha256(secret.as_bytes(), &[crc_token.as_bytes()]);
    let token = base64::engine::general_purpose::STANDARD.encode(mac);
    format!("sha256={token}")
}

fn answer(asked: &Asked, context: &Context<'_>) -> Result<Answered, String> {
    let Some(secret) = context.answering_secret() else {
        return Err(format!(
            "no consumer secret is configured for {}, and the CRC answer is an HMAC of crc_token under it: add the app's API secret to this endpoint",
            context.path
        ));
    };
    let response = response_token(secret.expose(), &asked.value);
    Ok(json_reply(serde_json::json!({ "response_token": response })).into())
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    challenge.method = "GET";
    challenge.headers.clear();
    challenge.query = Some(format!("crc_token={}&nonce={}", sending.value, token(8)));
    let response = response_token(sending.secret()?.expose(), &sending.value);
    challenge.expected = Expected::Json(vec![("response_token", response)]);
    Ok(())
}
