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

/// `body` (an example of `event_type`) as a new event: the top-level `id` or `event_id` the
/// checks read an event id from made unique (a string keeps its prefix up to the last `_`,
/// then digits; a number becomes another), so a second example sent is not a duplicate of the
/// first. Kept as it is when the new id would not pass the schema (a pattern it misses).
pub fn as_new_event(contract: &Contract, event_type: &str, mut body: Value) -> Value {
    static SENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let unique = crate::domain::clock::now_ms().unsigned_abs() * 1000 + n % 1000;
    for key in ["id", "event_id"] {
        let fresh = match body.get(key) {
            Some(Value::String(id)) => {
                let prefix = id.rfind('_').map_or("", |at| &id[..=at]);
                Value::String(format!("{prefix}{unique}"))
            }
            Some(Value::Number(_)) => Value::from(unique),
            _ => continue,
        };
        let mut renamed = body.clone();
        renamed[key] = fresh;
        if contract.is_valid(event_type, &renamed) == Some(true) {
            body = renamed;
        }
    }
    body
}

/// The contract each of `file`'s endpoints names, as a path (relative ones in the config
/// file's folder), `None` for an endpoint with none.
fn paths_of(file: &crate::config::ConfigFile) -> Vec<Option<std::path::PathBuf>> {
    file.endpoints
        .iter()
        .map(|e| {
            e.contract
                .as_ref()
                .or(e.contract_dir.as_ref())
                .map(|name| crate::config::in_folder(file.base_dir.as_deref(), name))
        })
        .collect()
}

/// When a contract of `file`'s endpoints is not the one in use (a file of it changed, or a
/// change was compiled by someone else first), the settings resolved again and put in `shared`
/// at once, for the receiver's next delivery: `None` when nothing changed, else a sentence
/// (what was applied, or why the change was not: a contract that no longer compiles leaves the
/// one before in place, and the same failure is said once).
pub fn reload_if_changed(
    file: &crate::config::ConfigFile,
    overrides: &crate::config::Overrides,
    shared: &crate::capture::SharedSettings,
) -> Option<Result<String, AppError>> {
    let in_use = shared.get();
    let changed: Vec<std::path::PathBuf> = file
        .endpoints
        .iter()
        .zip(paths_of(file))
        .filter_map(|(config, path)| {
            let path = path?;
            let contract = in_use
                .endpoints
                .iter()
                .find(|e| e.path == config.path)
                .and_then(|e| e.contract.as_ref());
            // An endpoint the settings in use resolved without it (replaced by the command
            // line's) has no contract to keep up to date.
            let contract = contract?;
            crate::contracts::stale(&path, contract).then_some(path)
        })
        .collect();
    let first = changed.first()?;
    let name = first
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    static SAID: crate::domain::sync::Lock<Option<String>> = crate::domain::sync::Lock::new(None);
    let mut said = SAID.lock();
    match crate::config::Settings::resolve(file, overrides) {
        Ok(settings) => {
            shared.replace(settings);
            *said = None;
            Some(Ok(format!(
                "contract {name} changed: deliveries are checked against it from now"
            )))
        }
        Err(e) => {
            let sentence = format!("contract {name} changed, and is not applied: {e}");
            // Said once: the contract compiled before stays until the files change again.
            if said.as_deref() == Some(sentence.as_str()) {
                return None;
            }
            *said = Some(sentence.clone());
            Some(Err(AppError::Usage(sentence)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::contract::Document;
    use serde_json::json;

    #[test]
    fn a_new_event_changes_the_ids_the_schema_still_accepts_and_keeps_the_others() {
        let contract = Contract::build(
            "t.json",
            vec![Document {
                uri: "file:///t/t.json".into(),
                value: json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
                    "webhooks": {"order.paid": {"post": {"requestBody": {"content": {"application/json": {"schema": {
                        "type": "object", "required": ["id", "event_id"],
                        "properties": {"id": {"type": "string", "pattern": "^evt_[a-f0-9]{4}$"},
                                       "event_id": {"type": "integer"}}}}}}}}}}),
            }],
        )
        .expect("compiles");
        let body = json!({"id": "evt_9f2c", "event_id": 7, "note": "x"});
        let first = as_new_event(&contract, "order.paid", body.clone());
        let second = as_new_event(&contract, "order.paid", body.clone());
        // The id's pattern takes no longer number: kept. The integer event id is new each time.
        assert_eq!(first["id"], "evt_9f2c");
        assert_ne!(first["event_id"], body["event_id"]);
        assert_ne!(first["event_id"], second["event_id"]);
        assert_eq!(first["note"], "x");
        assert_eq!(contract.is_valid("order.paid", &first), Some(true));
    }
}
