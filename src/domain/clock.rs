//! The one wall clock, and the local time zone. Everything that needs "now" or "here" asks
//! here, so a test or a future simulated clock has one place to change.

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

/// The zone people here read times in: the `TZ` environment variable when set, else the
/// system's zone; UTC when neither can be read.
pub fn local_zone() -> crate::domain::fmt::Zone {
    crate::domain::fmt::Zone::new(jiff::tz::TimeZone::system())
}
