//! What a use case answers when it cannot do what was asked. The CLI maps [`AppError::Usage`]
//! to exit status 2 and everything else to 1; the window shows the sentence.

use crate::config::ConfigError;
use crate::export::ExportError;
use crate::net::client::SendError;
use crate::store::StoreError;

/// Why a use case did not run.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The request itself is wrong: an unknown scheme, a missing delivery, a bad URL or filter.
    /// The sentence says what to change.
    #[error("{0}")]
    Usage(String),
    /// The request itself is wrong, as a typed refusal: each front end says it in its own
    /// terms (the `Display` names neither a flag nor a field). A usage error too.
    #[error("{0}")]
    Refused(crate::app::Refused),
    /// The filter text does not parse; the sentence says which term and what it takes. A usage
    /// error too: the CLI names the flag it came from, the window shows it beside the filter.
    #[error(transparent)]
    Filter(#[from] crate::domain::filter::FilterError),
    /// The config file could not be read, parsed or written.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store could not be opened, read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Something else went wrong on the way (I/O, the event loop); the sentence says what.
    #[error("{0}")]
    Failed(String),
}

impl AppError {
    /// Whether the request was wrong (exit status 2) rather than the machine (1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            AppError::Usage(_) | AppError::Refused(_) | AppError::Filter(_)
        )
    }
}

impl From<crate::app::Refused> for AppError {
    fn from(refused: crate::app::Refused) -> Self {
        AppError::Refused(refused)
    }
}

impl From<SendError> for AppError {
    fn from(err: SendError) -> Self {
        match err {
            SendError::BadUrl(message) => AppError::Usage(message),
            // The secret came from the user (an argument or the config): exit 2 like any bad
            // argument.
            sign @ SendError::Sign(_) => AppError::Usage(sign.to_string()),
            other => AppError::Failed(other.to_string()),
        }
    }
}

impl From<ExportError> for AppError {
    fn from(err: ExportError) -> Self {
        match err {
            ExportError::NoScheme(_) | ExportError::Redact { .. } => {
                AppError::Usage(err.to_string())
            }
            other => AppError::Failed(other.to_string()),
        }
    }
}
