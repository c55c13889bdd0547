//! Exporting deliveries (fixtures, HAR, curl) and importing a HAR file, for `hookscope export`,
//! `hookscope import` and the window's Export and Import.

use std::path::{Path, PathBuf};

use crate::app::{AppError, scheme_named};
use crate::config::{ConfigFile, Overrides, Settings};
use crate::domain::contract::Contract;
use crate::export::{FixtureOptions, Format};
use crate::store::{Reader, StoreWriter};

/// What to export and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRequest {
    /// Deliveries by id.
    pub ids: Vec<i64>,
    /// Deliveries under a filter (the list's language).
    pub filter: Option<String>,
    /// The format.
    pub format: Format,
    /// Fixtures: re-sign under a generated test secret written into the fixture.
    pub resign_with_test_secret: bool,
    /// Fixtures: the scheme to re-sign with when a delivery has none.
    pub scheme: Option<String>,
    /// Fixtures: JSON pointers whose values are replaced (needs re-signing).
    pub redact: Vec<String>,
    /// Fixtures: example tests beside each fixture.
    pub snippets: bool,
    /// The file, or for fixtures a directory (ending in `/`).
    pub out: PathBuf,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// How many deliveries.
    pub deliveries: usize,
    /// The files written.
    pub files: Vec<PathBuf>,
}

impl Exported {
    /// One sentence for the status line.
    pub fn summary(&self) -> String {
        format!(
            "exported {} deliveries: {} file(s) in {}",
            self.deliveries,
            self.files.len(),
            self.files
                .first()
                .and_then(|p| p.parent())
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        )
    }
}

/// Selects the deliveries and writes them.
pub fn export(
    file: &ConfigFile,
    reader: &Reader,
    request: &ExportRequest,
) -> Result<Exported, AppError> {
    if !request.redact.is_empty() && !request.resign_with_test_secret {
        return Err(crate::app::Refused::RedactWithoutResign.into());
    }
    let scheme = request
        .scheme
        .as_deref()
        .map(|name| scheme_named(file, name))
        .transpose()?;
    let selected = crate::app::list::select(reader, request.filter.as_deref(), &request.ids)?;
    let options = FixtureOptions {
        resign_with_test_secret: request.resign_with_test_secret,
        scheme,
        redact: request.redact.clone(),
        contracts: if request.format == Format::Fixture {
            contracts_of(file, &selected)
        } else {
            Default::default()
        },
    };
    let files = crate::export::write_export(
        &selected,
        request.format,
        &options,
        request.snippets,
        &request.out,
    )
    .map_err(|e| match e {
        crate::export::ExportError::NoScheme(delivery) => {
            AppError::Refused(crate::app::Refused::NoSchemeToExport { delivery })
        }
        other => other.into(),
    })?;
    Ok(Exported {
        deliveries: selected.len(),
        files,
    })
}

/// For each delivery that was checked against a contract, the contract of that name its
/// endpoint has now, or why it cannot be had (the config is read only when there is one; a
/// config that does not load now is said in the fixture, and the export goes on).
fn contracts_of(
    file: &ConfigFile,
    selected: &[crate::store::StoredDelivery],
) -> std::collections::BTreeMap<i64, Result<std::sync::Arc<Contract>, String>> {
    let checked: Vec<_> = selected
        .iter()
        .filter_map(|s| s.checks.schema.as_ref().map(|c| (s, c)))
        .collect();
    if checked.is_empty() {
        return Default::default();
    }
    let settings = Settings::resolve(file, &Overrides::default())
        .map_err(|e| format!("the config could not be read at export: {e}"));
    checked
        .into_iter()
        .map(|(stored, check)| {
            let contract = settings
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|settings| {
                    settings
                        .endpoint_for(&stored.delivery.path)
                        .contract
                        .clone()
                        .filter(|c| c.name == check.contract)
                        .ok_or_else(|| {
                            format!(
                                "the endpoint of {} has no contract {} now",
                                stored.delivery.path, check.contract
                            )
                        })
                });
            (stored.id, contract)
        })
        .collect()
}

/// Reads a HAR file, checks each request with the config's endpoints at its recorded time, and
/// stores them; returns their ids, in the file's order.
pub fn import_har(
    file: &ConfigFile,
    writer: &StoreWriter,
    path: &Path,
) -> Result<Vec<i64>, AppError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AppError::Usage(format!("cannot read {}: {e}", path.display())))?;
    let requests = crate::export::read_har(&text)
        .map_err(|e| AppError::Usage(format!("{}: {e}", path.display())))?;
    let settings = Settings::resolve(file, &Overrides::default())?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let records = crate::export::import_records(requests, &name, &settings);
    Ok(writer.insert_many_blocking(records)?)
}
