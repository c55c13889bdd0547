//! Resending a capture to the developer's handler, as captured (an honest replay) or re-signed
//! with a fresh timestamp, and recording the attempt. Both front ends build a [`ResendRequest`],
//! [`prepare`] it (the fast part: look-ups and signing) and [`send`] it (the network).
//!
//! Re-signing defaults, the same for both: the scheme is the delivery's own unless one is
//! given, the secrets are its endpoint's unless some are given.

use std::time::Duration;

use crate::app::{AppError, Refused, scheme_named};
use crate::config::{ConfigFile, Settings};
use crate::domain::attempt::{Attempt, AttemptKind};
use crate::domain::clock::now_secs;
use crate::domain::scheme::{Scheme, Secret};
use crate::net::client::{self, Client, Outgoing, ResendOptions, Tls};
use crate::store::{Reader, StoreWriter, StoredDelivery};

/// What to resend, where and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResendRequest {
    /// The delivery.
    pub delivery_id: i64,
    /// The handler's URL.
    pub url: String,
    /// Re-sign with a fresh timestamp (`false`: exactly as captured).
    pub resign: bool,
    /// The scheme to re-sign with (default: the delivery's).
    pub scheme: Option<String>,
    /// The secrets to re-sign with (default: its endpoint's).
    pub secrets: Vec<String>,
    /// Give the event a new id (a new event, not a retry).
    pub new_id: bool,
    /// A replacement body; the signature is computed over it.
    pub body: Option<Vec<u8>>,
    /// How long the handler has to answer.
    pub timeout: Duration,
    /// Accept any TLS certificate (`--insecure`): a self-signed development certificate.
    pub insecure: bool,
    /// What a refused certificate's sentence suggests, in the words of the front end that asks
    /// (the client's own when it names none).
    pub self_signed_hint: Option<&'static str>,
}

impl ResendRequest {
    /// A resend of a delivery as captured, with the default timeout.
    pub fn as_captured(delivery_id: i64, url: impl Into<String>) -> Self {
        Self {
            delivery_id,
            url: url.into(),
            resign: false,
            scheme: None,
            secrets: Vec::new(),
            new_id: false,
            body: None,
            timeout: client::DEFAULT_TIMEOUT,
            insecure: false,
            self_signed_hint: None,
        }
    }
}

/// What re-signing a delivery uses when nothing else is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResignDefaults {
    /// The delivery's scheme by name (without the "(detected)" note), if it has one.
    pub scheme: Option<String>,
    /// Its endpoint's secrets.
    pub secrets: Vec<Secret>,
}

/// The re-signing defaults for a delivery under the current config.
pub fn resign_defaults(settings: &Settings, stored: &StoredDelivery) -> ResignDefaults {
    ResignDefaults {
        scheme: stored
            .scheme
            .as_deref()
            .and_then(|s| s.split(' ').next())
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        secrets: settings.endpoint_for(&stored.delivery.path).secrets.clone(),
    }
}

/// A resend ready to go: the request to send and where.
#[derive(Debug, Clone)]
pub struct PreparedResend {
    /// The delivery resent.
    pub delivery_id: i64,
    /// The handler's URL.
    pub url: String,
    /// The request.
    pub outgoing: Outgoing,
    /// Whether it was re-signed.
    pub resigned: bool,
    timeout: Duration,
    tls: Tls,
    self_signed_hint: Option<&'static str>,
}

/// Looks the delivery up, resolves the scheme and secrets (with the defaults above) and builds
/// the request.
pub fn prepare(
    file: &ConfigFile,
    reader: &Reader,
    request: &ResendRequest,
) -> Result<PreparedResend, AppError> {
    let stored = reader.get(request.delivery_id)?.ok_or_else(|| {
        AppError::Usage(format!("no delivery #{} in the store", request.delivery_id))
    })?;
    let settings = Settings::resolve(file, &Default::default())?;
    build(file, &settings, &stored, request)
}

/// Builds the request for a delivery already read, under settings already resolved (a replay
/// builds thousands).
pub fn build(
    file: &ConfigFile,
    settings: &Settings,
    stored: &StoredDelivery,
    request: &ResendRequest,
) -> Result<PreparedResend, AppError> {
    let resign = if request.resign {
        let (mut scheme, secrets) = resign_with(file, settings, stored, request)?;
        // A scheme that signs the URL (Twilio) signs the handler's.
        scheme.public_url = Some(request.url.clone());
        Some((scheme, secrets))
    } else {
        None
    };
    let options = ResendOptions {
        resign,
        new_id: request.new_id,
        body: request.body.clone(),
    };
    let outgoing = client::prepare_resend(stored, &options, now_secs())?;
    // Twilio puts a JSON body's hash in the URL it signs: send to that URL.
    let url = match &options.resign {
        Some((scheme, _)) => scheme.request_url(&request.url, &outgoing.body),
        None => request.url.clone(),
    };
    Ok(PreparedResend {
        delivery_id: stored.id,
        url,
        outgoing,
        resigned: request.resign,
        timeout: request.timeout,
        tls: Tls::insecure_if(request.insecure),
        self_signed_hint: request.self_signed_hint,
    })
}

fn resign_with(
    file: &ConfigFile,
    settings: &Settings,
    stored: &StoredDelivery,
    request: &ResendRequest,
) -> Result<(Scheme, Vec<Secret>), AppError> {
    let defaults = resign_defaults(settings, stored);
    let scheme_name = request.scheme.clone().or(defaults.scheme);
    let scheme = match scheme_name.as_deref() {
        Some(name) => scheme_named(file, name).map_err(|_| Refused::NoResignScheme {
            has: Some(name.to_string()),
        })?,
        None => return Err(Refused::NoResignScheme { has: None }.into()),
    };
    let secrets: Vec<Secret> = if request.secrets.is_empty() {
        defaults.secrets
    } else {
        request.secrets.iter().map(Secret::new).collect()
    };
    if secrets.is_empty() {
        let endpoint = &settings.endpoint_for(&stored.delivery.path).path;
        return Err(Refused::NoResignSecret {
            endpoint: endpoint.clone(),
        }
        .into());
    }
    Ok((scheme, secrets))
}

/// Sends a prepared resend and records the attempt; returns it with its stored id. A handler
/// that does not answer is an attempt with an error, not an `Err`.
pub async fn send(prepared: &PreparedResend, writer: &StoreWriter) -> Result<Attempt, AppError> {
    let client = client_for(prepared.timeout, prepared.tls, prepared.self_signed_hint)?;
    let mut attempt = send_unrecorded(&client, prepared, AttemptKind::Resend).await?;
    attempt.id = writer.attempt(attempt.clone()).await?;
    Ok(attempt)
}

/// The client resends go through: its timeout, its certificate check, and the certificate hint
/// in the words of the front end that asks (the client's own without them).
pub fn client_for(
    timeout: Duration,
    tls: Tls,
    self_signed_hint: Option<&'static str>,
) -> Result<Client, AppError> {
    let client = Client::with_tls(timeout, tls)?;
    Ok(match self_signed_hint {
        Some(hint) => client.with_insecure_hint(hint),
        None => client,
    })
}

/// Sends a prepared resend through `client` as an attempt of `kind`, without recording it (the
/// caller records it; a replay keeps the answer when the store cannot).
pub async fn send_unrecorded(
    client: &Client,
    prepared: &PreparedResend,
    kind: AttemptKind,
) -> Result<Attempt, AppError> {
    Ok(client
        .send(
            &prepared.url,
            &prepared.outgoing,
            kind,
            Some(prepared.delivery_id),
        )
        .await?)
}

/// One sentence on how a resend went, for the status line and the terminal.
pub fn summary(prepared: &PreparedResend, attempt: &Attempt) -> String {
    let how = if prepared.resigned {
        "re-signed"
    } else {
        "as captured"
    };
    let (id, url) = (
        prepared.delivery_id,
        crate::domain::delivery::masked_url(&prepared.url),
    );
    match (attempt.status, &attempt.error) {
        (Some(status), _) => {
            format!(
                "resent #{id} {how} to {url}: {status} in {} ms",
                attempt.latency_ms
            )
        }
        (None, Some(error)) => format!("resent #{id} {how} to {url}: {error}"),
        (None, None) => format!("resent #{id} {how} to {url}: no answer"),
    }
}
