//! The window's "Send a test delivery": make sure the test endpoint exists (Standard Webhooks,
//! a generated secret), sign a sample job event with it, and post it to the running receiver
//! with the project's HTTP client, so a new user sees a passing delivery in seconds.

use std::net::{IpAddr, SocketAddr};

use crate::app::AppError;
use crate::config::{ConfigFile, EndpointConfig, Settings};
use crate::domain::attempt::AttemptKind;
use crate::domain::clock::now_secs;
use crate::domain::delivery::Header;
use crate::domain::scheme::generate_secret;
use crate::net::client::{Client, Outgoing};

/// The path prefix of the endpoint the test delivery creates and uses.
pub const TEST_ENDPOINT: &str = "/hookscope-test";

/// The config with the test endpoint added, when it lacks one (`None`: nothing to add).
pub fn with_test_endpoint(file: &ConfigFile) -> Option<ConfigFile> {
    if file.endpoints.iter().any(|e| e.path == TEST_ENDPOINT) {
        return None;
    }
    let mut file = file.clone();
    file.endpoints.push(EndpointConfig {
        path: TEST_ENDPOINT.into(),
        scheme: Some("standard-webhooks".into()),
        secrets: vec![generate_secret()],
        ..EndpointConfig::new("/")
    });
    Some(file)
}

/// The signed request: a `job.completed` event numbered `n`, for the test endpoint of
/// `settings`, at `now` (Unix seconds).
pub fn request(settings: &Settings, n: u64, now: i64) -> Result<Outgoing, AppError> {
    let endpoint = settings.endpoint_for(TEST_ENDPOINT);
    let (Some(scheme), false) = (endpoint.scheme.as_ref(), endpoint.secrets.is_empty()) else {
        return Err(AppError::Usage(format!(
            "the {TEST_ENDPOINT} endpoint needs a scheme and a secret"
        )));
    };
    let n = format!("{now}_{n}");
    let body = format!(
        r#"{{"id":"evt_test_{n}","type":"job.completed","created_at":{now},"data":{{"job_id":"job_test_{n}","status":"completed","result_url":"https://example.com/results/job_test_{n}"}}}}"#
    );
    let mut headers = vec![
        Header::new("content-type", "application/json"),
        Header::new("user-agent", "hookscope-test"),
    ];
    headers.extend(
        scheme
            .sign(
                &endpoint.secrets,
                &format!("msg_test_{n}"),
                now,
                body.as_bytes(),
            )
            .map_err(|e| AppError::Failed(e.to_string()))?,
    );
    Ok(Outgoing {
        method: "POST".into(),
        headers,
        body: body.into_bytes(),
    })
}

/// Signs test delivery number `n` and posts it to the receiver at `addr`; returns the status
/// hookscope answered. The receiver records it like any delivery (the attempt itself is not
/// stored: it is not a resend of anything).
pub fn send(settings: &Settings, addr: SocketAddr, n: u64) -> Result<u16, AppError> {
    let outgoing = request(settings, n, now_secs())?;
    post(addr, &format!("{TEST_ENDPOINT}/jobs"), &outgoing)
}

/// The window's test delivery *from a contract*: the contract's example of `event_type` for
/// the endpoint at `path`, signed with its scheme and secrets when it has them (else sent
/// unsigned), posted to the receiver at `addr`; returns the status hookscope answered.
pub fn send_example(
    settings: &Settings,
    addr: SocketAddr,
    path: &str,
    event_type: &str,
) -> Result<u16, AppError> {
    let endpoint = settings.endpoint_for(path);
    let contract = endpoint
        .contract
        .as_ref()
        .ok_or_else(|| AppError::Usage(format!("endpoint {} has no contract", endpoint.path)))?;
    let (body, _) = crate::app::contract::example(contract, event_type)?;
    let body = crate::app::contract::as_new_event(contract, event_type, body).to_string();
    let now = now_secs();
    let mut headers = vec![
        Header::new("content-type", "application/json"),
        Header::new("user-agent", "hookscope-test"),
    ];
    if let (Some(scheme), false) = (endpoint.scheme.as_ref(), endpoint.secrets.is_empty()) {
        headers.extend(
            scheme
                .sign(
                    &endpoint.secrets,
                    &crate::domain::scheme::new_event_id(),
                    now,
                    body.as_bytes(),
                )
                .map_err(|e| AppError::Failed(e.to_string()))?,
        );
    }
    let outgoing = Outgoing {
        method: "POST".into(),
        headers,
        body: body.into_bytes(),
    };
    post(addr, &endpoint.path, &outgoing)
}

/// Posts `outgoing` to `path` on the receiver at `addr`; the status it answered.
fn post(addr: SocketAddr, path: &str, outgoing: &Outgoing) -> Result<u16, AppError> {
    let connect_to = if addr.ip().is_unspecified() {
        SocketAddr::new(IpAddr::from([127, 0, 0, 1]), addr.port())
    } else {
        addr
    };
    let url = format!("http://{connect_to}{path}");
    let runtime = crate::app::small_runtime()?;
    let client = Client::new(std::time::Duration::from_secs(10))?;
    let attempt = runtime.block_on(client.send(&url, outgoing, AttemptKind::Probe, None))?;
    match (attempt.status, attempt.error) {
        (Some(status), _) => Ok(status),
        (None, error) => Err(AppError::Failed(
            error.unwrap_or_else(|| "the receiver did not answer".into()),
        )),
    }
}
