//! Handshakes: the challenge a provider sends before it will deliver, recognised from the
//! request alone and answered the way its provider documents (docs/webhooks.md has each rule).
//!
//! [`respond`] is pure: it takes the delivery, the endpoint's handshake settings and what the
//! signature check concluded, and gives the [`Handshake`] to record, with the exact answer to
//! send. A signed handshake (Slack, Zoom, Twitch) whose signature fails is refused, never
//! answered with its challenge; with no secret to check it against it is answered and said to be
//! unverified. AWS SNS and Event Grid's manual validation carry a URL to fetch: hookscope never
//! fetches it by itself, it is shown as [`Handshake::confirm_url`] for the user to confirm.
//!
//! The other side, hookscope playing the provider for the simulator and the probe, is a
//! [`Challenge`]: the handshake as the provider sends it, and [`Challenge::judge`] for the
//! developer's handler's answer.
//!
//! Each provider is a file of its own (`slack.rs`, …) holding one `Rules` value (`rules.rs`):
//! its names, how its handshake is recognised, answered and sent, and what a right answer to it
//! holds. [`Provider::ALL`] lists the providers in the order requests are recognised;
//! `decide.rs` holds what every provider's answer shares (the signature, a value to answer
//! with, the sentences), `challenge.rs` and `judge.rs` the simulator's side.

mod challenge;
mod decide;
mod judge;
mod rules;

mod cloudevents;
mod dropbox;
mod event_grid;
mod graph;
mod meta;
mod okta;
mod slack;
mod sns;
mod twitch;
mod x;
mod zoom;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use challenge::{Challenge, Keys};

use crate::domain::delivery::Delivery;
use crate::domain::json::Json;
use crate::domain::scheme::Secret;
use rules::{Request, Rules};

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

    /// The provider's handshake: its names, how it is recognised, answered and sent.
    fn rules(self) -> &'static Rules {
        match self {
            Provider::Cloudevents => &cloudevents::RULES,
            Provider::EventGrid => &event_grid::RULES,
            Provider::Slack => &slack::RULES,
            Provider::Graph => &graph::RULES,
            Provider::Meta => &meta::RULES,
            Provider::Zoom => &zoom::RULES,
            Provider::Twitch => &twitch::RULES,
            Provider::X => &x::RULES,
            Provider::Dropbox => &dropbox::RULES,
            Provider::Okta => &okta::RULES,
            Provider::Sns => &sns::RULES,
        }
    }

    /// The name in the config (`handshake = "slack"`), the JSON and the filter.
    pub fn name(self) -> &'static str {
        self.rules().name
    }

    /// The provider as people name it.
    pub fn label(self) -> &'static str {
        self.rules().label
    }

    /// What the provider calls its handshake.
    pub fn what(self) -> &'static str {
        self.rules().what
    }

    /// What carries the value the answer is made of, for a refusal's sentence.
    pub fn field(self) -> &'static str {
        self.rules().field
    }

    /// Whether the provider signs its handshake (with the scheme of its deliveries).
    pub fn signs(self) -> bool {
        self.rules().signs
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

impl Context<'_> {
    /// The secret an answer is made with (Zoom's, X's): the one that verified the signature (a
    /// rotation, several providers' secrets), else the first.
    fn answering_secret(&self) -> Option<&Secret> {
        self.matched_secret
            .and_then(|i| self.secrets.get(i))
            .or(self.secrets.first())
    }
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
    let request = Request::new(delivery, body);
    let (rules, asked) = Provider::ALL.into_iter().find_map(|provider| {
        let rules = provider.rules();
        (rules.recognise)(&request).map(|asked| (rules, asked))
    })?;
    if !context.accept.allows(rules.provider) {
        return None;
    }
    Some(decide::decide(rules, asked, context, signed))
}
