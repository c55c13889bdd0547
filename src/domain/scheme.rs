//! Signature schemes: one engine, a handful of families, presets as data.
//!
//! A *family* fixes how a signature is built (what bytes are signed, how the key is derived,
//! how the header is laid out). A [`Scheme`] is a family plus the names that vary between
//! providers (header names, encoding, prefix, tolerance). The presets (`standard-webhooks`,
//! `svix`, `stripe`, `github`, `shopify`, `slack`, `paddle`) are plain values of [`Scheme`];
//! a `[[scheme]]` table in the config builds another one the same way.
//!
//! Every scheme can both verify and sign: verification drives the checks, signing drives
//! resend, probe and fixtures. Comparisons are constant time.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::domain::delivery::{Delivery, Header};

/// How a family of providers builds its signatures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// `{id}.{ts}.{body}`, base64 key after `whsec_`, header `v1,<base64>` (space-separated list).
    StandardWebhooks,
    /// `{t}.{body}`, the whole secret as UTF-8, header `t=<ts>,v1=<hex>[,v1=…]`.
    Stripe,
    /// The raw body, the secret as UTF-8, header `<prefix><hex|base64>`.
    HmacBody,
    /// `v0:{ts}:{body}`, the secret as UTF-8, header `v0=<hex>`.
    Slack,
    /// `{ts}:{body}`, the secret as UTF-8, header `ts=<ts>;h1=<hex>[;h1=…]`.
    Paddle,
}

impl Family {
    /// The name used in the config file.
    pub fn config_name(self) -> &'static str {
        match self {
            Family::StandardWebhooks => "standard-webhooks",
            Family::Stripe => "stripe",
            Family::HmacBody => "hmac-body",
            Family::Slack => "slack",
            Family::Paddle => "paddle",
        }
    }
}

/// How the signature bytes are written in the header (the `hmac-body` family lets you choose).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Lowercase hexadecimal (uppercase is accepted when verifying).
    #[default]
    Hex,
    /// Standard base64 with padding.
    Base64,
}

/// What a timestamp beyond the tolerance *in the future* means for a scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuturePolicy {
    /// The official libraries reject it, as they reject a stale one.
    Reject,
    /// The official libraries accept it (Stripe, Paddle): hookscope warns.
    Warn,
}

/// A signature scheme: a family and the names that vary between providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    /// The name users type (`stripe`, or a custom `[[scheme]]` name).
    pub name: String,
    /// The name people know the scheme by, for sentences ("Standard Webhooks").
    pub label: String,
    /// How signatures are built.
    pub family: Family,
    /// The header carrying the signature.
    pub signature_header: String,
    /// The header carrying the timestamp, for families that keep it apart from the signature.
    pub timestamp_header: Option<String>,
    /// The header carrying the event id; `None` when the id lives in the body.
    pub event_id_header: Option<String>,
    /// The header naming the event type, when the provider sends one.
    pub event_type_header: Option<String>,
    /// How signature bytes are encoded (only the `hmac-body` family varies).
    pub encoding: Encoding,
    /// A literal prefix before the encoded signature (`sha256=` for GitHub).
    pub prefix: String,
    /// The tolerance the official libraries apply, or `None` when no timestamp is signed.
    pub tolerance_secs: Option<u64>,
    /// What a future timestamp beyond the tolerance means.
    pub future: FuturePolicy,
}

/// A signing secret. Its `Debug` never prints the value, so it cannot leak through logs.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself. Call only where the value is needed (HMAC keys, an explicit reveal).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A masked form safe to show: the `whsec_` style prefix and the last two characters.
    pub fn masked(&self) -> String {
        let prefix = self.0.find('_').map(|i| &self.0[..=i]).unwrap_or("");
        let tail: String = self
            .0
            .chars()
            .rev()
            .take(2)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if self.0.chars().count() <= 6 {
            return format!("{prefix}…");
        }
        format!("{prefix}…{tail}")
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(redacted)")
    }
}

/// Why a secret could not be turned into an HMAC key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// A Standard Webhooks secret must be base64 after the optional `whsec_` prefix.
    #[error(
        "the secret is not valid base64 after the `whsec_` prefix, as Standard Webhooks keys must be"
    )]
    NotBase64,
    /// An empty secret cannot authenticate anything.
    #[error("the secret is empty")]
    Empty,
}

/// Why a signature header could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The header is not there at all.
    #[error("the {0} header is missing")]
    Missing(String),
    /// The header is there but is not text.
    #[error("the {0} header is not valid UTF-8 text")]
    NotText(String),
    /// The header is there but does not have the family's layout.
    #[error("the {header} header is malformed: {reason}")]
    Malformed {
        /// The header name.
        header: String,
        /// What is wrong, in a phrase.
        reason: String,
    },
}

/// A signature header taken apart.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParsedSignature {
    /// The timestamp embedded in the header (Stripe `t=`, Paddle `ts=`), as written.
    pub timestamp: Option<String>,
    /// The decoded signatures that count for this family (`v1` entries, `h1` entries…).
    pub signatures: Vec<Vec<u8>>,
    /// Entries that do not count (other versions) or could not be decoded, as written.
    pub ignored: Vec<String>,
}

/// The outcome of verifying a delivery's signature with a set of secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// A signature matched: which secret (index into the list) and which signature in the header.
    Verified {
        /// Index of the secret that matched.
        secret_index: usize,
        /// Index (among the counted signatures) of the one that matched.
        signature_index: usize,
    },
    /// Nothing matched.
    NoMatch {
        /// How many secrets were tried (those that could be turned into keys).
        secrets_tried: usize,
        /// How many signatures were in the header.
        signatures: usize,
        /// Secrets that could not be used, with why.
        unusable_secrets: Vec<(usize, KeyError)>,
    },
    /// The header could not be read.
    BadHeader(HeaderError),
    /// The signed string needs a header (id or timestamp) that is missing.
    MissingInput(HeaderError),
}

type HmacSha256 = Hmac<Sha256>;

/// HMAC-SHA256 of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[&[u8]]) -> Vec<u8> {
    // HMAC accepts keys of any length, so `new_from_slice` cannot fail here; fall back to an
    // empty MAC rather than panic if the crate ever changes that.
    let Ok(mut mac) = <HmacSha256 as KeyInit>::new_from_slice(key) else {
        return Vec::new();
    };
    for part in message {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

/// Compares two byte strings in constant time (the length is not secret).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

impl Scheme {
    /// Looks up a preset by name (`standard-webhooks`, `svix`, `stripe`, `github`, `shopify`,
    /// `slack`, `paddle`).
    pub fn preset(name: &str) -> Option<Scheme> {
        presets()
            .into_iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// Derives the HMAC key from a secret, as this family's official libraries do.
    pub fn key(&self, secret: &Secret) -> Result<Vec<u8>, KeyError> {
        let raw = secret.expose();
        if raw.is_empty() {
            return Err(KeyError::Empty);
        }
        match self.family {
            Family::StandardWebhooks => {
                let b64 = raw.strip_prefix("whsec_").unwrap_or(raw);
                BASE64.decode(b64.trim()).map_err(|_| KeyError::NotBase64)
            }
            _ => Ok(raw.as_bytes().to_vec()),
        }
    }

    /// The exact bytes this family signs.
    pub fn signed_payload(&self, event_id: &str, timestamp: &str, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(body.len() + event_id.len() + timestamp.len() + 4);
        match self.family {
            Family::StandardWebhooks => {
                out.extend_from_slice(event_id.as_bytes());
                out.push(b'.');
                out.extend_from_slice(timestamp.as_bytes());
                out.push(b'.');
            }
            Family::Stripe => {
                out.extend_from_slice(timestamp.as_bytes());
                out.push(b'.');
            }
            Family::Slack => {
                out.extend_from_slice(b"v0:");
                out.extend_from_slice(timestamp.as_bytes());
                out.push(b':');
            }
            Family::Paddle => {
                out.extend_from_slice(timestamp.as_bytes());
                out.push(b':');
            }
            Family::HmacBody => {}
        }
        out.extend_from_slice(body);
        out
    }

    /// Whether this scheme signs a timestamp.
    pub fn signs_timestamp(&self) -> bool {
        !matches!(self.family, Family::HmacBody)
    }

    /// Whether the signed string includes the event id (so it must come from a header).
    pub fn signs_event_id(&self) -> bool {
        matches!(self.family, Family::StandardWebhooks)
    }

    /// Takes the signature header apart. Entries that cannot be decoded are kept in `ignored`
    /// rather than failing the whole header, as the official libraries skip them.
    pub fn parse_header(&self, value: &[u8]) -> Result<ParsedSignature, HeaderError> {
        let name = &self.signature_header;
        let text = std::str::from_utf8(value).map_err(|_| HeaderError::NotText(name.clone()))?;
        let text = text.trim();
        let malformed = |reason: &str| HeaderError::Malformed {
            header: name.clone(),
            reason: reason.to_string(),
        };
        if text.is_empty() {
            return Err(malformed("it is empty"));
        }
        let mut parsed = ParsedSignature::default();
        match self.family {
            Family::StandardWebhooks => {
                for entry in text.split_ascii_whitespace() {
                    match entry.split_once(',') {
                        Some(("v1", sig)) => match BASE64.decode(sig) {
                            Ok(bytes) => parsed.signatures.push(bytes),
                            Err(_) => parsed.ignored.push(entry.to_string()),
                        },
                        _ => parsed.ignored.push(entry.to_string()),
                    }
                }
                if parsed.signatures.is_empty() {
                    return Err(malformed("it has no `v1,<base64>` signature"));
                }
            }
            Family::Stripe | Family::Paddle => {
                let (separator, ts_key, sig_key) = if self.family == Family::Stripe {
                    (',', "t", "v1")
                } else {
                    (';', "ts", "h1")
                };
                for entry in text.split(separator) {
                    let entry = entry.trim();
                    match entry.split_once('=') {
                        Some((k, v)) if k == ts_key => parsed.timestamp = Some(v.to_string()),
                        Some((k, v)) if k == sig_key => match decode_hex(v) {
                            Some(bytes) => parsed.signatures.push(bytes),
                            None => parsed.ignored.push(entry.to_string()),
                        },
                        _ => parsed.ignored.push(entry.to_string()),
                    }
                }
                if parsed.timestamp.is_none() {
                    return Err(malformed(&format!("it has no `{ts_key}=` timestamp")));
                }
                if parsed.signatures.is_empty() {
                    return Err(malformed(&format!("it has no `{sig_key}=<hex>` signature")));
                }
            }
            Family::Slack => match text.strip_prefix("v0=").and_then(decode_hex) {
                Some(bytes) => parsed.signatures.push(bytes),
                None => return Err(malformed("it is not of the form `v0=<hex>`")),
            },
            Family::HmacBody => {
                let Some(encoded) = text.strip_prefix(self.prefix.as_str()) else {
                    return Err(malformed(&format!(
                        "it does not start with `{}`",
                        self.prefix
                    )));
                };
                let decoded = match self.encoding {
                    Encoding::Hex => decode_hex(encoded),
                    Encoding::Base64 => BASE64.decode(encoded).ok(),
                };
                match decoded {
                    Some(bytes) => parsed.signatures.push(bytes),
                    None => {
                        let what = match self.encoding {
                            Encoding::Hex => "hex",
                            Encoding::Base64 => "base64",
                        };
                        return Err(malformed(&format!("the signature is not {what}")));
                    }
                }
            }
        }
        Ok(parsed)
    }

    /// The event id as the scheme carries it in a header, if it does.
    pub fn event_id_from_headers<'a>(&self, delivery: &'a Delivery) -> Option<&'a str> {
        self.event_id_header
            .as_deref()
            .and_then(|h| delivery.header_str(h))
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    /// The timestamp as written in the delivery (header or inside the signature header).
    pub fn timestamp_text(&self, delivery: &Delivery) -> Option<String> {
        if let Some(h) = &self.timestamp_header {
            return delivery.header_str(h).map(|s| s.trim().to_string());
        }
        match self.family {
            Family::Stripe | Family::Paddle => {
                let value = delivery.header(&self.signature_header)?;
                // A timestamp is still worth reporting when the signatures are broken, so read it
                // leniently rather than through `parse_header`.
                let text = std::str::from_utf8(value).ok()?;
                let (separator, key) = if self.family == Family::Stripe {
                    (',', "t=")
                } else {
                    (';', "ts=")
                };
                text.split(separator)
                    .find_map(|e| e.trim().strip_prefix(key))
                    .map(|s| s.trim().to_string())
            }
            _ => None,
        }
    }

    /// Verifies the delivery's signature against each secret, in constant time per comparison.
    pub fn verify(&self, delivery: &Delivery, secrets: &[Secret]) -> Verification {
        let Some(value) = delivery.header(&self.signature_header) else {
            return Verification::BadHeader(HeaderError::Missing(self.signature_header.clone()));
        };
        let parsed = match self.parse_header(value) {
            Ok(p) => p,
            Err(e) => return Verification::BadHeader(e),
        };
        let event_id = if self.signs_event_id() {
            match self.event_id_from_headers(delivery) {
                Some(id) => id.to_string(),
                None => {
                    let name = self
                        .event_id_header
                        .clone()
                        .unwrap_or_else(|| "event id".into());
                    return Verification::MissingInput(HeaderError::Missing(name));
                }
            }
        } else {
            String::new()
        };
        let timestamp = if self.signs_timestamp() {
            match parsed
                .timestamp
                .clone()
                .or_else(|| self.timestamp_text(delivery))
            {
                Some(ts) => ts,
                None => {
                    let name = self
                        .timestamp_header
                        .clone()
                        .unwrap_or_else(|| self.signature_header.clone());
                    return Verification::MissingInput(HeaderError::Missing(name));
                }
            }
        } else {
            String::new()
        };
        let payload = self.signed_payload(&event_id, &timestamp, &delivery.body);
        let mut unusable_secrets = Vec::new();
        let mut secrets_tried = 0;
        for (secret_index, secret) in secrets.iter().enumerate() {
            let key = match self.key(secret) {
                Ok(k) => k,
                Err(e) => {
                    unusable_secrets.push((secret_index, e));
                    continue;
                }
            };
            secrets_tried += 1;
            let expected = hmac_sha256(&key, &[&payload]);
            // Compare against every signature without stopping early, so the time taken does
            // not tell which entry matched.
            let mut matched = None;
            for (signature_index, candidate) in parsed.signatures.iter().enumerate() {
                if constant_time_eq(&expected, candidate) && matched.is_none() {
                    matched = Some(signature_index);
                }
            }
            if let Some(signature_index) = matched {
                return Verification::Verified {
                    secret_index,
                    signature_index,
                };
            }
        }
        Verification::NoMatch {
            secrets_tried,
            signatures: parsed.signatures.len(),
            unusable_secrets,
        }
    }

    /// Signs a body: returns the headers a sender of this scheme would set. Every secret gets
    /// its own signature where the family allows several (rotation); `hmac-body`, Slack and
    /// GitHub-style headers hold one, so only the first secret is used there.
    pub fn sign(
        &self,
        secrets: &[Secret],
        event_id: &str,
        timestamp: i64,
        body: &[u8],
    ) -> Result<Vec<Header>, KeyError> {
        let ts = timestamp.to_string();
        let payload = self.signed_payload(event_id, &ts, body);
        let mut macs = Vec::new();
        for secret in secrets {
            macs.push(hmac_sha256(&self.key(secret)?, &[&payload]));
        }
        let Some(first) = macs.first() else {
            return Err(KeyError::Empty);
        };
        let mut headers = Vec::new();
        if let Some(id_header) = &self.event_id_header {
            headers.push(Header::new(id_header, event_id));
        }
        if let Some(ts_header) = &self.timestamp_header {
            headers.push(Header::new(ts_header, ts.as_str()));
        }
        let value = match self.family {
            Family::StandardWebhooks => macs
                .iter()
                .map(|m| format!("v1,{}", BASE64.encode(m)))
                .collect::<Vec<_>>()
                .join(" "),
            Family::Stripe => {
                let sigs: Vec<String> = macs
                    .iter()
                    .map(|m| format!("v1={}", hex::encode(m)))
                    .collect();
                format!("t={ts},{}", sigs.join(","))
            }
            Family::Paddle => {
                let sigs: Vec<String> = macs
                    .iter()
                    .map(|m| format!("h1={}", hex::encode(m)))
                    .collect();
                format!("ts={ts};{}", sigs.join(";"))
            }
            Family::Slack => format!("v0={}", hex::encode(first)),
            Family::HmacBody => match self.encoding {
                Encoding::Hex => format!("{}{}", self.prefix, hex::encode(first)),
                Encoding::Base64 => format!("{}{}", self.prefix, BASE64.encode(first)),
            },
        };
        headers.push(Header::new(&self.signature_header, value));
        Ok(headers)
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    hex::decode(text.trim()).ok()
}

/// The built-in presets, as data.
pub fn presets() -> Vec<Scheme> {
    let standard = |name: &str, label: &str, prefix: &str| Scheme {
        name: name.into(),
        label: label.into(),
        family: Family::StandardWebhooks,
        signature_header: format!("{prefix}-signature"),
        timestamp_header: Some(format!("{prefix}-timestamp")),
        event_id_header: Some(format!("{prefix}-id")),
        event_type_header: None,
        encoding: Encoding::Base64,
        prefix: String::new(),
        tolerance_secs: Some(300),
        future: FuturePolicy::Reject,
    };
    vec![
        standard("standard-webhooks", "Standard Webhooks", "webhook"),
        standard("svix", "Svix", "svix"),
        Scheme {
            name: "stripe".into(),
            label: "Stripe".into(),
            family: Family::Stripe,
            signature_header: "stripe-signature".into(),
            timestamp_header: None,
            event_id_header: None,
            event_type_header: None,
            encoding: Encoding::Hex,
            prefix: String::new(),
            tolerance_secs: Some(300),
            future: FuturePolicy::Warn,
        },
        Scheme {
            name: "github".into(),
            label: "GitHub".into(),
            family: Family::HmacBody,
            signature_header: "x-hub-signature-256".into(),
            timestamp_header: None,
            event_id_header: Some("x-github-delivery".into()),
            event_type_header: Some("x-github-event".into()),
            encoding: Encoding::Hex,
            prefix: "sha256=".into(),
            tolerance_secs: None,
            future: FuturePolicy::Reject,
        },
        Scheme {
            name: "shopify".into(),
            label: "Shopify".into(),
            family: Family::HmacBody,
            signature_header: "x-shopify-hmac-sha256".into(),
            timestamp_header: None,
            event_id_header: Some("x-shopify-webhook-id".into()),
            event_type_header: Some("x-shopify-topic".into()),
            encoding: Encoding::Base64,
            prefix: String::new(),
            tolerance_secs: None,
            future: FuturePolicy::Reject,
        },
        Scheme {
            name: "slack".into(),
            label: "Slack".into(),
            family: Family::Slack,
            signature_header: "x-slack-signature".into(),
            timestamp_header: Some("x-slack-request-timestamp".into()),
            event_id_header: None,
            event_type_header: None,
            encoding: Encoding::Hex,
            prefix: "v0=".into(),
            tolerance_secs: Some(300),
            future: FuturePolicy::Reject,
        },
        Scheme {
            name: "paddle".into(),
            label: "Paddle".into(),
            family: Family::Paddle,
            signature_header: "paddle-signature".into(),
            timestamp_header: None,
            event_id_header: None,
            event_type_header: None,
            encoding: Encoding::Hex,
            prefix: String::new(),
            tolerance_secs: Some(5),
            future: FuturePolicy::Warn,
        },
    ]
}

/// Guesses the scheme from the headers present, for paths with no scheme configured.
///
/// Known signature headers map to their preset; any other `*-signature` header whose value has
/// Stripe's `t=…,v1=…` layout is taken as a Stripe-style provider with that header name.
pub fn detect(delivery: &Delivery) -> Option<Scheme> {
    for preset in presets() {
        if delivery.header(&preset.signature_header).is_some() {
            return Some(preset);
        }
    }
    delivery.headers.iter().find_map(|h| {
        let value = std::str::from_utf8(&h.value).ok()?;
        let stripe_like = h.name.ends_with("-signature")
            && value.trim_start().starts_with("t=")
            && value.contains(",v1=");
        stripe_like.then(|| {
            let mut scheme = Scheme::preset("stripe")?;
            scheme.name = format!("stripe-style ({})", h.name);
            scheme.label = format!("Stripe-style ({})", h.name);
            scheme.signature_header = h.name.clone();
            Some(scheme)
        })?
    })
}

/// A fresh event id: `msg_` and 16 random hex digits.
pub fn new_event_id() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    format!("msg_{}", hex::encode(bytes))
}

/// A Standard Webhooks style secret: `whsec_` and 32 random bytes in base64.
pub fn generate_secret() -> Secret {
    let mut bytes = [0u8; 32];
    // The OS random source does not fail on the platforms we build for; if it ever did, an
    // all-zero key would be obvious in the config rather than silently weak.
    let _ = getrandom::fill(&mut bytes);
    Secret::new(format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_and_mask_never_show_the_value() {
        let s = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        assert_eq!(format!("{s:?}"), "Secret(redacted)");
        assert_eq!(s.masked(), "whsec_…Sw");
        assert!(!Secret::new("abc").masked().contains("abc"));
    }

    #[test]
    fn standard_webhooks_header_skips_other_versions_and_garbage() {
        let scheme = Scheme::preset("standard-webhooks").expect("preset");
        let parsed = scheme
            .parse_header(b"v1a,abc v2,zzz v1,!!notbase64 v1,AAAA")
            .expect("has one good v1");
        assert_eq!(parsed.signatures, vec![vec![0, 0, 0]]);
        assert_eq!(parsed.ignored.len(), 3);
    }

    #[test]
    fn stripe_header_without_v1_is_malformed_and_says_so() {
        let scheme = Scheme::preset("stripe").expect("preset");
        let err = scheme.parse_header(b"t=1,v0=abcd").expect_err("no v1");
        assert!(err.to_string().contains("no `v1=<hex>` signature"), "{err}");
    }

    #[test]
    fn signing_then_verifying_round_trips_for_every_preset() {
        for scheme in presets() {
            let secrets = [Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")];
            let headers = scheme
                .sign(&secrets, "evt_1", 1_700_000_000, b"{\"a\":1}")
                .expect("sign");
            let delivery = Delivery {
                received_at_ms: 0,
                method: "POST".into(),
                path: "/".into(),
                query: String::new(),
                headers,
                body: b"{\"a\":1}".to_vec(),
                body_size: 7,
                body_complete: true,
                remote_addr: None,
            };
            assert!(
                matches!(
                    scheme.verify(&delivery, &secrets),
                    Verification::Verified { .. }
                ),
                "{} did not verify its own signature",
                scheme.name
            );
            assert_eq!(detect(&delivery).map(|s| s.name), Some(scheme.name.clone()));
        }
    }
}
