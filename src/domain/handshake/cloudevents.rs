//! CloudEvents HTTP Webhook 1.0 abuse protection: an `OPTIONS` request whose
//! `WebHook-Request-Origin` asks whether that sender may deliver here, answered by allowing it.

use super::challenge::{Challenge, Expected, Sending};
use super::rules::{Answered, Asked, Request, Respond, Rules};
use super::{Context, Provider, Reply};
use crate::domain::delivery::Header;

pub(super) const RULES: Rules = Rules {
    provider: Provider::Cloudevents,
    name: "cloudevents",
    label: "CloudEvents",
    what: "abuse-protection request",
    field: "WebHook-Request-Origin",
    signs: false,
    recognise,
    phrase,
    respond: Respond::Answer(answer),
    send,
};

/// The origin which asks; its rate and callback when given.
fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("OPTIONS") {
        return None;
    }
    let mut asked = Asked::new(request.header("webhook-request-origin")?.to_string());
    asked.other = request.header("webhook-request-rate").map(str::to_string);
    asked.url = request
        .header("webhook-request-callback")
        .map(str::to_string);
    Some(asked)
}

fn phrase(asked: &Asked) -> String {
    let rate = asked
        .other
        .as_deref()
        .map(|r| format!(", rate {r}/min"))
        .unwrap_or_default();
    format!("may {} send here{rate}", asked.value)
}

/// The origin allowed, at any rate, to POST.
fn answer(asked: &Asked, _: &Context<'_>) -> Result<Answered, String> {
    let headers = vec![
        ("webhook-allowed-origin".to_string(), asked.value.clone()),
        ("webhook-allowed-rate".to_string(), "*".to_string()),
        ("allow".to_string(), "POST".to_string()),
    ];
    Ok(Reply {
        status: 200,
        content_type: None,
        headers,
        body: String::new(),
    }
    .into())
}

fn send(challenge: &mut Challenge, _: &Sending<'_>) -> Result<(), String> {
    challenge.method = "OPTIONS";
    challenge.headers = vec![
        Header::new("webhook-request-origin", "eventemitter.hookscope.test"),
        Header::new("webhook-request-rate", "120"),
    ];
    challenge.expected = Expected::Header(
        "webhook-allowed-origin",
        "eventemitter.hookscope.test".into(),
    );
    Ok(())
}
