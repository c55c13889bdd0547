//! The capture pipeline's decision, the same for every source of deliveries: a request as a
//! source received it ([`Received`]) is checked against its endpoint once, and [`decide`] says
//! how it is answered and what is stored (the record, with the forwarding rules the writer
//! decides in the delivery's own transaction). The HTTP receiver (`net::receiver`) and the
//! recorded sources (a HAR import, fixtures stored for a replay) hand it their requests; a new
//! source (the relay) hands it the same value and gets the same decision, stored the same way.
//!
//! Also here, because every source reads them: the settings shared with the front end, replaced
//! live ([`SharedSettings`]), and the switches the front end flips while capturing
//! ([`Controls`]).

use std::sync::Arc;

use crate::config::Settings;
use crate::domain::checks::{self, Evaluation};
use crate::domain::delivery::Delivery;
use crate::domain::endpoint::Endpoint;
use crate::domain::handshake;
use crate::domain::sync::Lock;
use crate::store::{NewRecord, Routing};

/// The settings every source reads for each request; the front end replaces them live (a saved
/// config, a contract edited on disk), and the next request reads the new ones.
#[derive(Debug, Clone, Default)]
pub struct SharedSettings(Arc<Lock<Arc<Settings>>>);

impl SharedSettings {
    /// Settings to share.
    pub fn new(settings: Settings) -> SharedSettings {
        SharedSettings(Arc::new(Lock::new(Arc::new(settings))))
    }

    /// The settings as they are now.
    pub fn get(&self) -> Arc<Settings> {
        Arc::clone(&self.0.lock())
    }

    /// Replaces them, for the next request.
    pub fn replace(&self, settings: Settings) {
        *self.0.lock() = Arc::new(settings);
    }
}

/// Switches the window or the CLI flips while capturing.
#[derive(Debug, Default)]
pub struct Controls {
    /// Forward every delivery, byte-exact, to this URL.
    pub forward_to: Lock<Option<String>>,
    /// Answer the sender with the forwarded handler's status instead of hookscope's own.
    pub mirror_response: std::sync::atomic::AtomicBool,
    /// Answer this many next deliveries with 500, to watch a sender's retries.
    pub fail_next: std::sync::atomic::AtomicU32,
    /// Accept any TLS certificate when forwarding (a self-signed development certificate).
    pub forward_insecure: std::sync::atomic::AtomicBool,
    /// Endpoints (by path) whose forwarding rules are switched off for now.
    pub forwarding_off: Lock<std::collections::BTreeSet<String>>,
}

impl Controls {
    /// Turns forwarding on to `url` (an `http://` or `https://` handler) or off (`None`). The
    /// same rule for `listen --forward-to` and the window's switch.
    pub fn set_forward(&self, url: Option<&str>) -> Result<(), String> {
        let url = match url.map(str::trim) {
            Some(url) => {
                crate::net::client::check_url(url).map_err(|e| e.to_string())?;
                Some(url.to_string())
            }
            None => None,
        };
        *self.forward_to.lock() = url;
        Ok(())
    }

    /// Switches an endpoint's forwarding rules on or off (the window's per-endpoint switch).
    pub fn set_endpoint_forwarding(&self, endpoint: &str, on: bool) {
        let mut off = self.forwarding_off.lock();
        if on {
            off.remove(endpoint);
        } else {
            off.insert(endpoint.to_string());
        }
    }

    /// Whether an endpoint's forwarding rules apply now.
    pub fn endpoint_forwarding(&self, endpoint: &str) -> bool {
        !self.forwarding_off.lock().contains(endpoint)
    }

    /// The receiver-wide forwarding target, when one is set.
    pub fn forward_url(&self) -> Option<String> {
        self.forward_to.lock().clone()
    }

    /// Takes one from the fail-next counter; returns how many remain when one was taken.
    fn take_failure(&self) -> Option<u32> {
        use std::sync::atomic::Ordering;
        self.fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .ok()
            .map(|before| before - 1)
    }
}

/// What the note of a delivery answered with a forwarded handler's status says (the receiver
/// writes it; the simulator reads it to judge such a delivery by its status).
pub const MIRRORED: &str = "the answer mirrors the handler's";

/// A request as a source received it: the bytes, headers, method, path, query, remote address
/// and the time it was received (the [`Delivery`]), and how it is answered.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request.
    pub delivery: Delivery,
    /// Live or recorded.
    pub how: How,
}

/// How a received request is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// Now, by hookscope: a handshake gets its exact answer, the fail-next switch and the
    /// endpoint's answer and delay apply, and its forwarding rules route it. `refused`: the body
    /// could not be taken whole (over the limit, cut short), the status it gets and the note
    /// that says why.
    Live {
        /// The refusal of a body not taken whole.
        refused: Option<(u16, String)>,
    },
    /// Already answered elsewhere (a HAR file's entry, a fixture): stored with that status and
    /// a note saying where it came from; checked at its recorded time; never forwarded.
    Recorded {
        /// The status it was answered with (0 when unknown).
        status: u16,
        /// Where it came from.
        note: String,
    },
}

/// What hookscope decided for a received request: what is stored, and how it is answered.
#[derive(Debug)]
pub struct Decision {
    /// The record the store writes (its latency is the source's to set).
    pub record: NewRecord,
    /// The answer.
    pub reply: Reply,
}

/// How a decided request is answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A provider's handshake: exactly this answer, at once (no delay, no forward).
    Handshake(handshake::Reply),
    /// The endpoint's answer (its body and headers) with this status, after `delay_ms`
    /// (none for a refusal), once its forwards are sent.
    Endpoint {
        /// The status.
        status: u16,
        /// The wait before answering.
        delay_ms: u64,
    },
    /// Nothing: it was answered where it was recorded.
    Recorded,
}

/// Checks a received request against `endpoint` (its own, `Settings::endpoint_for` its path) and
/// decides its answer and its record: once, for every source. A live request is checked at the
/// time it was received, a recorded one at its recorded time (the same thing: the delivery's
/// `received_at_ms`).
pub fn decide(endpoint: &Endpoint, received: Received, controls: &Controls) -> Decision {
    let Received { delivery, how } = received;
    let now_secs = delivery.received_at_ms.div_euclid(1000);
    let evaluation = checks::evaluate(&delivery, endpoint, now_secs);
    let record = |evaluation, response_status, note, routing| NewRecord {
        endpoint: endpoint.path.clone(),
        delivery,
        evaluation,
        response_status,
        latency_ms: 0,
        note,
        routing,
        relayed: None,
    };
    let refused = match how {
        How::Recorded { status, note } => {
            return Decision {
                record: record(evaluation, status, Some(note), Routing::default()),
                reply: Reply::Recorded,
            };
        }
        How::Live { refused } => refused,
    };
    let evaluation = with_clock_note(evaluation);
    // A provider's challenge is answered from the request alone, at once: no delay, no forced
    // failure, no forward (the handler is not asked to answer for hookscope).
    if refused.is_none()
        && let Some(reply) = evaluation.handshake.as_ref().and_then(|h| h.answer.clone())
    {
        return Decision {
            record: record(evaluation, reply.status, None, Routing::default()),
            reply: Reply::Handshake(reply),
        };
    }
    let (forced, note) = match (refused, controls.take_failure()) {
        (None, Some(left)) => (
            Some(500u16),
            Some(format!(
                "Answered 500 on purpose (the fail-next switch; {left} more to fail)."
            )),
        ),
        (Some((status, note)), _) => (Some(status), Some(note)),
        (None, None) => (None, None),
    };
    let status = forced.unwrap_or(endpoint.respond_status);
    // A refused or failed delivery is answered at once; the configured delay is for the rest.
    let delay_ms = if forced.is_some() {
        0
    } else {
        endpoint.respond_delay_ms
    };
    Decision {
        record: record(evaluation, status, note, routing(endpoint, controls)),
        reply: Reply::Endpoint { status, delay_ms },
    }
}

/// The forwarding rules a delivery of `endpoint` is routed by (none while the endpoint's
/// forwarding is switched off): the writer decides them in the delivery's own transaction.
fn routing(endpoint: &Endpoint, controls: &Controls) -> Routing {
    let rules = &endpoint.forward;
    if rules.is_empty() || !controls.endpoint_forwarding(&endpoint.path) {
        return Routing::default();
    }
    Routing {
        rules: rules.len() as u32,
        unconditional: rules.iter().any(|r| r.filter.is_none()),
        conditions: rules.iter().filter_map(|r| r.filter.clone()).collect(),
    }
}

/// The timestamp check is made against the clock as it reads now; when that clock jumped
/// while hookscope ran, its sentence says so.
fn with_clock_note(mut evaluation: Evaluation) -> Evaluation {
    if evaluation.timestamp.skew_secs.is_some()
        && let Some(jump) = crate::domain::clock::jump_sentence()
    {
        let mut first = jump;
        first[..1].make_ascii_uppercase();
        evaluation.timestamp.detail = format!(
            "{} {first}: the check used the clock as it reads now.",
            evaluation.timestamp.detail
        );
    }
    evaluation
}

/// The records of requests recorded elsewhere (a HAR file's entries, fixtures), each decided as
/// any source's: checked with `settings`' endpoints at its recorded time.
pub fn decide_recorded(
    settings: &Settings,
    recorded: impl IntoIterator<Item = (Delivery, u16, String)>,
) -> Vec<NewRecord> {
    let controls = Controls::default();
    recorded
        .into_iter()
        .map(|(delivery, status, note)| {
            let endpoint = settings.endpoint_for(&delivery.path);
            let how = How::Recorded { status, note };
            decide(endpoint, Received { delivery, how }, &controls).record
        })
        .collect()
}
