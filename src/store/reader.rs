//! Read connections: the list's pages under a filter, counts, one delivery, a job's deliveries,
//! the attempts of a delivery. Readers never wait for the writer (WAL).

use std::path::Path;

use rusqlite::{Connection, OptionalExtension as _, params};

use crate::domain::attempt::{Attempt, AttemptKind};
use crate::domain::checks::{DuplicateStatus, SignatureStatus, TimestampStatus};
use crate::domain::filter::Filter;
use crate::domain::reconcile::Poll;
use crate::store::error::StoreError;
use crate::store::headers::decode_headers;
use crate::store::query;
use crate::store::records::{LIST_COLUMNS, list_row, read_row};
use crate::store::records::{ListRow, StoredDelivery};
use crate::store::schema::{MIGRATIONS, migrate, open_connection};

/// A read connection. It never writes the store: what a delivery's 2xx promised is committed
/// already, so there is nothing to repair or replay when it opens.
pub struct Reader {
    conn: Connection,
}

const SELECT_COLUMNS: &str = "id, received_at_ms, method, path, query, headers, body, body_size, body_complete,
    remote_addr, endpoint, scheme, event_id, event_type, job_id, job_status, checks_json, response_status,
    latency_ms, note, job_created_at_ms, event_source, handshake, unrouted, relay_seq, relay_delay_ms";

impl Reader {
    /// Opens a read connection to a store. A store that does not exist yet, or comes from an
    /// older hookscope, is first created or brought up to date by the migrations (the one
    /// place that writes it, under SQLite's write lock: src/store/schema.rs).
    pub fn open(path: &Path) -> Result<Reader, StoreError> {
        match Reader::open_shared(path) {
            // A store closed cleanly has no `-shm` file, and SQLite cannot make one on a
            // read-only volume: read it as immutable there (nobody can be writing to it).
            Err(StoreError::Query(e) | StoreError::Open { source: e, .. })
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::CannotOpen)
                    && path.exists()
                    && crate::store::health::probe_dir(path).is_some() =>
            {
                let conn = crate::store::schema::open_immutable(path)?;
                // Its queries name today's columns: an older schema cannot be read as it is.
                let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
                let supported = MIGRATIONS.len() as i64;
                if found != supported {
                    return Err(if found > supported {
                        StoreError::NewerSchema {
                            path: path.to_path_buf(),
                            found,
                            supported,
                        }
                    } else {
                        StoreError::OlderReadOnly {
                            path: path.to_path_buf(),
                            found,
                            supported,
                        }
                    });
                }
                crate::store::text::attach(&conn, path, true);
                Ok(Reader { conn })
            }
            other => other,
        }
    }

    fn open_shared(path: &Path) -> Result<Reader, StoreError> {
        let current = if path.exists() {
            let conn = open_connection(path, true)?;
            conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))?
        } else {
            0
        };
        if current < MIGRATIONS.len() as i64 {
            let conn = open_connection(path, false)?;
            migrate(&conn, path)?;
        } else if current > MIGRATIONS.len() as i64 {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: current,
                supported: MIGRATIONS.len() as i64,
            });
        }
        let conn = open_connection(path, true)?;
        crate::store::text::attach(&conn, path, false);
        Ok(Reader { conn })
    }

    /// How many deliveries the store holds.
    pub fn count(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM deliveries", [], |r| r.get(0))?)
    }

    /// The newest sequence number stored from a relay (its subscribe URL), where a reconnect
    /// resumes (0 when none), and the uid of the channel it counts in (`None` before the first
    /// connection).
    pub fn relay_cursor(&self, source: &str) -> Result<(u64, Option<String>), StoreError> {
        use rusqlite::OptionalExtension as _;
        let row: Option<(i64, Option<String>)> = self
            .conn
            .query_row(
                "SELECT seq, channel_uid FROM relay_cursors WHERE source = ?1",
                [source],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(row.map_or((0, None), |(seq, uid)| (seq.max(0) as u64, uid)))
    }

    /// The id of the newest delivery readers can see (0 when empty).
    pub fn newest_id(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT COALESCE(MAX(id), 0) FROM deliveries", [], |r| {
                r.get(0)
            })?)
    }

    /// The newest deliveries first, at most `limit`, older than `before_id` when given.
    pub fn list(
        &self,
        limit: usize,
        before_id: Option<i64>,
    ) -> Result<Vec<StoredDelivery>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SELECT_COLUMNS} FROM deliveries WHERE id < ?1 ORDER BY id DESC LIMIT ?2"
        ))?;
        let rows = stmt.query_map(params![before_id.unwrap_or(i64::MAX), limit as i64], |r| {
            read_row(r)
        })?;
        rows.map(|r| r?).collect()
    }

    /// One delivery by id.
    pub fn get(&self, id: i64) -> Result<Option<StoredDelivery>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SELECT_COLUMNS} FROM deliveries WHERE id = ?1"
        ))?;
        match stmt.query_row(params![id], read_row).optional()? {
            Some(row) => Ok(Some(row?)),
            None => Ok(None),
        }
    }

    /// How many deliveries match a filter.
    pub fn count_matching(&self, filter: &Filter) -> Result<i64, StoreError> {
        if let Some(query) = query::text_only(filter) {
            // Free text alone: the index knows the count without joining the table.
            let mut stmt = self.conn.prepare_cached(
                "SELECT COUNT(*) FROM deliveries_fts WHERE deliveries_fts MATCH ?1",
            )?;
            return Ok(stmt.query_row(params![query], |r| r.get(0))?);
        }
        let (condition, params) = query::condition(filter);
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT COUNT(*) FROM deliveries WHERE {condition}"
        ))?;
        Ok(stmt.query_row(rusqlite::params_from_iter(params.iter()), |r| r.get(0))?)
    }

    /// The rows at positions `offset..offset + limit` of the filtered list, oldest first.
    pub fn page(
        &self,
        filter: &Filter,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<ListRow>, StoreError> {
        if let Some(query) = query::text_only(filter) {
            // Free text alone: positions walked in the text index, in id order. Through the
            // table, SQLite first copies every match into a temporary set (300 ms for 200,000
            // matches at 1,000,000).
            let sql = format!(
                "SELECT {LIST_COLUMNS} FROM deliveries WHERE id IN (SELECT rowid FROM deliveries_fts \
                 WHERE deliveries_fts MATCH ?1 ORDER BY rowid LIMIT ?2 OFFSET ?3) ORDER BY id"
            );
            let mut stmt = self.conn.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![query, limit as i64, offset as i64], list_row)?;
            return rows.map(|row| row?).collect();
        }
        let (condition, mut params) = query::condition(filter);
        params.push(limit.to_string());
        params.push(offset.to_string());
        let n = params.len();
        // Unfiltered, walk the narrow id index rather than the table, whose rows carry bodies.
        let source = if filter.is_empty() {
            "deliveries INDEXED BY deliveries_by_id"
        } else {
            "deliveries"
        };
        let ids_sql = format!(
            "SELECT id FROM {source} WHERE {condition} ORDER BY id LIMIT ?{} OFFSET ?{n}",
            n - 1
        );
        let sql =
            format!("SELECT {LIST_COLUMNS} FROM deliveries WHERE id IN ({ids_sql}) ORDER BY id");
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(params.iter()), list_row)?;
        rows.map(|row| row?).collect()
    }

    /// The last `limit` rows of the filtered list, oldest first: walked from the newest end, so
    /// the tail of a long history costs the same as its head (no OFFSET).
    pub fn page_tail(&self, filter: &Filter, limit: usize) -> Result<Vec<ListRow>, StoreError> {
        let ids: Vec<i64> = match query::text_only(filter) {
            Some(query) => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT rowid FROM deliveries_fts WHERE deliveries_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2",
                )?;
                let rows = stmt.query_map(params![query, limit as i64], |r| r.get(0))?;
                rows.collect::<Result<_, _>>()?
            }
            None => {
                let (condition, mut params) = query::condition(filter);
                params.push(limit.to_string());
                let source = if filter.is_empty() {
                    "deliveries INDEXED BY deliveries_by_id"
                } else {
                    "deliveries"
                };
                let sql = format!(
                    "SELECT id FROM {source} WHERE {condition} ORDER BY id DESC LIMIT ?{}",
                    params.len()
                );
                let mut stmt = self.conn.prepare_cached(&sql)?;
                let rows =
                    stmt.query_map(rusqlite::params_from_iter(params.iter()), |r| r.get(0))?;
                rows.collect::<Result<_, _>>()?
            }
        };
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // The ids are integers this function just read: safe to inline.
        let list: Vec<String> = ids.iter().map(i64::to_string).collect();
        let sql = format!(
            "SELECT {LIST_COLUMNS} FROM deliveries WHERE id IN ({}) ORDER BY id",
            list.join(",")
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map([], list_row)?;
        rows.map(|row| row?).collect()
    }

    /// The position of a delivery in the filtered list (for keeping a selection in view).
    pub fn position_of(&self, filter: &Filter, id: i64) -> Result<i64, StoreError> {
        if let Some(query) = query::text_only(filter) {
            // Free text alone: counted in the index. Through the table, SQLite would first copy
            // every match into a temporary set (336 ms for 200,000 matches at 1,000,000; 13 ms
            // here).
            let mut stmt = self.conn.prepare_cached(
                "SELECT COUNT(*) FROM deliveries_fts WHERE deliveries_fts MATCH ?1 AND rowid < ?2",
            )?;
            return Ok(stmt.query_row(params![query, id], |r| r.get(0))?);
        }
        let (condition, mut params) = query::condition(filter);
        params.push(id.to_string());
        let sql = format!(
            "SELECT COUNT(*) FROM deliveries WHERE {condition} AND id < ?{}",
            params.len()
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        Ok(stmt.query_row(rusqlite::params_from_iter(params.iter()), |r| r.get(0))?)
    }

    /// The most recently active jobs, newest first, whose id starts with `prefix`.
    pub fn recent_jobs(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT job_id FROM jobs WHERE job_id >= ?1 AND job_id < ?2 ORDER BY last_delivery_id DESC LIMIT ?3",
        )?;
        let end = format!("{prefix}\u{10FFFF}");
        let rows = stmt.query_map(params![prefix, end, limit as i64], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The jobs seen (a delivery, or a job API's listing) at or after `since_ms`, most recently
    /// seen first, at most `limit`, each with when it was first seen; and how many there are.
    pub fn jobs_seen_since(
        &self,
        since_ms: i64,
        limit: usize,
    ) -> Result<(Vec<(String, i64)>, usize), StoreError> {
        let rows = self
            .conn
            .prepare_cached(
                "SELECT job_id, first_seen_ms FROM jobs WHERE last_seen_ms >= ?1
                 ORDER BY last_seen_ms DESC, job_id LIMIT ?2",
            )?
            .query_map(params![since_ms, limit as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<Result<Vec<(String, i64)>, _>>()?;
        let total: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM jobs WHERE last_seen_ms >= ?1")?
            .query_row(params![since_ms], |r| r.get(0))?;
        Ok((rows, total.max(0) as usize))
    }

    /// Whether the store knows a job (from a delivery or a poll).
    pub fn has_job(&self, job_id: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM jobs WHERE job_id = ?1")?
            .query_row(params![job_id], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// How many jobs the store knows.
    pub fn count_jobs(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM jobs", [], |r| r.get(0))?)
    }

    /// The deliveries of one job, for its timeline.
    pub fn job_deliveries(
        &self,
        job_id: &str,
    ) -> Result<Vec<crate::domain::timeline::JobDelivery>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, event_id, event_type, job_status, job_created_at_ms, received_at_ms, sig_status, ts_status, dup_status
             FROM deliveries WHERE job_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![job_id], |r| {
            Ok(crate::domain::timeline::JobDelivery {
                delivery_id: r.get(0)?,
                event_id: r.get(1)?,
                event_type: r.get(2)?,
                state: r.get(3)?,
                created_at_ms: r.get(4)?,
                received_at_ms: r.get(5)?,
                // A word no hookscope writes reads as "not checked" rather than failing the job.
                signature: SignatureStatus::from_word(&r.get::<_, String>(6)?)
                    .unwrap_or(SignatureStatus::Skipped),
                timestamp: TimestampStatus::from_word(&r.get::<_, String>(7)?)
                    .unwrap_or(TimestampStatus::Skipped),
                duplicate: DuplicateStatus::from_word(&r.get::<_, String>(8)?)
                    .unwrap_or(DuplicateStatus::Skipped),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// What the job API said about a job, oldest first.
    pub fn polls_for(&self, job_id: &str) -> Result<Vec<Poll>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, job_id, endpoint, at_ms, status, state, latency_ms, error, result_url, expires_at_ms, output_status
             FROM polls WHERE job_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![job_id], |r| {
            Ok(Poll {
                id: r.get(0)?,
                job_id: r.get(1)?,
                endpoint: r.get(2)?,
                at_ms: r.get(3)?,
                status: r.get(4)?,
                state: r.get(5)?,
                latency_ms: r.get::<_, i64>(6)?.max(0) as u64,
                error: r.get(7)?,
                result_url: r.get(8)?,
                expires_at_ms: r.get(9)?,
                output_status: r.get(10)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The endpoint a job belongs to: its newest delivery's, else the one last polled for it.
    pub fn job_endpoint(&self, job_id: &str) -> Result<Option<String>, StoreError> {
        let from_deliveries: Option<String> = self
            .conn
            .prepare_cached(
                "SELECT endpoint FROM deliveries WHERE job_id = ?1 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![job_id], |r| r.get(0))
            .optional()?;
        if from_deliveries.is_some() {
            return Ok(from_deliveries);
        }
        Ok(self
            .conn
            .prepare_cached(
                "SELECT endpoint FROM polls WHERE job_id = ?1 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![job_id], |r| r.get(0))
            .optional()?)
    }

    /// Which of `conditions` delivery `id` meets, as stored: the list's filter language decides
    /// forwarding rules with the very SQL that filters the list. A condition of free text
    /// would read the text index, which fills later: rules refuse it (`Filter::parse_rule`).
    pub fn meets(&self, id: i64, conditions: &[Filter]) -> Result<Vec<bool>, StoreError> {
        Ok(query::meets(&self.conn, id, conditions)?)
    }

    /// How many stored deliveries matched none of their endpoint's forwarding rules.
    pub fn count_unrouted(&self) -> Result<i64, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM deliveries WHERE unrouted IS NOT NULL")?;
        Ok(stmt.query_row([], |r| r.get(0))?)
    }

    /// Whether delivery `id` is stored.
    pub fn exists(&self, id: i64) -> Result<bool, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM deliveries WHERE id = ?1)")?;
        Ok(stmt.query_row(params![id], |r| r.get(0))?)
    }

    /// The outbound attempts made from a delivery, oldest first.
    pub fn attempts_for(&self, delivery_id: i64) -> Result<Vec<Attempt>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, delivery_id, kind, url, sent_at_ms, request_headers, request_body, status, response_headers,
                response_body, latency_ms, error, job_id, attempt_no FROM attempts WHERE delivery_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![delivery_id], attempt_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The attempts sent about a job (the provider simulator's webhooks), oldest first.
    pub fn attempts_for_job(&self, job_id: &str) -> Result<Vec<Attempt>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, delivery_id, kind, url, sent_at_ms, request_headers, request_body, status, response_headers,
                response_body, latency_ms, error, job_id, attempt_no FROM attempts WHERE job_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![job_id], attempt_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

/// An attempt from its row (the columns as the attempt queries select them).
fn attempt_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Attempt> {
    Ok(Attempt {
        id: r.get(0)?,
        delivery_id: r.get(1)?,
        kind: AttemptKind::from_word(&r.get::<_, String>(2)?),
        url: r.get(3)?,
        sent_at_ms: r.get(4)?,
        request_headers: decode_headers(&r.get::<_, Vec<u8>>(5)?).unwrap_or_default(),
        request_body: r.get(6)?,
        status: r.get(7)?,
        response_headers: decode_headers(&r.get::<_, Vec<u8>>(8)?).unwrap_or_default(),
        response_body: r.get(9)?,
        latency_ms: r.get::<_, i64>(10)?.max(0) as u64,
        error: r.get(11)?,
        job_id: r.get(12)?,
        attempt_number: r.get(13)?,
    })
}

/// Test support: what the integration tests assert on (`tests/*.rs` build against the library
/// as a user's program does, so these stay public); nothing else calls them.
#[doc(hidden)]
impl Reader {
    /// How many attempts of a kind are stored.
    pub fn count_attempts(&self, kind: AttemptKind) -> Result<i64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM attempts WHERE kind = ?1",
            params![kind.as_str()],
            |r| r.get(0),
        )?)
    }

    /// How many deliveries have each duplicate status.
    pub fn count_duplicates(&self, status: DuplicateStatus) -> Result<i64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM deliveries WHERE dup_status = ?1",
            params![status.as_str()],
            |r| r.get(0),
        )?)
    }

    /// Runs `PRAGMA integrity_check`; `Ok(())` when SQLite answers `ok`.
    pub fn integrity_check(&self) -> Result<(), StoreError> {
        let answer: String = self
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        if answer == "ok" {
            Ok(())
        } else {
            Err(StoreError::Damaged {
                id: 0,
                what: answer,
            })
        }
    }
}
