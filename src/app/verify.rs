//! Checking one request offline, as `hookscope verify` does: a request given piece by piece
//! (headers, body, URL) or a fixture exported by hookscope, checked with a scheme and secrets at
//! a given time.

use crate::app::{AppError, scheme_named};
use crate::config::ConfigFile;
use crate::domain::checks::{self, Evaluation, SignatureStatus, TimestampStatus};
use crate::domain::clock::now_secs;
use crate::domain::delivery::{Delivery, Header};
use crate::domain::endpoint::Endpoint;
use crate::domain::scheme::Secret;

/// What to check.
#[derive(Debug, Clone)]
pub enum Source {
    /// A request given piece by piece.
    Request {
        /// `Name: value` lines, curl style.
        headers: Vec<String>,
        /// The body's exact bytes.
        body: Vec<u8>,
        /// The URL it was sent to (its path and query are recorded), if known.
        url: Option<String>,
    },
    /// A fixture's text; `name` labels errors (the file's path).
    Fixture {
        /// The fixture JSON.
        text: String,
        /// How to name it in a sentence.
        name: String,
    },
}

/// A verify request.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    /// The scheme (default for a fixture: the fixture's).
    pub scheme: Option<String>,
    /// Secrets to try (default for a fixture: its test secret).
    pub secrets: Vec<String>,
    /// The time of receipt, Unix seconds (default: now; for a fixture, its recorded time).
    pub now: Option<i64>,
    /// Tolerance override in seconds.
    pub tolerance_secs: Option<u64>,
    /// A contract to check the body against (`--contract`): an OpenAPI or AsyncAPI file, or a
    /// folder of JSON Schemas.
    pub contract: Option<std::path::PathBuf>,
    /// The request or fixture.
    pub source: Source,
}

/// The outcome: the request as checked, the verdicts, and whether it passes.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The request as checked.
    pub delivery: Delivery,
    /// The verdicts.
    pub evaluation: Evaluation,
    /// The signature passes and the timestamp passes, warns or is not signed.
    pub ok: bool,
}

/// Checks one request or fixture.
pub fn verify(file: &ConfigFile, request: VerifyRequest) -> Result<Verified, AppError> {
    // An absolute URL is the one the sender posted to: schemes that sign it (Twilio) use it.
    let public_url = match &request.source {
        Source::Request { url: Some(url), .. } if url.contains("://") => Some(url.clone()),
        _ => None,
    };
    let (delivery, fixture_scheme, fixture_secret) = match request.source {
        Source::Fixture { text, name } => {
            let loaded = crate::export::load_fixture(&text)
                .map_err(|e| AppError::Usage(format!("{name}: {e}")))?;
            (loaded.delivery, loaded.scheme, Some(loaded.secret))
        }
        Source::Request { headers, body, url } => (
            request_delivery(&headers, body, url.as_deref(), request.now)?,
            None,
            None,
        ),
    };
    let contract = request
        .contract
        .as_deref()
        .map(|path| {
            let loaded = if path.is_dir() {
                crate::contracts::load_dir(path)
            } else {
                crate::contracts::load(path)
            };
            loaded.map_err(|e| AppError::Usage(format!("--contract: {e}")))
        })
        .transpose()?;
    // With a contract alone, the body is what is checked: no scheme is needed.
    let scheme_name = request.scheme.or(fixture_scheme);
    let scheme = match scheme_name {
        None if contract.is_some() => None,
        name => {
            let mut scheme = scheme_named(file, name.as_deref().unwrap_or_default())?;
            if public_url.is_some() {
                scheme.public_url.clone_from(&public_url);
            }
            Some(scheme)
        }
    };
    let secrets: Vec<Secret> = match fixture_secret {
        Some(secret) if request.secrets.is_empty() => match secret {
            Some(secret) => vec![secret],
            None => {
                return Err(AppError::Usage(
                    "the fixture was exported as captured and holds no secret: give --secret"
                        .into(),
                ));
            }
        },
        _ => request.secrets.iter().map(Secret::new).collect(),
    };
    let now = request
        .now
        .unwrap_or_else(|| delivery.received_at_ms.div_euclid(1000));
    let signed = scheme.is_some();
    if signed && secrets.is_empty() {
        return Err(AppError::Usage(
            "a scheme needs a secret to verify with: give --secret (or leave --scheme out to check the body against --contract alone)".into(),
        ));
    }
    let endpoint = Endpoint {
        scheme,
        contract,
        secrets,
        tolerance_secs: request.tolerance_secs,
        public_url,
        advice: crate::config::advice_rules(file, None),
        ..Endpoint::catch_all()
    };
    let evaluation = checks::evaluate(&delivery, &endpoint, now);
    let signature_ok = !signed
        || evaluation.signature.status == SignatureStatus::Pass
            && matches!(
                evaluation.timestamp.status,
                TimestampStatus::Pass | TimestampStatus::Warn | TimestampStatus::Skipped
            );
    // A schema that could not be chosen is no pass: the body was not checked.
    let schema_ok = evaluation
        .schema
        .as_ref()
        .is_none_or(|s| s.status == crate::domain::contract::SchemaStatus::Pass);
    let ok = signature_ok && schema_ok;
    Ok(Verified {
        delivery,
        evaluation,
        ok,
    })
}

/// The delivery a request given piece by piece stands for, received at `now` (default: now).
fn request_delivery(
    raw_headers: &[String],
    body: Vec<u8>,
    url: Option<&str>,
    now: Option<i64>,
) -> Result<Delivery, AppError> {
    let headers = raw_headers
        .iter()
        .map(|raw| parse_header(raw))
        .collect::<Result<Vec<_>, _>>()?;
    let (path, query) = match url {
        Some(url) => split_url(url),
        None => ("/".to_string(), String::new()),
    };
    let now = now.unwrap_or_else(now_secs);
    Ok(Delivery {
        received_at_ms: now.saturating_mul(1000),
        method: "POST".into(),
        path,
        query,
        headers,
        body_size: body.len() as u64,
        body,
        body_complete: true,
        remote_addr: None,
    })
}

/// A curl-style `Name: value` header.
pub fn parse_header(raw: &str) -> Result<Header, AppError> {
    let Some((name, value)) = raw.split_once(':') else {
        return Err(AppError::Usage(format!(
            "-H '{raw}' is not of the form 'Name: value'"
        )));
    };
    let name = name.trim();
    if name.is_empty()
        || name
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return Err(AppError::Usage(format!(
            "-H '{raw}' has an invalid header name"
        )));
    }
    Ok(Header::new(name, value.trim()))
}

/// The path and query of a URL (or of a bare path).
pub fn split_url(url: &str) -> (String, String) {
    let after_scheme = url.split_once("://").map(|(_, rest)| rest).unwrap_or(url);
    let path_and_query = match after_scheme.find('/') {
        Some(i) if url.contains("://") => &after_scheme[i..],
        None if url.contains("://") => "/",
        _ => after_scheme,
    };
    let without_fragment = path_and_query.split('#').next().unwrap_or("/");
    match without_fragment.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (without_fragment.to_string(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_path_and_query() {
        assert_eq!(
            split_url("https://example.com/hooks/a?x=1#f"),
            ("/hooks/a".into(), "x=1".into())
        );
        assert_eq!(
            split_url("https://example.com"),
            ("/".into(), String::new())
        );
        assert_eq!(split_url("/hooks?y=2"), ("/hooks".into(), "y=2".into()));
    }

    #[test]
    fn header_arguments_need_a_name_and_a_colon() {
        assert_eq!(
            parse_header("X-Sig:  abc ").expect("parses"),
            Header::new("X-Sig", "abc")
        );
        assert!(parse_header("no colon").expect_err("bad").is_usage());
        assert!(parse_header("bad name: x").expect_err("bad").is_usage());
    }
}
