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

/// Query parameters whose value is a secret (Meta's verify token), masked the same way.
pub const CREDENTIAL_PARAMS: &[&str] = &["hub.verify_token"];

/// A query with the value of each credential parameter ([`CREDENTIAL_PARAMS`], its name read
/// percent-decoded, as a receiver reads it) replaced by `[redacted]`.
pub fn masked_query(query: &str) -> std::borrow::Cow<'_, str> {
    let secret = |part: &str| {
        let name = part.split_once('=').map_or(part, |(n, _)| n);
        let decoded = crate::domain::pretty::percent_decode(name);
        CREDENTIAL_PARAMS.contains(&decoded.as_deref().unwrap_or(name))
    };
    if !query.split('&').any(secret) {
        return std::borrow::Cow::Borrowed(query);
    }
    let parts: Vec<String> = query
        .split('&')
        .map(|part| match part.split_once('=') {
            Some((name, _)) if secret(part) => format!("{name}=[redacted]"),
            _ => part.to_string(),
        })
        .collect();
    std::borrow::Cow::Owned(parts.join("&"))
}

/// A URL with its credentials masked, as an attempt records where it went and every line,
/// report and error says it: a password in it (`https://user:[redacted]@host/`), a user alone
/// (`https://[redacted]@host/`: a token is often written there) and the query's credential
/// parameters.
pub fn masked_url(url: &str) -> String {
    // `scheme://userinfo@host…`: the authority ends at the first `/`, `?` or `#`.
    let mut unmasked = std::borrow::Cow::Borrowed(url);
    if let Some((scheme, rest)) = url.split_once("://") {
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            let shown = match rest[..at].split_once(':') {
                Some((user, _)) => format!("{user}:[redacted]"),
                None => "[redacted]".to_string(),
            };
            unmasked = format!("{scheme}://{shown}{}", &rest[at..]).into();
        }
    }
    let url = unmasked.as_ref();
    match url.split_once('?') {
        Some((base, rest)) => {
            let (query, fragment) = match rest.split_once('#') {
                Some((q, f)) => (q, Some(f)),
                None => (rest, None),
            };
            let mut out = format!("{base}?{}", masked_query(query));
            if let Some(f) = fragment {
                out.push('#');
                out.push_str(f);
            }
            out
        }
        None => url.to_string(),
    }
}

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
    /// The query as shown and exported: as received, but the value of a credential parameter
    /// ([`CREDENTIAL_PARAMS`]) replaced by `[redacted]`. The store keeps it as received.
    pub fn shown_query(&self) -> std::borrow::Cow<'_, str> {
        masked_query(&self.query)
    }

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

    /// The body parsed as JSON, when it is JSON, borrowing its strings from the body.
    pub fn body_json(&self) -> Option<crate::domain::json::Json<'_>> {
        if self.body.is_empty() {
            return None;
        }
        crate::domain::json::Json::parse(&self.body)
    }
}

/// The first bytes of a header blob in the compact format. The first format began with the
/// first name's length as a little-endian u32, so it began with `FF FF FF` only for a name of
/// 16 MiB or more, which no receiver or import accepts.
const COMPACT: [u8; 3] = [0xFF; 3];

/// Header names written as one byte: code `n` (1-based) is `NAMES[n - 1]`, 0 a literal name.
/// Append only: stored blobs refer to these positions.
const NAMES: [&str; 64] = [
    "host",
    "user-agent",
    "content-type",
    "content-length",
    "accept",
    "accept-encoding",
    "connection",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "svix-id",
    "svix-timestamp",
    "svix-signature",
    "stripe-signature",
    "x-hub-signature-256",
    "x-hub-signature",
    "x-github-event",
    "x-github-delivery",
    "x-github-hook-id",
    "x-github-hook-installation-target-id",
    "x-github-hook-installation-target-type",
    "x-shopify-hmac-sha256",
    "x-shopify-webhook-id",
    "x-shopify-topic",
    "x-shopify-shop-domain",
    "x-shopify-api-version",
    "x-shopify-triggered-at",
    "x-slack-signature",
    "x-slack-request-timestamp",
    "paddle-signature",
    "x-twilio-signature",
    "x-gitlab-token",
    "x-gitlab-event",
    "x-gitlab-event-uuid",
    "x-gitlab-webhook-uuid",
    "x-signature-ed25519",
    "x-signature-timestamp",
    "x-request-id",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-host",
    "x-forwarded-port",
    "x-real-ip",
    "traceparent",
    "tracestate",
    "authorization",
    "cache-control",
    "accept-language",
    "origin",
    "referer",
    "date",
    "idempotency-key",
    "x-idempotency-key",
    "x-webhook-id",
    "x-webhook-signature",
    "x-webhook-timestamp",
    "x-event-type",
    "x-event-id",
    "transfer-encoding",
    "expect",
    "content-encoding",
    "via",
    "x-amz-sns-message-type",
    "x-amz-sns-message-id",
];

/// Encodes headers into one blob for the store, exactly (names as received, values as bytes):
/// `FF FF FF`, then per header a name (one byte: a code into [`NAMES`], or 0 followed by a
/// length and the name) and the value (a length and the bytes); lengths are LEB128 varints.
pub fn encode_headers(headers: &[Header]) -> Vec<u8> {
    if headers.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(
        COMPACT.len()
            + headers
                .iter()
                .map(|h| 4 + h.name.len() + h.value.len())
                .sum::<usize>(),
    );
    out.extend_from_slice(&COMPACT);
    for h in headers {
        match NAMES.iter().position(|n| *n == h.name) {
            Some(i) => out.push(i as u8 + 1),
            None => {
                out.push(0);
                put_varint(&mut out, h.name.len());
                out.extend_from_slice(h.name.as_bytes());
            }
        }
        put_varint(&mut out, h.value.len());
        out.extend_from_slice(&h.value);
    }
    out
}

/// Decodes a blob written by [`encode_headers`], in either format; `None` when it is damaged.
pub fn decode_headers(blob: &[u8]) -> Option<Vec<Header>> {
    match blob.strip_prefix(&COMPACT) {
        Some(rest) => decode_compact(rest),
        None => decode_first_format(blob),
    }
}

fn decode_compact(mut blob: &[u8]) -> Option<Vec<Header>> {
    fn take<'a>(blob: &mut &'a [u8]) -> Option<&'a [u8]> {
        let len = take_varint(blob)?;
        let field = blob.get(..len)?;
        *blob = &blob[len..];
        Some(field)
    }
    let mut headers = Vec::new();
    while let Some((&code, rest)) = blob.split_first() {
        blob = rest;
        let name = match code {
            0 => String::from_utf8(take(&mut blob)?.to_vec()).ok()?,
            n => (*NAMES.get(usize::from(n) - 1)?).to_string(),
        };
        let value = take(&mut blob)?.to_vec();
        headers.push(Header { name, value });
    }
    Some(headers)
}

/// The first format (schema v1 to v9): per header a u32 name length, the name, a u32 value
/// length and the value, little endian.
fn decode_first_format(mut blob: &[u8]) -> Option<Vec<Header>> {
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

fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn take_varint(blob: &mut &[u8]) -> Option<usize> {
    let mut n: usize = 0;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = blob.split_first()?;
        *blob = rest;
        n |= usize::from(byte & 0x7F).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// A request built from text, for the domain's unit tests: received at 0 on `/hooks/x`.
#[cfg(test)]
pub(crate) fn test_request(
    method: &str,
    query: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Delivery {
    Delivery {
        received_at_ms: 0,
        method: method.into(),
        path: "/hooks/x".into(),
        query: query.into(),
        headers: headers.iter().map(|(n, v)| Header::new(n, *v)).collect(),
        body: body.as_bytes().to_vec(),
        body_size: body.len() as u64,
        body_complete: true,
        remote_addr: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verify_token_is_masked_however_its_name_is_encoded_and_urls_keep_the_rest() {
        for query in [
            "hub.mode=subscribe&hub.verify_token=s3cret&hub.challenge=1",
            "hub.mode=subscribe&hub%2Everify_token=s3cret&hub.challenge=1",
        ] {
            let shown = masked_query(query);
            assert!(!shown.contains("s3cret"), "{shown}");
            assert!(shown.contains("=[redacted]") && shown.contains("hub.challenge=1"));
        }
        assert_eq!(masked_query("a=1&b=2"), "a=1&b=2");
        assert_eq!(
            masked_url("http://h/p?hub.verify_token=s3cret#frag"),
            "http://h/p?hub.verify_token=[redacted]#frag"
        );
        assert_eq!(masked_url("http://h/p"), "http://h/p");
        assert_eq!(
            masked_url("https://ci:s3cret@hooks.example.com:8443/in?hub.verify_token=t"),
            "https://ci:[redacted]@hooks.example.com:8443/in?hub.verify_token=[redacted]"
        );
        // A user alone may be a token; an @ after the authority is no credential.
        assert_eq!(masked_url("https://tok3n@h/p"), "https://[redacted]@h/p");
        assert_eq!(
            masked_url("http://u:p@[::1]:8080/x"),
            "http://u:[redacted]@[::1]:8080/x"
        );
        assert_eq!(
            masked_url("https://h/p?email=a:b@c"),
            "https://h/p?email=a:b@c"
        );
    }

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
        // A name code past the table, and a length running past the end.
        assert_eq!(decode_headers(&[0xFF, 0xFF, 0xFF, 200, 0]), None);
        assert_eq!(decode_headers(&[0xFF, 0xFF, 0xFF, 1, 5, b'a']), None);
        assert_eq!(decode_headers(&[0xFF, 0xFF, 0xFF, 1, 0x80]), None);
    }

    #[test]
    fn known_names_take_one_byte_and_long_values_round_trip() {
        let headers = vec![
            Header::new("webhook-signature", "v1,abc"),
            // A name as a HAR file may spell it: kept exactly, so written literally.
            Header {
                name: "Webhook-Signature".into(),
                value: b"kept as received".to_vec(),
            },
            Header::new("x-long", vec![b'x'; 300]),
        ];
        let blob = encode_headers(&headers);
        assert_eq!(decode_headers(&blob), Some(headers));
        // Marker, code + length + 6 bytes, literal name (0, 1 + 17) + 1 + 16, literal name
        // (0, 1 + 6) + 2-byte length + 300.
        assert_eq!(
            blob.len(),
            3 + (1 + 1 + 6) + (1 + 1 + 17 + 1 + 16) + (1 + 1 + 6 + 2 + 300)
        );
        assert!(encode_headers(&[]).is_empty());
        assert_eq!(decode_headers(&[]), Some(Vec::new()));
    }

    #[test]
    fn blobs_of_the_first_format_still_decode() {
        // As schema v1 to v9 wrote them: u32 lengths, little endian.
        let mut blob = Vec::new();
        for (name, value) in [("host", "x"), ("webhook-id", "msg_1")] {
            blob.extend_from_slice(&(name.len() as u32).to_le_bytes());
            blob.extend_from_slice(name.as_bytes());
            blob.extend_from_slice(&(value.len() as u32).to_le_bytes());
            blob.extend_from_slice(value.as_bytes());
        }
        assert_eq!(
            decode_headers(&blob),
            Some(vec![
                Header::new("host", "x"),
                Header::new("webhook-id", "msg_1")
            ])
        );
    }
}
