//! The use cases: one typed function (or a small type) per capability, called by both front
//! ends. The CLI turns arguments into these calls and prints what comes back; the window's
//! engine turns commands into these calls and sends back events. Neither re-implements a use
//! case, a validation or a default.
//!
//! | capability | here |
//! |---|---|
//! | the capture session `listen` and the window run: lock, store, receiver, reconciler, retention, contract reload, health | [`capture`] |
//! | background work: a named thread, its runtime, a stop token | [`background`] |
//! | where the data and config live, the bind address and port | [`paths`] |
//! | the list, a page under a filter, one delivery | [`list`] |
//! | job timelines | [`jobs`] |
//! | checking one request offline | [`verify`] |
//! | resend a capture, as captured or re-signed | [`resend`] |
//! | the receiver checklist against a handler | [`probe`] |
//! | confirm a subscription by its URL (SNS, Event Grid) | [`confirm`] |
//! | compare two deliveries | [`compare`] |
//! | asking the job API what webhooks missed | [`reconcile`] |
//! | fixtures, HAR, curl out; HAR in | [`export`] |
//! | retention, delete, clear, re-check | [`history`] |
//! | the window's "Send a test delivery" | [`test_delivery`] |
//! | the JSON and human shapes of a delivery | [`report`] |
//! | the relay: serve it, its channels, the laptop's relay key | [`relay`] |
//! | what a use case refuses, typed, for each front end to say in its own terms | [`refused`] |

pub mod background;
pub mod capture;
pub mod compare;
pub mod confirm;
pub mod contract;
pub mod error;
pub mod export;
pub mod history;
pub mod jobs;
pub mod list;
pub mod paths;
pub mod probe;
pub mod reconcile;
pub mod refused;
pub mod relay;
pub mod replay;
pub mod report;
pub mod resend;
pub mod simulate;
pub mod test_delivery;
pub mod verify;

pub use error::AppError;
pub use refused::{Field, Refused};

/// A small single-threaded runtime for one outbound call from synchronous code (the CLI, the
/// engine's sender threads).
pub fn small_runtime() -> Result<tokio::runtime::Runtime, AppError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::Failed(format!("cannot start the event loop: {e}")))
}

/// A scheme by name: a `[[scheme]]` of the config, else a preset; an unknown name is a usage
/// error that lists the presets.
pub fn scheme_named(
    file: &crate::config::ConfigFile,
    name: &str,
) -> Result<crate::domain::scheme::Scheme, AppError> {
    crate::config::find_scheme(file, name)?.ok_or_else(|| {
        AppError::Usage(format!(
            "unknown scheme \"{name}\": use a preset ({}) or a [[scheme]] from the config",
            crate::config::preset_names()
        ))
    })
}
