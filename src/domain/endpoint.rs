//! An endpoint as the receiver and the checks use it: a path prefix with its scheme, secrets,
//! tolerance and answer. The config layer resolves these from `config.toml`; nothing here reads
//! a file.

use crate::domain::advice;
use crate::domain::diagnose::LabelledSecret;
use crate::domain::job::JobPointers;
use crate::domain::scheme::{Scheme, Secret};

/// A resolved endpoint, as the receiver and the checks use it.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The path prefix.
    pub path: String,
    /// The scheme, or `None` to detect it from the headers.
    pub scheme: Option<Scheme>,
    /// Secrets to try, in order.
    pub secrets: Vec<Secret>,
    /// Tolerance override in seconds.
    pub tolerance_secs: Option<u64>,
    /// The status to answer with.
    pub respond_status: u16,
    /// The delay before answering, in milliseconds.
    pub respond_delay_ms: u64,
    /// The body to answer with, when not hookscope's own.
    pub respond_body: Option<String>,
    /// Extra headers to answer with (lower-case names).
    pub respond_headers: Vec<(String, String)>,
    /// Where the job facts are in a body, when not the defaults.
    pub job_pointers: JobPointers,
    /// The URL the sender posts to (a tunnel's), for schemes that sign it (Twilio).
    pub public_url: Option<String>,
    /// What the payload advice looks for.
    pub advice: advice::Rules,
    /// The job API to reconcile with, when `[endpoint.reconcile]` is set.
    pub reconcile: Option<crate::domain::reconcile::ApiConfig>,
    /// Which providers' handshakes it answers (`handshake = …`; every one by default).
    pub handshake: crate::domain::handshake::Accept,
    /// Meta's verify token, which its `hub.verify_token` must equal.
    pub verify_token: Option<Secret>,
    /// Where deliveries are forwarded, each rule with its condition (`[[endpoint.forward]]`).
    pub forward: Vec<ForwardRule>,
    /// The provider's published schemas its deliveries are checked against (`contract`,
    /// `contract_dir`), compiled once per file.
    pub contract: Option<std::sync::Arc<crate::domain::contract::Contract>>,
    /// The other endpoints' secrets, labelled, for the diagnosis of a failed signature
    /// ("another endpoint's secret"); computed once when the settings are resolved.
    pub other_secrets: std::sync::Arc<[LabelledSecret]>,
}

/// A forwarding rule: every delivery its condition matches goes to `to`, byte for byte.
#[derive(Debug, Clone, PartialEq)]
pub struct ForwardRule {
    /// The handler's URL (http or https).
    pub to: String,
    /// The condition as written (`type:invoice.* OR type:charge.*`), `None` for every delivery.
    pub when: Option<String>,
    /// The condition parsed.
    pub filter: Option<crate::domain::filter::Filter>,
    /// The sender gets this target's answer instead of the endpoint's configured one.
    pub mirror: bool,
    /// Accept any TLS certificate from this target (a development certificate).
    pub insecure: bool,
}

impl ForwardRule {
    /// "http://localhost:3000/billing when type:invoice.*", for lines and lists.
    pub fn describe(&self) -> String {
        let mut line = crate::domain::delivery::masked_url(&self.to);
        match &self.when {
            Some(when) => line.push_str(&format!(" when {when}")),
            None => line.push_str(" (every delivery)"),
        }
        if self.mirror {
            line.push_str(", its answer mirrored");
        }
        line
    }
}

impl Endpoint {
    /// The catch-all endpoint used when nothing is configured: detect, answer 200 at once.
    pub fn catch_all() -> Self {
        Self {
            path: "/".into(),
            scheme: None,
            secrets: Vec::new(),
            tolerance_secs: None,
            respond_status: 200,
            respond_delay_ms: 0,
            respond_body: None,
            respond_headers: Vec::new(),
            job_pointers: JobPointers::default(),
            public_url: None,
            advice: advice::Rules::default(),
            reconcile: None,
            handshake: crate::domain::handshake::Accept::Any,
            verify_token: None,
            forward: Vec::new(),
            contract: None,
            other_secrets: std::sync::Arc::from(Vec::new()),
        }
    }

    /// Whether this endpoint's prefix covers `path`, on segment boundaries (`/hooks/a` covers
    /// `/hooks/a` and `/hooks/a/x`, not `/hooks/ab`).
    pub fn covers(&self, path: &str) -> bool {
        let prefix = self.path.trim_end_matches('/');
        if prefix.is_empty() {
            return true;
        }
        path == prefix
            || path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/'))
    }
}
