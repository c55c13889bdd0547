//! A recognised handshake answered or refused: what every provider shares (a signed
//! handshake's signature must verify, the request must carry a value to answer with, the
//! sentences that say what was done), around each provider's own answer.

use super::rules::{Answered, Asked, Respond, Rules};
use super::{Context, Handshake, Outcome, Provider, REFUSED_STATUS, Reply, Signed};

/// Answers or refuses a handshake `rules` recognised.
pub(super) fn decide(
    rules: &Rules,
    asked: Asked,
    context: &Context<'_>,
    signed: Signed,
) -> Handshake {
    let said = Said {
        rules,
        asked: (rules.phrase)(&asked),
        verified: rules.signs.then_some(signed == Signed::Verified),
    };
    if let Some(why) = signature_refusal(rules, context, signed) {
        return said.refused(why);
    }
    let answer = match rules.respond {
        Respond::Await(sentence) => return said.awaiting(sentence(&asked), asked.url),
        Respond::Answer(answer) => answer,
    };
    if asked.value.trim().is_empty() {
        return said.refused(format!("the request carries no {}", rules.field));
    }
    match answer(&asked, context) {
        Ok(answered) => said.answered(answered, context),
        Err(why) => said.refused(why),
    }
}

/// Why a signed handshake is refused before it is answered: its signature failed, or it
/// carries none where the endpoint has a secret to check one with.
fn signature_refusal(rules: &Rules, context: &Context<'_>, signed: Signed) -> Option<String> {
    if !rules.signs {
        return None;
    }
    let provider = rules.provider;
    match signed {
        Signed::Failed => Some(
            // An endpoint set up for another provider's scheme cannot verify this one's challenge.
            match context
                .endpoint_scheme
                .filter(|s| Provider::of_scheme(s) != Some(provider))
            {
                Some(scheme) => format!(
                    "{} verifies {} signatures, not {}'s: give {}'s challenges an endpoint of their own (scheme = \"{}\")",
                    context.path, scheme.name, rules.label, rules.label, rules.name
                ),
                None => format!(
                    "its signature did not verify against the secret of {}, so the challenge was not answered",
                    context.path
                ),
            },
        ),
        Signed::NotChecked if !context.secrets.is_empty() => Some(format!(
            "it carries no {} signature, and {} has a secret to check one with",
            rules.label, context.path
        )),
        _ => None,
    }
}

/// What a handshake's record says whatever became of it: whose, what was asked, whether its
/// signature verified.
struct Said<'a> {
    rules: &'a Rules,
    asked: String,
    verified: Option<bool>,
}

impl Said<'_> {
    /// Refused with a 403 that says `why`.
    fn refused(self, why: String) -> Handshake {
        let Rules {
            provider,
            label,
            what,
            ..
        } = *self.rules;
        Handshake {
            provider,
            asked: self.asked,
            outcome: Outcome::Refused,
            detail: format!("Refused {label}'s {what}: {why}."),
            verified: self.verified,
            confirm_url: None,
            answer: Some(Reply {
                status: REFUSED_STATUS,
                content_type: Some("text/plain; charset=utf-8".into()),
                headers: Vec::new(),
                body: format!("hookscope refused this {what}: {why}\n"),
            }),
        }
    }

    /// Answered as the provider expects.
    fn answered(self, answered: Answered, context: &Context<'_>) -> Handshake {
        let Rules {
            provider,
            label,
            what,
            ..
        } = *self.rules;
        let unverified = if self.verified == Some(false) {
            format!(
                " Its signature was not verified: no secret is configured for {}.",
                context.path
            )
        } else {
            String::new()
        };
        let (confirm_url, shown) = match answered.shown {
            Some((url, sentence)) => (Some(url), sentence),
            None => (None, ""),
        };
        Handshake {
            provider,
            asked: self.asked,
            outcome: Outcome::Answered,
            detail: format!("Answered {label}'s {what}.{unverified}{shown}"),
            verified: self.verified,
            confirm_url,
            answer: Some(answered.reply),
        }
    }

    /// Answered 200 at once like any handshake, the subscription waiting for the user to
    /// confirm it at `url`.
    fn awaiting(self, detail: String, url: Option<String>) -> Handshake {
        Handshake {
            provider: self.rules.provider,
            asked: self.asked,
            outcome: Outcome::Awaiting,
            detail,
            verified: None,
            confirm_url: url,
            answer: Some(Reply {
                status: 200,
                content_type: None,
                headers: Vec::new(),
                body: String::new(),
            }),
        }
    }
}
