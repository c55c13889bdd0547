//! Microsoft Graph change notifications' `validationToken`: a POST whose query carries the
//! token, answered with it as `text/plain`.

use super::Provider;
use super::challenge::{Challenge, Expected, Sending};
use super::rules::{Asked, Request, Respond, Rules, answer_with_value, short};
use crate::domain::delivery::Header;

pub(super) const RULES: Rules = Rules {
    provider: Provider::Graph,
    name: "graph",
    label: "Microsoft Graph",
    what: "validationToken",
    field: "validationToken",
    signs: false,
    recognise,
    phrase,
    respond: Respond::Answer(answer_with_value),
    send,
};

fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("POST") {
        return None;
    }
    let token = request.param("validationToken")?;
    Some(Asked::new(token.to_string()))
}

fn phrase(asked: &Asked) -> String {
    format!("validationToken {}", short(&asked.value))
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    let text = format!(
        "Validation: Testing client application reachability {}",
        sending.value
    );
    challenge.query = Some(format!(
        "validationToken={}",
        text.replace(':', "%3A").replace(' ', "+")
    ));
    challenge.headers = vec![Header::new("content-type", "text/plain; charset=utf-8")];
    challenge.expected = Expected::Text {
        body: text,
        content_type: Some("text/plain"),
    };
    Ok(())
}
