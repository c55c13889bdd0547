//! HAR import: each request checked with this machine's endpoints at its recorded time, ready
//! for the store.

use crate::config::Settings;
use crate::export::har::HarRequest;
use crate::store::NewRecord;

/// The records a HAR import stores: each request handed to the capture pipeline as recorded,
/// checked with `settings` at its recorded time.
pub fn import_records(
    requests: Vec<HarRequest>,
    source_name: &str,
    settings: &Settings,
) -> Vec<NewRecord> {
    let recorded = requests.into_iter().enumerate().map(|(n, request)| {
        let note = format!(
            "Imported from {source_name} (entry {}); the response status is the original server's, checks use this machine's endpoints at the recorded time.",
            n + 1
        );
        (request.delivery, request.response_status, note)
    });
    crate::capture::decide_recorded(settings, recorded)
}
