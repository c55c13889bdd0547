//! Contracts: a provider's published description of its webhook payloads (OpenAPI 3.1
//! `webhooks`, OpenAPI 3.0 `x-webhooks`, AsyncAPI 3 messages, or a folder of JSON Schemas, one
//! per event type), compiled once, then each delivery's body checked against the schema of its
//! event type: the violations by JSON pointer, the fields it does not document (drift), and a
//! valid example body made from it.
//!
//! Pure: the documents arrive as JSON values with their URIs (the config layer reads the files,
//! YAML or JSON, and the sibling files their `$ref`s name). The validator is the `jsonschema`
//! crate; nothing here validates by itself.

use std::collections::BTreeMap;

use jsonschema::error::ValidationErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The most violations a check lists; the rest are counted.
pub const MAX_VIOLATIONS: usize = 20;
/// The most undocumented fields a check lists.
pub const MAX_DRIFT: usize = 20;

/// A document of a contract: its URI (`file:///…/acme-openapi.yaml`) and contents.
#[derive(Debug, Clone)]
pub struct Document {
    /// Where it was read from, as a URI; relative `$ref`s resolve against it.
    pub uri: String,
    /// Its contents.
    pub value: Value,
}

/// A contract that cannot be used: which file, where in it, why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("contract {file}{}: {reason}", if pointer.is_empty() { String::new() } else { format!(" at {pointer}") })]
pub struct ContractError {
    /// The file, as the user named it or as a `$ref` reached it.
    pub file: String,
    /// The JSON pointer in it (empty: the file as a whole).
    pub pointer: String,
    /// Why.
    pub reason: String,
}

/// The kind of document a contract is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// OpenAPI 3.1 (`webhooks`; JSON Schema 2020-12).
    OpenApi31,
    /// OpenAPI 3.0 (`x-webhooks`; its schema dialect is closest to draft 4).
    OpenApi30,
    /// AsyncAPI 3 (channels' messages; its schema dialect is draft 7's).
    AsyncApi3,
    /// A folder of JSON Schemas, one per event type (the draft from `$schema`, 2020-12 by default).
    SchemaDir,
}

/// One event type's schema, compiled.
struct Operation {
    /// The event types it is for: its webhook's or message's name, its operation id,
    /// `x-hookscope-event-type`, and the `const`/`enum` of its body's `type` field.
    names: Vec<String>,
    /// How many of `names` the document gives by name (the rest are read from the `type`
    /// field's `const`/`enum`, which a shared envelope may list for several schemas).
    named: usize,
    /// Where its schema is, for sentences: `webhooks/invoice.paid`.
    label: String,
    /// The document it is in, and the JSON pointer of the schema there.
    uri: String,
    pointer: String,
    /// The draft its schema is read in.
    draft: jsonschema::Draft,
    validator: jsonschema::Validator,
    /// Examples its contract gives (media type `example(s)`, message `examples`, the schema's).
    examples: Vec<Value>,
}

/// A compiled contract.
pub struct Contract {
    /// The file's name, for sentences.
    pub name: String,
    /// What kind of document it is.
    pub kind: Kind,
    operations: Vec<Operation>,
    documents: BTreeMap<String, Value>,
}

impl std::fmt::Debug for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contract")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("event_types", &self.event_types())
            .finish()
    }
}

impl PartialEq for Contract {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.documents == other.documents
    }
}

/// The verdict of the schema check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemaStatus {
    /// The body is valid against its event type's schema.
    Pass,
    /// It is not.
    Fail,
    /// No schema to check it against (no event type, or one the contract does not describe).
    Skipped,
}

impl SchemaStatus {
    /// The word the JSON, the store and the filter use.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaStatus::Pass => "pass",
            SchemaStatus::Fail => "fail",
            SchemaStatus::Skipped => "skipped",
        }
    }
}

/// A rule the body breaks, at a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Where in the body (`/data/amount`; empty for the whole body).
    pub pointer: String,
    /// The schema keyword (`type`, `enum`, `required`, `format`…).
    pub rule: String,
    /// What is wrong, in a phrase: "must be integer, got string \"12.50\"".
    pub detail: String,
}

/// A field the body has and the schema does not declare, where the schema does not forbid it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drift {
    /// Where in the body.
    pub pointer: String,
    /// The sentence.
    pub detail: String,
}

/// The schema check of a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaCheck {
    /// The verdict.
    pub status: SchemaStatus,
    /// The contract's file name.
    pub contract: String,
    /// The schema checked against (`webhooks/invoice.paid`), when one was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The violations, at most [`MAX_VIOLATIONS`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<Violation>,
    /// How many more violations there were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: usize,
    /// Undocumented fields: advice, never a failure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<Drift>,
    /// One sentence.
    pub detail: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The kind of a contract document, from its top-level keys.
fn kind_of(value: &Value) -> Option<Kind> {
    let version = |key: &str| value.get(key).and_then(Value::as_str);
    if let Some(v) = version("openapi") {
        return Some(if v.starts_with("3.0") {
            Kind::OpenApi30
        } else {
            Kind::OpenApi31
        });
    }
    version("asyncapi").map(|_| Kind::AsyncApi3)
}

/// The drafts a contract's schemas may be written in: each with what its `$schema` says (a
/// folder's schema names its own; 2020-12 when none does), the URI a bundle names it by, and
/// where a bundle keeps the schemas it copies.
const DRAFTS: [(jsonschema::Draft, &str, &str, &str); 5] = [
    (
        jsonschema::Draft::Draft4,
        "draft-04",
        "http://json-schema.org/draft-04/schema#",
        "definitions",
    ),
    (
        jsonschema::Draft::Draft6,
        "draft-06",
        "http://json-schema.org/draft-06/schema#",
        "definitions",
    ),
    (
        jsonschema::Draft::Draft7,
        "draft-07",
        "http://json-schema.org/draft-07/schema#",
        "definitions",
    ),
    (
        jsonschema::Draft::Draft201909,
        "2019-09",
        "https://json-schema.org/draft/2019-09/schema",
        "$defs",
    ),
    (
        jsonschema::Draft::Draft202012,
        "2020-12",
        "https://json-schema.org/draft/2020-12/schema",
        "$defs",
    ),
];

/// The draft a `$schema` names (2020-12 when it names none this knows).
fn draft_named(schema: Option<&str>) -> jsonschema::Draft {
    DRAFTS
        .iter()
        .find(|(_, tag, _, _)| schema.is_some_and(|s| s.contains(tag)))
        .map_or(jsonschema::Draft::Draft202012, |d| d.0)
}

/// The URI a bundle's `$schema` names a draft by, and the key its copied schemas go under.
fn draft_uri(draft: jsonschema::Draft) -> (&'static str, &'static str) {
    DRAFTS
        .iter()
        .find(|d| d.0 == draft)
        .map_or((DRAFTS[4].2, DRAFTS[4].3), |d| (d.2, d.3))
}

/// The draft a kind's schemas are written in.
fn draft_of(kind: Kind) -> jsonschema::Draft {
    match kind {
        Kind::OpenApi31 | Kind::SchemaDir => jsonschema::Draft::Draft202012,
        Kind::OpenApi30 => jsonschema::Draft::Draft4,
        Kind::AsyncApi3 => jsonschema::Draft::Draft7,
    }
}

/// A JSON pointer segment escaped (`application/json` → `application~1json`).
fn escape(segment: &str) -> String {
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
fn target(base: &str, reference: &str) -> (String, String) {
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
    /// Compiles a contract: `documents[0]` is the contract (an OpenAPI or AsyncAPI file), the
    /// rest are the documents its `$ref`s reach. Every `$ref` must resolve; each operation's
    /// schema must compile.
    pub fn build(name: &str, mut documents: Vec<Document>) -> Result<Contract, ContractError> {
        // OpenAPI 3.0 says "or null" with `nullable: true` beside the type, which draft 4 (its
        // closest dialect) does not read: written as the type list it means.
        if documents.first().and_then(|d| kind_of(&d.value)) == Some(Kind::OpenApi30) {
            for document in &mut documents {
                nullable_as_types(&mut document.value);
            }
        }
        let Some(main) = documents.first() else {
            return Err(ContractError {
                file: name.into(),
                pointer: String::new(),
                reason: "no document".into(),
            });
        };
        let kind = kind_of(&main.value).ok_or_else(|| ContractError {
            file: name.into(),
            pointer: String::new(),
            reason: "neither OpenAPI (an `openapi` version) nor AsyncAPI (an `asyncapi` version); for a folder of JSON Schemas use contract_dir".into(),
        })?;
        let main_uri = main.uri.clone();
        let store: BTreeMap<String, Value> =
            documents.into_iter().map(|d| (d.uri, d.value)).collect();
        let found = match kind {
            Kind::OpenApi31 | Kind::OpenApi30 => openapi_operations(&store, &main_uri, kind),
            Kind::AsyncApi3 => asyncapi_operations(&store, &main_uri),
            Kind::SchemaDir => Vec::new(),
        };
        let mut contract = Contract {
            name: name.into(),
            kind,
            operations: Vec::new(),
            documents: store,
        };
        contract.check_refs()?;
        if found.is_empty() {
            return Err(ContractError {
                file: name.into(),
                pointer: String::new(),
                reason: match kind {
                    Kind::OpenApi31 => {
                        "no webhook with a JSON request body under `webhooks`".into()
                    }
                    Kind::OpenApi30 => {
                        "no webhook with a JSON request body under `x-webhooks`".into()
                    }
                    _ => "no message with a payload under `channels`".into(),
                },
            });
        }
        for found in found {
            let draft = draft_of(kind);
            let validator = contract.compile(&found.uri, &found.pointer, draft)?;
            contract.operations.push(Operation {
                named: found.names.len(),
                names: found.names,
                label: found.label,
                uri: found.uri,
                pointer: found.pointer,
                draft,
                validator,
                examples: found.examples,
            });
        }
        contract.add_type_names();
        Ok(contract)
    }

    /// Compiles a folder of JSON Schemas: each document is one event type's schema, named by
    /// `names[i]` (its file name without `.json`).
    pub fn build_dir(
        name: &str,
        schemas: Vec<(String, Document)>,
        others: Vec<Document>,
    ) -> Result<Contract, ContractError> {
        let mut contract = Contract {
            name: name.into(),
            kind: Kind::SchemaDir,
            operations: Vec::new(),
            documents: schemas
                .iter()
                .map(|(_, d)| (d.uri.clone(), d.value.clone()))
                .chain(others.into_iter().map(|d| (d.uri, d.value)))
                .collect(),
        };
        contract.check_refs()?;
        if schemas.is_empty() {
            return Err(ContractError {
                file: name.into(),
                pointer: String::new(),
                reason: "no *.json schema in the folder".into(),
            });
        }
        for (event_type, document) in schemas {
            let draft = draft_named(document.value.get("$schema").and_then(Value::as_str));
            let validator = contract.compile(&document.uri, "", draft)?;
            let examples = schema_examples(&document.value);
            contract.operations.push(Operation {
                named: 1,
                names: vec![event_type.clone()],
                label: file_name(&document.uri),
                uri: document.uri,
                pointer: String::new(),
                draft,
                validator,
                examples,
            });
        }
        contract.add_type_names();
        Ok(contract)
    }

    /// Every `$ref` of every document resolves to a value.
    fn check_refs(&self) -> Result<(), ContractError> {
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

    fn compile(
        &self,
        uri: &str,
        pointer: &str,
        draft: jsonschema::Draft,
    ) -> Result<jsonschema::Validator, ContractError> {
        let resources = self
            .documents
            .iter()
            .map(|(u, v)| (u.clone(), draft.create_resource(v.clone())));
        jsonschema::options()
            .with_draft(draft)
            .should_validate_formats(true)
            .with_resources(resources)
            .build(&json!({ "$ref": format!("{uri}#{}", uri_encode(pointer, b"/")) }))
            .map_err(|e| ContractError {
                file: file_name(uri),
                pointer: pointer.into(),
                reason: format!("the schema does not compile: {e}"),
            })
    }

    /// Adds the `const`/`enum` of each schema's `type` field to its names.
    fn add_type_names(&mut self) {
        for i in 0..self.operations.len() {
            let (uri, pointer) = (
                self.operations[i].uri.clone(),
                self.operations[i].pointer.clone(),
            );
            let mut extra = Vec::new();
            if let Some((schema, base)) = self.resolve(&uri, &pointer) {
                for (field_schema, _) in self.property_schemas(schema, base, "type") {
                    if let Some(c) = field_schema.get("const").and_then(Value::as_str) {
                        extra.push(c.to_string());
                    }
                    if let Some(options) = field_schema.get("enum").and_then(Value::as_array) {
                        extra.extend(options.iter().filter_map(Value::as_str).map(str::to_string));
                    }
                }
            }
            let names = &mut self.operations[i].names;
            for name in extra {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }

    /// The event types the contract describes, in its order.
    pub fn event_types(&self) -> Vec<String> {
        self.operations
            .iter()
            .filter_map(|o| o.names.first().cloned())
            .collect()
    }

    /// The operation for an event type: one the document names so first, then one whose
    /// `type` field's `const` (a single value) says so, then one whose `enum` lists it.
    fn operation_for(&self, event_type: &str) -> Option<&Operation> {
        let named = |o: &&Operation| o.names[..o.named].iter().any(|n| n == event_type);
        let typed = |o: &&Operation, only: bool| {
            o.names[o.named..].iter().any(|n| n == event_type)
                && (!only || o.names.len() == o.named + 1)
        };
        self.operations
            .iter()
            .find(named)
            .or_else(|| self.operations.iter().find(|o| typed(o, true)))
            .or_else(|| self.operations.iter().find(|o| typed(o, false)))
    }

    /// The value at `pointer` of document `uri`, following `$ref`s, with the URI it is in.
    fn resolve<'a>(&'a self, uri: &str, pointer: &str) -> Option<(&'a Value, &'a str)> {
        let (uri, document) = self.documents.get_key_value(uri)?;
        hops(&self.documents, uri, value_at(document, pointer)?)
    }

    /// A schema followed through `$ref`: itself and the schemas it combines (`allOf`, `anyOf`,
    /// `oneOf`), each with the URI it is in.
    fn branches<'a>(&'a self, schema: &'a Value, base: &'a str, depth: usize) -> Combined<'a> {
        self.combined(schema, base, true, depth)
    }

    /// A schema followed through `$ref` with the parts a value of it must satisfy: every
    /// `allOf` part, the first `oneOf`/`anyOf` choice.
    fn parts<'a>(&'a self, schema: &'a Value, base: &'a str, depth: usize) -> Combined<'a> {
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
    fn property_schemas<'a>(
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

    /// Checks a body of `event_type` against its schema (the body is parsed only when there is
    /// a schema to check it against).
    pub fn check(&self, event_type: Option<&str>, body: &[u8]) -> SchemaCheck {
        let skipped = |detail: String| SchemaCheck {
            status: SchemaStatus::Skipped,
            contract: self.name.clone(),
            schema: None,
            violations: Vec::new(),
            more: 0,
            drift: Vec::new(),
            detail,
        };
        let Some(event_type) = event_type else {
            return skipped(format!(
                "No event type was read from this delivery, so no schema of {} could be chosen.",
                self.name
            ));
        };
        let Some(operation) = self.operation_for(event_type) else {
            return skipped(format!(
                "no schema in {} for event type {event_type} (it has: {})",
                self.name,
                self.event_types().join(", ")
            ));
        };
        let mut check = SchemaCheck {
            status: SchemaStatus::Pass,
            contract: self.name.clone(),
            schema: Some(operation.label.clone()),
            violations: Vec::new(),
            more: 0,
            drift: Vec::new(),
            detail: String::new(),
        };
        let parsed = serde_json::from_slice::<Value>(body);
        let instance: &Value = match &parsed {
            Ok(v) => v,
            Err(e) => {
                check.status = SchemaStatus::Fail;
                check.violations.push(Violation {
                    pointer: String::new(),
                    rule: "json".into(),
                    detail: format!("the body is not JSON ({e})"),
                });
                check.detail = format!(
                    "The body is not JSON, so it cannot match {} in {}.",
                    operation.label, self.name
                );
                return check;
            }
        };
        let mut total = 0;
        // The common case first: a valid body is checked once, without collecting errors.
        if !operation.validator.is_valid(instance) {
            for error in operation.validator.iter_errors(instance) {
                total += 1;
                if check.violations.len() < MAX_VIOLATIONS {
                    check.violations.push(violation(&error));
                }
            }
        }
        check.more = total - check.violations.len();
        if let Some((schema, base)) = self.resolve(&operation.uri, &operation.pointer) {
            self.drift(&[(schema, base)], instance, "", &mut check.drift, 0);
        }
        check.status = if total == 0 {
            SchemaStatus::Pass
        } else {
            SchemaStatus::Fail
        };
        check.detail = sentence(&check, &operation.label, &self.name, total);
        check
    }

    /// Undocumented fields: members of an object that no schema of it (across their combined
    /// branches) declares, where none says what extra members may be.
    fn drift<'a>(
        &'a self,
        schemas: &[(&'a Value, &'a str)],
        instance: &Value,
        at: &str,
        out: &mut Vec<Drift>,
        depth: usize,
    ) {
        if depth > 24 || out.len() >= MAX_DRIFT {
            return;
        }
        let branches: Vec<(&Value, &str)> = schemas
            .iter()
            .flat_map(|(s, b)| self.branches(s, b, 0))
            .collect();
        self.drift_in(&branches, instance, at, out, depth);
    }

    /// [`Contract::drift`] with the schemas already followed into their branches (an array's
    /// items share theirs: followed once for all of them).
    fn drift_in<'a>(
        &'a self,
        branches: &[(&'a Value, &'a str)],
        instance: &Value,
        at: &str,
        out: &mut Vec<Drift>,
        depth: usize,
    ) {
        if depth > 24 || out.len() >= MAX_DRIFT {
            return;
        }
        match instance {
            Value::Object(members) => {
                let open = branches.iter().any(|(s, _)| {
                    s.get("additionalProperties").is_some()
                        || s.get("patternProperties").is_some()
                        || s.get("unevaluatedProperties").is_some()
                });
                let declares = branches.iter().any(|(s, _)| s.get("properties").is_some());
                for (key, value) in members {
                    let declared: Vec<(&Value, &str)> = branches
                        .iter()
                        .filter_map(|&(s, b)| {
                            s.get("properties").and_then(|p| p.get(key)).map(|p| (p, b))
                        })
                        .collect();
                    // A declared scalar has no members of its own to be undocumented.
                    let inside = value.is_object() || value.is_array();
                    if !declared.is_empty() && !inside {
                        continue;
                    }
                    let pointer = format!("{at}/{}", escape(key));
                    if !declared.is_empty() {
                        self.drift(&declared, value, &pointer, out, depth + 1);
                    } else if declares && !open && out.len() < MAX_DRIFT {
                        out.push(Drift {
                            detail: format!(
                                "undocumented field `{pointer}`: the provider may have added it"
                            ),
                            pointer,
                        });
                    }
                }
            }
            Value::Array(items) => {
                let item_schemas: Vec<(&Value, &str)> = branches
                    .iter()
                    .filter_map(|&(s, b)| s.get("items").map(|i| (i, b)))
                    .collect();
                if !item_schemas.is_empty() {
                    let item_branches: Vec<(&Value, &str)> = item_schemas
                        .iter()
                        .flat_map(|(s, b)| self.branches(s, b, 0))
                        .collect();
                    // The first elements show what the rest add (an array's elements share a shape).
                    for (i, item) in items.iter().enumerate().take(20) {
                        if out.len() >= MAX_DRIFT {
                            break;
                        }
                        self.drift_in(&item_branches, item, &format!("{at}/{i}"), out, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// A valid body for `event_type`: the contract's own example when it has one, otherwise one
    /// made from the schema (required fields, formats, enums, bounds); `true` when it is the
    /// contract's own. `None` for an event type the contract does not describe.
    pub fn example(&self, event_type: &str) -> Option<(Value, bool)> {
        let operation = self.operation_for(event_type)?;
        if let Some(example) = operation
            .examples
            .iter()
            .find(|e| operation.validator.is_valid(e))
        {
            return Some((example.clone(), true));
        }
        let (schema, base) = self.resolve(&operation.uri, &operation.pointer)?;
        let mut made = self.synthesise(schema, base, 0);
        // The type field names the event type when the schema leaves it open.
        if let Value::Object(map) = &mut made
            && let Some(Value::String(t)) = map.get("type")
            && t == "example"
        {
            map.insert("type".into(), Value::String(event_type.into()));
        }
        Some((made, false))
    }

    /// Whether `body` is valid against `event_type`'s schema (`None`: no such schema).
    pub fn is_valid(&self, event_type: &str, body: &Value) -> Option<bool> {
        self.operation_for(event_type)
            .map(|o| o.validator.is_valid(body))
    }

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

    fn synthesise<'a>(&'a self, schema: &'a Value, base: &'a str, depth: usize) -> Value {
        self.synthesise_all(&[(schema, base)], depth)
    }

    /// A value every one of `schemas` accepts, as far as a simple reading of them goes: the
    /// most specific schema decides a scalar (a `const`, an `enum`, an example), objects are
    /// made member by member from every schema that declares the member.
    fn synthesise_all<'a>(&'a self, schemas: &[(&'a Value, &'a str)], depth: usize) -> Value {
        if depth > 12 {
            return Value::Null;
        }
        // The parts a value must satisfy: `allOf` all, `oneOf`/`anyOf` the first choice.
        let parts: Vec<(&Value, &str)> = schemas
            .iter()
            .flat_map(|(s, b)| self.parts(s, b, 0))
            .collect();
        if let Some(fixed) = fixed_value(&parts) {
            return fixed;
        }
        let kind = type_named(&parts);
        let is_object = kind == "object"
            || parts
                .iter()
                .any(|(s, _)| s.get("properties").is_some() || s.get("required").is_some());
        if is_object {
            return self.synthesise_object(&parts, depth);
        }
        self.synthesise_scalar(&kind, &parts, depth)
    }

    /// An object with every required member the parts declare, each made from every part that
    /// declares it.
    fn synthesise_object<'a>(&'a self, parts: &[(&'a Value, &'a str)], depth: usize) -> Value {
        let required: Vec<&str> = parts
            .iter()
            .filter_map(|(s, _)| s.get("required").and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut names: Vec<&str> = Vec::new();
        for (s, _) in parts {
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for name in props.keys() {
                    if required.contains(&name.as_str()) && !names.contains(&name.as_str()) {
                        names.push(name);
                    }
                }
            }
        }
        let mut map = serde_json::Map::new();
        for name in names {
            let member: Vec<(&Value, &str)> = parts
                .iter()
                .filter_map(|&(s, b)| {
                    s.get("properties")
                        .and_then(|p| p.get(name))
                        .map(|p| (p, b))
                })
                .collect();
            map.insert(name.to_string(), self.synthesise_all(&member, depth + 1));
        }
        Value::Object(map)
    }

    /// A value of `kind` (an array, a string, a number, a boolean) from the first part that
    /// names a type.
    fn synthesise_scalar<'a>(
        &'a self,
        kind: &str,
        parts: &[(&'a Value, &'a str)],
        depth: usize,
    ) -> Value {
        let first = parts
            .iter()
            .find(|(s, _)| s.get("type").is_some())
            .or(parts.first());
        let Some((first, first_base)) = first.cloned() else {
            return Value::Null;
        };
        match kind {
            "array" => {
                // One item shows the shape; deep down (a tree's children), as few as allowed.
                let min = first.get("minItems").and_then(Value::as_u64).unwrap_or(0);
                let count = if depth < 4 { min.max(1) } else { min }.min(20) as usize;
                let item = first
                    .get("items")
                    .map(|i| self.synthesise(i, first_base, depth + 1))
                    .unwrap_or(Value::Null);
                Value::Array(vec![item; count])
            }
            "string" => {
                let formatted = parts
                    .iter()
                    .find(|(s, _)| s.get("format").is_some())
                    .map_or(first, |(s, _)| s);
                Value::String(string_for(formatted))
            }
            "integer" => json!(number_for(first, true) as i64),
            "number" => json!(number_for(first, false)),
            "boolean" => Value::Bool(true),
            _ => Value::Null,
        }
    }
}

/// The value a part fixes or lists first (`const`, `example`, `default`, `examples`, `enum`),
/// which decides.
fn fixed_value(parts: &[(&Value, &str)]) -> Option<Value> {
    for (s, _) in parts {
        for key in ["const", "example", "default"] {
            if let Some(v) = s.get(key) {
                return Some(v.clone());
            }
        }
        for key in ["examples", "enum"] {
            if let Some(v) = s.get(key).and_then(Value::as_array).and_then(|a| a.first()) {
                return Some(v.clone());
            }
        }
    }
    None
}

/// The first type the parts name (of a list, the first that is not `null`); empty for none.
fn type_named(parts: &[(&Value, &str)]) -> String {
    parts
        .iter()
        .find_map(|(s, _)| match s.get("type")? {
            Value::Array(types) => types
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .map(str::to_string),
            Value::String(t) => Some(t.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Schemas with the URI each is in, as the walks over a contract collect them.
type Combined<'a> = Vec<(&'a Value, &'a str)>;

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

/// `{type: T, nullable: true}` as `{type: [T, "null"]}`, everywhere in a document.
fn nullable_as_types(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("nullable") == Some(&Value::Bool(true))
                && let Some(Value::String(t)) = map.get("type").cloned()
            {
                map.insert("type".into(), json!([t, "null"]));
                if let Some(Value::Array(options)) = map.get_mut("enum")
                    && !options.contains(&Value::Null)
                {
                    options.push(Value::Null);
                }
            }
            for v in map.values_mut() {
                nullable_as_types(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_as_types),
        _ => {}
    }
}

/// Examples a schema gives itself.
fn schema_examples(schema: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(e) = schema.get("example") {
        out.push(e.clone());
    }
    if let Some(list) = schema.get("examples").and_then(Value::as_array) {
        out.extend(list.iter().cloned());
    }
    out
}

/// A string for a string schema: by its format, else long enough for its bounds.
fn string_for(schema: &Value) -> String {
    let made = match schema.get("format").and_then(Value::as_str) {
        Some("date-time") => "2026-12-05T09:30:00Z".to_string(),
        Some("date") => "2026-12-05".to_string(),
        Some("time") => "09:30:00Z".to_string(),
        Some("uuid") => "3f2a7c1e-9b4d-4e8a-a1f0-5c6d7e8f9a0b".to_string(),
        Some("email") => "developer@example.com".to_string(),
        Some("uri") | Some("url") | Some("iri") => "https://example.com/resource/1".to_string(),
        Some("hostname") => "example.com".to_string(),
        Some("ipv4") => "192.0.2.10".to_string(),
        Some("ipv6") => "2001:db8::10".to_string(),
        _ => "example".to_string(),
    };
    let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .map(|m| m as usize)
        .unwrap_or(usize::MAX);
    let mut made = made;
    while made.chars().count() < min {
        made.push('x');
    }
    if made.chars().count() > max {
        made = made.chars().take(max).collect();
    }
    made
}

/// A number within a schema's bounds (a multiple of `multipleOf` when it has one).
fn number_for(schema: &Value, integer: bool) -> f64 {
    let get = |k: &str| schema.get(k).and_then(Value::as_f64);
    // Draft 4 (OpenAPI 3.0) writes exclusive bounds as booleans beside the bound.
    let exclusive_flag = |k: &str| schema.get(k).and_then(Value::as_bool).unwrap_or(false);
    let mut low = get("minimum")
        .map(|m| {
            if exclusive_flag("exclusiveMinimum") {
                m + 1.0
            } else {
                m
            }
        })
        .or(get("exclusiveMinimum").map(|m| m + 1.0));
    let high = get("maximum")
        .map(|m| {
            if exclusive_flag("exclusiveMaximum") {
                m - 1.0
            } else {
                m
            }
        })
        .or(get("exclusiveMaximum").map(|m| m - 1.0));
    if low.is_none() && high.is_none() {
        low = Some(1.0);
    }
    let mut n = match (low, high) {
        (Some(l), Some(h)) => ((l + h) / 2.0).floor().max(l),
        (Some(l), None) => l,
        (None, Some(h)) => h.min(1.0),
        (None, None) => 1.0,
    };
    if let Some(step) = get("multipleOf").filter(|s| *s > 0.0) {
        n = (n / step).ceil() * step;
    }
    if integer { n.ceil() } else { n }
}

/// The value in a phrase: `string "12.50"`, `42`, `object`.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    let text = if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    };
    match value {
        Value::String(_) => format!("string {text}"),
        Value::Number(n) if n.is_f64() => format!("number {text}"),
        Value::Number(_) => format!("integer {text}"),
        Value::Bool(_) => format!("boolean {text}"),
        Value::Null => "null".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn list(options: &Value) -> String {
    options
        .as_array()
        .map(|a| {
            a.iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| options.to_string())
}

/// A validation error as a violation: the pointer, the keyword and a phrase.
fn violation(error: &jsonschema::ValidationError<'_>) -> Violation {
    let instance = error.instance();
    let pointer = error.instance_path().to_string();
    let rule = error
        .schema_path()
        .to_string()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    let detail = match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                jsonschema::error::TypeKind::Single(t) => t.to_string(),
                jsonschema::error::TypeKind::Multiple(set) => format!("{set:?}")
                    .trim_matches(|c| c == '(' || c == ')')
                    .replace(", ", " or "),
            };
            format!("must be {expected}, got {}", shown(instance))
        }
        ValidationErrorKind::Enum { options } => {
            format!("must be one of {}, got {}", list(options), shown(instance))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("must be {expected_value}, got {}", shown(instance))
        }
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| property.to_string());
            format!("is missing the required field `{name}`")
        }
        ValidationErrorKind::Format { format } => {
            format!("must be a {format}, got {}", shown(instance))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            format!("has fields the schema forbids: {}", unexpected.join(", "))
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("must be >= {limit}, got {}", shown(instance))
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("must be <= {limit}, got {}", shown(instance))
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("must be > {limit}, got {}", shown(instance))
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("must be < {limit}, got {}", shown(instance))
        }
        ValidationErrorKind::MinLength { limit } => {
            format!(
                "must be at least {limit} characters, got {}",
                shown(instance)
            )
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!(
                "must be at most {limit} characters, got {}",
                shown(instance)
            )
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("must match {pattern}, got {}", shown(instance))
        }
        ValidationErrorKind::OneOfNotValid { .. } => {
            format!("matches none of the oneOf choices, got {}", shown(instance))
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "matches more than one of the oneOf choices".to_string()
        }
        ValidationErrorKind::AnyOf { .. } => {
            format!("matches none of the anyOf choices, got {}", shown(instance))
        }
        _ => error.to_string(),
    };
    Violation {
        pointer,
        rule,
        detail,
    }
}

/// The check's sentence.
fn sentence(check: &SchemaCheck, label: &str, contract: &str, total: usize) -> String {
    let at = |p: &str| {
        if p.is_empty() {
            "the body".to_string()
        } else {
            format!("`{p}`")
        }
    };
    match check.status {
        SchemaStatus::Pass => {
            let mut s = format!("Valid against {label} in {contract}.");
            if !check.drift.is_empty() {
                s.push_str(&format!(
                    " {} undocumented field{}: the provider may have added {}.",
                    check.drift.len(),
                    if check.drift.len() == 1 { "" } else { "s" },
                    if check.drift.len() == 1 { "it" } else { "them" }
                ));
            }
            s
        }
        _ => {
            let first: Vec<String> = check
                .violations
                .iter()
                .take(3)
                .map(|v| format!("{} {}", at(&v.pointer), v.detail))
                .collect();
            let noun = if total == 1 {
                "violation"
            } else {
                "violations"
            };
            format!(
                "{total} {noun} of {label} in {contract}: {}{}",
                first.join("; "),
                if total > 3 { "; …" } else { "." }
            )
        }
    }
}

/// The operations of an OpenAPI document's `webhooks` (3.1) or `x-webhooks` (3.0).
struct Found {
    names: Vec<String>,
    label: String,
    /// The document the schema is in, and its pointer there.
    uri: String,
    pointer: String,
    examples: Vec<Value>,
}

/// `value` (at `pointer` in document `uri`) followed through `$ref`s, to this document or a
/// sibling, with the document and pointer it ends at; `None` when one does not resolve (the
/// `$ref` check says which).
fn follow<'a>(
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
fn value_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
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

fn openapi_operations(documents: &BTreeMap<String, Value>, main: &str, kind: Kind) -> Vec<Found> {
    let key = if kind == Kind::OpenApi30 {
        "x-webhooks"
    } else {
        "webhooks"
    };
    let Some(webhooks) = documents
        .get(main)
        .and_then(|d| d.get(key))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, item) in webhooks {
        // A path item may itself be a $ref (components/pathItems, or a sibling file).
        let Some((item, item_uri, item_pointer)) =
            follow(documents, main, item, format!("/{key}/{}", escape(name)))
        else {
            continue;
        };
        let Some(operations) = item.as_object() else {
            continue;
        };
        for (method, operation) in operations {
            if !matches!(method.as_str(), "post" | "put" | "patch" | "get" | "delete") {
                continue;
            }
            let Some((body, body_uri, body_pointer)) = operation.get("requestBody").and_then(|b| {
                follow(
                    documents,
                    &item_uri,
                    b,
                    format!("{item_pointer}/{method}/requestBody"),
                )
            }) else {
                continue;
            };
            let Some(content) = body.get("content").and_then(Value::as_object) else {
                continue;
            };
            let Some((media, media_type)) = content.iter().find(|(m, _)| {
                // `application/json; charset=utf-8` is JSON too.
                let m = m.split(';').next().unwrap_or_default().trim();
                m == "application/json" || m.ends_with("+json")
            }) else {
                continue;
            };
            if media_type.get("schema").is_none() {
                continue;
            }
            let mut names = Vec::new();
            if let Some(explicit) = operation
                .get("x-hookscope-event-type")
                .and_then(Value::as_str)
            {
                names.push(explicit.to_string());
            }
            names.push(name.clone());
            if let Some(id) = operation.get("operationId").and_then(Value::as_str) {
                names.push(id.to_string());
            }
            let mut examples = Vec::new();
            if let Some(e) = media_type.get("example") {
                examples.push(e.clone());
            }
            if let Some(map) = media_type.get("examples").and_then(Value::as_object) {
                examples.extend(map.values().filter_map(|e| e.get("value").cloned()));
            }
            if let Some(schema) = media_type.get("schema") {
                examples.extend(schema_examples(schema));
            }
            out.push(Found {
                names,
                label: format!("{key}/{name}"),
                uri: body_uri,
                pointer: format!("{body_pointer}/content/{}/schema", escape(media)),
                examples,
            });
        }
    }
    out
}

fn asyncapi_operations(documents: &BTreeMap<String, Value>, main: &str) -> Vec<Found> {
    let mut out = Vec::new();
    let Some(channels) = documents
        .get(main)
        .and_then(|d| d.get("channels"))
        .and_then(Value::as_object)
    else {
        return out;
    };
    for (channel_name, channel) in channels {
        let Some(messages) = channel.get("messages").and_then(Value::as_object) else {
            continue;
        };
        for (key, message) in messages {
            // A message may be a $ref (components/messages, or a sibling file).
            let at = format!(
                "/channels/{}/messages/{}",
                escape(channel_name),
                escape(key)
            );
            let Some((message, uri, pointer)) = follow(documents, main, message, at) else {
                continue;
            };
            if message.get("payload").is_none() {
                continue;
            }
            let mut names = Vec::new();
            if let Some(explicit) = message
                .get("x-hookscope-event-type")
                .and_then(Value::as_str)
            {
                names.push(explicit.to_string());
            }
            for name in [
                message.get("name").and_then(Value::as_str),
                Some(key.as_str()),
            ]
            .into_iter()
            .flatten()
            {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
            if let Some(id) = message.get("messageId").and_then(Value::as_str) {
                names.push(id.to_string());
            }
            let mut examples: Vec<Value> = message
                .get("examples")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|e| e.get("payload").cloned())
                        .collect()
                })
                .unwrap_or_default();
            if let Some(payload) = message.get("payload") {
                examples.extend(schema_examples(payload));
            }
            let label = format!("channels/{channel_name}/messages/{key}");
            if out
                .iter()
                .any(|f: &Found| f.uri == uri && f.pointer == format!("{pointer}/payload"))
            {
                continue;
            }
            out.push(Found {
                names,
                label,
                uri,
                pointer: format!("{pointer}/payload"),
                examples,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
