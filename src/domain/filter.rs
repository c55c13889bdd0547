//! The filter language of the deliveries list, parsed into terms. The store turns the terms
//! into SQL (`store::query`); nothing here knows a column name.
//!
//! A filter is whitespace-separated terms, all of which must hold: `key:value` terms on indexed
//! columns (`sig:fail`, `ts:warn`, `dup:yes`, `type:job.failed`, `job:job_123`,
//! `path:/hooks/acme`, `event:evt_1`, `method:post`, `status:500`) and free words, searched in
//! the path, the headers and the body through SQLite FTS5 (whole words and word prefixes; put a
//! phrase in double quotes). Nothing is scanned in memory.

use crate::domain::fmt::Zone;

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
    /// `schema:` the schema check's verdict word.
    Schema,
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
    /// Received at or after this time, Unix milliseconds (`after:`).
    ReceivedFrom(i64),
    /// Received before this time, Unix milliseconds (`before:`).
    ReceivedBefore(i64),
    /// The request was a provider's handshake (`handshake:yes`) or not (`handshake:no`).
    Handshake(bool),
    /// The event type matches a pattern where `*` stands for any text (`type:invoice.*`).
    TypePattern(String),
    /// Any of these groups holds, each group a list of terms that must all hold
    /// (`a b OR c`, `(a OR b) c`).
    Or(Vec<Vec<Term>>),
    /// The term does not hold (`-term`).
    Not(Box<Term>),
}

/// A filter that could not be parsed, with the sentence to show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FilterError(pub String);

/// The keys the filter understands, for help texts.
pub const KEYS: &str = "sig:pass|fail|skipped  ts:pass|warn|fail|skipped  dup:yes|no  handshake:yes|no  schema:pass|fail|skipped  type:T (type:invoice.*)  job:ID  event:ID  path:/prefix  method:M  status:CODE  after:DATE|-1h  before:DATE  -term  a OR b  (…)";

/// The keys by name, for the error on an unknown one.
const KEY_NAMES: &str =
    "sig, ts, dup, handshake, schema, type, job, event, path, method, status, after, before";

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
            // Control characters separate terms like spaces (a pasted NUL or tab is not a word).
            c if (c.is_whitespace() || c.is_control()) && !quoted => {
                if !current.is_empty() {
                    terms.push(std::mem::take(&mut current));
                }
            }
            // A parenthesis outside quotes is a token of its own; `-(` negates a group.
            '(' | ')' if !quoted => {
                if !current.is_empty() && current != "-" {
                    terms.push(std::mem::take(&mut current));
                }
                current.push(c);
                terms.push(std::mem::take(&mut current));
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
    /// Parses filter text at the current time in the local zone (for `after:` and `before:`).
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        Filter::parse_at(
            text,
            crate::domain::clock::now_ms(),
            &crate::domain::clock::local_zone(),
        )
    }

    /// Parses filter text; relative times (`after:-1h`) count back from `now_ms`, dates are
    /// read in `zone`. A `key:` that is not a key is an error listing the keys (a typo such as
    /// `sgi:fail` would otherwise search for text), except where the value starts with `/`
    /// (`http://…`) or the key is not a word (`12:30`); quote text with a colon to search it.
    ///
    /// Terms that follow each other must all hold; `OR` (upper case) between them makes
    /// alternatives, binding looser than that (`a b OR c` is `(a b) OR c`); parentheses group;
    /// `-` negates the term or the group it is written on, binding tightest.
    pub fn parse_at(text: &str, now_ms: i64, zone: &Zone) -> Result<Filter, FilterError> {
        let tokens = split_terms(text);
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
            depth: 0,
            now_ms,
            zone,
        };
        let groups = parser.alternatives()?;
        if let Some(extra) = tokens.get(parser.at) {
            return Err(FilterError(format!(
                "`{extra}` closes no parenthesis: remove it, or open one before"
            )));
        }
        Ok(Filter {
            terms: flatten(groups),
        })
    }

    /// Parses a forwarding rule's `when`: the list's language, with the terms that can be
    /// decided the moment a delivery is stored. Free text is refused (the text index fills
    /// after the answer), and so are `after:`/`before:` (a rule has no "now" to count from).
    pub fn parse_rule(text: &str) -> Result<Filter, FilterError> {
        let filter = Filter::parse(text)?;
        fn check(term: &Term) -> Result<(), FilterError> {
            match term {
                Term::Text(text) => Err(FilterError(format!(
                    "free text (`{text}`) cannot choose a forward: the text index is filled after the answer; use typed keys such as type:, path:, sig:, event:, job:, method:"
                ))),
                Term::ReceivedFrom(_) | Term::ReceivedBefore(_) => Err(FilterError(
                    "after: and before: cannot choose a forward: a rule decides as each delivery arrives".into(),
                )),
                Term::Or(groups) => groups.iter().flatten().try_for_each(check),
                Term::Not(inner) => check(inner),
                _ => Ok(()),
            }
        }
        filter.terms.iter().try_for_each(check)?;
        Ok(filter)
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

/// Alternatives as terms: one group is its terms (all must hold), several are one `Or` term.
fn flatten(mut groups: Vec<Vec<Term>>) -> Vec<Term> {
    if groups.len() == 1 {
        groups.pop().unwrap_or_default()
    } else {
        vec![Term::Or(groups)]
    }
}

/// The deepest parentheses may nest.
const MAX_DEPTH: usize = 16;

/// The filter's tokens read as alternatives of terms.
struct Parser<'a> {
    tokens: &'a [String],
    at: usize,
    /// How many parentheses are open, bounded so that no text can exhaust the stack.
    depth: usize,
    now_ms: i64,
    zone: &'a Zone,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    /// `group (OR group)*`, up to a `)` or the end.
    fn alternatives(&mut self) -> Result<Vec<Vec<Term>>, FilterError> {
        let mut groups = vec![self.group()?];
        while self.peek() == Some("OR") {
            self.at += 1;
            let group = self.group()?;
            if group.is_empty() {
                return Err(FilterError(
                    "OR needs a term on each side (`type:a OR type:b`)".into(),
                ));
            }
            groups.push(group);
        }
        if groups.len() > 1 && groups[0].is_empty() {
            return Err(FilterError(
                "OR needs a term on each side (`type:a OR type:b`)".into(),
            ));
        }
        Ok(groups)
    }

    /// Terms that must all hold, up to `OR`, a `)` or the end.
    fn group(&mut self) -> Result<Vec<Term>, FilterError> {
        let mut terms = Vec::new();
        while let Some(token) = self.peek() {
            match token {
                "OR" | ")" => break,
                "(" | "-(" => {
                    let negated = token == "-(";
                    self.at += 1;
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return Err(FilterError(format!(
                            "parentheses nest {MAX_DEPTH} deep at the most"
                        )));
                    }
                    let inner = self.alternatives()?;
                    self.depth -= 1;
                    if self.peek() != Some(")") {
                        return Err(FilterError(
                            "a `(` is not closed: add `)` after its terms".into(),
                        ));
                    }
                    self.at += 1;
                    let mut inner = flatten(inner);
                    if inner.is_empty() {
                        return Err(FilterError("`()` holds no term".into()));
                    }
                    if !negated {
                        terms.extend(inner);
                    } else if inner.len() == 1 {
                        let one = inner.pop().unwrap_or(Term::Or(Vec::new()));
                        terms.push(Term::Not(Box::new(one)));
                    } else {
                        terms.push(Term::Not(Box::new(Term::Or(vec![inner]))));
                    }
                }
                raw => {
                    let (negated, body) = match raw.strip_prefix('-') {
                        Some(rest) if !rest.is_empty() && !rest.starts_with('-') => (true, rest),
                        _ => (false, raw),
                    };
                    let term = term_of(body, self.now_ms, self.zone)?;
                    self.at += 1;
                    terms.push(if negated {
                        Term::Not(Box::new(term))
                    } else {
                        term
                    });
                }
            }
        }
        Ok(terms)
    }
}

/// One term without its `-`.
fn term_of(raw: &str, now_ms: i64, zone: &Zone) -> Result<Term, FilterError> {
    let Some((key, value)) = raw.split_once(':').filter(|(k, _)| !k.starts_with('"')) else {
        return Ok(Term::Text(raw.to_string()));
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
            let value = match one_of(&["yes", "no", "first", "duplicate", "skipped"])?.as_str() {
                "yes" | "duplicate" => "duplicate",
                "no" | "first" => "first",
                _ => "skipped",
            };
            Term::Is {
                field: Field::Duplicate,
                value: value.into(),
            }
        }
        "handshake" => Term::Handshake(one_of(&["yes", "no"])? == "yes"),
        "schema" => Term::Is {
            field: Field::Schema,
            value: one_of(&["pass", "fail", "skipped"])?,
        },
        "type" if value.contains('*') => Term::TypePattern(value),
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
        "after" | "since" => Term::ReceivedFrom(time_bound(key, &value, now_ms, zone)?),
        "before" | "until" => Term::ReceivedBefore(time_bound(key, &value, now_ms, zone)?),
        _ => {
            let is_word =
                !key.is_empty() && key.chars().all(|c| c.is_ascii_alphabetic() || c == '_');
            if is_word && !value.starts_with('/') {
                return Err(FilterError(format!(
                    "{key}: is not a filter key (the keys: {KEY_NAMES}); to search for the text, put it in quotes: \"{raw}\""
                )));
            }
            Term::Text(raw.to_string())
        }
    };
    if matches!(&term, Term::Is { value, .. } | Term::PathPrefix(value) if value.is_empty()) {
        return Err(FilterError(format!("{key}: needs a value")));
    }
    Ok(term)
}

/// A span of time as a number and a unit (`90s`, `15m`, `24h`, `2d`, `1w`), in milliseconds;
/// `None` when it is not one.
pub fn span_ms(value: &str) -> Option<i64> {
    let unit = value.chars().last().filter(|c| c.is_ascii_alphabetic())?;
    let secs: i64 = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => 86_400,
        'w' => 604_800,
        _ => return None,
    };
    let n: i64 = value[..value.len() - unit.len_utf8()].parse().ok()?;
    Some(n.saturating_mul(secs).saturating_mul(1000))
}

/// A time for `after:` / `before:`: relative to now (`-90s`, `-15m`, `-1h`, `-2d`, `-1w`), a
/// date (`2026-11-30`, midnight in `zone`), a date and time (`2026-11-30T14:35`, in `zone`), or
/// RFC 3339 with its offset (`2026-11-30T14:35:00Z`). Unix milliseconds.
fn time_bound(key: &str, value: &str, now_ms: i64, zone: &Zone) -> Result<i64, FilterError> {
    if let Some(span) = span_ms(value.strip_prefix('-').unwrap_or(value)) {
        return Ok(now_ms.saturating_sub(span));
    }
    if let Ok(ts) = value.parse::<jiff::Timestamp>() {
        return Ok(ts.as_millisecond());
    }
    let civil = value.parse::<jiff::civil::DateTime>().or_else(|_| {
        value
            .parse::<jiff::civil::Date>()
            .map(jiff::civil::DateTime::from)
    });
    match civil.and_then(|dt| dt.to_zoned_datetime(zone.tz().clone())) {
        Ok(zoned) => Ok(zoned.timestamp().as_millisecond()),
        Err(_) => Err(FilterError(format!(
            "{key}: takes a date (2026-11-30), a date and time (2026-11-30T14:35) or a time back from now (-1h, -30m, -2d), not \"{value}\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is(field: Field, value: &str) -> Term {
        Term::Is {
            field,
            value: value.into(),
        }
    }

    #[test]
    fn or_binds_looser_than_and_and_minus_tightest_with_parentheses_grouping() {
        let parse = |text: &str| Filter::parse(text).expect("parses").terms().to_vec();
        let sig_fail = is(Field::Signature, "fail");
        let job = is(Field::JobId, "j1");
        // `a b OR c` is `(a b) OR c`.
        assert_eq!(
            parse("sig:fail job:j1 OR type:x.*"),
            [Term::Or(vec![
                vec![sig_fail.clone(), job.clone()],
                vec![Term::TypePattern("x.*".into())]
            ])]
        );
        // `(a OR b) c`, written with the parentheses against the words.
        assert_eq!(
            parse("(type:invoice.* OR type:customer.subscription.*) job:j1"),
            [
                Term::Or(vec![
                    vec![Term::TypePattern("invoice.*".into())],
                    vec![Term::TypePattern("customer.subscription.*".into())]
                ]),
                job.clone()
            ]
        );
        // `-` on a group negates the group; on a term, the term alone.
        assert_eq!(
            parse("-(sig:fail OR job:j1) -job:j1"),
            [
                Term::Not(Box::new(Term::Or(vec![
                    vec![sig_fail.clone()],
                    vec![job.clone()]
                ]))),
                Term::Not(Box::new(job.clone()))
            ]
        );
        // Without OR, nothing changes: a plain list of terms; a lower-case `or` is a word.
        assert_eq!(
            parse("sig:fail or"),
            [sig_fail.clone(), Term::Text("or".into())]
        );
        // A quoted parenthesis is text.
        assert_eq!(parse(r#""(a)""#), [Term::Text(r#""(a)""#.into())]);
    }

    #[test]
    fn unbalanced_parentheses_and_a_dangling_or_are_said() {
        for (text, says) in [
            ("(sig:fail", "not closed"),
            ("sig:fail)", "closes no parenthesis"),
            ("sig:fail OR", "OR needs a term on each side"),
            ("OR sig:fail", "OR needs a term on each side"),
            ("()", "holds no term"),
            (&"(".repeat(100_000), "16 deep at the most"),
        ] {
            let err = Filter::parse(text).expect_err(text);
            assert!(err.0.contains(says), "{text}: {err}");
        }
    }

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

    #[test]
    fn a_typo_in_a_key_is_an_error_that_lists_the_keys() {
        let err = Filter::parse("sgi:fail").expect_err("typo");
        assert!(
            err.0
                .starts_with("sgi: is not a filter key (the keys: sig, ts,"),
            "{}",
            err.0
        );
        assert!(err.0.contains("\"sgi:fail\""), "{}", err.0);
        // Not keys: a URL, a time of day, quoted text.
        assert!(Filter::parse("https://example.com/x 12:30 \"sgi:fail\"").is_ok());
    }

    #[test]
    fn a_minus_negates_a_term() {
        let filter = Filter::parse("-sig:fail -invoice").expect("parses");
        assert_eq!(
            filter.terms(),
            [
                Term::Not(Box::new(Term::Is {
                    field: Field::Signature,
                    value: "fail".into()
                })),
                Term::Not(Box::new(Term::Text("invoice".into()))),
            ]
        );
        // A lone or doubled dash is text.
        assert_eq!(
            filter_terms("- --x"),
            [Term::Text("-".into()), Term::Text("--x".into())]
        );
    }

    fn filter_terms(text: &str) -> Vec<Term> {
        Filter::parse(text).expect("parses").terms().to_vec()
    }

    #[test]
    fn after_and_before_take_relative_times_dates_and_instants() {
        let now = 1_790_000_000_000;
        let tokyo = Zone::posix("JST-9").expect("zone");
        let at = |text: &str| {
            Filter::parse_at(text, now, &tokyo)
                .map(|f| f.terms().to_vec())
                .map_err(|e| e.0)
        };
        assert_eq!(
            at("after:-1h"),
            Ok(vec![Term::ReceivedFrom(now - 3_600_000)])
        );
        assert_eq!(
            at("after:30m"),
            Ok(vec![Term::ReceivedFrom(now - 1_800_000)])
        );
        assert_eq!(
            at("before:-2d"),
            Ok(vec![Term::ReceivedBefore(now - 172_800_000)])
        );
        // Midnight in Tokyo is 15:00 the day before in UTC.
        assert_eq!(
            at("after:2026-01-02"),
            Ok(vec![Term::ReceivedFrom(1_767_279_600_000)])
        );
        assert_eq!(
            at("after:2026-01-02T09:00"),
            Ok(vec![Term::ReceivedFrom(1_767_312_000_000)])
        );
        assert_eq!(
            at("before:2026-01-02T00:00:00Z"),
            Ok(vec![Term::ReceivedBefore(1_767_312_000_000)])
        );
        let err = at("after:yesterday").expect_err("not a time");
        assert!(err.starts_with("after: takes a date"), "{err}");
    }
}
