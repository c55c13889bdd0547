//! Comparing two stored deliveries (`hookscope diff A B`, the window's *Compare*): both front
//! ends read them here and get one [`Comparison`].

use crate::app::AppError;
use crate::domain::compare::{self, Comparison, Side};
use crate::store::Reader;

/// Deliveries `a` and `b` compared; a usage error names one that is not in the store.
pub fn compare(reader: &Reader, a: i64, b: i64) -> Result<Comparison, AppError> {
    let load = |id: i64| {
        reader
            .get(id)?
            .ok_or_else(|| AppError::Usage(format!("no delivery #{id} in the store")))
    };
    let (first, second) = (load(a)?, load(b)?);
    Ok(compare::compare(
        Side {
            id: first.id,
            delivery: &first.delivery,
            checks: &first.checks,
        },
        Side {
            id: second.id,
            delivery: &second.delivery,
            checks: &second.checks,
        },
    ))
}
