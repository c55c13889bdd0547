//! The filter language as SQL: each typed term of a [`Filter`] becomes a condition on an
//! indexed column, free text becomes an FTS5 match. This is the only place that knows which
//! column a filter key reads.

use crate::domain::filter::{Field, Filter, Term};

/// The column a field is stored in.
fn column(field: Field) -> &'static str {
    match field {
        Field::Signature => "sig_status",
        Field::Timestamp => "ts_status",
        Field::Duplicate => "dup_status",
        Field::EventType => "event_type",
        Field::JobId => "job_id",
        Field::EventId => "event_id",
        Field::Method => "method",
        Field::ResponseStatus => "response_status",
    }
}

/// When the filter is free text only: the FTS5 query, so a count can ask the index alone.
pub fn text_only(filter: &Filter) -> Option<String> {
    let terms = filter.terms();
    let all_text = !terms.is_empty() && terms.iter().all(|t| matches!(t, Term::Text(_)));
    all_text.then(|| {
        terms
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
pub fn condition(filter: &Filter) -> (String, Vec<String>) {
    let mut clauses = Vec::new();
    let mut params = Vec::new();
    let mut words = Vec::new();
    for term in filter.terms() {
        match term {
            Term::Is { field, value } => {
                params.push(value.clone());
                clauses.push(format!("{} = ?{}", column(*field), params.len()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_combine_into_indexed_conditions() {
        let filter =
            Filter::parse("sig:fail dup:yes type:job.failed path:/hooks/acme").expect("parses");
        let (sql, params) = condition(&filter);
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
        let (sql, params) = condition(&filter);
        assert!(sql.contains("deliveries_fts MATCH ?1"), "{sql}");
        assert_eq!(params, [r#""invoice"* AND "exact phrase" AND "http://x"*"#]);
        assert_eq!(text_only(&filter).as_deref(), Some(params[0].as_str()));
    }
}
