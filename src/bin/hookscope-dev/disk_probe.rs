//! A probe of the disk beside a benchmark (`hookscope-dev disk-probe`): every few milliseconds
//! it makes two small synced writes in a directory of its own and times them, so a stall in a
//! receiver's acknowledgements can be set beside what the disk did at the same moment
//! (`hookscope-dev load` reports its stalls by wall clock too).
//!
//! - `append`: 512 bytes appended, then `fdatasync`. The file grows, so the sync must also
//!   commit the file system's journal: what the capture journal's appends did before it kept
//!   its blocks, and what its growth steps still do.
//! - `overwrite`: the first 4 KiB of a file already written, rewritten, then `fdatasync`:
//!   the same device, no metadata to commit.

use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

/// A synced write slower than this is listed.
const SLOW: Duration = Duration::from_millis(20);

/// What one kind of synced write took.
#[derive(Debug, Default, Serialize)]
pub struct Timings {
    /// Writes made.
    pub writes: usize,
    /// Median, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
    /// Each write slower than 20 ms: when it started (ms since the Unix epoch) and how long
    /// it took (ms). At most 200, the earliest.
    pub slow: Vec<(u64, f64)>,
}

/// Both kinds.
#[derive(Debug, Serialize)]
pub struct ProbeReport {
    /// Appends that grow the file, each synced.
    pub append: Timings,
    /// Rewrites in place, each synced.
    pub overwrite: Timings,
}

/// Now, in milliseconds since the Unix epoch (the clock probes and loads are set beside by):
/// the library's one wall clock.
pub(crate) fn unix_ms() -> u64 {
    hookscope::domain::clock::now_ms().max(0) as u64
}

/// The `q` quantile of sorted times, in milliseconds (0 when there are none).
pub(crate) fn percentile(sorted: &[Duration], q: f64) -> f64 {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * q).round() as usize)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// What one kind of synced write took, each time.
#[derive(Default)]
struct Recorded {
    times: Vec<Duration>,
    /// The writes slower than [`SLOW`]: when each started (ms since the Unix epoch), how long.
    slow: Vec<(u64, f64)>,
}

impl Recorded {
    /// Times one synced write.
    fn time(&mut self, write: impl FnOnce() -> std::io::Result<()>) -> Result<(), String> {
        let (at, t) = (unix_ms(), Instant::now());
        write().map_err(|e| e.to_string())?;
        let took = t.elapsed();
        self.times.push(took);
        if took > SLOW && self.slow.len() < 200 {
            self.slow.push((at, took.as_secs_f64() * 1000.0));
        }
        Ok(())
    }
}

fn summarise(mut times: Vec<Duration>, slow: Vec<(u64, f64)>) -> Timings {
    let writes = times.len();
    times.sort();
    let at = |q: f64| percentile(&times, q);
    Timings {
        writes,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        max_ms: at(1.0),
        slow,
    }
}

/// Probes in `dir` (made if missing; its two files are removed at the end) every `every`,
/// for `seconds`, and prints the report as JSON.
pub fn probe(dir: &Path, seconds: u64, every: Duration) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let open = |name: &str| {
        let path = dir.join(name);
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .map(|f| (f, path))
            .map_err(|e| format!("{name}: {e}"))
    };
    let (mut append, append_path) = open("probe-append")?;
    let (mut overwrite, overwrite_path) = open("probe-overwrite")?;
    let page = [0x5a_u8; 4096];
    overwrite.write_all(&page).map_err(|e| e.to_string())?;
    overwrite.sync_all().map_err(|e| e.to_string())?;
    let mut appends = Recorded::default();
    let mut overwrites = Recorded::default();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut next = Instant::now();
    while Instant::now() < deadline {
        appends.time(|| {
            append.write_all(&page[..512])?;
            append.sync_data()
        })?;
        overwrites.time(|| {
            overwrite.seek(SeekFrom::Start(0))?;
            overwrite.write_all(&page)?;
            overwrite.sync_data()
        })?;
        next += every;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        } else {
            next = Instant::now();
        }
    }
    drop((append, overwrite));
    let _ = std::fs::remove_file(append_path);
    let _ = std::fs::remove_file(overwrite_path);
    let report = ProbeReport {
        append: summarise(appends.times, appends.slow),
        overwrite: summarise(overwrites.times, overwrites.slow),
    };
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(())
}
