//! Dropbox's verification challenge: a GET with a `challenge` parameter, answered with it as
//! `text/plain` that may not be sniffed.

use super::challenge::{Challenge, Sending};
use super::rules::{Answered, Asked, Request, Respond, Rules, challenge_phrase, text_reply};
use super::{Context, Provider};

pub(super) const RULES: Rules = Rules {
    provider: Provider::Dropbox,
    name: "dropbox",
    label: "Dropbox",
    what: "verification challenge",
    field: "challenge",
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
    let challenge = request.param("challenge")?;
    Some(Asked::new(challenge.to_string()))
}

fn answer(asked: &Asked, _: &Context<'_>) -> Result<Answered, String> {
    let mut reply = text_reply(asked.value.clone());
    reply.content_type = Some("text/plain".into());
    reply
        .headers
        .push(("x-content-type-options".into(), "nosniff".into()));
    Ok(reply.into())
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    challenge.method = "GET";
    challenge.headers.clear();
    challenge.query = Some(format!("challenge={}", sending.value));
    Ok(())
}
