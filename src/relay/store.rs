//! The relay's store: one SQLite file in its data dir (`relay.sqlite`), with SQLite's own
//! durability (WAL, `synchronous = FULL`): the channels (name, the hash of the subscriber
//! token, the recipients, the retention) and each channel's sealed deliveries in sequence
//! order. Only the channel, the sequence number, the time received and the size are plain.
//!
//! One writer thread takes every waiting insert into one transaction and answers each after
//! the synced commit (group commit), so a provider is acknowledged only once its delivery is on
//! disk. The commands that manage channels (`relay channel …`) open the file themselves, while
//! the relay runs; the relay reads what they changed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, params};
use tokio::sync::{mpsc, oneshot};

/// The relay store's file, in its data dir.
pub const FILE: &str = "relay.sqlite";

/// How long a delivery a subscriber acknowledged is kept for the others (a team's other
/// laptops) before the retention drops it.
pub const KEEP_ACKNOWLEDGED: Duration = Duration::from_secs(3600);

/// The most inserts one transaction takes.
const MAX_BATCH: usize = 256;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS channels (
    name TEXT PRIMARY KEY,
    uid TEXT NOT NULL,
    token_hash BLOB NOT NULL,
    recipients TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    keep_days INTEGER NOT NULL,
    keep_bytes INTEGER NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0,
    stored_bytes INTEGER NOT NULL DEFAULT 0,
    acked_seq INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS deliveries (
    channel TEXT NOT NULL,
    seq INTEGER NOT NULL,
    received_ms INTEGER NOT NULL,
    size INTEGER NOT NULL,
    header_id INTEGER,
    sealed BLOB NOT NULL,
    PRIMARY KEY (channel, seq)
);
CREATE TABLE IF NOT EXISTS headers (
    id INTEGER PRIMARY KEY,
    header BLOB NOT NULL,
    created_ms INTEGER NOT NULL
);
";

/// Errors of the relay's store.
#[derive(Debug, thiserror::Error)]
pub enum RelayStoreError {
    /// SQLite failed.
    #[error("the relay's store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// No such channel.
    #[error("no channel named {0:?}")]
    NoChannel(String),
    /// The channel exists already.
    #[error("a channel named {0:?} exists already")]
    Exists(String),
    /// The channel holds as many unacknowledged bytes as its quota allows.
    #[error("channel {channel:?} is over its quota ({stored} bytes kept, {quota} allowed)")]
    OverQuota {
        /// The channel.
        channel: String,
        /// Bytes kept now.
        stored: i64,
        /// Its quota.
        quota: i64,
    },
    /// The transaction that held it failed (nothing of it was stored).
    #[error("the relay's store could not commit: {0}")]
    Failed(String),
    /// The data dir cannot be made.
    #[error("the relay's data dir: {0}")]
    Io(#[from] std::io::Error),
    /// The writer thread is gone (the relay is stopping).
    #[error("the relay's store is closed")]
    Closed,
    /// The NATS JetStream cluster failed or did not answer in time.
    #[error("{0}")]
    Cluster(String),
}

/// A channel as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// Its name.
    pub name: String,
    /// Random, made with it: a channel removed and made again under the same name is another
    /// channel, whose sequence numbers start over (a subscriber's cursor must too).
    pub uid: String,
    /// SHA-256 of its subscriber token.
    pub token_hash: Vec<u8>,
    /// The recipients' keys (`age1…`).
    pub recipients: Vec<String>,
    /// When it was made.
    pub created_ms: i64,
    /// Deliveries older than this many days are dropped.
    pub keep_days: u32,
    /// The most bytes of unacknowledged deliveries kept; past it, ingest is refused (429).
    pub keep_bytes: u64,
    /// The newest sequence number given.
    pub last_seq: u64,
    /// Bytes of deliveries kept now.
    pub stored_bytes: u64,
    /// The newest sequence number a subscriber acknowledged.
    pub acked_seq: u64,
}

/// A stored delivery as subscribers get it.
#[derive(Debug, Clone)]
pub struct Sealed {
    /// Its sequence number in its channel.
    pub seq: u64,
    /// When the relay took it (ms since the epoch).
    pub received_ms: i64,
    /// The request's size before sealing.
    pub size: u64,
    /// The age file.
    pub sealed: Vec<u8>,
}

/// Opens (creating) the store file in `data_dir`.
pub fn open(data_dir: &Path) -> Result<Connection, RelayStoreError> {
    std::fs::create_dir_all(data_dir)?;
    let conn = Connection::open(data_dir.join(FILE))?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "secure_delete", "ON")?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

/// A read-only connection, for a subscriber's catch-up.
pub fn open_reader(data_dir: &Path) -> Result<Connection, RelayStoreError> {
    let conn = Connection::open_with_flags(
        data_dir.join(FILE),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_secs(10))?;
    Ok(conn)
}

fn channel_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Channel> {
    let recipients: String = row.get(2)?;
    Ok(Channel {
        name: row.get(0)?,
        token_hash: row.get(1)?,
        recipients: recipients.lines().map(str::to_string).collect(),
        created_ms: row.get(3)?,
        keep_days: row.get(4)?,
        keep_bytes: row.get::<_, i64>(5)? as u64,
        last_seq: row.get::<_, i64>(6)? as u64,
        stored_bytes: row.get::<_, i64>(7)? as u64,
        acked_seq: row.get::<_, i64>(8)? as u64,
        uid: row.get(9)?,
    })
}

const CHANNEL_COLUMNS: &str = "name, token_hash, recipients, created_ms, keep_days, keep_bytes, last_seq, stored_bytes, acked_seq, uid";

/// Every channel, by name.
pub fn channels(conn: &Connection) -> Result<Vec<Channel>, RelayStoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {CHANNEL_COLUMNS} FROM channels ORDER BY name"
    ))?;
    let rows = stmt.query_map([], channel_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// One channel.
pub fn channel(conn: &Connection, name: &str) -> Result<Option<Channel>, RelayStoreError> {
    Ok(conn
        .query_row(
            &format!("SELECT {CHANNEL_COLUMNS} FROM channels WHERE name = ?1"),
            [name],
            channel_row,
        )
        .optional()?)
}

/// Adds a channel.
pub fn add_channel(conn: &Connection, channel: &Channel) -> Result<(), RelayStoreError> {
    let added = conn.execute(
        "INSERT OR IGNORE INTO channels (name, token_hash, recipients, created_ms, keep_days, keep_bytes, uid)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            channel.name,
            channel.token_hash,
            channel.recipients.join("\n"),
            channel.created_ms,
            channel.keep_days,
            channel.keep_bytes as i64,
            channel.uid
        ],
    )?;
    if added == 0 {
        return Err(RelayStoreError::Exists(channel.name.clone()));
    }
    Ok(())
}

/// Changes a channel's token hash or recipients.
pub fn update_channel(
    conn: &Connection,
    name: &str,
    token_hash: &[u8],
    recipients: &[String],
) -> Result<(), RelayStoreError> {
    let changed = conn.execute(
        "UPDATE channels SET token_hash = ?2, recipients = ?3 WHERE name = ?1",
        params![name, token_hash, recipients.join("\n")],
    )?;
    if changed == 0 {
        return Err(RelayStoreError::NoChannel(name.to_string()));
    }
    Ok(())
}

/// Removes a channel and every delivery it kept.
pub fn remove_channel(conn: &Connection, name: &str) -> Result<u64, RelayStoreError> {
    let tx = conn.unchecked_transaction()?;
    if tx.execute("DELETE FROM channels WHERE name = ?1", [name])? == 0 {
        return Err(RelayStoreError::NoChannel(name.to_string()));
    }
    let dropped = tx.execute("DELETE FROM deliveries WHERE channel = ?1", [name])?;
    tx.commit()?;
    Ok(dropped as u64)
}

/// Up to `limit` deliveries (and about `max_bytes`) after `after`, in sequence order.
pub fn read_after(
    conn: &Connection,
    channel: &str,
    after: u64,
    limit: usize,
    max_bytes: usize,
) -> Result<Vec<Sealed>, RelayStoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT d.seq, d.received_ms, d.size, h.header, d.sealed
         FROM deliveries d LEFT JOIN headers h ON h.id = d.header_id
         WHERE d.channel = ?1 AND d.seq > ?2 ORDER BY d.seq LIMIT ?3",
    )?;
    let mut rows = stmt.query(params![channel, after as i64, limit as i64])?;
    let (mut out, mut bytes) = (Vec::new(), 0usize);
    while let Some(row) = rows.next()? {
        // The minute's header, then the delivery's own nonce and payload: the age file whole.
        let mut sealed: Vec<u8> = row.get::<_, Option<Vec<u8>>>(3)?.unwrap_or_default();
        sealed.extend_from_slice(&row.get::<_, Vec<u8>>(4)?);
        bytes += sealed.len();
        out.push(Sealed {
            seq: row.get::<_, i64>(0)? as u64,
            received_ms: row.get(1)?,
            size: row.get::<_, i64>(2)? as u64,
            sealed,
        });
        if bytes >= max_bytes {
            break;
        }
    }
    Ok(out)
}

/// A delivery to store.
struct Insert {
    channel: String,
    received_ms: i64,
    size: u64,
    sealed: Vec<u8>,
    reply: oneshot::Sender<Result<u64, RelayStoreError>>,
}

enum Job {
    Insert(Insert),
    Ack {
        channel: String,
        seq: u64,
    },
    Retain {
        now_ms: i64,
        reply: oneshot::Sender<Result<u64, RelayStoreError>>,
    },
}

/// The handle on the writer thread.
#[derive(Clone)]
pub struct Writer {
    jobs: mpsc::Sender<Job>,
}

/// Starts the writer on `data_dir`'s store. Its thread ends once every [`Writer`] is gone;
/// nothing waits for it, since a delivery is answered only after its commit.
pub fn start_writer(data_dir: &Path) -> Result<Writer, RelayStoreError> {
    let conn = open(data_dir)?;
    let (jobs, receiver) = mpsc::channel(4096);
    std::thread::Builder::new()
        .name("hookscope-relay-writer".into())
        .spawn(move || write_loop(conn, receiver))?;
    Ok(Writer { jobs })
}

impl Writer {
    /// Stores a sealed delivery; answers its sequence number once the commit is synced.
    pub async fn insert(
        &self,
        channel: &str,
        received_ms: i64,
        size: u64,
        sealed: Vec<u8>,
    ) -> Result<u64, RelayStoreError> {
        let (reply, answer) = oneshot::channel();
        let insert = Insert {
            channel: channel.to_string(),
            received_ms,
            size,
            sealed,
            reply,
        };
        self.jobs
            .send(Job::Insert(insert))
            .await
            .map_err(|_| RelayStoreError::Closed)?;
        answer.await.map_err(|_| RelayStoreError::Closed)?
    }

    /// Records that a subscriber stored everything up to `seq`.
    pub async fn ack(&self, channel: &str, seq: u64) {
        let channel = channel.to_string();
        let _ = self.jobs.send(Job::Ack { channel, seq }).await;
    }

    /// Drops what each channel's retention no longer keeps; answers how many.
    pub async fn retain(&self, now_ms: i64) -> Result<u64, RelayStoreError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job::Retain { now_ms, reply })
            .await
            .map_err(|_| RelayStoreError::Closed)?;
        answer.await.map_err(|_| RelayStoreError::Closed)?
    }
}

/// The age headers stored, by their bytes: a channel's header changes once a minute, so each
/// is stored once and its deliveries keep only the rest.
#[derive(Default)]
struct Headers(std::collections::HashMap<Vec<u8>, i64>);

impl Headers {
    /// The id of `header`, stored now in the caller's transaction when it is new.
    fn id(&mut self, tx: &Connection, header: &[u8], now_ms: i64) -> rusqlite::Result<i64> {
        if let Some(id) = self.0.get(header) {
            return Ok(*id);
        }
        tx.prepare_cached("INSERT INTO headers (header, created_ms) VALUES (?1, ?2)")?
            .execute(params![header, now_ms])?;
        let id = tx.last_insert_rowid();
        if self.0.len() >= 256 {
            self.0.clear();
        }
        self.0.insert(header.to_vec(), id);
        Ok(id)
    }
}

fn write_loop(conn: Connection, mut receiver: mpsc::Receiver<Job>) {
    let mut headers = Headers::default();
    while let Some(job) = receiver.blocking_recv() {
        match job {
            Job::Insert(first) => {
                let mut batch = vec![first];
                let mut next = None;
                while batch.len() < MAX_BATCH {
                    match receiver.try_recv() {
                        Ok(Job::Insert(insert)) => batch.push(insert),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                insert_batch(&conn, batch, &mut headers);
                if let Some(job) = next {
                    run_other(&conn, job, &mut headers);
                }
            }
            other => run_other(&conn, other, &mut headers),
        }
    }
}

fn run_other(conn: &Connection, job: Job, headers: &mut Headers) {
    match job {
        Job::Insert(insert) => insert_batch(conn, vec![insert], headers),
        Job::Ack { channel, seq } => {
            let acked = conn.execute(
                "UPDATE channels SET acked_seq = MAX(acked_seq, MIN(?2, last_seq)) WHERE name = ?1",
                params![channel, seq as i64],
            );
            if let Err(e) = acked {
                eprintln!("relay: an acknowledgement of channel {channel} was not recorded: {e}");
            }
        }
        Job::Retain { now_ms, reply } => {
            // The retention drops headers no delivery needs: the ids kept here may go.
            headers.0.clear();
            let _ = reply.send(retain(conn, now_ms));
        }
    }
}

/// Stores a batch in one transaction; each insert gets its sequence number, or its own refusal
/// (no channel, over quota), or the transaction's failure.
fn insert_batch(conn: &Connection, batch: Vec<Insert>, headers: &mut Headers) {
    let mut outcomes: Vec<Result<u64, RelayStoreError>> = Vec::with_capacity(batch.len());
    let committed = (|| -> rusqlite::Result<()> {
        // IMMEDIATE: the sequence numbers are read and given under the write lock.
        let tx =
            rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
        let mut seen: std::collections::HashMap<&str, (u64, u64, u64)> = Default::default();
        for insert in &batch {
            outcomes.push(insert_one(&tx, insert, &mut seen, headers)?);
        }
        for (channel, (seq, bytes, _)) in &seen {
            tx.execute(
                "UPDATE channels SET last_seq = ?2, stored_bytes = ?3 WHERE name = ?1",
                params![channel, *seq as i64, *bytes as i64],
            )?;
        }
        tx.commit()
    })();
    if let Err(e) = &committed {
        // A header stored in the rolled-back transaction is not there.
        headers.0.clear();
        eprintln!(
            "relay: a batch of {} deliveries could not be stored: {e}",
            batch.len()
        );
    }
    let mut outcomes = outcomes.into_iter();
    for insert in batch {
        let answer = match &committed {
            Ok(()) => outcomes.next().unwrap_or(Err(RelayStoreError::Closed)),
            Err(e) => Err(RelayStoreError::Failed(e.to_string())),
        };
        let _ = insert.reply.send(answer);
    }
}

/// One insert inside the batch's transaction; `seen` holds each channel's last sequence
/// number, stored bytes and quota as the batch has them.
fn insert_one<'a>(
    tx: &Connection,
    insert: &'a Insert,
    seen: &mut std::collections::HashMap<&'a str, (u64, u64, u64)>,
    headers: &mut Headers,
) -> rusqlite::Result<Result<u64, RelayStoreError>> {
    let state = match seen.get_mut(insert.channel.as_str()) {
        Some(state) => state,
        None => {
            let row: Option<(i64, i64, i64)> = tx
                .query_row(
                    "SELECT last_seq, stored_bytes, keep_bytes FROM channels WHERE name = ?1",
                    [&insert.channel],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let Some((seq, bytes, quota)) = row else {
                return Ok(Err(RelayStoreError::NoChannel(insert.channel.clone())));
            };
            seen.entry(&insert.channel)
                .or_insert((seq as u64, bytes as u64, quota as u64))
        }
    };
    let (header_id, rest) = match crate::relay::seal::split_header(&insert.sealed) {
        Some((header, rest)) => (Some(headers.id(tx, header, insert.received_ms)?), rest),
        None => (None, insert.sealed.as_slice()),
    };
    let size = rest.len() as u64;
    if state.1 + size > state.2 {
        return Ok(Err(RelayStoreError::OverQuota {
            channel: insert.channel.clone(),
            stored: state.1 as i64,
            quota: state.2 as i64,
        }));
    }
    let seq = state.0 + 1;
    tx.prepare_cached(
        "INSERT INTO deliveries (channel, seq, received_ms, size, header_id, sealed) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        insert.channel,
        seq as i64,
        insert.received_ms,
        insert.size as i64,
        header_id,
        rest
    ])?;
    state.0 = seq;
    state.1 += size;
    Ok(Ok(seq))
}

/// Drops deliveries older than their channel keeps, and acknowledged ones older than
/// [`KEEP_ACKNOWLEDGED`].
fn retain(conn: &Connection, now_ms: i64) -> Result<u64, RelayStoreError> {
    let tx = conn.unchecked_transaction()?;
    let mut dropped = 0;
    for channel in channels(&tx)? {
        let name = channel.name.as_str();
        let by_age = seq_received_before(
            &tx,
            name,
            now_ms - i64::from(channel.keep_days) * 86_400_000,
        )?;
        let acked_before = now_ms - KEEP_ACKNOWLEDGED.as_millis() as i64;
        let by_ack = channel
            .acked_seq
            .min(seq_received_before(&tx, name, acked_before)?);
        let upto = by_age.max(by_ack) as i64;
        if upto == 0 {
            continue;
        }
        let (count, bytes): (i64, i64) = tx.query_row(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(sealed)), 0) FROM deliveries WHERE channel = ?1 AND seq <= ?2",
            params![name, upto],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        tx.execute(
            "DELETE FROM deliveries WHERE channel = ?1 AND seq <= ?2",
            params![name, upto],
        )?;
        tx.execute(
            "UPDATE channels SET stored_bytes = MAX(stored_bytes - ?2, 0) WHERE name = ?1",
            params![name, bytes],
        )?;
        dropped += count as u64;
    }
    // Headers no delivery needs: older than every channel's oldest delivery (each channel's
    // first row, through the primary key), with two minutes of margin.
    let oldest: Option<i64> = tx.query_row(
        "SELECT MIN((SELECT received_ms FROM deliveries d WHERE d.channel = c.name ORDER BY d.seq LIMIT 1))
         FROM channels c",
        [],
        |r| r.get(0),
    )?;
    tx.execute(
        "DELETE FROM headers WHERE created_ms < ?1",
        [oldest.unwrap_or(now_ms) - 120_000],
    )?;
    tx.commit()?;
    Ok(dropped)
}

/// The newest sequence number of `channel` received before `ms` (0: none), by bisection over
/// the sequence numbers through the primary key (they follow the order the relay took its
/// deliveries in): no index on the time, which every insert would pay for.
fn seq_received_before(conn: &Connection, channel: &str, ms: i64) -> Result<u64, RelayStoreError> {
    let at_or_after = |seq: i64| -> Result<Option<(i64, i64)>, RelayStoreError> {
        Ok(conn
            .prepare_cached(
                "SELECT seq, received_ms FROM deliveries WHERE channel = ?1 AND seq >= ?2 ORDER BY seq LIMIT 1",
            )?
            .query_row(params![channel, seq], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    };
    let (lowest, highest): (Option<i64>, Option<i64>) = conn.query_row(
        "SELECT MIN(seq), MAX(seq) FROM deliveries WHERE channel = ?1",
        [channel],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let (Some(mut lo), Some(mut hi)) = (lowest, highest) else {
        return Ok(0);
    };
    if at_or_after(lo)?.is_none_or(|(_, at)| at >= ms) {
        return Ok(0);
    }
    // Invariant: the delivery at `lo` was received before `ms`; none after `hi` was.
    while lo < hi {
        let mid = lo + (hi - lo + 1) / 2;
        match at_or_after(mid)? {
            Some((seq, at)) if at < ms => lo = seq,
            _ => hi = mid - 1,
        }
    }
    Ok(lo as u64)
}

/// The store's path in `data_dir`.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(name: &str, keep_bytes: u64) -> Channel {
        Channel {
            name: name.into(),
            uid: format!("uid-{name}"),
            token_hash: vec![1; 32],
            recipients: vec!["age1x".into()],
            created_ms: 0,
            keep_days: 7,
            keep_bytes,
            last_seq: 0,
            stored_bytes: 0,
            acked_seq: 0,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sequence_numbers_follow_each_channel_and_quota_refuses() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = open(dir.path()).expect("opens");
        add_channel(&conn, &channel("a", 1 << 20)).expect("a");
        add_channel(&conn, &channel("b", 10)).expect("b");
        assert!(matches!(
            add_channel(&conn, &channel("a", 1)),
            Err(RelayStoreError::Exists(_))
        ));
        let writer = start_writer(dir.path()).expect("writer");
        let sends = (0..50).map(|i| {
            let writer = writer.clone();
            async move { writer.insert("a", i, 3, vec![i as u8; 3]).await }
        });
        let mut seqs: Vec<u64> = futures_join(sends).await;
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=50).collect::<Vec<_>>());
        assert_eq!(writer.insert("b", 0, 8, vec![0; 8]).await.expect("fits"), 1);
        assert!(matches!(
            writer.insert("b", 0, 8, vec![0; 8]).await,
            Err(RelayStoreError::OverQuota { .. })
        ));
        assert!(matches!(
            writer.insert("nope", 0, 1, vec![0]).await,
            Err(RelayStoreError::NoChannel(_))
        ));
        let read = read_after(&conn, "a", 45, 100, 1 << 20).expect("reads");
        assert_eq!(
            read.iter().map(|s| s.seq).collect::<Vec<_>>(),
            [46, 47, 48, 49, 50]
        );
        writer.ack("a", 1000).await;
        // Acknowledged everything (the ack is capped at the last sequence number), received at
        // the epoch: all dropped.
        assert_eq!(writer.retain(10_000_000).await.expect("retains"), 50);
        let a = super::channel(&conn, "a").expect("reads").expect("a");
        assert_eq!((a.last_seq, a.acked_seq, a.stored_bytes), (50, 50, 0));
        // A sequence number never goes back.
        assert_eq!(writer.insert("a", 0, 1, vec![1]).await.expect("stored"), 51);
    }

    /// The bisection finds the newest delivery received before a time, across gaps left by
    /// deletes, through the primary key alone.
    #[test]
    fn the_newest_before_a_time_is_found_across_gaps() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = open(dir.path()).expect("opens");
        for seq in (1..=100).filter(|s| s % 7 != 0) {
            conn.execute(
                "INSERT INTO deliveries (channel, seq, received_ms, size, sealed) VALUES ('a', ?1, ?2, 1, x'00')",
                params![seq, seq * 10],
            )
            .expect("row");
        }
        assert_eq!(seq_received_before(&conn, "a", 5).expect("reads"), 0);
        assert_eq!(
            seq_received_before(&conn, "a", 71).expect("reads"),
            6,
            "7 is a gap"
        );
        assert_eq!(
            seq_received_before(&conn, "a", 701).expect("reads"),
            69,
            "70 is a gap"
        );
        assert_eq!(seq_received_before(&conn, "a", 555).expect("reads"), 55);
        assert_eq!(
            seq_received_before(&conn, "a", 1_000_000).expect("reads"),
            100
        );
        assert_eq!(
            seq_received_before(&conn, "b", 1_000_000).expect("reads"),
            0
        );
    }

    async fn futures_join<
        F: std::future::Future<Output = Result<u64, RelayStoreError>> + Send + 'static,
    >(
        futures: impl Iterator<Item = F>,
    ) -> Vec<u64> {
        let handles: Vec<_> = futures.map(tokio::spawn).collect();
        let mut out = Vec::new();
        for handle in handles {
            out.push(handle.await.expect("joins").expect("stored"));
        }
        out
    }
}
