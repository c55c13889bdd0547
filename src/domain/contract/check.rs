//! The check of a delivery's body against its event type's schema ([`Contract::check`]): the
//! violations the validator finds, each as a phrase, the fields the schema does not document
//! (drift), and the check's sentence.

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::refs::escape;
use super::{Contract, Drift, MAX_DRIFT, MAX_VIOLATIONS, SchemaCheck, SchemaStatus, Violation};

impl Contract {
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

    /// Whether `body` is valid against `event_type`'s schema (`None`: no such schema).
    pub fn is_valid(&self, event_type: &str, body: &Value) -> Option<bool> {
        self.operation_for(event_type)
            .map(|o| o.validator.is_valid(body))
    }
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
