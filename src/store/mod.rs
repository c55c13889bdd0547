//! The local SQLite store: every delivery, its exact bytes and its verdicts, kept across runs.
//!
//! One writer thread owns the only write connection. It takes jobs from a bounded channel in
//! small batches, writes them in the transaction it keeps open, appends them to the capture
//! [`journal`] and syncs it, and only then answers each job: the receiver acknowledges a delivery
//! after that answer, so a 2xx from hookscope means the capture is on disk. The transaction
//! commits every [`writer::COMMIT_EVERY`] without a sync (`synchronous = NORMAL`); readers see
//! deliveries from then on. Duplicates are decided inside the writer against a
//! unique index on (endpoint, event id), so concurrent retries of one event yield one `first`.
//! Readers open their own connections and never wait for the writer (WAL).
//!
//! The files follow those seams: [`handle`] (the store and its writer handle), [`schema`] (tables and migrations), [`writer`] (the writer
//! thread, group commit, the text index, maintenance), [`reader`] (queries), [`query`] (the
//! filter language as SQL), [`records`] (the row types), [`recovery`] (damaged files kept aside),
//! [`health`] (whether writes succeed now, and why not), [`lock`] (one capturing hookscope per
//! data dir), [`journal`] (the capture journal), `compact` (checks compacted against a dictionary), `pack` (bodies and headers packed against
//! a dictionary learned from the store's deliveries), `text` (the free-text index, in its own file
//! and filled by its own thread) and [`error`].

mod compact;
pub mod error;
pub mod handle;
pub mod health;
pub mod journal;
pub mod lock;
mod pack;
pub mod query;
pub mod reader;
pub mod records;
pub mod recovery;
pub mod schema;
mod text;
pub mod writer;

pub use error::StoreError;
pub use handle::{Store, StoreWriter};
pub use health::{Health, HealthReport, Trouble};
pub use lock::CaptureLock;
#[doc(hidden)]
pub use pack::BenchPacking;
pub use reader::Reader;
pub use records::{ListRow, NewRecord, StoredDelivery};
pub use writer::Maintenance;
