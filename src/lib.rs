//! hookscope's library: everything but the front ends' drawing and argument parsing.
//!
//! The modules are layers, each importing only from the ones above it in this list:
//!
//! - [`domain`]: the pure core. Deliveries, signature schemes, the checks, the diagnosis of a
//!   failed signature, job timelines, the filter language, formatting. No I/O, the clock passed in.
//! - [`config`], [`store`], [`capture`], [`net`], [`export`]: I/O. The config file, the SQLite
//!   history, the capture pipeline's decision (one for every source), the receiver and the
//!   outbound client, fixtures, HAR and curl.
//! - [`app`]: the use cases, one typed function each (list, verify, resend, probe, export,
//!   import, jobs, retention, the test delivery, paths). Both front ends call these and nothing
//!   else of substance.
//! - [`engine`]: the window's adapter over [`app`]: commands in, events out, on its own thread.
//!
//! The binary adds the two front ends: `cli/` (clap) and `ui/` (egui). See ARCHITECTURE.md.

pub mod domain;

pub mod capture;
pub mod config;
pub mod contracts;
pub mod export;
pub mod net;
pub mod relay;
pub mod store;

pub mod app;

pub mod engine;
