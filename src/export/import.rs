//! HAR import: each request checked with this machine's endpoints at its recorded time, ready
//! for the store.

use crate::config::Settings;
use crate::domain::checks;
use crate::export::har::HarRequest;
use crate::store::NewRecord;

/// The records a HAR import stores: each request checked with `settings` at its recorded time.
pub fn import_records(
    requests: Vec<HarRequest>,
    source_name: &str,
    settings: &Settings,
) -> Vec<NewRecord> {
    requests
        .into_iter()
        .enumerate()
        .map(|(n, request)| {
            let endpoint = settings.endpoint_for(&request.delivery.path);
            let evaluation =
                checks::evaluate(&request.delivery, endpoint, request.delivery.received_at_ms.div_euclid(1000));
            NewRecord {
                delivery: request.delivery,
                endpoint: endpoint.path.clone(),
                evaluation,
                response_status: request.response_status,
                latency_ms: 0,
                note: Some(format!(
                    "Imported from {source_name} (entry {}); the response status is the original server's, checks use this machine's endpoints at the recorded time.",
                    n + 1
                )),
            }
        })
        .collect()
}
