//! Meta's verification request (WhatsApp, Instagram, Messenger): a GET with
//! `hub.mode=subscribe`, answered with its `hub.challenge` when its `hub.verify_token` is the
//! endpoint's.

use super::challenge::{Challenge, Sending};
use super::rules::{Answered, Asked, Request, Respond, Rules, short, text_reply};
use super::{Context, Provider};
use crate::domain::scheme::constant_time_eq;

pub(super) const RULES: Rules = Rules {
    provider: Provider::Meta,
    name: "meta",
    label: "Meta",
    what: "verification request",
    field: "hub.challenge",
    signs: false,
    recognise,
    phrase,
    respond: Respond::Answer(answer),
    send,
};

/// `hub.mode=subscribe` with a `hub.challenge`; the verify token beside it.
fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("GET") || request.param("hub.mode") != Some("subscribe") {
        return None;
    }
    let mut asked = Asked::new(request.param("hub.challenge")?.to_string());
    asked.other = request.param("hub.verify_token").map(str::to_string);
    Some(asked)
}

fn phrase(asked: &Asked) -> String {
    format!(
        "hub.challenge {} with a hub.verify_token",
        short(&asked.value)
    )
}

/// The challenge, once the verify token matches the endpoint's.
fn answer(asked: &Asked, context: &Context<'_>) -> Result<Answered, String> {
    let Some(expected) = context.verify_token else {
        return Err(format!(
            "no verify_token is configured for {}: set it to the Verify token entered in Meta's dashboard",
            context.path
        ));
    };
    let given = asked.other.as_deref().unwrap_or("");
    if !constant_time_eq(given.as_bytes(), expected.expose().as_bytes()) {
        return Err("hub.verify_token did not match the endpoint's".into());
    }
    Ok(text_reply(asked.value.clone()).into())
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    challenge.method = "GET";
    challenge.headers.clear();
    let token = sending.keys.verify_token.ok_or_else(|| {
        "Meta's verification request needs the Verify token entered in Meta's dashboard (not the app secret)".to_string()
    })?;
    challenge.query = Some(format!(
        "hub.mode=subscribe&hub.challenge={}&hub.verify_token={}",
        sending.value,
        encode_param(token)
    ));
    Ok(())
}

/// Percent-encodes a query parameter's value.
fn encode_param(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}
