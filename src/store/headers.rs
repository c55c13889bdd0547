//! The store's encoding of a delivery's headers: one blob per delivery, exact (names as
//! received, values as bytes), in the compact format written since schema v10, and the first
//! format (schema v1 to v9) still read.

use crate::domain::delivery::Header;

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
