//! The filter language of the deliveries list, parsed into terms. The store turns the terms
//! into SQL (`store::query`); nothing here knows a column name.
//!
//! A filter is whitespace-separated terms, all of which must hold: `key:value` terms on indexed
//! columns (`sig:fail`, `ts:warn`, `dup:yes`, `type:job.failed`, `job:job_123`,
//! `path:/hooks/acme`, `event:evt_1`, `method:post`, `status:500`) and free words, searched in
//! the path, the headers and the body through SQLite FTS5 (whole words and word prefixes; put a
//! phrase in double quotes). Nothing is scanned in memory.

/// A parsed filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    terms: Vec<Term>,
}

/// A field of a delivery that a `key:value` term compares exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `sig:` the signature verdict word.
    Signature,
    /// `ts:` the timestamp verdict word.
    Timestamp,
    /// `dup:` the duplicate verdict word.
    Duplicate,
    /// `type:` the event type.
    EventType,
    /// `job:` the job id.
    JobId,
    /// `event:` the event id.
    EventId,
    /// `method:` the HTTP method, upper case.
    Method,
    /// `status:` the status hookscope answered.
    ResponseStatus,
}

/// One term of a filter; all terms must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// A field equals a value.
    Is {
        /// The field.
        field: Field,
        /// The value, normalised (verdict words lower case, methods upper case).
        value: String,
    },
    /// The path starts with this prefix.
    PathPrefix(String),
    /// Free text: a word or word prefix, or a phrase in double quotes, searched in the path,
    /// the headers and the body.
    Text(String),
}

/// A filter that could not be parsed, with the sentence to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FilterError(pub String);

/// The keys the filter understands, for help texts.
pub const KEYS: &str = "sig:pass|fail|skipped  ts:pass|warn|fail|skipped  dup:yes|no  type:T  job:ID  event:ID  path:/prefix  method:M  status:CODE";

fn split_terms(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            c if c.is_whitespace() && !quoted => {
                if !current.is_empty() {
                    terms.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        terms.push(current);
    }
    terms
}

impl Filter {
    /// Parses filter text. Unknown `key:` prefixes are searched as text (URLs contain colons).
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        let mut terms = Vec::new();
        for raw in split_terms(text) {
            let Some((key, value)) = raw.split_once(':').filter(|(k, _)| !k.starts_with('"'))
            else {
                terms.push(Term::Text(raw));
                continue;
            };
            let value = value.trim_matches('"').to_string();
            let lower = value.to_ascii_lowercase();
            let one_of = |allowed: &[&str]| -> Result<String, FilterError> {
                if allowed.contains(&lower.as_str()) {
                    Ok(lower.clone())
                } else {
                    Err(FilterError(format!(
                        "{key}: takes {}, not \"{value}\"",
                        allowed.join(", ")
                    )))
                }
            };
            let term = match key.to_ascii_lowercase().as_str() {
                "sig" | "signature" => Term::Is {
                    field: Field::Signature,
                    value: one_of(&["pass", "fail", "skipped"])?,
                },
                "ts" | "timestamp" => Term::Is {
                    field: Field::Timestamp,
                    value: one_of(&["pass", "warn", "fail", "skipped"])?,
                },
                "dup" | "duplicate" => {
                    let value =
                        match one_of(&["yes", "no", "first", "duplicate", "skipped"])?.as_str() {
                            "yes" | "duplicate" => "duplicate",
                            "no" | "first" => "first",
                            _ => "skipped",
                        };
                    Term::Is {
                        field: Field::Duplicate,
                        value: value.into(),
                    }
                }
                "type" => Term::Is {
                    field: Field::EventType,
                    value,
                },
                "job" => Term::Is {
                    field: Field::JobId,
                    value,
                },
                "event" | "id" => Term::Is {
                    field: Field::EventId,
                    value,
                },
                "method" => Term::Is {
                    field: Field::Method,
                    value: value.to_ascii_uppercase(),
                },
                "status" => {
                    if value.parse::<u16>().is_err() {
                        return Err(FilterError(format!(
                            "status: takes an HTTP status such as 500, not \"{value}\""
                        )));
                    }
                    Term::Is {
                        field: Field::ResponseStatus,
                        value,
                    }
                }
                "path" => Term::PathPrefix(value),
                _ => Term::Text(raw.clone()),
            };
            if matches!(&term, Term::Is { value, .. } | Term::PathPrefix(value) if value.is_empty())
            {
                return Err(FilterError(format!("{key}: needs a value")));
            }
            terms.push(term);
        }
        Ok(Filter { terms })
    }

    /// Whether the filter lets everything through.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The terms, in the order written.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_typed_terms_with_normalised_values() {
        let filter =
            Filter::parse("sig:FAIL dup:yes method:post path:/hooks/acme invoice").expect("parses");
        assert_eq!(
            filter.terms(),
            [
                Term::Is {
                    field: Field::Signature,
                    value: "fail".into()
                },
                Term::Is {
                    field: Field::Duplicate,
                    value: "duplicate".into()
                },
                Term::Is {
                    field: Field::Method,
                    value: "POST".into()
                },
                Term::PathPrefix("/hooks/acme".into()),
                Term::Text("invoice".into()),
            ]
        );
    }

    #[test]
    fn unknown_keys_and_quoted_phrases_stay_text() {
        let filter = Filter::parse(r#"http://x "a: b""#).expect("parses");
        assert_eq!(
            filter.terms(),
            [Term::Text("http://x".into()), Term::Text("\"a: b\"".into())]
        );
    }

    #[test]
    fn bad_values_are_explained() {
        let err = Filter::parse("sig:maybe").expect_err("bad value");
        assert_eq!(err.0, "sig: takes pass, fail, skipped, not \"maybe\"");
        assert!(Filter::parse("status:abc").is_err());
        assert!(Filter::parse("job:").is_err());
    }
}
