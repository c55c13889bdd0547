//! Comparing two stored deliveries (`hookscope diff A B`, the window's *Compare*), or a
//! delivery with its natural partner (`diff A --with first|previous|forwarded`, the window's
//! *Compare with…*): both front ends read them here and get one [`Comparison`].

use crate::app::AppError;
use crate::domain::attempt::AttemptKind;
use crate::domain::compare::{self, Comparison, Side};
use crate::domain::delivery::Delivery;
use crate::store::{Reader, StoredDelivery};

/// What a delivery is compared with when no second id is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "desktop", derive(clap::ValueEnum))]
pub enum With {
    /// The first delivery of its event (it is a retry).
    First,
    /// The delivery of its job stored just before it.
    Previous,
    /// Its latest forwarded copy, as the handler received it.
    Forwarded,
}

fn load(reader: &Reader, id: i64) -> Result<StoredDelivery, AppError> {
    reader
        .get(id)?
        .ok_or_else(|| AppError::Usage(format!("no delivery #{id} in the store")))
}

/// Deliveries `a` and `b` compared; a usage error names one that is not in the store.
pub fn compare(reader: &Reader, a: i64, b: i64) -> Result<Comparison, AppError> {
    let (first, second) = (load(reader, a)?, load(reader, b)?);
    Ok(compare::compare(
        Side::delivery(first.id, &first.delivery, &first.checks),
        Side::delivery(second.id, &second.delivery, &second.checks),
    ))
}

/// Delivery `id` compared with its partner: the first of its event or its job's previous
/// delivery (that one first, this one second), or the copy hookscope forwarded (this one
/// first, the copy second). A usage error says why it has no such partner.
pub fn compare_with(reader: &Reader, id: i64, with: With) -> Result<Comparison, AppError> {
    let stored = load(reader, id)?;
    match with {
        With::First => {
            let first = stored
                .checks
                .duplicate
                .first_id
                .filter(|first| *first != id)
                .ok_or_else(|| {
                    AppError::Usage(format!(
                        "delivery #{id} is no retry: it is the first delivery of its event, or has no event id"
                    ))
                })?;
            compare(reader, first, id)
        }
        With::Previous => {
            let job = stored
                .job
                .as_ref()
                .ok_or_else(|| AppError::Usage(format!("delivery #{id} belongs to no job")))?;
            let previous = reader
                .job_deliveries(&job.job_id)?
                .into_iter()
                .map(|d| d.delivery_id)
                .filter(|other| *other < id)
                .max()
                .ok_or_else(|| {
                    AppError::Usage(format!(
                        "delivery #{id} is the first stored of job {}",
                        job.job_id
                    ))
                })?;
            compare(reader, previous, id)
        }
        With::Forwarded => {
            let attempt = reader
                .attempts_for(id)?
                .into_iter()
                .rfind(|a| a.kind == AttemptKind::Forward)
                .ok_or_else(|| AppError::Usage(format!("delivery #{id} was not forwarded")))?;
            // The request as it left hookscope (what the handler got, unless something between
            // them changed it): its headers and body, to the handler's path and query.
            let rest = attempt
                .url
                .split_once("://")
                .map_or(attempt.url.as_str(), |(_, rest)| rest);
            let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
            let path = rest.find('/').map_or("/", |at| &rest[at..]).to_string();
            let query = query.to_string();
            let copy = Delivery {
                received_at_ms: attempt.sent_at_ms,
                method: stored.delivery.method.clone(),
                path,
                query,
                headers: attempt.request_headers.clone(),
                body_size: attempt.request_body.len() as u64,
                body: attempt.request_body.clone(),
                body_complete: true,
                remote_addr: None,
            };
            Ok(compare::compare(
                Side::delivery(stored.id, &stored.delivery, &stored.checks),
                Side {
                    id: attempt.id,
                    delivery: &copy,
                    checks: None,
                    label: format!("the forward to {} (attempt #{})", attempt.url, attempt.id),
                },
            ))
        }
    }
}
