//! Redaction: JSON values replaced in place by `"[redacted]"`, every other byte of the body
//! kept, so a fixture re-signed after redaction still reads like the capture.

/// Replaces the values at JSON `pointers` in `body` by `"[redacted]"`, leaving every other byte
/// as it was.
pub fn redact(body: &[u8], pointers: &[String]) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(body)
        .map_err(|_| "the body is not UTF-8 JSON, so it cannot be redacted".to_string())?;
    let mut spans = Vec::new();
    for pointer in pointers {
        match json_span(text, pointer) {
            Some(span) => spans.push(span),
            None => return Err(format!("{pointer} is not in the body")),
        }
    }
    spans.sort();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in spans {
        if start < at {
            continue; // inside a value already redacted
        }
        out.push_str(&text[at..start]);
        out.push_str("\"[redacted]\"");
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out.into_bytes())
}

/// The byte range of the value at a JSON pointer in raw JSON text.
fn json_span(text: &str, pointer: &str) -> Option<(usize, usize)> {
    let path: Vec<String> = pointer
        .strip_prefix('/')?
        .split('/')
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect();
    let bytes = text.as_bytes();
    let mut pos = 0;
    for segment in &path {
        pos = skip_ws(bytes, pos);
        match bytes.get(pos)? {
            b'{' => {
                pos += 1;
                loop {
                    pos = skip_ws(bytes, pos);
                    if bytes.get(pos)? == &b'}' {
                        return None;
                    }
                    let key_end = value_end(bytes, pos)?;
                    let key: String = serde_json::from_str(&text[pos..key_end]).ok()?;
                    pos = skip_ws(bytes, key_end);
                    if bytes.get(pos)? != &b':' {
                        return None;
                    }
                    pos = skip_ws(bytes, pos + 1);
                    if key == *segment {
                        break;
                    }
                    pos = skip_ws(bytes, value_end(bytes, pos)?);
                    if bytes.get(pos)? == &b',' {
                        pos += 1;
                    }
                }
            }
            b'[' => {
                let index: usize = segment.parse().ok()?;
                pos += 1;
                for _ in 0..index {
                    pos = skip_ws(bytes, pos);
                    pos = skip_ws(bytes, value_end(bytes, pos)?);
                    if bytes.get(pos)? != &b',' {
                        return None;
                    }
                    pos += 1;
                }
                pos = skip_ws(bytes, pos);
                if bytes.get(pos)? == &b']' {
                    return None;
                }
            }
            _ => return None,
        }
    }
    let start = skip_ws(bytes, pos);
    Some((start, value_end(bytes, start)?))
}

fn skip_ws(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(|b| b.is_ascii_whitespace()) {
        pos += 1;
    }
    pos
}

/// Where the JSON value starting at `pos` ends.
fn value_end(bytes: &[u8], pos: usize) -> Option<usize> {
    match bytes.get(pos)? {
        b'"' => {
            let mut i = pos + 1;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 2,
                    b'"' => return Some(i + 1),
                    _ => i += 1,
                }
            }
            None
        }
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = pos;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = value_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = pos;
            while i < bytes.len()
                && !matches!(bytes[i], b',' | b'}' | b']')
                && !bytes[i].is_ascii_whitespace()
            {
                i += 1;
            }
            (i > pos).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_replaces_values_and_keeps_every_other_byte() {
        let body = br#"{ "name" : "Ada Lovelace", "data": {"member_id": 42, "tags": ["a", {"x": "y"}]}, "keep":1 }"#;
        let out = redact(
            body,
            &[
                "/name".into(),
                "/data/member_id".into(),
                "/data/tags/1".into(),
            ],
        )
        .expect("redacts");
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            r#"{ "name" : "[redacted]", "data": {"member_id": "[redacted]", "tags": ["a", "[redacted]"]}, "keep":1 }"#
        );
        assert!(redact(body, &["/nope".into()]).is_err());
    }
}
