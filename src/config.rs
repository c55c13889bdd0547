//! Configuration: the `config.toml` file, the CLI's overrides, and the endpoints they resolve to.
//!
//! The file holds `[[scheme]]` tables (custom schemes built from a family) and `[[endpoint]]`
//! tables (a path prefix, a scheme, secrets and how to answer). [`Settings`] is the resolved
//! form the receiver uses: each endpoint's scheme looked up, endpoints ordered so that the
//! longest matching prefix wins, and a catch-all for everything else.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::domain::endpoint::{Endpoint, ForwardRule};
use crate::domain::scheme::{Encoding, Family, Scheme, Secret};

/// The default body-size limit: 10 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 10 * 1024 * 1024;
/// The default port of the receiver.
pub const DEFAULT_PORT: u16 = 7878;

/// Errors reading or resolving the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read the config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has unknown or mistyped fields.
    #[error("the config file {path} is invalid: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the TOML parser said, with the line.
        message: String,
    },
    /// An endpoint names a scheme that is neither a preset nor a `[[scheme]]`.
    #[error(
        "endpoint {path} uses scheme \"{scheme}\", which is neither a preset ({presets}) nor a [[scheme]] in the config"
    )]
    UnknownScheme {
        /// The endpoint's path.
        path: String,
        /// The name it used.
        scheme: String,
        /// The preset names, for the message.
        presets: String,
    },
    /// A `[[scheme]]` table is incomplete or inconsistent.
    #[error("scheme \"{name}\" is invalid: {reason}")]
    InvalidScheme {
        /// The scheme's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// An endpoint table is invalid.
    #[error("endpoint {path} is invalid: {reason}")]
    InvalidEndpoint {
        /// The endpoint's path.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The file could not be written.
    #[error("cannot write the config file {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The config file as written by people.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Receiver settings.
    #[serde(default)]
    pub receiver: ReceiverSection,
    /// Custom schemes.
    #[serde(default, rename = "scheme", skip_serializing_if = "Vec::is_empty")]
    pub schemes: Vec<SchemeConfig>,
    /// Endpoints by path prefix.
    #[serde(default, rename = "endpoint", skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<EndpointConfig>,
    /// How much history to keep.
    #[serde(default)]
    pub retention: RetentionSection,
    /// Job timelines.
    #[serde(default)]
    pub jobs: JobsSection,
    /// Payload advice.
    #[serde(default)]
    pub advice: AdviceSection,
    /// A relay to take deliveries from as well.
    #[serde(default, skip_serializing_if = "RelaySection::is_empty")]
    pub relay: RelaySection,
    /// The folder of the file it was read from: relative contract paths start there (none:
    /// the current directory).
    #[serde(skip)]
    pub base_dir: Option<std::path::PathBuf>,
}

/// `[relay]`: a relay channel `listen` and the window subscribe to (docs/relay.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelaySection {
    /// The subscribe URL: the relay's base URL and `/sub/CHANNEL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The environment variable holding the channel's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// A file holding the channel's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// The channel's token itself (the window's *Relay* section keeps it here, in this file of
    /// mode 0600, as it keeps signing secrets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The public URL providers post to (`https://relay.example/in/CHANNEL`), shown to copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// Where `relay serve` and `relay channel …` keep channels and deliveries when not in the
    /// data dir: a NATS JetStream cluster, `nats://HOST:PORT[,HOST:PORT…]` (`--store` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
}

impl RelaySection {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self == &RelaySection::default()
    }
}

/// `[advice]`: what the payload advice judges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdviceSection {
    /// A body over this many bytes gets the size advice (default 20480, the Standard Webhooks
    /// thin-payload guideline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body_bytes: Option<usize>,
}

/// `[jobs]`: how job timelines are judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobsSection {
    /// A job with no terminal state this long after it was first seen is stuck (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_after_minutes: Option<u64>,
}

impl JobsSection {
    /// The stuck threshold in milliseconds.
    pub fn stuck_after_ms(&self) -> i64 {
        (self.stuck_after_minutes.unwrap_or(30).min(1_000_000) * 60_000) as i64
    }
}

/// `[retention]`: how much history to keep (default: everything).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSection {
    /// Delete deliveries older than this many days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_days: Option<u32>,
    /// Keep at most this many deliveries (the newest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_deliveries: Option<u64>,
}

/// `[receiver]`: where to listen and how much to accept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiverSection {
    /// The port (default 7878).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The address to bind (default 127.0.0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// The largest body kept, in bytes (default 10 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_limit_bytes: Option<usize>,
}

/// A `[[scheme]]` table: a custom scheme built from a family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemeConfig {
    /// The name endpoints refer to.
    pub name: String,
    /// The family (`standard-webhooks`, `stripe`, `hmac-body`, `slack`, `paddle`, `twilio`, `token`,
    /// `discord`).
    pub family: Family,
    /// The header carrying the signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_header: Option<String>,
    /// `hex` or `base64` (hmac-body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<Encoding>,
    /// A prefix before the signature, e.g. `sha256=` (hmac-body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The header carrying the event id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id_header: Option<String>,
    /// The header carrying the timestamp (standard-webhooks and slack families).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_header: Option<String>,
    /// The header naming the event type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_type_header: Option<String>,
    /// The default tolerance in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance_secs: Option<u64>,
}

/// An `[[endpoint]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// The path prefix; the longest match wins; `/` catches all.
    pub path: String,
    /// A preset name or a `[[scheme]]` name; absent = detect from headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Signing secrets (several during a rotation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<Secret>,
    /// Timestamp tolerance in seconds (default: the scheme's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance_secs: Option<u64>,
    /// The status hookscope answers with (default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respond_status: Option<u16>,
    /// A delay before answering, in milliseconds (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respond_delay_ms: Option<u64>,
    /// The body hookscope answers with (default `{"received":true,"delivery_id":N}`); some
    /// senders read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respond_body: Option<String>,
    /// Headers to answer with, `{ "Name" = "value" }` (a `content-type` here overrides the
    /// default one).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub respond_headers: std::collections::BTreeMap<String, String>,
    /// JSON pointer to the job id in the body (default: `/job_id`, `/data/job_id`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id_pointer: Option<String>,
    /// JSON pointer to the job state (default: `/data/status`, `/status`, or the event type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_pointer: Option<String>,
    /// JSON pointer to the event's creation time (default: `/created_at`, `/timestamp`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at_pointer: Option<String>,
    /// The URL the sender posts to, as it sees it (a tunnel's): Twilio signs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// `false` turns the payload advice off for this endpoint (default on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<bool>,
    /// `[endpoint.reconcile]`: how to ask the job API what webhooks missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<ReconcileConfig>,
    /// Which handshakes this endpoint answers: `auto` (default, every provider's), `off`, or
    /// one provider's name (`slack`, `meta`, `event-grid`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake: Option<String>,
    /// Meta's Verify token: `hub.verify_token` must equal it for the challenge to be answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_token: Option<Secret>,
    /// The provider's published contract its deliveries are checked against: an OpenAPI 3.1
    /// (`webhooks`) or 3.0 (`x-webhooks`) or AsyncAPI 3 file, YAML or JSON; relative to the
    /// config file's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    /// Or a folder of JSON Schemas, one per event type (`job.completed.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_dir: Option<String>,
    /// `[[endpoint.forward]]`: where deliveries go, each rule with its condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forward: Vec<ForwardConfig>,
}

/// `[[endpoint.forward]]`: a target and, optionally, the condition a delivery must meet to go
/// there, in the list's filter language.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardConfig {
    /// The handler's URL.
    pub to: String,
    /// The condition (`type:invoice.* OR type:charge.*`); absent: every delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// `"mirror"`: the sender gets this target's answer (one rule at most); `"configured"`
    /// (default): the endpoint's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Accept any TLS certificate from this target (a development certificate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
}

/// `[endpoint.reconcile]`: the job API hookscope asks about jobs that went quiet. The API key
/// is named by its environment variable, never written here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileConfig {
    /// The job resource, with `{job_id}`: `https://api.example.com/v1/jobs/{job_id}`.
    pub job_url: String,
    /// The in-flight listing, paged with `cursor_param` (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_url: Option<String>,
    /// The listing's cursor parameter (default `after`); the next cursor is read from
    /// `/next_cursor` while `/has_more` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor_param: Option<String>,
    /// JSON pointer to the state in the job resource (default `/status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_pointer: Option<String>,
    /// JSON pointer to the result URL (default `/result_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_pointer: Option<String>,
    /// JSON pointer to the output's expiry (default `/expires_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_pointer: Option<String>,
    /// The header carrying the API key (default `Authorization` when `auth_env` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_header: Option<String>,
    /// The environment variable holding the API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_env: Option<String>,
    /// The header's value, `{value}` standing for the key (default `Bearer {value}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_template: Option<String>,
    /// The first wait between polls of one job, in milliseconds (default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_initial_ms: Option<u64>,
    /// The longest wait between polls, in milliseconds (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_max_ms: Option<u64>,
    /// How long to keep polling one job before surfacing it instead, in seconds (default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_secs: Option<u64>,
    /// Accept any TLS certificate of the API: a development API on a self-signed one only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
}

impl EndpointConfig {
    /// An endpoint at `path` with every option at its default.
    pub fn new(path: &str) -> Self {
        Self {
            path: path.into(),
            scheme: None,
            secrets: Vec::new(),
            tolerance_secs: None,
            respond_status: None,
            respond_delay_ms: None,
            respond_body: None,
            respond_headers: Default::default(),
            job_id_pointer: None,
            status_pointer: None,
            created_at_pointer: None,
            public_url: None,
            advice: None,
            reconcile: None,
            handshake: None,
            verify_token: None,
            contract: None,
            contract_dir: None,
            forward: Vec::new(),
        }
    }
}

/// What the command line adds on top of the file (`listen --scheme … --secret …`).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--scheme`.
    pub scheme: Option<String>,
    /// `--secret`, repeated.
    pub secrets: Vec<Secret>,
    /// `--tolerance`.
    pub tolerance_secs: Option<u64>,
    /// `--respond-status`.
    pub respond_status: Option<u16>,
    /// `--respond-delay-ms`.
    pub respond_delay_ms: Option<u64>,
}

impl Overrides {
    fn is_empty(&self) -> bool {
        self.scheme.is_none()
            && self.secrets.is_empty()
            && self.tolerance_secs.is_none()
            && self.respond_status.is_none()
            && self.respond_delay_ms.is_none()
    }
}

/// The resolved configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Endpoints, longest prefix first; the last one is always a catch-all `/`.
    pub endpoints: Vec<Endpoint>,
    /// The largest body kept, in bytes.
    pub body_limit: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            endpoints: vec![Endpoint::catch_all()],
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }
}

impl Settings {
    /// Resolves the file and the command-line overrides. The overrides form (or replace) the
    /// catch-all `/` endpoint; longer prefixes from the file still win for their paths.
    pub fn resolve(file: &ConfigFile, overrides: &Overrides) -> Result<Settings, ConfigError> {
        let mut endpoints: Vec<Endpoint> = Vec::new();
        for config in &file.endpoints {
            let endpoint = resolve_endpoint(file, config)?;
            let prefix = endpoint.path.trim_end_matches('/');
            if endpoints
                .iter()
                .any(|e| e.path.trim_end_matches('/') == prefix)
            {
                return Err(ConfigError::InvalidEndpoint {
                    path: config.path.clone(),
                    reason: "another [[endpoint]] has the same path".into(),
                });
            }
            endpoints.push(endpoint);
        }
        if !overrides.is_empty() {
            endpoints.retain(|e| !e.path.trim_end_matches('/').is_empty());
            let config = EndpointConfig {
                path: "/".into(),
                scheme: overrides.scheme.clone(),
                secrets: overrides.secrets.clone(),
                tolerance_secs: overrides.tolerance_secs,
                respond_status: overrides.respond_status,
                respond_delay_ms: overrides.respond_delay_ms,
                ..EndpointConfig::new("/")
            };
            endpoints.push(resolve_endpoint(file, &config)?);
        }
        if !endpoints
            .iter()
            .any(|e| e.path.trim_end_matches('/').is_empty())
        {
            // The catch-all with every default, and the file's sections (`[advice]`) applied.
            endpoints.push(resolve_endpoint(file, &EndpointConfig::new("/"))?);
        }
        endpoints.sort_by_key(|e| std::cmp::Reverse(e.path.trim_end_matches('/').len()));
        let others: Vec<std::sync::Arc<[crate::domain::diagnose::LabelledSecret]>> = endpoints
            .iter()
            .map(|e| std::sync::Arc::from(other_secrets(&endpoints, &e.path)))
            .collect();
        for (endpoint, others) in endpoints.iter_mut().zip(others) {
            endpoint.other_secrets = others;
        }
        Ok(Settings {
            endpoints,
            body_limit: file.receiver.body_limit_bytes.unwrap_or(DEFAULT_BODY_LIMIT),
        })
    }

    /// The endpoint for a request path: the longest prefix that covers it.
    pub fn endpoint_for(&self, path: &str) -> &Endpoint {
        self.endpoints
            .iter()
            .find(|e| e.covers(path))
            .or(self.endpoints.last())
            .unwrap_or_else(|| catch_all_ref())
    }
}

/// Every secret of the endpoints other than the one at `path`, labelled with where it comes from.
fn other_secrets(
    endpoints: &[Endpoint],
    path: &str,
) -> Vec<crate::domain::diagnose::LabelledSecret> {
    endpoints
        .iter()
        .filter(|e| e.path != path)
        .flat_map(|e| {
            e.secrets.iter().enumerate().map(move |(i, secret)| {
                crate::domain::diagnose::LabelledSecret {
                    label: format!("secret #{} of endpoint {}", i + 1, e.path),
                    secret: secret.clone(),
                }
            })
        })
        .collect()
}

fn catch_all_ref() -> &'static Endpoint {
    static CATCH_ALL: std::sync::OnceLock<Endpoint> = std::sync::OnceLock::new();
    CATCH_ALL.get_or_init(Endpoint::catch_all)
}

/// Whether a URL in the config is `http://` or `https://` with a host (public_url, job_url,
/// list_url).
fn is_http_url(url: &str) -> bool {
    crate::domain::scheme::twilio::origin(url)
        .is_some_and(|(proto, host)| matches!(proto.as_str(), "http" | "https") && !host.is_empty())
}

/// An endpoint's contract, compiled (or taken from the cache of compiled ones); a file that
/// does not parse or a `$ref` that does not resolve is an error naming the file, the pointer
/// and why.
/// A path a config file names (a contract): a relative one is in `folder`, the config file's
/// (the current directory without one).
pub fn in_folder(folder: Option<&Path>, name: &str) -> std::path::PathBuf {
    folder.map_or_else(|| std::path::PathBuf::from(name), |dir| dir.join(name))
}

fn contract_of(
    file: &ConfigFile,
    config: &EndpointConfig,
) -> Result<Option<std::sync::Arc<crate::domain::contract::Contract>>, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidEndpoint {
        path: config.path.clone(),
        reason,
    };
    let at = |name: &str| in_folder(file.base_dir.as_deref(), name);
    match (&config.contract, &config.contract_dir) {
        (Some(_), Some(_)) => Err(invalid(
            "contract and contract_dir name two contracts: give one".into(),
        )),
        (Some(name), None) => crate::contracts::load(&at(name))
            .map(Some)
            .map_err(|e| invalid(e.to_string())),
        (None, Some(name)) => crate::contracts::load_dir(&at(name))
            .map(Some)
            .map_err(|e| invalid(e.to_string())),
        (None, None) => Ok(None),
    }
}

/// An endpoint's forwarding rules, checked: an http(s) target, a condition that parses with
/// typed keys only, one mirrored answer at most. The error names the rule.
fn forward_rules(config: &EndpointConfig) -> Result<Vec<ForwardRule>, ConfigError> {
    let mut mirrored: Option<usize> = None;
    let mut rules = Vec::with_capacity(config.forward.len());
    for (n, rule) in config.forward.iter().enumerate() {
        let invalid = |reason: String| ConfigError::InvalidEndpoint {
            path: config.path.clone(),
            reason: format!(
                "forward rule {} (to \"{}\"): {reason}",
                n + 1,
                crate::domain::delivery::masked_url(&rule.to)
            ),
        };
        let to = rule.to.trim();
        if !is_http_url(to) {
            return Err(invalid(
                "`to` is not an http:// or https:// URL with a host".into(),
            ));
        }
        let when = rule
            .when
            .as_deref()
            .map(str::trim)
            .filter(|w| !w.is_empty());
        let filter = when
            .map(crate::domain::filter::Filter::parse_rule)
            .transpose()
            .map_err(|e| invalid(format!("when \"{}\": {e}", when.unwrap_or_default())))?;
        let mirror = match rule.answer.as_deref().map(str::trim) {
            None | Some("configured") => false,
            Some("mirror") => true,
            Some(other) => {
                return Err(invalid(format!(
                    "answer \"{other}\" is not \"mirror\" or \"configured\""
                )));
            }
        };
        if mirror {
            if let Some(first) = mirrored {
                return Err(invalid(format!(
                    "rule {} already mirrors its answer; the sender can get one answer only",
                    first + 1
                )));
            }
            mirrored = Some(n);
        }
        rules.push(ForwardRule {
            to: to.to_string(),
            when: when.map(str::to_string),
            filter,
            mirror,
            insecure: rule.insecure.unwrap_or(false),
        });
    }
    Ok(rules)
}

/// An endpoint's job API, checked: http(s) URLs, `{job_id}` in the job URL, JSON pointers.
fn reconcile_api(
    path: &str,
    config: &ReconcileConfig,
) -> Result<crate::domain::reconcile::ApiConfig, ConfigError> {
    use crate::domain::reconcile::{ApiConfig, Auth, Pacing};
    let invalid = |reason: String| ConfigError::InvalidEndpoint {
        path: path.to_string(),
        reason: format!("reconcile: {reason}"),
    };
    if !is_http_url(&config.job_url) || !config.job_url.contains("{job_id}") {
        return Err(invalid(format!(
            "job_url \"{}\" must be an http:// or https:// URL with {{job_id}} where the id goes",
            config.job_url
        )));
    }
    if let Some(list) = &config.list_url
        && !is_http_url(list)
    {
        return Err(invalid(format!(
            "list_url \"{list}\" is not an http:// or https:// URL"
        )));
    }
    let pointer = |name: &str, value: &Option<String>, default: &str| {
        let p = value.clone().unwrap_or_else(|| default.to_string());
        if p.starts_with('/') {
            Ok(p)
        } else {
            Err(invalid(format!(
                "{name} \"{p}\" is not a JSON pointer (it starts with /)"
            )))
        }
    };
    let defaults = Pacing::default();
    let pacing = Pacing {
        initial: config
            .poll_initial_ms
            .map(std::time::Duration::from_millis)
            .unwrap_or(defaults.initial),
        max: config
            .poll_max_ms
            .map(std::time::Duration::from_millis)
            .unwrap_or(defaults.max),
        deadline: config
            .deadline_secs
            .map(std::time::Duration::from_secs)
            .unwrap_or(defaults.deadline),
    };
    if pacing.initial.is_zero() || pacing.max < pacing.initial {
        return Err(invalid(
            "poll_initial_ms must be above 0 and poll_max_ms at least as long".into(),
        ));
    }
    Ok(ApiConfig {
        job_url: config.job_url.clone(),
        list_url: config.list_url.clone(),
        cursor_param: config
            .cursor_param
            .clone()
            .unwrap_or_else(|| "after".into()),
        state_pointer: pointer("state_pointer", &config.state_pointer, "/status")?,
        result_pointer: pointer("result_pointer", &config.result_pointer, "/result_url")?,
        expires_pointer: pointer("expires_pointer", &config.expires_pointer, "/expires_at")?,
        auth: config.auth_env.as_ref().map(|env| Auth {
            header: config
                .auth_header
                .clone()
                .unwrap_or_else(|| "Authorization".into()),
            env: env.clone(),
            template: config
                .auth_template
                .clone()
                .unwrap_or_else(|| "Bearer {value}".into()),
        }),
        pacing,
        insecure: config.insecure.unwrap_or(false),
    })
}

/// The payload advice's rules: the file's `[advice]` section and an endpoint's `advice` switch.
pub fn advice_rules(file: &ConfigFile, enabled: Option<bool>) -> crate::domain::advice::Rules {
    crate::domain::advice::Rules {
        enabled: enabled.unwrap_or(true),
        max_body_bytes: file
            .advice
            .max_body_bytes
            .unwrap_or(crate::domain::advice::DEFAULT_MAX_BODY_BYTES),
    }
}

/// Looks up a scheme by name: the file's `[[scheme]]` tables first, then the presets.
pub fn find_scheme(file: &ConfigFile, name: &str) -> Result<Option<Scheme>, ConfigError> {
    match file.schemes.iter().find(|s| s.name == name) {
        Some(config) => build_scheme(config).map(Some),
        None => Ok(Scheme::preset(name)),
    }
}

/// The preset names, for messages.
pub fn preset_names() -> String {
    crate::domain::scheme::presets()
        .iter()
        .map(|s| s.name.clone())
        .collect::<Vec<_>>()
        .join(", ")
}

fn resolve_endpoint(file: &ConfigFile, config: &EndpointConfig) -> Result<Endpoint, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidEndpoint {
        path: config.path.clone(),
        reason,
    };
    if !config.path.starts_with('/') {
        return Err(invalid("the path must start with `/`".into()));
    }
    let scheme = endpoint_scheme(file, config)?;
    if config.secrets.iter().any(|s| s.expose().trim().is_empty()) {
        return Err(invalid("a secret is empty".into()));
    }
    let respond_status = config.respond_status.unwrap_or(200);
    if !(100..=599).contains(&respond_status) {
        return Err(invalid(format!(
            "respond_status {respond_status} is not an HTTP status (100-599)"
        )));
    }
    check_pointers(config).map_err(invalid)?;
    let handshake = match &config.handshake {
        None => crate::domain::handshake::Accept::Any,
        Some(text) => crate::domain::handshake::Accept::parse(text).map_err(invalid)?,
    };
    let token = config.verify_token.as_ref();
    if token.is_some_and(|t| t.expose().trim().is_empty()) {
        return Err(invalid("verify_token is empty".into()));
    }
    Ok(Endpoint {
        path: config.path.clone(),
        scheme,
        secrets: config.secrets.clone(),
        tolerance_secs: config.tolerance_secs,
        respond_status,
        respond_delay_ms: config.respond_delay_ms.unwrap_or(0),
        respond_body: config.respond_body.clone(),
        respond_headers: respond_headers(config)?,
        job_pointers: crate::domain::job::JobPointers {
            job_id: config.job_id_pointer.clone(),
            status: config.status_pointer.clone(),
            created_at: config.created_at_pointer.clone(),
        },
        public_url: config.public_url.clone(),
        advice: advice_rules(file, config.advice),
        reconcile: config
            .reconcile
            .as_ref()
            .map(|r| reconcile_api(&config.path, r))
            .transpose()?,
        handshake,
        verify_token: config.verify_token.clone(),
        forward: forward_rules(config)?,
        contract: contract_of(file, config)?,
        other_secrets: std::sync::Arc::from(Vec::new()),
    })
}

/// An endpoint's scheme (a preset or one of the file's `[[scheme]]`s), with the endpoint's
/// public URL when it gives one (Twilio signs the URL it posted to).
fn endpoint_scheme(
    file: &ConfigFile,
    config: &EndpointConfig,
) -> Result<Option<crate::domain::scheme::Scheme>, ConfigError> {
    let mut scheme = match &config.scheme {
        None => None,
        Some(name) => Some(
            find_scheme(file, name)?.ok_or_else(|| ConfigError::UnknownScheme {
                path: config.path.clone(),
                scheme: name.clone(),
                presets: preset_names(),
            })?,
        ),
    };
    if let Some(url) = &config.public_url {
        if !is_http_url(url) {
            return Err(ConfigError::InvalidEndpoint {
                path: config.path.clone(),
                reason: format!(
                    "public_url \"{url}\" is not an http:// or https:// URL with a host"
                ),
            });
        }
        if let Some(s) = scheme.as_mut() {
            s.public_url = Some(url.clone());
        }
    }
    Ok(scheme)
}

/// The endpoint's job pointers, each empty or a JSON pointer; `Err` says which is not.
fn check_pointers(config: &EndpointConfig) -> Result<(), String> {
    for (name, pointer) in [
        ("job_id_pointer", &config.job_id_pointer),
        ("status_pointer", &config.status_pointer),
        ("created_at_pointer", &config.created_at_pointer),
    ] {
        if let Some(p) = pointer
            && !p.is_empty()
            && !p.starts_with('/')
        {
            return Err(format!(
                "{name} \"{p}\" is not a JSON pointer (it starts with /, e.g. \"/data/job_id\")"
            ));
        }
    }
    Ok(())
}

/// The answer headers of an endpoint, each a valid HTTP header; hop-by-hop and length headers
/// are hookscope's to set.
fn respond_headers(config: &EndpointConfig) -> Result<Vec<(String, String)>, ConfigError> {
    let invalid = |reason: String| ConfigError::InvalidEndpoint {
        path: config.path.clone(),
        reason,
    };
    config
        .respond_headers
        .iter()
        .map(|(name, value)| {
            let lower = name.to_ascii_lowercase();
            let valid_name = !lower.is_empty()
                && lower
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !valid_name {
                return Err(invalid(format!(
                    "respond_headers: \"{name}\" is not a header name"
                )));
            }
            if matches!(
                lower.as_str(),
                "content-length" | "transfer-encoding" | "connection"
            ) {
                return Err(invalid(format!(
                    "respond_headers: {name} is set by hookscope"
                )));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(invalid(format!(
                    "respond_headers: the value of {name} has a line break"
                )));
            }
            Ok((lower, value.clone()))
        })
        .collect()
}

/// Builds a custom scheme from its family's preset and the table's fields.
pub fn build_scheme(config: &SchemeConfig) -> Result<Scheme, ConfigError> {
    let base = match config.family {
        Family::StandardWebhooks => "standard-webhooks",
        Family::Stripe => "stripe",
        Family::Slack => "slack",
        Family::Paddle => "paddle",
        Family::HmacBody => "github",
        Family::Twilio => "twilio",
        Family::Token => "gitlab",
        Family::Discord => "discord",
        Family::Twitch => "twitch",
    };
    let mut scheme = Scheme::preset(base).ok_or_else(|| ConfigError::InvalidScheme {
        name: config.name.clone(),
        reason: format!("family preset {base} is missing"),
    })?;
    scheme.name = config.name.clone();
    scheme.label = config.name.clone();
    if matches!(config.family, Family::HmacBody | Family::Token) {
        // A plain body HMAC has no provider defaults worth inheriting: everything is the table's.
        scheme.prefix = String::new();
        scheme.event_id_header = None;
        scheme.event_type_header = None;
        if config.signature_header.is_none() {
            return Err(ConfigError::InvalidScheme {
                name: config.name.clone(),
                reason: format!(
                    "the {} family needs signature_header",
                    config.family.config_name()
                ),
            });
        }
    }
    if let Some(h) = &config.signature_header {
        scheme.signature_header = h.to_ascii_lowercase();
    }
    if let Some(e) = config.encoding {
        if config.family != Family::HmacBody {
            return Err(ConfigError::InvalidScheme {
                name: config.name.clone(),
                reason: format!(
                    "encoding is fixed by the {} family",
                    config.family.config_name()
                ),
            });
        }
        scheme.encoding = e;
    }
    if let Some(p) = &config.prefix {
        scheme.prefix = p.clone();
    }
    if let Some(h) = &config.event_id_header {
        scheme.event_id_header = Some(h.to_ascii_lowercase());
    }
    if let Some(h) = &config.timestamp_header {
        if !matches!(
            config.family,
            Family::StandardWebhooks | Family::Slack | Family::Discord | Family::Twitch
        ) {
            return Err(ConfigError::InvalidScheme {
                name: config.name.clone(),
                reason: format!(
                    "the {} family keeps its timestamp in the signature header",
                    config.family.config_name()
                ),
            });
        }
        scheme.timestamp_header = Some(h.to_ascii_lowercase());
    }
    if let Some(h) = &config.event_type_header {
        scheme.event_type_header = Some(h.to_ascii_lowercase());
    }
    if config.tolerance_secs.is_some() {
        scheme.tolerance_secs = config.tolerance_secs;
    }
    Ok(scheme)
}

/// The new config `fresh` written over the text `old`: values, tables and endpoints present in
/// both keep their place, comments and formatting in `old`; what is new is appended; what is
/// gone is removed. `None` when `old` does not parse as TOML (then the fresh text is written).
pub fn merge_preserving(old: &str, fresh: &str) -> Option<String> {
    let mut doc: toml_edit::DocumentMut = old.parse().ok()?;
    let new: toml_edit::DocumentMut = fresh.parse().ok()?;
    merge_table(doc.as_table_mut(), new.as_table());
    Some(doc.to_string())
}

fn merge_table(old: &mut toml_edit::Table, new: &toml_edit::Table) {
    let gone: Vec<String> = old
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| !new.contains_key(k))
        .collect();
    for key in gone {
        old.remove(&key);
    }
    for (key, item) in new.iter() {
        match old.get_mut(key) {
            Some(existing) => merge_item(existing, item),
            // An empty section the file never had stays out of it.
            None if item.as_table().is_some_and(|t| t.is_empty()) => {}
            None => {
                old.insert(key, item.clone());
            }
        }
    }
}

fn merge_item(old: &mut toml_edit::Item, new: &toml_edit::Item) {
    use toml_edit::Item;
    match (old, new) {
        (Item::Table(old), Item::Table(new)) => merge_table(old, new),
        (Item::ArrayOfTables(old), Item::ArrayOfTables(new)) => {
            // Endpoints and schemes by position: the n-th keeps its comments while it is there.
            while old.len() > new.len() {
                old.remove(old.len() - 1);
            }
            for (i, table) in new.iter().enumerate() {
                match old.get_mut(i) {
                    Some(existing) => merge_table(existing, table),
                    None => old.push(table.clone()),
                }
            }
        }
        (Item::Value(old), Item::Value(new)) => {
            if old.to_string().trim() != new.to_string().trim() {
                let decor = old.decor().clone();
                *old = new.clone();
                *old.decor_mut() = decor;
            }
        }
        (old, new) => *old = new.clone(),
    }
}

/// Reads a config file; a missing file is an empty configuration.
pub fn load_file(path: &Path) -> Result<ConfigFile, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ConfigFile::default()),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut file = parse(&text).map_err(|message| ConfigError::Parse {
        path: path.to_path_buf(),
        message,
    })?;
    file.base_dir = path.parent().map(Path::to_path_buf);
    Ok(file)
}

/// A warning when the config file holds a secret (an endpoint's signing secrets or Meta's
/// verify token) and can be read by other users.
pub fn permission_warning(path: &Path, file: &ConfigFile) -> Option<String> {
    let holds_secrets = file
        .endpoints
        .iter()
        .any(|e| !e.secrets.is_empty() || e.verify_token.is_some())
        || file.relay.token.is_some();
    if !holds_secrets {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            return Some(format!(
                "warning: {} is readable by other users (mode {:o}) and holds signing secrets: run chmod 600 on it",
                path.display(),
                mode & 0o777
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    None
}

/// Parses config text; the error is the parser's message with its location.
pub fn parse(text: &str) -> Result<ConfigFile, String> {
    toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_string();
        match e.span() {
            Some(span) => {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
                format!("line {line}, column {column}: {message}")
            }
            None => message,
        }
    })
}

/// Writes a config file atomically with mode 0600, since it holds secrets.
pub fn save_file(path: &Path, file: &ConfigFile) -> Result<(), ConfigError> {
    let write_err = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let to_text = |pretty: bool| {
        if pretty {
            toml::to_string_pretty(file)
        } else {
            toml::to_string(file)
        }
        .map_err(|e| write_err(std::io::Error::other(e.to_string())))
    };
    // Keep what the person wrote around the values: comments, key order, formatting.
    let text = match std::fs::read_to_string(path) {
        Ok(old) => match merge_preserving(&old, &to_text(false)?) {
            Some(merged) => merged,
            None => to_text(true)?,
        },
        Err(_) => to_text(true)?,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write_err)?;
    }
    let tmp = path.with_extension("toml.tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut out = options.open(&tmp).map_err(write_err)?;
    out.write_all(text.as_bytes()).map_err(write_err)?;
    out.sync_all().map_err(write_err)?;
    std::fs::rename(&tmp, path).map_err(write_err)
}

/// The platform data directory (`~/.local/share/hookscope` on Linux).
pub fn default_data_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("dev", "hookscope", "hookscope")
        .map(|d| d.data_dir().to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_with_a_bad_field_is_refused_naming_it() {
        for (line, says) in [
            (
                "job_id_pointer = \"data.id\"",
                "job_id_pointer \"data.id\" is not a JSON pointer",
            ),
            (
                "status_pointer = \"x\"",
                "status_pointer \"x\" is not a JSON pointer",
            ),
            (
                "respond_status = 700",
                "respond_status 700 is not an HTTP status (100-599)",
            ),
            ("secrets = [\" \"]", "a secret is empty"),
            ("verify_token = \" \"", "verify_token is empty"),
            (
                "public_url = \"ftp://x\"",
                "public_url \"ftp://x\" is not an http:// or https:// URL",
            ),
            ("scheme = \"nope\"", "nope"),
        ] {
            let file = parse(&format!("[[endpoint]]\npath = \"/x\"\n{line}\n")).expect("parses");
            let refused = Settings::resolve(&file, &Overrides::default()).expect_err(line);
            let said = refused.to_string();
            assert!(said.contains(says) && said.contains("/x"), "{line}: {said}");
        }
        let fine =
            parse("[[endpoint]]\npath = \"/x\"\njob_id_pointer = \"/data/id\"\n").expect("parses");
        assert!(Settings::resolve(&fine, &Overrides::default()).is_ok());
    }

    #[test]
    fn longest_prefix_wins_on_segment_boundaries() {
        let file = parse(
            r#"
            [[endpoint]]
            path = "/hooks"
            respond_status = 202
            [[endpoint]]
            path = "/hooks/acme"
            respond_status = 204
            "#,
        )
        .expect("valid");
        let settings = Settings::resolve(&file, &Overrides::default()).expect("resolves");
        assert_eq!(settings.endpoint_for("/hooks/acme/x").respond_status, 204);
        assert_eq!(settings.endpoint_for("/hooks/acmex").respond_status, 202);
        assert_eq!(settings.endpoint_for("/other").respond_status, 200);
    }

    #[test]
    fn custom_hmac_body_scheme_from_the_design_example() {
        let file = parse(
            r#"
            [[scheme]]
            name = "acme"
            family = "hmac-body"
            signature_header = "X-Acme-Signature"
            encoding = "hex"
            prefix = ""
            event_id_header = "X-Acme-Event-Id"

            [[endpoint]]
            path = "/hooks/acme"
            scheme = "acme"
            secrets = ["one", "two"]
            tolerance_secs = 300
            respond_status = 200
            respond_delay_ms = 0
            "#,
        )
        .expect("valid");
        let settings = Settings::resolve(&file, &Overrides::default()).expect("resolves");
        let endpoint = settings.endpoint_for("/hooks/acme");
        let scheme = endpoint.scheme.as_ref().expect("scheme");
        assert_eq!(scheme.signature_header, "x-acme-signature");
        assert_eq!(scheme.event_id_header.as_deref(), Some("x-acme-event-id"));
        assert_eq!(endpoint.secrets.len(), 2);
    }

    #[test]
    fn each_endpoint_knows_the_other_endpoints_secrets_for_the_diagnosis() {
        let file = parse(
            "[[endpoint]]\npath = \"/a\"\nsecrets = [\"sa\"]\n[[endpoint]]\npath = \"/b\"\nsecrets = [\"sb1\", \"sb2\"]\n",
        )
        .expect("valid");
        let settings = Settings::resolve(&file, &Overrides::default()).expect("resolves");
        let labels: Vec<String> = settings
            .endpoint_for("/a")
            .other_secrets
            .iter()
            .map(|s| s.label.clone())
            .collect();
        assert_eq!(
            labels,
            ["secret #1 of endpoint /b", "secret #2 of endpoint /b"]
        );
        assert_eq!(settings.endpoint_for("/b").other_secrets.len(), 1);
        assert_eq!(settings.endpoint_for("/elsewhere").other_secrets.len(), 3);
    }

    #[test]
    fn unknown_scheme_and_typos_are_clear_errors() {
        let file = parse("[[endpoint]]\npath = \"/x\"\nscheme = \"strpe\"\n").expect("parses");
        let err = Settings::resolve(&file, &Overrides::default()).expect_err("unknown");
        assert!(err.to_string().contains("\"strpe\""), "{err}");
        let err = parse("[[endpoint]]\npath = \"/x\"\nsecret = \"s\"\n").expect_err("typo");
        assert!(
            err.starts_with("line 3, column 1: unknown field `secret`"),
            "{err}"
        );
    }

    #[test]
    fn saved_config_is_private_and_reloads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.toml");
        let file = ConfigFile {
            endpoints: vec![EndpointConfig {
                path: "/".into(),
                scheme: Some("stripe".into()),
                secrets: vec![Secret::new("whsec_x")],
                ..EndpointConfig::new("/")
            }],
            ..ConfigFile::default()
        };
        save_file(&path, &file).expect("saves");
        let loaded = load_file(&path).expect("loads");
        // Relative contract paths start in the file's folder.
        assert_eq!(loaded.base_dir.as_deref(), Some(dir.path()));
        assert_eq!(
            ConfigFile {
                base_dir: None,
                ..loaded
            },
            file
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn saving_keeps_the_comments_and_order_of_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.toml");
        let original = r#"# hookscope for the OCR integration
[jobs]
stuck_after_minutes = 45   # needs_review can take a while

# The OCR provider signs with Standard Webhooks.
[[endpoint]]
path = "/hooks/ocr"
scheme = "standard-webhooks"
secrets = ["whsec_old"]    # rotate in December
tolerance_secs = 600
"#;
        std::fs::write(&path, original).expect("write");
        let mut file = load_file(&path).expect("loads");
        file.endpoints[0].secrets.push(Secret::new("whsec_new"));
        file.endpoints[0].tolerance_secs = None;
        file.endpoints.push(EndpointConfig::new("/hooks/github"));
        save_file(&path, &file).expect("saves");
        let saved = std::fs::read_to_string(&path).expect("read");
        assert_eq!(load_file(&path).expect("reloads"), file);
        for kept in [
            "# hookscope for the OCR integration",
            "# needs_review can take a while",
            "# The OCR provider signs with Standard Webhooks.",
            "# rotate in December",
        ] {
            assert!(saved.contains(kept), "lost {kept:?}:\n{saved}");
        }
        assert!(
            saved.contains(r#"secrets = ["whsec_old", "whsec_new"]"#),
            "{saved}"
        );
        assert!(!saved.contains("tolerance_secs"), "{saved}");
        assert!(
            saved.find("[jobs]") < saved.find("/hooks/ocr")
                && saved.find("/hooks/ocr") < saved.find("/hooks/github"),
            "{saved}"
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_replaced_by_a_fresh_one() {
        assert_eq!(merge_preserving("not [toml", "a = 1\n"), None);
    }
}
