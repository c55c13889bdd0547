//! The store as the rest of hookscope holds it: a path, the writer thread, and cloneable
//! handles that submit writes to it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::domain::attempt::Attempt;
use crate::store::error::StoreError;
use crate::store::health::Health;
use crate::store::lock::CaptureLock;
use crate::store::maintain::Maintenance;
use crate::store::reader::Reader;
use crate::store::records::{NewRecord, StoredDelivery};
use crate::store::recovery::{check_not_truncated, classify, move_aside};
use crate::store::schema::{migrate, open_connection};
use crate::store::writer::{WRITE_QUEUE, WriteJob, writer_loop};

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
    health: Arc<Health>,
    path: Arc<Path>,
}

impl Store {
    /// Opens (or creates) the store at `path`, migrates it, and starts its writer thread, for a
    /// command that writes beside a capturing hookscope or alone (`import`, `resend`, `simulate`,
    /// `reconcile`): its writes go through SQLite's own lock. It runs no text indexer (its bulk
    /// writes index their own rows); the capturing process's indexer indexes the rest.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::start(path, false)
    }

    /// [`Store::open`] for the process that captures (holding the data dir's [`CaptureLock`]):
    /// it also runs the text indexer. If the file is damaged (not a database, truncated,
    /// corrupt, or from a newer hookscope), keeps it aside, renamed and never deleted, and
    /// continues on a fresh store, returning the sentence that says so.
    pub fn open_capturing(
        path: &Path,
        _lock: &CaptureLock,
    ) -> Result<(Store, Option<String>), StoreError> {
        match Store::start(path, true) {
            Ok(store) => Ok((store, None)),
            Err(err @ (StoreError::DamagedFile { .. } | StoreError::NewerSchema { .. })) => {
                let (aside, reason) = move_aside(path, &err)?;
                let store = Store::start(path, true)?;
                let sentence = format!(
                    "The store {} could not be used ({reason}); it was kept aside as {} and hookscope continues on a fresh store.",
                    path.display(),
                    aside.display()
                );
                Ok((store, Some(sentence)))
            }
            Err(other) => Err(other),
        }
    }

    fn start(path: &Path, index: bool) -> Result<Store, StoreError> {
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
        let health = Arc::new(Health::default());
        let thread = {
            let health = Arc::clone(&health);
            let path = path.to_path_buf();
            std::thread::Builder::new()
                .name("hookscope-store-writer".into())
                .spawn(move || writer_loop(conn, receiver, &path, &health, index))
                .map_err(|e| StoreError::Write(format!("cannot start the writer thread: {e}")))?
        };
        Ok(Store {
            path: path.to_path_buf(),
            writer: StoreWriter {
                sender,
                health,
                path: Arc::from(path),
            },
            thread: Some(thread),
        })
    }

    /// Opens an existing store for reading only, when its dir cannot be written: every write
    /// handed to it is refused with `reason` (the window shows the history and does not
    /// capture). Fails when the file cannot even be read.
    pub fn open_read_only(path: &Path, reason: &str) -> Result<Store, StoreError> {
        let reader = Reader::open(path)?;
        drop(reader);
        let (sender, mut receiver) = mpsc::channel::<WriteJob>(WRITE_QUEUE);
        let trouble = crate::store::health::Trouble::ReadOnly(reason.to_string());
        let refusal = trouble.sentence(path);
        let health = Arc::new(Health::default());
        health.failed(trouble, 0);
        let thread = {
            let health = Arc::clone(&health);
            std::thread::Builder::new()
                .name("hookscope-store-writer".into())
                .spawn(move || {
                    while let Some(job) = receiver.blocking_recv() {
                        job.refuse(&refusal, &health);
                    }
                })
                .map_err(|e| StoreError::Write(format!("cannot start the writer thread: {e}")))?
        };
        Ok(Store {
            path: path.to_path_buf(),
            writer: StoreWriter {
                sender,
                health,
                path: Arc::from(path),
            },
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
        self.writer = StoreWriter {
            sender: dead,
            health: Arc::clone(&self.writer.health),
            path: Arc::clone(&self.writer.path),
        };
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl StoreWriter {
    /// Whether writes succeed now, and why not.
    pub fn health(&self) -> crate::store::health::HealthReport {
        self.health.report()
    }

    /// The shared health, for a front end that outlives this handle.
    pub fn health_handle(&self) -> Arc<Health> {
        Arc::clone(&self.health)
    }

    /// Writes a delivery and returns it as stored, once its transaction has committed, synced:
    /// from then on it is on disk and every reader sees it.
    pub async fn insert(&self, record: NewRecord) -> Result<StoredDelivery, StoreError> {
        let record = Box::new(record);
        self.ask(|reply| WriteJob::Insert { record, reply }).await
    }

    /// Queues a delivery's write, returning once it is queued; the future it returns answers as
    /// [`StoreWriter::insert`] does. Deliveries queued one after another are written in that
    /// order (a relay's stream, whose cursor moves one sequence number at a time).
    pub async fn submit(
        &self,
        record: NewRecord,
    ) -> Result<impl Future<Output = Result<StoredDelivery, StoreError>> + use<>, StoreError> {
        let (reply, answer) = oneshot::channel();
        let record = Box::new(record);
        self.sender
            .send(WriteJob::Insert { record, reply })
            .await
            .map_err(|_| StoreError::WriterGone)?;
        Ok(async move { answer.await.map_err(|_| StoreError::WriterGone)? })
    }

    /// Writes many deliveries in one transaction (imports, seeding a store for benchmarks);
    /// returns their ids, in order.
    pub fn insert_many_blocking(&self, records: Vec<NewRecord>) -> Result<Vec<i64>, StoreError> {
        self.ask_blocking(|reply| WriteJob::InsertMany { records, reply })
    }

    /// The database file it writes, for a reader of what it wrote.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records an outbound attempt; returns its id.
    pub async fn attempt(&self, attempt: Attempt) -> Result<i64, StoreError> {
        self.attempt_answered(attempt, None).await
    }

    /// Records a forward's attempt and, in the same transaction, the status the delivery was
    /// answered with because of it (a mirrored handler's) and why.
    pub async fn attempt_answered(
        &self,
        attempt: Attempt,
        answered: Option<(u16, String)>,
    ) -> Result<i64, StoreError> {
        let attempt = Box::new(attempt);
        self.ask(|reply| WriteJob::Attempt {
            attempt,
            answered,
            reply,
        })
        .await
    }

    /// Applies a maintenance task from async code.
    pub async fn maintain(&self, task: Maintenance) -> Result<usize, StoreError> {
        let task = Box::new(task);
        self.ask(|reply| WriteJob::Maintain { task, reply }).await
    }

    /// Applies a maintenance task; returns how many deliveries it touched.
    pub fn maintain_blocking(&self, task: Maintenance) -> Result<usize, StoreError> {
        let task = Box::new(task);
        self.ask_blocking(|reply| WriteJob::Maintain { task, reply })
    }

    /// Hands the writer a job and waits for its answer.
    async fn ask<T>(&self, job: impl FnOnce(Answer<T>) -> WriteJob) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(job(reply))
            .await
            .map_err(|_| StoreError::WriterGone)?;
        answer.await.map_err(|_| StoreError::WriterGone)?
    }

    /// [`StoreWriter::ask`], for code outside the async runtime.
    fn ask_blocking<T>(&self, job: impl FnOnce(Answer<T>) -> WriteJob) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .blocking_send(job(reply))
            .map_err(|_| StoreError::WriterGone)?;
        answer.blocking_recv().map_err(|_| StoreError::WriterGone)?
    }
}

/// Where the writer answers a job.
type Answer<T> = oneshot::Sender<Result<T, StoreError>>;

/// Test support: the integration tests' way to store one delivery from a plain thread
/// (`tests/*.rs` build against the library as a user's program does); nothing else calls it.
#[doc(hidden)]
impl StoreWriter {
    /// The same as [`StoreWriter::insert`], for code outside the async runtime.
    pub fn insert_blocking(&self, record: NewRecord) -> Result<StoredDelivery, StoreError> {
        let record = Box::new(record);
        self.ask_blocking(|reply| WriteJob::Insert { record, reply })
    }
}
