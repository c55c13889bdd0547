//! A provider's handshake as the provider sends it ([`Challenge`]), made with the [`Keys`] the
//! simulator and the probe know, and what a right answer to it holds ([`Expected`]). The judge
//! of an answer is in `judge.rs`; each provider's own challenge in its file.

use base64::Engine as _;

use super::Provider;
use crate::domain::delivery::Header;
use crate::domain::scheme::Secret;

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
    pub(super) expected: Expected,
}

/// What a right answer holds.
#[derive(Debug, Clone)]
pub(super) enum Expected {
    /// The body is exactly this text, and when a content type is named, sent as that type.
    Text {
        body: String,
        content_type: Option<&'static str>,
    },
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
pub(super) fn token(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    let _ = getrandom::fill(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A JSON body.
pub(super) fn json_body(value: serde_json::Value) -> Vec<u8> {
    value.to_string().into_bytes()
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

/// What one challenge is made from: the keys, a random value for the answer to hold, the time.
pub(super) struct Sending<'a> {
    /// Whose handshake, for the sentence when a key is missing.
    pub provider: Provider,
    /// The keys the caller knows.
    pub keys: Keys<'a>,
    /// The value the answer is made of (a challenge, a token), random.
    pub value: String,
    /// Now, in seconds, for the signatures and timestamps.
    pub now_secs: i64,
    /// Where SNS's SubscribeURL points.
    pub confirm_url: &'a str,
}

impl Sending<'_> {
    /// The signing secret, which this provider's handshake needs.
    pub fn secret(&self) -> Result<&Secret, String> {
        self.keys.secret.ok_or_else(|| {
            format!(
                "{}'s {} needs the secret",
                self.provider.label(),
                self.provider.what()
            )
        })
    }

    /// The headers that sign `body` under the secret: with the `preset` scheme, or the
    /// handler's own scheme when it is of the preset's family.
    pub fn signed(&self, preset: &str, id: &str, body: &[u8]) -> Result<Vec<Header>, String> {
        let secret = self.secret()?;
        let preset_scheme = crate::domain::scheme::Scheme::preset(preset)
            .ok_or_else(|| format!("the {preset} preset is missing"))?;
        let scheme = match self.keys.scheme {
            Some(own) if own.family == preset_scheme.family => own.clone(),
            _ => preset_scheme,
        };
        scheme
            .sign(std::slice::from_ref(secret), id, self.now_secs, body)
            .map_err(|e| e.to_string())
    }
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
        let sending = Sending {
            provider,
            keys,
            value: token(18),
            now_secs,
            confirm_url,
        };
        let mut challenge = Challenge {
            provider,
            method: "POST",
            query: None,
            headers: vec![Header::new("content-type", "application/json")],
            body: Vec::new(),
            expected: Expected::Text {
                body: sending.value.clone(),
                content_type: None,
            },
        };
        (provider.rules().send)(&mut challenge, &sending)?;
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
}
