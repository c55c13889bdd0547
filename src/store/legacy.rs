//! What stores of schema 8 to 13 hold in formats this build no longer writes, read once by the
//! v14 migration ([`upgrade`]) and never again:
//!
//! - the capture journal (`hookscope.journal` beside the store): rows that were acknowledged and
//!   that the tables may lack (ids after `journal_state.built_id`);
//! - bodies and header blobs packed against a dictionary learned from the store's first
//!   deliveries (`deliveries.packed`, table `dictionaries`);
//! - `checks_json` compacted against the fixed dictionary `checks.dict`.
//!
//! Both codecs are the same: a byte `0..=127` is a run of `n + 1` literal bytes that follows; a
//! byte `128..=255` copies `(n & 127) + 4` bytes of the dictionary from the little-endian `u16`
//! offset that follows. A journal frame is `[payload length u32 LE][CRC-32 u32 LE][payload]`,
//! and the frames end at a zero length, a frame cut short or one failing its CRC.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension as _, params};

/// The checks' dictionary of the compacted format (its first byte, [`CHECKS_VERSION`]).
const CHECKS_DICT: &[u8] = include_bytes!("checks.dict");
const CHECKS_VERSION: u8 = 0xC1;

/// The journal's file name, beside the store (schema 8 to 13).
pub const JOURNAL_FILE: &str = "hookscope.journal";

/// The journal beside the store file `store`.
pub fn journal_beside(store: &Path) -> PathBuf {
    store.with_file_name(JOURNAL_FILE)
}

/// The bytes `ops` hold as copies of `dict` and literals; `None` when they are damaged.
fn decode(dict: &[u8], mut ops: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(ops.len() * 4);
    while let Some((&op, rest)) = ops.split_first() {
        if op < 0x80 {
            let n = usize::from(op) + 1;
            out.extend_from_slice(rest.get(..n)?);
            ops = &rest[n..];
        } else {
            let len = usize::from(op & 0x7f) + 4;
            let from = usize::from(u16::from_le_bytes([*rest.first()?, *rest.get(1)?]));
            out.extend_from_slice(dict.get(from..from + len)?);
            ops = &rest[2..];
        }
    }
    Some(out)
}

/// A compacted `checks_json` blob as its JSON text.
fn checks_text(blob: &[u8]) -> Option<String> {
    let (&version, ops) = blob.split_first()?;
    if version != CHECKS_VERSION {
        return None;
    }
    String::from_utf8(decode(CHECKS_DICT, ops)?).ok()
}

/// One row of the journal, as the schema-13 writer encoded it.
struct JournalRow {
    id: i64,
    received_at_ms: i64,
    method: String,
    path: String,
    query: String,
    headers: Vec<u8>,
    body: Vec<u8>,
    body_size: i64,
    body_complete: bool,
    remote_addr: Option<String>,
    endpoint: String,
    scheme: Option<String>,
    event_id: Option<String>,
    event_type: Option<String>,
    job_id: Option<String>,
    job_status: Option<String>,
    sig_status: String,
    ts_status: String,
    dup_status: String,
    first_id: Option<i64>,
    checks: Vec<u8>,
    response_status: i64,
    latency_ms: i64,
    note: Option<String>,
    job_created_at_ms: Option<i64>,
    /// 1: it claimed its event id; 2: it counted one more copy of one.
    event: u8,
}

struct Decoder<'a>(&'a [u8]);

impl Decoder<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let head = self.0.get(..n)?;
        self.0 = &self.0[n..];
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize;
        self.take(len).map(<[u8]>::to_vec)
    }
    fn str(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?).ok()
    }
    fn opt_str(&mut self) -> Option<Option<String>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.str().map(Some),
            _ => None,
        }
    }
    fn opt_i64(&mut self) -> Option<Option<i64>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.i64().map(Some),
            _ => None,
        }
    }
}

impl JournalRow {
    fn decode(payload: &[u8]) -> Option<JournalRow> {
        let mut d = Decoder(payload);
        let row = JournalRow {
            id: d.i64()?,
            received_at_ms: d.i64()?,
            method: d.str()?,
            path: d.str()?,
            query: d.str()?,
            headers: d.bytes()?,
            body: d.bytes()?,
            body_size: d.i64()?,
            body_complete: d.u8()? != 0,
            remote_addr: d.opt_str()?,
            endpoint: d.str()?,
            scheme: d.opt_str()?,
            event_id: d.opt_str()?,
            event_type: d.opt_str()?,
            job_id: d.opt_str()?,
            job_status: d.opt_str()?,
            sig_status: d.str()?,
            ts_status: d.str()?,
            dup_status: d.str()?,
            first_id: d.opt_i64()?,
            checks: d.bytes()?,
            response_status: d.i64()?,
            latency_ms: d.i64()?,
            note: d.opt_str()?,
            job_created_at_ms: d.opt_i64()?,
            event: d.u8().filter(|e| *e <= 2)?,
        };
        d.0.is_empty().then_some(row)
    }
}

/// The complete rows at the start of a journal's bytes.
fn journal_rows(mut bytes: &[u8]) -> Vec<JournalRow> {
    std::iter::from_fn(move || {
        let len = u32::from_le_bytes(bytes.get(0..4)?.try_into().ok()?) as usize;
        let crc = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
        let payload = bytes.get(8..8 + len).filter(|_| len > 0)?;
        if crc32fast::hash(payload) != crc {
            return None;
        }
        bytes = &bytes[8 + len..];
        JournalRow::decode(payload)
    })
    .collect()
}

/// Writes the journal's rows that the tables lack (ids after `built_id`), with their checks as
/// JSON text; answers how many.
fn replay_journal(tx: &Connection, bytes: &[u8]) -> rusqlite::Result<usize> {
    let built: i64 = tx
        .query_row("SELECT built_id FROM journal_state", [], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    let mut n = 0;
    for row in journal_rows(bytes).into_iter().filter(|row| row.id > built) {
        let checks = checks_text(&row.checks)
            .or_else(|| String::from_utf8(row.checks.clone()).ok())
            .unwrap_or_default();
        tx.execute(
            "INSERT OR IGNORE INTO deliveries (id, received_at_ms, method, path, query, headers, body, body_size,
                body_complete, remote_addr, endpoint, scheme, event_id, event_type, job_id, job_status,
                sig_status, ts_status, dup_status, first_id, checks_json, response_status, latency_ms, note,
                job_created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
            params![
                row.id, row.received_at_ms, row.method, row.path, row.query, row.headers, row.body,
                row.body_size, row.body_complete, row.remote_addr, row.endpoint, row.scheme,
                row.event_id, row.event_type, row.job_id, row.job_status, row.sig_status,
                row.ts_status, row.dup_status, row.first_id, checks, row.response_status,
                row.latency_ms, row.note, row.job_created_at_ms,
            ],
        )?;
        match (row.event, &row.event_id) {
            (1, Some(event_id)) => {
                tx.execute(
                    "INSERT OR IGNORE INTO event_ids (endpoint, event_id, first_delivery_id) VALUES (?1, ?2, ?3)",
                    params![row.endpoint, event_id, row.id],
                )?;
            }
            (2, Some(event_id)) => {
                tx.execute(
                    "UPDATE event_ids SET seen = seen + 1 WHERE endpoint = ?1 AND event_id = ?2",
                    params![row.endpoint, event_id],
                )?;
            }
            _ => {}
        }
        if let Some(job_id) = &row.job_id {
            tx.execute(
                "INSERT INTO jobs (job_id, first_seen_ms, last_seen_ms, last_delivery_id, deliveries) VALUES (?1, ?2, ?2, ?3, 1)
                 ON CONFLICT (job_id) DO UPDATE SET last_seen_ms = MAX(last_seen_ms, ?2),
                     first_seen_ms = MIN(first_seen_ms, ?2), last_delivery_id = ?3, deliveries = deliveries + 1",
                params![job_id, row.received_at_ms, row.id],
            )?;
        }
        tx.execute(
            "UPDATE journal_state SET built_id = MAX(built_id, ?1)",
            params![row.id],
        )?;
        n += 1;
    }
    Ok(n)
}

/// Rows read per step of [`unpack_rows`].
const CHUNK: i64 = 4096;

/// Rewrites every packed row as received and every compacted `checks_json` as JSON text.
fn unpack_rows(tx: &Connection) -> rusqlite::Result<()> {
    let mut dictionaries: HashMap<i64, Vec<u8>> = HashMap::new();
    {
        let mut stmt = tx.prepare("SELECT id, bytes FROM dictionaries")?;
        for dict in stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))? {
            let (id, bytes) = dict?;
            dictionaries.insert(id, bytes);
        }
    }
    type Packed = (i64, Option<i64>, Vec<u8>, Vec<u8>, rusqlite::types::Value);
    let mut select = tx.prepare(
        "SELECT id, packed, headers, body, checks_json FROM deliveries
         WHERE id > ?1 AND (packed IS NOT NULL OR typeof(checks_json) = 'blob') ORDER BY id LIMIT ?2",
    )?;
    let mut update = tx.prepare(
        "UPDATE deliveries SET headers = ?2, body = ?3, checks_json = ?4, packed = NULL WHERE id = ?1",
    )?;
    let mut after = 0;
    loop {
        let rows: Vec<Packed> = select
            .query_map(params![after, CHUNK], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect::<Result<_, _>>()?;
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = last.0;
        for (id, packed, headers, body, checks) in rows {
            // A row that cannot be unpacked keeps its bytes: it reads as damaged, as it did.
            let (headers, body) = match packed.and_then(|p| dictionaries.get(&p)) {
                Some(dict) => match (decode(dict, &headers), decode(dict, &body)) {
                    (Some(h), Some(b)) => (h, b),
                    _ => (headers, body),
                },
                None => (headers, body),
            };
            let checks = match checks {
                rusqlite::types::Value::Blob(blob) => checks_text(&blob).map_or(
                    rusqlite::types::Value::Blob(blob),
                    rusqlite::types::Value::Text,
                ),
                other => other,
            };
            update.execute(params![id, headers, body, checks])?;
        }
    }
}

/// The v14 migration's part in Rust, in its transaction, before its SQL drops the old tables:
/// unpacks every row and, when `had_journal` (the store was at schema 8 or later before this
/// migration began), writes back the journal's rows the tables lack. Answers how many it wrote
/// back. The journal file is removed by the caller once the migration committed.
pub(crate) fn upgrade(tx: &Connection, store: &Path, had_journal: bool) -> rusqlite::Result<usize> {
    let replayed = if had_journal {
        match std::fs::read(journal_beside(store)) {
            Ok(bytes) => replay_journal(tx, &bytes)?,
            Err(_) => 0,
        }
    } else {
        0
    };
    unpack_rows(tx)?;
    Ok(replayed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_ops_are_refused_not_read_past_their_end() {
        assert_eq!(
            decode(b"abcdefgh", &[0x01, b'x', b'y']),
            Some(b"xy".to_vec())
        );
        assert_eq!(decode(b"abcdefgh", &[0x80, 2, 0]), Some(b"cdef".to_vec()));
        assert_eq!(
            decode(b"abcdefgh", &[0x05, b'a']),
            None,
            "literals past the end"
        );
        assert_eq!(
            decode(b"abcdefgh", &[0xff, 0, 0]),
            None,
            "a copy past the dictionary"
        );
        assert_eq!(
            checks_text(&[0x00, 0x00, b'x']),
            None,
            "not the compacted format"
        );
    }
}
