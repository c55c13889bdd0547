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
}
