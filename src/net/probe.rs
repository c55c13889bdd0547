//! The receiver checklist, run against the developer's handler: a table of cases (how each
//! request is built, what a correct handler answers, when a case applies), then the answer time.

use std::time::Duration;

use base64::Engine as _;
use serde::Serialize;

use crate::domain::attempt::{Attempt, AttemptKind};
use crate::domain::clock::now_secs;
use crate::domain::delivery::Header;
use crate::domain::handshake::{Challenge, Keys, Provider};
use crate::domain::scheme::{Family, FuturePolicy, Scheme, Secret, new_event_id, with_event_id};
use crate::net::client::{Client, Outgoing, SLOW_ANSWER, SendError, check_url};

/// One probe case's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The handler did what a correct receiver does.
    Pass,
    /// It did not.
    Fail,
    /// Correct, but worth a look (a slow answer).
    Warn,
    /// Does not apply to this scheme.
    Skipped,
}

/// One case of the probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeCase {
    /// A short name (`tampered_signature`, …).
    pub name: String,
    /// What a correct handler answers.
    pub expected: String,
    /// The verdict.
    pub verdict: Verdict,
    /// The statuses the handler answered (two for the replay case).
    pub statuses: Vec<u16>,
    /// The slowest answer, in milliseconds.
    pub latency_ms: u64,
    /// The evidence in a sentence.
    pub detail: String,
}

/// The whole probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeReport {
    /// The handler probed.
    pub url: String,
    /// The scheme used.
    pub scheme: String,
    /// Each case.
    pub cases: Vec<ProbeCase>,
    /// Whether every case passed (warnings and skipped cases do not fail it).
    pub passed: bool,
}

/// The default probe body: a thin job event.
pub fn sample_body(event_id: &str, now_secs: i64) -> Vec<u8> {
    format!(
        r#"{{"id":"{event_id}","type":"job.completed","created_at":{now_secs},"data":{{"job_id":"job_probe_{}","status":"completed","result_url":"https://example.com/results/probe"}}}}"#,
        &event_id[event_id.len().saturating_sub(8)..]
    )
    .into_bytes()
}

/// The same JSON with other spacing and the top-level keys reversed: still valid, still the
/// same event, different bytes.
pub fn respaced(body: &[u8]) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let object = value.as_object()?;
    let mut out = String::from("{\n    ");
    let entries: Vec<String> = object
        .iter()
        .rev()
        .map(|(k, v)| {
            format!(
                "{}  :   {}",
                serde_json::to_string(k).unwrap_or_default(),
                serde_json::to_string_pretty(v).unwrap_or_default()
            )
        })
        .collect();
    out.push_str(&entries.join(" ,\n    "));
    out.push_str("\n}\n");
    Some(out.into_bytes())
}

fn is_2xx(status: Option<u16>) -> bool {
    status.is_some_and(|s| (200..300).contains(&s))
}

fn is_4xx(status: Option<u16>) -> bool {
    status.is_some_and(|s| (400..500).contains(&s))
}

fn describe(attempt: &Attempt) -> String {
    match (attempt.status, &attempt.error) {
        (Some(s), _) => format!("answered {s} in {} ms", attempt.latency_ms),
        (None, Some(e)) => e.clone(),
        (None, None) => "no answer".into(),
    }
}

/// What a correct handler answers to a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A 2xx: the delivery is genuine and must be acknowledged.
    Accept,
    /// A 4xx: the delivery must be refused.
    Refuse,
    /// A 2xx to each of two sends of one event (a retry is acknowledged, processed once).
    AcceptEach,
}

impl Expect {
    fn label(self) -> &'static str {
        match self {
            Expect::Accept => "2xx",
            Expect::Refuse => "4xx",
            Expect::AcceptEach => "2xx twice",
        }
    }

    fn met_by(self, attempts: &[Attempt]) -> bool {
        match self {
            Expect::Accept | Expect::AcceptEach => attempts.iter().all(|a| is_2xx(a.status)),
            Expect::Refuse => attempts.iter().all(|a| is_4xx(a.status)),
        }
    }
}

/// How a case's requests are made from a fresh event, correctly signed unless the case says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    /// Signed now, as a sender would.
    Valid,
    /// Every signature forged: one bit of its MAC flipped (`Scheme::forge`).
    Forged,
    /// The signature header left out.
    DropSignature,
    /// Signed correctly with a timestamp beyond the tolerance (`Scheme::beyond_tolerance_secs`):
    /// in the past (`-1`) or the future (`1`).
    Shifted(i64),
    /// The same event twice: fresh timestamps and signatures, the same id.
    Retry,
    /// The same JSON value in other bytes (spacing, key order), signed over those bytes.
    Respaced,
    /// Two signatures in the header, a stranger's first, then the real one.
    Rotation,
}

/// One line of the receiver checklist: how to build it, what a correct handler answers, when it
/// applies, and the sentence for each outcome. In the sentences `{answer}` is what the handler
/// did (`{answer2}` for the second send), `{header}` the scheme's signature header and `{age}`
/// how far a shifted timestamp is off.
struct CaseSpec {
    name: &'static str,
    build: Build,
    expect: Expect,
    passed: &'static str,
    failed: &'static str,
}

/// The checklist of docs/webhooks.md, in the order it runs.
const CASES: &[CaseSpec] = &[
    CaseSpec {
        name: "valid",
        build: Build::Valid,
        expect: Expect::Accept,
        passed: "A correctly signed delivery was accepted ({answer}).",
        failed: "A correctly signed delivery was refused ({answer}): check the handler's secret and scheme; the other cases mean little until this passes.",
    },
    CaseSpec {
        name: "tampered_signature",
        build: Build::Forged,
        expect: Expect::Refuse,
        passed: "A signature with one bit of its MAC changed was refused ({answer}).",
        failed: "A signature with one bit of its MAC changed was not refused ({answer}): the handler does not verify signatures, or not in full.",
    },
    CaseSpec {
        name: "missing_signature",
        build: Build::DropSignature,
        expect: Expect::Refuse,
        passed: "A delivery without the {header} header was refused ({answer}).",
        failed: "A delivery without the {header} header was accepted ({answer}): anyone can post to this handler.",
    },
    CaseSpec {
        name: "stale_timestamp",
        build: Build::Shifted(-1),
        expect: Expect::Refuse,
        passed: "A correctly signed delivery {age} old was refused ({answer}).",
        failed: "A correctly signed delivery {age} old was accepted ({answer}): the handler does not check the timestamp, so a captured delivery can be replayed.",
    },
    CaseSpec {
        name: "future_timestamp",
        build: Build::Shifted(1),
        expect: Expect::Refuse,
        passed: "A correctly signed delivery {age} in the future was refused ({answer}).",
        failed: "A correctly signed delivery {age} in the future was accepted ({answer}): the handler does not check the timestamp, so a captured delivery can be replayed.",
    },
    CaseSpec {
        name: "replay_same_event",
        build: Build::Retry,
        expect: Expect::AcceptEach,
        passed: "A retry of the same event was acknowledged both times ({answer}, then {answer2}); make sure it was processed once.",
        failed: "A retry of the same event was not acknowledged ({answer}, then {answer2}): a sender keeps retrying a non-2xx for hours; answer 2xx to duplicates and skip the work.",
    },
    CaseSpec {
        name: "respaced_json",
        build: Build::Respaced,
        expect: Expect::Accept,
        passed: "A valid signature over re-spaced, re-ordered JSON was accepted ({answer}): the handler verifies the raw bytes.",
        failed: "A valid signature over re-spaced, re-ordered JSON was refused ({answer}): the handler verifies a re-serialised body, not the raw bytes it received; read the raw body before any JSON parsing.",
    },
    CaseSpec {
        name: "rotation_two_signatures",
        build: Build::Rotation,
        expect: Expect::Accept,
        passed: "A header with two signatures, only the second valid, was accepted ({answer}).",
        failed: "A header with two signatures, only the second valid, was refused ({answer}): during a secret rotation the handler would reject every delivery; try each signature.",
    },
];

/// Why a case does not apply to a scheme or a body, with the `expected` word to report; `None`
/// when it applies.
fn not_applicable(build: Build, scheme: &Scheme, body: &[u8]) -> Option<(&'static str, String)> {
    match build {
        Build::Shifted(_) if !scheme.signs_timestamp() => {
            Some(("4xx", format!("{} signs no timestamp.", scheme.label)))
        }
        Build::Shifted(_) if scheme.tolerance_secs.is_none() => Some((
            "any",
            format!("{}'s own libraries check no timestamp age.", scheme.label),
        )),
        Build::Shifted(offset) if offset > 0 && scheme.future == FuturePolicy::Warn => Some((
            "any",
            format!("{}'s own libraries accept future timestamps.", scheme.label),
        )),
        Build::Respaced if respaced(body).is_none() => {
            Some(("2xx", "The probe body is not a JSON object.".into()))
        }
        Build::Rotation
            if !matches!(
                scheme.family,
                Family::StandardWebhooks | Family::Stripe | Family::Paddle
            ) =>
        {
            Some((
                "2xx",
                format!("{} carries one signature per header.", scheme.label),
            ))
        }
        _ => None,
    }
}

/// What the probe signs with and sends.
struct Probe<'a> {
    scheme: &'a Scheme,
    secrets: &'a [Secret],
    base_body: Vec<u8>,
    /// The top-level `"id"` of the base body, replaced by a fresh id in each case.
    original_id: Option<String>,
}

impl Probe<'_> {
    /// A new event for a case, so a handler that deduplicates does not confuse the cases.
    fn fresh(&self) -> (String, Vec<u8>) {
        let id = new_event_id();
        let body = match &self.original_id {
            Some(old) => with_event_id(&self.base_body, old, &id),
            None => self.base_body.clone(),
        };
        (id, body)
    }

    fn signed(&self, id: &str, ts: i64, body: &[u8]) -> Result<Outgoing, SendError> {
        self.outgoing(id, ts, body, false)
    }

    /// A request signed (or, `forged`, with every signature forged) at `ts`.
    fn outgoing(
        &self,
        id: &str,
        ts: i64,
        body: &[u8],
        forged: bool,
    ) -> Result<Outgoing, SendError> {
        let mut headers = vec![
            Header::new("content-type", "application/json"),
            Header::new("user-agent", "hookscope-probe"),
        ];
        headers.extend(if forged {
            self.scheme.forge(self.secrets, id, ts, body)?
        } else {
            self.scheme.sign(self.secrets, id, ts, body)?
        });
        Ok(Outgoing {
            method: "POST".into(),
            headers,
            body: body.to_vec(),
        })
    }

    /// The requests one case sends, in order.
    fn requests(&self, build: Build) -> Result<Vec<Outgoing>, SendError> {
        let (id, body) = self.fresh();
        // Each case is signed when it is sent: a slow handler must not age the later ones
        // past a short tolerance (Paddle's 5 s).
        let now = now_secs();
        let header = &self.scheme.signature_header;
        Ok(match build {
            Build::Valid => vec![self.signed(&id, now, &body)?],
            Build::Forged => vec![self.outgoing(&id, now, &body, true)?],
            Build::DropSignature => {
                let mut unsigned = self.signed(&id, now, &body)?;
                unsigned.headers.retain(|h| &h.name != header);
                vec![unsigned]
            }
            Build::Shifted(direction) => {
                let offset = self.scheme.beyond_tolerance_secs().unwrap_or(600);
                vec![self.signed(&id, now + direction * offset, &body)?]
            }
            Build::Retry => vec![
                self.signed(&id, now, &body)?,
                self.signed(&id, now + 1, &body)?,
            ],
            Build::Respaced => {
                let spaced = respaced(&body).unwrap_or(body);
                vec![self.signed(&id, now, &spaced)?]
            }
            Build::Rotation => {
                let stranger = match self.scheme.family {
                    Family::StandardWebhooks => Secret::new(format!(
                        "whsec_{}",
                        base64::engine::general_purpose::STANDARD.encode([42u8; 32])
                    )),
                    _ => Secret::new("an-old-secret-being-rotated-out"),
                };
                let mut both = vec![stranger];
                both.extend(self.secrets.iter().cloned());
                let mut rotation = self.signed(&id, now, &body)?;
                let rotated = self.scheme.sign(&both, &id, now, &body)?;
                rotation
                    .headers
                    .retain(|h| !rotated.iter().any(|r| r.name == h.name));
                rotation.headers.extend(rotated);
                vec![rotation]
            }
        })
    }
}

/// Fills a case sentence's `{answer}`, `{answer2}`, `{header}` and `{age}` (how far the shifted
/// timestamps are off).
fn sentence(template: &str, attempts: &[Attempt], scheme: &Scheme) -> String {
    let answer = |i: usize| attempts.get(i).map(describe).unwrap_or_default();
    let age = scheme.beyond_tolerance_secs().unwrap_or(600).unsigned_abs();
    template
        .replace("{answer2}", &answer(1))
        .replace("{answer}", &answer(0))
        .replace("{header}", &scheme.signature_header)
        .replace("{age}", &crate::domain::fmt::human_duration(age))
}

/// The last case: how long the slowest answer took against the sender's timeout.
fn answer_time_case(slowest: u64, limit: Duration) -> ProbeCase {
    let verdict = if slowest > limit.as_millis() as u64 {
        Verdict::Fail
    } else if slowest > SLOW_ANSWER.as_millis() as u64 {
        Verdict::Warn
    } else {
        Verdict::Pass
    };
    let detail = match verdict {
        Verdict::Pass => {
            format!("The slowest answer took {slowest} ms, well inside a sender's timeout.")
        }
        Verdict::Warn => format!(
            "The slowest answer took {slowest} ms: record the delivery and answer first, do the work on a queue."
        ),
        _ => format!(
            "The slowest answer took {slowest} ms, over the {} s a sender waits: it would retry, racing the first attempt.",
            limit.as_secs()
        ),
    };
    ProbeCase {
        name: "answer_time".into(),
        expected: format!("well under {} s", limit.as_secs()),
        verdict,
        statuses: Vec::new(),
        latency_ms: slowest,
        detail,
    }
}

/// Runs the receiver checklist of docs/webhooks.md against a handler: each case of [`CASES`]
/// that applies to the scheme, then the answer time.
pub async fn probe(
    client: &Client,
    url: &str,
    scheme: &Scheme,
    secrets: &[Secret],
    body: Option<Vec<u8>>,
    verify_token: Option<&str>,
) -> Result<ProbeReport, SendError> {
    check_url(url)?;
    // A scheme that signs the URL (Twilio) signs the handler's.
    let mut scheme = scheme.clone();
    scheme.public_url = Some(url.to_string());
    let scheme = &scheme;
    let now = now_secs();
    let base_body = body.unwrap_or_else(|| sample_body("msg_probe_template", now));
    let original_id = serde_json::from_slice::<serde_json::Value>(&base_body)
        .ok()
        .and_then(|v| v.get("id").and_then(|i| i.as_str()).map(str::to_string));
    let probe = Probe {
        scheme,
        secrets,
        base_body,
        original_id,
    };
    let mut cases = Vec::new();
    // A provider that verifies the endpoint first delivers nothing to a handler that fails it.
    if let Some(provider) = Provider::of_scheme(scheme) {
        let keys = Keys {
            secret: secrets.first(),
            verify_token,
            scheme: Some(scheme),
        };
        cases.push(handshake_case(client, url, provider, keys).await?);
    }
    for spec in CASES {
        if let Some((expected, detail)) = not_applicable(spec.build, scheme, &probe.base_body) {
            cases.push(ProbeCase {
                name: spec.name.into(),
                expected: expected.into(),
                verdict: Verdict::Skipped,
                statuses: Vec::new(),
                latency_ms: 0,
                detail,
            });
            continue;
        }
        let mut attempts = Vec::new();
        for outgoing in probe.requests(spec.build)? {
            attempts.push(
                client
                    .send(
                        &scheme.request_url(url, &outgoing.body),
                        &outgoing,
                        AttemptKind::Probe,
                        None,
                    )
                    .await?,
            );
        }
        let met = spec.expect.met_by(&attempts);
        let template = if met { spec.passed } else { spec.failed };
        cases.push(ProbeCase {
            name: spec.name.into(),
            expected: spec.expect.label().into(),
            verdict: if met { Verdict::Pass } else { Verdict::Fail },
            statuses: attempts.iter().filter_map(|a| a.status).collect(),
            latency_ms: attempts.iter().map(|a| a.latency_ms).max().unwrap_or(0),
            detail: sentence(template, &attempts, scheme),
        });
    }
    let slowest = cases.iter().map(|c| c.latency_ms).max().unwrap_or(0);
    cases.push(answer_time_case(slowest, client.timeout()));
    let passed = cases.iter().all(|c| c.verdict != Verdict::Fail);
    Ok(ProbeReport {
        url: url.to_string(),
        scheme: scheme.name.clone(),
        cases,
        passed,
    })
}

/// The handshake the scheme's provider sends before it delivers, judged as the provider would.
async fn handshake_case(
    client: &Client,
    url: &str,
    provider: Provider,
    keys: Keys<'_>,
) -> Result<ProbeCase, SendError> {
    let expected = format!("{}'s {} answered", provider.label(), provider.what());
    let challenge = match Challenge::new(provider, keys, now_secs(), "") {
        Ok(challenge) => challenge,
        Err(why) => {
            return Ok(ProbeCase {
                name: "handshake".into(),
                expected,
                verdict: Verdict::Skipped,
                statuses: Vec::new(),
                latency_ms: 0,
                detail: format!("The handshake could not be made: {why}."),
            });
        }
    };
    let attempt = client
        .send_challenge(url, &challenge, AttemptKind::Probe)
        .await?;
    let judged = challenge.judge(
        attempt.status,
        &attempt.response_headers,
        &attempt.response_body,
        false,
    );
    Ok(ProbeCase {
        name: "handshake".into(),
        expected,
        verdict: if judged.is_ok() {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        statuses: attempt.status.into_iter().collect(),
        latency_ms: attempt.latency_ms,
        detail: match judged {
            Ok(sentence) => sentence,
            Err(why) => format!(
                "{why}: {} will not deliver to this handler until it answers as documented.",
                provider.label()
            ),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn respaced_json_is_the_same_value_in_other_bytes() {
        let body = br#"{"id":"e1","type":"job.completed","data":{"a":1}}"#;
        let spaced = respaced(body).expect("json");
        assert_ne!(spaced, body.to_vec());
        let a: serde_json::Value = serde_json::from_slice(body).expect("json");
        let b: serde_json::Value = serde_json::from_slice(&spaced).expect("json");
        assert_eq!(a, b);
    }
}
