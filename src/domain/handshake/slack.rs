//! Slack Events API's `url_verification`: a signed POST whose JSON carries a `challenge`,
//! answered with it as text (Slack also accepts it as JSON or as a form).

use super::Provider;
use super::challenge::{Challenge, Expected, Sending, json_body, token};
use super::rules::{Asked, Request, Respond, Rules, answer_with_value, challenge_phrase};

pub(super) const RULES: Rules = Rules {
    provider: Provider::Slack,
    name: "slack",
    label: "Slack",
    what: "url_verification challenge",
    field: "challenge",
    signs: true,
    recognise,
    phrase: challenge_phrase,
    respond: Respond::Answer(answer_with_value),
    send,
};

/// A body of `"type": "url_verification"` with a challenge.
fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("POST") || request.text("/type").as_deref() != Some("url_verification") {
        return None;
    }
    request.text("/challenge").map(Asked::new)
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    challenge.body = json_body(serde_json::json!({
        "token": token(12), "challenge": sending.value, "type": "url_verification"
    }));
    let signed = sending.signed("slack", "", &challenge.body)?;
    challenge.headers.extend(signed);
    challenge.expected = Expected::Challenge(sending.value.clone());
    Ok(())
}
