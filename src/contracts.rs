//! Contract files: a contract (OpenAPI or AsyncAPI, YAML or JSON) and the sibling files its
//! `$ref`s name, or a folder of JSON Schemas, read and compiled by [`crate::domain::contract`],
//! once per file: the compiled contract is kept until one of its files changes (size or
//! modification time), so resolving the settings again costs a few `stat`s.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use serde_json::Value;

use crate::domain::contract::{Contract, ContractError, Document, external_documents};

/// What a file looked like when it was read: its size and modification time.
type Stamp = Vec<(PathBuf, Option<(u64, SystemTime)>)>;

/// Compiled contracts by path, with the stamp of every file each read.
type Cache = Mutex<HashMap<PathBuf, (Stamp, Arc<Contract>)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn stamp_of(paths: &[PathBuf]) -> Stamp {
    paths
        .iter()
        .map(|p| {
            let meta = std::fs::metadata(p).ok();
            (
                p.clone(),
                meta.and_then(|m| Some((m.len(), m.modified().ok()?))),
            )
        })
        .collect()
}

/// A path as the URI `$ref`s resolve against (`file:///…`, forward slashes on every platform).
fn uri_of(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    if text.starts_with('/') {
        format!("file://{text}")
    } else {
        format!("file:///{text}")
    }
}

/// The path a `file://` URI names.
fn path_of(uri: &str) -> PathBuf {
    let rest = uri.strip_prefix("file://").unwrap_or(uri);
    // `file:///C:/x` on Windows.
    let rest = match rest.as_bytes() {
        [b'/', _, b':', ..] => &rest[1..],
        _ => rest,
    };
    PathBuf::from(rest)
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Reads a document: JSON by its extension or its first character, YAML otherwise.
fn read(path: &Path) -> Result<Value, ContractError> {
    let error = |reason: String| ContractError {
        file: name_of(path),
        pointer: String::new(),
        reason,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| error(format!("cannot be read ({}): {e}", path.display())))?;
    let json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        || text.trim_start().starts_with('{');
    if json {
        serde_json::from_str(&text).map_err(|e| error(format!("not JSON: {e}")))
    } else {
        serde_saphyr::from_str(&text).map_err(|e| error(format!("not YAML: {e}")))
    }
}

/// The documents `first` reaches through `$ref`s, each read once.
fn with_references(first: Document) -> Result<Vec<Document>, ContractError> {
    let mut documents = vec![first];
    let mut next = 0;
    while next < documents.len() {
        for (uri, at) in external_documents(&documents[next]) {
            if documents.iter().any(|d| d.uri == uri) {
                continue;
            }
            if !uri.starts_with("file://") {
                return Err(ContractError {
                    file: documents[next]
                        .uri
                        .rsplit('/')
                        .next()
                        .unwrap_or_default()
                        .into(),
                    pointer: at,
                    reason: format!("$ref to {uri}: only files beside the contract are read"),
                });
            }
            let value = read(&path_of(&uri)).map_err(|mut e| {
                e.reason = format!(
                    "{} (named by the $ref at {at} in {})",
                    e.reason,
                    documents[next].uri.rsplit('/').next().unwrap_or_default()
                );
                e
            })?;
            documents.push(Document { uri, value });
        }
        next += 1;
    }
    Ok(documents)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The compiled contract of an OpenAPI or AsyncAPI file (and the files its `$ref`s name).
pub fn load(path: &Path) -> Result<Arc<Contract>, ContractError> {
    let path = absolute(path);
    if let Some(hit) = cached(&path) {
        return Ok(hit);
    }
    let documents = with_references(Document {
        uri: uri_of(&path),
        value: read(&path)?,
    })?;
    let files: Vec<PathBuf> = documents.iter().map(|d| path_of(&d.uri)).collect();
    let contract = Arc::new(Contract::build(&name_of(&path), documents)?);
    keep(path, &files, &contract);
    Ok(contract)
}

/// The compiled contract of a folder of JSON Schemas, one per event type (`job.completed.json`
/// is the schema of `job.completed`).
pub fn load_dir(dir: &Path) -> Result<Arc<Contract>, ContractError> {
    let dir = absolute(dir);
    let error = |reason: String| ContractError {
        file: name_of(&dir),
        pointer: String::new(),
        reason,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| error(format!("cannot be read ({}): {e}", dir.display())))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        })
        .collect();
    files.sort();
    // The folder's own modification time is in the stamp: a schema added or removed shows.
    if let Some(hit) = cached(&dir) {
        return Ok(hit);
    }
    let mut schemas = Vec::new();
    let mut others: Vec<Document> = Vec::new();
    for file in &files {
        let event_type = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let document = Document {
            uri: uri_of(file),
            value: read(file)?,
        };
        for extra in with_references(document.clone())?.into_iter().skip(1) {
            if !files.iter().any(|f| uri_of(f) == extra.uri)
                && !others.iter().any(|o| o.uri == extra.uri)
            {
                others.push(extra);
            }
        }
        schemas.push((event_type, document));
    }
    let mut involved = files.clone();
    involved.extend(others.iter().map(|o| path_of(&o.uri)));
    let contract = Arc::new(Contract::build_dir(
        &format!("{}/", name_of(&dir)),
        schemas,
        others,
    )?);
    keep(dir, &involved, &contract);
    Ok(contract)
}

fn cached(key: &Path) -> Option<Arc<Contract>> {
    let cache = cache().lock().ok()?;
    let (stamp, contract) = cache.get(key)?;
    let paths: Vec<PathBuf> = stamp.iter().map(|(p, _)| p.clone()).collect();
    (stamp_of(&paths) == *stamp).then(|| Arc::clone(contract))
}

fn keep(key: PathBuf, files: &[PathBuf], contract: &Arc<Contract>) {
    let mut paths = vec![key.clone()];
    paths.extend(files.iter().cloned());
    paths.dedup();
    if let Ok(mut cache) = cache().lock() {
        cache.insert(key, (stamp_of(&paths), Arc::clone(contract)));
    }
}

/// Whether a contract file (or one of the files it reads) changed since it was compiled: the
/// window checks its endpoints' contracts with this and applies a change at once.
pub fn changed(path: &Path) -> bool {
    let path = absolute(path);
    let Ok(cache) = cache().lock() else {
        return false;
    };
    match cache.get(&path) {
        Some((stamp, _)) => {
            let paths: Vec<PathBuf> = stamp.iter().map(|(p, _)| p.clone()).collect();
            stamp_of(&paths) != *stamp
        }
        None => false,
    }
}

/// Takes a change as seen while keeping the contract compiled before it (the change did not
/// compile): [`changed`] says no more until the files change again.
pub fn acknowledge(path: &Path) {
    let path = absolute(path);
    if let Ok(mut cache) = cache().lock()
        && let Some((stamp, _)) = cache.get_mut(&path)
    {
        let paths: Vec<PathBuf> = stamp.iter().map(|(p, _)| p.clone()).collect();
        *stamp = stamp_of(&paths);
    }
}
