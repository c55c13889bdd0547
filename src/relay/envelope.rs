//! What a relay seals for each delivery: the request as HTTP/1.1 writes it, byte for byte (the
//! method, the path after the channel and the query, the headers in order, the raw body), after
//! one line that names the format and the sender's address. Opened with `age -d`, it reads as
//! the request the provider sent.

use crate::domain::delivery::{Delivery, Header};

/// The first line's word.
const FORMAT: &str = "hookscope-relay/1";

/// Errors reading an envelope.
#[derive(Debug, thiserror::Error)]
#[error("a relayed delivery that cannot be read: {0}")]
pub struct EnvelopeError(&'static str);

/// The request as the relay took it (before sealing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method.
    pub method: String,
    /// The path after `/in/CHANNEL` (`/` when none).
    pub path: String,
    /// The query, without `?`.
    pub query: String,
    /// The headers, in order.
    pub headers: Vec<Header>,
    /// The body.
    pub body: Vec<u8>,
    /// The sender's address.
    pub remote_addr: Option<String>,
}

impl Request {
    /// The envelope's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let head_len: usize = self
            .headers
            .iter()
            .map(|h| h.name.len() + h.value.len() + 4)
            .sum();
        let mut out = Vec::with_capacity(head_len + self.body.len() + 128);
        let remote = self.remote_addr.as_deref().unwrap_or("-");
        out.extend_from_slice(
            format!("{FORMAT} {remote}\n{} {}", self.method, self.path).as_bytes(),
        );
        if !self.query.is_empty() {
            out.push(b'?');
            out.extend_from_slice(self.query.as_bytes());
        }
        out.extend_from_slice(b" HTTP/1.1\r\n");
        for header in &self.headers {
            out.extend_from_slice(header.name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(&header.value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }

    /// Reads an envelope back.
    pub fn decode(bytes: &[u8]) -> Result<Request, EnvelopeError> {
        let line_end = find(bytes, b"\n").ok_or(EnvelopeError("no first line"))?;
        let first =
            std::str::from_utf8(&bytes[..line_end]).map_err(|_| EnvelopeError("first line"))?;
        let remote = first
            .strip_prefix(FORMAT)
            .and_then(|r| r.strip_prefix(' '))
            .ok_or(EnvelopeError("not hookscope-relay/1"))?;
        let rest = &bytes[line_end + 1..];
        let head_end = find(rest, b"\r\n\r\n").ok_or(EnvelopeError("no end of headers"))?;
        let head = &rest[..head_end];
        let body = rest[head_end + 4..].to_vec();
        let mut lines = head
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
        let request_line = lines.next().ok_or(EnvelopeError("no request line"))?;
        let request_line =
            std::str::from_utf8(request_line).map_err(|_| EnvelopeError("request line"))?;
        let mut parts = request_line.splitn(3, ' ');
        let (method, target) = match (parts.next(), parts.next(), parts.next()) {
            (Some(m), Some(t), Some("HTTP/1.1")) => (m, t),
            _ => return Err(EnvelopeError("request line")),
        };
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let headers = lines
            .map(|line| {
                let colon = line
                    .iter()
                    .position(|&b| b == b':')
                    .ok_or(EnvelopeError("header"))?;
                let name = std::str::from_utf8(&line[..colon])
                    .map_err(|_| EnvelopeError("header name"))?;
                let value = line[colon + 1..]
                    .strip_prefix(b" ")
                    .unwrap_or(&line[colon + 1..]);
                Ok(Header {
                    name: name.to_string(),
                    value: value.to_vec(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Request {
            method: method.to_string(),
            path: path.to_string(),
            query: query.to_string(),
            headers,
            body,
            remote_addr: (remote != "-").then(|| remote.to_string()),
        })
    }

    /// The delivery it is, received at the relay's time.
    pub fn into_delivery(self, received_at_ms: i64) -> Delivery {
        Delivery {
            received_at_ms,
            method: self.method,
            path: self.path,
            query: self.query,
            headers: self.headers,
            body_size: self.body.len() as u64,
            body: self.body,
            body_complete: true,
            remote_addr: self.remote_addr,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_byte_exact() {
        let request = Request {
            method: "POST".into(),
            path: "/stripe/hooks".into(),
            query: "a=1&b=%20".into(),
            headers: vec![
                Header::new("content-type", "application/json"),
                Header {
                    name: "x-bytes".into(),
                    value: vec![0xff, b':', b' ', 0x80],
                },
                Header::new("empty", ""),
            ],
            body: b"\r\n\r\n{\"id\": 1}\r\n\r\n\xff".to_vec(),
            remote_addr: Some("203.0.113.9:5000".into()),
        };
        assert_eq!(
            Request::decode(&request.encode()).expect("decodes"),
            request
        );
        let bare = Request {
            query: String::new(),
            headers: vec![],
            body: vec![],
            remote_addr: None,
            ..request
        };
        assert_eq!(Request::decode(&bare.encode()).expect("decodes"), bare);
    }

    #[test]
    fn what_is_not_an_envelope_is_refused() {
        assert!(Request::decode(b"GET / HTTP/1.1\r\n\r\n").is_err());
        assert!(Request::decode(b"hookscope-relay/1 -\nGET / HTTP/1.0\r\n\r\n").is_err());
        assert!(
            Request::decode(b"hookscope-relay/1 -\nGET / HTTP/1.1\r\nno-colon\r\n\r\n").is_err()
        );
    }
}
