//! Okta event hooks' one-time verification: a GET whose `x-okta-verification-challenge`
//! header is answered as `{"verification": …}`.

use super::challenge::{Challenge, Expected, Sending};
use super::rules::{Answered, Asked, Request, Respond, Rules, challenge_phrase, json_reply};
use super::{Context, Provider};
use crate::domain::delivery::Header;

pub(super) const RULES: Rules = Rules {
    provider: Provider::Okta,
    name: "okta",
    label: "Okta",
    what: "one-time verification",
    field: "x-okta-verification-challenge",
    signs: false,
    recognise,
    phrase: challenge_phrase,
    respond: Respond::Answer(answer),
    send,
};

fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("GET") {
        return None;
    }
    let challenge = request.header("x-okta-verification-challenge")?;
    Some(Asked::new(challenge.to_string()))
}

fn answer(asked: &Asked, _: &Context<'_>) -> Result<Answered, String> {
    Ok(json_reply(serde_json::json!({ "verification": asked.value })).into())
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    challenge.method = "GET";
    challenge.headers = vec![Header::new(
        "x-okta-verification-challenge",
        &*sending.value,
    )];
    challenge.expected = Expected::Json(vec![("verification", sending.value.clone())]);
    Ok(())
}
