//! Confirming a subscription a provider asked to be confirmed by a URL: AWS SNS's
//! `SubscribeURL`, Azure Event Grid's `validationUrl` (manual validation). hookscope never fetches
//! it by itself; this is the one GET the user starts (`hookscope confirm ID`, *Confirm
//! subscription* in the window), recorded as an attempt on the handshake's delivery.

use std::time::Duration;

use crate::app::AppError;
use crate::domain::attempt::{Attempt, AttemptKind};
use crate::domain::handshake::Provider;
use crate::net::client::{Client, Outgoing, Tls};
use crate::store::{Reader, StoreWriter};

/// A confirmation ready to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    /// The handshake's delivery.
    pub delivery_id: i64,
    /// Whose subscription.
    pub provider: Provider,
    /// The URL to GET.
    pub url: String,
}

/// Whether `url` is the provider's own: https on AWS SNS's hosts (`sns.REGION.amazonaws.com`,
/// `.com.cn` in China) or Event Grid's (`*.eventgrid.azure.net`).
pub fn is_providers_own(provider: Provider, url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let host = parsed.host_str().unwrap_or("").to_ascii_lowercase();
    let https = parsed.scheme() == "https";
    match provider {
        Provider::Sns => {
            let rest = host
                .strip_suffix(".amazonaws.com")
                .or_else(|| host.strip_suffix(".amazonaws.com.cn"));
            https
                && rest.is_some_and(|r| {
                    r.strip_prefix("sns.")
                        .is_some_and(|region| !region.is_empty() && !region.contains('.'))
                })
        }
        Provider::EventGrid => https && host.ends_with(".eventgrid.azure.net"),
        _ => false,
    }
}

/// The confirmation delivery `id` asks for; a usage error when it is not a handshake with a
/// URL to confirm, or when the URL is not on the provider's own hosts and `any_host` is not set
/// (a forged SubscriptionConfirmation could name any URL; a test double such as LocalStack is
/// confirmed with `any_host`).
pub fn prepare(reader: &Reader, id: i64, any_host: bool) -> Result<Confirmation, AppError> {
    let stored = reader
        .get(id)?
        .ok_or_else(|| AppError::Usage(format!("no delivery #{id} in the store")))?;
    let Some(handshake) = stored.handshake else {
        return Err(AppError::Usage(format!(
            "delivery #{id} is not a handshake: only an AWS SNS SubscriptionConfirmation or an Event Grid validation carries a URL to confirm"
        )));
    };
    let url = handshake.confirm_url.ok_or_else(|| {
        AppError::Usage(format!(
            "delivery #{id} is {}'s {}, which has no URL to confirm",
            handshake.provider.label(),
            handshake.provider.what()
        ))
    })?;
    crate::net::client::check_url(&url)
        .map_err(|e| AppError::Usage(format!("delivery #{id}'s confirmation URL: {e}")))?;
    if !any_host && !is_providers_own(handshake.provider, &url) {
        return Err(crate::app::Refused::NotProvidersHost {
            delivery: id,
            url,
            provider: handshake.provider,
        }
        .into());
    }
    Ok(Confirmation {
        delivery_id: id,
        provider: handshake.provider,
        url,
    })
}

/// Makes the GET and records it as a `confirm` attempt on the delivery. No answer is an attempt
/// with an error, not an `Err`.
pub async fn send(confirmation: &Confirmation, writer: &StoreWriter) -> Result<Attempt, AppError> {
    let client = Client::with_tls(Duration::from_secs(15), Tls::Verify)?;
    let outgoing = Outgoing {
        method: "GET".into(),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let mut attempt = client
        .send(
            &confirmation.url,
            &outgoing,
            AttemptKind::Confirm,
            Some(confirmation.delivery_id),
        )
        .await?;
    attempt.id = writer.attempt(attempt.clone()).await?;
    Ok(attempt)
}

/// One sentence on how it went.
pub fn summary(confirmation: &Confirmation, attempt: &Attempt) -> String {
    let (id, who) = (confirmation.delivery_id, confirmation.provider.label());
    match (attempt.status, &attempt.error) {
        (Some(status), _) if attempt.succeeded() => format!(
            "confirmed {who}'s subscription of #{id}: {status} in {} ms",
            attempt.latency_ms
        ),
        (Some(status), _) => format!(
            "{who} refused the confirmation of #{id}: {status} (the URL may have expired: SNS's lasts 3 days, Event Grid's 10 minutes)"
        ),
        (None, Some(error)) => format!("could not confirm #{id} with {who}: {error}"),
        (None, None) => format!("could not confirm #{id} with {who}: no answer"),
    }
}
