//! Body views that do not depend on a UI toolkit: JSON re-indented without re-serialising, and
//! a hex dump for bytes that are not text.
//!
//! The pretty view only changes whitespace outside strings: key order, number spelling and
//! escapes stay exactly as sent, so what you read is what was signed, re-spaced.

/// What a span of pretty-printed JSON is, for colouring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// An object key (with its quotes).
    Key,
    /// A string value (with its quotes).
    String,
    /// A number.
    Number,
    /// `true`, `false` or `null`.
    Literal,
    /// Braces, brackets, commas and colons.
    Punct,
}

/// Re-indented JSON and the coloured spans in it (byte ranges into `text`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pretty {
    /// The re-indented text.
    pub text: String,
    /// `(start, end, token)` byte ranges, in order, covering every non-whitespace character.
    pub spans: Vec<(usize, usize, Token)>,
}

/// Re-indents `raw` when it is a JSON object or array; `None` when it is not valid JSON.
pub fn pretty_json(raw: &str) -> Option<Pretty> {
    let first = raw.trim_start().chars().next()?;
    if !matches!(first, '{' | '[') || serde_json::from_str::<serde::de::IgnoredAny>(raw).is_err() {
        return None;
    }
    let mut out = Pretty {
        text: String::with_capacity(raw.len() + raw.len() / 4),
        spans: Vec::new(),
    };
    let mut depth = 0usize;
    let mut chars = raw.char_indices().peekable();
    // Whether the next string is an object key: after `{` or after `,` inside an object.
    let mut stack: Vec<char> = Vec::new();
    let mut expect_key = false;
    let newline = |out: &mut Pretty, depth: usize| {
        out.text.push('\n');
        for _ in 0..depth {
            out.text.push_str("  ");
        }
    };
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '"' => {
                let mut end = i + 1;
                let mut escaped = false;
                for (j, d) in chars.by_ref() {
                    end = j + d.len_utf8();
                    if escaped {
                        escaped = false;
                    } else if d == '\\' {
                        escaped = true;
                    } else if d == '"' {
                        break;
                    }
                }
                let start = out.text.len();
                out.text.push_str(&raw[i..end]);
                let kind = if expect_key {
                    Token::Key
                } else {
                    Token::String
                };
                out.spans.push((start, out.text.len(), kind));
                expect_key = false;
            }
            '{' | '[' => {
                push_punct(&mut out, c);
                stack.push(c);
                // An empty container stays on one line.
                let close = if c == '{' { '}' } else { ']' };
                let next_solid = raw[i + 1..].trim_start().chars().next();
                if next_solid == Some(close) {
                    continue;
                }
                depth += 1;
                expect_key = c == '{';
                newline(&mut out, depth);
            }
            '}' | ']' => {
                stack.pop();
                let prev_solid = out.text.trim_end().chars().last();
                if !matches!(prev_solid, Some('{') | Some('[')) {
                    depth = depth.saturating_sub(1);
                    newline(&mut out, depth);
                }
                push_punct(&mut out, c);
            }
            ',' => {
                push_punct(&mut out, c);
                expect_key = stack.last() == Some(&'{');
                newline(&mut out, depth);
            }
            ':' => {
                push_punct(&mut out, c);
                out.text.push(' ');
            }
            _ => {
                // A number or a literal: copy up to the next delimiter.
                let mut end = i + c.len_utf8();
                while let Some(&(j, d)) = chars.peek() {
                    if d.is_whitespace() || matches!(d, ',' | '}' | ']' | ':') {
                        break;
                    }
                    end = j + d.len_utf8();
                    chars.next();
                }
                let start = out.text.len();
                out.text.push_str(&raw[i..end]);
                let kind = if c == '-' || c.is_ascii_digit() {
                    Token::Number
                } else {
                    Token::Literal
                };
                out.spans.push((start, out.text.len(), kind));
            }
        }
    }
    Some(out)
}

fn push_punct(out: &mut Pretty, c: char) {
    let start = out.text.len();
    out.text.push(c);
    out.spans.push((start, out.text.len(), Token::Punct));
}

/// A classic hex dump: offset, 16 bytes in hex, and their printable ASCII.
pub fn hexdump(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 4 + 16);
    for (line, chunk) in bytes.chunks(16).enumerate() {
        out.push_str(&format!("{:08x}  ", line * 16));
        for i in 0..16 {
            match chunk.get(i) {
                Some(b) => out.push_str(&format!("{b:02x} ")),
                None => out.push_str("   "),
            }
            if i == 7 {
                out.push(' ');
            }
        }
        out.push(' ');
        for b in chunk {
            out.push(if b.is_ascii_graphic() || *b == b' ' {
                *b as char
            } else {
                '.'
            });
        }
        out.push('\n');
    }
    out
}

/// The fields of an `application/x-www-form-urlencoded` body (Slack's `payload=`, Twilio's
/// parameters), decoded: `+` is a space, `%XX` a byte. `None` when the body is not form-shaped
/// (empty, not UTF-8 after decoding, a JSON document, or a part without `=`).
pub fn form_fields(body: &[u8]) -> Option<Vec<(String, String)>> {
    let text = std::str::from_utf8(body)
        .ok()?
        .trim_end_matches(['\r', '\n']);
    if text.is_empty() || text.starts_with(['{', '[']) {
        return None;
    }
    text.split('&')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (name, value) = part.split_once('=')?;
            Some((percent_decode(name)?, percent_decode(value)?))
        })
        .collect()
}

/// `text` with `+` as a space and `%XX` as a byte, as a form or a query writes it; `None` when a
/// `%` is not followed by two hex digits or the bytes are not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// A JSON pointer segment for a key: `~` and `/` escaped as RFC 6901 says.
pub fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_json_keeps_key_order_numbers_and_escapes() {
        let raw = r#"{"z":1.50,"a":[true,null,{}],"s":"x\"y, {z}","e":[]}"#;
        let pretty = pretty_json(raw).expect("json");
        assert_eq!(
            pretty.text,
            "{\n  \"z\": 1.50,\n  \"a\": [\n    true,\n    null,\n    {}\n  ],\n  \"s\": \"x\\\"y, {z}\",\n  \"e\": []\n}"
        );
        let keys: Vec<&str> = pretty
            .spans
            .iter()
            .filter(|s| s.2 == Token::Key)
            .map(|s| &pretty.text[s.0..s.1])
            .collect();
        assert_eq!(keys, ["\"z\"", "\"a\"", "\"s\"", "\"e\""]);
        // Removing the whitespace gives back the original bytes.
        let squeezed: String = pretty
            .spans
            .iter()
            .map(|s| &pretty.text[s.0..s.1])
            .collect();
        assert_eq!(squeezed, raw);
    }

    #[test]
    fn not_json_is_none() {
        assert_eq!(pretty_json("token=abc&x=1"), None);
        assert_eq!(pretty_json("{\"unterminated\": "), None);
    }

    #[test]
    fn hexdump_shows_offsets_and_ascii() {
        let dump = hexdump(&[0x00, b'A', 0xff]);
        assert_eq!(
            dump,
            format!("00000000  00 41 ff {} .A.\n", " ".repeat(3 * 13 + 1))
        );
    }

    #[test]
    fn form_bodies_decode_field_by_field() {
        let body = b"token=abc&payload=%7B%22type%22%3A%22block_actions%22%7D&text=hello+world%21";
        assert_eq!(
            form_fields(body),
            Some(vec![
                ("token".into(), "abc".into()),
                ("payload".into(), r#"{"type":"block_actions"}"#.into()),
                ("text".into(), "hello world!".into()),
            ])
        );
        assert_eq!(form_fields(br#"{"a":1}"#), None);
        assert_eq!(form_fields(b"no-equals-sign"), None);
        assert_eq!(form_fields(b"bad=%ZZ"), None);
        assert_eq!(pointer_segment("a/b~c"), "a~1b~0c");
    }
}
