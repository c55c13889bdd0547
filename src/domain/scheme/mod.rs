//! Signature schemes: one engine, a handful of families, presets as data.
//!
//! A *family* fixes how a signature is built (what bytes are signed, how the key is derived,
//! how the header is laid out). A [`Scheme`] is a family plus the names that vary between
//! providers (header names, encoding, prefix, tolerance). The presets (`standard-webhooks`,
//! `svix`, `stripe`, `github`, `shopify`, `slack`, `paddle`, `twilio`, `gitlab`, `discord`)
//! are plain values of [`Scheme`]; a `[[scheme]]` table in the config builds another one the
//! same way.
//!
//! A secret becomes a [`Key`]: an HMAC key, an ed25519 public key (verifies only), an ed25519
//! signing key, or a shared token (GitLab, which signs nothing). Every scheme can both verify
//! and sign: verification drives the checks, signing drives resend, probe and fixtures.
//! Comparisons are constant time.

pub mod ed25519;
pub mod twilio;

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
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
    /// The public URL then the sorted form parameters (or `bodySHA256` in the URL), HMAC-SHA1
    /// keyed by the auth token as UTF-8, header `<base64>`.
    Twilio,
    /// No signature: a shared token in a header, compared to the secret (GitLab).
    Token,
    /// `{ts}{body}`, ed25519 under the application's public key in hex, header `<hex>`.
    Discord,
    /// `{id}{ts}{body}` (Twitch EventSub: the message id, the RFC 3339 timestamp, the body),
    /// the secret as UTF-8, header `sha256=<hex>`.
    Twitch,
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
            Family::Twilio => "twilio",
            Family::Token => "token",
            Family::Discord => "discord",
            Family::Twitch => "twitch",
        }
    }

    /// Every family, for listings and tests.
    pub const ALL: [Family; 9] = [
        Family::StandardWebhooks,
        Family::Stripe,
        Family::HmacBody,
        Family::Slack,
        Family::Paddle,
        Family::Twilio,
        Family::Token,
        Family::Discord,
        Family::Twitch,
    ];
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
    /// For schemes that sign the request URL (Twilio): the URL the sender posts to, as it
    /// sees it (a tunnel's). Verifying takes its scheme, host and path (when it has one) with
    /// the delivery's query; signing takes it whole. `None`: the delivery's `Host` header.
    pub public_url: Option<String>,
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
    /// An ed25519 key that is not the right bytes in the right encoding.
    #[error("{0}")]
    BadKey(String),
    /// A public key verifies but cannot sign.
    #[error(
        "a public key ({0}) verifies but cannot sign: re-signing needs the sender's secret key ({1})"
    )]
    CannotSign(&'static str, &'static str),
    /// The scheme signs the request URL and none is known.
    #[error("{0} signs the URL it posts to, and no URL is known: give the public URL")]
    NoUrl(String),
}

/// A secret turned into what a scheme computes with.
#[derive(Clone)]
pub enum Key {
    /// An HMAC key.
    Mac(Vec<u8>),
    /// An ed25519 public key (`whpk_`, Discord's hex key): verifies only.
    Public(ed25519::PublicKey),
    /// An ed25519 signing key (`whsk_`, a 128-hex-digit secret key): signs and verifies.
    Signing(ed25519::SigningKey),
    /// A shared token, compared as it is.
    Token(Vec<u8>),
}

impl Key {
    /// The HMAC key, for keys that are one.
    pub fn mac(&self) -> Option<&[u8]> {
        match self {
            Key::Mac(k) => Some(k),
            _ => None,
        }
    }

    /// The ed25519 public key, for keys that have one.
    pub fn public(&self) -> Option<&ed25519::PublicKey> {
        match self {
            Key::Public(k) => Some(k),
            Key::Signing(k) => Some(k.public()),
            _ => None,
        }
    }

    /// Whether this key checks signatures of this kind.
    pub fn checks(&self, kind: SigKind) -> bool {
        match kind {
            SigKind::Mac => matches!(self, Key::Mac(_)),
            SigKind::Ed25519 => self.public().is_some(),
            SigKind::Token => matches!(self, Key::Token(_)),
        }
    }
}

/// What kind of signature a header entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigKind {
    /// An HMAC (`v1,` in Standard Webhooks, every HMAC family's entries).
    Mac,
    /// An ed25519 signature (`v1a,` in Standard Webhooks, Discord).
    Ed25519,
    /// A shared token (GitLab).
    Token,
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
    /// The decoded signatures that count for this family (`v1` entries, `h1` entries…), each
    /// with its kind (a Standard Webhooks header may mix `v1` and `v1a`).
    pub signatures: Vec<(SigKind, Vec<u8>)>,
    /// Entries that do not count (other versions) or could not be decoded, as written.
    pub ignored: Vec<String>,
}

/// What a scheme reads of a delivery, read once ([`Scheme::read`]) and handed to each check:
/// the signature header taken apart, the event id and the timestamp as the scheme carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading<'a> {
    /// The signature header taken apart, or why it could not be.
    pub signature: Result<ParsedSignature, HeaderError>,
    /// The event id from the scheme's header, when it has one.
    pub event_id: Option<&'a str>,
    /// The timestamp as written (its header, or inside the signature header).
    pub timestamp: Option<String>,
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
    /// The URL's `bodySHA256` is not the hash of the body received (Twilio): the body changed
    /// after it was signed.
    BodyHashMismatch {
        /// The hash in the URL.
        signed: String,
        /// The hash of the body received.
        received: String,
    },
}

type HmacSha256 = Hmac<Sha256>;
type HmacSha1 = Hmac<sha1::Sha1>;

/// HMAC-SHA1 of `message` under `key` (Twilio's default).
pub fn hmac_sha1(key: &[u8], message: &[u8]) -> Vec<u8> {
    let Ok(mut mac) = <HmacSha1 as KeyInit>::new_from_slice(key) else {
        return Vec::new();
    };
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

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
    /// `slack`, `paddle`, `twilio`, `gitlab`, `discord`).
    pub fn preset(name: &str) -> Option<Scheme> {
        presets()
            .into_iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// Turns a secret into a key, as this family's official libraries do. For Standard
    /// Webhooks the prefix says the kind: `whsec_` an HMAC secret, `whpk_` an ed25519 public
    /// key, `whsk_` an ed25519 secret key.
    pub fn key(&self, secret: &Secret) -> Result<Key, KeyError> {
        let raw = secret.expose();
        if raw.is_empty() {
            return Err(KeyError::Empty);
        }
        match self.family {
            Family::StandardWebhooks => {
                if let Some(b64) = raw.strip_prefix("whpk_") {
                    return base64_key(b64, |b| ed25519::PublicKey::from_bytes(b).map(Key::Public))
                        .ok_or_else(|| {
                            KeyError::BadKey(
                                "the `whpk_` key is not the base64 of a 32-byte ed25519 public key"
                                    .into(),
                            )
                        });
                }
                if let Some(b64) = raw.strip_prefix("whsk_") {
                    return base64_key(b64, |b| ed25519::SigningKey::from_bytes(b).map(Key::Signing))
                        .ok_or_else(|| {
                            KeyError::BadKey(
                                "the `whsk_` key is not the base64 of a 32-byte ed25519 seed (or of a 64-byte seed and public key)"
                                    .into(),
                            )
                        });
                }
                let b64 = raw.strip_prefix("whsec_").unwrap_or(raw);
                BASE64
                    .decode(b64.trim())
                    .map(Key::Mac)
                    .map_err(|_| KeyError::NotBase64)
            }
            Family::Discord => {
                let bytes = hex::decode(raw.trim()).unwrap_or_default();
                match bytes.len() {
                    32 => ed25519::PublicKey::from_bytes(&bytes).map(Key::Public),
                    64 => ed25519::SigningKey::from_bytes(&bytes).map(Key::Signing),
                    _ => None,
                }
                .ok_or_else(|| {
                    KeyError::BadKey(
                        "the key is not an application public key in hex (64 hex digits) or an ed25519 secret key in hex (128 digits)"
                            .into(),
                    )
                })
            }
            Family::Token => Ok(Key::Token(raw.as_bytes().to_vec())),
            _ => Ok(Key::Mac(raw.as_bytes().to_vec())),
        }
    }

    /// The exact bytes this family signs (Twilio's are built from the URL, see [`twilio`]).
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
            Family::Discord => out.extend_from_slice(timestamp.as_bytes()),
            Family::Twitch => {
                out.extend_from_slice(event_id.as_bytes());
                out.extend_from_slice(timestamp.as_bytes());
            }
            Family::HmacBody | Family::Twilio | Family::Token => {}
        }
        out.extend_from_slice(body);
        out
    }

    /// Whether this scheme signs a timestamp.
    pub fn signs_timestamp(&self) -> bool {
        !matches!(
            self.family,
            Family::HmacBody | Family::Twilio | Family::Token
        )
    }

    /// Whether the signed string includes the event id (so it must come from a header).
    pub fn signs_event_id(&self) -> bool {
        matches!(self.family, Family::StandardWebhooks | Family::Twitch)
    }

    /// A Unix time as this scheme writes it in its timestamp header: seconds, or RFC 3339 for
    /// Twitch.
    pub fn timestamp_string(&self, timestamp: i64) -> String {
        if self.family == Family::Twitch {
            return time::OffsetDateTime::from_unix_timestamp(timestamp)
                .ok()
                .and_then(|t| {
                    t.format(&time::format_description::well_known::Rfc3339)
                        .ok()
                })
                .unwrap_or_else(|| timestamp.to_string());
        }
        timestamp.to_string()
    }

    /// Whether this scheme's signature covers the body (GitLab's token does not).
    pub fn signs_body(&self) -> bool {
        self.family != Family::Token
    }

    /// The HMAC this scheme computes: SHA-256, or for Twilio SHA-1 unless the delivery's
    /// `X-Twilio-Webhooks-Signature-Settings` names `HMAC_SHA256`.
    pub fn mac(&self, key: &[u8], message: &[u8], delivery: Option<&Delivery>) -> Vec<u8> {
        if self.family == Family::Twilio && !twilio_sha256(delivery) {
            return hmac_sha1(key, message);
        }
        hmac_sha256(key, &[message])
    }

    /// The URL a delivery was signed over (Twilio), from the public URL or its headers.
    pub fn signed_url(&self, delivery: &Delivery) -> String {
        twilio::delivery_url(delivery, self.public_url.as_deref())
    }

    /// Where a sender posts `body` to `url`: for Twilio, a JSON body's hash joins the query.
    pub fn request_url(&self, url: &str, body: &[u8]) -> String {
        if self.family == Family::Twilio {
            twilio::request_url(url, body)
        } else {
            url.to_string()
        }
    }

    /// Takes the signature header apart. Entries that cannot be decoded are kept in `ignored`
    /// rather than failing the whole header, as the official libraries skip them.
    pub fn parse_header(&self, value: &[u8]) -> Result<ParsedSignature, HeaderError> {
        let text = std::str::from_utf8(value)
            .map_err(|_| HeaderError::NotText(self.signature_header.clone()))?;
        if self.family == Family::Token {
            return self.parse_token(text);
        }
        let text = text.trim();
        if text.is_empty() {
            return Err(self.malformed("it is empty"));
        }
        match self.family {
            Family::StandardWebhooks => self.parse_standard_webhooks(text),
            Family::Stripe | Family::Paddle => self.parse_keyed_entries(text),
            Family::Slack => match text.strip_prefix("v0=").and_then(decode_hex) {
                Some(bytes) => Ok(one_signature(SigKind::Mac, bytes)),
                None => Err(self.malformed("it is not of the form `v0=<hex>`")),
            },
            Family::Twilio => match BASE64.decode(text) {
                Ok(bytes) => Ok(one_signature(SigKind::Mac, bytes)),
                Err(_) => Err(self.malformed("the signature is not base64")),
            },
            Family::Discord => match decode_hex(text).filter(|b| b.len() == 64) {
                Some(bytes) => Ok(one_signature(SigKind::Ed25519, bytes)),
                None => {
                    Err(self.malformed("it is not a 64-byte ed25519 signature in hex (128 digits)"))
                }
            },
            Family::HmacBody | Family::Twitch => self.parse_prefixed(text),
            Family::Token => unreachable!("handled above"),
        }
    }

    /// The error for a signature header that cannot be taken apart, and why.
    fn malformed(&self, reason: &str) -> HeaderError {
        HeaderError::Malformed {
            header: self.signature_header.clone(),
            reason: reason.to_string(),
        }
    }

    /// A token header (GitLab's): the token itself, compared as sent.
    fn parse_token(&self, text: &str) -> Result<ParsedSignature, HeaderError> {
        // A token is compared as sent, spaces included: a stray newline is a real mismatch.
        if text.is_empty() {
            return Err(self.malformed("it is empty"));
        }
        Ok(one_signature(SigKind::Token, text.as_bytes().to_vec()))
    }

    /// A Standard Webhooks header: space-separated `v1,<base64>` (HMAC) and `v1a,<base64>`
    /// (ed25519) entries.
    fn parse_standard_webhooks(&self, text: &str) -> Result<ParsedSignature, HeaderError> {
        let mut parsed = ParsedSignature::default();
        for entry in text.split_ascii_whitespace() {
            let decoded = match entry.split_once(',') {
                Some(("v1", sig)) => BASE64.decode(sig).ok().map(|b| (SigKind::Mac, b)),
                Some(("v1a", sig)) => BASE64
                    .decode(sig)
                    .ok()
                    .filter(|b| b.len() == 64)
                    .map(|b| (SigKind::Ed25519, b)),
                _ => None,
            };
            match decoded {
                Some(sig) => parsed.signatures.push(sig),
                None => parsed.ignored.push(entry.to_string()),
            }
        }
        if parsed.signatures.is_empty() {
            return Err(self.malformed("it has no `v1,<base64>` or `v1a,<base64>` signature"));
        }
        Ok(parsed)
    }

    /// A Stripe header (`t=…,v1=<hex>,…`) or a Paddle one (`ts=…;h1=<hex>;…`): a timestamp and
    /// hex signatures, by key.
    fn parse_keyed_entries(&self, text: &str) -> Result<ParsedSignature, HeaderError> {
        let (separator, ts_key, sig_key) = if self.family == Family::Stripe {
            (',', "t", "v1")
        } else {
            (';', "ts", "h1")
        };
        let mut parsed = ParsedSignature::default();
        for entry in text.split(separator) {
            let entry = entry.trim();
            match entry.split_once('=') {
                Some((k, v)) if k == ts_key => parsed.timestamp = Some(v.to_string()),
                Some((k, v)) if k == sig_key => match decode_hex(v) {
                    Some(bytes) => parsed.signatures.push((SigKind::Mac, bytes)),
                    None => parsed.ignored.push(entry.to_string()),
                },
                _ => parsed.ignored.push(entry.to_string()),
            }
        }
        if parsed.timestamp.is_none() {
            return Err(self.malformed(&format!("it has no `{ts_key}=` timestamp")));
        }
        if parsed.signatures.is_empty() {
            return Err(self.malformed(&format!("it has no `{sig_key}=<hex>` signature")));
        }
        Ok(parsed)
    }

    /// An HMAC-of-the-body header: the scheme's prefix, then the signature in its encoding.
    fn parse_prefixed(&self, text: &str) -> Result<ParsedSignature, HeaderError> {
        let Some(encoded) = text.strip_prefix(self.prefix.as_str()) else {
            return Err(self.malformed(&format!("it does not start with `{}`", self.prefix)));
        };
        let decoded = match self.encoding {
            Encoding::Hex => decode_hex(encoded),
            Encoding::Base64 => BASE64.decode(encoded).ok(),
        };
        match decoded {
            Some(bytes) => Ok(one_signature(SigKind::Mac, bytes)),
            None => {
                let what = match self.encoding {
                    Encoding::Hex => "hex",
                    Encoding::Base64 => "base64",
                };
                Err(self.malformed(&format!("the signature is not {what}")))
            }
        }
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

    /// Reads the delivery's signature header, event id and timestamp, once for every check.
    pub fn read<'a>(&self, delivery: &'a Delivery) -> Reading<'a> {
        let signature = match delivery.header(&self.signature_header) {
            Some(value) => self.parse_header(value),
            None => Err(HeaderError::Missing(self.signature_header.clone())),
        };
        Reading {
            signature,
            event_id: self.event_id_from_headers(delivery),
            timestamp: self.timestamp_text(delivery),
        }
    }

    /// The strings a verifier accepts a signature over, for one delivery: one for most
    /// families, the URL with and without its port for Twilio.
    pub fn signed_strings(&self, delivery: &Delivery) -> Result<Vec<Vec<u8>>, Verification> {
        self.signed_strings_read(delivery, &self.read(delivery))
    }

    /// [`Scheme::signed_strings`] with the event id and timestamp already read.
    fn signed_strings_read(
        &self,
        delivery: &Delivery,
        reading: &Reading<'_>,
    ) -> Result<Vec<Vec<u8>>, Verification> {
        if self.family == Family::Twilio {
            let url = self.signed_url(delivery);
            let params = if twilio::body_hash_param(&url).is_some() {
                Vec::new()
            } else if is_form(delivery) {
                twilio::signed_params(&url, &delivery.body)
            } else {
                Vec::new()
            };
            return Ok(twilio::port_variants(&url)
                .iter()
                .map(|u| twilio::signed_string(u, &params))
                .collect());
        }
        let event_id = if self.signs_event_id() {
            match reading.event_id {
                Some(id) => id.to_string(),
                None => {
                    let name = self
                        .event_id_header
                        .clone()
                        .unwrap_or_else(|| "event id".into());
                    return Err(Verification::MissingInput(HeaderError::Missing(name)));
                }
            }
        } else {
            String::new()
        };
        let timestamp = if self.signs_timestamp() {
            match &reading.timestamp {
                Some(ts) => ts.clone(),
                None => {
                    let name = self
                        .timestamp_header
                        .clone()
                        .unwrap_or_else(|| self.signature_header.clone());
                    return Err(Verification::MissingInput(HeaderError::Missing(name)));
                }
            }
        } else {
            String::new()
        };
        Ok(vec![self.signed_payload(
            &event_id,
            &timestamp,
            &delivery.body,
        )])
    }

    /// Whether `key` made `signature` (of `kind`) over one of `messages`, in constant time for
    /// MACs and tokens.
    pub fn matches(
        &self,
        key: &Key,
        kind: SigKind,
        signature: &[u8],
        messages: &[Vec<u8>],
        delivery: Option<&Delivery>,
    ) -> bool {
        if !key.checks(kind) {
            return false;
        }
        match key {
            Key::Mac(k) => messages.iter().fold(false, |found, m| {
                constant_time_eq(&self.mac(k, m, delivery), signature) | found
            }),
            // Hash both sides so the comparison takes the same time whatever the lengths.
            Key::Token(t) => constant_time_eq(&Sha256::digest(t), &Sha256::digest(signature)),
            Key::Public(_) | Key::Signing(_) => key
                .public()
                .is_some_and(|p| messages.iter().any(|m| p.verifies(m, signature))),
        }
    }

    /// Verifies the delivery's signature against each secret, in constant time per comparison.
    pub fn verify(&self, delivery: &Delivery, secrets: &[Secret]) -> Verification {
        self.verify_read(delivery, &self.read(delivery), secrets)
    }

    /// [`Scheme::verify`] with the delivery already read ([`Scheme::read`]).
    pub fn verify_read(
        &self,
        delivery: &Delivery,
        reading: &Reading<'_>,
        secrets: &[Secret],
    ) -> Verification {
        let parsed = match &reading.signature {
            Ok(p) => p,
            Err(e) => return Verification::BadHeader(e.clone()),
        };
        let messages = match self.signed_strings_read(delivery, reading) {
            Ok(m) => m,
            Err(outcome) => return outcome,
        };
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
            // Compare against every signature without stopping early, so the time taken does
            // not tell which entry matched.
            let mut matched = None;
            for (signature_index, (kind, candidate)) in parsed.signatures.iter().enumerate() {
                if self.matches(&key, *kind, candidate, &messages, Some(delivery))
                    && matched.is_none()
                {
                    matched = Some(signature_index);
                }
            }
            if let Some(signature_index) = matched {
                if let Some(mismatch) = self.body_hash_mismatch(delivery) {
                    return mismatch;
                }
                return Verification::Verified {
                    secret_index,
                    signature_index,
                };
            }
        }
        if let Some(mismatch) = self.body_hash_mismatch(delivery) {
            return mismatch;
        }
        Verification::NoMatch {
            secrets_tried,
            signatures: parsed.signatures.len(),
            unusable_secrets,
        }
    }

    /// Twilio: the URL's `bodySHA256` against the body received.
    fn body_hash_mismatch(&self, delivery: &Delivery) -> Option<Verification> {
        if self.family != Family::Twilio {
            return None;
        }
        let signed = twilio::body_hash_param(&self.signed_url(delivery))?;
        let received = twilio::body_hash(&delivery.body);
        (!constant_time_eq(signed.to_ascii_lowercase().as_bytes(), received.as_bytes()))
            .then_some(Verification::BodyHashMismatch { signed, received })
    }

    /// Signs a body: returns the headers a sender of this scheme would set. Every secret gets
    /// its own signature where the family allows several (rotation); `hmac-body`, Slack,
    /// Twilio, GitLab and Discord headers hold one, so only the first secret is used there.
    /// Twilio signs [`Scheme::request_url`] of `public_url`.
    pub fn sign(
        &self,
        secrets: &[Secret],
        event_id: &str,
        timestamp: i64,
        body: &[u8],
    ) -> Result<Vec<Header>, KeyError> {
        self.sign_as(secrets, event_id, timestamp, body, false)
    }

    /// The headers [`Scheme::sign`] sets, with every signature forged: each MAC (or ed25519
    /// signature, or token) has one bit flipped in its middle byte before it is encoded in the
    /// scheme's own form (prefix, hex or base64 alphabet, padding), so the header is
    /// well-formed and no signature in it verifies, however a verifier decodes it. Changing a
    /// character of the text instead can leave the bytes alone: the last base64 character of a
    /// 32-byte MAC carries 2 padding bits that a lenient decoder drops.
    pub fn forge(
        &self,
        secrets: &[Secret],
        event_id: &str,
        timestamp: i64,
        body: &[u8],
    ) -> Result<Vec<Header>, KeyError> {
        self.sign_as(secrets, event_id, timestamp, body, true)
    }

    /// A timestamp offset, in seconds, that a verifier of this scheme refuses however the two
    /// clocks round: at least 10 minutes, and twice the tolerance. `None` when the scheme's
    /// libraries check no timestamp age.
    pub fn beyond_tolerance_secs(&self) -> Option<i64> {
        if !self.signs_timestamp() {
            return None;
        }
        let tolerance = i64::try_from(self.tolerance_secs?).unwrap_or(i64::MAX / 2);
        Some(tolerance.saturating_mul(2).max(600))
    }

    fn sign_as(
        &self,
        secrets: &[Secret],
        event_id: &str,
        timestamp: i64,
        body: &[u8],
        forged: bool,
    ) -> Result<Vec<Header>, KeyError> {
        let ts = self.timestamp_string(timestamp);
        let keys = secrets
            .iter()
            .map(|s| self.key(s))
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(KeyError::Empty);
        }
        let payload = match self.family {
            Family::Twilio => {
                let url = self
                    .public_url
                    .as_deref()
                    .ok_or_else(|| KeyError::NoUrl(self.label.clone()))?;
                let url = twilio::request_url(url, body);
                twilio::signed_string(&url, &twilio::signed_params(&url, body))
            }
            _ => self.signed_payload(event_id, &ts, body),
        };
        let entries = keys
            .iter()
            .map(|key| self.sign_entry(key, &payload, forged))
            .collect::<Result<Vec<_>, _>>()?;
        let mut headers = Vec::new();
        if let Some(id_header) = &self.event_id_header {
            headers.push(Header::new(id_header, event_id));
        }
        if let Some(ts_header) = &self.timestamp_header {
            headers.push(Header::new(ts_header, ts.as_str()));
        }
        let value = match self.family {
            Family::StandardWebhooks => entries.join(" "),
            Family::Stripe => format!("t={ts},{}", entries.join(",")),
            Family::Paddle => format!("ts={ts};{}", entries.join(";")),
            _ => entries.into_iter().next().unwrap_or_default(),
        };
        headers.push(Header::new(&self.signature_header, value));
        Ok(headers)
    }

    /// One key's entry in the signature header; `forged`: with one bit of its bytes flipped.
    fn sign_entry(&self, key: &Key, payload: &[u8], forged: bool) -> Result<String, KeyError> {
        let forge = |mut bytes: Vec<u8>| {
            if forged {
                flip_middle_bit(&mut bytes);
            }
            bytes
        };
        let signing = match key {
            Key::Signing(k) => Some(forge(k.sign(payload))),
            Key::Public(_) => {
                return Err(match self.family {
                    Family::Discord => KeyError::CannotSign(
                        "the application's public key",
                        "an ed25519 secret key in hex",
                    ),
                    _ => KeyError::CannotSign("`whpk_`", "`whsk_`"),
                });
            }
            // A token is sent as it is: GitLab signs nothing.
            Key::Token(t) if forged => return Ok(forged_token(t)),
            Key::Token(t) => return Ok(String::from_utf8_lossy(t).into_owned()),
            Key::Mac(_) => None,
        };
        let mac = || forge(self.mac(key.mac().unwrap_or_default(), payload, None));
        Ok(match (self.family, signing) {
            (Family::StandardWebhooks, Some(sig)) => format!("v1a,{}", BASE64.encode(sig)),
            (Family::StandardWebhooks, None) => format!("v1,{}", BASE64.encode(mac())),
            (Family::Discord, Some(sig)) => hex::encode(sig),
            (Family::Stripe, None) => format!("v1={}", hex::encode(mac())),
            (Family::Paddle, None) => format!("h1={}", hex::encode(mac())),
            (Family::Slack, None) => format!("v0={}", hex::encode(mac())),
            (Family::Twilio, None) => BASE64.encode(mac()),
            (Family::HmacBody | Family::Twitch, None) => match self.encoding {
                Encoding::Hex => format!("{}{}", self.prefix, hex::encode(mac())),
                Encoding::Base64 => format!("{}{}", self.prefix, BASE64.encode(mac())),
            },
            (_, Some(_)) => {
                return Err(KeyError::BadKey(format!(
                    "{} signs with an HMAC secret, not an ed25519 key",
                    self.label
                )));
            }
            (Family::Discord | Family::Token, None) => {
                return Err(KeyError::BadKey(format!(
                    "{} signs with an ed25519 key, not an HMAC secret",
                    self.label
                )));
            }
        })
    }
}

/// Flips the lowest bit of the middle byte: a MAC's or a signature's own bits, never padding.
fn flip_middle_bit(bytes: &mut [u8]) {
    let middle = bytes.len() / 2;
    if let Some(b) = bytes.get_mut(middle) {
        *b ^= 1;
    }
}

/// A token compared as text (GitLab's) with its middle character replaced by another of the
/// same kind, so the header stays printable and the token no longer matches.
fn forged_token(token: &[u8]) -> String {
    let mut text: Vec<char> = String::from_utf8_lossy(token).chars().collect();
    let middle = text.len() / 2;
    if let Some(c) = text.get_mut(middle) {
        *c = match *c {
            'a' => 'b',
            '0' => '1',
            c if c.is_ascii_digit() => '0',
            _ => 'a',
        };
    }
    text.into_iter().collect()
}

/// A key from base64 text (after its `whpk_`/`whsk_` prefix), if it decodes and makes one.
fn base64_key(text: &str, make: impl Fn(&[u8]) -> Option<Key>) -> Option<Key> {
    BASE64
        .decode(text.trim())
        .ok()
        .and_then(|bytes| make(&bytes))
}

/// Whether the delivery's body is a form Twilio signs the fields of.
fn is_form(delivery: &Delivery) -> bool {
    match delivery.header_str("content-type") {
        Some(ct) => ct
            .to_ascii_lowercase()
            .starts_with("application/x-www-form-urlencoded"),
        None => true,
    }
}

/// Whether a Twilio delivery names HMAC-SHA256 in its signature settings header.
fn twilio_sha256(delivery: Option<&Delivery>) -> bool {
    delivery
        .and_then(|d| d.header_str("x-twilio-webhooks-signature-settings"))
        .is_some_and(|settings| {
            settings.split(',').any(|part| {
                part.split_once('=').is_some_and(|(k, v)| {
                    k.trim() == "algorithm" && v.trim().eq_ignore_ascii_case("HMAC_SHA256")
                })
            })
        })
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    hex::decode(text.trim()).ok()
}

/// A header taken apart into one signature, of `kind`.
fn one_signature(kind: SigKind, bytes: Vec<u8>) -> ParsedSignature {
    ParsedSignature {
        signatures: vec![(kind, bytes)],
        ..ParsedSignature::default()
    }
}

/// Whether a header carries a signature (or a scheme's shared token): a preset's signature
/// header, or a name with `signature` or `hmac` in it. Its value is random per delivery, so it
/// is not put in the text index: there it was a third of the index's size.
pub fn is_signature_header(name: &str) -> bool {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let name = name.to_ascii_lowercase();
    name.contains("signature")
        || name.contains("hmac")
        || NAMES
            .get_or_init(|| presets().into_iter().map(|s| s.signature_header).collect())
            .contains(&name)
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
        public_url: None,
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
            public_url: None,
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
            public_url: None,
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
            public_url: None,
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
            public_url: None,
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
            public_url: None,
        },
        Scheme {
            name: "twilio".into(),
            label: "Twilio".into(),
            family: Family::Twilio,
            signature_header: "x-twilio-signature".into(),
            timestamp_header: None,
            // Twilio keeps this token the same across retries of one webhook.
            event_id_header: Some("i-twilio-idempotency-token".into()),
            event_type_header: None,
            encoding: Encoding::Base64,
            prefix: String::new(),
            tolerance_secs: None,
            future: FuturePolicy::Reject,
            public_url: None,
        },
        Scheme {
            name: "gitlab".into(),
            label: "GitLab".into(),
            family: Family::Token,
            signature_header: "x-gitlab-token".into(),
            timestamp_header: None,
            // GitLab keeps Idempotency-Key the same across retries of one event.
            event_id_header: Some("idempotency-key".into()),
            event_type_header: Some("x-gitlab-event".into()),
            encoding: Encoding::Hex,
            prefix: String::new(),
            tolerance_secs: None,
            future: FuturePolicy::Reject,
            public_url: None,
        },
        Scheme {
            name: "discord".into(),
            label: "Discord".into(),
            family: Family::Discord,
            signature_header: "x-signature-ed25519".into(),
            timestamp_header: Some("x-signature-timestamp".into()),
            event_id_header: None,
            event_type_header: None,
            encoding: Encoding::Hex,
            prefix: String::new(),
            // Discord's libraries check no age; hookscope still shows it.
            tolerance_secs: None,
            future: FuturePolicy::Warn,
            public_url: None,
        },
        Scheme {
            name: "zoom".into(),
            label: "Zoom".into(),
            // Zoom signs `v0:{x-zm-request-timestamp}:{body}` as Slack does, in its own headers.
            family: Family::Slack,
            signature_header: "x-zm-signature".into(),
            timestamp_header: Some("x-zm-request-timestamp".into()),
            event_id_header: None,
            event_type_header: None,
            encoding: Encoding::Hex,
            prefix: "v0=".into(),
            tolerance_secs: Some(300),
            future: FuturePolicy::Reject,
            public_url: None,
        },
        Scheme {
            name: "twitch".into(),
            label: "Twitch".into(),
            family: Family::Twitch,
            signature_header: "twitch-eventsub-message-signature".into(),
            timestamp_header: Some("twitch-eventsub-message-timestamp".into()),
            // Twitch keeps the message id the same when it resends a notification.
            event_id_header: Some("twitch-eventsub-message-id".into()),
            event_type_header: Some("twitch-eventsub-subscription-type".into()),
            encoding: Encoding::Hex,
            prefix: "sha256=".into(),
            // Twitch: reject messages older than 10 minutes.
            tolerance_secs: Some(600),
            future: FuturePolicy::Reject,
            public_url: None,
        },
        Scheme {
            name: "meta".into(),
            label: "Meta".into(),
            // Meta (WhatsApp, Instagram, Messenger) signs the body as GitHub does, keyed by
            // the app secret; the event lives in the body.
            family: Family::HmacBody,
            signature_header: "x-hub-signature-256".into(),
            timestamp_header: None,
            event_id_header: None,
            event_type_header: None,
            encoding: Encoding::Hex,
            prefix: "sha256=".into(),
            tolerance_secs: None,
            future: FuturePolicy::Reject,
            public_url: None,
        },
    ]
}

/// Guesses the scheme from the headers present, for paths with no scheme configured.
///
/// Known signature headers map to their preset; any other `*-signature` header whose value has
/// Stripe's `t=…,v1=…` layout is taken as a Stripe-style provider with that header name.
pub fn detect(delivery: &Delivery) -> Option<Scheme> {
    for preset in presets() {
        // GitHub and Meta share `x-hub-signature-256`; GitHub's deliveries name themselves
        // (`x-github-event`, `x-github-delivery`), Meta's carry neither.
        let shared_header_not_its_own = match preset.name.as_str() {
            "github" => {
                delivery.header("x-github-event").is_none()
                    && delivery.header("x-github-delivery").is_none()
            }
            _ => false,
        };
        if delivery.header(&preset.signature_header).is_some() && !shared_header_not_its_own {
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

/// Why [`detect`] found no scheme for `delivery`, in a few words for a one-line summary: a header
/// that looks like a signature but matches no preset is named, else there is none.
pub fn why_undetected(delivery: &Delivery) -> String {
    let looks_signed = |name: &str| {
        ["signature", "-sig", "hmac", "-token", "-digest"]
            .iter()
            .any(|word| name.contains(word))
    };
    match delivery.headers.iter().find(|h| looks_signed(&h.name)) {
        Some(h) => format!("headers match no preset: {}", h.name),
        None => "no signature header".into(),
    }
}

/// A fresh event id: `msg_` and 16 random hex digits.
pub fn new_event_id() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    format!("msg_{}", hex::encode(bytes))
}

/// A body with its event id replaced: the first JSON string `"old"` becomes `"new"`; a body
/// without it is returned as it is.
pub fn with_event_id(body: &[u8], old: &str, new: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    let quoted = format!("\"{old}\"");
    if text.contains(&quoted) {
        text.replacen(&quoted, &format!("\"{new}\""), 1)
            .into_bytes()
    } else {
        body.to_vec()
    }
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
        assert_eq!(parsed.signatures, vec![(SigKind::Mac, vec![0, 0, 0])]);
        assert_eq!(parsed.ignored.len(), 3);
    }

    #[test]
    fn stripe_header_without_v1_is_malformed_and_says_so() {
        let scheme = Scheme::preset("stripe").expect("preset");
        let err = scheme.parse_header(b"t=1,v0=abcd").expect_err("no v1");
        assert!(err.to_string().contains("no `v1=<hex>` signature"), "{err}");
    }

    /// RFC 8032 section 7.1 TEST 1's key, as Standard Webhooks and Discord write it.
    const SEED_HEX: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    const PUBLIC_HEX: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    fn b64_of_hex(h: &str) -> String {
        BASE64.encode(hex::decode(h).expect("hex"))
    }

    fn delivery_with(headers: Vec<Header>, body: &[u8], query: &str) -> Delivery {
        Delivery {
            received_at_ms: 0,
            method: "POST".into(),
            path: "/hook".into(),
            query: query.into(),
            headers,
            body: body.to_vec(),
            body_size: body.len() as u64,
            body_complete: true,
            remote_addr: None,
        }
    }

    /// A key each preset can sign with, and the one its receiver verifies with.
    fn keys_for(scheme: &Scheme) -> (Secret, Secret) {
        match scheme.family {
            Family::Discord => (
                Secret::new(format!("{SEED_HEX}{PUBLIC_HEX}")),
                Secret::new(PUBLIC_HEX),
            ),
            Family::Token => (Secret::new("glpat-token"), Secret::new("glpat-token")),
            _ => {
                let s = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
                (s.clone(), s)
            }
        }
    }

    #[test]
    fn signing_then_verifying_round_trips_for_every_preset() {
        for mut scheme in presets() {
            scheme.public_url = Some("https://hooks.example.com/hook".into());
            let (signing, verifying) = keys_for(&scheme);
            let body = b"{\"a\":1}";
            let headers = scheme
                .sign(std::slice::from_ref(&signing), "evt_1", 1_700_000_000, body)
                .expect("sign");
            let url = scheme.request_url("https://hooks.example.com/hook", body);
            let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
            let delivery = delivery_with(headers, body, query);
            assert!(
                matches!(
                    scheme.verify(&delivery, &[verifying]),
                    Verification::Verified { .. }
                ),
                "{} did not verify its own signature",
                scheme.name
            );
            assert_eq!(detect(&delivery).map(|s| s.name), Some(scheme.name.clone()));
        }
    }

    #[test]
    fn standard_webhooks_v1a_signs_with_whsk_and_verifies_with_whpk_only() {
        let scheme = Scheme::preset("standard-webhooks").expect("preset");
        let whsk = Secret::new(format!("whsk_{}", b64_of_hex(SEED_HEX)));
        let whpk = Secret::new(format!("whpk_{}", b64_of_hex(PUBLIC_HEX)));
        let whsec = Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let body = br#"{"type":"job.succeeded"}"#;
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let headers = scheme
            .sign(&[whsec.clone(), whsk], id, 1_614_265_330, body)
            .expect("sign");
        let signature = headers
            .iter()
            .find(|h| h.name == "webhook-signature")
            .map(Header::value_lossy)
            .expect("header");
        // The spec's shape: space-separated `version,base64` entries, v1 and v1a mixed.
        let entries: Vec<&str> = signature.split(' ').collect();
        assert_eq!(entries.len(), 2, "{signature}");
        assert!(entries[0].starts_with("v1,") && entries[1].starts_with("v1a,"));
        let v1a = BASE64.decode(&entries[1][4..]).expect("b64");
        assert_eq!(v1a.len(), 64);
        // The v1a entry is RFC 8032's ed25519 of `{id}.{ts}.{body}` under TEST 1's key.
        let message = [format!("{id}.1614265330.").as_bytes(), body].concat();
        let public =
            ed25519::PublicKey::from_bytes(&hex::decode(PUBLIC_HEX).expect("hex")).expect("key");
        assert!(public.verifies(&message, &v1a));

        let only_v1a = delivery_with(
            vec![
                Header::new("webhook-id", id),
                Header::new("webhook-timestamp", "1614265330"),
                Header::new("webhook-signature", entries[1]),
            ],
            body,
            "",
        );
        assert!(matches!(
            scheme.verify(&only_v1a, std::slice::from_ref(&whpk)),
            Verification::Verified { .. }
        ));
        assert!(
            matches!(
                scheme.verify(&only_v1a, std::slice::from_ref(&whsec)),
                Verification::NoMatch { .. }
            ),
            "a v1a entry is never accepted by an HMAC secret"
        );
        let mut only_v1 = only_v1a.clone();
        only_v1.headers[2] = Header::new("webhook-signature", entries[0]);
        assert!(
            matches!(
                scheme.verify(&only_v1, std::slice::from_ref(&whpk)),
                Verification::NoMatch { .. }
            ),
            "a v1 entry is never accepted by a public key"
        );
        assert!(matches!(
            scheme.sign(&[whpk], "msg", 1, body),
            Err(KeyError::CannotSign(..))
        ));
    }
}
