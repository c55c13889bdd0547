//! The checks run on every delivery, as pure functions: no I/O, the clock passed in.
//!
//! [`evaluate`] gives the signature and timestamp verdicts and the facts the store needs
//! (event id, event type, job). The duplicate verdict is not computed here: it comes from the
//! store's unique index on the event id within its [`duplicate_scope`], so that concurrent
//! retries of one event yield exactly one `first`. Every verdict carries one sentence a person can act on.

use serde::{Deserialize, Serialize};

use crate::domain::advice::{self, AdviceCheck};
use crate::domain::cloudevents;
use crate::domain::delivery::Delivery;
use crate::domain::diagnose::{self, Diagnosis, LabelledSecret};
use crate::domain::endpoint::Endpoint;
use crate::domain::fmt::human_duration;
use crate::domain::handshake::{self, Handshake};
use crate::domain::job::{JobRef, extract_job, first_text};
use crate::domain::scheme::{
    self, Family, FuturePolicy, HeaderError, Reading, Scheme, Verification,
};

/// Verdict of the signature check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureStatus {
    /// A signature in the header matched one of the configured secrets.
    Pass,
    /// The delivery carries a signature (or should) and nothing matched.
    Fail,
    /// Not checked: no scheme recognised, or no secret configured.
    Skipped,
}

/// Verdict of the timestamp check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimestampStatus {
    /// Within the tolerance.
    Pass,
    /// Outside the tolerance in a direction the scheme's libraries still accept.
    Warn,
    /// Outside the tolerance, missing, or unreadable.
    Fail,
    /// The scheme signs no timestamp, or no scheme was recognised.
    Skipped,
}

/// Verdict of the duplicate check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DuplicateStatus {
    /// The first delivery of this event id.
    First,
    /// The event id was seen before; `first_id` names the first delivery.
    Duplicate,
    /// No event id was found, so duplicates cannot be told apart.
    Skipped,
}

/// A verdict as the word the JSON uses (`pass`, `fail`, `first`…).
pub fn status_word<T: Serialize>(status: &T) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl SignatureStatus {
    /// The word the JSON uses, without a serde round trip (the store writes it per delivery).
    pub fn as_str(self) -> &'static str {
        match self {
            SignatureStatus::Pass => "pass",
            SignatureStatus::Fail => "fail",
            SignatureStatus::Skipped => "skipped",
        }
    }
}

impl TimestampStatus {
    /// The word the JSON uses.
    pub fn as_str(self) -> &'static str {
        match self {
            TimestampStatus::Pass => "pass",
            TimestampStatus::Warn => "warn",
            TimestampStatus::Fail => "fail",
            TimestampStatus::Skipped => "skipped",
        }
    }
}

impl DuplicateStatus {
    /// The word the JSON uses.
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicateStatus::First => "first",
            DuplicateStatus::Duplicate => "duplicate",
            DuplicateStatus::Skipped => "skipped",
        }
    }
}

/// The verdict a stored word names (`None` for a word no hookscope writes), and the word
/// itself through `Display` (padding honoured), so typed verdicts cross every boundary.
macro_rules! verdict_words {
    ($($ty:ident: [$($variant:ident),+]),+ $(,)?) => {$(
        impl $ty {
            /// The verdict a word names, as the JSON and the store write it.
            pub fn from_word(word: &str) -> Option<$ty> {
                [$($ty::$variant),+].into_iter().find(|v| v.as_str() == word)
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    )+};
}

verdict_words!(
    SignatureStatus: [Pass, Fail, Skipped],
    TimestampStatus: [Pass, Warn, Fail, Skipped],
    DuplicateStatus: [First, Duplicate, Skipped],
);

/// The signature check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureCheck {
    /// The verdict.
    pub status: SignatureStatus,
    /// One sentence saying what was checked and what to do.
    pub detail: String,
    /// The scheme used or detected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Which configured secret matched, by label (`secret #2`), never by value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// How many secrets were tried.
    #[serde(default)]
    pub secrets_tried: usize,
    /// Why it failed, when it failed and a hypothesis reproduces the received signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
}

impl SignatureCheck {
    /// Which configured secret verified the signature (an index into the endpoint's), read
    /// from its label (`secret #2`), for the handshakes answered with that secret.
    pub fn matched_secret(&self) -> Option<usize> {
        if self.status != SignatureStatus::Pass {
            return None;
        }
        let n: usize = self
            .secret
            .as_deref()?
            .strip_prefix("secret #")?
            .parse()
            .ok()?;
        n.checked_sub(1)
    }
}

/// The timestamp check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimestampCheck {
    /// The verdict.
    pub status: TimestampStatus,
    /// The signed timestamp minus the time of receipt, in seconds: negative when the timestamp
    /// is in the past, positive when it is in the future.
    pub skew_secs: Option<i64>,
    /// One sentence saying what was checked and what to do.
    pub detail: String,
    /// The tolerance applied, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance_secs: Option<u64>,
    /// True when the timestamp was recognised as milliseconds.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub milliseconds: bool,
}

/// The duplicate check's result (decided by the store).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DuplicateCheck {
    /// The verdict.
    pub status: DuplicateStatus,
    /// The id of the first delivery with this event id (itself when `first`).
    pub first_id: Option<i64>,
    /// One sentence.
    pub detail: String,
}

/// All checks of one delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checks {
    /// Signature verdict.
    pub signature: SignatureCheck,
    /// Timestamp verdict.
    pub timestamp: TimestampCheck,
    /// Duplicate verdict.
    pub duplicate: DuplicateCheck,
    /// Payload advice (never a failure); absent in captures older than the check.
    #[serde(default)]
    pub advice: AdviceCheck,
    /// The body against its endpoint's contract; absent where the endpoint has none (the
    /// delivery's JSON says `null`: `app::report`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<crate::domain::contract::SchemaCheck>,
}

/// What the pure checks learn from one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    /// The scheme used (configured) or detected, by name.
    pub scheme: Option<String>,
    /// The event id, from the scheme's header or the body.
    pub event_id: Option<String>,
    /// The event type, from a header or the body.
    pub event_type: Option<String>,
    /// The job, when the body names one.
    pub job: Option<JobRef>,
    /// The signature verdict.
    pub signature: SignatureCheck,
    /// The timestamp verdict.
    pub timestamp: TimestampCheck,
    /// The payload advice.
    pub advice: AdviceCheck,
    /// The body against its endpoint's contract, when it has one.
    pub schema: Option<crate::domain::contract::SchemaCheck>,
    /// A CloudEvent's `source`: its id is unique within it, so it joins the duplicate scope.
    pub event_source: Option<String>,
    /// The handshake this request is (a provider's challenge), answered or refused; a
    /// handshake is neither a job event nor a duplicate.
    pub handshake: Option<Handshake>,
}

impl DuplicateCheck {
    /// The verdict for a delivery whose event id was not seen before.
    pub fn first(delivery_id: i64, event_id: &str, scope: &str) -> Self {
        Self {
            status: DuplicateStatus::First,
            first_id: Some(delivery_id),
            detail: format!("First delivery of event {event_id} on {scope}."),
        }
    }

    /// The verdict for the first sight of an event id on a delivery whose signature failed: it
    /// is not recorded as the event's first delivery, so a valid copy later still counts.
    pub fn first_unverified(delivery_id: i64, event_id: &str, scope: &str) -> Self {
        Self {
            status: DuplicateStatus::First,
            first_id: Some(delivery_id),
            detail: format!(
                "First delivery of event {event_id} on {scope}, but its signature failed, so it does not claim the event id: the next correctly signed copy will also count as first."
            ),
        }
    }

    /// The verdict for a repeat of an event id.
    pub fn duplicate(first_id: i64, event_id: &str, seen_before: u64, scope: &str) -> Self {
        let times = if seen_before == 1 {
            "once".to_string()
        } else {
            format!("{seen_before} times")
        };
        Self {
            status: DuplicateStatus::Duplicate,
            first_id: Some(first_id),
            detail: format!(
                "Event {event_id} on {scope} was already received {times} (first as delivery #{first_id}): a retry or replay; a receiver should answer 2xx and not process it again."
            ),
        }
    }

    /// The verdict of a handshake: not an event, so never a duplicate.
    pub fn handshake() -> Self {
        Self {
            status: DuplicateStatus::Skipped,
            first_id: None,
            detail: "A handshake, not an event: it is not judged as a duplicate.".into(),
        }
    }

    /// The verdict when there is no event id.
    pub fn skipped() -> Self {
        Self {
            status: DuplicateStatus::Skipped,
            first_id: None,
            detail: "No event id found in the headers or the body (id, event_id), so retries of this event cannot be recognised.".into(),
        }
    }
}

/// Where an event id is unique: two providers' ids are never the same event, so a duplicate is a
/// repeat within one endpoint and one scheme, and on the catch-all endpoint (`/`, which every
/// unconfigured path falls under) within one path too. Also the sentence's words:
/// `/hooks/stripe (stripe)`. A CloudEvent's id is unique within its `source`, which joins the
/// scope: `/hooks/ce (no scheme) from /storage`. `store::maintain::SCOPE_SQL` computes the same
/// from a stored row.
pub fn duplicate_scope(
    endpoint: &str,
    path: &str,
    scheme: Option<&str>,
    source: Option<&str>,
) -> String {
    let place = if endpoint == "/" { path } else { endpoint };
    let from = source.map(|s| format!(" from {s}")).unwrap_or_default();
    format!("{place} ({}){from}", scheme.unwrap_or("no scheme"))
}

/// Runs the signature and timestamp checks and extracts the event facts. `now_secs` is the
/// time of receipt in Unix seconds.
pub fn evaluate(delivery: &Delivery, endpoint: &Endpoint, now_secs: i64) -> Evaluation {
    evaluate_with(delivery, endpoint, &endpoint.other_secrets, now_secs)
}

/// [`evaluate`], with other secrets to try in the diagnosis of a failed signature than the
/// endpoint's `other_secrets`.
pub fn evaluate_with(
    delivery: &Delivery,
    endpoint: &Endpoint,
    others: &[LabelledSecret],
    now_secs: i64,
) -> Evaluation {
    let configured = endpoint.scheme.as_ref();
    let detected = if configured.is_none() {
        scheme::detect(delivery).map(|mut s| {
            s.public_url.clone_from(&endpoint.public_url);
            s
        })
    } else {
        None
    };
    let active = configured.or(detected.as_ref());
    // The scheme's signature header, event id and timestamp, read once for every check below.
    let reading = active.map(|s| s.read(delivery));
    let body_json = delivery.body_json();

    // A detected scheme is verified when the endpoint has secrets: adding the provider's secret
    // is enough, choosing the scheme by name is optional.
    let verify_with = configured.or(detected.as_ref().filter(|_| !endpoint.secrets.is_empty()));
    let signature = signature_of(
        delivery,
        endpoint,
        others,
        (verify_with.zip(reading.as_ref()), active, detected.as_ref()),
    );
    let timestamp = timestamp_check(
        active.zip(reading.as_ref()),
        endpoint.tolerance_secs,
        now_secs,
    );
    let handshake = handshake_of(delivery, endpoint, body_json.as_ref(), &signature);
    // A provider that signs no handshake (a Meta GET, X's CRC…) gets no signature verdict
    // from the scheme of its deliveries: it proves itself another way.
    let (signature, timestamp) = match &handshake {
        Some(h) if !h.provider.signs() => unsigned_handshake(h, signature),
        _ => (signature, timestamp),
    };
    let cloudevent = cloudevents::read(delivery);

    let event_id = cloudevent
        .as_ref()
        .map(|e| e.id.clone())
        .or_else(|| event_id_of(delivery, reading.as_ref(), body_json.as_ref()));
    let event_type = cloudevent
        .as_ref()
        .map(|e| e.event_type.clone())
        .filter(|t| !t.is_empty())
        .or_else(|| {
            active
                .and_then(|s| s.event_type_header.as_deref())
                .and_then(|h| delivery.header_str(h))
                .map(str::to_string)
                .or_else(|| {
                    body_json
                        .as_ref()
                        .and_then(|j| first_text(j, &["/type", "/event_type", "/event"]))
                })
        });
    // A structured CloudEvent carries the body in its envelope's `data`: the job is read there,
    // as in binary mode, where the body is the data.
    let data = match (&cloudevent, body_json.as_ref()) {
        (Some(e), Some(j)) if e.mode == cloudevents::Mode::Structured => j.get("data"),
        (_, j) => j,
    };
    let job = data.and_then(|j| extract_job(j, event_type.as_deref(), &endpoint.job_pointers));
    // A handshake is neither an event of a job nor a copy of one.
    let is_handshake = handshake.is_some();
    // A handshake has no payload of the contract's; a body not received whole cannot be judged.
    let schema = endpoint
        .contract
        .as_ref()
        .filter(|_| !is_handshake && delivery.body_complete)
        .map(|contract| contract.check(event_type.as_deref(), &delivery.body));

    Evaluation {
        scheme: active.map(|s| s.name.clone()),
        event_id: event_id.filter(|_| !is_handshake),
        event_type,
        job: job.filter(|_| !is_handshake),
        signature,
        timestamp,
        advice: advice::advise(delivery, body_json.as_ref(), &endpoint.advice),
        schema,
        event_source: cloudevent
            .map(|e| e.source)
            .filter(|s| !s.is_empty() && !is_handshake),
        handshake,
    }
}

/// The signature verdict: skipped for a body not received whole, else checked with
/// `verify_with` (the scheme to verify with and its reading) and, when it fails, diagnosed.
fn signature_of(
    delivery: &Delivery,
    endpoint: &Endpoint,
    others: &[LabelledSecret],
    (verify_with, active, detected): (
        Option<(&Scheme, &Reading<'_>)>,
        Option<&Scheme>,
        Option<&Scheme>,
    ),
) -> SignatureCheck {
    if !delivery.body_complete {
        return SignatureCheck {
            status: SignatureStatus::Skipped,
            detail: "The body was not received whole (over the size limit or cut short), so the signature could not be checked.".into(),
            scheme: active.map(|s| s.name.clone()),
            secret: None,
            secrets_tried: 0,
            diagnosis: None,
        };
    }
    let mut check = signature_check(delivery, endpoint, verify_with, detected);
    if check.status == SignatureStatus::Fail
        && let Some((scheme, reading)) = verify_with
    {
        check.diagnosis = Some(diagnose::diagnose_failed(
            scheme,
            delivery,
            reading,
            &endpoint.secrets,
            others,
        ));
    }
    check
}

/// The provider's handshake this request is, answered or refused, told whether the signature
/// verified. A body not received whole is no handshake: it was answered 413 or 400, not
/// challenged.
fn handshake_of(
    delivery: &Delivery,
    endpoint: &Endpoint,
    body_json: Option<&crate::domain::json::Json<'_>>,
    signature: &SignatureCheck,
) -> Option<Handshake> {
    if !delivery.body_complete {
        return None;
    }
    handshake::respond_with(
        delivery,
        body_json,
        &handshake::Context {
            accept: endpoint.handshake,
            secrets: &endpoint.secrets,
            matched_secret: signature.matched_secret(),
            endpoint_scheme: endpoint.scheme.as_ref(),
            verify_token: endpoint.verify_token.as_ref(),
            path: &endpoint.path,
        },
        match signature.status {
            SignatureStatus::Pass => handshake::Signed::Verified,
            SignatureStatus::Fail => handshake::Signed::Failed,
            SignatureStatus::Skipped => handshake::Signed::NotChecked,
        },
    )
}

/// The event id when the delivery is no CloudEvent: the scheme's header, else the body's `id`
/// or `event_id`, else (with no scheme, so duplicates are still caught) a common id header.
fn event_id_of(
    delivery: &Delivery,
    reading: Option<&Reading<'_>>,
    body_json: Option<&crate::domain::json::Json<'_>>,
) -> Option<String> {
    reading
        .and_then(|r| r.event_id)
        .map(str::to_string)
        .or_else(|| body_json.and_then(|j| first_text(j, &["/id", "/event_id"])))
        .or_else(|| {
            [
                "webhook-id",
                "svix-id",
                "x-github-delivery",
                "x-shopify-webhook-id",
                "x-event-id",
                "i-twilio-idempotency-token",
                "idempotency-key",
            ]
            .iter()
            .find_map(|h| delivery.header_str(h))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
        })
}

/// The signature and timestamp verdicts of a handshake its provider does not sign.
fn unsigned_handshake(
    handshake: &Handshake,
    signature: SignatureCheck,
) -> (SignatureCheck, TimestampCheck) {
    let (label, what) = (handshake.provider.label(), handshake.provider.what());
    let detail = match handshake.provider {
        handshake::Provider::Sns => format!(
            "{label}'s {what} is signed with AWS's certificate, which hookscope does not check; confirm only a subscription you asked for."
        ),
        handshake::Provider::Meta => format!(
            "{label}'s {what} carries no signature: its hub.verify_token is what proves it."
        ),
        _ => format!("{label}'s {what} carries no signature to check."),
    };
    (
        SignatureCheck {
            status: SignatureStatus::Skipped,
            detail,
            diagnosis: None,
            secret: None,
            secrets_tried: 0,
            ..signature
        },
        TimestampCheck {
            status: TimestampStatus::Skipped,
            skew_secs: None,
            detail: format!("{label}'s {what} carries no signed timestamp."),
            tolerance_secs: None,
            milliseconds: false,
        },
    )
}

fn signature_check(
    delivery: &Delivery,
    endpoint: &Endpoint,
    verify_with: Option<(&Scheme, &Reading<'_>)>,
    detected: Option<&Scheme>,
) -> SignatureCheck {
    let Some((scheme, reading)) = verify_with else {
        return not_verified(delivery, endpoint, detected);
    };
    let label = &scheme.label;
    let failed = |status, detail: String, secrets_tried| SignatureCheck {
        status,
        detail,
        scheme: Some(scheme.name.clone()),
        secret: None,
        secrets_tried,
        diagnosis: None,
    };
    if endpoint.secrets.is_empty() {
        return failed(
            SignatureStatus::Skipped,
            format!(
                "No secret is configured for {} ({label}), so the signature was not verified: add the sender's signing secret to this endpoint.",
                endpoint.path
            ),
            0,
        );
    }
    match scheme.verify_read(delivery, reading, &endpoint.secrets) {
        Verification::Verified {
            secret_index,
            signature_index,
        } => verified(
            scheme,
            delivery,
            endpoint.secrets.len(),
            secret_index,
            signature_index,
        ),
        Verification::BodyHashMismatch { signed, received } => failed(
            SignatureStatus::Fail,
            format!(
                "The URL's bodySHA256 is {signed}, but the body received hashes to {received}: the body changed after {label} signed it (re-serialised JSON, or a proxy rewrote it), so the request fails validation even if the URL's signature matches."
            ),
            endpoint.secrets.len(),
        ),
        Verification::NoMatch {
            secrets_tried,
            signatures,
            unusable_secrets,
        } => failed(
            SignatureStatus::Fail,
            no_match_detail(
                scheme,
                delivery,
                secrets_tried,
                signatures,
                &unusable_secrets,
            ),
            secrets_tried,
        ),
        Verification::BadHeader(HeaderError::Missing(header)) => failed(
            SignatureStatus::Fail,
            format!(
                "The {header} header is missing, so this delivery is unsigned or not {label}: check the sender's scheme or this endpoint's configuration."
            ),
            0,
        ),
        Verification::BadHeader(err) => failed(
            SignatureStatus::Fail,
            format!(
                "{}, so it cannot be verified as {label}.",
                capitalise(&err.to_string())
            ),
            0,
        ),
        Verification::MissingInput(err) => failed(
            SignatureStatus::Fail,
            format!(
                "{}, and {label} signs it along with the body, so the signature cannot be checked.",
                capitalise(&err.to_string())
            ),
            0,
        ),
    }
}

/// No scheme to verify with: say what was seen and what to configure.
fn not_verified(
    delivery: &Delivery,
    endpoint: &Endpoint,
    detected: Option<&Scheme>,
) -> SignatureCheck {
    let path = &delivery.path;
    let (detail, name) = match detected {
        Some(s) => (
            format!(
                "Looks like {} (a {} header is present), but no secret is configured for {path}, so it was not verified: add an endpoint for this path with scheme {} and its secret (Endpoints & secrets in the window, [[endpoint]] in config.toml).",
                s.label,
                s.signature_header,
                s.name.split(' ').next().unwrap_or(&s.name)
            ),
            Some(s.name.clone()),
        ),
        None if !endpoint.secrets.is_empty() => (
            format!(
                "No signature header recognised, so the secrets of endpoint {} were not used: set its scheme (a custom [[scheme]] for a provider-specific header).",
                endpoint.path
            ),
            None,
        ),
        None => (
            format!(
                "No signature header recognised; if this sender signs its deliveries, configure an [[endpoint]] for {path} with its scheme and secret."
            ),
            None,
        ),
    };
    SignatureCheck {
        status: SignatureStatus::Skipped,
        detail,
        scheme: name,
        secret: None,
        secrets_tried: 0,
        diagnosis: None,
    }
}

/// A verified signature: which secret (and which signature of the header) matched.
fn verified(
    scheme: &Scheme,
    delivery: &Delivery,
    total: usize,
    secret_index: usize,
    signature_index: usize,
) -> SignatureCheck {
    let which = if total > 1 {
        format!("secret #{} of {total}", secret_index + 1)
    } else {
        "the configured secret".to_string()
    };
    let rotation = if secret_index > 0 {
        " The first secret did not match: the sender still signs with another one, as during a rotation."
    } else {
        ""
    };
    let position = if signature_index > 0 {
        format!(" (signature {} in the header)", signature_index + 1)
    } else {
        String::new()
    };
    let detail = if scheme.family == Family::Token {
        // GitLab signs nothing: say what a matching token does and does not prove.
        let ids: Vec<String> = ["x-gitlab-event-uuid", "x-gitlab-webhook-uuid"]
            .iter()
            .filter_map(|h| delivery.header_str(h).map(|v| format!("{h} {}", v.trim())))
            .collect();
        let ids = if ids.is_empty() {
            String::new()
        } else {
            format!(" ({})", ids.join(", "))
        };
        format!(
            "The {} header equals {which} (compared in constant time). {} signs nothing: this shows the sender knows the token, not that the body is unchanged, and a copy of one request replays.{rotation}{ids}",
            scheme.signature_header, scheme.label
        )
    } else {
        format!(
            "{} signature verified with {which}{position}.{rotation}",
            scheme.label
        )
    };
    SignatureCheck {
        status: SignatureStatus::Pass,
        detail,
        scheme: Some(scheme.name.clone()),
        secret: Some(format!("secret #{}", secret_index + 1)),
        secrets_tried: secret_index + 1,
        diagnosis: None,
    }
}

/// What was compared when nothing matched.
fn no_match_detail(
    scheme: &Scheme,
    delivery: &Delivery,
    secrets_tried: usize,
    signatures: usize,
    unusable_secrets: &[(usize, scheme::KeyError)],
) -> String {
    let sigs = if signatures == 1 {
        "the 1 signature".to_string()
    } else {
        format!("all {signatures} signatures")
    };
    let secrets = if secrets_tried == 1 {
        "1 secret".to_string()
    } else {
        format!("{secrets_tried} secrets")
    };
    let mut detail = match scheme.family {
        Family::Token => format!(
            "The {} header equals none of the {secrets} (compared in constant time): the token set at the sender differs from this endpoint's.",
            scheme.signature_header
        ),
        Family::Twilio => format!(
            "No {} signature matches: the {} header checked against {secrets} over the URL {} (with and without its port) and the sorted form parameters; the public URL differs from the one the sender posts to, the body changed, or the auth token differs.",
            scheme.label,
            scheme.signature_header,
            scheme.signed_url(delivery)
        ),
        _ => format!(
            "No {} signature matches: {sigs} in {} checked against {secrets} over the exact {} body bytes; the body was changed after signing (e.g. re-serialised JSON) or the {} differs from the sender's.",
            scheme.label,
            scheme.signature_header,
            delivery.body.len(),
            if scheme.family == Family::Discord {
                "public key"
            } else {
                "secret"
            }
        ),
    };
    for (index, err) in unusable_secrets {
        detail.push_str(&format!(" Secret #{} could not be used: {err}.", index + 1));
    }
    detail
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Timestamps at or above this are taken as milliseconds (in seconds it would be year 5138).
const MILLISECONDS_THRESHOLD: i64 = 100_000_000_000;

/// Why a scheme's timestamp is not judged: its libraries apply no tolerance (its age said when
/// it can be read), or it signs none.
fn no_tolerance(scheme: &Scheme, reading: &Reading<'_>, now_secs: i64) -> String {
    let label = &scheme.label;
    if scheme.signs_timestamp() {
        let header = scheme
            .timestamp_header
            .clone()
            .unwrap_or_else(|| scheme.signature_header.clone());
        let age = reading
            .timestamp
            .as_deref()
            .and_then(|t| t.parse::<i64>().ok())
            .map(|ts| format!(" It is {}.", describe_skew(ts.saturating_sub(now_secs))))
            .unwrap_or_default();
        return format!(
            "{label} signs the timestamp in {header}, but its libraries apply no tolerance, so its age is not judged (set tolerance_secs on the endpoint to judge it).{age}"
        );
    }
    let id = scheme
        .event_id_header
        .as_deref()
        .map(|h| format!(" ({h})"))
        .unwrap_or_default();
    format!("{label} signs no timestamp; replay protection rests on the event id{id} alone.")
}

fn timestamp_check(
    scheme: Option<(&Scheme, &Reading<'_>)>,
    tolerance_override: Option<u64>,
    now_secs: i64,
) -> TimestampCheck {
    let skipped = |detail: String| TimestampCheck {
        status: TimestampStatus::Skipped,
        skew_secs: None,
        detail,
        tolerance_secs: None,
        milliseconds: false,
    };
    let Some((scheme, reading)) = scheme else {
        return skipped("No scheme recognised, so there is no signed timestamp to check.".into());
    };
    let label = &scheme.label;
    let tolerance = scheme
        .tolerance_secs
        .or(tolerance_override.filter(|_| scheme.signs_timestamp()));
    let Some(default_tolerance) = tolerance else {
        return skipped(no_tolerance(scheme, reading, now_secs));
    };
    let tolerance = tolerance_override.unwrap_or(default_tolerance);
    let fail = |detail: String, skew_secs: Option<i64>, milliseconds: bool| TimestampCheck {
        status: TimestampStatus::Fail,
        skew_secs,
        detail,
        tolerance_secs: Some(tolerance),
        milliseconds,
    };
    let where_ = scheme
        .timestamp_header
        .clone()
        .unwrap_or_else(|| scheme.signature_header.clone());
    let Some(text) = reading.timestamp.clone() else {
        return fail(
            format!(
                "No timestamp found in {where_}; {label} signs one, so the delivery cannot be checked for staleness."
            ),
            None,
            false,
        );
    };
    let shown: String = text.chars().take(40).collect();
    // Twitch writes its timestamp in RFC 3339, every other scheme in Unix seconds; either is
    // read, as a sender that writes one where the other is expected is still worth judging.
    let rfc3339 = || {
        time::OffsetDateTime::parse(&text, &time::format_description::well_known::Rfc3339)
            .ok()
            .map(|t| t.unix_timestamp())
    };
    let Some(raw) = text.parse::<i64>().ok().or_else(rfc3339) else {
        let (reason, expects) = if scheme.family == Family::Twitch {
            (
                "is not an RFC 3339 time",
                "an RFC 3339 time (2026-01-01T12:00:00.123Z)",
            )
        } else if text.parse::<f64>().is_ok() && text.len() < 40 {
            ("is not a whole number of seconds", "an integer Unix time")
        } else {
            ("is not a Unix time in seconds", "an integer Unix time")
        };
        return fail(
            format!("The timestamp `{shown}` in {where_} {reason}; {label} expects {expects}."),
            None,
            false,
        );
    };
    if raw.abs() >= MILLISECONDS_THRESHOLD {
        let skew = (raw / 1000).saturating_sub(now_secs);
        return fail(
            format!(
                "The timestamp {raw} in {where_} looks like milliseconds (read as such it is {}); {label} expects seconds, so its libraries reject it: the sender or your signing code uses milliseconds.",
                describe_skew(skew)
            ),
            Some(skew),
            true,
        );
    }
    judge_skew(scheme, raw, now_secs, tolerance)
}

/// A readable timestamp in seconds against the tolerance: pass, stale, or in the future (a
/// warning or a failure, as the scheme's own libraries treat it).
fn judge_skew(scheme: &Scheme, raw: i64, now_secs: i64, tolerance: u64) -> TimestampCheck {
    let label = &scheme.label;
    let fail = |detail: String, skew_secs: Option<i64>, milliseconds: bool| TimestampCheck {
        status: TimestampStatus::Fail,
        skew_secs,
        detail,
        tolerance_secs: Some(tolerance),
        milliseconds,
    };
    let skew = raw.saturating_sub(now_secs);
    let tol = i64::try_from(tolerance).unwrap_or(i64::MAX);
    let described = describe_skew(skew);
    if skew < -tol {
        fail(
            format!(
                "The timestamp is {described}, beyond the {tolerance} s tolerance: a stale retry or a replay, or one of the two clocks is wrong; {label} libraries reject it.{}",
                clocks(raw, now_secs)
            ),
            Some(skew),
            false,
        )
    } else if skew > tol {
        match scheme.future {
            FuturePolicy::Reject => fail(
                format!(
                    "The timestamp is {described}, beyond the {tolerance} s tolerance: the sender's clock is ahead or this machine's is behind; {label} libraries reject it.{}",
                    clocks(raw, now_secs)
                ),
                Some(skew),
                false,
            ),
            FuturePolicy::Warn => TimestampCheck {
                status: TimestampStatus::Warn,
                skew_secs: Some(skew),
                detail: format!(
                    "The timestamp is {described}, beyond the {tolerance} s tolerance; {label} libraries accept future timestamps, but a clock this far off is worth fixing.{}",
                    clocks(raw, now_secs)
                ),
                tolerance_secs: Some(tolerance),
                milliseconds: false,
            },
        }
    } else {
        TimestampCheck {
            status: TimestampStatus::Pass,
            skew_secs: Some(skew),
            detail: format!(
                "The timestamp is {described} by this machine's clock, within the {tolerance} s tolerance."
            ),
            tolerance_secs: Some(tolerance),
            milliseconds: false,
        }
    }
}

fn describe_skew(skew: i64) -> String {
    let human = human_duration(skew.unsigned_abs());
    let amount = if skew.unsigned_abs() >= 60 {
        format!("{} s ({human})", skew.unsigned_abs())
    } else {
        format!("{} s", skew.unsigned_abs())
    };
    match skew {
        0 => "current (0 s off)".to_string(),
        s if s < 0 => format!("{amount} old"),
        _ => format!("{amount} in the future"),
    }
}

/// "The sender's clock said … when this machine's said …", for timestamps out of tolerance.
fn clocks(timestamp_secs: i64, now_secs: i64) -> String {
    let at =
        |secs: i64| crate::domain::fmt::rfc3339_ms(secs.saturating_mul(1000)).replace(".000Z", "Z");
    format!(
        " The sender stamped it {}; this machine received it at {}.",
        at(timestamp_secs),
        at(now_secs)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_words_read_back_and_pad() {
        for s in [
            SignatureStatus::Pass,
            SignatureStatus::Fail,
            SignatureStatus::Skipped,
        ] {
            assert_eq!(SignatureStatus::from_word(s.as_str()), Some(s));
        }
        for s in [
            TimestampStatus::Pass,
            TimestampStatus::Warn,
            TimestampStatus::Fail,
            TimestampStatus::Skipped,
        ] {
            assert_eq!(TimestampStatus::from_word(s.as_str()), Some(s));
        }
        for s in [
            DuplicateStatus::First,
            DuplicateStatus::Duplicate,
            DuplicateStatus::Skipped,
        ] {
            assert_eq!(DuplicateStatus::from_word(s.as_str()), Some(s));
        }
        assert_eq!(SignatureStatus::from_word("maybe"), None);
        assert_eq!(format!("[{:<6}]", SignatureStatus::Fail), "[fail  ]");
    }

    #[test]
    fn status_words_match_their_json() {
        for s in [
            SignatureStatus::Pass,
            SignatureStatus::Fail,
            SignatureStatus::Skipped,
        ] {
            assert_eq!(s.as_str(), status_word(&s));
        }
        for s in [
            TimestampStatus::Pass,
            TimestampStatus::Warn,
            TimestampStatus::Fail,
            TimestampStatus::Skipped,
        ] {
            assert_eq!(s.as_str(), status_word(&s));
        }
        for s in [
            DuplicateStatus::First,
            DuplicateStatus::Duplicate,
            DuplicateStatus::Skipped,
        ] {
            assert_eq!(s.as_str(), status_word(&s));
        }
    }

    #[test]
    fn durations_read_like_people_say_them() {
        assert_eq!(human_duration(45), "45 s");
        assert_eq!(human_duration(900), "15 min");
        assert_eq!(human_duration(7500), "2 h 5 min");
        assert_eq!(human_duration(7200), "2 h");
        assert_eq!(human_duration(86_400 * 3 + 5), "3 days");
    }
}
