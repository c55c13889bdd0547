//! The captured request: what the receiver saw, byte for byte.
//!
//! A [`Delivery`] keeps the body as raw bytes and the header values as raw bytes, because
//! signatures are computed over exact bytes and any re-encoding would make a valid signature
//! look invalid. Header names arrive lowercased from the HTTP layer (HTTP/1 names are
//! case-insensitive and hyper normalises them); their order is the order of first appearance,
//! with repeated headers grouped.

/// One request header, its value kept as the exact bytes received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The header name, lowercase.
    pub name: String,
    /// The exact bytes of the value (not necessarily UTF-8).
    pub value: Vec<u8>,
}

impl Header {
    /// Builds a header from text (used by the CLI and tests).
    pub fn new(name: &str, value: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.to_ascii_lowercase(),
            value: value.into(),
        }
    }

    /// The value as text, with invalid UTF-8 shown as U+FFFD.
    pub fn value_lossy(&self) -> String {
        String::from_utf8_lossy(&self.value).into_owned()
    }

    /// Whether the value is a credential: a shared token sent as it is (GitLab's), which is
    /// the endpoint's secret itself rather than a signature.
    pub fn is_credential(&self) -> bool {
        CREDENTIAL_HEADERS.contains(&self.name.as_str())
    }

    /// The value as shown and exported: [`Header::value_lossy`], or a mask for a credential.
    /// The store keeps the exact bytes, so a resend as captured still carries it.
    pub fn shown_lossy(&self) -> String {
        if self.is_credential() {
            format!("[redacted: {} bytes]", self.value.len())
        } else {
            self.value_lossy()
        }
    }
}

/// Headers whose value is a secret, masked wherever a delivery is shown or exported.
pub const CREDENTIAL_HEADERS: &[&str] = &["x-gitlab-token"];

/// A request as hookscope received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// When the request arrived, in milliseconds since the Unix epoch.
    pub received_at_ms: i64,
    /// The HTTP method, e.g. `POST`.
    pub method: String,
    /// The request path, without the query string.
    pub path: String,
    /// The query string without the leading `?` (empty when absent).
    pub query: String,
    /// The headers in the order received.
    pub headers: Vec<Header>,
    /// The exact body bytes (empty when the body was over the limit or cut short).
    pub body: Vec<u8>,
    /// The size of the body as sent, or as far as it was read when it was cut short.
    pub body_size: u64,
    /// False when the body was not kept whole: over the size limit or the client went away.
    pub body_complete: bool,
    /// The peer's address, when known.
    pub remote_addr: Option<String>,
}

impl Delivery {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.as_slice())
    }

    /// All values of a header, by case-insensitive name, in order.
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.as_slice())
    }

    /// The first value of a header as UTF-8 text, or `None` when absent or not UTF-8.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// The body parsed as JSON, when it is JSON.
    pub fn body_json(&self) -> Option<serde_json::Value> {
        if self.body.is_empty() {
            return None;
        }
        serde_json::from_slice(&self.body).ok()
    }
}

/// Encodes headers into one blob for the store: for each header, a u32 name length, the name,
/// a u32 value length and the value (little endian). Exact bytes survive the round trip.
pub fn encode_headers(headers: &[Header]) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        headers
            .iter()
            .map(|h| 8 + h.name.len() + h.value.len())
            .sum(),
    );
    for h in headers {
        out.extend_from_slice(&(h.name.len() as u32).to_le_bytes());
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(&(h.value.len() as u32).to_le_bytes());
        out.extend_from_slice(&h.value);
    }
    out
}

/// Decodes the blob written by [`encode_headers`]; `None` when it is damaged.
pub fn decode_headers(mut blob: &[u8]) -> Option<Vec<Header>> {
    fn take<'a>(blob: &mut &'a [u8]) -> Option<&'a [u8]> {
        let len_bytes: [u8; 4] = blob.get(..4)?.try_into().ok()?;
        let len = u32::from_le_bytes(len_bytes) as usize;
        let field = blob.get(4..4 + len)?;
        *blob = &blob[4 + len..];
        Some(field)
    }
    let mut headers = Vec::new();
    while !blob.is_empty() {
        let name = String::from_utf8(take(&mut blob)?.to_vec()).ok()?;
        let value = take(&mut blob)?.to_vec();
        headers.push(Header { name, value });
    }
    Some(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_with_non_utf8_values_and_repeats() {
        let headers = vec![
            Header::new("Content-Type", "application/json"),
            Header::new("x-odd", vec![0xff, 0x00, b'a']),
            Header::new("x-odd", ""),
        ];
        let blob = encode_headers(&headers);
        assert_eq!(decode_headers(&blob), Some(headers));
    }

    #[test]
    fn damaged_header_blob_is_refused_not_misread() {
        let blob = encode_headers(&[Header::new("a", "b")]);
        assert_eq!(decode_headers(&blob[..blob.len() - 1]), None);
    }
}
