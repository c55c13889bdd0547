//! Handshakes over real HTTP: each provider's challenge sent to `hookscope listen` on loopback
//! and answered byte for byte as the provider documents, refused when its token or signature is
//! wrong, and recorded (`handshake` in the JSON, `handshake:yes` in the filter). CloudEvents in
//! both modes, made by the CloudEvents Python SDK.

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use base64::Engine as _;
use common::{Listener, now_secs, run};
use hmac::{KeyInit as _, Mac as _};
use hookscope::domain::scheme::{Scheme, Secret};

const CONFIG: &str = r#"
[[endpoint]]
path = "/slack"
scheme = "slack"
secrets = ["8f742231b10e8888abcd99yyyzzz85a5"]

[[endpoint]]
path = "/zoom"
scheme = "zoom"
secrets = ["zoom-secret-token"]

[[endpoint]]
path = "/twitch"
scheme = "twitch"
secrets = ["twitch-secret-0123"]

[[endpoint]]
path = "/meta"
verify_token = "meatyhamhock"

[[endpoint]]
path = "/x"
secrets = ["x-consumer-secret"]

[[endpoint]]
path = "/meta-app"
scheme = "meta"
secrets = ["meta-app-secret"]
verify_token = "meatyhamhock"

[[endpoint]]
path = "/secret-only"
secrets = ["8f742231b10e8888abcd99yyyzzz85a5"]

[[endpoint]]
path = "/only-slack"
handshake = "slack"

[[endpoint]]
path = "/off"
handshake = "off"
"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn listener(dir: &std::path::Path) -> Listener {
    std::fs::write(dir.join("config.toml"), CONFIG).expect("config");
    Listener::start(dir, &[])
}

/// An answer as the provider sees it: status, content type, a header asked for, and the body.
struct Answer {
    status: u16,
    content_type: Option<String>,
    headers: reqwest::header::HeaderMap,
    body: String,
}

fn send(rt: &tokio::runtime::Runtime, request: reqwest::RequestBuilder) -> Answer {
    let response = rt.block_on(request.send()).expect("the receiver answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .map(|v| v.to_str().expect("text").to_string());
    let body = rt.block_on(response.text()).expect("body");
    Answer {
        status,
        content_type,
        headers,
        body,
    }
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("any key length");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

fn signed(
    client: &reqwest::Client,
    url: &str,
    scheme: &str,
    secret: &str,
    id: &str,
    body: &str,
) -> reqwest::RequestBuilder {
    let headers = Scheme::preset(scheme)
        .expect("preset")
        .sign(&[Secret::new(secret)], id, now_secs(), body.as_bytes())
        .expect("signs");
    let mut request = client.post(url).body(body.to_string());
    for h in headers {
        request = request.header(h.name, h.value);
    }
    request
}

#[test]
fn each_providers_challenge_is_answered_as_it_documents_and_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = listener(dir.path());
    let base = listener.base_url.clone();
    let rt = runtime();
    let client = common::http_client();
    let mut expect_recorded = |provider: &str, outcome: &str| {
        let line = listener.next_json();
        assert_eq!(line["handshake"]["provider"], provider, "{line}");
        assert_eq!(line["handshake"]["outcome"], outcome, "{line}");
        assert_eq!(line["checks"]["duplicate"]["status"], "skipped", "{line}");
        assert!(line["job"].is_null(), "a handshake is no job event: {line}");
        line
    };

    // 1. CloudEvents abuse protection.
    let a = send(
        &rt,
        client
            .request(reqwest::Method::OPTIONS, format!("{base}/ce"))
            .header("WebHook-Request-Origin", "eventemitter.example.com")
            .header("WebHook-Request-Rate", "120"),
    );
    assert_eq!(a.status, 200);
    assert_eq!(
        a.headers["webhook-allowed-origin"],
        "eventemitter.example.com"
    );
    assert_eq!(a.headers["webhook-allowed-rate"], "*");
    assert_eq!(a.headers["allow"], "POST");
    assert_eq!(a.body, "");
    expect_recorded("cloudevents", "answered");

    // 2. Azure Event Grid (Event Grid schema), its validationUrl shown, never fetched.
    let body = r#"[{"id":"2d1781af-3a4c-4d7c-bd0c-e34b19da4e66","topic":"/subscriptions/xx/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa","subject":"","data":{"validationCode":"512d38b6-c7b8-40c8-89fe-f46f9e9622b6","validationUrl":"https://rp-eastus2.eventgrid.azure.net:553/eventsubscriptions/estest/validate?id=512d38b6&t=2018-04-26T20:30:54Z&apiVersion=2018-05-01-preview&token=1A1A1A1A"},"eventType":"Microsoft.EventGrid.SubscriptionValidationEvent","eventTime":"2018-01-25T22:12:19.4556811Z","metadataVersion":"1","dataVersion":"1"}]"#;
    let a = send(
        &rt,
        client
            .post(format!("{base}/eventgrid"))
            .header("aeg-event-type", "SubscriptionValidation")
            .header("content-type", "application/json")
            .body(body),
    );
    assert_eq!(a.status, 200);
    assert_eq!(a.content_type.as_deref(), Some("application/json"));
    assert_eq!(
        a.body,
        r#"{"validationResponse":"512d38b6-c7b8-40c8-89fe-f46f9e9622b6"}"#
    );
    let line = expect_recorded("event-grid", "answered");
    assert!(
        line["handshake"]["confirm_url"]
            .as_str()
            .is_some_and(|u| u.contains("validate?id=512d38b6")),
        "{line}"
    );

    // 3. Slack url_verification, signed with v0 and the endpoint's secret.
    let body = r#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    let a = send(
        &rt,
        signed(
            &client,
            &format!("{base}/slack"),
            "slack",
            "8f742231b10e8888abcd99yyyzzz85a5",
            "",
            body,
        ),
    );
    assert_eq!(a.status, 200);
    assert!(
        a.content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("text/plain")),
        "{:?}",
        a.content_type
    );
    assert_eq!(
        a.body,
        "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    );
    let line = expect_recorded("slack", "answered");
    assert_eq!(line["handshake"]["verified"], true);
    assert_eq!(line["checks"]["signature"]["status"], "pass");

    // 4. Microsoft Graph: the token URL-decoded, as text/plain.
    let a = send(
        &rt,
        client
            .post(format!(
                "{base}/graph?validationToken=Validation%3A+Testing+client+application+reachability+for+subscription+Request-Id%3A+8b1b6a1e"
            ))
            .header("content-type", "text/plain; charset=utf-8"),
    );
    assert_eq!(a.status, 200);
    assert_eq!(
        a.body,
        "Validation: Testing client application reachability for subscription Request-Id: 8b1b6a1e"
    );
    assert!(a.content_type.unwrap_or_default().starts_with("text/plain"));
    expect_recorded("graph", "answered");

    // 5. Meta: the challenge only for the endpoint's verify_token.
    let a = send(
        &rt,
        client.get(format!(
            "{base}/meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock"
        )),
    );
    assert_eq!((a.status, a.body.as_str()), (200, "1158201444"));
    expect_recorded("meta", "answered");

    // 6. Zoom: the plainToken and its HMAC under the secret token, hex.
    let body = r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
    let a = send(
        &rt,
        signed(
            &client,
            &format!("{base}/zoom"),
            "zoom",
            "zoom-secret-token",
            "",
            body,
        ),
    );
    let encrypted = hex::encode(hmac_sha256(b"zoom-secret-token", b"qgg8vlvZRS6UYooatFL8Aw"));
    assert_eq!(a.status, 200);
    assert_eq!(a.content_type.as_deref(), Some("application/json"));
    assert_eq!(
        a.body,
        format!(r#"{{"plainToken":"qgg8vlvZRS6UYooatFL8Aw","encryptedToken":"{encrypted}"}}"#)
    );
    expect_recorded("zoom", "answered");

    // 7. Twitch EventSub: the raw challenge, text/plain.
    let body = r#"{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","status":"webhook_callback_verification_pending","type":"channel.follow","version":"1","cost":1,"condition":{"broadcaster_user_id":"12826"},"transport":{"method":"webhook","callback":"https://example.com/webhooks/callback"},"created_at":"2019-11-16T10:11:12.634234626Z"}}"#;
    let a = send(
        &rt,
        signed(
            &client,
            &format!("{base}/twitch"),
            "twitch",
            "twitch-secret-0123",
            "e76c6bd4-55c9-4987-8304-da1588d8988b",
            body,
        )
        .header(
            "Twitch-Eventsub-Message-Type",
            "webhook_callback_verification",
        ),
    );
    assert_eq!(a.status, 200);
    assert_eq!(a.body, "pogchamp-kappa-360noscope-vohiyo");
    assert!(a.content_type.unwrap_or_default().starts_with("text/plain"));
    let line = expect_recorded("twitch", "answered");
    assert_eq!(line["checks"]["signature"]["status"], "pass", "{line}");
    assert_eq!(line["checks"]["timestamp"]["status"], "pass", "{line}");

    // 8. X CRC: sha256= and the base64 HMAC of crc_token under the consumer secret.
    let a = send(
        &rt,
        client.get(format!("{base}/x?crc_token=abc123%2B%2F&nonce=n1")),
    );
    let token = base64::engine::general_purpose::STANDARD
        .encode(hmac_sha256(b"x-consumer-secret", b"abc123+/"));
    assert_eq!(a.status, 200);
    assert_eq!(a.body, format!(r#"{{"response_token":"sha256={token}"}}"#));
    expect_recorded("x", "answered");

    // 9. Dropbox: the challenge, text/plain, nosniff.
    let a = send(
        &rt,
        client.get(format!("{base}/dropbox?challenge=OOTQWQ8AIgS1tUXkQ")),
    );
    assert_eq!(a.status, 200);
    assert_eq!(a.body, "OOTQWQ8AIgS1tUXkQ");
    assert_eq!(a.content_type.as_deref(), Some("text/plain"));
    assert_eq!(a.headers["x-content-type-options"], "nosniff");
    expect_recorded("dropbox", "answered");

    // 10. Okta.
    let a = send(
        &rt,
        client
            .get(format!("{base}/okta"))
            .header("x-okta-verification-challenge", "mvyfGmT0OvB0QUbwCTbz"),
    );
    assert_eq!(a.status, 200);
    assert_eq!(a.body, r#"{"verification":"mvyfGmT0OvB0QUbwCTbz"}"#);
    assert_eq!(a.content_type.as_deref(), Some("application/json"));
    expect_recorded("okta", "answered");

    // 11. AWS SNS: the usual answer, the SubscribeURL kept for the user to confirm.
    let body = r#"{"Type":"SubscriptionConfirmation","MessageId":"165545c9-2a5c-472c-8df2-7ff2be2b3b1b","Token":"2336412f37fb687f5d51e6e241d09c805a5a57b30d712f794cc5f6a988666d92768dd60a747ba6f3beb71854e285d6ad02428b09ceece29417f1f02d609c582afbacc99c583a916b9981dd2728f4ae6fdb82efd087cc3b7849e05798d2d2785c03b0879594eeac82c01f235d0e717736","TopicArn":"arn:aws:sns:us-west-2:123456789012:MyTopic","Message":"You have chosen to subscribe to the topic arn:aws:sns:us-west-2:123456789012:MyTopic.","SubscribeURL":"https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&TopicArn=arn:aws:sns:us-west-2:123456789012:MyTopic&Token=2336412f37","Timestamp":"2012-04-26T20:45:04.751Z","SignatureVersion":"1","Signature":"EXAMPLEpH+=","SigningCertURL":"https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem"}"#;
    let a = send(
        &rt,
        client
            .post(format!("{base}/sns"))
            .header("x-amz-sns-message-type", "SubscriptionConfirmation")
            .header("content-type", "text/plain; charset=UTF-8")
            .body(body),
    );
    assert_eq!(a.status, 200);
    let line = expect_recorded("sns", "awaiting");
    let sns_id = line["id"].as_i64().expect("id");
    assert!(
        line["handshake"]["confirm_url"]
            .as_str()
            .is_some_and(|u| u
                .starts_with("https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription")),
        "{line}"
    );

    // The list says it, the JSON carries it, the filter finds them.
    drop(listener);
    let out = run(dir.path(), &["list", "--filter", "handshake:yes", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(lines.len(), 11, "every handshake is recorded");
    let out = run(dir.path(), &["list", "--filter", "handshake:no", "--json"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 0);
    let out = run(dir.path(), &["list", "--filter", "handshake:yes"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("handshake (answered): Answered Slack's url_verification challenge."),
        "{text}"
    );
    assert!(
        text.contains(&format!("`hookscope confirm {sns_id}` makes the one GET")),
        "{text}"
    );
}

#[test]
fn a_wrong_token_or_signature_is_refused_and_never_given_the_challenge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = listener(dir.path());
    let base = listener.base_url.clone();
    let rt = runtime();
    let client = common::http_client();

    let challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P";
    let body = format!(r#"{{"token":"t","challenge":"{challenge}","type":"url_verification"}}"#);
    let a = send(
        &rt,
        signed(
            &client,
            &format!("{base}/slack"),
            "slack",
            "not-the-secret",
            "",
            &body,
        ),
    );
    assert_eq!(a.status, 403);
    assert!(!a.body.contains(challenge), "{}", a.body);
    let line = listener.next_json();
    assert_eq!(line["handshake"]["outcome"], "refused", "{line}");
    assert_eq!(line["handshake"]["verified"], false);
    assert_eq!(line["response"]["status"], 403);
    assert!(
        line["handshake"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("signature did not verify")),
        "{line}"
    );

    // The same challenge on an endpoint with no secret: answered, and said to be unverified.
    let a = send(&rt, client.post(format!("{base}/open")).body(body.clone()));
    assert_eq!((a.status, a.body.as_str()), (200, challenge));
    let line = listener.next_json();
    assert_eq!(line["handshake"]["verified"], false, "{line}");
    assert!(
        line["handshake"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("not verified")),
        "{line}"
    );

    let a = send(
        &rt,
        client.get(format!(
            "{base}/meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=guess"
        )),
    );
    assert_eq!(a.status, 403);
    assert!(!a.body.contains("1158201444"));
    let line = listener.next_json();
    assert_eq!(
        line["handshake"]["detail"],
        "Refused Meta's verification request: hub.verify_token did not match the endpoint's."
    );

    let twitch = r#"{"challenge":"pogchamp","subscription":{"type":"channel.follow"}}"#;
    let a = send(
        &rt,
        signed(
            &client,
            &format!("{base}/twitch"),
            "twitch",
            "wrong",
            "m1",
            twitch,
        )
        .header(
            "Twitch-Eventsub-Message-Type",
            "webhook_callback_verification",
        ),
    );
    assert_eq!(a.status, 403);
    assert!(!a.body.contains("pogchamp"));
    let line = listener.next_json();
    assert_eq!(line["handshake"]["provider"], "twitch", "{line}");
    assert_eq!(line["handshake"]["outcome"], "refused", "{line}");

    let zoom = r#"{"payload":{"plainToken":"abc"},"event":"endpoint.url_validation"}"#;
    let a = send(
        &rt,
        signed(&client, &format!("{base}/zoom"), "zoom", "wrong", "", zoom),
    );
    assert_eq!(a.status, 403);
    assert!(!a.body.contains("encryptedToken"));
    let line = listener.next_json();
    assert_eq!(line["handshake"]["provider"], "zoom", "{line}");
    assert_eq!(line["handshake"]["outcome"], "refused", "{line}");

    // X's CRC and Zoom's validation are HMACs under the endpoint's secret: without one, refused.
    let a = send(&rt, client.get(format!("{base}/open?crc_token=abc")));
    assert_eq!(a.status, 403);
    assert!(!a.body.contains("response_token"));
    let line = listener.next_json();
    assert!(
        line["handshake"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("no consumer secret is configured for /")),
        "{line}"
    );
    let zoom = r#"{"payload":{"plainToken":"abc"},"event":"endpoint.url_validation"}"#;
    let a = send(&rt, client.post(format!("{base}/open")).body(zoom));
    assert_eq!(a.status, 403);
    listener.next_json();

    // An unsigned Slack challenge where a secret could check one: refused.
    let a = send(
        &rt,
        client
            .post(format!("{base}/secret-only"))
            .body(body.clone()),
    );
    assert_eq!(a.status, 403);
    assert!(!a.body.contains(challenge));
    let line = listener.next_json();
    assert!(
        line["handshake"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("carries no Slack signature")),
        "{line}"
    );

    // Meta's verification GET on an endpoint that verifies Meta's deliveries: answered, and not
    // a failed signature (the verify token proves it, not a signature).
    let a = send(
        &rt,
        client.get(format!(
            "{base}/meta-app?hub.mode=subscribe&hub.challenge=42&hub.verify_token=meatyhamhock"
        )),
    );
    assert_eq!((a.status, a.body.as_str()), (200, "42"));
    let line = listener.next_json();
    assert_eq!(line["checks"]["signature"]["status"], "skipped", "{line}");
    assert_eq!(line["checks"]["timestamp"]["status"], "skipped", "{line}");
    // The verify token is a secret: never shown.
    assert_eq!(
        line["query"],
        "hub.mode=subscribe&hub.challenge=42&hub.verify_token=[redacted]"
    );

    // An endpoint that names one provider answers only that one; `off` answers none.
    let a = send(&rt, client.get(format!("{base}/only-slack?challenge=abc")));
    assert!(a.body.starts_with("{\"received\":true"), "{}", a.body);
    assert!(listener.next_json()["handshake"].is_null());
    let a = send(&rt, client.post(format!("{base}/off")).body(body));
    assert!(a.body.starts_with("{\"received\":true"), "{}", a.body);
    assert!(listener.next_json()["handshake"].is_null());

    // No export carries the verify token either.
    drop(listener);
    for (format, name) in [
        ("har", "out.har"),
        ("curl", "out.sh"),
        ("fixture", "fixtures"),
    ] {
        let path = dir.path().join(name);
        let out = run(
            dir.path(),
            &[
                "export",
                "--format",
                format,
                "--filter",
                "path:/meta-app",
                "--out",
                &path.to_string_lossy(),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut exported = String::new();
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("export dir") {
                exported.push_str(
                    &std::fs::read_to_string(entry.expect("entry").path()).unwrap_or_default(),
                );
            }
        } else {
            exported = std::fs::read_to_string(&path).expect("read");
        }
        assert!(
            exported.contains("hub.challenge=42"),
            "{format} has the GET"
        );
        assert!(
            !exported.contains("meatyhamhock"),
            "the verify token leaked in {format}"
        );
    }
}

#[test]
fn an_sns_subscription_is_confirmed_only_by_the_users_one_get() {
    let sns = common::handler::serve(
        common::handler::Flavour::Correct,
        axum::http::StatusCode::OK,
    );
    let subscribe = format!(
        "http://{}/record?Action=ConfirmSubscription&TopicArn=arn:aws:sns:us-west-2:123456789012:MyTopic&Token=2336412f",
        sns.addr
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = runtime();
    let client = common::http_client();
    let body = serde_json::json!({
        "Type": "SubscriptionConfirmation",
        "Token": "2336412f",
        "TopicArn": "arn:aws:sns:us-west-2:123456789012:MyTopic",
        "SubscribeURL": subscribe,
    })
    .to_string();
    let a = send(
        &rt,
        client
            .post(format!("{}/sns", listener.base_url))
            .header("x-amz-sns-message-type", "SubscriptionConfirmation")
            .body(body),
    );
    assert_eq!(a.status, 200);
    let id = listener.next_json()["id"].as_i64().expect("id");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        sns.handler.received.lock().expect("lock").len(),
        0,
        "hookscope never fetches the SubscribeURL by itself"
    );
    drop(listener);

    // A SubscribeURL that is not on AWS's hosts is refused unless the user says to trust it.
    let out = run(dir.path(), &["confirm", &id.to_string()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--any-host"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sns.handler.received.lock().expect("lock").len(), 0);
    let out = run(dir.path(), &["confirm", &id.to_string(), "--any-host"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(&format!("GET {subscribe}")), "{text}");
    assert!(text.contains("confirmed AWS SNS's subscription"), "{text}");
    assert_eq!(sns.handler.received.lock().expect("lock").len(), 1);
    let attempts = hookscope::store::Reader::open(&dir.path().join("hookscope.sqlite"))
        .expect("reader")
        .attempts_for(id)
        .expect("attempts");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].kind.as_str(), "confirm");
    assert_eq!(attempts[0].status, Some(200));

    // Anything that is not a handshake with a URL is a usage error.
    let out = run(dir.path(), &["confirm", "999"]);
    assert_eq!(out.status.code(), Some(2));
    // On a fresh machine: said, and nothing created.
    let fresh = tempfile::tempdir().expect("tempdir");
    let data = fresh.path().join("never");
    let out = run(&data, &["confirm", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no deliveries yet"));
    assert!(!data.exists(), "confirm created the data dir");
}

#[test]
fn only_the_providers_own_hosts_are_confirmed_without_asking() {
    use hookscope::app::confirm::is_providers_own;
    use hookscope::domain::handshake::Provider;
    for (provider, url, own) in [
        (
            Provider::Sns,
            "https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription",
            true,
        ),
        (
            Provider::Sns,
            "https://sns.cn-north-1.amazonaws.com.cn/?Action=ConfirmSubscription",
            true,
        ),
        (Provider::Sns, "http://sns.us-west-2.amazonaws.com/", false),
        (
            Provider::Sns,
            "https://sns.us-west-2.amazonaws.com.evil.example/",
            false,
        ),
        (
            Provider::Sns,
            "https://evil.example/sns.us-west-2.amazonaws.com",
            false,
        ),
        (Provider::Sns, "https://s3.us-west-2.amazonaws.com/", false),
        (
            Provider::EventGrid,
            "https://rp-eastus2.eventgrid.azure.net:553/eventsubscriptions/x/validate?id=1",
            true,
        ),
        (
            Provider::EventGrid,
            "https://eventgrid.azure.net.evil.example/",
            false,
        ),
    ] {
        assert_eq!(is_providers_own(provider, url), own, "{url}");
    }
}

/// The CloudEvents Python SDK, installed on first use with pip from PyPI; `None` (skipped,
/// and saying so) without python3 and pip, or when PyPI is out of reach.
fn cloudevents_python() -> Option<PathBuf> {
    common::pip_target(
        "py-cloudevents-2.2.0",
        "cloudevents/v1/http/__init__.py",
        &[
            "cloudevents==2.2.0",
            "deprecation==2.1.0",
            "python-dateutil==2.9.0.post0",
            "six==1.17.0",
            "packaging==24.2",
        ],
    )
}

/// Sends, with the SDK's own HTTP binding, one event in binary mode, the same event (same source
/// and id) again in structured mode, and one from another source with the same id.
const CLOUDEVENTS_SENDER: &str = r#"
import sys, json, urllib.request, warnings
warnings.simplefilter("ignore")
from cloudevents.v1.http import CloudEvent, to_binary, to_structured

url = sys.argv[1]
def post(headers, body):
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request) as response:
        print(response.status, flush=True)

attributes = {"type": "com.example.ocr.job.completed", "source": "https://ocr.example.com/jobs", "id": "A234-1234-1234", "time": "2018-04-05T17:31:00Z"}
data = {"job_id": "job_42", "status": "completed"}
post(*to_binary(CloudEvent(attributes, data)))
post(*to_structured(CloudEvent(attributes, data)))
other = dict(attributes, source="https://other.example.com")
post(*to_binary(CloudEvent(other, data)))
"#;

#[test]
fn cloudevents_from_the_python_sdk_are_read_in_both_modes_and_deduplicated_by_source_and_id() {
    let Some(site) = cloudevents_python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(dir.path(), &[]);
    let mut sender = Command::new("python3")
        .args([
            "-c",
            CLOUDEVENTS_SENDER,
            &format!("{}/hooks/ce", listener.base_url),
        ])
        .env("PYTHONPATH", &site)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let statuses: Vec<String> = BufReader::new(sender.stdout.take().expect("stdout"))
        .lines()
        .map(|l| l.expect("line"))
        .collect();
    assert!(sender.wait().expect("exits").success());
    assert_eq!(statuses, ["200", "200", "200"]);

    let binary = listener.next_json();
    assert_eq!(binary["cloudevent"]["mode"], "binary", "{binary}");
    assert_eq!(binary["event_id"], "A234-1234-1234");
    assert_eq!(binary["event_type"], "com.example.ocr.job.completed");
    assert_eq!(binary["cloudevent"]["time"], "2018-04-05T17:31:00Z");
    assert_eq!(
        binary["job"]["job_id"], "job_42",
        "binary data is the body: {binary}"
    );
    assert_eq!(binary["checks"]["duplicate"]["status"], "first");
    // An old `time` is the occurrence's, not a stale signature: it is not judged.
    assert_eq!(binary["checks"]["timestamp"]["status"], "skipped");

    let structured = listener.next_json();
    assert_eq!(
        structured["cloudevent"]["mode"], "structured",
        "{structured}"
    );
    assert_eq!(structured["event_type"], "com.example.ocr.job.completed");
    assert_eq!(structured["job"]["job_id"], "job_42", "{structured}");
    assert_eq!(
        structured["checks"]["duplicate"]["status"], "duplicate",
        "the same source and id: {structured}"
    );
    assert!(
        structured["checks"]["duplicate"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("from https://ocr.example.com/jobs")),
        "{structured}"
    );

    let other = listener.next_json();
    assert_eq!(
        other["checks"]["duplicate"]["status"], "first",
        "another source's id is another event: {other}"
    );
}

/// `hookscope simulate --handshake …` against `target`: exit code and scorecard.
fn simulate(dir: &std::path::Path, target: &str, args: &[&str]) -> (i32, serde_json::Value) {
    let mut all = vec!["simulate", "--target", target, "--until-done", "--json"];
    all.extend_from_slice(args);
    let out = run(dir, &all);
    let card = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no scorecard ({e}): {} / {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), card)
}

fn handshake_check(card: &serde_json::Value) -> &serde_json::Value {
    card["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "handshake"))
        .unwrap_or_else(|| panic!("no handshake check in {card}"))
}

#[test]
fn the_simulator_subscribes_only_after_a_right_answer_to_its_handshake() {
    // hookscope's own receiver answers Slack's challenge (it has the secret): the simulator
    // then delivers the jobs' events.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = listener(dir.path());
    let sim_dir = tempfile::tempdir().expect("tempdir");
    let target = format!("{}/slack", listener.base_url);
    let (code, card) = simulate(
        sim_dir.path(),
        &target,
        &[
            "--handshake",
            "slack",
            "--scheme",
            "slack",
            "--secret",
            "8f742231b10e8888abcd99yyyzzz85a5",
            "--jobs",
            "1",
            "--time-scale",
            "100000",
            "--duplicate-rate",
            "0",
            "--reorder-rate",
            "0",
            "--late-retry-rate",
            "0",
        ],
    );
    assert_eq!(handshake_check(&card)["status"], "pass", "{card}");
    assert_eq!(
        card["progress"]["acknowledged"], 3,
        "the events followed: {card}"
    );
    // hookscope's receiver is an inspector, not a handler: it acknowledges the forgery probes,
    // and that is the only check it fails.
    let failed: Vec<&serde_json::Value> = card["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| &c["name"])
        .collect();
    assert_eq!(failed, ["refuses_forgeries"], "{card}");
    assert_eq!(code, 1);
    let first = listener.next_json();
    assert_eq!(
        first["handshake"]["provider"], "slack",
        "the handshake came first: {first}"
    );
    assert_eq!(first["handshake"]["verified"], true, "{first}");
    // Then the 3 events and the 2 forgery probes, in the order the chaos sends them.
    let after: Vec<serde_json::Value> = (0..5).map(|_| listener.next_json()).collect();
    assert!(after.iter().all(|d| d["handshake"].is_null()), "{after:?}");
    let verified = after
        .iter()
        .filter(|d| {
            d["checks"]["signature"]["status"] == "pass"
                && d["checks"]["timestamp"]["status"] == "pass"
        })
        .count();
    assert_eq!(verified, 3, "the events, signed and fresh: {after:?}");

    // A handler that answers 200 with nothing: Zoom's handshake fails and nothing is delivered.
    let handler = common::handler::serve(
        common::handler::Flavour::Correct,
        axum::http::StatusCode::OK,
    );
    let (code, card) = simulate(
        sim_dir.path(),
        &format!("http://{}/record", handler.addr),
        &[
            "--handshake",
            "zoom",
            "--scheme",
            "zoom",
            "--secret",
            "z",
            "--jobs",
            "3",
        ],
    );
    assert_eq!(code, 1, "{card}");
    let check = handshake_check(&card);
    assert_eq!(check["status"], "fail", "{card}");
    assert!(
        check["detail"]
            .as_str()
            .is_some_and(|d| d.contains("plainToken") && d.contains("delivered nothing")),
        "{check}"
    );
    assert_eq!(
        handler.handler.received.lock().expect("lock").len(),
        1,
        "only the handshake reached the handler"
    );

    // An unknown provider is a usage error naming the known ones.
    let out = run(
        sim_dir.path(),
        &[
            "simulate",
            "--target",
            &target,
            "--secret",
            common::handler::SECRET,
            "--handshake",
            "slak",
            "--jobs",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("event-grid"));
}

/// A handler that confirms an SNS subscription as AWS's docs say: it GETs the SubscribeURL.
async fn sns_handler(headers: axum::http::HeaderMap, body: String) -> axum::http::StatusCode {
    if headers
        .get("x-amz-sns-message-type")
        .is_some_and(|t| t == "SubscriptionConfirmation")
    {
        let message: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        let url = message["SubscribeURL"]
            .as_str()
            .expect("SubscribeURL")
            .to_string();
        // Not awaited inside the answer, as a real handler would not block SNS.
        tokio::spawn(async move {
            let _ = reqwest::get(url).await;
        });
    }
    axum::http::StatusCode::OK
}

#[test]
fn the_simulator_waits_for_an_sns_handler_to_fetch_the_subscribe_url() {
    let rt = runtime();
    hookscope::net::client::install_tls_provider();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new().route("/sns", axum::routing::post(sns_handler));
    rt.spawn(async move { axum::serve(listener, app).await });
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, card) = simulate(
        dir.path(),
        &format!("http://{addr}/sns"),
        &[
            "--handshake",
            "sns",
            "--secret",
            common::handler::SECRET,
            "--jobs",
            "1",
            "--time-scale",
            "100000",
        ],
    );
    let check = handshake_check(&card);
    assert_eq!(check["status"], "pass", "{card}");
    assert!(
        check["detail"]
            .as_str()
            .is_some_and(|d| d.contains("fetched the SubscribeURL")),
        "{check}"
    );
    assert_eq!(
        card["progress"]["acknowledged"], 3,
        "then it delivered: {card}"
    );
    assert_eq!(code, 1, "this handler refuses no forgery: {card}");
}

#[test]
fn the_probe_tells_a_handlers_author_which_handshake_it_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = listener(dir.path());
    let probe = |url: &str, scheme: &str, secret: &str| {
        let out = run(
            dir.path(),
            &[
                "probe", url, "--scheme", scheme, "--secret", secret, "--json",
            ],
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("no report ({e}): {}", String::from_utf8_lossy(&out.stderr))
        });
        report["cases"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "handshake").cloned())
    };
    // hookscope's own receiver answers Twitch's challenge.
    let case = probe(
        &format!("{}/twitch", listener.base_url),
        "twitch",
        "twitch-secret-0123",
    )
    .expect("a handshake case for twitch");
    assert_eq!(case["verdict"], "pass", "{case}");
    // A handler that answers 200 and nothing else fails Slack's, and is told why.
    let handler = common::handler::serve(
        common::handler::Flavour::Correct,
        axum::http::StatusCode::OK,
    );
    let case = probe(
        &format!("http://{}/record", handler.addr),
        "slack",
        "8f742231b10e8888abcd99yyyzzz85a5",
    )
    .expect("a handshake case for slack");
    assert_eq!(case["verdict"], "fail", "{case}");
    assert!(
        case["detail"].as_str().is_some_and(|d| d
            .contains("Slack's url_verification challenge was answered with an empty body")
            && d.contains("Slack will not deliver")),
        "{case}"
    );
    // Meta's: with the Verify token (not the app secret), hookscope's receiver answers it.
    let out = run(
        dir.path(),
        &[
            "probe",
            &format!("{}/meta-app", listener.base_url),
            "--scheme",
            "meta",
            "--secret",
            "meta-app-secret",
            "--verify-token",
            "meatyhamhock",
            "--json",
        ],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report");
    let case = report["cases"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "handshake"))
        .expect("a handshake case for meta");
    assert_eq!(case["verdict"], "pass", "{case}");
    // Without it, the case is skipped and says why.
    let case = probe(
        &format!("{}/meta-app", listener.base_url),
        "meta",
        "meta-app-secret",
    )
    .expect("a handshake case for meta");
    assert_eq!(case["verdict"], "skipped", "{case}");
    assert!(
        case["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Verify token")),
        "{case}"
    );
    // A scheme whose provider sends no handshake has no such case.
    assert!(
        probe(
            &format!("http://{}/record", handler.addr),
            "stripe",
            "whsec_test"
        )
        .is_none()
    );
}

/// The providers' own sample code (Node.js, as their docs give it) signs deliveries and computes
/// the handshake answers; hookscope verifies the signatures and its answers match.
const NODE_PROVIDERS: &str = r#"
const crypto = require('crypto');
// With `node -e`, the arguments follow the node binary itself.
const [zoomSecret, twitchSecret, metaSecret, xSecret] = process.argv.slice(1);
const ts = Math.floor(Date.now() / 1000);
// Zoom (developers.zoom.us, "Verify webhook events"): v0:{timestamp}:{body}, hex, "v0=".
const zoomBody = JSON.stringify({event: 'meeting.started', event_ts: ts * 1000, payload: {account_id: 'a1', object: {id: '1234', uuid: 'u1'}}});
const zoomSig = 'v0=' + crypto.createHmac('sha256', zoomSecret).update(`v0:${ts}:${zoomBody}`).digest('hex');
// Zoom's url_validation answer: HMAC-SHA256 of plainToken under the secret token, hex.
const encryptedToken = crypto.createHmac('sha256', zoomSecret).update('qgg8vlvZRS6UYooatFL8Aw').digest('hex');
// Twitch (dev.twitch.tv, "Verifying the event message"): id + timestamp + body, "sha256=" hex.
const twitchId = 'befa7b53-d79d-478f-86b9-120f112b044e';
const twitchTs = new Date().toISOString();
const twitchBody = JSON.stringify({subscription: {id: 'f1c2a387', type: 'channel.follow', version: '2'}, event: {user_id: '1234', broadcaster_user_id: '12826'}});
const twitchSig = 'sha256=' + crypto.createHmac('sha256', twitchSecret).update(twitchId + twitchTs + twitchBody).digest('hex');
// Meta (developers.facebook.com, "Validating payloads"): HMAC-SHA256 of the raw body, "sha256=".
const metaBody = JSON.stringify({object: 'whatsapp_business_account', entry: [{id: '102290129340398', changes: [{field: 'messages', value: {messaging_product: 'whatsapp'}}]}]});
const metaSig = 'sha256=' + crypto.createHmac('sha256', metaSecret).update(metaBody).digest('hex');
// X (developer.x.com, "Securing webhooks"): base64 HMAC-SHA256 of crc_token, "sha256=".
const responseToken = 'sha256=' + crypto.createHmac('sha256', xSecret).update('crc-from-x').digest('base64');
console.log(JSON.stringify({ts, zoomBody, zoomSig, encryptedToken, twitchId, twitchTs, twitchBody, twitchSig, metaBody, metaSig, responseToken}));
"#;

#[test]
fn signatures_and_answers_match_the_providers_own_sample_code() {
    if !common::tool_runs(&["node", "--version"]) {
        return;
    }
    let out = Command::new("node")
        .args([
            "-e",
            NODE_PROVIDERS,
            "zoom-secret-token",
            "twitch-secret-0123",
            "meta-app-secret",
            "x-consumer-secret",
        ])
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let text = |k: &str| v[k].as_str().expect(k).to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = listener(dir.path());
    let base = listener.base_url.clone();
    let rt = runtime();
    let client = common::http_client();

    let a = send(
        &rt,
        client
            .post(format!("{base}/zoom"))
            .header("content-type", "application/json")
            .header("x-zm-request-timestamp", v["ts"].to_string())
            .header("x-zm-signature", text("zoomSig"))
            .body(text("zoomBody")),
    );
    assert_eq!(a.status, 200);
    let line = listener.next_json();
    assert_eq!(line["scheme"], "zoom");
    assert_eq!(line["checks"]["signature"]["status"], "pass", "{line}");
    assert_eq!(line["event_type"], "meeting.started");

    let a = send(
        &rt,
        client
            .post(format!("{base}/twitch"))
            .header("content-type", "application/json")
            .header("twitch-eventsub-message-id", text("twitchId"))
            .header("twitch-eventsub-message-timestamp", text("twitchTs"))
            .header("twitch-eventsub-message-signature", text("twitchSig"))
            .header("twitch-eventsub-message-type", "notification")
            .header("twitch-eventsub-subscription-type", "channel.follow")
            .body(text("twitchBody")),
    );
    assert_eq!(a.status, 200);
    let line = listener.next_json();
    assert_eq!(line["checks"]["signature"]["status"], "pass", "{line}");
    assert_eq!(line["checks"]["timestamp"]["status"], "pass", "{line}");
    assert_eq!(line["event_id"], "befa7b53-d79d-478f-86b9-120f112b044e");
    assert_eq!(line["event_type"], "channel.follow");

    // Meta, to the app's endpoint: verified with the app secret.
    let a = send(
        &rt,
        client
            .post(format!("{base}/meta-app"))
            .header("content-type", "application/json")
            .header("x-hub-signature-256", text("metaSig"))
            .body(text("metaBody")),
    );
    assert_eq!(a.status, 200);
    let line = listener.next_json();
    assert_eq!(line["scheme"], "meta", "{line}");
    assert_eq!(line["checks"]["signature"]["status"], "pass", "{line}");
    // Where nothing is configured, its header alone says Meta (GitHub's deliveries name
    // themselves in x-github-event and x-github-delivery).
    send(
        &rt,
        client
            .post(format!("{base}/unconfigured"))
            .header("x-hub-signature-256", text("metaSig"))
            .body(text("metaBody")),
    );
    assert_eq!(listener.next_json()["scheme"], "meta");

    // The handshake answers are what the providers' code computes.
    let body = r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1,"event":"endpoint.url_validation"}"#;
    let a = send(
        &rt,
        signed(
            &client,
            &format!("{base}/zoom"),
            "zoom",
            "zoom-secret-token",
            "",
            body,
        ),
    );
    let answer: serde_json::Value = serde_json::from_str(&a.body).expect("JSON");
    assert_eq!(answer["encryptedToken"], text("encryptedToken"));
    listener.next_json();
    let a = send(&rt, client.get(format!("{base}/x?crc_token=crc-from-x")));
    let answer: serde_json::Value = serde_json::from_str(&a.body).expect("JSON");
    assert_eq!(answer["response_token"], text("responseToken"));
}

#[test]
fn a_handshake_is_answered_at_once_whatever_the_endpoint_is_told_to_answer() {
    // Every delivery is answered 500 after 3 s; a provider's challenge still gets its answer
    // at once (Slack and Zoom allow 3 s, Graph 10 s).
    let dir = tempfile::tempdir().expect("tempdir");
    let mut listener = Listener::start(
        dir.path(),
        &["--respond-status", "500", "--respond-delay-ms", "3000"],
    );
    let rt = runtime();
    let client = common::http_client();
    let started = std::time::Instant::now();
    let a = send(
        &rt,
        client.get(format!("{}/dropbox?challenge=abc", listener.base_url)),
    );
    assert_eq!((a.status, a.body.as_str()), (200, "abc"));
    assert!(
        started.elapsed() < std::time::Duration::from_millis(2500),
        "answered after {:?}",
        started.elapsed()
    );
    let line = listener.next_json();
    assert_eq!(line["response"]["status"], 200, "{line}");
    // An ordinary delivery still gets the configured answer.
    let a = send(
        &rt,
        client
            .post(format!("{}/hooks/x", listener.base_url))
            .body("{}"),
    );
    assert_eq!(a.status, 500);
}
