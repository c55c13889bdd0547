//! The rows the store writes and reads: a new delivery with its verdicts, a stored delivery, a
//! line of the list, and the decoding of raw rows.

use crate::domain::advice::AdviceCheck;
use crate::domain::checks::{Checks, DuplicateCheck, Evaluation, SignatureCheck, TimestampCheck};
use crate::domain::delivery::Delivery;
use crate::domain::handshake::Handshake;
use crate::domain::job::JobRef;
use crate::store::error::StoreError;
use crate::store::headers::decode_headers;

/// A delivery and its verdicts, ready to be written.
#[derive(Debug, Clone)]
pub struct NewRecord {
    /// The captured request.
    pub delivery: Delivery,
    /// The endpoint (path prefix) it matched.
    pub endpoint: String,
    /// What the pure checks found.
    pub evaluation: Evaluation,
    /// The status hookscope answers.
    pub response_status: u16,
    /// Milliseconds from arrival to the answer (including any configured delay).
    pub latency_ms: u64,
    /// A note on anything unusual (oversized body, client gone).
    pub note: Option<String>,
    /// The endpoint's forwarding rules, decided in the delivery's own write transaction.
    pub routing: Routing,
    /// Taken from a relay: its place there, stored with the relay's cursor.
    pub relayed: Option<Relayed>,
}

/// Where a delivery taken from a relay came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relayed {
    /// The relay's subscribe URL (the cursor's key; not stored with the delivery).
    pub source: String,
    /// Its sequence number in the relay's channel.
    pub seq: u64,
    /// The sequence number before it in the stream it came on (where that stream started, for
    /// its first): it is stored only while the cursor is there, so a delivery that failed to be
    /// stored is never passed over.
    pub after: u64,
    /// How long it waited at the relay before this laptop took it.
    pub delay_ms: i64,
}

/// The forwarding rules a delivery is routed by. Their conditions are decided on the stored row,
/// with the list's SQL, inside the transaction that stores it (`StoredDelivery::routed`), and a
/// delivery that meets none is marked unrouted there: no store round trip after the write.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Routing {
    /// How many rules apply (0: none, or the endpoint's forwarding is switched off).
    pub rules: u32,
    /// Whether one of them has no condition (it takes every delivery).
    pub unconditional: bool,
    /// The conditions of the rules that have one, in the rules' order.
    pub conditions: Vec<crate::domain::filter::Filter>,
}

/// What the writer decided for a delivery inside its transaction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Written {
    pub(crate) id: i64,
    pub(crate) duplicate: DuplicateCheck,
    /// Its routing, as decided.
    pub(crate) routed: Routed,
    /// When it met none of its rules: how many there were.
    pub(crate) unrouted: Option<u32>,
}

impl NewRecord {
    /// `delivery` checked against `endpoint` at `now_secs` and recorded as answered 200 in 1 ms:
    /// how seeded and test deliveries are made (a capture records the answer it really gave).
    pub fn checked(
        delivery: Delivery,
        endpoint: &crate::domain::endpoint::Endpoint,
        now_secs: i64,
    ) -> NewRecord {
        let evaluation = crate::domain::checks::evaluate(&delivery, endpoint, now_secs);
        NewRecord {
            delivery,
            endpoint: endpoint.path.clone(),
            evaluation,
            response_status: 200,
            latency_ms: 1,
            note: None,
            routing: Routing::default(),
            relayed: None,
        }
    }

    /// The delivery as the writer stored it (moved, not copied).
    pub(crate) fn into_stored(self, written: Written) -> StoredDelivery {
        let NewRecord {
            delivery,
            endpoint,
            evaluation,
            response_status,
            latency_ms,
            note,
            routing: _,
            relayed,
        } = self;
        let Written {
            id,
            duplicate,
            routed,
            unrouted,
        } = written;
        StoredDelivery {
            id,
            delivery,
            endpoint,
            scheme: evaluation.scheme,
            event_source: evaluation.event_source,
            handshake: evaluation.handshake,
            event_id: evaluation.event_id,
            event_type: evaluation.event_type,
            job: evaluation.job,
            checks: Checks {
                signature: evaluation.signature,
                timestamp: evaluation.timestamp,
                duplicate,
                advice: evaluation.advice,
                schema: evaluation.schema,
            },
            response_status,
            latency_ms,
            note,
            unrouted,
            routed,
            relayed,
        }
    }
}

/// A delivery as stored, with its id and all its verdicts.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDelivery {
    /// The delivery id (increasing).
    pub id: i64,
    /// The captured request.
    pub delivery: Delivery,
    /// The endpoint (path prefix) it matched.
    pub endpoint: String,
    /// The scheme used or detected.
    pub scheme: Option<String>,
    /// A CloudEvent's `source` (its id is unique within it).
    pub event_source: Option<String>,
    /// The provider's handshake this request was, and what was answered.
    pub handshake: Option<Handshake>,
    /// The event id.
    pub event_id: Option<String>,
    /// The event type.
    pub event_type: Option<String>,
    /// The job it reports on.
    pub job: Option<JobRef>,
    /// All verdicts.
    pub checks: Checks,
    /// The status hookscope answered.
    pub response_status: u16,
    /// Milliseconds from arrival to the answer.
    pub latency_ms: u64,
    /// A note on anything unusual.
    pub note: Option<String>,
    /// When its endpoint had forwarding rules and it matched none: how many there were.
    pub unrouted: Option<u32>,
    /// Just stored: how its forwarding rules were decided in its transaction
    /// ([`Routed::NotRouted`] when read back from the store).
    pub routed: Routed,
    /// Taken from a relay: its sequence number and wait there (`source` is empty when read
    /// back from the store).
    pub relayed: Option<Relayed>,
}

/// How a delivery's forwarding rules were decided in the transaction that stored it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Routed {
    /// No rules applied (none, or its endpoint's forwarding was switched off).
    #[default]
    NotRouted,
    /// Which of `Routing::conditions` it met, in order.
    Met(Vec<bool>),
    /// The conditions could not be decided (SQLite's reason): the conditional rules are not
    /// applied, and the delivery is not marked unrouted for it.
    Undecided(String),
}

/// One line of the deliveries list: what the list shows, without the body.
#[derive(Debug, Clone, PartialEq)]
pub struct ListRow {
    /// The delivery id.
    pub id: i64,
    /// Arrival time, Unix milliseconds.
    pub received_at_ms: i64,
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Event type.
    pub event_type: Option<String>,
    /// Event id.
    pub event_id: Option<String>,
    /// Job id.
    pub job_id: Option<String>,
    /// Verdicts (for the badges and their hover text).
    pub checks: Checks,
    /// Body size in bytes.
    pub body_size: u64,
    /// The status hookscope answered.
    pub response_status: u16,
    /// The handshake this request was, when it was one.
    pub handshake: Option<Handshake>,
    /// When its endpoint had forwarding rules and it matched none: how many there were.
    pub unrouted: Option<u32>,
}

pub(crate) const LIST_COLUMNS: &str = "id, received_at_ms, method, path, event_type, event_id, job_id, checks_json, body_size, response_status, handshake, unrouted";

/// A handshake column's JSON, read leniently: a value no hookscope wrote is no handshake.
fn handshake_at(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Option<Handshake>> {
    let text: Option<String> = row.get(index)?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

/// A line of the list from its row (the columns of [`LIST_COLUMNS`]); a row whose checks cannot
/// be read is `Damaged`, not a failed query.
pub(crate) fn list_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<ListRow, StoreError>> {
    let id = row.get(0)?;
    let checks = match checks_at(row, 7)? {
        Ok(checks) => checks,
        Err(what) => return Ok(Err(StoreError::Damaged { id, what })),
    };
    Ok(Ok(ListRow {
        id,
        received_at_ms: row.get(1)?,
        method: row.get(2)?,
        path: row.get(3)?,
        event_type: row.get(4)?,
        event_id: row.get(5)?,
        job_id: row.get(6)?,
        checks,
        body_size: row.get::<_, i64>(8)?.max(0) as u64,
        response_status: row.get::<_, i64>(9)?.clamp(0, u16::MAX as i64) as u16,
        handshake: handshake_at(row, 10)?,
        unrouted: row.get(11)?,
    }))
}

/// The checks in column `index` of a row; `Err` says why they cannot be read.
fn checks_at(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Result<Checks, String>> {
    Ok(read_checks(row.get_ref(index)?).map_err(|e| format!("its checks cannot be decoded: {e}")))
}

pub(crate) type RowResult = Result<StoredDelivery, StoreError>;

pub(crate) fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RowResult> {
    let id: i64 = row.get(0)?;
    let header_blob: Vec<u8> = row.get(5)?;
    let body: Vec<u8> = row.get(6)?;
    let damaged = |what: String| Ok(Err(StoreError::Damaged { id, what }));
    let Some(headers) = decode_headers(&header_blob) else {
        return damaged("its headers cannot be decoded".into());
    };
    let checks = match checks_at(row, 16)? {
        Ok(checks) => checks,
        Err(what) => return damaged(what),
    };
    let job_id: Option<String> = row.get(14)?;
    let job_status: Option<String> = row.get(15)?;
    Ok(Ok(StoredDelivery {
        id,
        delivery: Delivery {
            received_at_ms: row.get(1)?,
            method: row.get(2)?,
            path: row.get(3)?,
            query: row.get(4)?,
            headers,
            body,
            body_size: row.get::<_, i64>(7)?.max(0) as u64,
            body_complete: row.get(8)?,
            remote_addr: row.get(9)?,
        },
        endpoint: row.get(10)?,
        scheme: row.get(11)?,
        event_source: row.get(21)?,
        handshake: handshake_at(row, 22)?,
        event_id: row.get(12)?,
        event_type: row.get(13)?,
        job: job_id.map(|job_id| JobRef {
            job_id,
            status: job_status,
            created_at_ms: row.get(20).ok().flatten(),
        }),
        checks,
        response_status: row.get::<_, i64>(17)?.clamp(0, u16::MAX as i64) as u16,
        latency_ms: row.get::<_, i64>(18)?.max(0) as u64,
        note: row.get(19)?,
        unrouted: row.get(23)?,
        routed: Routed::NotRouted,
        relayed: match (
            row.get::<_, Option<i64>>(24)?,
            row.get::<_, Option<i64>>(25)?,
        ) {
            (Some(seq), delay) => Some(Relayed {
                source: String::new(),
                seq: seq.max(0) as u64,
                after: 0,
                delay_ms: delay.unwrap_or(0),
            }),
            (None, _) => None,
        },
    }))
}

/// The dictionary the checks column is compressed against: JSON of typical checks, made from
/// what hookscope writes for passing, failing, duplicate and advised deliveries. hookscope's own
/// sentences, no delivery's data, and never changed (a new one would be a new format).
const CHECKS_DICT: &[u8] = include_bytes!("checks.dict");
/// zstd's level for the checks column: its fastest.
const CHECKS_LEVEL: i32 = 1;

thread_local! {
    static CHECKS_CODEC: std::cell::RefCell<Option<(zstd::bulk::Compressor<'static>, zstd::bulk::Decompressor<'static>)>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's compressor and decompressor for the checks column.
fn with_codec<T>(
    f: impl FnOnce(
        &mut zstd::bulk::Compressor<'static>,
        &mut zstd::bulk::Decompressor<'static>,
    ) -> std::io::Result<T>,
) -> std::io::Result<T> {
    CHECKS_CODEC.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some((
                zstd::bulk::Compressor::with_dictionary(CHECKS_LEVEL, CHECKS_DICT)?,
                zstd::bulk::Decompressor::with_dictionary(CHECKS_DICT)?,
            ));
        }
        let (compressor, decompressor) = cell.as_mut().expect("made above");
        f(compressor, decompressor)
    })
}

/// The checks as `checks_json` stores them: their JSON, compressed (zstd against
/// [`CHECKS_DICT`]: ~600 bytes of a passing delivery's checks take ~60).
pub(crate) fn checks_column(checks: &Checks) -> Result<Vec<u8>, rusqlite::Error> {
    checks_column_of(
        &checks.signature,
        &checks.timestamp,
        &checks.duplicate,
        &checks.advice,
        checks.schema.as_ref(),
    )
}

/// [`checks_column`] of the checks made of these parts, without copying them into a [`Checks`]
/// (the writer's path: the parts are the evaluation's). The same fields in the same order as a
/// [`Checks`]' own JSON, which a test holds to.
pub(crate) fn checks_column_of(
    signature: &SignatureCheck,
    timestamp: &TimestampCheck,
    duplicate: &DuplicateCheck,
    advice: &AdviceCheck,
    schema: Option<&crate::domain::contract::SchemaCheck>,
) -> Result<Vec<u8>, rusqlite::Error> {
    #[derive(serde::Serialize)]
    struct Parts<'a> {
        signature: &'a SignatureCheck,
        timestamp: &'a TimestampCheck,
        duplicate: &'a DuplicateCheck,
        advice: &'a AdviceCheck,
        #[serde(skip_serializing_if = "Option::is_none")]
        schema: Option<&'a crate::domain::contract::SchemaCheck>,
    }
    let conversion = |e: std::io::Error| rusqlite::Error::ToSqlConversionFailure(Box::new(e));
    let json = serde_json::to_vec(&Parts {
        signature,
        timestamp,
        duplicate,
        advice,
        schema,
    })
    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    with_codec(|compressor, _| compressor.compress(&json)).map_err(conversion)
}

/// The most bytes a checks column decompresses to (a checks' JSON is a few KiB at most).
const CHECKS_MAX: usize = 1 << 20;

/// The checks from a stored `checks_json`: compressed (this build), or JSON text (stores
/// migrated from schema 13 and before).
pub(crate) fn read_checks(value: rusqlite::types::ValueRef<'_>) -> Result<Checks, String> {
    let json = match value {
        rusqlite::types::ValueRef::Text(json) => std::borrow::Cow::Borrowed(json),
        rusqlite::types::ValueRef::Blob(blob) => std::borrow::Cow::Owned(
            with_codec(|_, decompressor| decompressor.decompress(blob, CHECKS_MAX))
                .map_err(|e| format!("its compressed checks are damaged: {e}"))?,
        ),
        other => return Err(format!("its checks are a {:?}", other.data_type())),
    };
    serde_json::from_slice(&json).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field added to `Checks` but not to the writer's parts would be missing from the store.
    #[test]
    fn the_column_made_of_parts_holds_exactly_the_checks_json() {
        let passing = br#"{"signature":{"status":"pass","detail":"Standard Webhooks signature verified with the configured secret.","scheme":"standard-webhooks","secret":"secret #1","secrets_tried":1},"timestamp":{"status":"pass","skew_secs":0,"detail":"The timestamp is current.","tolerance_secs":300},"duplicate":{"status":"duplicate","first_id":918273,"detail":"Duplicate of delivery #918273."},"advice":{"status":"none","items":[],"detail":"No advice."}}"#;
        let checks: Checks = serde_json::from_slice(passing).expect("checks");
        let column = checks_column(&checks).expect("column");
        let json = serde_json::to_vec(&checks).expect("json");
        assert!(
            column.len() * 4 < json.len(),
            "{} of {} bytes",
            column.len(),
            json.len()
        );
        let decompressed = zstd::bulk::Decompressor::with_dictionary(CHECKS_DICT)
            .and_then(|mut d| d.decompress(&column, CHECKS_MAX))
            .expect("zstd");
        assert_eq!(decompressed, json, "exactly the checks' own JSON");
        let back = read_checks(rusqlite::types::ValueRef::Blob(&column)).expect("read");
        assert_eq!(back, checks);
        // JSON text (a migrated store's rows) reads too; damaged bytes are an error, not a panic.
        let text = read_checks(rusqlite::types::ValueRef::Text(&json)).expect("text");
        assert_eq!(text, checks);
        assert!(read_checks(rusqlite::types::ValueRef::Blob(&column[..column.len() / 2])).is_err());
    }
}
