//! Reconciling: for jobs that went quiet, ask the job API, store what it said, and show it
//! beside the webhooks' story. `hookscope reconcile` asks once about each job now; `hookscope
//! follow` polls given jobs until they finish; `listen` and the window ask at start-up and
//! then in the background. All three are the functions here.
//!
//! The store is read only between network calls (a [`Reader`] is opened, used and dropped), so
//! these futures can run on any runtime, spawned or blocked on.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::app::AppError;
use crate::app::jobs::{analysed, timeline_of};
use crate::config::Settings;
use crate::domain::clock::now_ms;
use crate::domain::reconcile::{ApiConfig, Poll, jitter};
use crate::domain::timeline::JobTimeline;
use crate::net::client::{Client, Tls};
use crate::net::reconcile::{Answer, get};
use crate::store::Maintenance;
use crate::store::{Reader, StoreWriter};

/// How long the job API has to answer one request.
pub const API_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an on-demand reconcile waits on one job's `429`s before recording the refusal.
pub const ON_DEMAND_PATIENCE: Duration = Duration::from_secs(30);

/// How often the background reconciler looks for quiet jobs.
pub const BACKGROUND_EVERY: Duration = Duration::from_secs(60);

/// How many jobs a pass looks through for ones that went quiet.
const RECENT_JOBS: usize = 1000;

/// The most listing pages read in one pass (a loop guard against a cursor that never ends).
const MAX_PAGES: usize = 1000;

/// The outbound clients a pass needs: one that verifies certificates, one for the APIs
/// marked `insecure` (a development API on a self-signed certificate).
pub struct Clients {
    verify: Client,
    insecure: Client,
}

impl Clients {
    /// Both clients, with the API timeout.
    pub fn new() -> Result<Clients, AppError> {
        Ok(Clients {
            // A job API's certificate policy is its config's, not a command-line switch.
            verify: Client::with_tls(API_TIMEOUT, Tls::Verify)?.with_insecure_hint(
                "; for a development API on a self-signed certificate, set insecure = true in its [endpoint.reconcile]",
            ),
            insecure: Client::with_tls(API_TIMEOUT, Tls::AcceptInvalid)?,
        })
    }

    /// The client for one API.
    pub fn for_api(&self, api: &ApiConfig) -> &Client {
        if api.insecure {
            &self.insecure
        } else {
            &self.verify
        }
    }
}

/// What to reconcile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileRequest {
    /// One job (default: the jobs `which` says).
    pub job: Option<String>,
    /// One endpoint's API (default: every endpoint with `[endpoint.reconcile]`).
    pub endpoint: Option<String>,
    /// Which jobs, when no job is named.
    pub which: Which,
}

/// Which jobs a pass asks about when no job is named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Which {
    /// Every job without a terminal state (from webhooks or the API) past the stuck threshold:
    /// the background pass, which spares the provider's rate limits.
    #[default]
    Quiet,
    /// Every job seen within `since_ms`, terminal or not (a `succeeded` webhook the API says
    /// `failed` is found only so), the `limit` most recently seen: reconciling on demand.
    Seen {
        /// How far back, in milliseconds.
        since_ms: i64,
        /// The most jobs to ask about.
        limit: usize,
    },
}

/// How far back reconciling on demand looks by default (`reconcile --since`): 24 hours.
pub const ON_DEMAND_SINCE_MS: i64 = 24 * 3_600_000;
/// The most jobs reconciling on demand asks about by default (`reconcile --limit`).
pub const ON_DEMAND_LIMIT: usize = 500;

impl Which {
    /// Reconciling on demand with the defaults: every job of the last 24 hours, at most 500.
    pub fn on_demand() -> Which {
        Which::Seen {
            since_ms: ON_DEMAND_SINCE_MS,
            limit: ON_DEMAND_LIMIT,
        }
    }

    /// The sentence for a pass that found no job to ask about.
    pub fn nothing_found(&self) -> String {
        match self {
            Which::Quiet => {
                "no job to reconcile: none went quiet without a terminal state, and no listing named a new one".into()
            }
            Which::Seen { since_ms, .. } => format!(
                "no job to reconcile: none was seen in the last {}, and no listing named a new one",
                crate::domain::fmt::human_duration((*since_ms).max(0) as u64 / 1000)
            ),
        }
    }
}

/// One job to ask about, and the API to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The job.
    pub job_id: String,
    /// The endpoint (its path prefix).
    pub endpoint: String,
    /// Its job API.
    pub api: ApiConfig,
    /// When the store first saw the job (now, for a job named on the command line).
    pub first_seen_ms: i64,
}

/// The endpoints with a job API, as (path, API), narrowed to `only` when given.
pub fn apis(settings: &Settings, only: Option<&str>) -> Result<Vec<(String, ApiConfig)>, AppError> {
    let all: Vec<(String, ApiConfig)> = settings
        .endpoints
        .iter()
        .filter_map(|e| e.reconcile.clone().map(|api| (e.path.clone(), api)))
        .collect();
    if all.is_empty() {
        return Err(AppError::Usage(
            "no endpoint has a job API to ask: add [endpoint.reconcile] with job_url to an endpoint (docs/jobs.md: Reconciling)".into(),
        ));
    }
    match only {
        None => Ok(all),
        Some(path) => {
            let trimmed = path.trim_end_matches('/');
            let found: Vec<_> = all
                .into_iter()
                .filter(|(p, _)| p.trim_end_matches('/') == trimmed)
                .collect();
            if found.is_empty() {
                return Err(AppError::Usage(format!(
                    "endpoint {path} has no job API: give it [endpoint.reconcile] with job_url, or name another endpoint"
                )));
            }
            Ok(found)
        }
    }
}

/// The jobs to ask about: the one asked for, else those `request.which` says; with how many
/// jobs the window held beyond its limit.
pub fn targets(
    settings: &Settings,
    reader: &Reader,
    request: &ReconcileRequest,
    now_ms: i64,
    stuck_after_ms: i64,
) -> Result<(Vec<Target>, usize), AppError> {
    let apis = apis(settings, request.endpoint.as_deref())?;
    let api_of = |job_id: &str| -> Result<Option<(String, ApiConfig)>, AppError> {
        let endpoint = reader.job_endpoint(job_id)?;
        let matching = endpoint.as_deref().and_then(|e| {
            apis.iter()
                .find(|(p, _)| p.trim_end_matches('/') == e.trim_end_matches('/'))
        });
        Ok(match (matching, apis.len()) {
            (Some(found), _) => Some(found.clone()),
            // A job the store has not seen, or seen on another endpoint, with one API named.
            (None, 1) if request.job.is_some() || request.endpoint.is_some() => {
                Some(apis[0].clone())
            }
            _ => None,
        })
    };
    if let Some(job) = &request.job {
        let Some((endpoint, api)) = api_of(job)? else {
            return Err(crate::app::Refused::JobWithoutApi { job: job.clone() }.into());
        };
        let target = Target {
            job_id: job.clone(),
            endpoint,
            api,
            first_seen_ms: now_ms,
        };
        return Ok((vec![target], 0));
    }
    let (candidates, left_out) = match request.which {
        Which::Quiet => (quiet_jobs(reader, now_ms, stuck_after_ms)?, 0),
        Which::Seen { since_ms, limit } => {
            let (jobs, total) = reader.jobs_seen_since(now_ms.saturating_sub(since_ms), limit)?;
            let left_out = total.saturating_sub(jobs.len());
            (jobs, left_out)
        }
    };
    let mut out = Vec::new();
    for (job_id, first_seen_ms) in candidates {
        if let Some((endpoint, api)) = api_of(&job_id)? {
            out.push(Target {
                job_id,
                endpoint,
                api,
                first_seen_ms,
            });
        }
    }
    Ok((out, left_out))
}

/// The recent jobs without a terminal state (from webhooks or the API) once they are older
/// than `stuck_after_ms`, each with when it was first seen.
fn quiet_jobs(
    reader: &Reader,
    now_ms: i64,
    stuck_after_ms: i64,
) -> Result<Vec<(String, i64)>, AppError> {
    let mut out = Vec::new();
    for job_id in reader.recent_jobs("", RECENT_JOBS)? {
        let timeline = analysed(reader, &job_id, now_ms, stuck_after_ms)?;
        let quiet = now_ms - timeline.first_seen_ms > stuck_after_ms;
        let finished = timeline.terminal
            || timeline
                .polls
                .iter()
                .rev()
                .find(|p| p.answered())
                .is_some_and(Poll::terminal);
        if quiet && !finished {
            out.push((job_id, timeline.first_seen_ms));
        }
    }
    Ok(out)
}

/// Asks the job API about one job. A `429` is waited out as its `Retry-After` says (or the
/// backoff, without one) while `patience` lasts; then the refusal is what is recorded. After a
/// terminal answer whose output has expired, the result URL is asked too.
pub async fn poll_job(clients: &Clients, target: &Target, patience: Duration) -> Poll {
    let client = clients.for_api(&target.api);
    let started = Instant::now();
    let url = target.api.job_url_for(&target.job_id);
    let mut refusals = 0;
    loop {
        let at_ms = now_ms();
        let answer = match get(client, &target.api, &url).await {
            Ok(a) => a,
            Err(e) => Answer {
                error: Some(e.to_string()),
                ..Answer::default()
            },
        };
        if answer.status == Some(429) {
            refusals += 1;
            let wait = answer
                .retry_after
                .unwrap_or_else(|| target.api.pacing.delay(refusals, None, jitter()));
            if started.elapsed() + wait <= patience {
                tokio::time::sleep(wait).await;
                continue;
            }
        }
        let mut poll = poll_of(target, at_ms, &answer);
        if poll.terminal()
            && let (Some(result), Some(expires)) = (poll.result_url.clone(), poll.expires_at_ms)
            && expires <= at_ms
        {
            poll.output_status = output_status(client, &target.api, &result).await;
        }
        return poll;
    }
}

/// A poll from one answer: the state when the API answered 2xx with it, else why not.
fn poll_of(target: &Target, at_ms: i64, answer: &Answer) -> Poll {
    let mut poll = Poll {
        id: 0,
        job_id: target.job_id.clone(),
        endpoint: target.endpoint.clone(),
        at_ms,
        status: answer.status,
        state: None,
        latency_ms: answer.latency_ms,
        error: answer.error.clone(),
        result_url: None,
        expires_at_ms: None,
        output_status: None,
    };
    match answer.status {
        Some(s) if (200..300).contains(&s) && poll.error.is_none() => {
            let resource = target.api.read_job(&answer.body);
            poll.state = resource.state;
            poll.result_url = resource.result_url;
            poll.expires_at_ms = resource.expires_at_ms;
            if !resource.parsed {
                poll.error = Some("the answer is not JSON".into());
            } else if poll.state.is_none() {
                poll.error = Some(format!(
                    "the answer has no state at {} (state_pointer)",
                    target.api.state_pointer
                ));
            }
        }
        Some(429) => {
            let wait = answer
                .retry_after
                .map(|d| format!(": it asks to retry after {} s", d.as_secs()))
                .unwrap_or_default();
            poll.error = Some(format!("too many requests{wait}"));
        }
        _ => {}
    }
    poll
}

/// The result URL's status. The API key goes along only to the job API's own origin: a result
/// on another host (a signed storage URL) is asked without it.
async fn output_status(client: &Client, api: &ApiConfig, url: &str) -> Option<u16> {
    let origin = |u: &str| crate::domain::scheme::twilio::origin(u);
    let same_origin = origin(url).is_some() && origin(url) == origin(&api.job_url);
    let anonymous = ApiConfig {
        auth: None,
        ..api.clone()
    };
    let asking = if same_origin { api } else { &anonymous };
    get(client, asking, url).await.ok().and_then(|a| a.status)
}

/// Pages through each API's in-flight listing; every job on it becomes a poll (once, however
/// many pages name it). Returns those polls and a sentence per listing that could not be read.
pub async fn list_in_flight(
    clients: &Clients,
    apis: &[(String, ApiConfig)],
) -> (Vec<Poll>, Vec<String>) {
    let mut polls = Vec::new();
    let mut problems = Vec::new();
    for (endpoint, api) in apis {
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let Some(url) = api.list_url_after(cursor.as_deref()) else {
                break;
            };
            let at_ms = now_ms();
            let answer = match get(clients.for_api(api), api, &url).await {
                Ok(a) => a,
                Err(e) => Answer {
                    error: Some(e.to_string()),
                    ..Answer::default()
                },
            };
            if answer.status == Some(429)
                && let Some(wait) = answer.retry_after.filter(|w| *w <= ON_DEMAND_PATIENCE)
            {
                tokio::time::sleep(wait).await;
                continue;
            }
            let page = match (answer.status, &answer.error) {
                (Some(s), None) if (200..300).contains(&s) => api.read_page(&answer.body),
                _ => None,
            };
            let Some(page) = page else {
                let why = match (answer.status, &answer.error) {
                    (_, Some(e)) => e.clone(),
                    (Some(s), None) if (200..300).contains(&s) => {
                        "the answer is not a page of jobs (data, has_more, next_cursor)".into()
                    }
                    (Some(s), None) => format!("it answered {s}"),
                    (None, None) => "no answer".into(),
                };
                problems.push(format!(
                    "the in-flight listing of endpoint {endpoint} could not be read: {why}"
                ));
                break;
            };
            for (job_id, state) in page.jobs {
                if polls.iter().any(|p: &Poll| p.job_id == job_id) {
                    continue;
                }
                polls.push(Poll {
                    id: 0,
                    job_id,
                    endpoint: endpoint.clone(),
                    at_ms,
                    status: answer.status,
                    state,
                    latency_ms: answer.latency_ms,
                    error: None,
                    result_url: None,
                    expires_at_ms: None,
                    output_status: None,
                });
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    (polls, problems)
}

/// Stores the listed jobs the store has never heard of (a job with no deliveries) and returns
/// their ids; jobs it knows are left to the quiet-job pass.
async fn record_unknown(
    store_path: &Path,
    writer: &StoreWriter,
    listed: Vec<Poll>,
) -> Result<Vec<String>, AppError> {
    let unknown: Vec<Poll> = {
        let reader = Reader::open(store_path)?;
        let mut unknown = Vec::new();
        for poll in listed {
            if !reader.has_job(&poll.job_id)? {
                unknown.push(poll);
            }
        }
        unknown
    };
    let mut ids = Vec::new();
    for poll in unknown {
        ids.push(poll.job_id.clone());
        writer
            .maintain(Maintenance::RecordPoll(Box::new(poll)))
            .await?;
    }
    Ok(ids)
}

/// What one reconcile pass found: the jobs' timelines (with the API's answers and flags) and
/// the listings that could not be read.
#[derive(Debug, Clone)]
pub struct Reconciled {
    /// One timeline per job asked about or listed, in the order asked.
    pub timelines: Vec<JobTimeline>,
    /// A sentence per listing that failed.
    pub problems: Vec<String>,
    /// How many more jobs the window held than the limit let be asked about.
    pub left_out: usize,
    /// The sentence for a pass that found no job to ask about.
    pub nothing_found: String,
}

impl Reconciled {
    /// Whether any job's webhooks and API disagree (`missed_terminal_event`, `state_mismatch`,
    /// `never_notified`): `reconcile` exits 1 then.
    pub fn disagrees(&self) -> bool {
        self.timelines
            .iter()
            .any(|t| t.flags.iter().any(|f| f.kind.is_disagreement()))
    }
}

/// One sentence on a pass, for the status line: how many jobs were asked about, and what
/// the API disagreed on.
pub fn summary(reconciled: &Reconciled) -> String {
    let n = reconciled.timelines.len();
    if n == 0 {
        return reconciled.nothing_found.clone();
    }
    let mut kinds: Vec<String> = reconciled
        .timelines
        .iter()
        .flat_map(|t| t.problems())
        .filter(|f| {
            f.kind.is_disagreement() || f.kind == crate::domain::timeline::FlagKind::Unreachable
        })
        .map(|f| crate::domain::checks::status_word(&f.kind))
        .collect();
    let total = kinds.len();
    kinds.sort();
    kinds.dedup();
    let mut jobs = if n == 1 {
        "1 job".to_string()
    } else {
        format!("{n} jobs")
    };
    if reconciled.left_out > 0 {
        jobs.push_str(&format!(
            " (the most recent; {} more were seen)",
            reconciled.left_out
        ));
    }
    if total == 0 {
        format!("asked the job API about {jobs}: it agrees with the webhooks")
    } else {
        format!(
            "asked the job API about {jobs}: {total} finding(s) ({})",
            kinds.join(", ")
        )
    }
}

/// Reconciles now: lists in-flight jobs, asks about each job that went quiet (or the one
/// asked for), stores every answer, and returns the timelines.
pub async fn reconcile(
    settings: &Settings,
    store_path: &Path,
    writer: &StoreWriter,
    request: &ReconcileRequest,
    stuck_after_ms: i64,
) -> Result<Reconciled, AppError> {
    let (targets, left_out) = {
        let reader = Reader::open(store_path)?;
        targets(settings, &reader, request, now_ms(), stuck_after_ms)?
    };
    let clients = Clients::new()?;
    let mut order: Vec<String> = targets.iter().map(|t| t.job_id.clone()).collect();
    let mut problems = Vec::new();
    if request.job.is_none() {
        let apis = apis(settings, request.endpoint.as_deref())?;
        let (listed, failed) = list_in_flight(&clients, &apis).await;
        problems = failed;
        order.extend(record_unknown(store_path, writer, listed).await?);
    }
    for target in &targets {
        let poll = poll_job(&clients, target, ON_DEMAND_PATIENCE).await;
        writer
            .maintain(Maintenance::RecordPoll(Box::new(poll)))
            .await?;
    }
    let reader = Reader::open(store_path)?;
    let now = now_ms();
    let timelines = order
        .iter()
        .map(|job| timeline_of(&reader, job, now, stuck_after_ms))
        .collect::<Result<_, _>>()?;
    Ok(Reconciled {
        timelines,
        problems,
        left_out,
        nothing_found: request.which.nothing_found(),
    })
}

/// Follows jobs by polling alone until each is terminal or its deadline passes, pacing each
/// job's polls with the backoff; `on_poll` sees every answer as it comes. Returns the
/// timelines at the end.
pub async fn follow(
    settings: &Settings,
    store_path: &Path,
    writer: &StoreWriter,
    endpoint: &str,
    jobs: &[String],
    stuck_after_ms: i64,
    mut on_poll: impl FnMut(&Poll),
) -> Result<Vec<JobTimeline>, AppError> {
    let (endpoint, api) = apis(settings, Some(endpoint))?.remove(0);
    let clients = Clients::new()?;
    let started = Instant::now();
    let started_ms = now_ms();
    // Each job's polls so far and when it is next due.
    let mut due: HashMap<String, (u32, Instant)> =
        jobs.iter().map(|j| (j.clone(), (0, started))).collect();
    while let Some((job, (n, at))) = due
        .iter()
        .min_by_key(|(_, (_, at))| *at)
        .map(|(j, v)| (j.clone(), *v))
    {
        tokio::time::sleep_until(at.into()).await;
        let target = Target {
            job_id: job.clone(),
            endpoint: endpoint.clone(),
            api: api.clone(),
            first_seen_ms: started_ms,
        };
        let left = api.pacing.deadline.saturating_sub(started.elapsed());
        let poll = poll_job(&clients, &target, left).await;
        writer
            .maintain(Maintenance::RecordPoll(Box::new(poll.clone())))
            .await?;
        on_poll(&poll);
        let next = api.pacing.delay(n + 1, poll.state.as_deref(), jitter());
        if poll.terminal() || started.elapsed() + next > api.pacing.deadline {
            due.remove(&job);
        } else {
            due.insert(job, (n + 1, Instant::now() + next));
        }
    }
    let reader = Reader::open(store_path)?;
    let now = now_ms();
    jobs.iter()
        .map(|job| timeline_of(&reader, job, now, stuck_after_ms))
        .collect()
}

/// The background reconciler of `listen` and the window: a pass at start-up, then one every
/// `every`. Each job that went quiet is asked again only when its backoff says so, and not
/// after its deadline (from when it was first seen); the job is then left flagged `stuck`.
/// `report` gets one sentence per pass that found something.
pub async fn background(
    settings: Settings,
    store_path: std::path::PathBuf,
    writer: StoreWriter,
    stuck_after_ms: i64,
    every: Duration,
    mut report: impl FnMut(String) + Send,
) {
    let Ok(all) = apis(&settings, None) else {
        return;
    };
    let Ok(clients) = Clients::new() else {
        return;
    };
    // At start-up the in-flight listings are read too: a job the store never heard of is
    // what a crash between submitting and storing its id leaves behind.
    {
        let (listed, problems) = list_in_flight(&clients, &all).await;
        for problem in problems {
            report(problem);
        }
        let Ok(recorded) = record_unknown(&store_path, &writer, listed).await else {
            return;
        };
        let unknown = recorded.len();
        if unknown > 0 {
            report(format!(
                "the job API lists {unknown} in-flight job(s) no webhook has named: see the Jobs view or `hookscope reconcile`"
            ));
        }
    }
    let mut polled: HashMap<String, (u32, Instant)> = HashMap::new();
    loop {
        let now = now_ms();
        let found = Reader::open(&store_path)
            .map_err(AppError::from)
            .and_then(|reader| {
                targets(
                    &settings,
                    &reader,
                    &ReconcileRequest::default(),
                    now,
                    stuck_after_ms,
                )
            });
        if let Ok((targets, _)) = found {
            let mut disagreements = 0;
            for target in targets {
                let age = Duration::from_millis((now - target.first_seen_ms).max(0) as u64);
                let (n, next) = polled
                    .get(&target.job_id)
                    .copied()
                    .unwrap_or((0, Instant::now()));
                if age > target.api.pacing.deadline || Instant::now() < next {
                    continue;
                }
                let poll = poll_job(&clients, &target, ON_DEMAND_PATIENCE).await;
                let delay = target
                    .api
                    .pacing
                    .delay(n + 1, poll.state.as_deref(), jitter());
                polled.insert(target.job_id.clone(), (n + 1, Instant::now() + delay));
                if poll.terminal() {
                    disagreements += 1;
                }
                if writer
                    .maintain(Maintenance::RecordPoll(Box::new(poll)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            if disagreements > 0 {
                report(format!(
                    "the job API says {disagreements} quiet job(s) finished without a terminal webhook: see `hookscope reconcile` or the Jobs view"
                ));
            }
        }
        tokio::time::sleep(every).await;
    }
}
