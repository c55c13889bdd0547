//! The checks' JSON, compacted against a fixed dictionary of typical checks (`checks.dict`, made
//! from the JSON hookscope writes for passing, failing, duplicate and advised deliveries).
//!
//! Most of a delivery's checks are sentences from a small set, so each is written as copies of
//! dictionary bytes with the varying parts (ids, numbers, hashes) as literals: ~590 bytes of a
//! passing delivery's checks take ~60. Rows get small enough for two or three per page, which
//! halves the pages a commit writes and the store's size. A column holds either the JSON text
//! (stores written before schema v9, and re-checks by an older hookscope) or `[VERSION, ops…]`;
//! [`read_checks`] reads both.
//!
//! Ops: a byte `0..=127` is a run of `n + 1` literal bytes that follows; a byte `128..=255` copies
//! `(n & 127) + 4` bytes of the dictionary from the little-endian `u16` offset that follows.
//! The dictionary of a version never changes: another dictionary is another version byte.

use std::sync::OnceLock;

use crate::domain::advice::AdviceCheck;
use crate::domain::checks::{Checks, DuplicateCheck, SignatureCheck, TimestampCheck};

/// The dictionary of version 1.
const DICT: &[u8] = include_bytes!("checks.dict");
/// The first byte of a compacted value.
const VERSION: u8 = 0xC1;
const MIN_MATCH: usize = 4;
const MAX_MATCH: usize = 127 + MIN_MATCH;
const MAX_LITERALS: usize = 128;
/// Candidates tried per position (the oldest first).
const CHAIN: usize = 16;
/// A copy this long is taken without trying the other candidates.
const GOOD_MATCH: usize = 32;
/// Buckets of the dictionary's index (a power of two).
const BUCKETS: usize = 1 << 14;

/// The bucket of a 4-byte sequence (multiplicative hashing: the index is read once per input
/// byte, so it must be cheap; a collision costs only a comparison).
fn bucket(bytes: &[u8]) -> usize {
    let word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    (word.wrapping_mul(2_654_435_761) >> (32 - BUCKETS.trailing_zeros())) as usize
}

/// How many bytes `a` and `b` start with alike, at most `max`: eight at a time (the first
/// differing byte is the lowest set bit of the words' XOR, read little-endian). Most of the
/// encoder's time was this comparison, a byte at a time.
fn common_prefix(a: &[u8], b: &[u8], max: usize) -> usize {
    let limit = a.len().min(b.len()).min(max);
    let mut n = 0;
    while n + 8 <= limit {
        let x = u64::from_le_bytes(a[n..n + 8].try_into().unwrap_or_default());
        let y = u64::from_le_bytes(b[n..n + 8].try_into().unwrap_or_default());
        let diff = x ^ y;
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + a[n..limit]
        .iter()
        .zip(&b[n..limit])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Where each 4-byte sequence occurs in a dictionary, by bucket: the places of bucket `b` are
/// `places[starts[b]..starts[b + 1]]`, oldest first. Two flat arrays: the encoder reads a bucket
/// for every byte it encodes, and beside SQLite's pages a bucket that was a vector of its own
/// (its header, then its buffer) missed the cache twice.
struct Index {
    starts: Vec<u32>,
    places: Vec<u16>,
}

impl Index {
    fn of(bytes: &[u8]) -> Index {
        let mut starts = vec![0u32; BUCKETS + 1];
        for window in bytes.windows(MIN_MATCH) {
            starts[bucket(window) + 1] += 1;
        }
        for b in 1..=BUCKETS {
            starts[b] += starts[b - 1];
        }
        let mut next = starts.clone();
        let mut places = vec![0u16; starts[BUCKETS] as usize];
        for (at, window) in bytes.windows(MIN_MATCH).enumerate() {
            let b = bucket(window);
            places[next[b] as usize] = at as u16;
            next[b] += 1;
        }
        Index { starts, places }
    }

    /// The places of the sequence `bytes` starts with (and of any other in its bucket).
    fn places(&self, bytes: &[u8]) -> &[u16] {
        let b = bucket(bytes);
        &self.places[self.starts[b] as usize..self.starts[b + 1] as usize]
    }
}

/// Bytes that values are written as copies of, with an index of where each 4-byte sequence
/// occurs in them (by bucket), built on the first encode: readers only decode. At most 64 KiB:
/// copies name their offset in a `u16`.
pub(crate) struct Dictionary {
    bytes: Vec<u8>,
    index: OnceLock<Index>,
}

impl Dictionary {
    /// The dictionary of `bytes` (cut at 64 KiB).
    pub(crate) fn new(mut bytes: Vec<u8>) -> Dictionary {
        bytes.truncate(usize::from(u16::MAX) + 1);
        Dictionary {
            bytes,
            index: OnceLock::new(),
        }
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| Index::of(&self.bytes))
    }

    /// `input` as ops: copies of the dictionary and runs of literals, appended to `out`.
    pub(crate) fn encode_into(&self, input: &[u8], out: &mut Vec<u8>) {
        let dict = &self.bytes;
        let index = self.index();
        let mut literals_from = 0;
        let mut at = 0;
        let flush = |out: &mut Vec<u8>, literals: &[u8]| {
            for run in literals.chunks(MAX_LITERALS) {
                out.push((run.len() - 1) as u8);
                out.extend_from_slice(run);
            }
        };
        while at + MIN_MATCH <= input.len() {
            let mut best = (0, 0u16);
            {
                let places = index.places(&input[at..]);
                // Oldest first: in a run of one byte (padding, a base64 of zeros) the oldest
                // place is the run's start, the longest copy; newest first found the run's last
                // bytes, 16 short copies to compare and then a short match.
                for &from in places.iter().take(CHAIN) {
                    let from_bytes = &dict[from as usize..];
                    if from_bytes.get(..MIN_MATCH) != input.get(at..at + MIN_MATCH) {
                        // Another sequence in the same bucket.
                        continue;
                    }
                    let len = common_prefix(from_bytes, &input[at..], MAX_MATCH);
                    if len > best.0 {
                        best = (len, from);
                        if len >= GOOD_MATCH {
                            break;
                        }
                    }
                }
            }
            if best.0 >= MIN_MATCH {
                flush(out, &input[literals_from..at]);
                out.push(0x80 | (best.0 - MIN_MATCH) as u8);
                out.extend_from_slice(&best.1.to_le_bytes());
                at += best.0;
                literals_from = at;
            } else {
                at += 1;
            }
        }
        flush(out, &input[literals_from..]);
    }

    /// The value `ops` (from [`Dictionary::encode_into`]) hold; `None` when they are damaged.
    pub(crate) fn decode(&self, mut ops: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(ops.len() * 4);
        while let Some((&op, rest)) = ops.split_first() {
            if op < 0x80 {
                let n = op as usize + 1;
                out.extend_from_slice(rest.get(..n)?);
                ops = &rest[n..];
            } else {
                let len = (op & 0x7f) as usize + MIN_MATCH;
                let from = u16::from_le_bytes([*rest.first()?, *rest.get(1)?]) as usize;
                out.extend_from_slice(self.bytes.get(from..from + len)?);
                ops = &rest[2..];
            }
        }
        Some(out)
    }
}

/// The checks' dictionary (version 1).
fn checks_dictionary() -> &'static Dictionary {
    static CHECKS: OnceLock<Dictionary> = OnceLock::new();
    CHECKS.get_or_init(|| Dictionary::new(DICT.to_vec()))
}

/// Compacts `json`.
pub(crate) fn encode(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() / 4 + 8);
    out.push(VERSION);
    checks_dictionary().encode_into(json, &mut out);
    out
}

/// The JSON a compacted value holds; `None` when it is not one or is damaged.
pub(crate) fn decode(blob: &[u8]) -> Option<Vec<u8>> {
    let (&version, ops) = blob.split_first()?;
    if version != VERSION {
        return None;
    }
    checks_dictionary().decode(ops)
}

/// The checks as `checks_json` stores them: their JSON, compacted.
pub(crate) fn checks_column(checks: &Checks) -> Result<Vec<u8>, rusqlite::Error> {
    checks_column_of(
        &checks.signature,
        &checks.timestamp,
        &checks.duplicate,
        &checks.advice,
    )
}

/// [`checks_column`] of the checks made of these parts, without copying them into a [`Checks`]
/// (the writer's path: the parts are the evaluation's). The JSON is a [`Checks`]' own: the same
/// fields in the same order, which a test holds to.
pub(crate) fn checks_column_of(
    signature: &SignatureCheck,
    timestamp: &TimestampCheck,
    duplicate: &DuplicateCheck,
    advice: &AdviceCheck,
) -> Result<Vec<u8>, rusqlite::Error> {
    #[derive(serde::Serialize)]
    struct Parts<'a> {
        signature: &'a SignatureCheck,
        timestamp: &'a TimestampCheck,
        duplicate: &'a DuplicateCheck,
        advice: &'a AdviceCheck,
    }
    let parts = Parts {
        signature,
        timestamp,
        duplicate,
        advice,
    };
    serde_json::to_vec(&parts)
        .map(|json| encode(&json))
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// The checks from a stored `checks_json`: JSON text (older rows), or a compacted blob.
pub(crate) fn read_checks(value: rusqlite::types::ValueRef<'_>) -> Result<Checks, String> {
    let json = match value {
        rusqlite::types::ValueRef::Text(text) => text.to_vec(),
        rusqlite::types::ValueRef::Blob(blob) => {
            decode(blob).ok_or_else(|| "its compacted checks are damaged".to_string())?
        }
        other => return Err(format!("its checks are a {:?}", other.data_type())),
    };
    serde_json::from_slice(&json).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_come_back_byte_for_byte_and_much_smaller() {
        let passing = br#"{"signature":{"status":"pass","detail":"Standard Webhooks signature verified with the configured secret.","scheme":"standard-webhooks","secret":"secret #1","secrets_tried":1},"timestamp":{"status":"pass","skew_secs":0,"detail":"The timestamp is current (0 s off) by this machine's clock, within the 300 s tolerance.","tolerance_secs":300},"duplicate":{"status":"first","first_id":918273,"detail":"First delivery of event msg_918273."},"advice":{"status":"none","items":[],"detail":"No advice: the body is 1 KiB, within the 20 KiB thin-payload guideline, and no field looks like personal or health data."}}"#;
        let packed = encode(passing);
        assert_eq!(decode(&packed).as_deref(), Some(&passing[..]));
        assert!(
            packed.len() * 5 < passing.len(),
            "{} of {} bytes",
            packed.len(),
            passing.len()
        );
        // Anything at all survives, dictionary or not.
        for text in [
            &b""[..],
            b"x",
            b"abc",
            "é — \u{1F600} {\"status\":\"fail\"}".as_bytes(),
            &[0u8, 255, 128, 127, 1, 2, 3, 4, 5][..],
            &[b'a'; 1000][..],
        ] {
            assert_eq!(decode(&encode(text)).as_deref(), Some(text));
        }
    }

    #[test]
    fn the_column_made_of_parts_holds_exactly_the_checks_json() {
        let passing = br#"{"signature":{"status":"pass","detail":"Standard Webhooks signature verified with the configured secret.","scheme":"standard-webhooks","secret":"secret #1","secrets_tried":1},"timestamp":{"status":"pass","skew_secs":0,"detail":"The timestamp is current (0 s off) by this machine's clock, within the 300 s tolerance.","tolerance_secs":300},"duplicate":{"status":"duplicate","first_id":918273,"detail":"Duplicate of delivery #918273."},"advice":{"status":"none","items":[],"detail":"No advice."}}"#;
        let checks: Checks = serde_json::from_slice(passing).expect("checks");
        let column = checks_column(&checks).expect("column");
        // Every field of `Checks`, as `Checks` itself writes it: a field added to `Checks` but
        // not to the parts would be missing here.
        let whole = serde_json::to_vec(&checks).expect("json");
        assert_eq!(decode(&column), Some(whole));
        let back = read_checks(rusqlite::types::ValueRef::Blob(&column)).expect("read back");
        assert_eq!(back, checks);
    }

    /// The word-at-a-time comparison agrees with a byte-at-a-time one: every length up to and
    /// past a word, a difference at every position, and the cap.
    #[test]
    fn common_prefix_counts_what_a_byte_at_a_time_comparison_counts() {
        let slow = |a: &[u8], b: &[u8], max: usize| {
            a.iter()
                .zip(b)
                .take(max)
                .take_while(|(x, y)| x == y)
                .count()
        };
        let a: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
        for len in 0..=a.len() {
            for differ in 0..=len {
                let mut b = a[..len].to_vec();
                if differ < len {
                    b[differ] ^= 0x10;
                }
                for max in [0, 1, 7, 8, 9, 16, 131] {
                    assert_eq!(
                        common_prefix(&a, &b, max),
                        slow(&a, &b, max),
                        "len {len}, differ {differ}, max {max}"
                    );
                    assert_eq!(common_prefix(&b, &a, max), slow(&b, &a, max));
                }
            }
        }
    }

    #[test]
    fn damaged_values_are_refused_not_read_past_their_end() {
        let packed = encode(br#"{"signature":{"status":"pass"}}"#);
        for cut in 1..packed.len() {
            // A cut inside an op must be noticed (a cut between ops reads a shorter value).
            let _ = decode(&packed[..cut]);
        }
        assert_eq!(
            decode(&[VERSION, 0x05, b'a']),
            None,
            "literal run past the end"
        );
        assert_eq!(
            decode(&[VERSION, 0xff, 0xff, 0xff]),
            None,
            "copy past the dictionary"
        );
        assert_eq!(decode(&[0x00]), None, "not a compacted value");
        assert_eq!(decode(&[]), None);
    }
}
