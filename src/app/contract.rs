//! A contract from the command line or the window: loaded by its path (a file, or a folder of
//! JSON Schemas) and asked for a valid example of an event type. `hookscope example` and the
//! window's test delivery from a contract both come here.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::app::AppError;
use crate::domain::contract::Contract;

/// The contract at `path`: an OpenAPI or AsyncAPI file, or a folder of JSON Schemas.
pub fn load(path: &Path) -> Result<Arc<Contract>, AppError> {
    let loaded = if path.is_dir() {
        crate::contracts::load_dir(path)
    } else {
        crate::contracts::load(path)
    };
    loaded.map_err(|e| AppError::Usage(e.to_string()))
}

/// An example body of `event_type`, and whether the contract gave it (else it was made from
/// the schema). An event type the contract does not describe is a usage error that lists the
/// ones it does.
pub fn example(contract: &Contract, event_type: &str) -> Result<(Value, bool), AppError> {
    contract.example(event_type).ok_or_else(|| {
        AppError::Usage(format!(
            "no schema in {} for event type {event_type} (it has: {})",
            contract.name,
            contract.event_types().join(", ")
        ))
    })
}

/// The contract files `file`'s endpoints name, as paths (relative ones in the config file's
/// folder).
pub fn paths(file: &crate::config::ConfigFile) -> Vec<std::path::PathBuf> {
    file.endpoints
        .iter()
        .filter_map(|e| e.contract.as_ref().or(e.contract_dir.as_ref()))
        .map(|name| match &file.base_dir {
            Some(dir) => dir.join(name),
            None => std::path::PathBuf::from(name),
        })
        .collect()
}

/// When a contract file of `file`'s endpoints changed since it was compiled, the settings
/// resolved again and put in `shared`, at once, for the receiver's next delivery: `None` when
/// nothing changed, else a sentence (what was applied, or why the change was not: a contract
/// that no longer compiles leaves the one before in place).
pub fn reload_if_changed(
    file: &crate::config::ConfigFile,
    overrides: &crate::config::Overrides,
    shared: &crate::net::receiver::SharedSettings,
) -> Option<Result<String, AppError>> {
    let changed: Vec<std::path::PathBuf> = paths(file)
        .into_iter()
        .filter(|p| crate::contracts::changed(p))
        .collect();
    let first = changed.first()?;
    let name = first
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Some(match crate::config::Settings::resolve(file, overrides) {
        Ok(settings) => {
            match shared.write() {
                Ok(mut guard) => *guard = Arc::new(settings),
                Err(poisoned) => *poisoned.into_inner() = Arc::new(settings),
            }
            Ok(format!(
                "contract {name} changed: deliveries are checked against it from now"
            ))
        }
        Err(e) => {
            // Said once: the contract compiled before stays until the file changes again.
            for path in &changed {
                crate::contracts::acknowledge(path);
            }
            Err(AppError::Usage(format!(
                "contract {name} changed, and is not applied: {e}"
            )))
        }
    })
}
