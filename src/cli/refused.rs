//! What the use cases refuse ([`hookscope::app::Refused`]), said in the command line's terms:
//! each input by its flag (`--secret`, `--target`, `--any-host`), each remedy as the flag to
//! pass. The window says the same refusals with its fields (`ui::refusals`).
//!
//! Only `hookscope::` paths here: the engine's integration test reads this file too, to hold
//! the window's engine and the command line to the same refusals.

use hookscope::app::{AppError, Field, Refused};

/// What a refused certificate's sentence suggests on the command line.
pub const SELF_SIGNED_HINT: &str = "; for a development certificate, pass --insecure";

/// The flag that gives `field`.
fn flag(field: Field) -> &'static str {
    match field {
        Field::Target => "--target",
        Field::Jobs => "--jobs",
        Field::TimeScale => "--time-scale",
        Field::Handshake => "--handshake",
        Field::VerifyToken => "--verify-token",
        Field::Secret => "--secret",
        Field::Scheme => "--scheme",
        Field::DuplicateRate => "--duplicate-rate",
        Field::ReorderRate => "--reorder-rate",
        Field::DropRate => "--drop-rate",
        Field::LateRetryRate => "--late-retry-rate",
        Field::ResignWithTestSecret => "--resign-with-test-secret",
        Field::AnyHost => "--any-host",
        Field::Endpoint => "--endpoint",
    }
}

/// An error's sentence on the command line: a refusal in flags, anything else as it says.
pub fn sentence(err: &AppError) -> String {
    match err {
        AppError::Refused(refused) => say(refused),
        other => other.to_string(),
    }
}

/// A refusal in the command line's terms.
pub fn say(refused: &Refused) -> String {
    match refused {
        Refused::Invalid {
            field: Field::Secret,
            why,
        } => format!("--secret: {why}"),
        Refused::Invalid { field, why } => format!("{} {why}", flag(*field)),
        Refused::Missing { field, by } => missing(*field, *by),
        Refused::NotAboveZero { field, value } => {
            format!("{} {value} must be above 0", flag(*field))
        }
        Refused::NotAProbability { field, value } => format!(
            "{} {value} is not a probability between 0 and 1",
            flag(*field)
        ),
        Refused::NoSecret { scheme } => format!(
            "give --secret: the secret your handler verifies {scheme} signatures with (two during a rotation)"
        ),
        Refused::NoResignSecret { endpoint } => {
            format!("--resign needs a secret: endpoint {endpoint} has none; pass --secret")
        }
        Refused::NoResignScheme { has } => format!(
            "--resign needs a scheme: the delivery has {}; pass --scheme ({})",
            has.as_deref().unwrap_or("none"),
            hookscope::config::preset_names()
        ),
        Refused::RedactWithoutResign => "--redact changes the body, so the captured signature would no longer verify: add --resign-with-test-secret".into(),
        Refused::NoSchemeToExport { delivery } => {
            format!("delivery #{delivery} has no scheme to re-sign with: pass one (--scheme)")
        }
        Refused::NotProvidersHost {
            delivery,
            url,
            provider,
        } => format!(
            "delivery #{delivery}'s confirmation URL {url} is not on {}: anyone can post a SubscriptionConfirmation; if you trust it (LocalStack, a test double), pass --any-host",
            hookscope::app::refused::providers_hosts(*provider)
        ),
        Refused::JobWithoutApi { job } => format!(
            "job {job} belongs to no endpoint with a job API: name one with --endpoint"
        ),
    }
}

/// `field` is needed because `by` was given.
fn missing(field: Field, by: Field) -> String {
    match (field, by) {
        (Field::Target, Field::Jobs) => {
            "--jobs needs --target: the handler the webhooks go to".into()
        }
        (Field::Target, Field::Handshake) => {
            "--handshake needs --target: the handler that answers it".into()
        }
        (Field::VerifyToken, Field::Handshake) => "--handshake meta needs --verify-token: the Verify token your handler checks (not the app secret)".into(),
        (field, by) => format!("{} needs {}", flag(by), flag(field)),
    }
}
