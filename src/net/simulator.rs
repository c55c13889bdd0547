//! The simulated provider's job API, for the developer's client: submit with an
//! Idempotency-Key, read a job, list in-flight jobs with a cursor, fetch a result. It serves
//! the shared [`World`] on a loopback port until told to stop.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::domain::sync::Lock;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::clock::now_ms;
use crate::domain::sim::Submit;
use crate::domain::sim::world::World;

/// What the API needs besides the world.
#[derive(Clone)]
pub struct Api {
    /// The provider's state.
    pub world: Arc<Lock<World>>,
    /// Where webhooks go when a submit names no callback URL.
    pub default_callback: Option<String>,
    /// How long a submit is "being processed" (real), so a repeat can arrive in flight.
    pub submit_delay: Duration,
    /// GETs of the SubscribeURL an SNS handshake gave (`/sns/confirm`).
    pub confirmations: Arc<std::sync::atomic::AtomicUsize>,
}

/// SNS's ConfirmSubscription: counts the GET and answers as SNS does.
async fn sns_confirm(State(api): State<Api>) -> Response {
    api.confirmations
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    (
        StatusCode::OK,
        [("content-type", "text/xml")],
        "<ConfirmSubscriptionResponse xmlns=\"http://sns.amazonaws.com/doc/2010-03-31/\"><ConfirmSubscriptionResult><SubscriptionArn>arn:aws:sns:us-east-1:000000000000:hookscope-jobs:1</SubscriptionArn></ConfirmSubscriptionResult></ConfirmSubscriptionResponse>",
    )
        .into_response()
}

fn json_response(status: u16, value: Value) -> Response {
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [("content-type", "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn locked(api: &Api) -> std::sync::MutexGuard<'_, World> {
    api.world.lock()
}

async fn submit(State(api): State<Api>, headers: HeaderMap, body: Bytes) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let hash = hex::encode(Sha256::digest(&body));
    let now = now_ms();
    let decision = locked(&api).begin_submit(key.as_deref(), &hash, now);
    match decision {
        Submit::Refuse(status, value) => {
            locked(&api).finish_submit(None, &hash, status, value.clone(), now);
            return json_response(status, value);
        }
        Submit::Replay(status, value) => {
            locked(&api).finish_submit(None, &hash, status, json!({"replayed": true}), now);
            return json_response(status, value);
        }
        Submit::New => {}
    }
    // The request is "being processed" for a while (a repeat now gets 409), and finishes even
    // when the client hangs up, as a real server's work does.
    let work = tokio::spawn(create(api, key, hash, body));
    match work.await {
        Ok((status, value)) => json_response(status, value),
        Err(_) => json_response(
            500,
            json!({"error": {"code": "internal", "message": "the submit failed"}}),
        ),
    }
}

/// Creates the job a new submit asks for, after the processing delay, and records the answer
/// for its key.
async fn create(api: Api, key: Option<String>, hash: String, body: Bytes) -> (u16, Value) {
    tokio::time::sleep(api.submit_delay).await;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let callback = request
        .get("callback_url")
        .or_else(|| request.pointer("/webhook/url"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| api.default_callback.clone());
    let mut world = locked(&api);
    let (status, value) = match callback {
        None => (
            400,
            json!({"error": {"code": "callback_url_missing", "message": "Give callback_url (or webhook.url) in the body: no default target is set."}}),
        ),
        Some(url) => {
            let job_id = world.create_job(&url, now_ms());
            let job = world.job_json(&job_id, now_ms()).unwrap_or(Value::Null);
            (
                202,
                json!({"job_id": job_id, "status": job["status"], "created_at": job["created_at"]}),
            )
        }
    };
    world.finish_submit(key.as_deref(), &hash, status, value.clone(), now_ms());
    (status, value)
}

async fn job(State(api): State<Api>, Path(id): Path<String>) -> Response {
    let now = now_ms();
    let mut world = locked(&api);
    if let Err(wait) = world.poll(&id, now) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", wait.to_string())],
            json!({"error": {"code": "rate_limited", "message": "Too many requests for this job; wait as Retry-After says."}}).to_string(),
        )
            .into_response();
    }
    match world.job_json(&id, now) {
        Some(value) => json_response(200, value),
        None => json_response(
            404,
            json!({"error": {"code": "not_found", "message": "No such job."}}),
        ),
    }
}

async fn list(State(api): State<Api>, uri: Uri) -> Response {
    let mut statuses = Vec::new();
    let mut limit = 100;
    let mut after = None;
    for pair in uri.query().unwrap_or("").split('&') {
        match pair.split_once('=') {
            Some(("status", s)) => statuses.push(s.to_string()),
            Some(("limit", n)) => limit = n.parse().unwrap_or(100),
            Some(("after", a)) => after = Some(a.to_string()),
            _ => {}
        }
    }
    let value = locked(&api).list_json(&statuses, limit, after.as_deref(), now_ms());
    json_response(200, value)
}

async fn result(State(api): State<Api>, Path(id): Path<String>) -> Response {
    match locked(&api).result_json(&id, now_ms()) {
        Some(value) => json_response(200, value),
        None => json_response(
            404,
            json!({"error": {"code": "not_found", "message": "No output: the job has not finished, or its output expired."}}),
        ),
    }
}

/// A running job API.
pub struct ApiServer {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl ApiServer {
    /// Stops serving.
    pub fn stop(self) {
        let _ = self.stop.send(());
    }
}

/// Serves the job API on 127.0.0.1:`port` (0: any free port) from the current runtime;
/// `submit_path` is where jobs are submitted (`/v1/jobs`).
pub async fn serve(api: Api, port: u16, submit_path: &str) -> std::io::Result<ApiServer> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    let app = axum::Router::new()
        .route(submit_path, axum::routing::post(submit).get(list))
        .route(
            &format!("{}/{{id}}", submit_path.trim_end_matches('/')),
            axum::routing::get(job),
        )
        .route("/results/{id}", axum::routing::get(result))
        .route("/sns/confirm", axum::routing::get(sns_confirm))
        .with_state(api);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    Ok(ApiServer { addr, stop })
}
