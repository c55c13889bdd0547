//! A delivery's JSON body as its checks read it: a tree that borrows its strings from the body.
//!
//! The checks run on the receiver's path for every delivery, and read a body once: about ten
//! JSON pointers (the event id and type, the job's id, state and time) and one walk for the
//! payload advice. `serde_json::Value` (with `preserve_order`) copies every key and string and
//! hashes every key into an index map: about half of the checks' time on a 1 KiB body of 48
//! keys, and little on one of a few keys (`cargo bench --bench checks`). [`Json`] keeps keys and strings as slices of the
//! body when they hold no escape, and an object as its entries in order.
//!
//! It reads what `serde_json::Value` reads, the same way: the same parser and nesting limit,
//! numbers as `serde_json::Number`, and a key given twice keeps its first place with its last
//! value (as `preserve_order`'s map does). [`Json::to_value`] rebuilds the `Value`; the tests
//! check that the two agree on any input.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// One JSON value, borrowing from the text it was parsed from.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as `serde_json` keeps it.
    Number(serde_json::Number),
    /// A string: borrowed unless it held an escape.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object's entries in the order their keys first appeared, each key once.
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

/// Objects with more entries than this find a repeated key through a hash map instead of a scan.
const SCAN_LIMIT: usize = 16;

impl<'a> Json<'a> {
    /// Parses `text` as one JSON document (whitespace around it allowed), as
    /// `serde_json::from_slice::<Value>` would; `None` when it is not JSON.
    pub fn parse(text: &'a [u8]) -> Option<Json<'a>> {
        serde_json::from_slice(text).ok()
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// A non-empty string, or a number written as JSON writes it: the text of an id or a state.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Json::String(s) if !s.is_empty() => Some(s.to_string()),
            Json::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    /// The items, when this is an array.
    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(list) => Some(list),
            _ => None,
        }
    }

    /// The value, when this is `true` or `false`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The value an object holds under `key`: a scan of its entries (the checks look up about
    /// ten keys per body; a map per object is what made `Value` slow to build).
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value a JSON pointer (RFC 6901) names, as `serde_json::Value::pointer` finds it. A
    /// token is unescaped (`~1` → `/`, `~0` → `~`) only when it holds a `~`.
    pub fn pointer(&self, pointer: &str) -> Option<&Json<'a>> {
        if pointer.is_empty() {
            return Some(self);
        }
        let tokens = pointer.strip_prefix('/')?;
        tokens.split('/').try_fold(self, |target, token| {
            let token = if token.contains('~') {
                Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
            } else {
                Cow::Borrowed(token)
            };
            match target {
                Json::Object(_) => target.get(&token),
                Json::Array(list) => {
                    // As serde_json: no sign, no leading zero.
                    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
                        return None;
                    }
                    token.parse::<usize>().ok().and_then(|i| list.get(i))
                }
                _ => None,
            }
        })
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(list) => Value::Array(list.iter().map(Json::to_value).collect()),
            Json::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        // As serde_json's Value: a float JSON cannot hold (it never parses one) becomes null.
        Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Json::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Json::String(Cow::Owned(v)))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Json::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element()? {
            list.push(item);
        }
        Ok(Json::Array(list))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        // Built once an object outgrows a scan: where each key is in `entries`.
        let mut index: Option<std::collections::HashMap<Cow<'de, str>, usize>> = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let value: Json<'de> = map.next_value()?;
            let at = match &index {
                Some(index) => index.get(key.as_ref()).copied(),
                None => entries.iter().position(|(k, _)| *k == key),
            };
            if let Some(at) = at {
                // A repeated key keeps its first place and takes the last value.
                entries[at].1 = value;
                continue;
            }
            if let Some(index) = &mut index {
                index.insert(key.clone(), entries.len());
            } else if entries.len() == SCAN_LIMIT {
                let mut built: std::collections::HashMap<Cow<'de, str>, usize> = entries
                    .iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.clone(), i))
                    .collect();
                built.insert(key.clone(), entries.len());
                index = Some(built);
            }
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

/// An object's key, borrowed from the text unless it held an escape.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What `serde_json::Value` makes of `text`, written out in its own order.
    fn by_value(text: &[u8]) -> Option<String> {
        serde_json::from_slice::<serde_json::Value>(text)
            .ok()
            .map(|v| v.to_string())
    }

    fn by_json(text: &[u8]) -> Option<String> {
        Json::parse(text).map(|j| j.to_value().to_string())
    }

    #[test]
    fn strings_and_keys_without_escapes_borrow_from_the_body() {
        let text = br#"{"plain":"text","esc\u0061ped":"a\nb"}"#;
        let Some(Json::Object(entries)) = Json::parse(text) else {
            panic!("an object")
        };
        assert!(matches!(entries[0].0, Cow::Borrowed("plain")));
        assert!(matches!(entries[0].1, Json::String(Cow::Borrowed("text"))));
        assert!(matches!(&entries[1].0, Cow::Owned(k) if k == "escaped"));
        assert!(matches!(&entries[1].1, Json::String(Cow::Owned(s)) if s == "a\nb"));
    }

    #[test]
    fn a_repeated_key_keeps_its_first_place_and_its_last_value_as_value_does() {
        let small = br#"{"a":1,"b":2,"a":3}"#;
        assert_eq!(by_json(small).as_deref(), Some(r#"{"a":3,"b":2}"#));
        assert_eq!(by_json(small), by_value(small));
        // Past the scan limit the hash map finds the repeat.
        let mut big = String::from("{");
        for i in 0..40 {
            big.push_str(&format!(r#""k{i}":{i},"#));
        }
        // k3 was in the object before the map was built, k30 after.
        big.push_str(r#""k3":"last","k30":true,"k7":null}"#);
        assert_eq!(by_json(big.as_bytes()), by_value(big.as_bytes()));
        let parsed = Json::parse(big.as_bytes()).expect("parses");
        assert_eq!(parsed.get("k3"), Some(&Json::String(Cow::Borrowed("last"))));
        assert_eq!(parsed.get("k30"), Some(&Json::Bool(true)));
        let Json::Object(entries) = &parsed else {
            panic!("an object")
        };
        assert_eq!(entries.len(), 40);
        assert_eq!(entries[3].0, "k3");
    }

    #[test]
    fn numbers_pointers_and_refusals_match_serde_json() {
        let text = br#" {"n":[0,-1,18446744073709551615,18446744073709551616,1.5e3,-0.0],"a/b":{"~":"t"}} "#;
        assert_eq!(by_json(text), by_value(text));
        let json = Json::parse(text).expect("parses");
        let value: serde_json::Value = serde_json::from_slice(text).expect("parses");
        for p in [
            "", "/n", "/n/0", "/n/2", "/n/3", "/n/01", "/n/+1", "/n/9", "/a~1b/~0", "/a~1b", "/x",
            "n", "/n/",
        ] {
            assert_eq!(
                json.pointer(p).map(Json::to_value).as_ref(),
                value.pointer(p),
                "{p}"
            );
        }
        for bad in [
            &b""[..],
            b"{",
            b"[1,]",
            b"{\"a\" 1}",
            b"1 2",
            b"\"\\ud800\"",
            b"nul",
        ] {
            assert_eq!(Json::parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
            assert!(by_value(bad).is_none());
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(by_json(deep.as_bytes()), by_value(deep.as_bytes()));
    }

    /// The lookup finds what serde_json's own does, for every kind of pointer:
    /// the whole document, objects, arrays (no sign, no leading zero), escapes, empty keys,
    /// misses and pointers that do not start with `/`.
    #[test]
    fn pointer_finds_what_serde_json_finds() {
        let text = br#"{"id":"evt_1","data":{"job_id":"job_7","items":[10,{"x":"y"},30],"a/b":1,"m~n":2,"":3,
                "~1":4,"0":"zero"},"list":[[1,2],[3]],"n":5}"#;
        let json = Json::parse(text).expect("json");
        let value: serde_json::Value = serde_json::from_slice(text).expect("json");
        for p in [
            "",
            "/",
            "/id",
            "/data",
            "/data/job_id",
            "/data/items",
            "/data/items/0",
            "/data/items/1/x",
            "/data/items/2",
            "/data/items/3",
            "/data/items/01",
            "/data/items/+1",
            "/data/items/-1",
            "/data/items/x",
            "/data/a~1b",
            "/data/m~0n",
            "/data/",
            "/data/~01",
            "/data/0",
            "/list/0/1",
            "/list/1/0",
            "/list/1/1",
            "/n/0",
            "/missing",
            "/data/missing/x",
            "id",
            "data/job_id",
            "/id/x",
            "/data/a/b",
            "/data/m~n",
            "/data/~2",
        ] {
            assert_eq!(
                json.pointer(p).map(Json::to_value).as_ref(),
                value.pointer(p),
                "pointer {p:?}"
            );
        }
    }

    /// JSON-shaped text: objects with few, often repeated keys (some escaped), nesting, numbers
    /// of every kind, strings with escapes.
    fn json_text() -> impl Strategy<Value = String> {
        let key = prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("a\\u0062".to_string()),
            Just("~/".to_string()),
            "[a-z]{1,3}",
        ];
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| format!("{f:e}")),
            Just("123456789012345678901234567890".to_string()),
            "[a-z\\\\\"]{0,6}"
                .prop_map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))),
            Just("\"\\u00e9\\n\"".to_string()),
        ];
        leaf.prop_recursive(4, 48, 8, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6)
                    .prop_map(|items| format!("[{}]", items.join(","))),
                prop::collection::vec((key.clone(), inner), 0..24).prop_map(|entries| {
                    let body: Vec<String> = entries
                        .iter()
                        .map(|(k, v)| format!("\"{k}\":{v}"))
                        .collect();
                    format!("{{{}}}", body.join(","))
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn json_reads_what_value_reads(text in json_text()) {
            prop_assert_eq!(by_json(text.as_bytes()), by_value(text.as_bytes()));
        }

        #[test]
        fn any_bytes_are_refused_or_read_as_value_reads_them(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(by_json(&bytes), by_value(&bytes));
        }

        #[test]
        fn pointers_find_what_value_finds(text in json_text(), path in prop::collection::vec(prop_oneof![Just("a"), Just("b"), Just("ab"), Just("~0~1"), Just("0"), Just("1"), Just("01")], 0..4)) {
            let pointer: String = path.iter().map(|t| format!("/{t}")).collect();
            let json = Json::parse(text.as_bytes()).expect("generated JSON parses");
            let value: serde_json::Value = serde_json::from_str(&text).expect("generated JSON parses");
            prop_assert_eq!(json.pointer(&pointer).map(Json::to_value), value.pointer(&pointer).cloned());
        }
    }
}
