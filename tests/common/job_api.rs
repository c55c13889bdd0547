//! A job API for the reconciler's tests: a real axum server on loopback that answers
//! `GET /v1/jobs/{id}`, pages `GET /v1/jobs` with a cursor, refuses with `429` and
//! `Retry-After` when told to, checks a bearer key when given one, and serves `GET
//! /results/{id}` as 404 (an expired output). It records every request with its time.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What the API knows and how it behaves.
#[derive(Default)]
pub struct ApiState {
    /// Each job's resource, as the API answers it.
    pub jobs: HashMap<String, Value>,
    /// States a job goes through, one per GET (the last one stays).
    pub script: HashMap<String, VecDeque<String>>,
    /// The jobs the in-flight listing names, in order.
    pub in_flight: Vec<String>,
    /// How many jobs a listing page holds.
    pub page_size: usize,
    /// `Retry-After` values to answer `429` with, first, per job.
    pub refuse: HashMap<String, VecDeque<String>>,
    /// The bearer key required, if any.
    pub api_key: Option<String>,
    /// Every request: when, its path and query, its `Authorization`.
    pub requests: Vec<(Instant, String, Option<String>)>,
}

type Shared = Arc<Mutex<ApiState>>;

pub struct JobApi {
    pub addr: SocketAddr,
    pub tls: bool,
    pub state: Shared,
    _runtime: tokio::runtime::Runtime,
}

impl JobApi {
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Sets a job's resource.
    pub fn job(&self, id: &str, resource: Value) {
        self.state
            .lock()
            .expect("lock")
            .jobs
            .insert(id.to_string(), resource);
    }

    /// The times of the requests whose path starts with `prefix`.
    pub fn times(&self, prefix: &str) -> Vec<Instant> {
        self.state
            .lock()
            .expect("lock")
            .requests
            .iter()
            .filter(|(_, p, _)| p.starts_with(prefix))
            .map(|(t, _, _)| *t)
            .collect()
    }

    /// The paths (with queries) requested, in order.
    pub fn paths(&self) -> Vec<String> {
        self.state
            .lock()
            .expect("lock")
            .requests
            .iter()
            .map(|(_, p, _)| p.clone())
            .collect()
    }
}

fn json_response(value: Value) -> Response {
    ([("content-type", "application/json")], value.to_string()).into_response()
}

/// Records a request; `false` when it lacks the required key (answer 401 then).
fn record(state: &Shared, path: String, headers: &HeaderMap) -> bool {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut s = state.lock().expect("lock");
    s.requests.push((Instant::now(), path, auth.clone()));
    s.api_key
        .as_ref()
        .is_none_or(|key| auth.as_deref() == Some(&format!("Bearer {key}")))
}

fn unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, "no or wrong API key").into_response()
}

async fn job(State(state): State<Shared>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if !record(&state, format!("/v1/jobs/{id}"), &headers) {
        return unauthorized();
    }
    let mut s = state.lock().expect("lock");
    if let Some(wait) = s.refuse.get_mut(&id).and_then(VecDeque::pop_front) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", wait)],
            "slow down",
        )
            .into_response();
    }
    let scripted = s.script.get_mut(&id).and_then(|states| {
        if states.len() > 1 {
            states.pop_front()
        } else {
            states.front().cloned()
        }
    });
    if let Some(state_now) = scripted {
        return json_response(json!({"job_id": id, "status": state_now}));
    }
    match s.jobs.get(&id) {
        Some(resource) => json_response(resource.clone()),
        None => (StatusCode::NOT_FOUND, "no such job").into_response(),
    }
}

async fn list(State(state): State<Shared>, uri: Uri, headers: HeaderMap) -> Response {
    let query: HashMap<String, String> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let path = match query.get("after") {
        Some(c) => format!("/v1/jobs?after={c}"),
        None => "/v1/jobs".to_string(),
    };
    if !record(&state, path, &headers) {
        return unauthorized();
    }
    let s = state.lock().expect("lock");
    let start = query
        .get("after")
        .and_then(|c| c.strip_prefix("cur_"))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let size = s.page_size.max(1);
    let page: Vec<Value> = s
        .in_flight
        .iter()
        .skip(start)
        .take(size)
        .map(|id| json!({"job_id": id, "status": "running"}))
        .collect();
    let has_more = start + size < s.in_flight.len();
    json_response(json!({
        "data": page,
        "has_more": has_more,
        "next_cursor": has_more.then(|| format!("cur_{}", start + size)),
    }))
}

async fn result(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    record(&state, format!("/results/{id}"), &headers);
    (StatusCode::NOT_FOUND, "expired").into_response()
}

/// Starts the API on a free loopback port.
pub fn serve() -> JobApi {
    serve_with(false)
}

/// The same API over TLS, on a self-signed certificate.
pub fn serve_tls() -> JobApi {
    serve_with(true)
}

fn serve_with(tls: bool) -> JobApi {
    let state: Shared = Arc::new(Mutex::new(ApiState {
        page_size: 2,
        ..ApiState::default()
    }));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let app = axum::Router::new()
        .route("/v1/jobs", axum::routing::get(list))
        .route("/v1/jobs/{id}", axum::routing::get(job))
        .route("/results/{id}", axum::routing::get(result))
        .with_state(state.clone());
    let addr = if tls {
        super::handler::spawn_tls(&runtime, app)
    } else {
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        runtime.spawn(async move { axum::serve(listener, app).await });
        addr
    };
    JobApi {
        tls,
        addr,
        state,
        _runtime: runtime,
    }
}
