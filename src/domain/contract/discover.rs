//! Discovery of the schema for a delivery: the operations an OpenAPI document's webhooks or
//! an AsyncAPI document's messages describe (each a schema, its names and its examples), the
//! event types they are for, and the one a delivery's event type picks.

use std::collections::BTreeMap;

use serde_json::Value;

use super::refs::{escape, follow};
use super::{Contract, Kind, Operation};

impl Contract {
    /// Adds the `const`/`enum` of each schema's `type` field to its names.
    pub(super) fn add_type_names(&mut self) {
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
    pub(super) fn operation_for(&self, event_type: &str) -> Option<&Operation> {
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
}

/// An operation found in a contract's documents (an OpenAPI webhook's or an AsyncAPI
/// message's), before its schema is compiled.
pub(super) struct Found {
    /// The event types it is for, as the document names them.
    pub names: Vec<String>,
    /// Where its schema is, for sentences.
    pub label: String,
    /// The document the schema is in, and its pointer there.
    pub uri: String,
    pub pointer: String,
    /// Examples its contract gives.
    pub examples: Vec<Value>,
}

pub(super) fn openapi_operations(
    documents: &BTreeMap<String, Value>,
    main: &str,
    kind: Kind,
) -> Vec<Found> {
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

pub(super) fn asyncapi_operations(documents: &BTreeMap<String, Value>, main: &str) -> Vec<Found> {
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

/// Examples a schema gives itself.
pub(super) fn schema_examples(schema: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(e) = schema.get("example") {
        out.push(e.clone());
    }
    if let Some(list) = schema.get("examples").and_then(Value::as_array) {
        out.extend(list.iter().cloned());
    }
    out
}
