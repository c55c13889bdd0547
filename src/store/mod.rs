//! The local SQLite store: every delivery, its exact bytes and its verdicts, kept across runs.
//!
//! One writer thread owns the only write connection. It takes jobs from a bounded channel,
//! commits them in small batches (group commit) in WAL mode with `synchronous = FULL`, and only
//! then answers each job: the receiver acknowledges a delivery after that answer, so a 2xx from
//! hookscope means the capture is on disk. Duplicates are decided inside the writer against a
//! unique index on (endpoint, event id), so concurrent retries of one event yield one `first`.
//! Readers open their own connections and never wait for the writer (WAL).
//!
//! The files follow those seams: [`schema`] (tables and migrations), [`writer`] (the writer
//! thread, group commit, the text index, maintenance), [`reader`] (queries), [`query`] (the
//! filter language as SQL), [`records`] (the row types), [`recovery`] (damaged files kept aside)
//! and [`error`].

use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

pub mod error;
pub mod query;
pub mod reader;
pub mod records;
pub mod recovery;
pub mod schema;
pub mod writer;

pub use error::StoreError;
pub use reader::Reader;
pub use records::{ListRow, NewRecord, StoredDelivery};
pub use writer::Maintenance;

use recovery::{check_not_truncated, classify};
use schema::{migrate, open_connection};
use writer::{WRITE_QUEUE, WriteJob, writer_loop};

/// The store: a path and the channel to its writer thread.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    writer: StoreWriter,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A cloneable handle that submits writes to the writer thread.
#[derive(Debug, Clone)]
pub struct StoreWriter {
    sender: mpsc::Sender<WriteJob>,
}

impl Store {
    /// Opens (or creates) the store at `path`, migrates it, and starts its writer thread.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Open {
                path: path.to_path_buf(),
                source: rusqlite::Error::ToSqlConversionFailure(Box::new(e)),
            })?;
        }
        check_not_truncated(path)?;
        let conn = open_connection(path, false).map_err(|e| classify(e, path))?;
        migrate(&conn, path).map_err(|e| classify(e, path))?;
        // Touch the newest rows, so a file damaged in its last pages is noticed now rather
        // than on the first delivery.
        conn.query_row("SELECT MAX(id) FROM deliveries", [], |r| {
            r.get::<_, Option<i64>>(0)
        })
        .map_err(|e| classify(StoreError::Query(e), path))?;
        let (sender, receiver) = mpsc::channel(WRITE_QUEUE);
        let thread = std::thread::Builder::new()
            .name("hookscope-store-writer".into())
            .spawn(move || writer_loop(conn, receiver))
            .map_err(|e| StoreError::Write(format!("cannot start the writer thread: {e}")))?;
        Ok(Store {
            path: path.to_path_buf(),
            writer: StoreWriter { sender },
            thread: Some(thread),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handle for submitting writes.
    pub fn writer(&self) -> StoreWriter {
        self.writer.clone()
    }

    /// A new read connection.
    pub fn reader(&self) -> Result<Reader, StoreError> {
        Reader::open(&self.path)
    }
}

impl Store {
    /// Stops accepting writes from this handle and waits for the writer thread to finish what
    /// it holds. Returns once every other [`StoreWriter`] clone has been dropped too.
    pub fn shutdown(mut self) {
        let (dead, _) = mpsc::channel(1);
        self.writer = StoreWriter { sender: dead };
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
