//! A contract compiled from its documents ([`Contract::build`], [`Contract::build_dir`]): the
//! kind of document, the draft its schemas are read in, every `$ref` resolved and each event
//! type's schema compiled by the `jsonschema` crate.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::discover::{asyncapi_operations, openapi_operations, schema_examples};
use super::refs::{file_name, uri_encode};
use super::{Contract, ContractError, Document, Kind, Operation};

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
pub(super) const DRAFTS: [(jsonschema::Draft, &str, &str, &str); 5] = [
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

/// The draft a kind's schemas are written in.
fn draft_of(kind: Kind) -> jsonschema::Draft {
    match kind {
        Kind::OpenApi31 | Kind::SchemaDir => jsonschema::Draft::Draft202012,
        Kind::OpenApi30 => jsonschema::Draft::Draft4,
        Kind::AsyncApi3 => jsonschema::Draft::Draft7,
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
