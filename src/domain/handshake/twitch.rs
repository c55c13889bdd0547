//! Twitch EventSub's `webhook_callback_verification`: a signed POST whose `challenge` is
//! answered as text.

use super::Provider;
use super::challenge::{Challenge, Sending, json_body, token};
use super::rules::{Asked, Request, Respond, Rules, answer_with_value, for_topic, short};
use crate::domain::delivery::Header;

pub(super) const RULES: Rules = Rules {
    provider: Provider::Twitch,
    name: "twitch",
    label: "Twitch",
    what: "webhook_callback_verification",
    field: "challenge",
    signs: true,
    recognise,
    phrase,
    respond: Respond::Answer(answer_with_value),
    send,
};

/// The `twitch-eventsub-message-type` header says it; the body carries the challenge and the
/// subscription's type.
fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("POST")
        || !request.header_is(
            "twitch-eventsub-message-type",
            "webhook_callback_verification",
        )
    {
        return None;
    }
    let mut asked = Asked::new(request.text("/challenge").unwrap_or_default());
    asked.topic = request.text("/subscription/type");
    Some(asked)
}

fn phrase(asked: &Asked) -> String {
    format!("challenge {}{}", short(&asked.value), for_topic(asked))
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    challenge.body = json_body(serde_json::json!({
        "challenge": sending.value,
        "subscription": {"id": token(12), "status": "webhook_callback_verification_pending", "type": "channel.follow", "version": "2"}
    }));
    let id = token(12);
    let signed = sending.signed("twitch", &id, &challenge.body)?;
    challenge.headers.extend(signed);
    challenge.headers.push(Header::new(
        "twitch-eventsub-message-type",
        "webhook_callback_verification",
    ));
    Ok(())
}
