//! Captures out and back in: test fixtures, HAR 1.2 and curl, and HAR import.
//!
//! A fixture keeps the body exactly (text when it is UTF-8, base64 otherwise) and says how it
//! was signed: *as captured* (the original signature headers, no secret written) or re-signed
//! with a generated test secret that is written into the fixture, so it verifies in the
//! developer's own tests while the real secret never leaves hookscope. Redaction replaces JSON
//! values in place (the rest of the bytes untouched) before re-signing.

use serde_json::Value;

use crate::domain::scheme::Scheme;
use crate::store::StoredDelivery;

pub mod curl;
pub mod fixture;
pub mod har;
pub mod import;
pub mod redact;
pub mod snippets;

pub use curl::curl;
pub use fixture::{LoadedFixture, bundle, fixture, load_fixture, test_secret};
pub use har::{HarRequest, har, read_har};
pub use import::import_records;
pub use redact::redact;
pub use snippets::snippets;

/// Errors exporting or importing.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Re-signing needs a scheme and the delivery has none.
    #[error("delivery #{0} has no scheme to re-sign with: pass one (--scheme)")]
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

/// Writes `selected` to `out` in `format`; returns the files written. For fixtures, a directory
/// (existing, or a path ending in `/`) gets one file per delivery; a file gets one fixture or a
/// bundle. HAR and curl write one file (binary bodies for curl beside it).
pub fn write_export(
    selected: &[StoredDelivery],
    format: Format,
    options: &FixtureOptions,
    snippets_too: bool,
    out: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, ExportError> {
    use std::path::{Path, PathBuf};
    let into_dir = out.is_dir() || out.as_os_str().to_string_lossy().ends_with('/');
    let mut written = Vec::new();
    let write =
        |path: &Path, bytes: &[u8], written: &mut Vec<PathBuf>| -> Result<(), ExportError> {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| {
                    ExportError::Format(format!("cannot create {}: {e}", parent.display()))
                })?;
            }
            std::fs::write(path, bytes).map_err(|e| {
                ExportError::Format(format!("cannot write {}: {e}", path.display()))
            })?;
            written.push(path.to_path_buf());
            Ok(())
        };
    let pretty = |value: &Value| serde_json::to_string_pretty(value).unwrap_or_default();
    match format {
        Format::Fixture => {
            let mut fixtures = Vec::new();
            for stored in selected {
                fixtures.push((stored.id, fixture(stored, options)?));
            }
            let mut files: Vec<(PathBuf, Value)> = Vec::new();
            if into_dir {
                for (id, f) in fixtures {
                    files.push((out.join(format!("delivery-{id}.json")), f));
                }
            } else if fixtures.len() == 1 {
                files.push((out.to_path_buf(), fixtures.remove(0).1));
            } else {
                files.push((
                    out.to_path_buf(),
                    bundle(fixtures.into_iter().map(|(_, f)| f).collect()),
                ));
            }
            for (path, value) in files {
                write(&path, pretty(&value).as_bytes(), &mut written)?;
                if snippets_too {
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    for (snippet, text) in snippets(&name) {
                        write(&path.with_file_name(snippet), text.as_bytes(), &mut written)?;
                    }
                }
            }
        }
        Format::Har => {
            let path = if into_dir {
                out.join("hookscope.har")
            } else {
                out.to_path_buf()
            };
            write(&path, pretty(&har(selected)).as_bytes(), &mut written)?;
        }
        Format::Curl => {
            let path = if into_dir {
                out.join("hookscope-curl.sh")
            } else {
                out.to_path_buf()
            };
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "curl".into());
            let mut script = String::from(
                "#!/bin/sh\n# Generated by hookscope: each delivery sent again, bytes as captured.\nset -e\ncd \"$(dirname \"$0\")\"\n",
            );
            for stored in selected {
                let body_file = format!("{stem}-body-{}.bin", stored.id);
                let (command, needs_file) = curl(stored, &body_file);
                if needs_file {
                    write(
                        &path.with_file_name(&body_file),
                        &stored.delivery.body,
                        &mut written,
                    )?;
                }
                script.push_str(&format!("\n# delivery #{}\n{command}\n", stored.id));
            }
            write(&path, script.as_bytes(), &mut written)?;
        }
    }
    Ok(written)
}
