//! The one wall clock, and the local time zone. Everything that needs "now" or "here" asks
//! here, so a test or a future simulated clock has one place to change.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};

/// The wall clock in Unix milliseconds (0 if the clock is before 1970), moved by [`shift`].
pub fn now_ms() -> i64 {
    let now = system_ms() + OFFSET_MS.load(Ordering::SeqCst);
    // The first reading anchors the steady clock.
    ANCHOR.get_or_init(|| (std::time::Instant::now(), now));
    now
}

fn system_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

static OFFSET_MS: AtomicI64 = AtomicI64::new(0);
static ANCHOR: OnceLock<(std::time::Instant, i64)> = OnceLock::new();

/// Moves this process's wall clock by `by_ms`, as the system clock jumping would (NTP after a
/// long sleep, a user setting the time, a dead RTC battery): the fault tests' injectable clock.
/// The steady clock does not move.
pub fn shift(by_ms: i64) {
    now_ms();
    OFFSET_MS.fetch_add(by_ms, Ordering::SeqCst);
}

/// A clock that never jumps: the wall clock at this process's first reading plus the time
/// elapsed since, by the monotonic clock.
pub fn steady_ms() -> i64 {
    let (at, wall) = *ANCHOR.get_or_init(|| {
        (
            std::time::Instant::now(),
            system_ms() + OFFSET_MS.load(Ordering::SeqCst),
        )
    });
    wall + at.elapsed().as_millis() as i64
}

/// Beyond this, the wall clock is taken to have jumped since hookscope started.
pub const JUMP_THRESHOLD_MS: i64 = 120_000;

/// How far the wall clock moved since this process started, beyond the time that passed
/// (positive: forward). A laptop's sleep counts too (the monotonic clock stops while it
/// sleeps), so "jumped" means only "do not trust it for deleting anything".
pub fn jump_ms() -> i64 {
    now_ms() - steady_ms()
}

/// Whether a wall-clock reading `now_ms` looks wrong beside the steady clock's `steady_ms`
/// taken at the same moment: it jumped by more than [`JUMP_THRESHOLD_MS`] since start, or it
/// reads earlier than a capture already stamped (`newest_ms`).
pub fn looks_wrong_at(now_ms: i64, steady_ms: i64, newest_ms: Option<i64>) -> bool {
    (now_ms - steady_ms).abs() > JUMP_THRESHOLD_MS
        || newest_ms.is_some_and(|newest| newest > now_ms + JUMP_THRESHOLD_MS)
}

/// A sentence about a jump, when there was one: "this machine's clock moved 1 h back while
/// hookscope ran".
pub fn jump_sentence() -> Option<String> {
    let jump = jump_ms();
    (jump.abs() > JUMP_THRESHOLD_MS).then(|| {
        format!(
            "this machine's clock moved {} {} while hookscope ran",
            crate::domain::fmt::human_duration((jump.unsigned_abs() + 500) / 1000),
            if jump < 0 { "back" } else { "forward" }
        )
    })
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
