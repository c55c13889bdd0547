//! Two deliveries compared: headers added, removed and changed (those expected to differ
//! between two attempts folded apart), the body by JSON pointer (or line by line, or the first
//! differing byte), whether it is one JSON value re-serialised, and the checks side by side.

use serde::Serialize;
use serde_json::Value;

use crate::domain::checks::{Checks, status_word};
use crate::domain::delivery::Delivery;
use crate::domain::pretty::pointer_segment;

/// One side of a comparison.
#[derive(Debug, Clone)]
pub struct Side<'a> {
    /// The delivery's id.
    pub id: i64,
    /// The request.
    pub delivery: &'a Delivery,
    /// Its verdicts (none for a request hookscope sent: a forwarded copy).
    pub checks: Option<&'a Checks>,
    /// What it is, for the title: `#7`, `the forward to URL (attempt #12)`.
    pub label: String,
}

impl<'a> Side<'a> {
    /// A stored delivery: `#id`, with its checks.
    pub fn delivery(id: i64, delivery: &'a Delivery, checks: &'a Checks) -> Self {
        Side {
            id,
            delivery,
            checks: Some(checks),
            label: format!("#{id}"),
        }
    }
}

/// A header that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeaderChange {
    /// The name, lower case.
    pub name: String,
    /// What happened to it: `added` (only in the second), `removed` (only in the first),
    /// `changed` (another value), `moved` (the same value, in another place among the headers
    /// both have).
    pub change: Change,
    /// Its value in the first, when it has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// Its value in the second, when it has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// A header expected to differ between two attempts (a signature, a timestamp, an id, the
    /// length, tracing).
    pub expected: bool,
}

/// What a JSON value did between the two bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Only in the second.
    Added,
    /// Only in the first.
    Removed,
    /// In both, with another value.
    Changed,
    /// The same members in another order (a body), or the same value in another place among
    /// the headers both have (a header).
    Moved,
}

/// A difference at a JSON pointer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonChange {
    /// Where (`/data/status`; empty for the whole body).
    pub pointer: String,
    /// What happened there.
    pub change: Change,
    /// The value in the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    /// The value in the second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
}

/// How the bodies differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum BodyDiff {
    /// The same bytes.
    Same,
    /// Both JSON: the changes by pointer (none when only the bytes differ).
    Json {
        /// The changes, in document order.
        changes: Vec<JsonChange>,
    },
    /// Text, line by line: `-`, `+` and ` ` lines (a window of context around each change).
    Text {
        /// The lines, each with its mark.
        lines: Vec<String>,
    },
    /// Bytes: where they first differ.
    Binary {
        /// The offset of the first differing byte.
        first_difference: usize,
        /// The sizes.
        sizes: [usize; 2],
    },
}

/// A check's verdicts side by side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckPair {
    /// `signature`, `timestamp`, `duplicate`, `advice`.
    pub check: &'static str,
    /// The first's verdict.
    pub a: String,
    /// The second's.
    pub b: String,
}

/// Two deliveries compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The first delivery's id.
    pub a: i64,
    /// The second's (a forwarded copy's: its attempt's).
    pub b: i64,
    /// What is compared with what: `#3 -> #7`, `#3 -> the forward to URL (attempt #12)`.
    pub title: String,
    /// The headers that differ, the expected ones included (marked).
    pub headers: Vec<HeaderChange>,
    /// How the bodies differ.
    pub body: BodyDiff,
    /// One sentence when the bodies are one JSON value in other bytes: re-serialised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserialised: Option<String>,
    /// The checks side by side.
    pub checks: Vec<CheckPair>,
    /// Whether anything differs beyond the headers expected to.
    pub differs: bool,
}

/// Whether a header is expected to differ between two attempts of one event.
pub fn expected_to_differ(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "content-length",
        "date",
        "traceparent",
        "tracestate",
        "baggage",
        "sentry-trace",
        "x-request-id",
        "x-amzn-trace-id",
        "x-cloud-trace-context",
        "x-datadog-trace-id",
        "x-datadog-parent-id",
        "webhook-id",
        "svix-id",
        "x-github-delivery",
        "idempotency-key",
        "x-twilio-signature",
        "i-twilio-idempotency-token",
        "twitch-eventsub-message-id",
        "x-hookscope-delivery-id",
        "connection",
        "host",
    ];
    let name = name.to_ascii_lowercase();
    EXACT.contains(&name.as_str())
        || crate::domain::scheme::is_signature_header(&name)
        || name.ends_with("-timestamp")
        || name.ends_with("-delivery-id")
        || name.starts_with("x-b3-")
}

/// Compares two deliveries.
pub fn compare(a: Side<'_>, b: Side<'_>) -> Comparison {
    let headers = header_changes(a.delivery, b.delivery);
    let (body, reserialised) = body_diff(&a.delivery.body, &b.delivery.body);
    let checks = match (a.checks, b.checks) {
        (Some(x), Some(y)) => check_pairs(x, y),
        _ => Vec::new(),
    };
    let differs = headers.iter().any(|h| !h.expected)
        || match &body {
            BodyDiff::Same => false,
            BodyDiff::Json { changes } => !changes.is_empty() || reserialised.is_some(),
            _ => true,
        };
    Comparison {
        a: a.id,
        b: b.id,
        title: format!("{} -> {}", a.label, b.label),
        headers,
        body,
        reserialised,
        checks,
        differs,
    }
}

/// Every value of a header, joined as HTTP folds repeats.
fn header_values(d: &Delivery) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for h in &d.headers {
        let value = h.shown_lossy();
        match out.iter_mut().find(|(n, _)| *n == h.name) {
            Some((_, v)) => {
                v.push_str(", ");
                v.push_str(&value);
            }
            None => out.push((h.name.clone(), value)),
        }
    }
    out
}

fn header_changes(a: &Delivery, b: &Delivery) -> Vec<HeaderChange> {
    let (old, new) = (header_values(a), header_values(b));
    let mut out = Vec::new();
    for (name, value) in &old {
        match new.iter().find(|(n, _)| n == name) {
            Some((_, other)) if other == value => {}
            found => out.push(HeaderChange {
                name: name.clone(),
                change: match found {
                    Some(_) => Change::Changed,
                    None => Change::Removed,
                },
                old: Some(value.clone()),
                new: found.map(|(_, v)| v.clone()),
                expected: expected_to_differ(name),
            }),
        }
    }
    for (name, value) in &new {
        if !old.iter().any(|(n, _)| n == name) {
            out.push(HeaderChange {
                name: name.clone(),
                change: Change::Added,
                old: None,
                new: Some(value.clone()),
                expected: expected_to_differ(name),
            });
        }
    }
    for name in moved_headers(&old, &new) {
        if out.iter().any(|h| h.name == name) {
            continue; // changed as well: said once, as changed
        }
        let value = old.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
        out.push(HeaderChange {
            expected: expected_to_differ(&name),
            name,
            change: Change::Moved,
            old: value.clone(),
            new: value,
        });
    }
    out
}

/// The most headers both deliveries have that are compared for order: the table below takes
/// their square (256 KiB at this bound); past it, order is not judged.
const ORDER_BOUND: usize = 256;

/// The headers both deliveries have that are not in the same order among them: those outside
/// the longest sequence of them kept in order (a middleware that moves one header moves one).
/// A repeated name counts at its first place, as [`header_values`] joins its values.
fn moved_headers(old: &[(String, String)], new: &[(String, String)]) -> Vec<String> {
    let in_both = |from: &[(String, String)], other: &[(String, String)]| -> Vec<String> {
        from.iter()
            .filter(|(n, _)| other.iter().any(|(o, _)| o == n))
            .map(|(n, _)| n.clone())
            .collect()
    };
    let (a, b) = (in_both(old, new), in_both(new, old));
    if a.len() > ORDER_BOUND {
        return Vec::new();
    }
    // Longest common subsequence of the two orders, by dynamic programming (a few dozen names).
    let mut len = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            len[i][j] = if a[i] == b[j] {
                len[i + 1][j + 1] + 1
            } else {
                len[i + 1][j].max(len[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut kept) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            kept.push(a[i].clone());
            (i, j) = (i + 1, j + 1);
        } else if len[i + 1][j] >= len[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    a.into_iter().filter(|n| !kept.contains(n)).collect()
}

fn body_diff(a: &[u8], b: &[u8]) -> (BodyDiff, Option<String>) {
    if a == b {
        return (BodyDiff::Same, None);
    }
    let json = |bytes: &[u8]| serde_json::from_slice::<Value>(bytes).ok();
    if let (Some(old), Some(new)) = (json(a), json(b)) {
        let mut changes = Vec::new();
        json_changes(String::new(), &old, &new, &mut changes);
        let reserialised = (old == new).then(|| {
            "The two bodies are the same JSON value in other bytes (spacing, key order or escapes): \
             it was re-serialised, the most common reason a signature over the raw bytes fails."
                .to_string()
        });
        return (BodyDiff::Json { changes }, reserialised);
    }
    match (std::str::from_utf8(a), std::str::from_utf8(b)) {
        (Ok(old), Ok(new)) => (
            BodyDiff::Text {
                lines: line_diff(old, new),
            },
            None,
        ),
        _ => (
            BodyDiff::Binary {
                first_difference: a.iter().zip(b).take_while(|(x, y)| x == y).count(),
                sizes: [a.len(), b.len()],
            },
            None,
        ),
    }
}

/// The changes between two JSON values, by pointer, in the first's order then the second's.
fn json_changes(pointer: String, old: &Value, new: &Value, out: &mut Vec<JsonChange>) {
    let change = |pointer: String, change, old: Option<&Value>, new: Option<&Value>| JsonChange {
        pointer,
        change,
        old: old.cloned(),
        new: new.cloned(),
    };
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let at = format!("{pointer}/{}", pointer_segment(key));
                match b.get(key) {
                    Some(other) => json_changes(at, value, other, out),
                    None => out.push(change(at, Change::Removed, Some(value), None)),
                }
            }
            for (key, value) in b {
                if !a.contains_key(key) {
                    let at = format!("{pointer}/{}", pointer_segment(key));
                    out.push(change(at, Change::Added, None, Some(value)));
                }
            }
            let same_members = a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v));
            if same_members && !a.keys().eq(b.keys()) {
                out.push(JsonChange {
                    pointer,
                    change: Change::Moved,
                    old: Some(Value::from(a.keys().cloned().collect::<Vec<_>>())),
                    new: Some(Value::from(b.keys().cloned().collect::<Vec<_>>())),
                });
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, pair) in a.iter().zip(b.iter()).enumerate() {
                json_changes(format!("{pointer}/{i}"), pair.0, pair.1, out);
            }
            for (i, value) in a.iter().enumerate().skip(b.len()) {
                out.push(change(
                    format!("{pointer}/{i}"),
                    Change::Removed,
                    Some(value),
                    None,
                ));
            }
            for (i, value) in b.iter().enumerate().skip(a.len()) {
                out.push(change(
                    format!("{pointer}/{i}"),
                    Change::Added,
                    None,
                    Some(value),
                ));
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(change(pointer, Change::Changed, Some(a), Some(b))),
    }
}

/// The most lines a text diff compares with a longest common subsequence; longer texts are
/// shown from their first differing line.
const LCS_CELLS: usize = 4_000_000;

/// A line diff: ` ` common, `-` only in the first, `+` only in the second; common runs longer
/// than six lines are folded to three on each side of a change.
fn line_diff(old: &str, new: &str) -> Vec<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let marked = if a.len().saturating_mul(b.len()) <= LCS_CELLS {
        lcs_marks(&a, &b)
    } else {
        let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let mut out: Vec<(char, &str)> = a[..common].iter().map(|l| (' ', *l)).collect();
        out.extend(a[common..].iter().map(|l| ('-', *l)));
        out.extend(b[common..].iter().map(|l| ('+', *l)));
        out
    };
    fold_context(&marked)
}

fn lcs_marks<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(char, &'a str)> {
    let (n, m) = (a.len(), b.len());
    let mut table = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[at(i, j)] = if a[i] == b[j] {
                table[at(i + 1, j + 1)] + 1
            } else {
                table[at(i + 1, j)].max(table[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n && j < m {
        if a[i] == b[j] {
            out.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if table[at(i + 1, j)] >= table[at(i, j + 1)] {
            out.push(('-', a[i]));
            i += 1;
        } else {
            out.push(('+', b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| ('-', *l)));
    out.extend(b[j..].iter().map(|l| ('+', *l)));
    out
}

fn fold_context(marked: &[(char, &str)]) -> Vec<String> {
    let changed: Vec<usize> = (0..marked.len()).filter(|&i| marked[i].0 != ' ').collect();
    let near = |i: usize| changed.iter().any(|&c| c.abs_diff(i) <= 3);
    let mut out = Vec::new();
    let mut folded = 0usize;
    for (i, (mark, line)) in marked.iter().enumerate() {
        if *mark == ' ' && !near(i) {
            folded += 1;
            continue;
        }
        if folded > 0 {
            out.push(format!("  … {folded} unchanged lines"));
            folded = 0;
        }
        out.push(format!("{mark} {line}"));
    }
    if folded > 0 {
        out.push(format!("  … {folded} unchanged lines"));
    }
    out
}

fn check_pairs(a: &Checks, b: &Checks) -> Vec<CheckPair> {
    vec![
        CheckPair {
            check: "signature",
            a: status_word(&a.signature.status),
            b: status_word(&b.signature.status),
        },
        CheckPair {
            check: "timestamp",
            a: status_word(&a.timestamp.status),
            b: status_word(&b.timestamp.status),
        },
        CheckPair {
            check: "duplicate",
            a: status_word(&a.duplicate.status),
            b: status_word(&b.duplicate.status),
        },
        CheckPair {
            check: "advice",
            a: a.advice.status.as_str().to_string(),
            b: b.advice.status.as_str().to_string(),
        },
    ]
}

/// The comparison for people: a line per difference, the expected headers folded into one.
pub fn human_lines(c: &Comparison) -> String {
    let mut out = vec![c.title.clone()];
    let shown = |v: &Option<String>| v.clone().unwrap_or_default();
    for h in c.headers.iter().filter(|h| !h.expected) {
        out.push(match h.change {
            Change::Removed => format!("- header {}: {}", h.name, shown(&h.old)),
            Change::Added => format!("+ header {}: {}", h.name, shown(&h.new)),
            Change::Changed => format!(
                "~ header {}: {} -> {}",
                h.name,
                shown(&h.old),
                shown(&h.new)
            ),
            Change::Moved => format!("^ header {}: the same value in another place", h.name),
        });
    }
    let expected: Vec<&str> = c
        .headers
        .iter()
        .filter(|h| h.expected)
        .map(|h| h.name.as_str())
        .collect();
    if !expected.is_empty() {
        out.push(format!(
            "  expected to differ between attempts: {}",
            expected.join(", ")
        ));
    }
    match &c.body {
        BodyDiff::Same => out.push("  body: the same bytes".into()),
        BodyDiff::Json { changes } => {
            for ch in changes {
                let value =
                    |v: &Option<Value>| v.as_ref().map(Value::to_string).unwrap_or_default();
                let at = if ch.pointer.is_empty() {
                    "(body)"
                } else {
                    &ch.pointer
                };
                out.push(match ch.change {
                    Change::Added => format!("+ {at}: {}", value(&ch.new)),
                    Change::Removed => format!("- {at}: {}", value(&ch.old)),
                    Change::Changed => {
                        format!("~ {at}: {} -> {}", value(&ch.old), value(&ch.new))
                    }
                    Change::Moved => format!("^ {at}: the same members in another order"),
                });
            }
        }
        BodyDiff::Text { lines } => out.extend(lines.iter().cloned()),
        BodyDiff::Binary {
            first_difference,
            sizes,
        } => out.push(format!(
            "  body: binary, {} B and {} B, first differing at byte {first_difference}",
            sizes[0], sizes[1]
        )),
    }
    if let Some(sentence) = &c.reserialised {
        out.push(format!("  {sentence}"));
    }
    let checks: Vec<String> = c
        .checks
        .iter()
        .map(|p| format!("{} {} | {}", p.check, p.a, p.b))
        .collect();
    if checks.is_empty() {
        out.push("  checks: the second was sent by hookscope, so it has none of its own".into());
    } else {
        out.push(format!("  checks: {}", checks.join("; ")));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(headers: &[(&str, &str)], body: &str) -> Delivery {
        crate::domain::delivery::test_request("POST", "", headers, body)
    }

    fn checks() -> Checks {
        serde_json::from_str(
            r#"{"signature":{"status":"pass","detail":"d"},"timestamp":{"status":"pass","skew_secs":0,"detail":"d"},"duplicate":{"status":"first","first_id":1,"detail":"d"}}"#,
        )
        .expect("checks")
    }

    fn compared(a: &Delivery, b: &Delivery) -> Comparison {
        let c = checks();
        compare(Side::delivery(1, a, &c), Side::delivery(2, b, &c))
    }

    #[test]
    fn each_header_change_is_named_in_the_json() {
        let a = delivery(&[("x-a", "1"), ("x-b", "2")], "{}");
        let b = delivery(&[("x-b", "3"), ("x-c", "4")], "{}");
        let changes: Vec<(String, serde_json::Value)> = header_changes(&a, &b)
            .into_iter()
            .map(|h| {
                let json = serde_json::to_value(&h).expect("json");
                (h.name, json["change"].clone())
            })
            .collect();
        assert_eq!(
            changes,
            [
                ("x-a".to_string(), serde_json::json!("removed")),
                ("x-b".to_string(), serde_json::json!("changed")),
                ("x-c".to_string(), serde_json::json!("added")),
            ]
        );
    }

    #[test]
    fn a_header_moved_among_the_others_is_named_moved_and_only_it() {
        // x-c moved to the front; x-a, x-b and x-d kept their order; x-d's value changed too.
        let a = delivery(
            &[("x-a", "1"), ("x-b", "2"), ("x-c", "3"), ("x-d", "4")],
            "{}",
        );
        let b = delivery(
            &[("x-c", "3"), ("x-a", "1"), ("x-b", "2"), ("x-d", "5")],
            "{}",
        );
        let c = compared(&a, &b);
        let changes: Vec<(&str, Change)> = c
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.change))
            .collect();
        assert_eq!(changes, [("x-d", Change::Changed), ("x-c", Change::Moved)]);
        let moved = &c.headers[1];
        assert_eq!(
            (moved.old.as_deref(), moved.new.as_deref()),
            (Some("3"), Some("3"))
        );
        assert!(c.differs);
        assert!(
            human_lines(&c).contains("^ header x-c: the same value in another place"),
            "{}",
            human_lines(&c)
        );
        // The same headers in the same order: nothing moved.
        assert!(compared(&a, &a).headers.is_empty());
    }

    #[test]
    fn json_bodies_are_compared_by_pointer_and_expected_headers_fold() {
        let a = delivery(
            &[("webhook-signature", "v1,a"), ("x-tenant", "t1")],
            r#"{"type":"job.queued","data":{"status":"queued","pages":[1,2],"old":true}}"#,
        );
        let b = delivery(
            &[("webhook-signature", "v1,b"), ("x-tenant", "t2")],
            r#"{"type":"job.queued","data":{"status":"completed","pages":[1,2,3],"priority":2}}"#,
        );
        let c = compared(&a, &b);
        let BodyDiff::Json { changes } = &c.body else {
            panic!("{:?}", c.body)
        };
        let seen: Vec<(&str, Change)> = changes
            .iter()
            .map(|ch| (ch.pointer.as_str(), ch.change))
            .collect();
        assert_eq!(
            seen,
            [
                ("/data/status", Change::Changed),
                ("/data/pages/2", Change::Added),
                ("/data/old", Change::Removed),
                ("/data/priority", Change::Added),
            ]
        );
        assert!(c.differs);
        let tenant = c
            .headers
            .iter()
            .find(|h| h.name == "x-tenant")
            .expect("x-tenant");
        assert!(!tenant.expected);
        let signature = c
            .headers
            .iter()
            .find(|h| h.name == "webhook-signature")
            .expect("signature");
        assert!(signature.expected);
        let text = human_lines(&c);
        assert!(
            text.contains("~ /data/status: \"queued\" -> \"completed\""),
            "{text}"
        );
        assert!(
            text.contains("expected to differ between attempts: webhook-signature"),
            "{text}"
        );
    }

    #[test]
    fn a_re_serialisation_is_said_and_order_alone_is_a_move() {
        let a = delivery(&[], r#"{"id":"evt_1","amount":12}"#);
        let b = delivery(&[], "{\n  \"amount\": 12,\n  \"id\": \"evt_1\"\n}");
        let c = compared(&a, &b);
        assert!(c.reserialised.is_some());
        assert_eq!(
            c.body,
            BodyDiff::Json {
                changes: vec![JsonChange {
                    pointer: String::new(),
                    change: Change::Moved,
                    old: Some(serde_json::json!(["id", "amount"])),
                    new: Some(serde_json::json!(["amount", "id"])),
                }]
            }
        );
        // Only the spacing: the same value and the same order, other bytes.
        let spaced = delivery(&[], r#"{ "id": "evt_1", "amount": 12 }"#);
        let c = compared(&a, &spaced);
        assert_eq!(c.body, BodyDiff::Json { changes: vec![] });
        assert!(c.reserialised.is_some() && c.differs);
        assert!(!compared(&a, &a).differs);
    }

    #[test]
    fn text_is_compared_line_by_line_and_binary_by_its_first_differing_byte() {
        let a = delivery(&[], "a\nb\nc\nd\ne\nf\ng\nh\ni\n");
        let b = delivery(&[], "a\nb\nc\nd\nE\nf\ng\nh\ni\n");
        let BodyDiff::Text { lines } = compared(&a, &b).body else {
            panic!("text")
        };
        assert!(lines.contains(&"- e".to_string()) && lines.contains(&"+ E".to_string()));
        assert!(
            lines.iter().any(|l| l.contains("unchanged lines")),
            "{lines:?}"
        );
        let mut x = delivery(&[], "");
        let mut y = delivery(&[], "");
        x.body = vec![0, 159, 146, 150];
        y.body = vec![0, 159, 146, 151, 1];
        assert_eq!(
            compared(&x, &y).body,
            BodyDiff::Binary {
                first_difference: 3,
                sizes: [4, 5]
            }
        );
    }
}
