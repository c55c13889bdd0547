//! The filter language as SQL: each typed term of a [`Filter`] becomes a condition on an
//! indexed column, free text becomes an FTS5 match. This is the only place that knows which
//! column a filter key reads.

use crate::domain::filter::{Field, Filter, Term};

/// The verdict a field's partial index leaves out (schema v12): the usual one.
fn usual(field: Field) -> Option<&'static str> {
    match field {
        Field::Signature | Field::Timestamp => Some("pass"),
        Field::Duplicate => Some("first"),
        _ => None,
    }
}

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
        Field::Schema => "schema_status",
    }
}

/// When the filter is free text only: the FTS5 query, so a count can ask the index alone.
pub fn text_only(filter: &Filter) -> Option<String> {
    let terms = filter.terms();
    let all_text = !terms.is_empty() && terms.iter().all(|t| matches!(t, Term::Text(_)));
    // Only positive free text can be counted from the index alone.
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

/// Which of `conditions` delivery `id` meets, as stored, on `conn`: the list's filter language
/// decides forwarding rules with the very SQL that filters the list. The writer asks it inside
/// the delivery's own transaction; the endpoint editor's *Test* through [`crate::store::Reader`].
pub(crate) fn meets(
    conn: &rusqlite::Connection,
    id: i64,
    conditions: &[Filter],
) -> Result<Vec<bool>, rusqlite::Error> {
    conditions
        .iter()
        .map(|filter| {
            let (condition, mut params) = condition(filter);
            params.push(id.to_string());
            let sql = format!(
                "SELECT EXISTS (SELECT 1 FROM deliveries WHERE id = CAST(?{} AS INTEGER) AND ({condition}))",
                params.len()
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            stmt.query_row(rusqlite::params_from_iter(params.iter()), |r| r.get(0))
        })
        .collect()
}

/// The SQL condition (for `WHERE`) and its parameters.
pub fn condition(filter: &Filter) -> (String, Vec<String>) {
    let mut clauses = Vec::new();
    let mut params = Vec::new();
    let mut words = Vec::new();
    for term in filter.terms() {
        match term {
            // Positive free-text terms share one FTS5 query (all must match).
            Term::Text(text) => words.push(fts_phrase(text)),
            other => clauses.push(clause(other, &mut params)),
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

/// One term as a condition, its values appended to `params`.
fn clause(term: &Term, params: &mut Vec<String>) -> String {
    match term {
        Term::Is { field, value } => {
            params.push(value.clone());
            let column = column(*field);
            match usual(*field) {
                // The partial index's own condition, spelled as in the schema, so SQLite knows
                // the index holds every row this term can match.
                Some(usual) if value != usual => {
                    format!("({column} = ?{} AND {column} <> '{usual}')", params.len())
                }
                _ => format!("{column} = ?{}", params.len()),
            }
        }
        Term::PathPrefix(prefix) => {
            // A range on the path index rather than LIKE, so `%` and `_` stay literal.
            params.push(prefix.clone());
            let low = params.len();
            params.push(format!("{prefix}\u{10FFFF}"));
            format!("(path >= ?{low} AND path < ?{})", params.len())
        }
        Term::Text(text) => {
            params.push(fts_phrase(text));
            format!(
                "id IN (SELECT rowid FROM deliveries_fts WHERE deliveries_fts MATCH ?{})",
                params.len()
            )
        }
        Term::ReceivedFrom(ms) => {
            params.push(ms.to_string());
            format!("received_at_ms >= CAST(?{} AS INTEGER)", params.len())
        }
        Term::ReceivedBefore(ms) => {
            params.push(ms.to_string());
            format!("received_at_ms < CAST(?{} AS INTEGER)", params.len())
        }
        // `handshake IS NOT NULL` is the partial index's own condition (schema v16).
        Term::Handshake(true) => "handshake IS NOT NULL".into(),
        Term::Handshake(false) => "handshake IS NULL".into(),
        Term::TypePattern(pattern) => type_pattern(pattern, params),
        Term::Or(groups) => {
            let alternatives: Vec<String> = groups
                .iter()
                .map(|group| {
                    let all: Vec<String> = group.iter().map(|t| clause(t, params)).collect();
                    format!("({})", all.join(" AND "))
                })
                .collect();
            format!("({})", alternatives.join(" OR "))
        }
        // `IS NOT` rather than `NOT (… = …)`, so a delivery with no value (no event type, no
        // job) is kept by `-type:…`, as a person means it.
        Term::Not(inner) => match inner.as_ref() {
            Term::Is { field, value } => {
                params.push(value.clone());
                format!("{} IS NOT ?{}", column(*field), params.len())
            }
            // A delivery with no event type is not of the pattern's types.
            Term::TypePattern(pattern) => {
                format!(
                    "(event_type IS NULL OR NOT {})",
                    type_pattern(pattern, params)
                )
            }
            // `IFNULL(…, 0)`: inside a negated group, a term on a missing value (no event type,
            // no job) does not hold, so the negation does, as `-type:…` keeps such deliveries.
            group @ Term::Or(_) => format!("NOT IFNULL({}, 0)", clause(group, params)),
            other => format!("NOT ({})", clause(other, params)),
        },
    }
}

/// `type:` with `*` wildcards: a range on the event-type index when the only `*` ends it
/// (`invoice.*`), else a GLOB with every other GLOB character taken literally.
fn type_pattern(pattern: &str, params: &mut Vec<String>) -> String {
    match pattern
        .strip_suffix('*')
        .filter(|prefix| !prefix.contains('*'))
    {
        Some(prefix) => {
            params.push(prefix.to_string());
            let low = params.len();
            params.push(format!("{prefix}\u{10FFFF}"));
            format!("(event_type >= ?{low} AND event_type < ?{})", params.len())
        }
        None => {
            let glob: String = pattern
                .chars()
                .map(|c| match c {
                    '?' => "[?]".to_string(),
                    '[' => "[[]".to_string(),
                    c => c.to_string(),
                })
                .collect();
            params.push(glob);
            format!("event_type GLOB ?{}", params.len())
        }
    }
}

/// One free-text term as an FTS5 query: a quoted phrase, matched as a prefix when unquoted.
fn fts_phrase(text: &str) -> String {
    let phrase = text.trim_matches('"');
    // FTS5 reads a query up to a NUL ("unterminated string"); the tokenizer treats every
    // control character as a separator anyway, so a space means the same.
    let escaped = phrase
        .replace('"', "\"\"")
        .replace(|c: char| c.is_control(), " ");
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
            "(sig_status = ?1 AND sig_status <> 'pass') AND (dup_status = ?2 AND dup_status <> 'first') AND event_type = ?3 AND (path >= ?4 AND path < ?5)"
        );
        // The usual verdict has no index: a plain condition.
        let (sql, _) = condition(&Filter::parse("sig:pass dup:no").expect("parses"));
        assert_eq!(sql, "sig_status = ?1 AND dup_status = ?2");
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

    #[test]
    fn negated_terms_and_time_bounds_become_their_conditions() {
        let zone = crate::domain::fmt::Zone::utc();
        let now = 1_790_000_000_000;
        let filter = Filter::parse_at(
            "-type:job.failed -path:/a -secret after:-1h before:2026-01-02",
            now,
            &zone,
        )
        .expect("parses");
        let (sql, params) = condition(&filter);
        assert_eq!(
            sql,
            "event_type IS NOT ?1 AND NOT ((path >= ?2 AND path < ?3)) AND NOT (id IN (SELECT rowid FROM deliveries_fts WHERE deliveries_fts MATCH ?4)) AND received_at_ms >= CAST(?5 AS INTEGER) AND received_at_ms < CAST(?6 AS INTEGER)"
        );
        assert_eq!(params[3], "\"secret\"*");
        assert_eq!(params[4], (now - 3_600_000).to_string());
        assert_eq!(params[5], "1767312000000");
        assert_eq!(text_only(&filter), None);
    }
}
