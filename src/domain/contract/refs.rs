//! References and URIs: a `$ref` split into its document and JSON pointer and resolved against
//! the document it is written in, URIs encoded, decoded and joined, the documents a contract's
//! `$ref`s reach, and the walks that follow `$ref`s (and a schema's `allOf`/`anyOf`/`oneOf`)
//! through a contract's documents.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Combined, Contract, ContractError, Document};

/// A JSON pointer segment escaped (`application/json` → `application~1json`).
pub(super) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Splits a `$ref` into its document part and its fragment, the JSON pointer percent-decoded
/// (`#/paths/~1hooks~1%7Bid%7D` names the key `/hooks/{id}`); a fragment with nothing to
/// decode is borrowed, since the checks split `$ref`s on every delivery.
fn split_ref(reference: &str) -> (&str, std::borrow::Cow<'_, str>) {
    let (doc, fragment) = reference.split_once('#').unwrap_or((reference, ""));
    let fragment = if fragment.contains('%') {
        uri_decode(fragment).into()
    } else {
        fragment.into()
    };
    (doc, fragment)
}

/// What a `$ref` written in document `base` names: the document's URI and the JSON pointer
/// in it.
pub(super) fn target(base: &str, reference: &str) -> (String, String) {
    let (doc, fragment) = split_ref(reference);
    (join_uri(base, doc), fragment.into_owned())
}

/// Percent-encodes what a URI cannot hold as is: every byte but the unreserved ones and `keep`.
pub fn uri_encode(text: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` sequences (a `+` stays a `+`); a malformed sequence is kept as written.
pub fn uri_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The characters a URI's path keeps as they are, `%` included (it is already encoded).
const PATH_SAFE: &[u8] = b"/:%@!$&'()*+,;=";

/// Resolves a relative reference against a base URI (`file:///a/b.yaml` + `c.json` →
/// `file:///a/c.json`); an absolute one is kept.
pub fn join_uri(base: &str, reference: &str) -> String {
    if reference.is_empty() {
        return base.to_string();
    }
    // A name with a space or a non-ASCII letter, written as is: encoded as its URI would be.
    let reference = &uri_encode(reference, PATH_SAFE);
    if reference.contains("://") || reference.starts_with("urn:") {
        return reference.to_string();
    }
    let dir = match base.rfind('/') {
        Some(at) => &base[..=at],
        None => "",
    };
    let mut parts: Vec<&str> = Vec::new();
    let (scheme, path) = match dir.split_once("://") {
        Some((scheme, path)) => (format!("{scheme}://"), format!("{path}{reference}")),
        None => (String::new(), format!("{dir}{reference}")),
    };
    for part in path.split('/') {
        match part {
            "." => {}
            ".." => {
                if parts.len() > 1 {
                    parts.pop();
                }
            }
            other => parts.push(other),
        }
    }
    format!("{scheme}{}", parts.join("/"))
}

/// Every `$ref` in a value, with the pointer where it stands.
fn refs(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push((at.to_string(), r.clone()));
            }
            for (k, v) in map {
                refs(v, &format!("{at}/{}", escape(k)), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                refs(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The documents a document's `$ref`s name besides itself, as URIs, with the pointer of one
/// `$ref` naming each (for the error when it cannot be read).
pub fn external_documents(document: &Document) -> Vec<(String, String)> {
    let mut found = Vec::new();
    refs(&document.value, "", &mut found);
    let mut out: Vec<(String, String)> = Vec::new();
    for (at, reference) in found {
        if split_ref(&reference).0.is_empty() {
            continue;
        }
        let (uri, _) = target(&document.uri, &reference);
        if uri != document.uri && !out.iter().any(|(u, _)| *u == uri) {
            out.push((uri, at));
        }
    }
    out
}

/// The file name in a URI, for sentences.
pub(crate) fn file_name(uri: &str) -> String {
    uri.rsplit('/').next().unwrap_or(uri).to_string()
}

impl Contract {
    /// Every `$ref` of every document resolves to a value.
    pub(super) fn check_refs(&self) -> Result<(), ContractError> {
        for (uri, value) in &self.documents {
            let mut found = Vec::new();
            refs(value, "", &mut found);
            for (at, reference) in found {
                let (target, fragment) = target(uri, &reference);
                let error = |reason: String| ContractError {
                    file: file_name(uri),
                    pointer: at.clone(),
                    reason,
                };
                let Some(document) = self.documents.get(&target) else {
                    return Err(error(format!(
                        "$ref \"{reference}\" names {}, which was not found",
                        file_name(&target)
                    )));
                };
                if !fragment.is_empty() && value_at(document, &fragment).is_none() {
                    return Err(error(format!(
                        "$ref \"{reference}\" does not resolve: {} has nothing at {fragment}",
                        file_name(&target)
                    )));
                }
            }
        }
        Ok(())
    }

    /// The value at `pointer` of document `uri`, following `$ref`s, with the URI it is in.
    pub(super) fn resolve<'a>(&'a self, uri: &str, pointer: &str) -> Option<(&'a Value, &'a str)> {
        let (uri, document) = self.documents.get_key_value(uri)?;
        hops(&self.documents, uri, value_at(document, pointer)?)
    }

    /// A schema followed through `$ref`: itself and the schemas it combines (`allOf`, `anyOf`,
    /// `oneOf`), each with the URI it is in.
    pub(super) fn branches<'a>(
        &'a self,
        schema: &'a Value,
        base: &'a str,
        depth: usize,
    ) -> Combined<'a> {
        self.combined(schema, base, true, depth)
    }

    /// A schema followed through `$ref` with the parts a value of it must satisfy: every
    /// `allOf` part, the first `oneOf`/`anyOf` choice.
    pub(super) fn parts<'a>(
        &'a self,
        schema: &'a Value,
        base: &'a str,
        depth: usize,
    ) -> Combined<'a> {
        self.combined(schema, base, false, depth)
    }

    /// [`Contract::branches`] (`every` choice of `anyOf`/`oneOf`) or [`Contract::parts`] (the
    /// first of `oneOf`, then of `anyOf`): the one walk both take.
    fn combined<'a>(
        &'a self,
        schema: &'a Value,
        base: &'a str,
        every: bool,
        depth: usize,
    ) -> Combined<'a> {
        let Some((schema, base)) = hops(&self.documents, base, schema) else {
            return Vec::new();
        };
        if depth > 16 {
            return Vec::new();
        }
        let mut out = vec![(schema, base)];
        let choices = if every {
            ["anyOf", "oneOf"]
        } else {
            ["oneOf", "anyOf"]
        };
        for key in std::iter::once("allOf").chain(choices) {
            let items = schema
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            let take = if key == "allOf" || every {
                usize::MAX
            } else {
                1
            };
            for item in items.take(take) {
                out.extend(self.combined(item, base, every, depth + 1));
            }
        }
        out
    }

    /// The schemas a property of an object schema has, across its combined branches.
    pub(super) fn property_schemas<'a>(
        &'a self,
        schema: &'a Value,
        base: &'a str,
        name: &str,
    ) -> Vec<(&'a Value, &'a str)> {
        self.branches(schema, base, 0)
            .into_iter()
            .filter_map(|(s, b)| {
                s.get("properties")
                    .and_then(|p| p.get(name))
                    .map(|p| (p, b))
            })
            .flat_map(|(p, b)| self.branches(p, b, 0))
            .collect()
    }
}

/// `value` (at `pointer` in document `uri`) followed through `$ref`s, to this document or a
/// sibling, with the document and pointer it ends at; `None` when one does not resolve (the
/// `$ref` check says which).
pub(super) fn follow<'a>(
    documents: &'a BTreeMap<String, Value>,
    uri: &str,
    value: &'a Value,
    pointer: String,
) -> Option<(&'a Value, String, String)> {
    let (mut value, mut uri, mut pointer) =
        (value, documents.get_key_value(uri)?.0.as_str(), pointer);
    for _ in 0..32 {
        let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
            return Some((value, uri.to_string(), pointer));
        };
        let fragment;
        (value, uri, fragment) = hop(documents, uri, reference)?;
        pointer = fragment.into_owned();
    }
    None
}

/// [`follow`] for the checks, which walk it on every delivery: the URI it ends in is borrowed
/// from the documents and the pointer not kept, so it allocates only for a sibling file's URI
/// or a percent-escaped pointer.
fn hops<'a>(
    documents: &'a BTreeMap<String, Value>,
    uri: &'a str,
    value: &'a Value,
) -> Option<(&'a Value, &'a str)> {
    let (mut value, mut uri) = (value, uri);
    for _ in 0..32 {
        let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
            return Some((value, uri));
        };
        (value, uri, _) = hop(documents, uri, reference)?;
    }
    None
}

/// One `$ref` written in document `uri`: the value it names, the document that is in, and the
/// pointer there (percent-decoded).
fn hop<'a, 'r>(
    documents: &'a BTreeMap<String, Value>,
    uri: &'a str,
    reference: &'r str,
) -> Option<(&'a Value, &'a str, std::borrow::Cow<'r, str>)> {
    let (doc, fragment) = split_ref(reference);
    let uri = if doc.is_empty() {
        uri
    } else {
        documents.get_key_value(&join_uri(uri, doc))?.0.as_str()
    };
    Some((value_at(documents.get(uri)?, &fragment)?, uri, fragment))
}

/// The value at a JSON pointer, reading each segment as it is written unless it has an escape
/// (`~1`, `~0`): the walk the checks take on every delivery, so it allocates nothing.
pub(super) fn value_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(value);
    }
    let mut value = value;
    for segment in pointer.strip_prefix('/')?.split('/') {
        let key: std::borrow::Cow<'_, str> = if segment.contains('~') {
            segment.replace("~1", "/").replace("~0", "~").into()
        } else {
            segment.into()
        };
        value = match value {
            Value::Object(map) => map.get(key.as_ref())?,
            // An index as JSON Pointer writes one: digits, no sign, no leading zero.
            Value::Array(items) => {
                let digits = key.bytes().all(|b| b.is_ascii_digit());
                if !digits || key.is_empty() || (key.len() > 1 && key.starts_with('0')) {
                    return None;
                }
                items.get(key.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_pointer_walk_reads_every_pointer_as_serde_json_does() {
        let doc = json!({"a/b": {"~c": [10, 11]}, "0": {"": 1}, "x": [[1], {"y": 2}],
                         "%7B": 3, "application/json": {"schema": true}});
        for pointer in [
            "",
            "/a~1b",
            "/a~1b/~0c",
            "/a~1b/~0c/1",
            "/a~1b/~0c/01",
            "/a~1b/~0c/+1",
            "/a~1b/~0c/-",
            "/a~1b/~0c/2",
            "/0",
            "/0/",
            "/x/0/0",
            "/x/1/y",
            "/%7B",
            "/application~1json/schema",
            "/~01",
            "/~10",
            "a",
            "/missing/deeper",
        ] {
            assert_eq!(value_at(&doc, pointer), doc.pointer(pointer), "{pointer}");
        }
    }

    #[test]
    fn relative_references_join_their_base() {
        assert_eq!(
            join_uri("file:///a/b/c.yaml", "d.json"),
            "file:///a/b/d.json"
        );
        assert_eq!(
            join_uri("file:///a/b/c.yaml", "../d.json"),
            "file:///a/d.json"
        );
        assert_eq!(
            join_uri("file:///a/b/c.yaml", "./s/d.json"),
            "file:///a/b/s/d.json"
        );
        assert_eq!(join_uri("file:///a/b/c.yaml", ""), "file:///a/b/c.yaml");
        assert_eq!(
            join_uri("file:///a/b/c.yaml", "https://x.org/s.json"),
            "https://x.org/s.json"
        );
    }
}
