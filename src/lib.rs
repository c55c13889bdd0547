//! hookscope's engine: everything but drawing.
//!
//! A delivery arrives at the [`receiver`], is checked by the pure functions in [`checks`] using
//! the [`scheme`] engine and the endpoints of [`config`], is committed to the [`store`], and is
//! reported in the shapes of [`report`]. None of this imports a UI toolkit.

pub mod checks;
pub mod cli;
pub mod config;
pub mod delivery;
pub mod diagnose;
pub mod engine;
pub mod export;
pub mod filter;
pub mod loadgen;
pub mod pretty;
pub mod receiver;
pub mod report;
pub mod scheme;
pub mod seed;
pub mod send;
pub mod store;
pub mod timeline;

/// The wall clock in Unix milliseconds (0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
