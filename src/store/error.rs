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
    /// A query failed.
    #[error("store query failed: {0}")]
    Query(#[from] rusqlite::Error),
    /// A write failed; the delivery was not stored (and must not be acknowledged).
    #[error("store write failed: {0}")]
    Write(String),
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
