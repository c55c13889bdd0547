//! The pure core: what a delivery is, how schemes sign, what the checks conclude and why, how a
//! job's deliveries read as a timeline, the filter language, and how times and sizes are written.
//!
//! Nothing here reads a file, opens a socket or asks the clock (except [`clock`], the one place
//! that does). Every function is tested on plain values.

pub mod advice;
pub mod attempt;
pub mod checks;
pub mod clock;
pub mod cloudevents;
pub mod compare;
pub mod contract;
pub mod delivery;
pub mod diagnose;
pub mod endpoint;
pub mod filter;
pub mod fmt;
pub mod handshake;
pub mod job;
pub mod json;
pub mod pretty;
pub mod reconcile;
pub mod scheme;
pub mod sim;
pub mod sync;
pub mod timeline;
