//! Examples ([`Contract::example`]): a valid body for an event type, the contract's own example
//! when it has one, otherwise one made from the schema (required fields, formats, enums,
//! bounds).

use serde_json::{Value, json};

use super::Contract;

impl Contract {
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
