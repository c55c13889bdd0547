//! The filter language of the deliveries list, turned into SQL for the store.
//!
//! A filter is whitespace-separated terms, all of which must hold: `key:value` terms on indexed
//! columns (`sig:fail`, `ts:warn`, `dup:yes`, `type:job.failed`, `job:job_123`,
//! `path:/hooks/acme`, `event:evt_1`, `method:post`, `status:500`) and free words, searched in
//! the path, the headers and the body through SQLite FTS5 (whole words and word prefixes; put a
//! phrase in double quotes). Nothing is scanned in memory.

use std::fmt;

/// A parsed filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    terms: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    Column { column: &'static str, value: String },
    PathPrefix(String),
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
                "sig" | "signature" => Term::Column {
                    column: "sig_status",
                    value: one_of(&["pass", "fail", "skipped"])?,
                },
                "ts" | "timestamp" => Term::Column {
                    column: "ts_status",
                    value: one_of(&["pass", "warn", "fail", "skipped"])?,
                },
                "dup" | "duplicate" => {
                    let value =
                        match one_of(&["yes", "no", "first", "duplicate", "skipped"])?.as_str() {
                            "yes" | "duplicate" => "duplicate",
                            "no" | "first" => "first",
                            _ => "skipped",
                        };
                    Term::Column {
                        column: "dup_status",
                        value: value.into(),
                    }
                }
                "type" => Term::Column {
                    column: "event_type",
                    value,
                },
                "job" => Term::Column {
                    column: "job_id",
                    value,
                },
                "event" | "id" => Term::Column {
                    column: "event_id",
                    value,
                },
                "method" => Term::Column {
                    column: "method",
                    value: value.to_ascii_uppercase(),
                },
                "status" => {
                    if value.parse::<u16>().is_err() {
                        return Err(FilterError(format!(
                            "status: takes an HTTP status such as 500, not \"{value}\""
                        )));
                    }
                    Term::Column {
                        column: "response_status",
                        value,
                    }
                }
                "path" => Term::PathPrefix(value),
                _ => Term::Text(raw.clone()),
            };
            if matches!(&term, Term::Column { value, .. } | Term::PathPrefix(value) if value.is_empty())
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

    /// When the filter is free text only: the FTS5 query, so a count can ask the index alone.
    pub fn text_only(&self) -> Option<String> {
        let all_text =
            !self.terms.is_empty() && self.terms.iter().all(|t| matches!(t, Term::Text(_)));
        all_text.then(|| {
            self.terms
                .iter()
                .filter_map(|t| match t {
                    Term::Text(text) => Some(fts_phrase(text)),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(" AND ")
        })
    }

    /// The SQL condition (for `WHERE`) and its parameters.
    pub fn to_sql(&self) -> (String, Vec<String>) {
        let mut clauses = Vec::new();
        let mut params = Vec::new();
        let mut words = Vec::new();
        for term in &self.terms {
            match term {
                Term::Column { column, value } => {
                    params.push(value.clone());
                    clauses.push(format!("{column} = ?{}", params.len()));
                }
                Term::PathPrefix(prefix) => {
                    // A range on the path index rather than LIKE, so `%` and `_` stay literal.
                    params.push(prefix.clone());
                    let low = params.len();
                    params.push(format!("{prefix}\u{10FFFF}"));
                    clauses.push(format!("(path >= ?{low} AND path < ?{})", params.len()));
                }
                Term::Text(text) => words.push(fts_phrase(text)),
            }
        }
        if !words.is_empty() {
            params.push(words.join(" AND "));
            clauses.push(format!(
                "id IN (SELECT rowid FROM deliveries_fts WHERE deliveries_fts MATCH ?{})",
                params.len()
            ));
        }
        if clauses.is_empty() {
            ("1".to_string(), params)
        } else {
            (clauses.join(" AND "), params)
        }
    }
}

/// One free-text term as an FTS5 query: a quoted phrase, matched as a prefix when unquoted.
fn fts_phrase(text: &str) -> String {
    let phrase = text.trim_matches('"');
    let escaped = phrase.replace('"', "\"\"");
    if text.starts_with('"') {
        format!("\"{escaped}\"")
    } else {
        format!("\"{escaped}\"*")
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (sql, params) = self.to_sql();
        write!(f, "{sql} {params:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_combine_into_indexed_conditions() {
        let filter =
            Filter::parse("sig:fail dup:yes type:job.failed path:/hooks/acme").expect("parses");
        let (sql, params) = filter.to_sql();
        assert_eq!(
            sql,
            "sig_status = ?1 AND dup_status = ?2 AND event_type = ?3 AND (path >= ?4 AND path < ?5)"
        );
        assert_eq!(
            params[..4],
            ["fail", "duplicate", "job.failed", "/hooks/acme"]
        );
    }

    #[test]
    fn free_text_goes_to_fts_with_quotes_escaped() {
        let filter = Filter::parse(r#"invoice "exact phrase" http://x"#).expect("parses");
        let (sql, params) = filter.to_sql();
        assert!(sql.contains("deliveries_fts MATCH ?1"), "{sql}");
        assert_eq!(params, [r#""invoice"* AND "exact phrase" AND "http://x"*"#]);
    }

    #[test]
    fn bad_values_are_explained() {
        let err = Filter::parse("sig:maybe").expect_err("bad value");
        assert_eq!(err.0, "sig: takes pass, fail, skipped, not \"maybe\"");
        assert!(Filter::parse("status:abc").is_err());
        assert!(Filter::parse("job:").is_err());
    }
}
