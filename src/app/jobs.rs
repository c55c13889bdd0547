//! Job timelines from the store: the most recently active jobs, or one job, analysed with the
//! configured "stuck after" threshold.

use crate::app::AppError;
use crate::config::ConfigFile;
use crate::domain::timeline::{self, JobTimeline};
use crate::store::Reader;

/// The stuck threshold in milliseconds: the given minutes, else the config's `[jobs]`.
pub fn stuck_after_ms(minutes: Option<u64>, file: &ConfigFile) -> i64 {
    minutes
        .map(|m| m.saturating_mul(60_000).min(i64::MAX as u64) as i64)
        .unwrap_or_else(|| file.jobs.stuck_after_ms())
}

/// The most recently active jobs whose id starts with `prefix`, each analysed at `now_ms`.
pub fn recent(
    reader: &Reader,
    prefix: &str,
    limit: usize,
    now_ms: i64,
    stuck_after_ms: i64,
) -> Result<Vec<JobTimeline>, AppError> {
    reader
        .recent_jobs(prefix, limit)?
        .iter()
        .map(|id| timeline_of(reader, id, now_ms, stuck_after_ms))
        .collect()
}

/// One job's timeline, or a sentence saying the store has no such job.
pub fn one(
    reader: &Reader,
    job_id: &str,
    now_ms: i64,
    stuck_after_ms: i64,
) -> Result<JobTimeline, AppError> {
    let timeline = timeline_of(reader, job_id, now_ms, stuck_after_ms)?;
    if timeline.arrival_order.is_empty() && timeline.polls.is_empty() {
        return Err(AppError::Usage(format!("no job \"{job_id}\" in the store")));
    }
    Ok(timeline)
}

/// A job's analysis: its deliveries and what the job API said about it, flagged. What the
/// reconciler needs to pick its jobs; [`timeline_of`] adds what the simulator sent.
pub fn analysed(
    reader: &Reader,
    job_id: &str,
    now_ms: i64,
    stuck_after_ms: i64,
) -> Result<JobTimeline, AppError> {
    let deliveries = reader.job_deliveries(job_id)?;
    let polls = reader.polls_for(job_id)?;
    Ok(timeline::analyze(
        job_id,
        deliveries,
        &polls,
        now_ms,
        stuck_after_ms,
    ))
}

/// A job's timeline as people see it: [`analysed`], and the simulator's attempts about it.
pub fn timeline_of(
    reader: &Reader,
    job_id: &str,
    now_ms: i64,
    stuck_after_ms: i64,
) -> Result<JobTimeline, AppError> {
    let mut timeline = analysed(reader, job_id, now_ms, stuck_after_ms)?;
    timeline.sent = reader
        .attempts_for_job(job_id)?
        .into_iter()
        .map(|a| timeline::SentAttempt {
            at_ms: a.sent_at_ms,
            status: a.status,
            latency_ms: a.latency_ms,
        })
        .collect();
    Ok(timeline)
}

/// How many jobs the store knows in all.
pub fn count(reader: &Reader) -> Result<usize, AppError> {
    Ok(reader.count_jobs()?.max(0) as usize)
}
