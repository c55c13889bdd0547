//! Bodies and headers packed against a dictionary learned from the store's own deliveries.
//!
//! Webhooks from one sender look alike: the same keys, the same enum values, the same header
//! names and values, with ids, times and amounts changing. Once the store holds [`SAMPLES`]
//! deliveries, the writer makes a dictionary of their bodies and headers (table `dictionaries`,
//! schema v11) and writes every later delivery's body and header blob as copies of it plus
//! literals, with the codec of the checks ([`crate::store::compact::Dictionary`]). The row says
//! which dictionary in `packed` (`NULL`: stored as received, like every row before the
//! dictionary and every body over [`BODY_LIMIT`]). On the seeded mix a 218-byte body takes ~32
//! bytes and a 122-byte header blob ~61; bodies unlike the samples gain little and lose at most
//! one byte per 128.
//!
//! A dictionary is made once and never changes (rows refer to it). It holds pieces of the
//! deliveries it was made from: clearing the history deletes it with them; deleting single
//! deliveries does not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension as _, params};

use crate::store::compact::Dictionary;

/// Deliveries a dictionary is made from.
pub(crate) const SAMPLES: usize = 64;
/// Bodies longer than this are stored as received (packing them would cost the writer time for
/// little: large bodies are rare, and unlike each other).
pub(crate) const BODY_LIMIT: usize = 16 * 1024;
/// The part of each sample body that goes into the dictionary, and the most of all bodies.
const SAMPLE_BODY: usize = 1024;
const BODIES_SIZE: usize = 40 * 1024;
/// The most of all sample header blobs in the dictionary.
const HEADERS_SIZE: usize = 16 * 1024;

/// The dictionary the writer packs new rows with.
pub(crate) struct Packing {
    /// Its row in `dictionaries`.
    pub id: i64,
    dict: Dictionary,
}

impl Packing {
    /// The newest dictionary of the store, if it has one.
    pub(crate) fn newest(conn: &Connection) -> rusqlite::Result<Option<Packing>> {
        conn.query_row(
            "SELECT id, bytes FROM dictionaries ORDER BY id DESC LIMIT 1",
            [],
            |r| {
                Ok(Packing {
                    id: r.get(0)?,
                    dict: Dictionary::new(r.get(1)?),
                })
            },
        )
        .optional()
    }

    /// Makes a dictionary from the newest [`SAMPLES`] rows stored as received, in the caller's
    /// transaction; `None` while there are fewer.
    pub(crate) fn learn(conn: &Connection) -> rusqlite::Result<Option<Packing>> {
        let mut stmt = conn.prepare(
            "SELECT headers, body FROM deliveries WHERE packed IS NULL AND body_size <= ?1
             ORDER BY id DESC LIMIT ?2",
        )?;
        let samples: Vec<(Vec<u8>, Vec<u8>)> = stmt
            .query_map(params![BODY_LIMIT as i64, SAMPLES as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<Result<_, _>>()?;
        if samples.len() < SAMPLES {
            return Ok(None);
        }
        let bodies = dictionary_bytes(&samples);
        conn.execute(
            "INSERT INTO dictionaries (bytes) VALUES (?1)",
            params![bodies],
        )?;
        Ok(Some(Packing {
            id: conn.last_insert_rowid(),
            dict: Dictionary::new(bodies),
        }))
    }

    /// The header blob and the body as packed, or `None` when the body is stored as received.
    pub(crate) fn pack(&self, headers: &[u8], body: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        if body.len() > BODY_LIMIT {
            return None;
        }
        let mut packed_headers = Vec::with_capacity(headers.len() / 2 + 4);
        self.dict.encode_into(headers, &mut packed_headers);
        let mut packed_body = Vec::with_capacity(body.len() / 2 + 4);
        self.dict.encode_into(body, &mut packed_body);
        Some((packed_headers, packed_body))
    }
}

/// A dictionary's bytes from sample rows (header blob, body), newest first: bodies first, then
/// header blobs; newest last, so the likeliest copies are the ones the codec tries first.
fn dictionary_bytes(samples: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut bodies = Vec::new();
    let mut headers = Vec::new();
    for (h, b) in samples.iter().rev() {
        if bodies.len() < BODIES_SIZE {
            bodies.extend_from_slice(&b[..b.len().min(SAMPLE_BODY)]);
        }
        if headers.len() < HEADERS_SIZE {
            headers.extend_from_slice(h);
        }
    }
    bodies.truncate(BODIES_SIZE);
    headers.truncate(HEADERS_SIZE);
    bodies.extend_from_slice(&headers);
    bodies
}

/// Packing with a dictionary made from sample rows as the writer makes it, outside any store:
/// for `cargo bench --bench checks` (the codec on realistic rows), not for use.
#[doc(hidden)]
pub struct BenchPacking(Packing);

impl BenchPacking {
    /// A dictionary of `samples` (header blob, body), newest first, as [`Packing::learn`] makes.
    pub fn new(samples: &[(Vec<u8>, Vec<u8>)]) -> BenchPacking {
        BenchPacking(Packing {
            id: 0,
            dict: Dictionary::new(dictionary_bytes(samples)),
        })
    }

    /// What the writer stores for a row: the header blob and the body packed.
    pub fn pack(&self, headers: &[u8], body: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        self.0.pack(headers, body)
    }

    /// The header blob and body that `pack` made, read back.
    pub fn unpack(&self, headers: &[u8], body: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
        Some((self.0.dict.decode(headers)?, self.0.dict.decode(body)?))
    }
}

/// The dictionaries a connection has read, by id (they never change).
#[derive(Default)]
pub(crate) struct Unpacker {
    dicts: Mutex<HashMap<i64, Arc<Dictionary>>>,
}

impl Unpacker {
    /// The header blob and the body of a row as received; `Err` says what is wrong.
    pub(crate) fn unpack(
        &self,
        conn: &Connection,
        packed: Option<i64>,
        headers: Vec<u8>,
        body: Vec<u8>,
    ) -> Result<(Vec<u8>, Vec<u8>), String> {
        let Some(id) = packed else {
            return Ok((headers, body));
        };
        let dict = self.dictionary(conn, id)?;
        let headers = dict
            .decode(&headers)
            .ok_or("its packed headers are damaged")?;
        let body = dict.decode(&body).ok_or("its packed body is damaged")?;
        Ok((headers, body))
    }

    fn dictionary(&self, conn: &Connection, id: i64) -> Result<Arc<Dictionary>, String> {
        let mut dicts = self.dicts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dict) = dicts.get(&id) {
            return Ok(Arc::clone(dict));
        }
        let bytes: Vec<u8> = conn
            .query_row(
                "SELECT bytes FROM dictionaries WHERE id = ?1",
                params![id],
                |r| r.get(0),
            )
            .map_err(|e| format!("its dictionary #{id} cannot be read: {e}"))?;
        let dict = Arc::new(Dictionary::new(bytes));
        dicts.insert(id, Arc::clone(&dict));
        Ok(dict)
    }
}
