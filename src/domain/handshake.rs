//! Handshakes: the challenge a provider sends before it will deliver, recognised from the
//! request alone and answered the way its provider documents (docs/webhooks.md has each rule).
//!
//! [`respond`] is pure: it takes the delivery, the endpoint's handshake settings and what the
//! signature check concluded, and gives the [`Handshake`] to record, with the exact answer to
//! send. A signed handshake (Slack, Zoom, Twitch) whose signature fails is refused, never
//! answered with its challenge; with no secret to check it against it is answered and said to be
//! unverified. AWS SNS and Event Grid's manual validation carry a URL to fetch: hookscope never
//! fetches it by itself, it is shown as [`Handshake::confirm_url`] for the user to confirm.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::domain::delivery::{Delivery, Header};
use crate::domain::json::Json;
use crate::domain::pretty::percent_decode;
use crate::domain::scheme::{Secret, constant_time_eq, hmac_sha256};

/// A provider whose handshake hookscope answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// CloudEvents HTTP Webhook 1.0 abuse protection (an `OPTIONS` request).
    Cloudevents,
    /// Azure Event Grid's `SubscriptionValidation` event (Event Grid schema).
    EventGrid,
    /// Slack Events API's `url_verification`.
    Slack,
    /// Microsoft Graph change notifications' `validationToken`.
    Graph,
    /// Meta (WhatsApp, Instagram, Messenger): `hub.mode=subscribe`.
    Meta,
    /// Zoom's `endpoint.url_validation`.
    Zoom,
    /// Twitch EventSub's `webhook_callback_verification`.
    Twitch,
    /// X (Twitter) Account Activity's CRC check.
    X,
    /// Dropbox's `challenge`.
    Dropbox,
    /// Okta event hooks' one-time verification.
    Okta,
    /// AWS SNS's `SubscriptionConfirmation`.
    Sns,
}

impl Provider {
    /// Every provider, in the order requests are recognised.
    pub const ALL: [Provider; 11] = [
        Provider::Cloudevents,
        Provider::EventGrid,
        Provider::Sns,
        Provider::Twitch,
        Provider::Graph,
        Provider::Meta,
        Provider::X,
        Provider::Okta,
        Provider::Dropbox,
        Provider::Slack,
        Provider::Zoom,
    ];

    /// The name in the config (`handshake = "slack"`), the JSON and the filter.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Cloudevents => "cloudevents",
            Provider::EventGrid => "event-grid",
            Provider::Slack => "slack",
            Provider::Graph => "graph",
            Provider::Meta => "meta",
            Provider::Zoom => "zoom",
            Provider::Twitch => "twitch",
            Provider::X => "x",
            Provider::Dropbox => "dropbox",
            Provider::Okta => "okta",
            Provider::Sns => "sns",
        }
    }

    /// The provider as people name it.
    pub fn label(self) -> &'static str {
        match self {
            Provider::Cloudevents => "CloudEvents",
            Provider::EventGrid => "Azure Event Grid",
            Provider::Slack => "Slack",
            Provider::Graph => "Microsoft Graph",
            Provider::Meta => "Meta",
            Provider::Zoom => "Zoom",
            Provider::Twitch => "Twitch",
            Provider::X => "X",
            Provider::Dropbox => "Dropbox",
            Provider::Okta => "Okta",
            Provider::Sns => "AWS SNS",
        }
    }

    /// What the provider calls its handshake.
    pub fn what(self) -> &'static str {
        match self {
            Provider::Cloudevents => "abuse-protection request",
            Provider::EventGrid => "SubscriptionValidation event",
            Provider::Slack => "url_verification challenge",
            Provider::Graph => "validationToken",
            Provider::Meta => "verification request",
            Provider::Zoom => "endpoint.url_validation",
            Provider::Twitch => "webhook_callback_verification",
            Provider::X => "CRC check",
            Provider::Dropbox => "verification challenge",
            Provider::Okta => "one-time verification",
            Provider::Sns => "SubscriptionConfirmation",
        }
    }

    /// What carries the value the answer is made of, for a refusal's sentence.
    pub fn field(self) -> &'static str {
        match self {
            Provider::Cloudevents => "WebHook-Request-Origin",
            Provider::EventGrid => "validationCode",
            Provider::Slack | Provider::Twitch | Provider::Dropbox => "challenge",
            Provider::Graph => "validationToken",
            Provider::Meta => "hub.challenge",
            Provider::Zoom => "plainToken",
            Provider::X => "crc_token",
            Provider::Okta => "x-okta-verification-challenge",
            Provider::Sns => "Token",
        }
    }

    /// Whether the provider signs its handshake (with the scheme of its deliveries).
    pub fn signs(self) -> bool {
        matches!(self, Provider::Slack | Provider::Zoom | Provider::Twitch)
    }

    /// The provider whose handshake comes with a signature scheme, if its provider has one
    /// (`slack`, `zoom`, `twitch` and a custom scheme of its family, `meta`).
    pub fn of_scheme(scheme: &crate::domain::scheme::Scheme) -> Option<Provider> {
        if scheme.family == crate::domain::scheme::Family::Twitch {
            return Some(Provider::Twitch);
        }
        match scheme.name.as_str() {
            "slack" => Some(Provider::Slack),
            "zoom" => Some(Provider::Zoom),
            "meta" => Some(Provider::Meta),
            _ => None,
        }
    }

    /// The provider a config or filter name names.
    pub fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The names, for help texts and errors.
    pub fn names() -> String {
        Provider::ALL.map(Provider::name).join(", ")
    }

    /// The labels, for the empty state's sentence.
    pub fn labels() -> String {
        Provider::ALL.map(Provider::label).join(", ")
    }
}

/// Which handshakes an endpoint answers (`handshake = …` in its config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Accept {
    /// Every provider's (the default).
    #[default]
    Any,
    /// None: every request is a delivery like any other.
    Off,
    /// Only this provider's.
    Only(Provider),
}

impl Accept {
    /// Reads the config's value: `auto`, `off` or a provider's name.
    pub fn parse(text: &str) -> Result<Accept, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" | "on" | "any" => Ok(Accept::Any),
            "off" | "none" => Ok(Accept::Off),
            name => Provider::from_name(name).map(Accept::Only).ok_or_else(|| {
                format!(
                    "handshake \"{text}\" is not off, auto or a provider ({})",
                    Provider::names()
                )
            }),
        }
    }

    fn allows(self, provider: Provider) -> bool {
        match self {
            Accept::Any => true,
            Accept::Off => false,
            Accept::Only(only) => only == provider,
        }
    }
}

/// What the signature check concluded about the request, as a handshake needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signed {
    /// The signature matched a configured secret.
    Verified,
    /// The request carries a signature (or should) and it did not match.
    Failed,
    /// Not checked: no secret configured, or no scheme for it.
    NotChecked,
}

/// What became of a handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Answered as the provider expects.
    Answered,
    /// Refused: a token or signature did not match, or a secret to answer with is missing.
    Refused,
    /// Waits for the user to confirm it (AWS SNS): hookscope fetches nothing by itself.
    Awaiting,
}

impl Outcome {
    /// The word the JSON uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::Refused => "refused",
            Outcome::Awaiting => "awaiting",
        }
    }
}

/// The exact answer to send, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type`, when the answer has a body type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Other headers of the answer, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: String,
}

/// A handshake recognised in a request, and what hookscope did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handshake {
    /// Whose handshake it is.
    pub provider: Provider,
    /// What was asked, in a phrase ("challenge 3eZbrw1a…").
    pub asked: String,
    /// Answered, refused or awaiting the user's confirmation.
    pub outcome: Outcome,
    /// One sentence: what was answered or why it was refused.
    pub detail: String,
    /// Whether a signed handshake's signature verified (`None`: the provider signs none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    /// The URL the provider asks to be fetched to confirm (SNS's `SubscribeURL`, Event Grid's
    /// `validationUrl`); never fetched by hookscope on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm_url: Option<String>,
    /// The answer sent; `None` when the request got the endpoint's usual answer (SNS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Reply>,
}

/// What an endpoint brings to a handshake.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Which handshakes it answers.
    pub accept: Accept,
    /// Its secrets (Zoom's secret token, X's consumer secret): the one the signature matched
    /// answers, else the first.
    pub secrets: &'a [Secret],
    /// Which secret verified the request's signature, when one did.
    pub matched_secret: Option<usize>,
    /// The scheme the endpoint is configured with, when it is set.
    pub endpoint_scheme: Option<&'a crate::domain::scheme::Scheme>,
    /// Meta's `verify_token`.
    pub verify_token: Option<&'a Secret>,
    /// The endpoint's path, for sentences.
    pub path: &'a str,
}

/// The status a refused handshake gets.
pub const REFUSED_STATUS: u16 = 403;

/// The handshake `delivery` is, answered or refused, or `None` when it is not one (or the
/// endpoint does not answer that provider's).
pub fn respond(delivery: &Delivery, context: &Context<'_>, signed: Signed) -> Option<Handshake> {
    respond_with(
        delivery,
        Json::parse(&delivery.body).as_ref(),
        context,
        signed,
    )
}

/// [`respond`] with the body already parsed (the checks parse it once for every reader).
pub fn respond_with(
    delivery: &Delivery,
    body: Option<&Json<'_>>,
    context: &Context<'_>,
    signed: Signed,
) -> Option<Handshake> {
    let asked = recognise(delivery, body)?;
    if !context.accept.allows(asked.provider) {
        return None;
    }
    Some(decide(asked, context, signed))
}

/// A request recognised as a handshake: whose, and what it carries.
struct Asked {
    provider: Provider,
    /// The value to answer with (a challenge, a token, an origin).
    value: String,
    /// A second value (Meta's verify token, a request rate).
    other: Option<String>,
    /// A URL to confirm with (SNS, Event Grid), or a topic.
    url: Option<String>,
    topic: Option<String>,
}

impl Asked {
    fn new(provider: Provider, value: String) -> Asked {
        Asked {
            provider,
            value,
            other: None,
            url: None,
            topic: None,
        }
    }
}

/// The query's parameters, decoded as a form (`+` is a space).
fn query_params(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|part| {
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            Some((percent_decode(name)?, percent_decode(value)?))
        })
        .collect()
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Which provider's handshake the request is, from the request alone.
fn recognise(delivery: &Delivery, body: Option<&Json<'_>>) -> Option<Asked> {
    let method = delivery.method.to_ascii_uppercase();
    let params = query_params(&delivery.query);
    let header = |name: &str| delivery.header_str(name).map(str::trim);
    match method.as_str() {
        "OPTIONS" => {
            let origin = header("webhook-request-origin")?;
            let mut asked = Asked::new(Provider::Cloudevents, origin.to_string());
            asked.other = header("webhook-request-rate").map(str::to_string);
            asked.url = header("webhook-request-callback").map(str::to_string);
            Some(asked)
        }
        "GET" => recognise_get(delivery, &params),
        "POST" => recognise_post(delivery, body, &params),
        _ => None,
    }
}

fn recognise_get(delivery: &Delivery, params: &[(String, String)]) -> Option<Asked> {
    if param(params, "hub.mode") == Some("subscribe")
        && let Some(challenge) = param(params, "hub.challenge")
    {
        let mut asked = Asked::new(Provider::Meta, challenge.to_string());
        asked.other = param(params, "hub.verify_token").map(str::to_string);
        return Some(asked);
    }
    if let Some(token) = param(params, "crc_token") {
        return Some(Asked::new(Provider::X, token.to_string()));
    }
    if let Some(challenge) = delivery.header_str("x-okta-verification-challenge") {
        return Some(Asked::new(Provider::Okta, challenge.trim().to_string()));
    }
    param(params, "challenge").map(|c| Asked::new(Provider::Dropbox, c.to_string()))
}

fn recognise_post(
    delivery: &Delivery,
    body: Option<&Json<'_>>,
    params: &[(String, String)],
) -> Option<Asked> {
    let header = |name: &str| delivery.header_str(name).map(str::trim);
    let text = |pointer: &str| body?.pointer(pointer)?.as_text();
    if header("aeg-event-type").is_some_and(|t| t.eq_ignore_ascii_case("SubscriptionValidation")) {
        let event = body.and_then(|b| {
            b.as_array()?.iter().find(|e| {
                e.get("eventType").and_then(Json::as_text).as_deref()
                    == Some("Microsoft.EventGrid.SubscriptionValidationEvent")
            })
        });
        let field = |name: &str| event?.pointer(&format!("/data/{name}"))?.as_text();
        let mut asked = Asked::new(
            Provider::EventGrid,
            field("validationCode").unwrap_or_default(),
        );
        asked.url = field("validationUrl");
        asked.topic = event.and_then(|e| e.get("topic")?.as_text());
        return Some(asked);
    }
    if header("x-amz-sns-message-type")
        .is_some_and(|t| t.eq_ignore_ascii_case("SubscriptionConfirmation"))
    {
        let mut asked = Asked::new(Provider::Sns, text("/Token").unwrap_or_default());
        asked.url = text("/SubscribeURL");
        asked.topic = text("/TopicArn");
        return Some(asked);
    }
    if header("twitch-eventsub-message-type")
        .is_some_and(|t| t.eq_ignore_ascii_case("webhook_callback_verification"))
    {
        let mut asked = Asked::new(Provider::Twitch, text("/challenge").unwrap_or_default());
        asked.topic = text("/subscription/type");
        return Some(asked);
    }
    if let Some(token) = param(params, "validationToken") {
        return Some(Asked::new(Provider::Graph, token.to_string()));
    }
    if text("/type").as_deref() == Some("url_verification")
        && let Some(challenge) = text("/challenge")
    {
        return Some(Asked::new(Provider::Slack, challenge));
    }
    if text("/event").as_deref() == Some("endpoint.url_validation") {
        return Some(Asked::new(
            Provider::Zoom,
            text("/payload/plainToken").unwrap_or_default(),
        ));
    }
    None
}

/// A value shortened for a sentence: the first 24 characters and an ellipsis.
fn short(value: &str) -> String {
    let mut out: String = value.chars().take(24).collect();
    if value.chars().count() > 24 {
        out.push('…');
    }
    out
}

fn text_reply(body: String) -> Reply {
    Reply {
        status: 200,
        content_type: Some("text/plain; charset=utf-8".into()),
        headers: Vec::new(),
        body,
    }
}

fn json_reply(body: serde_json::Value) -> Reply {
    Reply {
        status: 200,
        content_type: Some("application/json".into()),
        headers: Vec::new(),
        body: body.to_string(),
    }
}

/// Answers or refuses a recognised handshake.
fn decide(asked: Asked, context: &Context<'_>, signed: Signed) -> Handshake {
    let provider = asked.provider;
    let signs = provider.signs();
    let verified = signs.then_some(signed == Signed::Verified);
    let phrase = asked_phrase(&asked);
    let refuse = |why: String| Handshake {
        provider,
        asked: phrase.clone(),
        outcome: Outcome::Refused,
        detail: format!("Refused {}'s {}: {why}.", provider.label(), provider.what()),
        verified,
        confirm_url: None,
        answer: Some(Reply {
            status: REFUSED_STATUS,
            content_type: Some("text/plain; charset=utf-8".into()),
            headers: Vec::new(),
            body: format!("hookscope refused this {}: {why}\n", provider.what()),
        }),
    };
    if signs && signed == Signed::Failed {
        // An endpoint set up for another provider's scheme cannot verify this one's challenge.
        if let Some(scheme) = context
            .endpoint_scheme
            .filter(|s| Provider::of_scheme(s) != Some(provider))
        {
            return refuse(format!(
                "{} verifies {} signatures, not {}'s: give {}'s challenges an endpoint of their own (scheme = \"{}\")",
                context.path,
                scheme.name,
                provider.label(),
                provider.label(),
                provider.name()
            ));
        }
        return refuse(format!(
            "its signature did not verify against the secret of {}, so the challenge was not answered",
            context.path
        ));
    }
    if signs && signed == Signed::NotChecked && !context.secrets.is_empty() {
        return refuse(format!(
            "it carries no {} signature, and {} has a secret to check one with",
            provider.label(),
            context.path
        ));
    }
    if provider != Provider::Sns && asked.value.trim().is_empty() {
        return refuse(format!("the request carries no {}", provider.field()));
    }
    // The secret that verified the signature answers (a rotation, several providers' secrets);
    // else the first.
    let first_secret = context
        .matched_secret
        .and_then(|i| context.secrets.get(i))
        .or(context.secrets.first());
    let reply = match provider {
        Provider::Cloudevents => {
            let headers = vec![
                ("webhook-allowed-origin".to_string(), asked.value.clone()),
                ("webhook-allowed-rate".to_string(), "*".to_string()),
                ("allow".to_string(), "POST".to_string()),
            ];
            Reply {
                status: 200,
                content_type: None,
                headers,
                body: String::new(),
            }
        }
        Provider::EventGrid => json_reply(serde_json::json!({ "validationResponse": asked.value })),
        Provider::Slack | Provider::Twitch | Provider::Graph => text_reply(asked.value.clone()),
        Provider::Dropbox => {
            let mut reply = text_reply(asked.value.clone());
            reply.content_type = Some("text/plain".into());
            reply
                .headers
                .push(("x-content-type-options".into(), "nosniff".into()));
            reply
        }
        Provider::Okta => json_reply(serde_json::json!({ "verification": asked.value })),
        Provider::Meta => {
            let Some(expected) = context.verify_token else {
                return refuse(format!(
                    "no verify_token is configured for {}: set it to the Verify token entered in Meta's dashboard",
                    context.path
                ));
            };
            let given = asked.other.as_deref().unwrap_or("");
            if !constant_time_eq(given.as_bytes(), expected.expose().as_bytes()) {
                return refuse("hub.verify_token did not match the endpoint's".into());
            }
            text_reply(asked.value.clone())
        }
        Provider::Zoom => {
            let Some(secret) = first_secret else {
                return refuse(format!(
                    "no secret token is configured for {}, and Zoom's answer is an HMAC of plainToken under it: add the app's Secret Token to this endpoint",
                    context.path
                ));
            };
            let mac = hmac_sha256(secret.expose().as_bytes(), &[asked.value.as_bytes()]);
            json_reply(serde_json::json!({
                "plainToken": asked.value,
                "encryptedToken": hex::encode(mac),
            }))
        }
        Provider::X => {
            let Some(secret) = first_secret else {
                return refuse(format!(
                    "no consumer secret is configured for {}, and the CRC answer is an HMAC of crc_token under it: add the app's API secret to this endpoint",
                    context.path
                ));
            };
            let mac = hmac_sha256(secret.expose().as_bytes(), &[asked.value.as_bytes()]);
            let token = base64::engine::general_purpose::STANDARD.encode(mac);
            json_reply(serde_json::json!({ "response_token": format!("sha256={token}") }))
        }
        Provider::Sns => {
            let topic = asked.topic.as_deref().unwrap_or("a topic");
            let detail = match &asked.url {
                Some(_) => format!(
                    "AWS SNS asks to confirm the subscription to {topic}; hookscope never fetches the SubscribeURL by itself: confirm it when you mean to subscribe."
                ),
                None => format!(
                    "AWS SNS asks to confirm the subscription to {topic}, but the message carries no SubscribeURL to confirm with."
                ),
            };
            // Answered 200 at once like any handshake; the subscription waits for the user.
            return Handshake {
                provider,
                asked: phrase,
                outcome: Outcome::Awaiting,
                detail,
                verified: None,
                confirm_url: asked.url,
                answer: Some(Reply {
                    status: 200,
                    content_type: None,
                    headers: Vec::new(),
                    body: String::new(),
                }),
            };
        }
    };
    let unverified = if verified == Some(false) {
        format!(
            " Its signature was not verified: no secret is configured for {}.",
            context.path
        )
    } else {
        String::new()
    };
    let manual = match (&asked.url, provider) {
        (Some(_), Provider::EventGrid) => {
            " Its validationUrl (manual validation) is shown, never fetched by hookscope."
                .to_string()
        }
        _ => String::new(),
    };
    Handshake {
        provider,
        asked: phrase,
        outcome: Outcome::Answered,
        detail: format!(
            "Answered {}'s {}.{unverified}{manual}",
            provider.label(),
            provider.what()
        ),
        verified,
        confirm_url: asked.url.filter(|_| provider == Provider::EventGrid),
        answer: Some(reply),
    }
}

/// What was asked, in a phrase for the JSON and the detail view.
fn asked_phrase(asked: &Asked) -> String {
    let value = short(&asked.value);
    match asked.provider {
        Provider::Cloudevents => {
            let rate = asked
                .other
                .as_deref()
                .map(|r| format!(", rate {r}/min"))
                .unwrap_or_default();
            format!("may {} send here{rate}", asked.value)
        }
        Provider::EventGrid => format!(
            "validationCode {value}{}",
            asked
                .topic
                .as_deref()
                .map(|t| format!(" for {t}"))
                .unwrap_or_default()
        ),
        Provider::Sns => format!(
            "confirm the subscription to {}",
            asked.topic.as_deref().unwrap_or("a topic")
        ),
        Provider::Meta => format!("hub.challenge {value} with a hub.verify_token"),
        Provider::X => format!("crc_token {value}"),
        Provider::Zoom => format!("plainToken {value}"),
        Provider::Graph => format!("validationToken {value}"),
        Provider::Twitch => format!(
            "challenge {value}{}",
            asked
                .topic
                .as_deref()
                .map(|t| format!(" for {t}"))
                .unwrap_or_default()
        ),
        Provider::Slack | Provider::Dropbox | Provider::Okta => format!("challenge {value}"),
    }
}

/// A provider's handshake as the provider sends it, and what a right answer is: what the
/// simulator and the probe send to a developer's handler before any event.
#[derive(Debug, Clone)]
pub struct Challenge {
    /// Whose handshake.
    pub provider: Provider,
    /// The method.
    pub method: &'static str,
    /// The query to add to the handler's URL (`hub.mode=subscribe&…`), when it has one.
    pub query: Option<String>,
    /// The headers, signatures included.
    pub headers: Vec<Header>,
    /// The body.
    pub body: Vec<u8>,
    expected: Expected,
}

/// What a right answer holds.
#[derive(Debug, Clone)]
enum Expected {
    /// The body is exactly this text.
    Text(String),
    /// Slack's: the challenge as plain text, as JSON `{"challenge": …}`, or as a form
    /// `challenge=…` (Slack's docs accept all three; its Bolt SDKs answer JSON).
    Challenge(String),
    /// The body is JSON with these members equal to these values.
    Json(Vec<(&'static str, String)>),
    /// This header has this value (or `*`).
    Header(&'static str, String),
    /// A 2xx, then one GET of the SubscribeURL (SNS).
    Confirm,
}

/// A random token of `n` bytes, in URL-safe base64 without padding.
fn token(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    let _ = getrandom::fill(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// What a provider's handshake is made with, as the simulator and the probe know it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Keys<'a> {
    /// The signing secret (Slack, Zoom, Twitch sign with it; Zoom's and X's answers are HMACs
    /// under it).
    pub secret: Option<&'a Secret>,
    /// Meta's Verify token, which is not its app secret.
    pub verify_token: Option<&'a str>,
    /// The scheme the handler verifies, when it is the provider's own family (a custom scheme
    /// with renamed headers signs the challenge as it signs the deliveries).
    pub scheme: Option<&'a crate::domain::scheme::Scheme>,
}

impl Keys<'_> {
    fn signed_headers(
        &self,
        preset: &str,
        secret: &Secret,
        id: &str,
        now_secs: i64,
        body: &[u8],
    ) -> Result<Vec<Header>, String> {
        let preset_scheme = crate::domain::scheme::Scheme::preset(preset)
            .ok_or_else(|| format!("the {preset} preset is missing"))?;
        let scheme = match self.scheme {
            Some(own) if own.family == preset_scheme.family => own.clone(),
            _ => preset_scheme,
        };
        scheme
            .sign(std::slice::from_ref(secret), id, now_secs, body)
            .map_err(|e| e.to_string())
    }
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

impl Challenge {
    /// The handshake `provider` sends, signed or answered with `keys` where the provider uses
    /// them. `confirm_url` is where SNS's SubscribeURL points.
    pub fn new(
        provider: Provider,
        keys: Keys<'_>,
        now_secs: i64,
        confirm_url: &str,
    ) -> Result<Challenge, String> {
        let needs_secret = || {
            keys.secret.ok_or_else(|| {
                format!(
                    "{}'s {} needs the secret",
                    provider.label(),
                    provider.what()
                )
            })
        };
        let value = token(18);
        let json = |v: serde_json::Value| v.to_string().into_bytes();
        let mut challenge = Challenge {
            provider,
            method: "POST",
            query: None,
            headers: vec![Header::new("content-type", "application/json")],
            body: Vec::new(),
            expected: Expected::Text(value.clone()),
        };
        match provider {
            Provider::Cloudevents => {
                challenge.method = "OPTIONS";
                challenge.headers = vec![
                    Header::new("webhook-request-origin", "eventemitter.hookscope.test"),
                    Header::new("webhook-request-rate", "120"),
                ];
                challenge.expected = Expected::Header(
                    "webhook-allowed-origin",
                    "eventemitter.hookscope.test".into(),
                );
            }
            Provider::EventGrid => {
                challenge
                    .headers
                    .push(Header::new("aeg-event-type", "SubscriptionValidation"));
                challenge.body = json(serde_json::json!([{
                    "id": token(8),
                    "topic": "/subscriptions/hookscope/resourceGroups/test/providers/Microsoft.EventGrid/topics/jobs",
                    "subject": "",
                    "data": {"validationCode": value},
                    "eventType": "Microsoft.EventGrid.SubscriptionValidationEvent",
                    "eventTime": "2026-01-01T00:00:00Z",
                    "metadataVersion": "1",
                    "dataVersion": "1"
                }]));
                challenge.expected = Expected::Json(vec![("validationResponse", value)]);
            }
            Provider::Slack => {
                challenge.body = json(serde_json::json!({
                    "token": token(12), "challenge": value, "type": "url_verification"
                }));
                let signed =
                    keys.signed_headers("slack", needs_secret()?, "", now_secs, &challenge.body)?;
                challenge.headers.extend(signed);
                challenge.expected = Expected::Challenge(value.clone());
            }
            Provider::Zoom => {
                challenge.body = json(serde_json::json!({
                    "payload": {"plainToken": value},
                    "event_ts": now_secs * 1000,
                    "event": "endpoint.url_validation"
                }));
                let secret = needs_secret()?;
                let signed = keys.signed_headers("zoom", secret, "", now_secs, &challenge.body)?;
                challenge.headers.extend(signed);
                let mac = hmac_sha256(secret.expose().as_bytes(), &[value.as_bytes()]);
                challenge.expected = Expected::Json(vec![
                    ("plainToken", value),
                    ("encryptedToken", hex::encode(mac)),
                ]);
            }
            Provider::Twitch => {
                challenge.body = json(serde_json::json!({
                    "challenge": value,
                    "subscription": {"id": token(12), "status": "webhook_callback_verification_pending", "type": "channel.follow", "version": "2"}
                }));
                let id = token(12);
                let signed =
                    keys.signed_headers("twitch", needs_secret()?, &id, now_secs, &challenge.body)?;
                challenge.headers.extend(signed);
                challenge.headers.push(Header::new(
                    "twitch-eventsub-message-type",
                    "webhook_callback_verification",
                ));
            }
            Provider::Graph => {
                let text = format!("Validation: Testing client application reachability {value}");
                challenge.query = Some(format!(
                    "validationToken={}",
                    text.replace(':', "%3A").replace(' ', "+")
                ));
                challenge.headers = vec![Header::new("content-type", "text/plain; charset=utf-8")];
                challenge.expected = Expected::Text(text);
            }
            Provider::Meta => {
                challenge.method = "GET";
                challenge.headers.clear();
                let token = keys.verify_token.ok_or_else(|| {
                    "Meta's verification request needs the Verify token entered in Meta's dashboard (not the app secret)".to_string()
                })?;
                challenge.query = Some(format!(
                    "hub.mode=subscribe&hub.challenge={value}&hub.verify_token={}",
                    encode_param(token)
                ));
            }
            Provider::X => {
                challenge.method = "GET";
                challenge.headers.clear();
                challenge.query = Some(format!("crc_token={value}&nonce={}", token(8)));
                let mac = hmac_sha256(needs_secret()?.expose().as_bytes(), &[value.as_bytes()]);
                challenge.expected = Expected::Json(vec![(
                    "response_token",
                    format!(
                        "sha256={}",
                        base64::engine::general_purpose::STANDARD.encode(mac)
                    ),
                )]);
            }
            Provider::Dropbox => {
                challenge.method = "GET";
                challenge.headers.clear();
                challenge.query = Some(format!("challenge={value}"));
            }
            Provider::Okta => {
                challenge.method = "GET";
                challenge.headers = vec![Header::new("x-okta-verification-challenge", &*value)];
                challenge.expected = Expected::Json(vec![("verification", value)]);
            }
            Provider::Sns => {
                challenge.headers = vec![
                    Header::new("content-type", "text/plain; charset=UTF-8"),
                    Header::new("x-amz-sns-message-type", "SubscriptionConfirmation"),
                ];
                challenge.body = json(serde_json::json!({
                    "Type": "SubscriptionConfirmation",
                    "MessageId": token(12),
                    "Token": value,
                    "TopicArn": "arn:aws:sns:us-east-1:000000000000:hookscope-jobs",
                    "Message": "You have chosen to subscribe to the topic arn:aws:sns:us-east-1:000000000000:hookscope-jobs.",
                    "SubscribeURL": format!("{confirm_url}?Action=ConfirmSubscription&Token={value}"),
                    "SignatureVersion": "1"
                }));
                challenge.expected = Expected::Confirm;
            }
        }
        Ok(challenge)
    }

    /// The URL the challenge goes to: the handler's, with the challenge's query added.
    pub fn url_for(&self, url: &str) -> String {
        match &self.query {
            Some(query) if url.contains('?') => format!("{url}&{query}"),
            Some(query) => format!("{url}?{query}"),
            None => url.to_string(),
        }
    }

    /// Whether SNS's answer is a GET of the SubscribeURL, which the caller watches for.
    pub fn awaits_confirmation(&self) -> bool {
        matches!(self.expected, Expected::Confirm)
    }

    /// Judges the handler's answer: `Ok` with a sentence when it is what the provider accepts,
    /// `Err` with what was wrong. `confirmed` says whether SNS's SubscribeURL was fetched.
    pub fn judge(
        &self,
        status: Option<u16>,
        headers: &[Header],
        body: &[u8],
        confirmed: bool,
    ) -> Result<String, String> {
        let who = format!("{}'s {}", self.provider.label(), self.provider.what());
        let Some(status) = status else {
            return Err(format!(
                "{who} got no answer, so the provider would not subscribe"
            ));
        };
        if !(200..300).contains(&status) || (status != 200 && !self.awaits_confirmation()) {
            return Err(format!(
                "{who} was answered {status}; the provider wants 200 with the challenge"
            ));
        }
        let text = String::from_utf8_lossy(body);
        let header = |name: &str| {
            headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value_lossy())
        };
        match &self.expected {
            Expected::Text(expected) => {
                self.judge_text(&who, &text, expected, header("content-type"))?;
            }
            Expected::Challenge(expected) => judge_challenge(&who, &text, body, expected)?,
            Expected::Json(members) => judge_json(&who, &text, body, members)?,
            Expected::Header(name, expected) => {
                let got = header(name);
                if got.as_deref() != Some(expected.as_str()) && got.as_deref() != Some("*") {
                    return Err(format!(
                        "{who} was answered without {name}: {expected}, so the sender may not deliver here"
                    ));
                }
            }
            Expected::Confirm => {
                if !confirmed {
                    return Err(format!(
                        "{who} was answered {status}, but the SubscribeURL was never fetched, so the subscription stays pending"
                    ));
                }
                return Ok(format!(
                    "{who} was confirmed: the handler fetched the SubscribeURL."
                ));
            }
        }
        Ok(format!("{who} was answered as the provider expects."))
    }

    /// A text answer: exactly `expected`, and for Microsoft Graph as `text/plain`.
    fn judge_text(
        &self,
        who: &str,
        text: &str,
        expected: &str,
        content_type: Option<String>,
    ) -> Result<(), String> {
        if text != expected {
            return Err(format!(
                "{who} was answered {} where the provider expects exactly `{}`",
                answered_with(text),
                short(expected)
            ));
        }
        if self.provider == Provider::Graph
            && !content_type
                .as_deref()
                .is_some_and(|t| t.starts_with("text/plain"))
        {
            return Err(format!(
                "{who} was answered with the token but as {}; Microsoft Graph wants text/plain",
                content_type.unwrap_or_else(|| "no content type".into())
            ));
        }
        Ok(())
    }
}

/// What a body was, in a sentence: `with an empty body`, or its start in backquotes.
fn answered_with(text: &str) -> String {
    if text.is_empty() {
        "with an empty body".to_string()
    } else {
        format!("`{}`", short(text))
    }
}

/// Slack's challenge, answered as text, as JSON `{"challenge": …}` or as a form.
fn judge_challenge(who: &str, text: &str, body: &[u8], expected: &str) -> Result<(), String> {
    let as_json = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("challenge")?.as_str().map(str::to_string));
    let as_form = crate::domain::pretty::form_fields(body).and_then(|fields| {
        fields
            .into_iter()
            .find(|(name, _)| name == "challenge")
            .map(|(_, value)| value)
    });
    let answered = text == expected
        || as_json.as_deref() == Some(expected)
        || as_form.as_deref() == Some(expected);
    if answered {
        return Ok(());
    }
    Err(format!(
        "{who} was answered {} where the provider expects the challenge `{}` (as text, as JSON {{\"challenge\": …}} or as a form)",
        answered_with(text),
        short(expected)
    ))
}

/// A JSON answer with each of `members` equal to the value the provider computes.
fn judge_json(
    who: &str,
    text: &str,
    body: &[u8],
    members: &[(&'static str, String)],
) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| {
        let names: Vec<&str> = members.iter().map(|(name, _)| *name).collect();
        let got = if text.trim().is_empty() {
            "with an empty body".to_string()
        } else {
            format!("`{}`", short(text))
        };
        format!(
            "{who} was answered {got}, not the JSON with {} the provider expects",
            names.join(" and ")
        )
    })?;
    for (name, expected) in members {
        let got = value.get(name).and_then(|v| v.as_str());
        if got != Some(expected.as_str()) {
            return Err(format!(
                "{who} was answered with {name} {} where the provider computes `{}`",
                got.map(|g| format!("`{}`", short(g)))
                    .unwrap_or_else(|| "missing".into()),
                short(expected)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, query: &str, headers: &[(&str, &str)], body: &str) -> Delivery {
        crate::domain::delivery::test_request(method, query, headers, body)
    }

    fn context<'a>(secrets: &'a [Secret], token: Option<&'a Secret>) -> Context<'a> {
        Context {
            accept: Accept::Any,
            secrets,
            matched_secret: None,
            endpoint_scheme: None,
            verify_token: token,
            path: "/hooks/x",
        }
    }

    /// What a provider sends, as the receiver reads it.
    fn as_received(c: &Challenge) -> Delivery {
        request(
            c.method,
            c.query.as_deref().unwrap_or(""),
            &[],
            &String::from_utf8_lossy(&c.body),
        )
        .with_headers(c.headers.clone())
    }

    impl Delivery {
        fn with_headers(mut self, headers: Vec<Header>) -> Delivery {
            self.headers = headers;
            self
        }
    }

    #[test]
    fn every_challenge_sent_is_recognised_and_its_answer_judged_right_and_a_wrong_one_not() {
        let secret = Secret::new("s3cret-token");
        let keys = Keys {
            secret: Some(&secret),
            verify_token: Some("meta verify+token/1"),
            scheme: None,
        };
        for provider in Provider::ALL {
            let now = 1_700_000_000;
            let c =
                Challenge::new(provider, keys, now, "http://127.0.0.1:9/sns").expect("a challenge");
            let d = as_received(&c);
            // Through the receiver's own checks, with the endpoint a user would configure: the
            // signed challenges' signatures are verified, not assumed.
            let endpoint = crate::domain::endpoint::Endpoint {
                scheme: provider
                    .signs()
                    .then(|| crate::domain::scheme::Scheme::preset(provider.name()))
                    .flatten(),
                secrets: vec![secret.clone()],
                verify_token: Some(Secret::new("meta verify+token/1")),
                ..crate::domain::endpoint::Endpoint::catch_all()
            };
            let h = crate::domain::checks::evaluate(&d, &endpoint, now)
                .handshake
                .unwrap_or_else(|| panic!("{provider:?} is recognised"));
            assert_ne!(h.outcome, Outcome::Refused, "{provider:?}: {}", h.detail);
            if provider.signs() {
                assert_eq!(h.verified, Some(true), "{provider:?}: {}", h.detail);
            }
            assert_eq!(h.provider, provider);
            let (status, headers, body) = match &h.answer {
                Some(reply) => {
                    let mut headers: Vec<Header> = reply
                        .headers
                        .iter()
                        .map(|(n, v)| Header::new(n, v.as_str()))
                        .collect();
                    if let Some(t) = &reply.content_type {
                        headers.push(Header::new("content-type", t.as_str()));
                    }
                    (reply.status, headers, reply.body.clone().into_bytes())
                }
                None => (200, Vec::new(), Vec::new()),
            };
            let confirmed = provider == Provider::Sns;
            assert!(
                c.judge(Some(status), &headers, &body, confirmed).is_ok(),
                "{provider:?}: {:?}",
                c.judge(Some(status), &headers, &body, confirmed)
            );
            // A handler that answers 200 with an empty body passes for no provider (CloudEvents
            // wants its header, SNS the GET of its URL).
            let empty = c.judge(Some(200), &[], b"", false);
            assert!(empty.is_err(), "{provider:?} must not pass an empty answer");
        }
    }

    #[test]
    fn slacks_challenge_answered_as_json_or_a_form_is_right_as_slack_accepts_it() {
        let secret = Secret::new("s");
        let keys = Keys {
            secret: Some(&secret),
            ..Keys::default()
        };
        let c = Challenge::new(Provider::Slack, keys, 1_700_000_000, "").expect("a challenge");
        let sent: serde_json::Value = serde_json::from_slice(&c.body).expect("JSON");
        let value = sent["challenge"].as_str().expect("challenge");
        let json = format!(r#"{{"challenge":"{value}"}}"#);
        let form = format!("challenge={value}");
        for body in [value.to_string(), json, form] {
            assert!(
                c.judge(Some(200), &[], body.as_bytes(), false).is_ok(),
                "{body}"
            );
        }
        assert!(
            c.judge(Some(200), &[], br#"{"challenge":"other"}"#, false)
                .is_err()
        );
    }

    #[test]
    fn metas_challenge_needs_its_verify_token_not_the_app_secret_and_encodes_it() {
        let secret = Secret::new("app-secret");
        let without = Keys {
            secret: Some(&secret),
            ..Keys::default()
        };
        let err = Challenge::new(Provider::Meta, without, 0, "").expect_err("no token");
        assert!(err.contains("Verify token"), "{err}");
        let with = Keys {
            verify_token: Some("a+b/c d"),
            ..without
        };
        let c = Challenge::new(Provider::Meta, with, 0, "").expect("a challenge");
        let query = c.query.clone().expect("a query");
        assert!(query.contains("hub.verify_token=a%2Bb%2Fc%20d"), "{query}");
        assert!(!query.contains("app-secret"), "{query}");
    }

    #[test]
    fn zoom_is_answered_with_the_secret_that_verified_it_during_a_rotation() {
        let (old, new) = (Secret::new("old-token"), Secret::new("new-token"));
        let keys = Keys {
            secret: Some(&new),
            ..Keys::default()
        };
        let now = 1_700_000_000;
        let c = Challenge::new(Provider::Zoom, keys, now, "").expect("a challenge");
        let endpoint = crate::domain::endpoint::Endpoint {
            scheme: crate::domain::scheme::Scheme::preset("zoom"),
            secrets: vec![old, new],
            ..crate::domain::endpoint::Endpoint::catch_all()
        };
        let h = crate::domain::checks::evaluate(&as_received(&c), &endpoint, now)
            .handshake
            .expect("zoom");
        let answer = h.answer.expect("answered");
        assert!(
            c.judge(Some(answer.status), &[], answer.body.as_bytes(), false)
                .is_ok(),
            "{}",
            answer.body
        );
    }

    #[test]
    fn an_ordinary_delivery_is_no_handshake() {
        let d = request("POST", "", &[], r#"{"type":"invoice.paid","id":"evt_1"}"#);
        assert_eq!(respond(&d, &context(&[], None), Signed::NotChecked), None);
        let d = request("GET", "page=2", &[], "");
        assert_eq!(respond(&d, &context(&[], None), Signed::NotChecked), None);
    }

    #[test]
    fn zoom_is_answered_with_the_hmac_of_its_plain_token() {
        // Zoom's documented example: plainToken under the secret token, hex.
        let d = request(
            "POST",
            "",
            &[],
            r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#,
        );
        let secrets = [Secret::new("zoom_secret_token")];
        let h = respond(&d, &context(&secrets, None), Signed::Verified).expect("a handshake");
        let answer = h.answer.expect("answered");
        let expected = hex::encode(hmac_sha256(
            b"zoom_secret_token",
            &[b"qgg8vlvZRS6UYooatFL8Aw"],
        ));
        assert_eq!(
            answer.body,
            format!(r#"{{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"{expected}"}}"#)
        );
        assert_eq!(h.outcome, Outcome::Answered);
        assert_eq!(h.verified, Some(true));
        // Without a secret token there is nothing to answer with.
        let h = respond(&d, &context(&[], None), Signed::NotChecked).expect("a handshake");
        assert_eq!(h.outcome, Outcome::Refused);
        assert_eq!(h.answer.expect("refused").status, 403);
    }

    #[test]
    fn a_signed_handshake_whose_signature_fails_is_refused_never_answered() {
        let d = request(
            "POST",
            "",
            &[],
            r#"{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#,
        );
        let secrets = [Secret::new("s")];
        let h = respond(&d, &context(&secrets, None), Signed::Failed).expect("a handshake");
        assert_eq!(h.outcome, Outcome::Refused);
        let answer = h.answer.expect("an answer");
        assert_eq!(answer.status, 403);
        assert!(!answer.body.contains("3eZbrw1a"), "{}", answer.body);
        let h = respond(&d, &context(&[], None), Signed::NotChecked).expect("a handshake");
        assert_eq!(h.outcome, Outcome::Answered);
        assert_eq!(h.verified, Some(false));
        assert!(h.detail.contains("not verified"), "{}", h.detail);
    }

    #[test]
    fn meta_answers_only_its_own_verify_token() {
        let d = request(
            "GET",
            "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock",
            &[],
            "",
        );
        let token = Secret::new("meatyhamhock");
        let h = respond(&d, &context(&[], Some(&token)), Signed::NotChecked).expect("meta");
        assert_eq!(h.answer.expect("answered").body, "1158201444");
        let wrong = Secret::new("other");
        let h = respond(&d, &context(&[], Some(&wrong)), Signed::NotChecked).expect("meta");
        assert_eq!(h.outcome, Outcome::Refused);
        assert!(
            h.detail.contains("hub.verify_token did not match"),
            "{}",
            h.detail
        );
        assert!(!h.detail.contains("meatyhamhock"));
    }

    #[test]
    fn x_crc_answers_the_base64_hmac_under_the_consumer_secret() {
        let d = request("GET", "crc_token=abc%2B123&nonce=1", &[], "");
        let secrets = [Secret::new("consumer")];
        let h = respond(&d, &context(&secrets, None), Signed::NotChecked).expect("x");
        let mac = hmac_sha256(b"consumer", &[b"abc+123"]);
        let b64 = base64::engine::general_purpose::STANDARD.encode(mac);
        assert_eq!(
            h.answer.expect("answered").body,
            format!(r#"{{"response_token":"sha256={b64}"}}"#)
        );
    }

    #[test]
    fn an_endpoint_that_names_one_provider_answers_no_other() {
        let d = request("GET", "challenge=abc", &[], "");
        let mut ctx = context(&[], None);
        ctx.accept = Accept::Only(Provider::Slack);
        assert_eq!(respond(&d, &ctx, Signed::NotChecked), None);
        ctx.accept = Accept::Only(Provider::Dropbox);
        assert!(respond(&d, &ctx, Signed::NotChecked).is_some());
        ctx.accept = Accept::Off;
        assert_eq!(respond(&d, &ctx, Signed::NotChecked), None);
        assert_eq!(
            Accept::parse("event-grid"),
            Ok(Accept::Only(Provider::EventGrid))
        );
        assert!(
            Accept::parse("slak")
                .expect_err("a typo is refused")
                .contains("slack")
        );
    }

    #[test]
    fn sns_waits_for_the_user_and_graph_decodes_its_token() {
        let d = request(
            "POST",
            "",
            &[("x-amz-sns-message-type", "SubscriptionConfirmation")],
            r#"{"Type":"SubscriptionConfirmation","Token":"2336","TopicArn":"arn:aws:sns:us-west-2:123456789012:MyTopic","SubscribeURL":"https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&Token=2336"}"#,
        );
        let h = respond(&d, &context(&[], None), Signed::NotChecked).expect("sns");
        assert_eq!(h.outcome, Outcome::Awaiting);
        assert_eq!(h.answer.as_ref().map(|a| a.status), Some(200));
        assert!(
            h.confirm_url
                .as_deref()
                .is_some_and(|u| u.contains("ConfirmSubscription"))
        );
        let d = request(
            "POST",
            "validationToken=Validation%3A+Testing+client+application",
            &[],
            "",
        );
        let h = respond(&d, &context(&[], None), Signed::NotChecked).expect("graph");
        assert_eq!(
            h.answer.expect("answered").body,
            "Validation: Testing client application"
        );
    }
}
