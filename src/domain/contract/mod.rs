//! Contracts: a provider's published description of its webhook payloads (OpenAPI 3.1
//! `webhooks`, OpenAPI 3.0 `x-webhooks`, AsyncAPI 3 messages, or a folder of JSON Schemas, one
//! per event type), compiled once, then each delivery's body checked against the schema of its
//! event type: the violations by JSON pointer, the fields it does not document (drift), and a
//! valid example body made from it.
//!
//! Pure: the documents arrive as JSON values with their URIs (the config layer reads the files,
//! YAML or JSON, and the sibling files their `$ref`s name). The validator is the `jsonschema`
//! crate; nothing here validates by itself.
//!
//! This file holds the types; each concern is a file of its own: `refs` (`$ref`s, URIs, JSON
//! pointers and the walks that follow them), `build` (a contract compiled from its documents),
//! `discover` (each event type's schema found in the documents, and the one a delivery's event
//! type picks), `check` (a body checked: violations, drift, the sentence), `example` (a valid
//! body, the contract's own or made from the schema) and `bundle` (one event type's schema as a
//! self-contained JSON Schema).

mod build;
mod bundle;
mod check;
mod discover;
mod example;
mod refs;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use refs::file_name;
pub use refs::{external_documents, join_uri, uri_decode, uri_encode};

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

/// Schemas with the URI each is in, as the walks over a contract collect them.
type Combined<'a> = Vec<(&'a Value, &'a str)>;
