//! The relay: a small server with a public URL that keeps every delivery while the laptop
//! sleeps, sealed so that the relay cannot read it, and hands them over in order when a
//! subscriber (`listen --relay`, the window) connects.
//!
//! `seal` (age files, one header a minute), `envelope` (the request as sealed), `token`
//! (subscriber tokens, channel names), `store` (SQLite, group commit), `jet` (the same on a NATS
//! JetStream cluster, for a team), `backing` (either one, as the server uses it), `server`
//! (ingest, subscribe, answers), `stream` (one subscriber's Server-Sent Events), `tls`.

pub mod backing;
pub mod envelope;
pub mod jet;
pub mod seal;
pub mod server;
pub mod store;
pub(crate) mod stream;
pub mod tls;
pub mod token;
