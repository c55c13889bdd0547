//! What each provider's handshake is described by ([`Rules`]), and what the providers' files
//! share: the request as a recogniser reads it, what a recognised handshake asked, and the
//! answers and phrases more than one provider uses.

use super::challenge::{Challenge, Sending};
use super::{Context, Provider, Reply};
use crate::domain::delivery::Delivery;
use crate::domain::json::Json;
use crate::domain::pretty::percent_decode;

/// One provider's handshake, from both sides: its names; how hookscope recognises and answers
/// it when the provider calls; how hookscope sends it when it plays the provider, with what a
/// right answer holds.
pub(super) struct Rules {
    /// Whose handshake.
    pub provider: Provider,
    /// The name in the config (`handshake = "slack"`), the JSON and the filter.
    pub name: &'static str,
    /// The provider as people name it.
    pub label: &'static str,
    /// What the provider calls its handshake.
    pub what: &'static str,
    /// What carries the value the answer is made of, for a refusal's sentence.
    pub field: &'static str,
    /// Whether the provider signs its handshake (with the scheme of its deliveries).
    pub signs: bool,
    /// The provider's handshake in a request, from the request alone; `None` when it is not one.
    pub recognise: fn(&Request<'_>) -> Option<Asked>,
    /// What was asked, in a phrase for the JSON and the detail view.
    pub phrase: fn(&Asked) -> String,
    /// How an accepted handshake is answered.
    pub respond: Respond,
    /// Makes `challenge` (a POST of JSON, expecting the value back as text, until changed) the
    /// handshake the provider sends, and says what a right answer to it holds.
    pub send: fn(&mut Challenge, &Sending<'_>) -> Result<(), String>,
}

/// How a provider's accepted handshake is answered.
pub(super) enum Respond {
    /// At once, with the answer this makes of the request's value (a request without one is
    /// refused first), or refused with the reason this gives.
    Answer(fn(&Asked, &Context<'_>) -> Result<Answered, String>),
    /// With a 200 and nothing else, the subscription waiting for the user to fetch the
    /// request's URL; this gives the sentence that says so.
    Await(fn(&Asked) -> String),
}

/// The answer a provider's handshake gets.
pub(super) struct Answered {
    /// What is sent.
    pub reply: Reply,
    /// A URL the request carries to confirm by hand (Event Grid's `validationUrl`), shown to the
    /// user and never fetched by hookscope, with the sentence that says so.
    pub shown: Option<(String, &'static str)>,
}

impl From<Reply> for Answered {
    fn from(reply: Reply) -> Answered {
        Answered { reply, shown: None }
    }
}

/// A request recognised as a handshake: what it carries.
pub(super) struct Asked {
    /// The value to answer with (a challenge, a token, an origin).
    pub value: String,
    /// A second value (Meta's verify token, a request rate).
    pub other: Option<String>,
    /// A URL to confirm with (SNS, Event Grid), or to call back (CloudEvents).
    pub url: Option<String>,
    /// What the subscription is to (a topic, an event type).
    pub topic: Option<String>,
}

impl Asked {
    /// A handshake asking for `value` and nothing else.
    pub fn new(value: String) -> Asked {
        Asked {
            value,
            other: None,
            url: None,
            topic: None,
        }
    }
}

/// A request as the recognisers read it: its method in capitals, its query's parameters
/// (decoded as a form: `+` is a space), its headers and its body's JSON.
pub(super) struct Request<'a> {
    method: String,
    params: Vec<(String, String)>,
    delivery: &'a Delivery,
    body: Option<&'a Json<'a>>,
}

impl<'a> Request<'a> {
    /// `delivery` with its body already parsed.
    pub fn new(delivery: &'a Delivery, body: Option<&'a Json<'a>>) -> Request<'a> {
        let params = delivery
            .query
            .split('&')
            .filter(|p| !p.is_empty())
            .filter_map(|part| {
                let (name, value) = part.split_once('=').unwrap_or((part, ""));
                Some((percent_decode(name)?, percent_decode(value)?))
            })
            .collect();
        Request {
            method: delivery.method.to_ascii_uppercase(),
            params,
            delivery,
            body,
        }
    }

    /// Whether the request's method is `method` (in capitals).
    pub fn is(&self, method: &str) -> bool {
        self.method == method
    }

    /// A header's value, trimmed.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.delivery.header_str(name).map(str::trim)
    }

    /// Whether a header says `value`, in any case.
    pub fn header_is(&self, name: &str, value: &str) -> bool {
        self.header(name)
            .is_some_and(|v| v.eq_ignore_ascii_case(value))
    }

    /// A query parameter's value, the first when it is given twice.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body's JSON.
    pub fn body(&self) -> Option<&'a Json<'a>> {
        self.body
    }

    /// The text at a JSON pointer in the body (a non-empty string, or a number).
    pub fn text(&self, pointer: &str) -> Option<String> {
        self.body?.pointer(pointer)?.as_text()
    }
}

/// A value shortened for a sentence: the first 24 characters and an ellipsis.
pub(super) fn short(value: &str) -> String {
    let mut out: String = value.chars().take(24).collect();
    if value.chars().count() > 24 {
        out.push('…');
    }
    out
}

/// A 200 with `body` as UTF-8 text.
pub(super) fn text_reply(body: String) -> Reply {
    Reply {
        status: 200,
        content_type: Some("text/plain; charset=utf-8".into()),
        headers: Vec::new(),
        body,
    }
}

/// A 200 with `body` as JSON.
pub(super) fn json_reply(body: serde_json::Value) -> Reply {
    Reply {
        status: 200,
        content_type: Some("application/json".into()),
        headers: Vec::new(),
        body: body.to_string(),
    }
}

/// The answer that is the request's value, as text.
pub(super) fn answer_with_value(asked: &Asked, _: &Context<'_>) -> Result<Answered, String> {
    Ok(text_reply(asked.value.clone()).into())
}

/// `challenge …`: the phrase of a handshake that asks for a challenge back.
pub(super) fn challenge_phrase(asked: &Asked) -> String {
    format!("challenge {}", short(&asked.value))
}

/// ` for …` when the handshake names what the subscription is to, else nothing.
pub(super) fn for_topic(asked: &Asked) -> String {
    asked
        .topic
        .as_deref()
        .map(|t| format!(" for {t}"))
        .unwrap_or_default()
}
