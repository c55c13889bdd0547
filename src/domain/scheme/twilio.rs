//! What Twilio signs: the full URL it requested, then the POST parameters sorted by name (each
//! name followed by its value, repeated names sorted by value). A JSON body is signed through a
//! `bodySHA256` query parameter instead, and the URL alone is signed. Validators accept the URL
//! with its port removed or with the scheme's default port added, since Twilio's own signing is
//! inconsistent about it. This follows twilio-python's `RequestValidator`.

use sha2::{Digest, Sha256};

use crate::domain::delivery::Delivery;
use crate::domain::pretty::form_fields;

/// The query parameter carrying the hex SHA-256 of a JSON body.
pub const BODY_HASH_PARAM: &str = "bodySHA256";

/// A URL cut at its seams: `scheme://host[:port]rest`.
struct Parts<'a> {
    scheme: &'a str,
    host: &'a str,
    port: Option<&'a str>,
    rest: &'a str,
}

fn parts(url: &str) -> Option<Parts<'_>> {
    let (scheme, after) = url.split_once("://")?;
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, rest) = after.split_at(end);
    // An IPv6 literal keeps its colons inside the brackets.
    let port_at = authority
        .rfind(':')
        .filter(|i| !authority[*i..].contains(']'));
    let (host, port) = match port_at {
        Some(i) => (&authority[..i], Some(&authority[i + 1..])),
        None => (authority, None),
    };
    Some(Parts {
        scheme,
        host,
        port,
        rest,
    })
}

/// The URL with any port removed, then with the port kept or the scheme's default added: the
/// two forms twilio-python's validator tries.
pub fn port_variants(url: &str) -> Vec<String> {
    let Some(p) = parts(url) else {
        return vec![url.to_string()];
    };
    let without = format!("{}://{}{}", p.scheme, p.host, p.rest);
    let default_port = if p.scheme.eq_ignore_ascii_case("https") {
        "443"
    } else {
        "80"
    };
    let with = format!(
        "{}://{}:{}{}",
        p.scheme,
        p.host,
        p.port.unwrap_or(default_port),
        p.rest
    );
    vec![without, with]
}

/// The query of a URL (after `?`, before `#`).
fn query_of(url: &str) -> &str {
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    query.split('#').next().unwrap_or("")
}

/// The `bodySHA256` parameter of a URL's query, if it has one.
pub fn body_hash_param(url: &str) -> Option<String> {
    query_of(url).split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name == BODY_HASH_PARAM).then(|| value.to_string())
    })
}

/// The hex SHA-256 of a body, as `bodySHA256` carries it.
pub fn body_hash(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

/// The URL to send a body to: for a body that is not form-encoded, `bodySHA256` set to the
/// body's hash (replacing any earlier one); otherwise the URL as given.
pub fn request_url(url: &str, body: &[u8]) -> String {
    // Only a form's fields are signed: a body that parses as a form without any field (`&`),
    // or only with empty ones (`=`), would have no byte covered, so it goes by its hash like
    // any other non-form body.
    let fields = form_fields(body).is_some_and(|f| {
        f.iter()
            .any(|(name, value)| !name.is_empty() || !value.is_empty())
    });
    if body.is_empty() || fields {
        return url.to_string();
    }
    let (base, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let (path, query) = base.split_once('?').unwrap_or((base, ""));
    let mut pairs: Vec<&str> = query
        .split('&')
        .filter(|p| !p.is_empty() && p.split('=').next() != Some(BODY_HASH_PARAM))
        .collect();
    let hash = format!("{BODY_HASH_PARAM}={}", body_hash(body));
    pairs.push(&hash);
    let mut out = format!("{path}?{}", pairs.join("&"));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// The string signed for a URL and its POST parameters.
pub fn signed_string(url: &str, params: &[(String, String)]) -> Vec<u8> {
    let mut names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut out = url.as_bytes().to_vec();
    for name in names {
        let mut values: Vec<&str> = params
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect();
        values.sort_unstable();
        values.dedup();
        for value in values {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(value.as_bytes());
        }
    }
    out
}

/// The POST parameters a validator signs for a request to `url` carrying `body`: none in the
/// `bodySHA256` form, the decoded form fields otherwise (none when the body is not a form).
pub fn signed_params(url: &str, body: &[u8]) -> Vec<(String, String)> {
    if body_hash_param(url).is_some() {
        return Vec::new();
    }
    form_fields(body).unwrap_or_default()
}

/// The URL the delivery was sent to, as the sender saw it. With a public URL (a tunnel's): its
/// scheme and host, its path when it has one (else the delivery's), and the delivery's query.
/// Without: the `Host` header (or `X-Forwarded-Host`) and `X-Forwarded-Proto`, else `http`.
pub fn delivery_url(delivery: &Delivery, public_url: Option<&str>) -> String {
    let query = query_suffix(delivery);
    if let Some(public) = public_url.and_then(parts) {
        let path = public.rest.split(['?', '#']).next().unwrap_or("");
        let path = if path.is_empty() || path == "/" {
            delivery.path.as_str()
        } else {
            path
        };
        let port = public.port.map(|p| format!(":{p}")).unwrap_or_default();
        return format!("{}://{}{port}{path}{query}", public.scheme, public.host);
    }
    local_url(delivery, None, None)
}

/// The URL as the delivery's own headers tell it, with the scheme or host replaced.
pub fn local_url(delivery: &Delivery, scheme: Option<&str>, host: Option<&str>) -> String {
    let query = query_suffix(delivery);
    let proto = scheme
        .or_else(|| delivery.header_str("x-forwarded-proto"))
        .map(|p| p.split(',').next().unwrap_or(p).trim())
        .unwrap_or("http");
    let host = host
        .or_else(|| delivery.header_str("x-forwarded-host"))
        .or_else(|| delivery.header_str("host"))
        .map(str::trim)
        .unwrap_or("localhost");
    format!("{proto}://{host}{}{query}", delivery.path)
}

/// `?` and the delivery's query, or nothing when it has none.
fn query_suffix(delivery: &Delivery) -> String {
    if delivery.query.is_empty() {
        String::new()
    } else {
        format!("?{}", delivery.query)
    }
}

/// The scheme and host of a URL, for sentences.
pub fn origin(url: &str) -> Option<(String, String)> {
    parts(url).map(|p| (p.scheme.to_string(), p.host.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_removed_and_added_as_the_python_validator_does() {
        assert_eq!(
            port_variants("https://mycompany.com:1234/myapp.php?foo=1"),
            [
                "https://mycompany.com/myapp.php?foo=1",
                "https://mycompany.com:1234/myapp.php?foo=1"
            ]
        );
        assert_eq!(
            port_variants("http://mycompany.com/a"),
            ["http://mycompany.com/a", "http://mycompany.com:80/a"]
        );
        assert_eq!(
            port_variants("http://[::1]:8080/a")[0],
            "http://[::1]/a",
            "an IPv6 literal keeps its colons"
        );
    }

    #[test]
    fn the_request_url_carries_the_hash_of_a_json_body_once() {
        let url = request_url("https://x.test/a?foo=1&bodySHA256=old", b"{\"a\":1}");
        assert_eq!(
            url,
            format!(
                "https://x.test/a?foo=1&bodySHA256={}",
                body_hash(b"{\"a\":1}")
            )
        );
        assert_eq!(
            request_url("https://x.test/a", b"A=1&B=2"),
            "https://x.test/a"
        );
        // A form with no field signs nothing of itself: its hash goes in the URL.
        assert_eq!(
            request_url("https://x.test/a", b"&"),
            format!("https://x.test/a?bodySHA256={}", body_hash(b"&"))
        );
    }

    #[test]
    fn repeated_names_are_sorted_by_value_and_identical_pairs_count_once() {
        let params = [("b", "2"), ("a", "z"), ("a", "y"), ("a", "y")]
            .map(|(n, v)| (n.to_string(), v.to_string()));
        assert_eq!(signed_string("u", &params), b"uayazb2");
    }
}
