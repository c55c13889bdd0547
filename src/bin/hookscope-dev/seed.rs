//! Synthetic deliveries for benchmarks and demos (`hookscope-dev seed`): real signatures, run
//! through the real checks, in a realistic mix.

use hookscope::domain::delivery::{Delivery, Header};
use hookscope::domain::endpoint::Endpoint;
use hookscope::domain::scheme::{Scheme, Secret};
use hookscope::store::NewRecord;

/// The secret the seeded Standard Webhooks deliveries are signed with.
pub const SEED_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

const STATES: [&str; 5] = [
    "queued",
    "processing",
    "needs_review",
    "completed",
    "failed",
];

/// The `n`-th synthetic delivery: one job per five events, every 20th signature tampered,
/// every 50th a retry of the previous event, timestamps one second apart.
pub fn record(n: usize) -> NewRecord {
    let scheme = Scheme::preset("standard-webhooks").expect("the standard-webhooks preset exists");
    let secrets = [Secret::new(SEED_SECRET)];
    let base_ms: i64 = 1_790_000_000_000;
    let received_at_ms = base_ms + n as i64 * 1000;
    let ts = received_at_ms / 1000;
    let job = n / 5;
    let state = STATES[n % 5];
    let event_index = if n % 50 == 49 { n - 1 } else { n };
    let event_id = format!("msg_{event_index:08}");
    let body = format!(
        r#"{{"type":"job.{state}","created_at":{ts},"data":{{"job_id":"job_{job:07}","status":"{state}","document_id":"doc_{job:07}","result_url":"https://api.example.com/v1/jobs/job_{job:07}/result","pages":{},"confidence":0.9{}}}}}"#,
        n % 40 + 1,
        n % 10
    );
    let mut headers = vec![
        Header::new("host", "127.0.0.1:7878"),
        Header::new("user-agent", "seed/1.0"),
        Header::new("content-type", "application/json"),
    ];
    let mut signed = scheme
        .sign(&secrets, &event_id, ts, body.as_bytes())
        .unwrap_or_default();
    if n % 20 == 19 {
        for h in &mut signed {
            if h.name == "webhook-signature" && h.value.len() > 4 {
                h.value[4] = if h.value[4] == b'A' { b'B' } else { b'A' };
            }
        }
    }
    headers.extend(signed);
    // A retry goes where the event first went: the catch-all endpoint scopes event ids by path.
    let path = ["/hooks/ocr", "/hooks/render", "/hooks/docs"][event_index % 3].to_string();
    let delivery = Delivery {
        received_at_ms,
        method: "POST".into(),
        path,
        query: String::new(),
        headers,
        body_size: body.len() as u64,
        body: body.into_bytes(),
        body_complete: true,
        remote_addr: Some("127.0.0.1:50000".into()),
    };
    let endpoint = Endpoint {
        scheme: Some(scheme),
        secrets: secrets.to_vec(),
        ..Endpoint::catch_all()
    };
    NewRecord::checked(delivery, &endpoint, ts)
}
