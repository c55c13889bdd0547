//! What a use case refuses, as a typed value: which input is wrong or missing and what is known
//! about it, never a front end's words. The command line says a refusal with its flags
//! (`cli::refused`), the window with its fields (`ui::refusals`); [`Refused::field`] names the
//! input, so a front end can show the refusal beside it.
//!
//! The `Display` here is a plain sentence naming neither a flag nor a field, for logs and for a
//! report written before a front end words it.

use crate::domain::handshake::Provider;

/// An input a refusal is about, as both front ends have it (a flag on the command line, a field
/// or checkbox in the window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The handler a simulation sends to (`--target`, *Target*).
    Target,
    /// How many jobs a simulation creates (`--jobs`, *Jobs*).
    Jobs,
    /// How fast a simulation's clock runs (`--time-scale`, *Time scale*).
    TimeScale,
    /// The provider whose handshake goes first (`--handshake`, *Handshake*).
    Handshake,
    /// Meta's Verify token (`--verify-token`, *Verify token*).
    VerifyToken,
    /// The signing secret (`--secret`, *Secret*).
    Secret,
    /// The signing scheme (`--scheme`, *Scheme*).
    Scheme,
    /// The share of events sent twice (`--duplicate-rate`, *Duplicates*).
    DuplicateRate,
    /// The share of events sent out of order (`--reorder-rate`, *Reorders*).
    ReorderRate,
    /// The share of events never sent (`--drop-rate`, *Drops*).
    DropRate,
    /// The share of events retried late (`--late-retry-rate`, *Late retries*).
    LateRetryRate,
    /// Re-signing an export with a generated test secret (`--resign-with-test-secret`, the
    /// fixture's re-sign checkbox).
    ResignWithTestSecret,
    /// Confirming a URL that is not on the provider's hosts (`--any-host`, its checkbox).
    AnyHost,
    /// The endpoint whose job API is asked (`--endpoint`, the config's `[endpoint.reconcile]`).
    Endpoint,
}

/// Why a use case did not do what was asked, in terms of its inputs.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// `field` holds something it cannot take; `why` says what is wrong with the value (it
    /// names no front end's control).
    Invalid {
        /// The input.
        field: Field,
        /// What is wrong with it.
        why: String,
    },
    /// `field` is needed because `by` was given.
    Missing {
        /// The input to give.
        field: Field,
        /// The input that needs it.
        by: Field,
    },
    /// A simulation's time scale is not above 0.
    NotAboveZero {
        /// The input.
        field: Field,
        /// Its value.
        value: f64,
    },
    /// A chaos rate is not a probability.
    NotAProbability {
        /// The input.
        field: Field,
        /// Its value.
        value: f64,
    },
    /// A simulation has no secret to sign with.
    NoSecret {
        /// The scheme's label, for what the secret verifies.
        scheme: String,
    },
    /// Re-signing a delivery needs a secret and its endpoint has none.
    NoResignSecret {
        /// The endpoint's path.
        endpoint: String,
    },
    /// Re-signing a delivery needs a scheme: it has none, or one not known (`has`).
    NoResignScheme {
        /// The delivery's scheme, when it names one.
        has: Option<String>,
    },
    /// Redacting an export without re-signing it: the captured signature would not verify.
    RedactWithoutResign,
    /// An exported delivery has no scheme to re-sign with.
    NoSchemeToExport {
        /// The delivery.
        delivery: i64,
    },
    /// A confirmation URL is not on the provider's own hosts.
    NotProvidersHost {
        /// The delivery whose URL it is.
        delivery: i64,
        /// The URL.
        url: String,
        /// The provider that should own it.
        provider: Provider,
    },
    /// A job named for reconciling belongs to no endpoint with a job API.
    JobWithoutApi {
        /// The job.
        job: String,
    },
}

impl Refused {
    /// The input to change, for showing the refusal beside it.
    pub fn field(&self) -> Field {
        match self {
            Refused::Invalid { field, .. }
            | Refused::Missing { field, .. }
            | Refused::NotAboveZero { field, .. }
            | Refused::NotAProbability { field, .. } => *field,
            Refused::NoSecret { .. } | Refused::NoResignSecret { .. } => Field::Secret,
            Refused::NoResignScheme { .. } | Refused::NoSchemeToExport { .. } => Field::Scheme,
            Refused::RedactWithoutResign => Field::ResignWithTestSecret,
            Refused::NotProvidersHost { .. } => Field::AnyHost,
            Refused::JobWithoutApi { .. } => Field::Endpoint,
        }
    }
}

/// The provider's own hosts, as a refusal about a confirmation URL names them.
pub fn providers_hosts(provider: Provider) -> &'static str {
    match provider {
        Provider::Sns => "AWS SNS's (https://sns.REGION.amazonaws.com)",
        _ => "Azure Event Grid's (https://….eventgrid.azure.net)",
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Invalid { field, why } => write!(f, "{field:?}: {why}"),
            Refused::Missing { field, by } => write!(f, "{by:?} needs {field:?}"),
            Refused::NotAboveZero { field, value } => {
                write!(f, "{field:?} {value} must be above 0")
            }
            Refused::NotAProbability { field, value } => {
                write!(f, "{field:?} {value} is not a probability between 0 and 1")
            }
            Refused::NoSecret { scheme } => {
                write!(f, "no secret to sign {scheme} webhooks with")
            }
            Refused::NoResignSecret { endpoint } => {
                write!(f, "re-signing needs a secret: endpoint {endpoint} has none")
            }
            Refused::NoResignScheme { has } => write!(
                f,
                "re-signing needs a scheme: the delivery has {}",
                has.as_deref().unwrap_or("none")
            ),
            Refused::RedactWithoutResign => write!(
                f,
                "redacting changes the body, so the captured signature would no longer verify"
            ),
            Refused::NoSchemeToExport { delivery } => {
                write!(f, "delivery #{delivery} has no scheme to re-sign with")
            }
            Refused::NotProvidersHost {
                delivery,
                url,
                provider,
            } => write!(
                f,
                "delivery #{delivery}'s confirmation URL {url} is not on {}",
                providers_hosts(*provider)
            ),
            Refused::JobWithoutApi { job } => {
                write!(f, "job {job} belongs to no endpoint with a job API")
            }
        }
    }
}
