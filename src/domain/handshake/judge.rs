//! The developer's handler's answer to a [`Challenge`], judged against what the provider
//! accepts: a sentence when it is right, what was wrong when it is not.

use super::challenge::{Challenge, Expected};
use super::rules::short;
use crate::domain::delivery::Header;

impl Challenge {
    /// Judges the handler's answer: `Ok` with a sentence when it is what the provider accepts,
    /// `Err` with what was wrong. `confirmed` says whether SNS's SubscribeURL was fetched.
    pub fn judge(
        &self,
        status: Option<u16>,
        headers: &[Header],
        body: &[u8],
        confirmed: bool,
    ) -> Result<String, String> {
        let who = format!("{}'s {}", self.provider.label(), self.provider.what());
        let Some(status) = status else {
            return Err(format!(
                "{who} got no answer, so the provider would not subscribe"
            ));
        };
        if !(200..300).contains(&status) || (status != 200 && !self.awaits_confirmation()) {
            return Err(format!(
                "{who} was answered {status}; the provider wants 200 with the challenge"
            ));
        }
        let text = String::from_utf8_lossy(body);
        let header = |name: &str| {
            headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value_lossy())
        };
        match &self.expected {
            Expected::Text {
                body: expected,
                content_type,
            } => {
                judge_text(&who, &text, expected)?;
                if let Some(wanted) = content_type {
                    self.judge_content_type(&who, wanted, header("content-type"))?;
                }
            }
            Expected::Challenge(expected) => judge_challenge(&who, &text, body, expected)?,
            Expected::Json(members) => judge_json(&who, &text, body, members)?,
            Expected::Header(name, expected) => {
                let got = header(name);
                if got.as_deref() != Some(expected.as_str()) && got.as_deref() != Some("*") {
                    return Err(format!(
                        "{who} was answered without {name}: {expected}, so the sender may not deliver here"
                    ));
                }
            }
            Expected::Confirm => {
                if !confirmed {
                    return Err(format!(
                        "{who} was answered {status}, but the SubscribeURL was never fetched, so the subscription stays pending"
                    ));
                }
                return Ok(format!(
                    "{who} was confirmed: the handler fetched the SubscribeURL."
                ));
            }
        }
        Ok(format!("{who} was answered as the provider expects."))
    }

    /// A right text answer sent as the content type the provider wants (Microsoft Graph's
    /// `text/plain`).
    fn judge_content_type(
        &self,
        who: &str,
        wanted: &str,
        content_type: Option<String>,
    ) -> Result<(), String> {
        if content_type
            .as_deref()
            .is_some_and(|t| t.starts_with(wanted))
        {
            return Ok(());
        }
        Err(format!(
            "{who} was answered with the token but as {}; {} wants {wanted}",
            content_type.unwrap_or_else(|| "no content type".into()),
            self.provider.label()
        ))
    }
}

/// A text answer: exactly `expected`.
fn judge_text(who: &str, text: &str, expected: &str) -> Result<(), String> {
    if text != expected {
        return Err(format!(
            "{who} was answered {} where the provider expects exactly `{}`",
            answered_with(text),
            short(expected)
        ));
    }
    Ok(())
}

/// What a body was, in a sentence: `with an empty body`, or its start in backquotes.
fn answered_with(text: &str) -> String {
    if text.is_empty() {
        "with an empty body".to_string()
    } else {
        format!("`{}`", short(text))
    }
}

/// Slack's challenge, answered as text, as JSON `{"challenge": …}` or as a form.
fn judge_challenge(who: &str, text: &str, body: &[u8], expected: &str) -> Result<(), String> {
    let as_json = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("challenge")?.as_str().map(str::to_string));
    let as_form = crate::domain::pretty::form_fields(body).and_then(|fields| {
        fields
            .into_iter()
            .find(|(name, _)| name == "challenge")
            .map(|(_, value)| value)
    });
    let answered = text == expected
        || as_json.as_deref() == Some(expected)
        || as_form.as_deref() == Some(expected);
    if answered {
        return Ok(());
    }
    Err(format!(
        "{who} was answered {} where the provider expects the challenge `{}` (as text, as JSON {{\"challenge\": …}} or as a form)",
        answered_with(text),
        short(expected)
    ))
}

/// A JSON answer with each of `members` equal to the value the provider computes.
fn judge_json(
    who: &str,
    text: &str,
    body: &[u8],
    members: &[(&'static str, String)],
) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|_| {
        let names: Vec<&str> = members.iter().map(|(name, _)| *name).collect();
        let got = if text.trim().is_empty() {
            "with an empty body".to_string()
        } else {
            format!("`{}`", short(text))
        };
        format!(
            "{who} was answered {got}, not the JSON with {} the provider expects",
            names.join(" and ")
        )
    })?;
    for (name, expected) in members {
        let got = value.get(name).and_then(|v| v.as_str());
        if got != Some(expected.as_str()) {
            return Err(format!(
                "{who} was answered with {name} {} where the provider computes `{}`",
                got.map(|g| format!("`{}`", short(g)))
                    .unwrap_or_else(|| "missing".into()),
                short(expected)
            ));
        }
    }
    Ok(())
}
