//! The handshakes' tests: requests recognised and answered or refused as each provider
//! documents, and challenges sent and their answers judged.

use base64::Engine as _;

use super::*;
use crate::domain::delivery::Header;
use crate::domain::scheme::hmac_sha256;

fn request(method: &str, query: &str, headers: &[(&str, &str)], body: &str) -> Delivery {
    crate::domain::delivery::test_request(method, query, headers, body)
}

fn context<'a>(secrets: &'a [Secret], token: Option<&'a Secret>) -> Context<'a> {
    Context {
        accept: Accept::Any,
        secrets,
        matched_secret: None,
        endpoint_scheme: None,
        verify_token: token,
        path: "/hooks/x",
    }
}

/// What a provider sends, as the receiver reads it.
fn as_received(c: &Challenge) -> Delivery {
    request(
        c.method,
        c.query.as_deref().unwrap_or(""),
        &[],
        &String::from_utf8_lossy(&c.body),
    )
    .with_headers(c.headers.clone())
}

impl Delivery {
    fn with_headers(mut self, headers: Vec<Header>) -> Delivery {
        self.headers = headers;
        self
    }
}

#[test]
fn every_challenge_sent_is_recognised_and_its_answer_judged_right_and_a_wrong_one_not() {
    let secret = Secret::new("s3cret-token");
    let keys = Keys {
        secret: Some(&secret),
        verify_token: Some("meta verify+token/1"),
        scheme: None,
    };
    for provider in Provider::ALL {
        let now = 1_700_000_000;
        let c = Challenge::new(provider, keys, now, "http://127.0.0.1:9/sns").expect("a challenge");
        let d = as_received(&c);
        // Through the receiver's own checks, with the endpoint a user would configure: the
        // signed challenges' signatures are verified, not assumed.
        let endpoint = crate::domain::endpoint::Endpoint {
            scheme: provider
                .signs()
                .then(|| crate::domain::scheme::Scheme::preset(provider.name()))
                .flatten(),
            secrets: vec![secret.clone()],
            verify_token: Some(Secret::new("meta verify+token/1")),
            ..crate::domain::endpoint::Endpoint::catch_all()
        };
        let h = crate::domain::checks::evaluate(&d, &endpoint, now)
            .handshake
            .unwrap_or_else(|| panic!("{provider:?} is recognised"));
        assert_ne!(h.outcome, Outcome::Refused, "{provider:?}: {}", h.detail);
        if provider.signs() {
            assert_eq!(h.verified, Some(true), "{provider:?}: {}", h.detail);
        }
        assert_eq!(h.provider, provider);
        let (status, headers, body) = match &h.answer {
            Some(reply) => {
                let mut headers: Vec<Header> = reply
                    .headers
                    .iter()
                    .map(|(n, v)| Header::new(n, v.as_str()))
                    .collect();
                if let Some(t) = &reply.content_type {
                    headers.push(Header::new("content-type", t.as_str()));
                }
                (reply.status, headers, reply.body.clone().into_bytes())
            }
            None => (200, Vec::new(), Vec::new()),
        };
        let confirmed = provider == Provider::Sns;
        assert!(
            c.judge(Some(status), &headers, &body, confirmed).is_ok(),
            "{provider:?}: {:?}",
            c.judge(Some(status), &headers, &body, confirmed)
        );
        // A handler that answers 200 with an empty body passes for no provider (CloudEvents
        // wants its header, SNS the GET of its URL).
        let empty = c.judge(Some(200), &[], b"", false);
        assert!(empty.is_err(), "{provider:?} must not pass an empty answer");
    }
}

#[test]
fn slacks_challenge_answered_as_json_or_a_form_is_right_as_slack_accepts_it() {
    let secret = Secret::new("s");
    let keys = Keys {
        secret: Some(&secret),
        ..Keys::default()
    };
    let c = Challenge::new(Provider::Slack, keys, 1_700_000_000, "").expect("a challenge");
    let sent: serde_json::Value = serde_json::from_slice(&c.body).expect("JSON");
    let value = sent["challenge"].as_str().expect("challenge");
    let json = format!(r#"{{"challenge":"{value}"}}"#);
    let form = format!("challenge={value}");
    for body in [value.to_string(), json, form] {
        assert!(
            c.judge(Some(200), &[], body.as_bytes(), false).is_ok(),
            "{body}"
        );
    }
    assert!(
        c.judge(Some(200), &[], br#"{"challenge":"other"}"#, false)
            .is_err()
    );
}

#[test]
fn metas_challenge_needs_its_verify_token_not_the_app_secret_and_encodes_it() {
    let secret = Secret::new("app-secret");
    let without = Keys {
        secret: Some(&secret),
        ..Keys::default()
    };
    let err = Challenge::new(Provider::Meta, without, 0, "").expect_err("no token");
    assert!(err.contains("Verify token"), "{err}");
    let with = Keys {
        verify_token: Some("a+b/c d"),
        ..without
    };
    let c = Challenge::new(Provider::Meta, with, 0, "").expect("a challenge");
    let query = c.query.clone().expect("a query");
    assert!(query.contains("hub.verify_token=a%2Bb%2Fc%20d"), "{query}");
    assert!(!query.contains("app-secret"), "{query}");
}

#[test]
fn zoom_is_answered_with_the_secret_that_verified_it_during_a_rotation() {
    let (old, new) = (Secret::new("old-token"), Secret::new("new-token"));
    let keys = Keys {
        secret: Some(&new),
        ..Keys::default()
    };
    let now = 1_700_000_000;
    let c = Challenge::new(Provider::Zoom, keys, now, "").expect("a challenge");
    let endpoint = crate::domain::endpoint::Endpoint {
        scheme: crate::domain::scheme::Scheme::preset("zoom"),
        secrets: vec![old, new],
        ..crate::domain::endpoint::Endpoint::catch_all()
    };
    let h = crate::domain::checks::evaluate(&as_received(&c), &endpoint, now)
        .handshake
        .expect("zoom");
    let answer = h.answer.expect("answered");
    assert!(
        c.judge(Some(answer.status), &[], answer.body.as_bytes(), false)
            .is_ok(),
        "{}",
        answer.body
    );
}

#[test]
fn an_ordinary_delivery_is_no_handshake() {
    let d = request("POST", "", &[], r#"{"type":"invoice.paid","id":"evt_1"}"#);
    assert_eq!(respond(&d, &context(&[], None), Signed::NotChecked), None);
    let d = request("GET", "page=2", &[], "");
    assert_eq!(respond(&d, &context(&[], None), Signed::NotChecked), None);
}

#[test]
fn zoom_is_answered_with_the_hmac_of_its_plain_token() {
    // Zoom's documented example: plainToken under the secret token, hex.
    let d = request(
        "POST",
        "",
        &[],
        r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#,
    );
    let secrets = [Secret::new("zoom_secret_token")];
    let h = respond(&d, &context(&secrets, None), Signed::Verified).expect("a handshake");
    let answer = h.answer.expect("answered");
    let expected = hex::encode(hmac_sha256(
        b"zoom_secret_token",
        &[b"qgg8vlvZRS6UYooatFL8Aw"],
    ));
    assert_eq!(
        answer.body,
        format!(r#"{{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"{expected}"}}"#)
    );
    assert_eq!(h.outcome, Outcome::Answered);
    assert_eq!(h.verified, Some(true));
    // Without a secret token there is nothing to answer with.
    let h = respond(&d, &context(&[], None), Signed::NotChecked).expect("a handshake");
    assert_eq!(h.outcome, Outcome::Refused);
    assert_eq!(h.answer.expect("refused").status, 403);
}

#[test]
fn a_signed_handshake_whose_signature_fails_is_refused_never_answered() {
    let d = request(
        "POST",
        "",
        &[],
        r#"{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#,
    );
    let secrets = [Secret::new("s")];
    let h = respond(&d, &context(&secrets, None), Signed::Failed).expect("a handshake");
    assert_eq!(h.outcome, Outcome::Refused);
    let answer = h.answer.expect("an answer");
    assert_eq!(answer.status, 403);
    assert!(!answer.body.contains("3eZbrw1a"), "{}", answer.body);
    let h = respond(&d, &context(&[], None), Signed::NotChecked).expect("a handshake");
    assert_eq!(h.outcome, Outcome::Answered);
    assert_eq!(h.verified, Some(false));
    assert!(h.detail.contains("not verified"), "{}", h.detail);
}

#[test]
fn meta_answers_only_its_own_verify_token() {
    let d = request(
        "GET",
        "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock",
        &[],
        "",
    );
    let token = Secret::new("meatyhamhock");
    let h = respond(&d, &context(&[], Some(&token)), Signed::NotChecked).expect("meta");
    assert_eq!(h.answer.expect("answered").body, "1158201444");
    let wrong = Secret::new("other");
    let h = respond(&d, &context(&[], Some(&wrong)), Signed::NotChecked).expect("meta");
    assert_eq!(h.outcome, Outcome::Refused);
    assert!(
        h.detail.contains("hub.verify_token did not match"),
        "{}",
        h.detail
    );
    assert!(!h.detail.contains("meatyhamhock"));
}

#[test]
fn x_crc_answers_the_base64_hmac_under_the_consumer_secret() {
    let d = request("GET", "crc_token=abc%2B123&nonce=1", &[], "");
    let secrets = [Secret::new("consumer")];
    let h = respond(&d, &context(&secrets, None), Signed::NotChecked).expect("x");
    let mac = hmac_sha256(b"consumer", &[b"abc+123"]);
    let b64 = base64::engine::general_purpose::STANDARD.encode(mac);
    assert_eq!(
        h.answer.expect("answered").body,
        format!(r#"{{"response_token":"sha256={b64}"}}"#)
    );
}

#[test]
fn an_endpoint_that_names_one_provider_answers_no_other() {
    let d = request("GET", "challenge=abc", &[], "");
    let mut ctx = context(&[], None);
    ctx.accept = Accept::Only(Provider::Slack);
    assert_eq!(respond(&d, &ctx, Signed::NotChecked), None);
    ctx.accept = Accept::Only(Provider::Dropbox);
    assert!(respond(&d, &ctx, Signed::NotChecked).is_some());
    ctx.accept = Accept::Off;
    assert_eq!(respond(&d, &ctx, Signed::NotChecked), None);
    assert_eq!(
        Accept::parse("event-grid"),
        Ok(Accept::Only(Provider::EventGrid))
    );
    assert!(
        Accept::parse("slak")
            .expect_err("a typo is refused")
            .contains("slack")
    );
}

#[test]
fn sns_waits_for_the_user_and_graph_decodes_its_token() {
    let d = request(
        "POST",
        "",
        &[("x-amz-sns-message-type", "SubscriptionConfirmation")],
        r#"{"Type":"SubscriptionConfirmation","Token":"2336","TopicArn":"arn:aws:sns:us-west-2:123456789012:MyTopic","SubscribeURL":"https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&Token=2336"}"#,
    );
    let h = respond(&d, &context(&[], None), Signed::NotChecked).expect("sns");
    assert_eq!(h.outcome, Outcome::Awaiting);
    assert_eq!(h.answer.as_ref().map(|a| a.status), Some(200));
    assert!(
        h.confirm_url
            .as_deref()
            .is_some_and(|u| u.contains("ConfirmSubscription"))
    );
    let d = request(
        "POST",
        "validationToken=Validation%3A+Testing+client+application",
        &[],
        "",
    );
    let h = respond(&d, &context(&[], None), Signed::NotChecked).expect("graph");
    assert_eq!(
        h.answer.expect("answered").body,
        "Validation: Testing client application"
    );
}

#[test]
fn a_request_that_looks_like_two_handshakes_is_the_first_provider_alls_order_recognises() {
    let slack = r#"{"type":"url_verification","challenge":"c","event":"endpoint.url_validation"}"#;
    let sns = ("x-amz-sns-message-type", "SubscriptionConfirmation");
    let twitch = (
        "twitch-eventsub-message-type",
        "webhook_callback_verification",
    );
    let okta = ("x-okta-verification-challenge", "o");
    let cases = [
        (
            request(
                "GET",
                "hub.mode=subscribe&hub.challenge=1&crc_token=2&challenge=3",
                &[okta],
                "",
            ),
            Some(Provider::Meta),
        ),
        (
            request(
                "GET",
                "hub.mode=unsubscribe&hub.challenge=1&challenge=3",
                &[],
                "",
            ),
            Some(Provider::Dropbox),
        ),
        (
            request("GET", "crc_token=2&challenge=3", &[okta], ""),
            Some(Provider::X),
        ),
        (
            request("GET", "challenge=3", &[okta], ""),
            Some(Provider::Okta),
        ),
        (
            request("get", "challenge=3", &[], ""),
            Some(Provider::Dropbox),
        ),
        (
            request(
                "POST",
                "",
                &[("aeg-event-type", "SubscriptionValidation"), sns],
                "[]",
            ),
            Some(Provider::EventGrid),
        ),
        (
            request("POST", "", &[sns, twitch], "{}"),
            Some(Provider::Sns),
        ),
        (
            request("POST", "validationToken=v", &[twitch], slack),
            Some(Provider::Twitch),
        ),
        (
            request("POST", "validationToken=v", &[], slack),
            Some(Provider::Graph),
        ),
        (request("POST", "", &[], slack), Some(Provider::Slack)),
        (
            request("POST", "challenge=3&crc_token=2", &[okta], ""),
            None,
        ),
        (request("PUT", "challenge=3", &[okta], slack), None),
        (request("OPTIONS", "challenge=3", &[], ""), None),
    ];
    for (d, expected) in cases {
        let found = respond(&d, &context(&[], None), Signed::NotChecked).map(|h| h.provider);
        assert_eq!(found, expected, "{} {:?}", d.method, d.query);
    }
}

#[test]
fn the_sentences_every_provider_shares_keep_their_words() {
    let slack = request(
        "POST",
        "",
        &[],
        r#"{"type":"url_verification","challenge":"c1"}"#,
    );
    let github = crate::domain::scheme::Scheme::preset("github").expect("github");
    let secrets = [Secret::new("s")];
    let mut ctx = context(&secrets, None);
    ctx.endpoint_scheme = Some(&github);
    let h = respond(&slack, &ctx, Signed::Failed).expect("slack");
    assert_eq!(
        h.detail,
        "Refused Slack's url_verification challenge: /hooks/x verifies github signatures, not Slack's: give Slack's challenges an endpoint of their own (scheme = \"slack\")."
    );
    assert_eq!(
        h.answer.expect("refused").body,
        "hookscope refused this url_verification challenge: /hooks/x verifies github signatures, not Slack's: give Slack's challenges an endpoint of their own (scheme = \"slack\")\n"
    );
    let h = respond(&slack, &context(&secrets, None), Signed::Failed).expect("slack");
    assert_eq!(
        h.detail,
        "Refused Slack's url_verification challenge: its signature did not verify against the secret of /hooks/x, so the challenge was not answered."
    );
    let h = respond(&slack, &context(&[], None), Signed::NotChecked).expect("slack");
    assert_eq!(
        h.detail,
        "Answered Slack's url_verification challenge. Its signature was not verified: no secret is configured for /hooks/x."
    );
    let empty = request("GET", "crc_token=", &[], "");
    let h = respond(&empty, &context(&secrets, None), Signed::NotChecked).expect("x");
    assert_eq!(
        h.detail,
        "Refused X's CRC check: the request carries no crc_token."
    );
    let grid = request(
        "POST",
        "",
        &[("aeg-event-type", "SubscriptionValidation")],
        r#"[{"topic":"/t","data":{"validationCode":"v1","validationUrl":"https://eg/v"},"eventType":"Microsoft.EventGrid.SubscriptionValidationEvent"}]"#,
    );
    let h = respond(&grid, &context(&[], None), Signed::NotChecked).expect("event grid");
    assert_eq!(h.asked, "validationCode v1 for /t");
    assert_eq!(
        h.detail,
        "Answered Azure Event Grid's SubscriptionValidation event. Its validationUrl (manual validation) is shown, never fetched by hookscope."
    );
    assert_eq!(h.confirm_url.as_deref(), Some("https://eg/v"));
}

/// `message` with each value `challenge` expects, whole or as a sentence shortens it, written
/// `V`.
fn masked(challenge: &Challenge, message: &str) -> String {
    let values = match &challenge.expected {
        challenge::Expected::Text { body, .. } => vec![body.clone()],
        challenge::Expected::Challenge(value) => vec![value.clone()],
        challenge::Expected::Json(members) => members.iter().map(|(_, v)| v.clone()).collect(),
        challenge::Expected::Header(_, value) => vec![value.clone()],
        challenge::Expected::Confirm => Vec::new(),
    };
    values.iter().fold(message.to_string(), |m, v| {
        m.replace(v.as_str(), "V").replace(&rules::short(v), "V")
    })
}

#[test]
fn every_wrong_answer_is_judged_in_its_providers_words() {
    let secret = Secret::new("s3cret-token");
    let keys = Keys {
        secret: Some(&secret),
        verify_token: Some("vt"),
        scheme: None,
    };
    let exactly = "was answered with an empty body where the provider expects exactly `V`";
    let cases = [
        (
            Provider::Cloudevents,
            "was answered without webhook-allowed-origin: V, so the sender may not deliver here",
        ),
        (
            Provider::EventGrid,
            "was answered with an empty body, not the JSON with validationResponse the provider expects",
        ),
        (
            Provider::Sns,
            "was answered 200, but the SubscribeURL was never fetched, so the subscription stays pending",
        ),
        (Provider::Twitch, exactly),
        (Provider::Graph, exactly),
        (Provider::Meta, exactly),
        (
            Provider::X,
            "was answered with an empty body, not the JSON with response_token the provider expects",
        ),
        (
            Provider::Okta,
            "was answered with an empty body, not the JSON with verification the provider expects",
        ),
        (Provider::Dropbox, exactly),
        (
            Provider::Slack,
            "was answered with an empty body where the provider expects the challenge `V` (as text, as JSON {\"challenge\": …} or as a form)",
        ),
        (
            Provider::Zoom,
            "was answered with an empty body, not the JSON with plainToken and encryptedToken the provider expects",
        ),
    ];
    for (provider, empty) in cases {
        let c = Challenge::new(provider, keys, 1_700_000_000, "http://127.0.0.1:9/sns")
            .expect("a challenge");
        let who = format!("{}'s {}", provider.label(), provider.what());
        let judged = |status, body: &[u8]| {
            masked(&c, &c.judge(status, &[], body, false).expect_err("wrong"))
        };
        assert_eq!(judged(Some(200), b""), format!("{who} {empty}"));
        assert_eq!(
            judged(None, b""),
            format!("{who} got no answer, so the provider would not subscribe")
        );
        assert_eq!(
            judged(Some(500), b""),
            format!("{who} was answered 500; the provider wants 200 with the challenge")
        );
    }
    let members = [
        (Provider::EventGrid, "validationResponse"),
        (Provider::X, "response_token"),
        (Provider::Okta, "verification"),
        (Provider::Zoom, "plainToken"),
    ];
    for (provider, member) in members {
        let c = Challenge::new(provider, keys, 0, "").expect("a challenge");
        let got = c.judge(Some(200), &[], br#"{"other":1}"#, false);
        assert_eq!(
            masked(&c, &got.expect_err("wrong")),
            format!(
                "{}'s {} was answered with {member} missing where the provider computes `V`",
                provider.label(),
                provider.what()
            )
        );
    }
    let c = Challenge::new(Provider::Graph, keys, 0, "").expect("a challenge");
    let challenge::Expected::Text { body, .. } = &c.expected else {
        panic!("graph expects text")
    };
    let json = [Header::new("content-type", "application/json")];
    assert_eq!(
        c.judge(Some(200), &json, body.as_bytes(), false),
        Err("Microsoft Graph's validationToken was answered with the token but as application/json; Microsoft Graph wants text/plain".into())
    );
    let sns = Challenge::new(Provider::Sns, keys, 0, "").expect("a challenge");
    assert_eq!(
        sns.judge(Some(202), &[], b"", true),
        Ok("AWS SNS's SubscriptionConfirmation was confirmed: the handler fetched the SubscribeURL.".into())
    );
    for provider in [
        Provider::Slack,
        Provider::Zoom,
        Provider::Twitch,
        Provider::X,
    ] {
        assert_eq!(
            Challenge::new(provider, Keys::default(), 0, "").map(|_| ()),
            Err(format!(
                "{}'s {} needs the secret",
                provider.label(),
                provider.what()
            ))
        );
    }
}
