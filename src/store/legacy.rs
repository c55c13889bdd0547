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

use rusqlite::types::Value;
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

/// How the schema-13 writer encoded each field of a journal row, in order: the columns of
/// [`JOURNAL_COLUMNS`], then what the delivery did to the event-id table (1: it claimed its
/// event id; 2: it counted one more copy of one).
#[derive(Clone, Copy)]
enum Field {
    I64,
    U8,
    Bytes,
    Text,
    OptText,
    OptI64,
}

const JOURNAL_FIELDS: [Field; 26] = {
    use Field::*;
    [
        I64, I64, Text, Text, Text, Bytes, Bytes, I64, U8, OptText, Text, OptText, OptText,
        OptText, OptText, OptText, Text, Text, Text, OptI64, Bytes, I64, I64, OptText, OptI64, U8,
    ]
};

/// The columns a journal row's first 25 fields fill.
const JOURNAL_COLUMNS: &str = "id, received_at_ms, method, path, query, headers, body, body_size,
    body_complete, remote_addr, endpoint, scheme, event_id, event_type, job_id, job_status,
    sig_status, ts_status, dup_status, first_id, checks_json, response_status, latency_ms, note,
    job_created_at_ms";
/// Where some of them are among the fields.
const ID: usize = 0;
const RECEIVED_AT: usize = 1;
const ENDPOINT: usize = 10;
const EVENT_ID: usize = 12;
const JOB_ID: usize = 14;
const CHECKS: usize = 20;
const EVENT: usize = 25;

/// A journal payload's fields as SQL values; `None` when it is not a whole row.
fn journal_row(mut payload: &[u8]) -> Option<Vec<Value>> {
    let mut take = |n: usize| {
        let head = payload.get(..n)?;
        payload = &payload[n..];
        Some(head)
    };
    let mut row = Vec::with_capacity(JOURNAL_FIELDS.len());
    for field in JOURNAL_FIELDS {
        let present = match field {
            Field::OptText | Field::OptI64 => *take(1)?.first()? == 1,
            _ => true,
        };
        let value = match field {
            _ if !present => Value::Null,
            Field::I64 | Field::OptI64 => {
                Value::Integer(i64::from_le_bytes(take(8)?.try_into().ok()?))
            }
            Field::U8 => Value::Integer(i64::from(*take(1)?.first()?)),
            Field::Bytes | Field::Text | Field::OptText => {
                let len = u32::from_le_bytes(take(4)?.try_into().ok()?) as usize;
                let bytes = take(len)?.to_vec();
                match field {
                    Field::Bytes => Value::Blob(bytes),
                    _ => Value::Text(String::from_utf8(bytes).ok()?),
                }
            }
        };
        row.push(value);
    }
    payload.is_empty().then_some(row)
}

/// The complete rows at the start of a journal's bytes.
fn journal_rows(mut bytes: &[u8]) -> Vec<Vec<Value>> {
    std::iter::from_fn(move || {
        let len = u32::from_le_bytes(bytes.get(0..4)?.try_into().ok()?) as usize;
        let crc = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
        let payload = bytes.get(8..8 + len).filter(|_| len > 0)?;
        if crc32fast::hash(payload) != crc {
            return None;
        }
        bytes = &bytes[8 + len..];
        journal_row(payload)
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
    let placeholders = (1..=EVENT)
        .map(|n| format!("?{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut insert = tx.prepare(&format!(
        "INSERT OR IGNORE INTO deliveries ({JOURNAL_COLUMNS}) VALUES ({placeholders})"
    ))?;
    let mut n = 0;
    for mut row in journal_rows(bytes) {
        let int = |v: &Value| if let Value::Integer(i) = v { *i } else { 0 };
        let (id, received_at) = (int(&row[ID]), row[RECEIVED_AT].clone());
        if id <= built {
            continue;
        }
        // Compacted (schema 9 on), or JSON text (schema 8).
        if let Value::Blob(blob) = &row[CHECKS]
            && let Some(text) = checks_text(blob).or_else(|| String::from_utf8(blob.clone()).ok())
        {
            row[CHECKS] = Value::Text(text);
        }
        let event = int(&row[EVENT]);
        if insert.execute(rusqlite::params_from_iter(&row[..EVENT]))? == 0 {
            // Already in the table: its counts are too.
            continue;
        }
        let (endpoint, event_id, job_id) = (&row[ENDPOINT], &row[EVENT_ID], &row[JOB_ID]);
        match event {
            1 if *event_id != Value::Null => tx.execute(
                "INSERT OR IGNORE INTO event_ids (endpoint, event_id, first_delivery_id) VALUES (?1, ?2, ?3)",
                params![endpoint, event_id, id],
            )?,
            2 if *event_id != Value::Null => tx.execute(
                "UPDATE event_ids SET seen = seen + 1 WHERE endpoint = ?1 AND event_id = ?2",
                params![endpoint, event_id],
            )?,
            _ => 0,
        };
        if *job_id != Value::Null {
            tx.execute(
                crate::store::writer::UPSERT_JOB,
                params![job_id, received_at, id],
            )?;
        }
        tx.execute(
            "UPDATE journal_state SET built_id = MAX(built_id, ?1)",
            params![id],
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
    type Packed = (i64, Option<i64>, Vec<u8>, Vec<u8>, Value);
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
    let failed = |what: String| {
        rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(what),
        )
    };
    let replayed = if had_journal {
        let path = journal_beside(store);
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
        {
            Ok(file) => {
                // The older build's writer holds this lock while it captures: migrating under it
                // would take the journal from a process still acknowledging into it.
                if !crate::store::lock::try_exclusive(&file).map_err(|e| failed(e.to_string()))? {
                    return Err(failed(format!(
                        "an older hookscope is capturing into this store (it holds {}): stop it, then open the store with this one",
                        path.display()
                    )));
                }
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut &file, &mut bytes)
                    .map_err(|e| failed(format!("cannot read {}: {e}", path.display())))?;
                replay_journal(tx, &bytes)?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            // Acknowledged rows may be in it: no migration without them.
            Err(e) => return Err(failed(format!("cannot read {}: {e}", path.display()))),
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
