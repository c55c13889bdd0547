//! Probing a handler with the receiver checklist (`hookscope probe`, the *Probe handler*
//! window): the scheme looked up the same way for both, the cases run by `net::probe`.

use std::time::Duration;

use crate::app::{AppError, scheme_named};
use crate::config::ConfigFile;
use crate::domain::scheme::{Scheme, Secret};
use crate::net::client::{self, Tls};
use crate::net::probe::{self, ProbeReport};

/// What to probe and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeRequest {
    /// The handler's URL.
    pub url: String,
    /// The scheme the handler verifies.
    pub scheme: String,
    /// The handler's secrets.
    pub secrets: Vec<String>,
    /// A body to send (JSON; its top-level `"id"` is replaced in each case).
    pub body: Option<Vec<u8>>,
    /// How long the handler has to answer (the sender's timeout).
    pub timeout: Duration,
    /// Accept any TLS certificate (`--insecure`): a self-signed development certificate.
    pub insecure: bool,
    /// Meta's Verify token, for the handshake case of the `meta` scheme.
    pub verify_token: Option<String>,
    /// What a refused certificate's sentence suggests, in the words of the front end that asks
    /// (the client's own when it names none).
    pub self_signed_hint: Option<&'static str>,
}

impl ProbeRequest {
    /// A probe with the default body and timeout.
    pub fn new(url: impl Into<String>, scheme: impl Into<String>, secrets: Vec<String>) -> Self {
        Self {
            url: url.into(),
            scheme: scheme.into(),
            secrets,
            body: None,
            timeout: client::DEFAULT_TIMEOUT,
            insecure: false,
            verify_token: None,
            self_signed_hint: None,
        }
    }
}

/// A probe ready to run: the scheme found, the secrets wrapped.
#[derive(Debug, Clone)]
pub struct PreparedProbe {
    request: ProbeRequest,
    scheme: Scheme,
    secrets: Vec<Secret>,
}

/// Looks the scheme up; an unknown one is a usage error.
pub fn prepare(file: &ConfigFile, request: ProbeRequest) -> Result<PreparedProbe, AppError> {
    let scheme = scheme_named(file, &request.scheme)?;
    let secrets = request.secrets.iter().map(Secret::new).collect();
    Ok(PreparedProbe {
        request,
        scheme,
        secrets,
    })
}

/// Runs every case against the handler.
pub async fn run(prepared: &PreparedProbe) -> Result<ProbeReport, AppError> {
    let client = crate::app::resend::client_for(
        prepared.request.timeout,
        Tls::insecure_if(prepared.request.insecure),
        prepared.request.self_signed_hint,
    )?;
    Ok(probe::probe(
        &client,
        &prepared.request.url,
        &prepared.scheme,
        &prepared.secrets,
        prepared.request.body.clone(),
        prepared.request.verify_token.as_deref(),
    )
    .await?)
}
