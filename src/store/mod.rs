//! The local SQLite store: every delivery, its exact bytes and its verdicts, kept across runs.
//!
//! **The durability rule.** A delivery is answered only after the transaction that stored it
//! has committed, and a commit returns only once SQLite has synced it (WAL, `synchronous =
//! FULL`). So a 2xx from hookscope means the delivery is on disk, and every reader sees it
//! from that moment. Nothing else holds acknowledged data: no journal, no cache, no buffer.
//!
//! One writer thread per process owns its write connection ([`writer`]). It takes every insert
//! waiting into one `BEGIN IMMEDIATE` transaction (group commit), decides ids and duplicate
//! verdicts inside it against the unique index on (endpoint, event id), commits and answers.
//! Another process that writes at the same time (`import`, resend and simulate attempts,
//! reconciler polls) takes SQLite's same write lock, so verdicts are exact across processes;
//! a writer that finds the lock held waits once per batch. Readers open their own connections,
//! never write and never wait for a writer (WAL). Deleted means gone: `secure_delete` zeroes
//! what a delete frees, and the idle writer truncates the WAL.
//!
//! The files follow those seams: [`handle`] (the store and its writer handle), [`schema`]
//! (tables, migrations, connection settings), [`legacy`] (what older stores hold in formats
//! this build no longer writes, read once by a migration), [`writer`] (the writer thread),
//! [`maintain`] (re-checks and deletes), [`reader`] (queries), [`query`] (the filter language
//! as SQL), [`records`] (the row types), [`recovery`] (damaged files kept aside), [`health`]
//! (whether writes succeed now, and why not), [`lock`] (one capturing hookscope per data dir),
//! `text` (the free-text index, in its own file, filled by the capturing process's own thread)
//! and [`error`].

pub mod error;
pub mod handle;
pub mod headers;
pub mod health;
pub mod legacy;
pub mod lock;
pub mod maintain;
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
pub use maintain::Maintenance;
pub use reader::Reader;
pub use records::{ListRow, NewRecord, Relayed, Routed, Routing, StoredDelivery};
