//! Property tests over the parsers and the scheme engine: arbitrary input never panics, and what
//! is signed verifies while any changed byte does not. Bounded case counts keep `cargo test` fast;
//! the `cargo fuzz` targets in `fuzz/` run the same parsers for longer (docs/reliability.md).

use hookscope::config;
use hookscope::domain::checks;
use hookscope::domain::delivery::{Delivery, Header};
use hookscope::domain::endpoint::Endpoint;
use hookscope::domain::filter::Filter;
use hookscope::domain::scheme::{Family, Scheme, Secret, Verification, ed25519, presets};
use hookscope::store::headers::{decode_headers, encode_headers};
use proptest::prelude::*;
use sha2::Digest as _;

fn delivery(headers: Vec<Header>, body: Vec<u8>) -> Delivery {
    Delivery {
        received_at_ms: 1_700_000_000_000,
        method: "POST".into(),
        path: "/hooks".into(),
        query: String::new(),
        headers,
        body_size: body.len() as u64,
        body,
        body_complete: true,
        remote_addr: None,
    }
}

fn header_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("webhook-signature".to_string()),
        Just("webhook-timestamp".to_string()),
        Just("webhook-id".to_string()),
        Just("stripe-signature".to_string()),
        Just("x-hub-signature-256".to_string()),
        Just("x-slack-signature".to_string()),
        Just("x-slack-request-timestamp".to_string()),
        Just("paddle-signature".to_string()),
        Just("x-shopify-hmac-sha256".to_string()),
        Just("x-twilio-signature".to_string()),
        Just("x-gitlab-token".to_string()),
        Just("x-signature-ed25519".to_string()),
        Just("x-signature-timestamp".to_string()),
        Just("host".to_string()),
        "[a-z-]{1,20}",
    ]
}

fn headers() -> impl Strategy<Value = Vec<Header>> {
    prop::collection::vec(
        (header_name(), prop::collection::vec(any::<u8>(), 0..120))
            .prop_map(|(n, v)| Header::new(&n, v)),
        0..8,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_header_parser_survives_any_bytes(value in prop::collection::vec(any::<u8>(), 0..300)) {
        for scheme in presets() {
            if let Ok(parsed) = scheme.parse_header(&value) {
                prop_assert!(!parsed.signatures.is_empty());
            }
        }
    }

    #[test]
    fn structured_garbage_headers_survive_too(text in "(t=|ts=|v1=|v1,|v1a,|h1=|v0=|sha256=|[0-9a-fA-F+/=,; ]){0,40}") {
        for scheme in presets() {
            let _ = scheme.parse_header(text.as_bytes());
        }
    }

    #[test]
    fn checks_and_diagnosis_survive_any_delivery(headers in headers(), body in prop::collection::vec(any::<u8>(), 0..400), secret in ".{0,40}") {
        let d = delivery(headers, body);
        for scheme in presets() {
            let endpoint = Endpoint { scheme: Some(scheme), secrets: vec![Secret::new(secret.clone())], ..Endpoint::catch_all() };
            let evaluation = checks::evaluate(&d, &endpoint, 1_700_000_000);
            prop_assert!(!evaluation.signature.detail.is_empty());
            prop_assert!(!evaluation.timestamp.detail.is_empty());
        }
        let detected = checks::evaluate(&d, &Endpoint::catch_all(), 1_700_000_000);
        prop_assert!(!detected.signature.detail.is_empty());
    }

    #[test]
    fn what_is_signed_verifies_and_one_changed_byte_does_not(
        body in prop::collection::vec(any::<u8>(), 1..500),
        secret in "[A-Za-z0-9]{8,40}",
        event_id in "[a-z0-9_]{1,30}",
        ts in 1_000_000_000i64..4_000_000_000,
        flip in any::<prop::sample::Index>(),
    ) {
        for mut scheme in presets() {
            scheme.public_url = Some("https://hooks.example.com/hooks?src=prop".into());
            // Standard Webhooks keys are base64; any alphanumeric string of a length divisible by
            // 4 is. Discord's are ed25519: a signing key from the secret's hash, and its public key.
            let (signing, verifying) = match scheme.family {
                Family::StandardWebhooks => {
                    let s = format!("whsec_{}", &secret[..secret.len() / 4 * 4]);
                    (s.clone(), s)
                }
                Family::Discord => {
                    let seed = sha2::Sha256::digest(secret.as_bytes());
                    let key = ed25519::SigningKey::from_bytes(&seed).expect("seed");
                    (format!("{}{}", hex::encode(seed), hex::encode(key.public().0)), hex::encode(key.public().0))
                }
                _ => (secret.clone(), secret.clone()),
            };
            if signing == "whsec_" { continue; }
            let headers = scheme.sign(&[Secret::new(signing)], &event_id, ts, &body).expect("sign");
            let sent_to = scheme.request_url("https://hooks.example.com/hooks?src=prop", &body);
            let mut good = delivery(headers, body.clone());
            good.query = sent_to.split_once('?').map(|(_, q)| q.to_string()).unwrap_or_default();
            let secrets = [Secret::new(verifying)];
            let verified = matches!(scheme.verify(&good, &secrets), Verification::Verified { .. });
            prop_assert!(verified, "{} did not verify its own signature", scheme.name);
            let mut bad = good.clone();
            let i = flip.index(bad.body.len());
            bad.body[i] ^= 0x01;
            let accepted = matches!(scheme.verify(&bad, &secrets), Verification::Verified { .. });
            // GitLab's token signs nothing: a changed body still passes, which is why its
            // sentence says so.
            prop_assert_eq!(accepted, !scheme.signs_body(), "{} and a changed body", scheme.name);
        }
    }

    #[test]
    fn the_config_parser_survives_any_text(text in ".{0,400}") {
        let _ = config::parse(&text);
    }

    #[test]
    fn the_config_parser_survives_config_shaped_text(text in "(\\[\\[endpoint\\]\\]|\\[\\[scheme\\]\\]|\\[receiver\\]|path|scheme|secrets|family|port|= |\"/x\"|\"hmac-body\"|\\[\"a\"\\]|[0-9]{1,6}|\n){0,40}") {
        if let Ok(file) = config::parse(&text) {
            let _ = config::Settings::resolve(&file, &config::Overrides::default());
        }
    }

    #[test]
    fn filters_parse_and_bind_every_parameter(text in "(sig:|ts:|dup:|type:|job:|path:|status:|method:|\"|[a-z0-9._/]| ){0,60}") {
        if let Ok(filter) = Filter::parse(&text) {
            let (sql, params) = hookscope::store::query::condition(&filter);
            for n in 1..=params.len() {
                prop_assert!(sql.contains(&format!("?{n}")), "{sql} lacks ?{n}");
            }
        }
    }

    #[test]
    fn header_blobs_round_trip_and_garbage_is_refused_not_misread(headers in headers(), garbage in prop::collection::vec(any::<u8>(), 0..200)) {
        prop_assert_eq!(decode_headers(&encode_headers(&headers)), Some(headers));
        let _ = decode_headers(&garbage);
    }

    #[test]
    fn redaction_and_pretty_printing_survive_any_text(text in ".{0,200}", pointer in "(/[a-z0-9]{0,4}){0,4}") {
        let _ = hookscope::export::redact(text.as_bytes(), &[pointer]);
        if let Some(pretty) = hookscope::domain::pretty::pretty_json(&text) {
            let squeezed: String = pretty.spans.iter().map(|(s, e, _)| &pretty.text[*s..*e]).collect();
            let original: String = text.split(|c: char| c.is_whitespace()).collect();
            // Only whitespace outside strings changes; with no whitespace inside strings both agree.
            if !text.contains('"') {
                prop_assert_eq!(squeezed, original);
            }
        }
    }

    #[test]
    fn pretty_printing_valid_json_changes_only_whitespace(value in arb_json()) {
        let compact = serde_json::to_string(&value).expect("json");
        let pretty = hookscope::domain::pretty::pretty_json(&format!("{{\"v\":{compact}}}")).expect("valid JSON is pretty-printed");
        let squeezed: String = pretty.spans.iter().map(|(s, e, _)| &pretty.text[*s..*e]).collect();
        prop_assert_eq!(squeezed, format!("{{\"v\":{compact}}}"));
        let reparsed: serde_json::Value = serde_json::from_str(&pretty.text).expect("still JSON");
        prop_assert_eq!(reparsed["v"].clone(), value);
    }
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(serde_json::Value::from),
        ".{0,12}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            prop::collection::btree_map("[a-z ]{0,6}", inner, 0..5)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn the_scheme_table_is_complete() {
    let names: Vec<String> = presets().into_iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "standard-webhooks",
            "svix",
            "stripe",
            "github",
            "shopify",
            "slack",
            "paddle",
            "twilio",
            "gitlab",
            "discord",
            "zoom",
            "twitch",
            "meta"
        ]
    );
    assert!(Scheme::preset("nope").is_none());
}
