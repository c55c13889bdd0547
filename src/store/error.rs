//! What can go wrong with the store, each variant a sentence a person can act on.

use std::path::PathBuf;

/// Errors from the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file could not be opened or set up.
    #[error("cannot open the store {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The file was written by a newer hookscope.
    #[error(
        "the store {path} has schema version {found}, newer than this hookscope supports ({supported}); upgrade hookscope or use another --data-dir"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// An older store on a read-only volume: it cannot be brought up to date where it is.
    #[error(
        "the store {path} has schema version {found}, older than this hookscope reads ({supported}), and sits on a read-only volume, so it cannot be brought up to date there: copy the data dir somewhere writable and open the copy"
    )]
    OlderReadOnly {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: i64,
        /// The version this build reads.
        supported: i64,
    },
    /// A query failed.
    #[error("store query failed: {0}")]
    Query(#[from] rusqlite::Error),
    /// A write failed; the delivery was not stored (and must not be acknowledged).
    #[error("store write failed: {0}")]
    Write(String),
    /// A relayed delivery whose sequence number is stored already (a reconnect sent it again):
    /// skipped, not counted a duplicate of its event.
    #[error("relayed delivery #{0} is stored already")]
    RelayRepeat(u64),
    /// A relayed delivery whose predecessor in its stream was not stored: not stored either, so
    /// that the stream starts again after the cursor.
    #[error("relayed delivery #{seq} follows one that was not stored (stored up to #{cursor})")]
    RelayGap {
        /// Its sequence number.
        seq: u64,
        /// The relay's cursor.
        cursor: u64,
    },
    /// The writer thread has stopped.
    #[error("the store writer has stopped")]
    WriterGone,
    /// Another process holds a lock on the database.
    #[error(
        "the store {path} is locked by another process (a program holding a write transaction open on it, such as a sqlite3 shell inside BEGIN EXCLUSIVE); close it and start hookscope again"
    )]
    Locked {
        /// The database file.
        path: PathBuf,
    },
    /// Another hookscope captures into the same data dir (it holds `hookscope.lock`).
    #[error(
        "another hookscope ({holder}) is already capturing into {dir}; stop it, or give this one another --data-dir"
    )]
    InUse {
        /// The data dir, symlinks resolved.
        dir: PathBuf,
        /// Who holds the lock ("process 4242").
        holder: String,
    },
    /// The data dir cannot be written (a read-only volume, permissions, a dir that vanished).
    #[error(
        "the data dir {dir} cannot be written ({reason}); hookscope cannot store deliveries there: make it writable, or give another --data-dir"
    )]
    Unwritable {
        /// The data dir.
        dir: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// The store refuses writes for now (disk full, read-only, gone): the sentence says which
    /// and what happens meanwhile.
    #[error("{0}")]
    Refused(String),
    /// The file is not a usable database (garbage, truncated, corrupt).
    #[error("the store {path} is damaged: {what}")]
    DamagedFile {
        /// The database file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// A row could not be decoded.
    #[error("delivery {id} is damaged in the store: {what}")]
    Damaged {
        /// The delivery id.
        id: i64,
        /// What could not be read.
        what: String,
    },
}
