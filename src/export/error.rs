//! What an export is asked for (the format, how fixtures are signed) and what can go wrong.

use crate::domain::scheme::Scheme;

/// Errors exporting or importing.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Re-signing needs a scheme and the delivery has none.
    #[error("delivery #{0} has no scheme to re-sign with")]
    NoScheme(i64),
    /// A redaction pointer is not in the body.
    #[error("delivery #{id}: {reason}")]
    Redact {
        /// The delivery.
        id: i64,
        /// What went wrong.
        reason: String,
    },
    /// Signing failed.
    #[error("cannot sign: {0}")]
    Sign(#[from] crate::domain::scheme::KeyError),
    /// A file is not a fixture or not a HAR.
    #[error("{0}")]
    Format(String),
}

/// How an export signs the fixtures.
#[derive(Debug, Clone, Default)]
pub struct FixtureOptions {
    /// Re-sign with a generated test secret (and this scheme, or the delivery's).
    pub resign_with_test_secret: bool,
    /// The scheme to re-sign with when the delivery has none.
    pub scheme: Option<Scheme>,
    /// JSON pointers whose values are replaced by `"[redacted]"`.
    pub redact: Vec<String>,
    /// By delivery id, when the delivery was checked against a contract: that contract as its
    /// endpoint has it now (its schema is bundled into the fixture for the tests beside it), or
    /// why it cannot be had.
    pub contracts: std::collections::BTreeMap<
        i64,
        Result<std::sync::Arc<crate::domain::contract::Contract>, String>,
    >,
}

/// The formats an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// hookscope fixtures.
    Fixture,
    /// HAR 1.2.
    Har,
    /// A shell script of curl commands.
    Curl,
}
