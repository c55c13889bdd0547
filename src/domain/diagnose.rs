//! Signature diagnosis: when a signature fails, re-compute it under the usual mistakes and say
//! which one reproduces what was received.
//!
//! Every hypothesis is one HMAC (or a few) over a variant of the signed bytes, compared against
//! every token of the received header in every common encoding. The first hypothesis that
//! reproduces a received signature is the cause; the list of what was tried is kept either way,
//! so "nothing matched" is still informative.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};

use crate::domain::delivery::Delivery;
use crate::domain::pretty::pretty_json;
use crate::domain::scheme::{
    self, Encoding, Family, Key, Scheme, Secret, SigKind, constant_time_eq, twilio,
};

/// What the diagnosis found, as a code scripts can branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The signature is over a re-serialised form of the body.
    BodyReserialized,
    /// The secret was turned into a key the wrong way.
    KeyDerivation,
    /// The right signature, written in the wrong encoding, case or prefix.
    Encoding,
    /// The signed string follows another scheme's template.
    #[serde(rename = "template")]
    TemplateMismatch,
    /// The timestamp in the signed string was in milliseconds.
    TimestampMs,
    /// A trailing newline was added or stripped.
    TrailingNewline,
    /// Line endings were converted.
    LineEndings,
    /// The delivery is signed with another scheme than the endpoint's.
    WrongScheme,
    /// Another configured secret (another endpoint's) signed it.
    OtherSecret,
    /// Another hash algorithm.
    Algorithm,
    /// The URL signed is not the one checked: the public URL, its scheme or its host differ
    /// (Twilio signs the URL it posts to).
    PublicUrlMismatch,
    /// The header's signatures are of another kind than the keys: `v1a` (ed25519) entries
    /// with only HMAC secrets, or `v1` entries with only public keys.
    KeyKind,
    /// Nothing reproduced the signature (also what an unknown code reads as).
    #[serde(other)]
    Unknown,
}

impl Cause {
    /// Every cause, for listings and tests.
    pub const ALL: [Cause; 13] = [
        Cause::BodyReserialized,
        Cause::KeyDerivation,
        Cause::Encoding,
        Cause::TemplateMismatch,
        Cause::TimestampMs,
        Cause::TrailingNewline,
        Cause::LineEndings,
        Cause::WrongScheme,
        Cause::OtherSecret,
        Cause::Algorithm,
        Cause::PublicUrlMismatch,
        Cause::KeyKind,
        Cause::Unknown,
    ];

    /// The code as written in JSON, without a serde round trip.
    pub fn code(self) -> &'static str {
        match self {
            Cause::BodyReserialized => "body_reserialized",
            Cause::KeyDerivation => "key_derivation",
            Cause::Encoding => "encoding",
            Cause::TemplateMismatch => "template",
            Cause::TimestampMs => "timestamp_ms",
            Cause::TrailingNewline => "trailing_newline",
            Cause::LineEndings => "line_endings",
            Cause::WrongScheme => "wrong_scheme",
            Cause::OtherSecret => "other_secret",
            Cause::Algorithm => "algorithm",
            Cause::PublicUrlMismatch => "public_url_mismatch",
            Cause::KeyKind => "key_kind",
            Cause::Unknown => "unknown",
        }
    }
}

/// The diagnosis of a failed signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The cause, as a code.
    pub cause: Cause,
    /// One sentence a developer can act on.
    pub detail: String,
    /// Every hypothesis tried, in order.
    pub tried: Vec<String>,
    /// The string hookscope expected to be signed (escaped, long bodies folded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_signed: Option<String>,
    /// The string the sender actually signed, when a hypothesis reproduced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_signed: Option<String>,
    /// The signature hookscope expected in the header (with the first secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The signature received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<String>,
    /// The secret the comparison used, by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// A secret from elsewhere in the configuration, with a label saying where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelledSecret {
    /// Where it comes from: `secret #2 of endpoint /hooks/acme`.
    pub label: String,
    /// The secret.
    pub secret: Secret,
}

/// The ways a signature can be written, for comparing against received tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    HexLower,
    HexUpper,
    Base64,
    Base64NoPad,
    Base64Url,
    Base64UrlNoPad,
}

impl Written {
    const ALL: [Written; 6] = [
        Written::HexLower,
        Written::HexUpper,
        Written::Base64,
        Written::Base64NoPad,
        Written::Base64Url,
        Written::Base64UrlNoPad,
    ];

    fn write(self, mac: &[u8]) -> String {
        match self {
            Written::HexLower => hex::encode(mac),
            Written::HexUpper => hex::encode_upper(mac),
            Written::Base64 => STANDARD.encode(mac),
            Written::Base64NoPad => STANDARD_NO_PAD.encode(mac),
            Written::Base64Url => URL_SAFE.encode(mac),
            Written::Base64UrlNoPad => URL_SAFE_NO_PAD.encode(mac),
        }
    }

    fn read(self, token: &str) -> Option<Vec<u8>> {
        match self {
            Written::HexLower | Written::HexUpper => hex::decode(token).ok(),
            Written::Base64 => STANDARD.decode(token).ok(),
            Written::Base64NoPad => STANDARD_NO_PAD.decode(token).ok(),
            Written::Base64Url => URL_SAFE.decode(token).ok(),
            Written::Base64UrlNoPad => URL_SAFE_NO_PAD.decode(token).ok(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Written::HexLower => "lowercase hex",
            Written::HexUpper => "uppercase hex",
            Written::Base64 => "base64",
            Written::Base64NoPad => "base64 without padding",
            Written::Base64Url => "URL-safe base64",
            Written::Base64UrlNoPad => "URL-safe base64 without padding",
        }
    }
}

/// The received header cut into every piece that could be a signature.
struct Tokens(Vec<String>);

impl Tokens {
    fn from_header(value: &str) -> Tokens {
        let mut tokens = vec![value.trim().to_string()];
        for piece in value.split(|c: char| c.is_whitespace() || c == ',' || c == ';') {
            let piece = piece.trim();
            if piece.is_empty() {
                continue;
            }
            tokens.push(piece.to_string());
            if let Some((_, rest)) = piece.split_once('=') {
                tokens.push(rest.to_string());
            }
        }
        tokens.sort();
        tokens.dedup();
        Tokens(tokens)
    }

    /// Which token (and in which writing) equals the MAC.
    fn find(&self, mac: &[u8]) -> Option<(Written, &str)> {
        Written::ALL.iter().find_map(|w| {
            let written = w.write(mac);
            self.0
                .iter()
                .find(|t| constant_time_eq(t.as_bytes(), written.as_bytes()))
                .map(|t| (*w, t.as_str()))
        })
    }

    /// Which token (and in which writing) is an ed25519 signature of `message` by `key`.
    fn find_ed25519(
        &self,
        key: &scheme::ed25519::PublicKey,
        message: &[u8],
    ) -> Option<(Written, &str)> {
        Written::ALL.iter().find_map(|w| {
            self.0
                .iter()
                .find(|t| w.read(t).is_some_and(|sig| key.verifies(message, &sig)))
                .map(|t| (*w, t.as_str()))
        })
    }
}

/// The scheme's own way of writing its signature.
fn native_writing(scheme: &Scheme) -> Written {
    match (scheme.family, scheme.encoding) {
        (Family::StandardWebhooks | Family::Twilio, _) | (Family::HmacBody, Encoding::Base64) => {
            Written::Base64
        }
        _ => Written::HexLower,
    }
}

/// The signature value as the scheme writes it in its header, for one MAC (or ed25519
/// signature, for `ed25519`).
fn header_form(scheme: &Scheme, mac: &[u8], ed25519: bool) -> String {
    let encoded = native_writing(scheme).write(mac);
    match scheme.family {
        Family::StandardWebhooks if ed25519 => format!("v1a,{encoded}"),
        Family::StandardWebhooks => format!("v1,{encoded}"),
        Family::Twilio | Family::Discord | Family::Token => encoded,
        Family::Stripe => format!("v1={encoded}"),
        Family::Paddle => format!("h1={encoded}"),
        Family::Slack => format!("v0={encoded}"),
        Family::HmacBody | Family::Twitch => format!("{}{encoded}", scheme.prefix),
    }
}

/// The received signature as it appears for the scheme (its first counted entry).
fn received_form(scheme: &Scheme, header: &str) -> String {
    let (separator, marker): (fn(char) -> bool, &str) = match scheme.family {
        Family::StandardWebhooks => (char::is_whitespace, "v1,"),
        Family::Stripe => (|c| c == ',', "v1="),
        Family::Paddle => (|c| c == ';', "h1="),
        Family::Slack | Family::HmacBody | Family::Twilio | Family::Discord | Family::Twitch => {
            return header.trim().to_string();
        }
        // A GitLab token is the secret itself: never shown.
        Family::Token => return String::new(),
    };
    header
        .split(separator)
        .map(str::trim)
        .find(|entry| entry.starts_with(marker))
        .unwrap_or(header.trim())
        .to_string()
}

/// Escapes bytes for display (`\n`, `\r`, `\xNN`) and folds the middle of long strings.
pub fn escape_folded(bytes: &[u8], keep: usize) -> String {
    let escape = |part: &[u8]| {
        let mut out = String::new();
        for chunk in part.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                    c => out.push(c),
                }
            }
            for b in chunk.invalid() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
        out
    };
    if bytes.len() <= keep {
        return escape(bytes);
    }
    let head = keep * 3 / 4;
    let tail = keep - head;
    let folded = bytes.len() - head - tail;
    format!(
        "{} … ({folded} bytes folded) … {}",
        escape(&bytes[..head]),
        escape(&bytes[bytes.len() - tail..])
    )
}

/// HMAC with another algorithm, for signatures whose length says it.
fn hmac_other(algorithm: &str, key: &[u8], message: &[u8]) -> Option<Vec<u8>> {
    fn run<M: Mac + KeyInit>(key: &[u8], message: &[u8]) -> Option<Vec<u8>> {
        let mut mac = <M as KeyInit>::new_from_slice(key).ok()?;
        mac.update(message);
        Some(mac.finalize().into_bytes().to_vec())
    }
    match algorithm {
        "SHA-1" => run::<Hmac<sha1::Sha1>>(key, message),
        "SHA-384" => run::<Hmac<sha2::Sha384>>(key, message),
        "SHA-512" => run::<Hmac<sha2::Sha512>>(key, message),
        _ => None,
    }
}

/// Body variants a re-serialiser produces, with their names.
fn reserialisations(body: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let Ok(text) = std::str::from_utf8(body) else {
        return Vec::new();
    };
    let Some(pretty) = pretty_json(text) else {
        return Vec::new();
    };
    let mut variants: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let compact: String = pretty
        .spans
        .iter()
        .map(|(s, e, _)| &pretty.text[*s..*e])
        .collect();
    // Python's json.dumps default: ", " and ": " separators, key order kept.
    let mut python = String::with_capacity(compact.len() + compact.len() / 8);
    for (s, e, token) in &pretty.spans {
        let piece = &pretty.text[*s..*e];
        python.push_str(piece);
        if *token == crate::domain::pretty::Token::Punct && (piece == "," || piece == ":") {
            python.push(' ');
        }
    }
    variants.push(("compact JSON (whitespace removed)", compact.into_bytes()));
    variants.push((
        "pretty-printed JSON (2-space indent)",
        pretty.text.clone().into_bytes(),
    ));
    variants.push((
        "pretty-printed JSON (4-space indent)",
        pretty.text.replace("\n  ", "\n    ").into_bytes(),
    ));
    variants.push((
        "JSON with Python's default \", \" and \": \" separators",
        python.into_bytes(),
    ));
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
        // serde_json's map is ordered by key: this is the "keys sorted" re-serialisation.
        if let Ok(sorted) = serde_json::to_vec(&value) {
            variants.push(("compact JSON with keys sorted", sorted));
        }
        if let Ok(sorted) = serde_json::to_vec_pretty(&value) {
            variants.push(("pretty-printed JSON with keys sorted", sorted));
        }
    }
    variants.retain(|(_, v)| v.as_slice() != body);
    variants.dedup_by(|a, b| a.1 == b.1);
    variants
}

/// The received signature's tokens and the hypotheses tried so far.
struct Attempt {
    tokens: Tokens,
    tried: Vec<String>,
}

struct Found {
    cause: Cause,
    detail: String,
    sender_signed: Option<Vec<u8>>,
}

impl Attempt {
    /// Tries one hypothesis: a key and signed bytes; returns the writing that matched.
    fn test(
        &mut self,
        what: String,
        ctx: &Context<'_>,
        key: &Key,
        payload: &[u8],
    ) -> Option<(Written, String)> {
        self.tried.push(what);
        let found = match key {
            Key::Mac(k) => self
                .tokens
                .find(&ctx.scheme.mac(k, payload, Some(ctx.delivery))),
            Key::Public(_) | Key::Signing(_) => self.tokens.find_ed25519(key.public()?, payload),
            Key::Token(_) => None,
        };
        found.map(|(w, t)| (w, t.to_string()))
    }
}

/// Diagnoses a failed signature. `secrets` are the endpoint's; `others` are every other
/// configured secret. Returns `None` when the signature actually verifies.
pub fn diagnose(
    scheme: &Scheme,
    delivery: &Delivery,
    secrets: &[Secret],
    others: &[LabelledSecret],
) -> Option<Diagnosis> {
    let reading = scheme.read(delivery);
    if matches!(
        scheme.verify_read(delivery, &reading, secrets),
        scheme::Verification::Verified { .. }
    ) {
        return None;
    }
    Some(diagnose_failed(scheme, delivery, &reading, secrets, others))
}

/// [`diagnose`] of a signature already found failing, with the delivery already read
/// ([`Scheme::read`]): the checks' path, which verified it once already.
pub fn diagnose_failed(
    scheme: &Scheme,
    delivery: &Delivery,
    reading: &scheme::Reading<'_>,
    secrets: &[Secret],
    others: &[LabelledSecret],
) -> Diagnosis {
    let header = delivery
        .header(&scheme.signature_header)
        .map(|v| String::from_utf8_lossy(v).into_owned());
    let (event_id, timestamp) = (
        reading.event_id.unwrap_or_default().to_string(),
        reading.timestamp.clone().unwrap_or_default(),
    );
    let expected_payload = expected_payload(scheme, delivery, &event_id, &timestamp);
    let mut diagnosis = Diagnosis {
        cause: Cause::Unknown,
        detail: String::new(),
        tried: Vec::new(),
        // GitLab signs nothing: there is no signed string, and the token is a secret.
        expected_signed: scheme
            .signs_body()
            .then(|| escape_folded(&expected_payload, 400)),
        sender_signed: None,
        expected: expected_signature(scheme, delivery, secrets, &expected_payload),
        received: header.as_deref().map(|h| received_form(scheme, h)),
        secret: (!secrets.is_empty()).then(|| "secret #1".to_string()),
    };
    let mut attempt = Attempt {
        tokens: Tokens::from_header(header.as_deref().unwrap_or("")),
        tried: Vec::new(),
    };
    let context = Context {
        scheme,
        delivery,
        secrets,
        others,
        event_id: &event_id,
        timestamp: &timestamp,
        payload: expected_payload,
        keys: labelled_keys(scheme, secrets),
    };
    let found = find_cause(&mut attempt, &context, header.is_some());
    diagnosis.tried = attempt.tried;
    match found {
        Some(found) => {
            diagnosis.cause = found.cause;
            diagnosis.detail = found.detail;
            diagnosis.sender_signed = found.sender_signed.map(|p| escape_folded(&p, 400));
        }
        None => diagnosis.detail = nothing_reproduces(scheme, diagnosis.tried.len()),
    }
    diagnosis
}

/// The string the scheme signs, as hookscope computes it (for Twilio, the first URL form it
/// tries).
fn expected_payload(
    scheme: &Scheme,
    delivery: &Delivery,
    event_id: &str,
    timestamp: &str,
) -> Vec<u8> {
    match scheme.family {
        Family::Twilio => scheme
            .signed_strings(delivery)
            .ok()
            .and_then(|s| s.into_iter().next())
            .unwrap_or_default(),
        _ => scheme.signed_payload(event_id, timestamp, &delivery.body),
    }
}

/// The signature the first secret makes over `payload`, as the header writes it (`None` when it
/// is not a usable key, or is a public key or a token, which cannot sign).
fn expected_signature(
    scheme: &Scheme,
    delivery: &Delivery,
    secrets: &[Secret],
    payload: &[u8],
) -> Option<String> {
    let first_key = secrets.first().and_then(|s| scheme.key(s).ok());
    first_key.as_ref().and_then(|k| match k {
        Key::Mac(k) => Some(header_form(
            scheme,
            &scheme.mac(k, payload, Some(delivery)),
            false,
        )),
        Key::Signing(k) => Some(header_form(scheme, &k.sign(payload), true)),
        Key::Public(_) | Key::Token(_) => None,
    })
}

/// Each secret the scheme can turn into a key, with its label (`secret #1`, …).
fn labelled_keys(scheme: &Scheme, secrets: &[Secret]) -> Vec<(String, Key)> {
    secrets
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            scheme
                .key(s)
                .ok()
                .map(|k| (format!("secret #{}", i + 1), k))
        })
        .collect()
}

/// The sentence when none of the `tried` hypotheses reproduces the received signature: what
/// was tried, and what is left for the scheme's family.
fn nothing_reproduces(scheme: &Scheme, tried: usize) -> String {
    let (kinds, secret) = match scheme.family {
        Family::Twilio => (
            "other URLs (the local one, http and https, other hosts, with and without the port), the body's hash, other secrets, other schemes, encodings",
            "the auth token differs from the sender's, or the form parameters differ from what was signed",
        ),
        Family::Token => (
            "whitespace around the token, other secrets, other schemes",
            "the token set at the sender differs from this endpoint's",
        ),
        _ => (
            "re-serialised bodies, key derivations, encodings, templates, millisecond timestamps, newlines, line endings, other schemes, other secrets, other algorithms",
            "the secret differs from the sender's, or the bytes differ from what was signed in a way no common mistake explains",
        ),
    };
    format!("None of {tried} hypotheses reproduces the received signature ({kinds}): {secret}.")
}

/// What every hypothesis reads: the delivery, the scheme, the secrets and the signed parts.
struct Context<'a> {
    scheme: &'a Scheme,
    delivery: &'a Delivery,
    secrets: &'a [Secret],
    others: &'a [LabelledSecret],
    event_id: &'a str,
    timestamp: &'a str,
    /// The string the scheme signs, as hookscope computes it.
    payload: Vec<u8>,
    /// Each usable secret as the scheme turns it into a key, with its label.
    keys: Vec<(String, Key)>,
}

impl Context<'_> {
    /// The HMAC keys, with their labels.
    fn mac_keys(&self) -> impl Iterator<Item = (&String, &[u8])> {
        self.keys
            .iter()
            .filter_map(|(label, key)| key.mac().map(|k| (label, k)))
    }
}

impl Context<'_> {
    fn signed(&self, body: &[u8]) -> Vec<u8> {
        self.scheme
            .signed_payload(self.event_id, self.timestamp, body)
    }
}

/// One variant of the signed string: what it is, its bytes, and the sentence when it matches
/// (`{secret}` stands for the secret's label).
struct Variant {
    what: String,
    payload: Vec<u8>,
    detail: String,
}

/// Builds the variants of one hypothesis from the context.
type VariantsOf = fn(&Context<'_>) -> Vec<Variant>;

/// The hypotheses that change the signed string, each with the cause it proves. Every key is
/// tried with every variant, in this order; the first match is the cause.
const PAYLOAD_HYPOTHESES: &[(Cause, VariantsOf)] = &[
    (Cause::BodyReserialized, reserialised_body),
    (Cause::TemplateMismatch, other_templates),
    (Cause::TimestampMs, other_time_unit),
    (Cause::TrailingNewline, trailing_newlines),
    (Cause::LineEndings, line_endings),
];

/// The hypotheses tried once (not per key), in order, before the per-key ones. Each one that
/// does not apply to the scheme's family returns `None` without trying anything.
const WHOLE_HYPOTHESES: &[fn(&mut Attempt, &Context<'_>) -> Option<Found>] = &[
    key_kind,
    other_secret,
    token_whitespace,
    public_url,
    twilio_body_hash,
    other_encoding,
    key_derivation,
];

fn find_cause(attempt: &mut Attempt, ctx: &Context<'_>, header_present: bool) -> Option<Found> {
    if let Some(found) = wrong_scheme(attempt, ctx) {
        return Some(found);
    }
    if !header_present {
        return None;
    }
    for hypothesis in WHOLE_HYPOTHESES {
        if let Some(found) = hypothesis(attempt, ctx) {
            return Some(found);
        }
    }
    // Twilio signs a URL and GitLab nothing: the body-template hypotheses do not apply.
    if matches!(ctx.scheme.family, Family::Twilio | Family::Token) {
        return None;
    }
    for (secret_label, key) in &ctx.keys {
        for (cause, variants) in PAYLOAD_HYPOTHESES {
            for variant in variants(ctx) {
                if attempt
                    .test(variant.what, ctx, key, &variant.payload)
                    .is_some()
                {
                    return Some(Found {
                        cause: *cause,
                        detail: variant.detail.replace("{secret}", secret_label),
                        sender_signed: Some(variant.payload),
                    });
                }
            }
        }
        if let Some(found) = key
            .mac()
            .and_then(|k| other_algorithm(attempt, ctx, secret_label, k))
        {
            return Some(found);
        }
    }
    None
}

/// Another scheme's headers, verifying with these secrets.
fn wrong_scheme(attempt: &mut Attempt, ctx: &Context<'_>) -> Option<Found> {
    let (scheme, delivery) = (ctx.scheme, ctx.delivery);
    let other = scheme::detect(delivery)
        .filter(|d| d.family != scheme.family || d.signature_header != scheme.signature_header)?;
    attempt.tried.push(format!(
        "the delivery as {} ({} header)",
        other.label, other.signature_header
    ));
    let scheme::Verification::Verified { secret_index, .. } = other.verify(delivery, ctx.secrets)
    else {
        return None;
    };
    Some(Found {
        cause: Cause::WrongScheme,
        detail: format!(
            "This delivery is signed as {} (its {} header verifies with secret #{}), not as {}: set this endpoint's scheme to \"{}\".",
            other.label,
            other.signature_header,
            secret_index + 1,
            scheme.label,
            other.name
        ),
        sender_signed: None,
    })
}

/// Another configured secret (another endpoint's, or one rotated out).
fn other_secret(attempt: &mut Attempt, ctx: &Context<'_>) -> Option<Found> {
    for other in ctx.others {
        attempt
            .tried
            .push(format!("{} of another endpoint", other.label));
        if let scheme::Verification::Verified { .. } = ctx
            .scheme
            .verify(ctx.delivery, std::slice::from_ref(&other.secret))
        {
            return Some(Found {
                cause: Cause::OtherSecret,
                detail: format!(
                    "The signature verifies with {}, not with this endpoint's secrets: the sender uses another endpoint's secret, or an old one after a rotation; add it to this endpoint or fix the sender.",
                    other.label
                ),
                sender_signed: None,
            });
        }
    }
    None
}

/// The right signature, written another way (encoding, case, prefix).
fn other_encoding(attempt: &mut Attempt, ctx: &Context<'_>) -> Option<Found> {
    let (scheme, label) = (ctx.scheme, &ctx.scheme.label);
    for (secret_label, key) in ctx.mac_keys() {
        let mac = ctx.scheme.mac(key, &ctx.payload, Some(ctx.delivery));
        attempt.tried.push(format!(
            "the expected signature with {secret_label} in any encoding"
        ));
        let Some((written, token)) = attempt.tokens.find(&mac).map(|(w, t)| (w, t.to_string()))
        else {
            continue;
        };
        let native = native_writing(scheme);
        let detail = if written == native {
            format!(
                "The signature itself is right ({secret_label}), but the {} header is not laid out as {label} expects: it reads `{}` where `{}` is expected (a missing or extra prefix such as `sha256=`, `v1,` or `v0=`).",
                scheme.signature_header,
                fold(&token, 80),
                fold(&header_form(scheme, &mac, false), 80)
            )
        } else {
            format!(
                "The signature itself is right ({secret_label}) but written in {} where {label} expects {}: fix the encoding on the side that writes or compares it.",
                written.name(),
                native.name()
            )
        };
        return Some(Found {
            cause: Cause::Encoding,
            detail,
            sender_signed: None,
        });
    }
    None
}

/// Signatures of one kind, keys of another: `v1a` (ed25519) entries checked with HMAC secrets,
/// or `v1` entries with public keys only.
fn key_kind(attempt: &mut Attempt, ctx: &Context<'_>) -> Option<Found> {
    let scheme = ctx.scheme;
    if scheme.family != Family::StandardWebhooks || ctx.keys.is_empty() {
        return None;
    }
    let value = ctx.delivery.header(&scheme.signature_header)?;
    let parsed = scheme.parse_header(value).ok()?;
    attempt
        .tried
        .push("the kinds of the header's signatures against the kinds of the keys".into());
    let kinds = |kind| parsed.signatures.iter().any(|(k, _)| *k == kind);
    let keys_check = |kind| ctx.keys.iter().any(|(_, key)| key.checks(kind));
    let (macs, ed25519) = (kinds(SigKind::Mac), kinds(SigKind::Ed25519));
    let detail = if ed25519 && !macs && !keys_check(SigKind::Ed25519) {
        format!(
            "The {} header carries only `v1a` (ed25519) signatures, and this endpoint's secrets are HMAC secrets (`whsec_`), which never accept one: add the sender's public key (`whpk_…`) to the endpoint's secrets.",
            scheme.signature_header
        )
    } else if macs && !ed25519 && !keys_check(SigKind::Mac) {
        format!(
            "The {} header carries only `v1` (HMAC) signatures, and this endpoint's keys are ed25519 keys (`whpk_`/`whsk_`), which never accept one: add the sender's `whsec_` secret.",
            scheme.signature_header
        )
    } else {
        return None;
    };
    Some(Found {
        cause: Cause::KeyKind,
        detail,
        sender_signed: None,
    })
}

/// GitLab: the token received equals a secret apart from whitespace at its ends (a copied
/// token that kept its newline). Neither token is shown.
fn token_whitespace(attempt: &mut Attempt, ctx: &Context<'_>) -> Option<Found> {
    if ctx.scheme.family != Family::Token {
        return None;
    }
    let received = ctx.delivery.header(&ctx.scheme.signature_header)?;
    let received = String::from_utf8_lossy(received);
    for (index, secret) in ctx.secrets.iter().enumerate() {
        attempt.tried.push(format!(
            "the token against secret #{} with whitespace at the ends ignored",
            index + 1
        ));
        let (sent, configured) = (received.trim(), secret.expose().trim());
        if !sent.is_empty() && constant_time_eq(sent.as_bytes(), configured.as_bytes()) {
            let side = if received.len() != sent.len() {
                "the token the sender sends"
            } else {
                "the configured secret"
            };
            return Some(Found {
                cause: Cause::TrailingNewline,
                detail: format!(
                    "The {} header equals secret #{} except for spaces or a newline at its ends, in {side}: a token copied with its line break; trim it where it is set.",
                    ctx.scheme.signature_header,
                    index + 1
                ),
                sender_signed: None,
            });
        }
    }
    None
}

/// Twilio: the signature verifies for another URL than the one checked: the local one, the
/// other scheme (http/https), or another host.
fn public_url(attempt: &mut Attempt, ctx: &Context<'_>) -> Option<Found> {
    let (scheme, delivery) = (ctx.scheme, ctx.delivery);
    if scheme.family != Family::Twilio {
        return None;
    }
    let checked = scheme.signed_url(delivery);
    let mut candidates = vec![twilio::local_url(delivery, None, None)];
    for proto in ["https", "http"] {
        candidates.push(twilio::local_url(delivery, Some(proto), None));
    }
    let hosts: Vec<&str> = ["host", "x-forwarded-host", "x-original-host"]
        .iter()
        .filter_map(|h| delivery.header_str(h))
        .collect();
    if let Some((proto, _)) = twilio::origin(&checked) {
        let other = if proto == "https" { "http" } else { "https" };
        for host in &hosts {
            candidates.push(twilio::local_url(delivery, Some(&proto), Some(host)));
            candidates.push(twilio::local_url(delivery, Some(other), Some(host)));
        }
        let mut flipped = scheme.clone();
        flipped.public_url =
            Some(checked.replacen(&format!("{proto}://"), &format!("{other}://"), 1));
        candidates.push(flipped.signed_url(delivery));
    }
    candidates.retain(|c| *c != checked);
    candidates.dedup();
    let params = if twilio::body_hash_param(&checked).is_some() {
        Vec::new()
    } else {
        twilio::signed_params(&checked, &delivery.body)
    };
    for candidate in candidates {
        for url in twilio::port_variants(&candidate) {
            let payload = twilio::signed_string(&url, &params);
            for (label, key) in &ctx.keys {
                if attempt
                    .test(format!("the URL {url} with {label}"), ctx, key, &payload)
                    .is_none()
                {
                    continue;
                }
                let fix = match twilio::origin(&url) {
                    Some((proto, host)) => format!(
                        "set this endpoint's public URL (public_url) to \"{proto}://{host}\""
                    ),
                    None => "set this endpoint's public URL (public_url)".to_string(),
                };
                return Some(Found {
                    cause: Cause::PublicUrlMismatch,
                    detail: format!(
                        "The signature verifies with {label} for the URL {url}, not for {checked}, the one checked: Twilio signs the URL it posts to (a tunnel's public URL, with its scheme and host), so {fix}."
                    ),
                    sender_signed: Some(payload),
                });
            }
        }
    }
    None
}

/// Twilio: a JSON body whose `bodySHA256` does not match; say which re-serialisation does.
fn twilio_body_hash(attempt: &mut Attempt, ctx: &Context<'_>) -> Option<Found> {
    if ctx.scheme.family != Family::Twilio {
        return None;
    }
    let signed = twilio::body_hash_param(&ctx.scheme.signed_url(ctx.delivery))?;
    let signed = signed.to_ascii_lowercase();
    if twilio::body_hash(&ctx.delivery.body) == signed {
        return None;
    }
    for (how, body) in reserialisations(&ctx.delivery.body) {
        attempt
            .tried
            .push(format!("bodySHA256 of the body as {how}"));
        if twilio::body_hash(&body) == signed {
            return Some(Found {
                cause: Cause::BodyReserialized,
                detail: format!(
                    "The URL's bodySHA256 is the hash of the body re-serialised as {how}, not of the bytes received: something between Twilio and the verifier parsed and re-serialised the JSON. Hash the raw body bytes."
                ),
                sender_signed: Some(body),
            });
        }
    }
    None
}

/// The ways a secret is commonly turned into a key other than the scheme's own.
fn key_variants(family: Family, raw: &str) -> Vec<(&'static str, Vec<u8>)> {
    let stripped = raw.strip_prefix("whsec_");
    let mut variants: Vec<(&str, Vec<u8>)> = Vec::new();
    if family == Family::StandardWebhooks {
        variants.push((
            "the whole secret as UTF-8 text, `whsec_` included",
            raw.as_bytes().to_vec(),
        ));
        if let Some(s) = stripped {
            variants.push((
                "the secret after `whsec_` as UTF-8 text, not base64-decoded",
                s.as_bytes().to_vec(),
            ));
        }
        if let Ok(k) = STANDARD.decode(raw) {
            variants.push(("the base64 decoding of the secret with `whsec_` left in", k));
        }
        return variants;
    }
    if let Some(s) = stripped {
        variants.push((
            "the secret with its `whsec_` prefix stripped",
            s.as_bytes().to_vec(),
        ));
        if let Ok(k) = STANDARD.decode(s) {
            variants.push(("the base64 decoding of the secret after `whsec_`", k));
        }
    }
    if let Ok(k) = STANDARD.decode(raw) {
        variants.push(("the base64 decoding of the secret", k));
    }
    if let Ok(k) = hex::decode(raw) {
        variants.push(("the hex decoding of the secret", k));
    }
    variants
}

/// Key derivation: the same secret turned into a key another way.
fn key_derivation(attempt: &mut Attempt, ctx: &Context<'_>) -> Option<Found> {
    let scheme = ctx.scheme;
    if matches!(scheme.family, Family::Token | Family::Discord) {
        return None;
    }
    for (index, secret) in ctx.secrets.iter().enumerate() {
        if !matches!(scheme.key(secret), Ok(Key::Mac(_)) | Err(_)) {
            continue; // an ed25519 key has no other derivation worth trying
        }
        for (how, key) in key_variants(scheme.family, secret.expose()) {
            let what = format!("secret #{} used as {how}", index + 1);
            if attempt
                .test(what, ctx, &Key::Mac(key), &ctx.payload)
                .is_none()
            {
                continue;
            }
            let expected_how = match scheme.family {
                Family::StandardWebhooks => "the base64 decoding of the part after `whsec_`",
                _ => "the whole secret as UTF-8 text",
            };
            return Some(Found {
                cause: Cause::KeyDerivation,
                detail: format!(
                    "The signature was made with {how} of secret #{}; {} uses {expected_how}: the key derivation differs between the sender and the verifier.",
                    index + 1,
                    scheme.label
                ),
                sender_signed: None,
            });
        }
    }
    None
}

/// The body re-serialised (compact, pretty, sorted keys, escaped Unicode…).
fn reserialised_body(ctx: &Context<'_>) -> Vec<Variant> {
    reserialisations(&ctx.delivery.body)
        .into_iter()
        .map(|(how, body)| Variant {
            what: format!("the body as {how}"),
            payload: ctx.signed(&body),
            detail: format!(
                "The signature ({{secret}}) matches the body re-serialised as {how}, not the bytes received: the sender signed a re-formatted body, or something between it and the verifier parsed and re-serialised the JSON. Verify over the raw body bytes."
            ),
        })
        .collect()
}

/// Another scheme's template over the same parts.
fn other_templates(ctx: &Context<'_>) -> Vec<Variant> {
    let scheme = ctx.scheme;
    [
        Family::StandardWebhooks,
        Family::Stripe,
        Family::Slack,
        Family::Paddle,
        Family::HmacBody,
        Family::Discord,
    ]
    .into_iter()
    .filter(|family| *family != scheme.family)
    .map(|family| {
        let mut other = scheme.clone();
        other.family = family;
        let template = template_name(family);
        Variant {
            what: format!("the template {template}"),
            payload: other.signed_payload(ctx.event_id, ctx.timestamp, &ctx.delivery.body),
            detail: format!(
                "The signature is over {template}, but {} signs {}: the sender and the verifier build the signed string from different templates.",
                scheme.label,
                template_name(scheme.family)
            ),
        }
    })
    .collect()
}

/// The timestamp in milliseconds (or seconds, when the header holds milliseconds).
fn other_time_unit(ctx: &Context<'_>) -> Vec<Variant> {
    let Ok(ts) = ctx.timestamp.parse::<i64>() else {
        return Vec::new();
    };
    let (variant_ts, how) = if ts.abs() >= 100_000_000_000 {
        (
            (ts / 1000).to_string(),
            "in seconds while the header carries milliseconds",
        )
    } else {
        (
            ts.saturating_mul(1000).to_string(),
            "in milliseconds while the header carries seconds",
        )
    };
    vec![Variant {
        what: format!("the timestamp {how}"),
        payload: ctx
            .scheme
            .signed_payload(ctx.event_id, &variant_ts, &ctx.delivery.body),
        detail: format!(
            "The signed string carries the timestamp {how} ({variant_ts} vs {}): one side converts the time with the wrong unit.",
            ctx.timestamp
        ),
    }]
}

/// A trailing newline added or stripped.
fn trailing_newlines(ctx: &Context<'_>) -> Vec<Variant> {
    let body = &ctx.delivery.body;
    let mut bodies: Vec<(&str, Vec<u8>)> = vec![
        (
            "the body with a trailing \\n added",
            [body.as_slice(), b"\n"].concat(),
        ),
        (
            "the body with a trailing \\r\\n added",
            [body.as_slice(), b"\r\n"].concat(),
        ),
    ];
    if let Some(stripped) = body.strip_suffix(b"\n") {
        bodies.push((
            "the body without its trailing \\n",
            stripped.strip_suffix(b"\r").unwrap_or(stripped).to_vec(),
        ));
    }
    bodies
        .into_iter()
        .map(|(how, variant_body)| Variant {
            what: how.to_string(),
            payload: ctx.signed(&variant_body),
            detail: format!(
                "The signature matches {how}: a tool or framework added or stripped the final newline between signing and verifying."
            ),
        })
        .collect()
}

/// Line endings converted one way or the other.
fn line_endings(ctx: &Context<'_>) -> Vec<Variant> {
    let body = &ctx.delivery.body;
    let lf_to_crlf: Vec<u8> = body
        .iter()
        .enumerate()
        .flat_map(|(i, b)| {
            let lone_lf = *b == b'\n' && (i == 0 || body[i - 1] != b'\r');
            if lone_lf {
                vec![b'\r', b'\n']
            } else {
                vec![*b]
            }
        })
        .collect();
    let crlf_to_lf: Vec<u8> = String::from_utf8_lossy(body)
        .replace("\r\n", "\n")
        .into_bytes();
    [
        ("\\n converted to \\r\\n", lf_to_crlf),
        ("\\r\\n converted to \\n", crlf_to_lf),
    ]
    .into_iter()
    .filter(|(_, variant_body)| variant_body != body)
    .map(|(how, variant_body)| Variant {
        what: format!("line endings {how}"),
        payload: ctx.signed(&variant_body),
        detail: format!(
            "The signature matches the body with line endings {how}: something converted line endings (a text-mode transfer, git autocrlf, a proxy) between signing and verifying."
        ),
    })
    .collect()
}

/// Another hash algorithm, when the received signature's length suggests it.
fn other_algorithm(
    attempt: &mut Attempt,
    ctx: &Context<'_>,
    secret_label: &str,
    key: &[u8],
) -> Option<Found> {
    let lengths: Vec<usize> = received_lengths(&attempt.tokens);
    for (algorithm, length) in [("SHA-1", 20), ("SHA-384", 48), ("SHA-512", 64)] {
        if !lengths.contains(&length) {
            continue;
        }
        attempt
            .tried
            .push(format!("HMAC-{algorithm} ({length}-byte signature)"));
        if let Some(mac) = hmac_other(algorithm, key, &ctx.payload)
            && attempt.tokens.find(&mac).is_some()
        {
            return Some(Found {
                cause: Cause::Algorithm,
                detail: format!(
                    "The signature is an HMAC-{algorithm} ({length} bytes) over the right string with {secret_label}; {} uses HMAC-SHA256: the sender or the verifier uses the wrong hash.",
                    ctx.scheme.label
                ),
                sender_signed: None,
            });
        }
    }
    None
}

/// The decoded lengths of the received tokens, to pick which algorithms to try.
fn received_lengths(tokens: &Tokens) -> Vec<usize> {
    let mut lengths = Vec::new();
    for t in &tokens.0 {
        if let Ok(b) = hex::decode(t) {
            lengths.push(b.len());
        }
        for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
            if let Ok(b) = engine.decode(t) {
                lengths.push(b.len());
            }
        }
    }
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

fn template_name(family: Family) -> &'static str {
    match family {
        Family::StandardWebhooks => "`{id}.{timestamp}.{body}`",
        Family::Stripe => "`{timestamp}.{body}`",
        Family::Slack => "`v0:{timestamp}:{body}`",
        Family::Paddle => "`{timestamp}:{body}`",
        Family::HmacBody => "the raw body alone",
        Family::Discord => "`{timestamp}{body}`",
        Family::Twilio => "the URL followed by the sorted form parameters",
        Family::Token => "nothing (a token is sent as it is)",
        Family::Twitch => "`{message id}{timestamp}{body}`",
    }
}

fn fold(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cause_codes_are_their_json_and_unknown_codes_read_as_unknown() {
        for cause in Cause::ALL {
            let json = serde_json::to_value(cause).expect("json");
            assert_eq!(json, serde_json::Value::from(cause.code()), "{cause:?}");
            let back: Cause = serde_json::from_value(json).expect("reads back");
            assert_eq!(back, cause);
        }
        let later: Cause =
            serde_json::from_str("\"a_cause_from_a_newer_hookscope\"").expect("reads");
        assert_eq!(later, Cause::Unknown);
    }
}
