//! Contract files: a contract (OpenAPI or AsyncAPI, YAML or JSON) and the sibling files its
//! `$ref`s name, or a folder of JSON Schemas, read and compiled by [`crate::domain::contract`],
//! once per file: the compiled contract is kept until one of its files changes (size or
//! modification time), so resolving the settings again costs a few `stat`s.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::domain::sync::Lock;
use std::time::SystemTime;

use serde_json::Value;

use crate::domain::contract::{Contract, ContractError, Document, external_documents, file_name};

/// What a file looked like when it was read: its size and modification time.
type Stamp = Vec<(PathBuf, Option<(u64, SystemTime)>)>;

/// What is known of a contract's files: the last good compile and the stamp of the files it
/// read, and the last failure with the stamp the files had then.
#[derive(Default)]
struct Entry {
    good: Option<(Arc<Contract>, Stamp)>,
    failed: Option<(ContractError, Stamp)>,
}

impl Entry {
    /// The files known to make the contract.
    fn paths(&self) -> Vec<PathBuf> {
        let stamp = match (&self.good, &self.failed) {
            (Some((_, stamp)), _) | (None, Some((_, stamp))) => stamp,
            (None, None) => return Vec::new(),
        };
        stamp.iter().map(|(p, _)| p.clone()).collect()
    }
}

/// Compiled contracts by path.
type Cache = Lock<HashMap<PathBuf, Entry>>;

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
    // A space, a `#` or a non-ASCII letter in a folder's name is percent-encoded, as a URI
    // holds it (`C:/Users/Jane Doe/…`).
    let text = crate::domain::contract::uri_encode(&text, b"/:");
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
    PathBuf::from(crate::domain::contract::uri_decode(rest))
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
                    file: file_name(&documents[next].uri),
                    pointer: at,
                    reason: format!("$ref to {uri}: only files beside the contract are read"),
                });
            }
            let value = read(&path_of(&uri)).map_err(|mut e| {
                e.reason = format!(
                    "{} (named by the $ref at {at} in {})",
                    e.reason,
                    file_name(&documents[next].uri)
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
    cached_or(&path, |path| {
        let documents = with_references(Document {
            uri: uri_of(path),
            value: read(path)?,
        })?;
        let files: Vec<PathBuf> = documents.iter().map(|d| path_of(&d.uri)).collect();
        Ok((Contract::build(&name_of(path), documents)?, files))
    })
}

/// The compiled contract of a folder of JSON Schemas, one per event type (`job.completed.json`
/// is the schema of `job.completed`).
pub fn load_dir(dir: &Path) -> Result<Arc<Contract>, ContractError> {
    let dir = absolute(dir);
    cached_or(&dir, compile_dir)
}

fn compile_dir(dir: &Path) -> Result<(Contract, Vec<PathBuf>), ContractError> {
    let dir = dir.to_path_buf();
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
    let contract = Contract::build_dir(&format!("{}/", name_of(&dir)), schemas, others)?;
    Ok((contract, involved))
}

/// The contract compiled from `key`'s files as they are now: the cached one while none of them
/// changed, else compiled again (`compile`), or the error it gave while they stay as they were
/// when it failed. Stamps are taken before the files are read, so a file saved during a read
/// is read again.
fn cached_or(
    key: &Path,
    compile: impl FnOnce(&Path) -> Result<(Contract, Vec<PathBuf>), ContractError>,
) -> Result<Arc<Contract>, ContractError> {
    let known: Vec<PathBuf> = {
        let cache = cache().lock();
        match cache.get(key) {
            Some(entry) => entry.paths(),
            None => vec![key.to_path_buf()],
        }
    };
    let before = stamp_of(&known);
    {
        let cache = cache().lock();
        if let Some(entry) = cache.get(key) {
            if let Some((contract, stamp)) = &entry.good
                && *stamp == before
            {
                return Ok(Arc::clone(contract));
            }
            if let Some((error, stamp)) = &entry.failed
                && *stamp == before
            {
                return Err(error.clone());
            }
        }
    }
    let compiled = compile(key);
    let mut cache = cache().lock();
    let entry = cache.entry(key.to_path_buf()).or_default();
    match compiled {
        Ok((contract, files)) => {
            let contract = Arc::new(contract);
            let mut paths = vec![key.to_path_buf()];
            paths.extend(files.into_iter().filter(|f| f != key));
            // The files read besides those known before are stamped now.
            let mut stamp = before;
            stamp.extend(stamp_of(
                &paths
                    .iter()
                    .filter(|p| !known.contains(p))
                    .cloned()
                    .collect::<Vec<_>>(),
            ));
            entry.good = Some((Arc::clone(&contract), stamp));
            entry.failed = None;
            Ok(contract)
        }
        Err(error) => {
            entry.failed = Some((error.clone(), before));
            Err(error)
        }
    }
}

/// Whether the contract at `path` is not the one in use: a file of it changed since it was
/// compiled (and not into the state that failed last), or the cache holds another compile
/// than `in_use` (someone loaded the change first). The receiver's settings are resolved
/// again then.
pub fn stale(path: &Path, in_use: &Arc<Contract>) -> bool {
    let path = absolute(path);
    let cache = cache().lock();
    let Some(entry) = cache.get(&path) else {
        return true;
    };
    let current = stamp_of(&entry.paths());
    match (&entry.good, &entry.failed) {
        (_, Some((_, failed))) if *failed == current => false,
        (Some((contract, stamp)), _) => *stamp != current || !Arc::ptr_eq(contract, in_use),
        (None, _) => true,
    }
}
