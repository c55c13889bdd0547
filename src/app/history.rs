//! Changing the history other than by new deliveries: retention (from `[retention]`), deleting,
//! clearing, and re-running a delivery's checks after its endpoint changed.

use crate::app::AppError;
use crate::config::{RetentionSection, Settings};
use crate::domain::checks;
use crate::store::{Maintenance, Reader, StoreWriter};

/// Applies `[retention]` at `now_ms`: deletes deliveries older than `max_days` and the oldest
/// beyond `max_deliveries`. Returns how many were deleted (0 when retention is off).
pub fn apply_retention(
    writer: &StoreWriter,
    retention: &RetentionSection,
    now_ms: i64,
) -> Result<usize, AppError> {
    if retention.max_days.is_none() && retention.max_deliveries.is_none() {
        return Ok(0);
    }
    let task = Maintenance::Retain {
        max_age_ms: retention.max_days.map(|d| i64::from(d) * 86_400_000),
        max_count: retention
            .max_deliveries
            .map(|n| n.min(i64::MAX as u64) as i64),
        now_ms,
        steady_ms: crate::domain::clock::steady_ms(),
    };
    Ok(writer.maintain_blocking(task)?)
}

/// Deletes deliveries by id; returns how many.
pub fn delete(writer: &StoreWriter, ids: Vec<i64>) -> Result<usize, AppError> {
    Ok(writer.maintain_blocking(Maintenance::Delete(ids))?)
}

/// Deletes every delivery; returns how many.
pub fn clear(writer: &StoreWriter) -> Result<usize, AppError> {
    Ok(writer.maintain_blocking(Maintenance::Clear)?)
}

/// Re-runs a delivery's signature and timestamp checks and its advice with the current endpoints, at the time
/// it was received, and stores the new verdicts. `Ok(false)` when it is no longer stored.
pub fn recheck(
    reader: &Reader,
    writer: &StoreWriter,
    settings: &Settings,
    id: i64,
) -> Result<bool, AppError> {
    let Some(stored) = reader.get(id)? else {
        return Ok(false);
    };
    let endpoint = settings.endpoint_for(&stored.delivery.path);
    let evaluation = checks::evaluate(
        &stored.delivery,
        endpoint,
        stored.delivery.received_at_ms.div_euclid(1000),
    );
    writer.maintain_blocking(Maintenance::Recheck {
        id,
        scheme: evaluation.scheme,
        signature: Box::new(evaluation.signature),
        timestamp: Box::new(evaluation.timestamp),
        advice: Box::new(evaluation.advice),
        schema: evaluation.schema.map(Box::new),
    })?;
    Ok(true)
}

/// Opens the history for a command that only reads it (`list`, `jobs`, `export`). `Ok(None)` when
/// nothing was ever captured: no store file yet (a fresh machine, where even the data folder may
/// not exist), or a store with no deliveries. A reader never creates the file.
pub fn open_captured(store_file: &std::path::Path) -> Result<Option<Reader>, AppError> {
    if !store_file.exists() {
        return Ok(None);
    }
    let reader = Reader::open(store_file)?;
    Ok((reader.newest_id()? > 0).then_some(reader))
}

/// The sentence for a history with nothing in it.
pub fn nothing_captured(store_file: &std::path::Path) -> String {
    format!(
        "no deliveries yet (store: {}); start `hookscope` or `hookscope listen` to capture",
        store_file.display()
    )
}
