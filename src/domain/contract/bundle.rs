//! The bundle ([`Contract::bundle`]): one event type's schema as a self-contained JSON Schema,
//! every schema its `$ref`s reach copied in, for a validator in another language.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Contract;
use super::build::DRAFTS;
use super::refs::{file_name, target, uri_decode, value_at};

impl Contract {
    /// `event_type`'s schema as one self-contained JSON Schema, for a validator in another
    /// language (a fixture's tests): every schema its `$ref`s reach, in this document or a
    /// sibling, is copied under `$defs` (`definitions` before 2019-09) and each `$ref` points
    /// there, so nothing outside it is read. Its `$schema` names the draft the contract is
    /// checked in (draft 4 for OpenAPI 3.0, with `nullable` already written as a type list;
    /// draft 7 for AsyncAPI). `None` for an event type the contract does not describe.
    pub fn bundle(&self, event_type: &str) -> Option<Value> {
        let operation = self.operation_for(event_type)?;
        let (meta, defs_key) = draft_uri(operation.draft);
        let mut bundler = Bundler {
            defs_key,
            draft4: operation.draft == jsonschema::Draft::Draft4,
            // Before 2019-09 a `$ref` stands alone: the keywords beside it are ignored.
            ref_alone: defs_key == "definitions",
            names: BTreeMap::new(),
            queue: Default::default(),
        };
        let root = value_at(self.documents.get(&operation.uri)?, &operation.pointer)?;
        let root = bundler.rewrite(root, &operation.uri);
        let mut defs = serde_json::Map::new();
        while let Some((uri, pointer, name)) = bundler.queue.pop_front() {
            let target = value_at(self.documents.get(&uri)?, &pointer)?;
            let copied = bundler.rewrite(target, &uri);
            defs.insert(name, copied);
        }
        let mut out = serde_json::Map::new();
        out.insert("$schema".into(), meta.into());
        out.insert(
            "title".into(),
            format!("{} in {}", operation.label, self.name).into(),
        );
        // The schema under `allOf`, so no `$ref` stands beside `$schema` and the definitions
        // (before 2019-09 a `$ref`'s siblings are ignored).
        out.insert("allOf".into(), json!([root]));
        if !defs.is_empty() {
            out.insert(defs_key.into(), Value::Object(defs));
        }
        Some(Value::Object(out))
    }
}

/// The URI a bundle's `$schema` names a draft by, and the key its copied schemas go under.
fn draft_uri(draft: jsonschema::Draft) -> (&'static str, &'static str) {
    DRAFTS
        .iter()
        .find(|d| d.0 == draft)
        .map_or((DRAFTS[4].2, DRAFTS[4].3), |d| (d.2, d.3))
}

/// Copies schemas out of a contract's documents for [`Contract::bundle`].
struct Bundler {
    /// Where the copies go: `$defs` or `definitions`.
    defs_key: &'static str,
    /// Draft 4 names a schema's base URI `id`, not `$id`; OpenAPI 3.0's `nullable` (already
    /// written as a type list) is left out too, which ajv would read.
    draft4: bool,
    /// Whether a `$ref`'s sibling keywords are ignored (before 2019-09): then the copy has the
    /// `$ref` alone, since a validator that applies them (ajv does) would judge otherwise.
    ref_alone: bool,
    /// Each `$ref` target (document URI, pointer) and the name of its copy.
    names: BTreeMap<(String, String), String>,
    /// Targets named but not copied yet.
    queue: std::collections::VecDeque<(String, String, String)>,
}

impl Bundler {
    /// `value` (in document `uri`) with each `$ref` pointing at its target's copy, and the
    /// keywords that would change the base URI those point from (`$id`, `$schema`) or that
    /// nothing points at any more (`$anchor`) left out. Values that are data, not schemas
    /// (`const`, `enum`, examples, defaults), are copied as they are.
    fn rewrite(&mut self, value: &Value, uri: &str) -> Value {
        match value {
            Value::Object(map) => {
                if self.ref_alone
                    && let Some(Value::String(reference)) = map.get("$ref")
                {
                    let name = self.name_of(target(uri, reference));
                    return json!({ "$ref": format!("#/{}/{name}", self.defs_key) });
                }
                let mut out = serde_json::Map::new();
                for (key, v) in map {
                    match key.as_str() {
                        "$id" | "$schema" | "$anchor" if v.is_string() => {}
                        "id" | "nullable" if self.draft4 && !v.is_object() => {}
                        "$ref" if v.is_string() => {
                            let reference = v.as_str().unwrap_or_default();
                            let name = self.name_of(target(uri, reference));
                            out.insert(key.clone(), format!("#/{}/{name}", self.defs_key).into());
                        }
                        "const" | "enum" | "example" | "examples" | "default" => {
                            out.insert(key.clone(), v.clone());
                        }
                        // Maps from a name (which may be `default` or `$ref`) to a schema, or
                        // (`dependencies`, `dependentRequired`) to a list of names.
                        "properties" | "patternProperties" | "$defs" | "definitions"
                        | "dependentSchemas" | "dependencies" | "dependentRequired"
                            if v.is_object() =>
                        {
                            let named = v.as_object().into_iter().flatten();
                            let rewritten = named
                                .map(|(name, v)| {
                                    let v = if v.is_object() {
                                        self.rewrite(v, uri)
                                    } else {
                                        v.clone()
                                    };
                                    (name.clone(), v)
                                })
                                .collect();
                            out.insert(key.clone(), Value::Object(rewritten));
                        }
                        _ => {
                            out.insert(key.clone(), self.rewrite(v, uri));
                        }
                    }
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.rewrite(v, uri)).collect())
            }
            other => other.clone(),
        }
    }

    /// The name of a target's copy, given once: its last pointer segment (its file's name for
    /// a whole document), made unique with a number.
    fn name_of(&mut self, target: (String, String)) -> String {
        if let Some(name) = self.names.get(&target) {
            return name.clone();
        }
        let (uri, pointer) = &target;
        let stem = match pointer.rsplit('/').next().filter(|s| !s.is_empty()) {
            Some(segment) => segment.replace("~1", "/").replace("~0", "~"),
            None => {
                let file = uri_decode(&file_name(uri));
                file.split('.').next().unwrap_or(&file).to_string()
            }
        };
        // A name that is one pointer segment in `#/$defs/NAME`, readable in a URI.
        let stem: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut name = stem.clone();
        let mut n = 2;
        while self.names.values().any(|v| *v == name) {
            name = format!("{stem}_{n}");
            n += 1;
        }
        self.names.insert(target.clone(), name.clone());
        self.queue.push_back((target.0, target.1, name.clone()));
        name
    }
}
