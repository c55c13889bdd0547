//! AWS SNS's `SubscriptionConfirmation`: a POST whose `SubscribeURL` confirms the subscription
//! when fetched. hookscope answers it 200 and leaves the subscription to the user: it never
//! fetches the URL by itself.

use super::Provider;
use super::challenge::{Challenge, Expected, Sending, json_body, token};
use super::rules::{Asked, Request, Respond, Rules};
use crate::domain::delivery::Header;

pub(super) const RULES: Rules = Rules {
    provider: Provider::Sns,
    name: "sns",
    label: "AWS SNS",
    what: "SubscriptionConfirmation",
    field: "Token",
    signs: false,
    recognise,
    phrase,
    respond: Respond::Await(awaiting),
    send,
};

/// The `x-amz-sns-message-type` header says it; the body carries the token, the URL and the
/// topic.
fn recognise(request: &Request<'_>) -> Option<Asked> {
    if !request.is("POST")
        || !request.header_is("x-amz-sns-message-type", "SubscriptionConfirmation")
    {
        return None;
    }
    let mut asked = Asked::new(request.text("/Token").unwrap_or_default());
    asked.url = request.text("/SubscribeURL");
    asked.topic = request.text("/TopicArn");
    Some(asked)
}

fn phrase(asked: &Asked) -> String {
    format!(
        "confirm the subscription to {}",
        asked.topic.as_deref().unwrap_or("a topic")
    )
}

fn awaiting(asked: &Asked) -> String {
    let topic = asked.topic.as_deref().unwrap_or("a topic");
    match &asked.url {
        Some(_) => format!(
            "AWS SNS asks to confirm the subscription to {topic}; hookscope never fetches the SubscribeURL by itself: confirm it when you mean to subscribe."
        ),
        None => format!(
            "AWS SNS asks to confirm the subscription to {topic}, but the message carries no SubscribeURL to confirm with."
        ),
    }
}

fn send(challenge: &mut Challenge, sending: &Sending<'_>) -> Result<(), String> {
    let value = &sending.value;
    challenge.headers = vec![
        Header::new("content-type", "text/plain; charset=UTF-8"),
        Header::new("x-amz-sns-message-type", "SubscriptionConfirmation"),
    ];
    challenge.body = json_body(serde_json::json!({
        "Type": "SubscriptionConfirmation",
        "MessageId": token(12),
        "Token": value,
        "TopicArn": "arn:aws:sns:us-east-1:000000000000:hookscope-jobs",
        "Message": "You have chosen to subscribe to the topic arn:aws:sns:us-east-1:000000000000:hookscope-jobs.",
        "SubscribeURL": format!("{}?Action=ConfirmSubscription&Token={value}", sending.confirm_url),
        "SignatureVersion": "1"
    }));
    challenge.expected = Expected::Confirm;
    Ok(())
}
