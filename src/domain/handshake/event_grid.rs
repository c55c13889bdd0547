//! Azure Event Grid's `SubscriptionValidation` event (Event Grid schema): a POST whose
//! `validationCode` is answered as `{"validationResponse": …}`. Its `validationUrl`, for
//! validating by hand, is shown and never fetched.

use super::challenge::{Challenge, Expected, Sending, json_body, token};
use super::rules::{Answered, Asked, Request, Respond, Rules, for_topic, json_reply, short};
use super::{Context, Provider};
use crate::domain::delivery::Header;
use crate::domain::json::Json;

pub(super) const RULES: Rules = Rules {
    provider: Provider::EventGrid,
    name: "event-grid",
    label: "Azure Event Grid",
    what: "SubscriptionValidation event",
    field: "validationCode",
    signs: false,
    recognise,
    phrase,
    respond: Respond::Answer(answer),
    send,
};

/// The `aeg-event-type` header says it; the validation event in the body's array carries the
/// code, the URL and the topic.
fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("POST") || !request.header_is("aeg-event-type", "SubscriptionValidation") {
        return None;
    }
    let event = request.body().and_then(|b| {
        b.as_array()?.iter().find(|e| {
            e.get("eventType").and_then(Json::as_text).as_deref()
                == Some("Microsoft.EventGrid.SubscriptionValidationEvent")
        })
    });
    let field = |name: &str| event?.pointer(&format!("/data/{name}"))?.as_text();
    let mut asked = Asked::new(field("validationCode").unwrap_or_default());
    asked.url = field("validationUrl");
    asked.topic = event.and_then(|e| e.get("topic")?.as_text());
    Some(asked)
}

fn phrase(asked: &Asked) -> String {
    format!("validationCode {}{}", short(&asked.value), for_topic(asked))
}

fn answer(asked: &Asked, _: &Context<'_>) -> Result<Answered, String> {
    Ok(Answered {
        reply: json_reply(serde_json::json!({ "validationResponse": asked.value })),
        shown: asked.url.clone().map(|url| {
            (
                url,
                " Its validationUrl (manual validation) is shown, never fetched by hookscope.",
            )
        }),
    })
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    challenge
        .headers
        .push(Header::new("aeg-event-type", "SubscriptionValidation"));
    challenge.body = json_body(serde_json::json!([{
        "id": token(8),
        "topic": "/subscriptions/hookscope/resourceGroups/test/providers/Microsoft.EventGrid/topics/jobs",
        "subject": "",
        "data": {"validationCode": sending.value},
        "eventType": "Microsoft.EventGrid.SubscriptionValidationEvent",
        "eventTime": "2026-01-01T00:00:00Z",
        "metadataVersion": "1",
        "dataVersion": "1"
    }]));
    challenge.expected = Expected::Json(vec![("validationResponse", sending.value.clone())]);
    Ok(())
}
