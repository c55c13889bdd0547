//! The one wall clock. Everything that needs "now" asks here, so a test or a future simulated
//! clock has one place to change.

/// The wall clock in Unix milliseconds (0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The wall clock in Unix seconds.
pub fn now_secs() -> i64 {
    now_ms().div_euclid(1000)
}
