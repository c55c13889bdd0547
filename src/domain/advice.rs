//! Payload advice: a fourth check that is never a failure. It says when a body is heavier than
//! the thin-payload guideline, and when fields look like personal or health data that a
//! webhook (retried, logged, forwarded) should not carry: by their name, at any depth (inside a
//! field already named like such data too), and by their value (a US SSN, a card number that
//! passes Luhn, an e-mail address, an E.164 phone number, an IBAN whose checksum holds). Values
//! are never repeated whole: only JSON pointers, what they look like, and a masked form
//! (`***-**-6789`).

use serde::{Deserialize, Serialize};

use crate::domain::delivery::Delivery;
use crate::domain::fmt::{exact_size, human_bytes};
use crate::domain::json::Json;
use crate::domain::pretty::pointer_segment;

/// The Standard Webhooks guideline for a thin payload.
pub const DEFAULT_MAX_BODY_BYTES: usize = 20 * 1024;

/// How many items one delivery's advice lists at most.
const MAX_ITEMS: usize = 25;

/// What an endpoint asks of the advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// `advice = false` turns it off for the endpoint.
    pub enabled: bool,
    /// A body over this many bytes gets the size advice.
    pub max_body_bytes: usize,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            enabled: true,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// Whether there is advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum AdviceStatus {
    /// Nothing to say (or advice is off).
    #[default]
    #[serde(rename = "none")]
    Clear,
    /// At least one item.
    #[serde(rename = "advice")]
    Advice,
}

impl AdviceStatus {
    /// The word the JSON uses.
    pub fn as_str(self) -> &'static str {
        match self {
            AdviceStatus::Clear => "none",
            AdviceStatus::Advice => "advice",
        }
    }
}

/// What an item is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdviceKind {
    /// The body is over the size guideline.
    Size,
    /// A field name that usually holds personal or health data.
    SensitiveField,
    /// A value that looks like an e-mail address.
    Email,
    /// A value that looks like a payment card number (passes the Luhn check).
    CardNumber,
    /// A value that looks like a US social security number.
    Ssn,
    /// A value that looks like a phone number in E.164 form (`+` and 8 to 15 digits).
    Phone,
    /// A value that looks like an IBAN whose ISO 7064 checksum holds.
    Iban,
}

/// One piece of advice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdviceItem {
    /// What it is about.
    pub kind: AdviceKind,
    /// Where in the JSON body, as a JSON pointer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// One sentence.
    pub detail: String,
}

/// The advice check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdviceCheck {
    /// `none` or `advice`.
    pub status: AdviceStatus,
    /// The items, in body order (size first).
    #[serde(default)]
    pub items: Vec<AdviceItem>,
    /// One sentence summing it up.
    #[serde(default)]
    pub detail: String,
}

impl Default for AdviceCheck {
    fn default() -> Self {
        Self {
            status: AdviceStatus::Clear,
            items: Vec::new(),
            detail: "Not checked (captured before payload advice existed).".into(),
        }
    }
}

/// Field names (lower case, `-` and `_` and spaces removed) that usually hold personal or
/// health data.
const SENSITIVE_NAMES: &[(&str, &str)] = &[
    ("ssn", "a social security number"),
    ("socialsecuritynumber", "a social security number"),
    ("dob", "a date of birth"),
    ("dateofbirth", "a date of birth"),
    ("birthdate", "a date of birth"),
    ("birthday", "a date of birth"),
    ("diagnosis", "a medical diagnosis"),
    ("diagnoses", "medical diagnoses"),
    ("icd10", "a diagnosis code"),
    ("medication", "medication"),
    ("medications", "medication"),
    ("memberid", "a health-plan member id"),
    ("patient", "patient data"),
    ("patientid", "a patient id"),
    ("patientname", "a patient's name"),
    ("mrn", "a medical record number"),
    ("medicalrecordnumber", "a medical record number"),
    ("passport", "a passport number"),
    ("passportnumber", "a passport number"),
    ("driverslicense", "a driver's licence number"),
    ("taxid", "a tax id"),
    ("cardnumber", "a payment card number"),
    ("cvv", "a card security code"),
];

/// The advice for one delivery under an endpoint's rules; `json` is its body parsed (once, by
/// the caller, who parses it for the other checks too).
pub fn advise(delivery: &Delivery, json: Option<&Json<'_>>, rules: &Rules) -> AdviceCheck {
    if !rules.enabled {
        return AdviceCheck {
            status: AdviceStatus::Clear,
            items: Vec::new(),
            detail: "Payload advice is off for this endpoint (advice = false).".into(),
        };
    }
    let mut items = Vec::new();
    let size = usize::try_from(delivery.body_size).unwrap_or(usize::MAX);
    if size > rules.max_body_bytes {
        items.push(AdviceItem {
            kind: AdviceKind::Size,
            pointer: None,
            detail: format!(
                "The body is {}, over the {} guideline: the Standard Webhooks spec recommends thin payloads (ids, type, status and a result_url the receiver fetches), since a full payload is re-sent whole on every retry and copied into every log.",
                human_bytes(size as u64),
                exact_size(rules.max_body_bytes)
            ),
        });
    }
    if let Some(json) = json {
        walk(json, &mut String::new(), &mut items);
    }
    let total = items.len();
    items.truncate(MAX_ITEMS);
    let detail = match total {
        0 => format!(
            "No advice: the body is {}, within the {} thin-payload guideline, and no field looks like personal or health data.",
            human_bytes(size as u64),
            exact_size(rules.max_body_bytes)
        ),
        n => {
            // A field flagged by its name and by its value is one field.
            let mut pointers: Vec<&str> = Vec::new();
            for pointer in items.iter().filter_map(|i| i.pointer.as_deref()) {
                if !pointers.contains(&pointer) {
                    pointers.push(pointer);
                }
            }
            let fields = pointers.len();
            let mut parts = Vec::new();
            if items.iter().any(|i| i.kind == AdviceKind::Size) {
                parts.push("the body is heavier than a thin payload".to_string());
            }
            if fields > 0 {
                let listed: Vec<&str> = pointers.into_iter().take(4).collect();
                let more = if fields > 4 { ", …" } else { "" };
                parts.push(format!(
                    "{} look{} like personal or health data ({}{more}); keep payloads thin and minimum-necessary, and let the receiver fetch details with its own credentials",
                    if fields == 1 { "1 field" } else { "some fields" },
                    if fields == 1 { "s" } else { "" },
                    listed.join(", ")
                ));
            }
            let shown = if n > MAX_ITEMS {
                format!(" ({n} items, the first {MAX_ITEMS} listed)")
            } else {
                String::new()
            };
            format!("Advice{shown}: {}.", parts.join("; "))
        }
    };
    AdviceCheck {
        status: if total == 0 {
            AdviceStatus::Clear
        } else {
            AdviceStatus::Advice
        },
        items,
        detail,
    }
}

fn walk(value: &Json<'_>, pointer: &mut String, items: &mut Vec<AdviceItem>) {
    match value {
        Json::Object(entries) => {
            for (key, child) in entries {
                let len = pointer.len();
                pointer.push('/');
                if key.contains(['~', '/']) {
                    pointer.push_str(&pointer_segment(key));
                } else {
                    pointer.push_str(key);
                }
                if let Some(what) = sensitive_name(key)
                    && !child.is_null()
                {
                    items.push(AdviceItem {
                        kind: AdviceKind::SensitiveField,
                        pointer: Some(pointer.clone()),
                        detail: format!(
                            "`{pointer}` is named like {what}; a webhook that carries it spreads it to every retry, log and proxy on the way."
                        ),
                    });
                }
                // Inside too: `{"patient": {"ssn": "…"}}` is `/patient` and `/patient/ssn`.
                walk(child, pointer, items);
                pointer.truncate(len);
            }
        }
        Json::Array(list) => {
            for (index, child) in list.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&index.to_string());
                walk(child, pointer, items);
                pointer.truncate(len);
            }
        }
        Json::String(text) => {
            if let Some((kind, what)) = value_kind(text) {
                items.push(AdviceItem {
                    kind,
                    pointer: Some(pointer.clone()),
                    detail: format!(
                        "The value at `{pointer}` looks like {what} ({}).",
                        masked(kind, text.trim())
                    ),
                });
            }
        }
        _ => {}
    }
}

/// What a string value looks like, when it is personal data by its shape.
fn value_kind(text: &str) -> Option<(AdviceKind, &'static str)> {
    if looks_like_email(text) {
        Some((AdviceKind::Email, "an e-mail address"))
    } else if looks_like_card(text) {
        Some((
            AdviceKind::CardNumber,
            "a payment card number (it passes the Luhn check)",
        ))
    } else if looks_like_ssn(text) {
        Some((AdviceKind::Ssn, "a US social security number"))
    } else if looks_like_phone(text) {
        Some((AdviceKind::Phone, "a phone number (E.164)"))
    } else if looks_like_iban(text) {
        Some((AdviceKind::Iban, "an IBAN (its checksum holds)"))
    } else {
        None
    }
}

/// A value as the advice may show it: an e-mail address keeps its first letter and its domain
/// (`a***@example.org`); anything else keeps its last four letters or digits and its separators
/// (`***-**-6789`, `**** **** **** 4242`, `+*******0123`).
fn masked(kind: AdviceKind, text: &str) -> String {
    if kind == AdviceKind::Email
        && let Some((local, domain)) = text.split_once('@')
    {
        let first: String = local.chars().take(1).collect();
        let hidden = "*".repeat(local.chars().count().saturating_sub(1).max(3));
        return format!("{first}{hidden}@{domain}");
    }
    let shown_from = text
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .count()
        .saturating_sub(4);
    let mut seen = 0;
    text.chars()
        .map(|c| {
            if !c.is_ascii_alphanumeric() {
                return c;
            }
            seen += 1;
            if seen > shown_from { c } else { '*' }
        })
        .collect()
}

/// What a field name usually holds, when it is one of [`SENSITIVE_NAMES`]: compared in lower
/// case with `_`, `-`, `.` and spaces left out, without allocating (this runs on every key).
fn sensitive_name(key: &str) -> Option<&'static str> {
    let mut buf = [0u8; 24];
    let mut len = 0;
    for b in key.bytes() {
        if matches!(b, b'_' | b'-' | b' ' | b'.') {
            continue;
        }
        if len == buf.len() || !b.is_ascii() {
            return None; // longer than any name in the table, or not ASCII
        }
        buf[len] = b.to_ascii_lowercase();
        len += 1;
    }
    let name = &buf[..len];
    SENSITIVE_NAMES
        .iter()
        .find(|(n, _)| n.as_bytes() == name)
        .map(|(_, what)| *what)
}

/// `local@domain.tld`, with no spaces, as a whole value.
fn looks_like_email(text: &str) -> bool {
    let text = text.trim();
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    let Some((host, tld)) = domain.rsplit_once('.') else {
        return false;
    };
    !local.is_empty()
        && !host.is_empty()
        && tld.len() >= 2
        && tld.chars().all(|c| c.is_ascii_alphabetic())
        && !text.contains(char::is_whitespace)
        && !domain.contains('@')
}

/// 13 to 19 digits (spaces and dashes allowed) with a card network's prefix, passing Luhn.
fn looks_like_card(text: &str) -> bool {
    if !(13..=23).contains(&text.len())
        || !text
            .chars()
            .all(|c| c.is_ascii_digit() || c == ' ' || c == '-')
    {
        return false;
    }
    let digits: Vec<u32> = text.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let prefix = |n: usize| digits[..n].iter().fold(0, |acc, d| acc * 10 + d);
    let network = digits[0] == 4
        || (51..=55).contains(&prefix(2))
        || (2221..=2720).contains(&prefix(4))
        || matches!(prefix(2), 34 | 37 | 35 | 36 | 38 | 30 | 65)
        || prefix(4) == 6011;
    network && luhn(&digits)
}

/// The Luhn checksum (ISO/IEC 7812-1).
fn luhn(digits: &[u32]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// `123-45-6789`.
fn looks_like_ssn(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 11
        && b.iter().enumerate().all(|(i, c)| {
            if i == 3 || i == 6 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
        && &b[..3] != b"000"
        && &b[4..6] != b"00"
}

/// E.164: `+`, a country code that does not start with 0, 8 to 15 digits in all; spaces
/// between groups allowed.
fn looks_like_phone(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('+') else {
        return false;
    };
    if !rest.chars().all(|c| c.is_ascii_digit() || c == ' ') || rest.starts_with(['0', ' ']) {
        return false;
    }
    let digits = rest.chars().filter(char::is_ascii_digit).count();
    (8..=15).contains(&digits)
}

/// An IBAN (ISO 13616): a country's two letters, two check digits and up to 30 letters or
/// digits (spaces between groups of four allowed), whose ISO 7064 mod-97 checksum is 1.
fn looks_like_iban(text: &str) -> bool {
    let compact: Vec<u8> = text.bytes().filter(|b| *b != b' ').collect();
    if !(15..=34).contains(&compact.len())
        || !compact[..2].iter().all(u8::is_ascii_uppercase)
        || !compact[2..4].iter().all(u8::is_ascii_digit)
        || !compact[4..]
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        return false;
    }
    // The first four characters move to the end; letters count as 10 to 35.
    let mut remainder: u32 = 0;
    for b in compact[4..].iter().chain(&compact[..4]) {
        let value = if b.is_ascii_digit() {
            u32::from(b - b'0')
        } else {
            u32::from(b - b'A') + 10
        };
        remainder = if value >= 10 {
            (remainder * 100 + value) % 97
        } else {
            (remainder * 10 + value) % 97
        };
    }
    remainder == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advise_body(delivery: &Delivery, rules: &Rules) -> AdviceCheck {
        advise(delivery, delivery.body_json().as_ref(), rules)
    }

    fn delivery(body: &str) -> Delivery {
        Delivery {
            received_at_ms: 0,
            method: "POST".into(),
            path: "/".into(),
            query: String::new(),
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
            body_size: body.len() as u64,
            body_complete: true,
            remote_addr: None,
        }
    }

    #[test]
    fn luhn_accepts_published_test_cards_and_refuses_near_misses() {
        // The test numbers the card networks publish for sandboxes.
        for card in ["4242424242424242", "5555 5555 5555 4444", "378282246310005"] {
            assert!(looks_like_card(card), "{card}");
        }
        for not in [
            "4242424242424241",
            "1700000000000",
            "12345678901234",
            "4242-4242-4242-424x",
        ] {
            assert!(!looks_like_card(not), "{not}");
        }
    }

    #[test]
    fn fields_and_values_are_named_by_pointer_and_never_quoted() {
        let advice = advise_body(
            &delivery(
                r#"{"job_id":"j1","patient":{"name":"Ann"},"data":{"Date_Of_Birth":"1990-01-01","contact":["x","ann@example.org"],"card":"4242 4242 4242 4242","ref":"078-05-1120","a/b":{"ssn":null}}}"#,
            ),
            &Rules::default(),
        );
        assert_eq!(advice.status, AdviceStatus::Advice);
        let found: Vec<(AdviceKind, &str)> = advice
            .items
            .iter()
            .map(|i| (i.kind, i.pointer.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            found,
            [
                (AdviceKind::SensitiveField, "/patient"),
                (AdviceKind::SensitiveField, "/data/Date_Of_Birth"),
                (AdviceKind::Email, "/data/contact/1"),
                (AdviceKind::CardNumber, "/data/card"),
                (AdviceKind::Ssn, "/data/ref"),
            ]
        );
        let text = serde_json::to_string(&advice).expect("json");
        for value in [
            "Ann",
            "1990-01-01",
            "ann@example.org",
            "4242 4242 4242 4242",
            "078-05-1120",
        ] {
            assert!(!text.contains(value), "{value} leaked into {text}");
        }
        // A value's sentence shows it masked, enough to recognise, never whole.
        for shown in ["a***@example.org", "**** **** **** 4242", "***-**-1120"] {
            assert!(text.contains(shown), "{shown} missing from {text}");
        }
    }

    /// Advice looks inside a field already named like sensitive data, and flags a
    /// field by its name and by its value, each item with its pointer and the kind of data.
    #[test]
    fn nested_fields_are_flagged_by_name_and_by_value_with_the_value_masked() {
        let advice = advise_body(
            &delivery(
                r#"{"patient":{"ssn":"123-45-6789","contact":{"phone":"+14155550123","iban":"GB82 WEST 1234 5698 7654 32"}}}"#,
            ),
            &Rules::default(),
        );
        let found: Vec<(AdviceKind, &str)> = advice
            .items
            .iter()
            .map(|i| (i.kind, i.pointer.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            found,
            [
                (AdviceKind::SensitiveField, "/patient"),
                (AdviceKind::SensitiveField, "/patient/ssn"),
                (AdviceKind::Ssn, "/patient/ssn"),
                (AdviceKind::Phone, "/patient/contact/phone"),
                (AdviceKind::Iban, "/patient/contact/iban"),
            ]
        );
        let ssn = &advice.items[2].detail;
        assert!(ssn.contains("***-**-6789"), "{ssn}");
        let text = serde_json::to_string(&advice).expect("json");
        for whole in ["123-45-6789", "+14155550123", "GB82 WEST 1234 5698 7654 32"] {
            assert!(!text.contains(whole), "{whole} leaked into {text}");
        }
        assert!(text.contains("+*******0123"), "{text}");
        assert!(text.contains("**** **** **** **** **54 32"), "{text}");
        // Four fields, not five: /patient/ssn is one field flagged twice.
        assert!(advice.detail.contains("some fields"), "{}", advice.detail);
        assert!(
            advice.detail.contains(
                "(/patient, /patient/ssn, /patient/contact/phone, /patient/contact/iban)"
            ),
            "{}",
            advice.detail
        );
    }

    #[test]
    fn phone_numbers_and_ibans_are_told_from_near_misses() {
        // IBANs from the ISO 13616 registry's examples; then a changed check digit.
        for iban in [
            "GB82WEST12345698765432",
            "DE89 3704 0044 0532 0130 00",
            "FR1420041010050500013M02606",
        ] {
            assert!(looks_like_iban(iban), "{iban}");
        }
        for not in [
            "GB82WEST12345698765433",
            "gb82west12345698765432",
            "GB8XWEST12345698765432",
            "GB82",
        ] {
            assert!(!looks_like_iban(not), "{not}");
        }
        for phone in ["+14155550123", "+44 20 7946 0958", "+4915123456789"] {
            assert!(looks_like_phone(phone), "{phone}");
        }
        for not in [
            "14155550123",
            "+0123456789",
            "+1234567",
            "+1234567890123456",
            "+1-415-555-0123",
        ] {
            assert!(!looks_like_phone(not), "{not}");
        }
    }

    #[test]
    fn size_is_judged_against_the_configured_threshold_and_off_means_off() {
        let body = format!(r#"{{"pad":"{}"}}"#, "x".repeat(30_000));
        let advice = advise_body(&delivery(&body), &Rules::default());
        assert_eq!(advice.items[0].kind, AdviceKind::Size);
        assert!(advice.items[0].detail.contains("20 KiB"), "{advice:?}");
        let raised = Rules {
            max_body_bytes: 64 * 1024,
            ..Rules::default()
        };
        assert_eq!(
            advise_body(&delivery(&body), &raised).status,
            AdviceStatus::Clear
        );
        let off = Rules {
            enabled: false,
            ..Rules::default()
        };
        let quiet = advise_body(&delivery(r#"{"ssn":"078-05-1120"}"#), &off);
        assert_eq!(quiet.status, AdviceStatus::Clear);
        assert!(quiet.items.is_empty());
        assert_eq!(
            serde_json::to_value(&quiet).expect("json")["status"],
            "none"
        );
    }
}
