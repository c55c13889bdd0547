//! Route by rule: `[[endpoint.forward]]` rules with `when` conditions in the list's filter
//! language, over a real `hookscope listen` and real handlers on loopback. Each delivery goes
//! to every rule it meets, byte for byte; each forward is an attempt on it; one rule may
//! mirror its answer; a delivery that meets none is marked; a bad rule refuses the config.

mod common;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use common::handler::{Flavour, serve};
use common::{Listener, run};
use serde_json::Value;

fn config(billing: &str, payments: &str, staging: &str) -> String {
    format!(
        r#"
[[endpoint]]
path = "/hooks/stripe"

[[endpoint.forward]]
to = "{billing}"
when = "type:invoice.* OR type:customer.subscription.*"

[[endpoint.forward]]
to = "{payments}"
when = "type:charge.* -path:/hooks/stripe/test"
answer = "mirror"

[[endpoint]]
path = "/hooks/all"

[[endpoint.forward]]
to = "{staging}"
"#
    )
}

/// The stored deliveries as `list --json` prints them, by id.
fn stored(dir: &std::path::Path) -> Vec<Value> {
    let out = run(dir, &["list", "--json", "--limit", "100"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut all: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    all.sort_by_key(|d| d["id"].as_i64());
    all
}

#[test]
fn each_delivery_goes_to_every_rule_it_meets_and_one_that_meets_none_is_marked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let billing = serve(Flavour::Correct, StatusCode::OK);
    let payments = serve(Flavour::Correct, StatusCode::SERVICE_UNAVAILABLE);
    let staging = serve(Flavour::Correct, StatusCode::ACCEPTED);
    let url = |s: &common::handler::Server| format!("http://{}/record", s.addr);
    std::fs::write(
        dir.path().join("config.toml"),
        config(&url(&billing), &url(&payments), &url(&staging)),
    )
    .expect("config");
    let mut listener = Listener::start(dir.path(), &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = common::http_client();
    let mut post = |path: &str, event: &str| {
        let body = format!("{{\"id\":\"evt_{event}\",\"type\":\"{event}\",\"data\":{{\"n\": 1}}}}");
        let response = rt
            .block_on(
                client
                    .post(format!("{}{path}", listener.base_url))
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send(),
            )
            .expect("post");
        let status = response.status().as_u16();
        (status, listener.next_json(), body)
    };
    let (s1, invoice, invoice_body) = post("/hooks/stripe", "invoice.paid");
    let (s2, charge, _) = post("/hooks/stripe", "charge.succeeded");
    let (s3, subscription, _) = post("/hooks/stripe", "customer.subscription.updated");
    let (s4, payout, _) = post("/hooks/stripe", "payout.paid");
    let (s5, test_charge, _) = post("/hooks/stripe/test", "charge.refunded");
    let (s6, anything, _) = post("/hooks/all", "whatever.happened");
    // The sender gets the configured 200, except where the payments rule mirrors its 503.
    assert_eq!((s1, s2, s3, s4, s5, s6), (200, 503, 200, 200, 200, 200));
    assert_eq!(payout["unrouted"], true, "{payout}");
    assert_eq!(
        test_charge["unrouted"], true,
        "-path: kept the test charge out"
    );
    for delivery in [&invoice, &charge, &subscription, &anything] {
        assert_eq!(delivery["unrouted"], false, "{delivery}");
    }
    // listen's line says what the sender got and the store holds: the mirrored 503.
    assert_eq!(charge["response"]["status"], 503, "{charge}");
    assert!(
        charge["note"]
            .as_str()
            .unwrap_or("")
            .contains("mirrors the handler"),
        "{charge}"
    );
    // Forwards that do not mirror go out after the answer: wait until each target has what
    // it should (or more, which the counts below would catch) and each attempt is stored,
    // before stopping the receiver.
    let deadline = Instant::now() + Duration::from_secs(10);
    let count = |s: &common::handler::Server| s.handler.received.lock().expect("lock").len();
    let recorded = |dir: &std::path::Path| {
        stored(dir)
            .iter()
            .map(|d| d["attempts"].as_array().map_or(0, Vec::len))
            .sum::<usize>()
    };
    while (count(&billing) < 2
        || count(&payments) < 1
        || count(&staging) < 1
        || recorded(dir.path()) < 4)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(listener);

    let received = |s: &common::handler::Server| s.handler.received.lock().expect("lock").clone();
    let bodies = |s: &common::handler::Server| -> Vec<String> {
        received(s)
            .iter()
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .collect()
    };
    let billing_got = bodies(&billing);
    assert_eq!(billing_got.len(), 2, "{billing_got:?}");
    assert!(billing_got.contains(&invoice_body), "byte for byte");
    assert!(
        billing_got
            .iter()
            .any(|b| b.contains("customer.subscription.updated"))
    );
    assert_eq!(bodies(&payments).len(), 1);
    assert!(bodies(&payments)[0].contains("charge.succeeded"));
    assert_eq!(bodies(&staging).len(), 1);

    // Each forward is an attempt on its delivery, with the target's answer; the mirrored one
    // changed what the sender got, and says so.
    let all = stored(dir.path());
    let attempts = |n: usize| all[n]["attempts"].as_array().cloned().unwrap_or_default();
    assert_eq!(attempts(0)[0]["url"], url(&billing));
    assert_eq!(attempts(0)[0]["kind"], "forward");
    assert_eq!(attempts(1)[0]["status"], 503);
    assert_eq!(all[1]["response"]["status"], 503);
    assert!(
        all[1]["note"]
            .as_str()
            .unwrap_or("")
            .contains("mirrors the handler")
    );
    assert!(attempts(3).is_empty(), "the payout went nowhere");
    assert_eq!(all[3]["unrouted"], true, "kept in the store");
    assert_eq!(attempts(5)[0]["status"], 202);

    // What the handler received, compared with what was captured: the same bytes, only the
    // headers a hop changes.
    let out = run(dir.path(), &["diff", "1", "--with", "forwarded", "--json"]);
    let c: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(c["body"]["kind"], "same", "{c}");
    let title = c["title"].as_str().expect("title");
    assert!(
        title.starts_with(&format!(
            "#1 -> the forward to {} (attempt #",
            url(&billing)
        )),
        "{title}"
    );

    let out = run(dir.path(), &["list", "--limit", "10"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("forward: not forwarded: it met none of the conditions of its endpoint's 2 forwarding rules"),
        "{text}"
    );
}

#[test]
fn a_rule_that_does_not_parse_or_has_no_http_target_refuses_the_config_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        (
            "to = \"http://localhost:3000/a\"\nwhen = \"type:invoice.* OR\"",
            "endpoint /hooks/stripe is invalid: forward rule 1 (to \"http://localhost:3000/a\"): when \"type:invoice.* OR\":",
        ),
        (
            "to = \"ftp://localhost/a\"",
            "forward rule 1 (to \"ftp://localhost/a\"): `to` is not an http:// or https:// URL",
        ),
        (
            "to = \"http://localhost:3000/a\"\nwhen = \"invoice\"",
            "free text (`invoice`) cannot choose a forward",
        ),
        (
            "to = \"http://localhost:3000/a\"\nanswer = \"mirror\"\n[[endpoint.forward]]\nto = \"http://localhost:3000/b\"\nanswer = \"mirror\"",
            "forward rule 2 (to \"http://localhost:3000/b\"): rule 1 already mirrors its answer",
        ),
    ];
    for (rule, said) in cases {
        std::fs::write(
            dir.path().join("config.toml"),
            format!("[[endpoint]]\npath = \"/hooks/stripe\"\n[[endpoint.forward]]\n{rule}\n"),
        )
        .expect("config");
        let out = run(dir.path(), &["listen", "--port", "0"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // As every invalid config: exit 1, the sentence on stderr.
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(said), "{said}\nin: {stderr}");
        assert!(
            !stderr.contains("listening on"),
            "nothing half-applied: {stderr}"
        );
    }
}
