//! What the use cases refuse ([`hookscope::app::Refused`]), said in the window's terms: each
//! input by the field or checkbox that gives it (*Secret*, *Target*, *Confirm a host that is
//! not the provider's*), never a command-line flag. The command line says the same refusals
//! with its flags (`cli::refused`). [`Refused::field`] names the input a refusal is about.

use hookscope::app::{Field, Refused};
use hookscope::engine::Failure;

/// What a refused certificate's sentence suggests in the window (resend, probe, replay).
pub(super) const SELF_SIGNED_HINT: &str =
    "; for a development certificate, tick accept self-signed certificates";

/// What a refused certificate's sentence suggests in the Simulate view, which has no checkbox
/// for it.
pub(super) const SIMULATE_SELF_SIGNED_HINT: &str = "; the Simulate view verifies every certificate: give an http:// target, or run hookscope simulate with --insecure";

/// The field's name as the window labels it.
fn label(field: Field) -> &'static str {
    match field {
        Field::Target => "Target",
        Field::Jobs => "Jobs",
        Field::TimeScale => "Time scale",
        Field::Handshake => "Handshake",
        Field::VerifyToken => "Verify token",
        Field::Secret => "Secret",
        Field::Scheme => "Scheme",
        Field::DuplicateRate => "Duplicates",
        Field::ReorderRate => "Reorders",
        Field::DropRate => "Drops",
        Field::LateRetryRate => "Late retries",
        Field::ResignWithTestSecret => "re-sign with a generated test secret",
        Field::AnyHost => "Confirm a host that is not the provider's",
        Field::Endpoint => "Endpoint",
    }
}

/// A refusal after `context` (what was being done, or nothing), for the status line.
pub(super) fn said(context: &str, refused: &Refused) -> String {
    format!("{context}{}", say(refused))
}

/// Why something ended without a result, in the window's terms.
pub(super) fn failure(failure: &Failure) -> String {
    match failure {
        Failure::Said(sentence) => sentence.clone(),
        Failure::Refused(refused) => say(refused),
    }
}

/// A refusal in the window's terms.
pub(super) fn say(refused: &Refused) -> String {
    match refused {
        Refused::Invalid {
            field: Field::Secret,
            why,
        } => format!("the Secret field: {why}"),
        Refused::Invalid { field, why } => format!("the {} {why}", label(*field)),
        Refused::Missing { field, by } => missing(*field, *by),
        Refused::NotAboveZero { field, value } => {
            format!("the {} ({value}) must be above 0", label(*field))
        }
        Refused::NotAProbability { field, value } => format!(
            "{} {value} is not a probability between 0 and 1",
            label(*field)
        ),
        Refused::NoSecret { scheme } => format!(
            "enter the secret your handler verifies {scheme} signatures with in the Secret field"
        ),
        Refused::NoResignSecret { endpoint } => format!(
            "re-signing needs a secret: endpoint {endpoint} has none; enter one in the Secret field"
        ),
        Refused::NoResignScheme { has } => format!(
            "re-signing needs a scheme: the delivery has {}; choose one in the Scheme list",
            has.as_deref().unwrap_or("none")
        ),
        Refused::RedactWithoutResign => "redacting changes the body, so the captured signature would no longer verify: tick re-sign with a generated test secret (a fixture)".into(),
        Refused::NoSchemeToExport { delivery } => format!(
            "delivery #{delivery} has no scheme to re-sign with: give its endpoint a scheme in Endpoints & secrets, or export it as captured"
        ),
        Refused::NotProvidersHost { provider, .. } => format!(
            "the confirmation URL is not on {}: anyone can post a SubscriptionConfirmation; if you trust it (LocalStack, a test double), tick {}",
            hookscope::app::refused::providers_hosts(*provider),
            label(Field::AnyHost)
        ),
        Refused::JobWithoutApi { job } => format!(
            "job {job} belongs to no endpoint with a job API: give its endpoint [endpoint.reconcile] with job_url in config.toml"
        ),
    }
}

/// `field` is needed because `by` was given.
fn missing(field: Field, by: Field) -> String {
    match (field, by) {
        (Field::Target, Field::Jobs) => "enter a Target: the handler the webhooks go to".into(),
        (Field::Target, Field::Handshake) => {
            "enter a Target: the handler that answers the handshake".into()
        }
        (Field::VerifyToken, Field::Handshake) => {
            "enter the Verify token your handler checks (not the app secret) for Meta's handshake"
                .into()
        }
        (field, by) => format!("the {} needs the {}", label(by), label(field)),
    }
}

#[cfg(test)]
mod tests {
    use hookscope::app::AppError;
    use hookscope::app::export::{ExportRequest, export};
    use hookscope::app::simulate::{ChaosOverrides, SimulateRequest, prepare};
    use hookscope::config::ConfigFile;
    use hookscope::export::Format;
    use hookscope::store::Reader;

    /// An error as the command line says it.
    fn on_the_command_line(err: AppError) -> String {
        crate::cli::refused::sentence(&err)
    }

    /// An error as the window says it.
    fn in_the_window(err: AppError) -> String {
        match err {
            AppError::Refused(refused) => super::say(&refused),
            other => other.to_string(),
        }
    }

    /// Every refusal the Simulate view can get names the window's fields, never a
    /// command-line flag; the command line keeps its flags.
    #[test]
    fn the_window_is_refused_in_its_own_terms() {
        let file = ConfigFile::default();
        let ok = SimulateRequest {
            target: Some("http://127.0.0.1:9/hooks".into()),
            jobs: Some(1),
            secrets: vec!["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into()],
            ..SimulateRequest::default()
        };
        let bad: Vec<SimulateRequest> = vec![
            SimulateRequest {
                secrets: Vec::new(),
                ..ok.clone()
            },
            SimulateRequest {
                secrets: vec!["not base64 !".into()],
                ..ok.clone()
            },
            SimulateRequest {
                target: None,
                ..ok.clone()
            },
            SimulateRequest {
                target: Some("ftp://x".into()),
                ..ok.clone()
            },
            SimulateRequest {
                time_scale: Some(0.0),
                ..ok.clone()
            },
            SimulateRequest {
                chaos: ChaosOverrides {
                    duplicate_rate: Some(1.5),
                    ..ChaosOverrides::default()
                },
                ..ok.clone()
            },
        ];
        assert!(prepare(&file, &ok).is_ok());
        for request in bad {
            let cli = on_the_command_line(prepare(&file, &request).expect_err("refused"));
            assert!(cli.contains("--"), "the command line names its flag: {cli}");
            let said = in_the_window(prepare(&file, &request).expect_err("refused"));
            assert!(!said.contains("--"), "a flag in the window: {said}");
        }
        let none = SimulateRequest {
            secrets: Vec::new(),
            ..ok
        };
        assert_eq!(
            in_the_window(prepare(&file, &none).expect_err("no secret")),
            "enter the secret your handler verifies Standard Webhooks signatures with in the Secret field"
        );
    }

    #[test]
    fn a_redaction_without_re_signing_is_refused_in_each_front_ends_terms() {
        let dir = tempfile::tempdir().expect("tempdir");
        let reader = Reader::open(&dir.path().join("s.sqlite")).expect("reader");
        let request = ExportRequest {
            ids: vec![1],
            filter: None,
            format: Format::Har,
            resign_with_test_secret: false,
            scheme: None,
            redact: vec!["/data/email".into()],
            snippets: false,
            out: dir.path().join("out.har"),
        };
        let cli = on_the_command_line(
            export(&ConfigFile::default(), &reader, &request).expect_err("refused"),
        );
        assert!(cli.contains("--resign-with-test-secret"), "{cli}");
        let window =
            in_the_window(export(&ConfigFile::default(), &reader, &request).expect_err("refused"));
        assert!(!window.contains("--"), "{window}");
        assert!(
            window.contains("tick re-sign with a generated test secret"),
            "{window}"
        );
    }
}
