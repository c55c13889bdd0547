//! Contracts over the test contracts in tests/fixtures/contracts, written in the
//! shape of real providers' specs: an OpenAPI 3.1 file (three webhooks, `$ref`s into
//! components and to a sibling file, an enum state, a `oneOf`, a date-time), an AsyncAPI 3
//! file, a folder of JSON Schemas, and a broken `$ref`.

mod common;

use std::path::PathBuf;

use hookscope::domain::contract::{Contract, SchemaStatus};
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/contracts")
        .join(name)
}

fn openapi() -> std::sync::Arc<Contract> {
    hookscope::contracts::load(&fixture("acme-openapi.yaml")).expect("the OpenAPI contract loads")
}

fn processed() -> Value {
    json!({
        "id": "evt_1",
        "type": "document.processed",
        "created_at": "2026-11-30T08:00:00Z",
        "data": {
            "job_id": "job_7a",
            "status": "completed",
            "pages": 3,
            "amount": 1250,
            "fee": {"value": 30, "currency": "EUR"},
            "result": {"kind": "text", "text_url": "https://files.example.com/7a.txt"}
        }
    })
}

fn check(
    contract: &Contract,
    event_type: &str,
    body: &Value,
) -> hookscope::domain::contract::SchemaCheck {
    contract.check(Some(event_type), body.to_string().as_bytes())
}

#[test]
fn a_valid_body_passes_and_each_violation_is_said_by_pointer_rule_and_value() {
    let contract = openapi();
    assert_eq!(
        contract.event_types(),
        ["document.processed", "document.failed", "invoice.paid"]
    );
    let valid = check(&contract, "document.processed", &processed());
    assert_eq!(valid.status, SchemaStatus::Pass, "{valid:?}");
    assert_eq!(valid.schema.as_deref(), Some("webhooks/document.processed"));
    assert!(valid.drift.is_empty(), "{valid:?}");
    assert_eq!(
        valid.detail,
        "Valid against webhooks/document.processed in acme-openapi.yaml."
    );

    let mut body = processed();
    body["data"]["amount"] = json!("12.50");
    body["data"]["status"] = json!("needs_review");
    body["created_at"] = json!("yesterday");
    body["data"]["fee"]["currency"] = json!("EURO");
    body["data"]["result"] = json!({"kind": "text"});
    body["data"].as_object_mut().expect("data").remove("pages");
    let failed = check(&contract, "document.processed", &body);
    assert_eq!(failed.status, SchemaStatus::Fail);
    let said: Vec<String> = failed
        .violations
        .iter()
        .map(|v| format!("{} [{}] {}", v.pointer, v.rule, v.detail))
        .collect();
    for expected in [
        "/data/amount [type] must be integer, got string \"12.50\"",
        "/data/status [enum] must be one of queued, processing, completed, got string \"needs_review\"",
        "/created_at [format] must be a date-time, got string \"yesterday\"",
        "/data/fee/currency [maxLength] must be at most 3 characters, got string \"EURO\"",
        "/data [required] is missing the required field `pages`",
        "/data/result [oneOf] matches none of the oneOf choices, got an object",
    ] {
        assert!(
            said.contains(&expected.to_string()),
            "{expected}\nin {said:#?}"
        );
    }
    assert!(
        failed
            .detail
            .starts_with("6 violations of webhooks/document.processed in acme-openapi.yaml: "),
        "{}",
        failed.detail
    );
}

#[test]
fn undocumented_fields_are_drift_not_failure_and_forbidden_ones_are_violations() {
    let contract = openapi();
    let mut body = processed();
    body["data"]["priority"] = json!("high");
    body["region"] = json!("eu");
    let drifted = check(&contract, "document.processed", &body);
    assert_eq!(drifted.status, SchemaStatus::Pass, "{drifted:?}");
    let pointers: Vec<&str> = drifted.drift.iter().map(|d| d.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        ["/data/priority", "/region"],
        "in the body's order"
    );
    assert_eq!(
        drifted.drift[0].detail,
        "undocumented field `/data/priority`: the provider may have added it"
    );
    // TextResult forbids extra members (additionalProperties: false): that is a violation,
    // not drift.
    body["data"]["result"]["pages"] = json!(2);
    let forbidden = check(&contract, "document.processed", &body);
    assert_eq!(forbidden.status, SchemaStatus::Fail);
    assert!(
        !forbidden
            .drift
            .iter()
            .any(|d| d.pointer == "/data/result/pages")
    );
}

#[test]
fn an_unknown_event_type_is_skipped_with_the_types_the_contract_has() {
    let contract = openapi();
    let skipped = check(&contract, "document.archived", &processed());
    assert_eq!(skipped.status, SchemaStatus::Skipped);
    assert_eq!(
        skipped.detail,
        "no schema in acme-openapi.yaml for event type document.archived (it has: document.processed, document.failed, invoice.paid)"
    );
    // Chosen by operation id, by x-hookscope-event-type, and by the const of the type field.
    assert!(
        contract
            .is_valid("documentProcessed", &processed())
            .expect("by operation id")
    );
    assert!(contract.is_valid("invoicePaid", &json!({})).is_some());
    let unnamed = hookscope::contracts::load(&fixture("acme-asyncapi.yaml")).expect("asyncapi");
    assert_eq!(unnamed.event_types(), ["job.completed", "job.failed"]);
}

#[test]
fn a_broken_ref_names_the_file_the_pointer_and_why() {
    let error = hookscope::contracts::load(&fixture("broken-ref.yaml"))
        .expect_err("a $ref that does not resolve");
    assert_eq!(error.file, "broken-ref.yaml");
    assert_eq!(
        error.pointer,
        "/components/schemas/DocumentProcessed/allOf/1/properties/data"
    );
    assert_eq!(
        error.reason,
        "$ref \"#/components/schemas/ProcessedDetails\" does not resolve: broken-ref.yaml has nothing at /components/schemas/ProcessedDetails"
    );
}

#[test]
fn asyncapi_messages_and_a_schema_folder_are_checked_the_same_way() {
    let asyncapi = hookscope::contracts::load(&fixture("acme-asyncapi.yaml")).expect("asyncapi");
    let good = json!({"type": "job.completed", "job_id": "j", "status": "completed", "finished_at": "2026-11-30T09:00:00Z"});
    assert_eq!(
        check(&asyncapi, "job.completed", &good).status,
        SchemaStatus::Pass
    );
    let bad = json!({"type": "job.completed", "job_id": "j", "status": "done", "finished_at": "2026-11-30T09:00:00Z"});
    let failed = check(&asyncapi, "job.completed", &bad);
    assert_eq!(
        failed.violations[0].detail,
        "must be one of completed, got string \"done\""
    );

    let dir = hookscope::contracts::load_dir(&fixture("schemas-dir")).expect("the folder");
    assert_eq!(dir.event_types(), ["job.completed", "job.failed"]);
    let failed = check(
        &dir,
        "job.failed",
        &json!({"type": "job.failed", "data": {"job_id": "j", "reason": "timeout", "retry": true}}),
    );
    assert_eq!(
        failed.status,
        SchemaStatus::Fail,
        "additionalProperties: false"
    );
    assert_eq!(failed.violations[0].pointer, "/data");
    let failed = check(
        &dir,
        "job.completed",
        &json!({"type": "job.completed", "data": {"job_id": "j", "pages": 0}}),
    );
    assert_eq!(failed.violations[0].detail, "must be >= 1, got integer 0");
}

#[test]
fn every_webhook_of_every_test_contract_has_an_example_that_passes_its_own_schema() {
    let contracts = [
        hookscope::contracts::load(&fixture("acme-openapi.yaml")).expect("openapi"),
        hookscope::contracts::load(&fixture("acme-asyncapi.yaml")).expect("asyncapi"),
        hookscope::contracts::load_dir(&fixture("schemas-dir")).expect("folder"),
    ];
    let mut checked = 0;
    for contract in &contracts {
        for event_type in contract.event_types() {
            let (example, _) = contract.example(&event_type).expect("an example");
            let verdict = contract.check(Some(&event_type), example.to_string().as_bytes());
            assert_eq!(
                verdict.status,
                SchemaStatus::Pass,
                "{} {event_type}: {example}\n{verdict:#?}",
                contract.name
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 7);
    // The contract's own example is used when it has one.
    let (invoice, given) = contracts[0].example("invoice.paid").expect("invoice");
    assert!(given);
    assert_eq!(invoice["data"]["invoice_id"], "in_1042");
    let (made, given) = contracts[0]
        .example("document.processed")
        .expect("processed");
    assert!(!given);
    assert_eq!(made["type"], "document.processed");
}

/// A data dir holding `files` from tests/fixtures/contracts (at the same relative paths) and
/// `config` as its config.toml, with `listen` running on it.
fn listening_with(files: &[&str], config: &str) -> (tempfile::TempDir, common::Listener) {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in files {
        let to = dir.path().join(name);
        std::fs::create_dir_all(to.parent().expect("a folder")).expect("dir");
        std::fs::copy(fixture(name), to).expect("copy");
    }
    std::fs::write(dir.path().join("config.toml"), config).expect("config");
    let listener = common::Listener::start(dir.path(), &[]);
    (dir, listener)
}

/// Posts a JSON body to `path` on the listener; the delivery it printed.
fn post_json(listener: &mut common::Listener, path: &str, body: &Value) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(
        common::http_client()
            .post(format!("{}{path}", listener.base_url))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send(),
    )
    .expect("post");
    listener.next_json()
}

fn run_ok(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    common::run(dir, args)
}

#[test]
fn verify_checks_a_body_against_a_contract_and_example_makes_bodies_that_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let openapi = fixture("acme-openapi.yaml");
    let openapi = openapi.to_str().expect("utf-8");
    let mut body = processed();
    body["data"]["amount"] = json!("12.50");
    let out = run_ok(
        dir.path(),
        &["verify", "--contract", openapi, "--data", &body.to_string()],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "schema     fail     1 violation of webhooks/document.processed in acme-openapi.yaml"
        ),
        "{text}"
    );
    assert!(
        text.contains("/data/amount [type] must be integer, got string \"12.50\""),
        "{text}"
    );
    let out = run_ok(
        dir.path(),
        &[
            "verify",
            "--contract",
            openapi,
            "--data",
            &processed().to_string(),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let verdict: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(verdict["checks"]["schema"]["status"], "pass");

    // Every event type of every test contract: `example`'s body passes `verify --contract`.
    for contract in [
        fixture("acme-openapi.yaml"),
        fixture("acme-asyncapi.yaml"),
        fixture("schemas-dir"),
    ] {
        let contract = contract.to_str().expect("utf-8");
        let out = run_ok(dir.path(), &["example", "--contract", contract]);
        let types = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(!types.trim().is_empty());
        for event_type in types.lines() {
            let out = run_ok(
                dir.path(),
                &[
                    "example",
                    "--contract",
                    contract,
                    "--event",
                    event_type,
                    "--json",
                ],
            );
            assert_eq!(out.status.code(), Some(0), "{event_type}");
            let example: Value = serde_json::from_slice(&out.stdout).expect("JSON");
            assert_eq!(example["valid"], true);
            let out = run_ok(
                dir.path(),
                &[
                    "verify",
                    "--contract",
                    contract,
                    "--data",
                    &example["body"].to_string(),
                ],
            );
            assert_eq!(
                out.status.code(),
                Some(0),
                "{event_type}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    let out = run_ok(
        dir.path(),
        &[
            "example",
            "--contract",
            openapi,
            "--event",
            "document.archived",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("(it has: document.processed, document.failed, invoice.paid)")
    );
}

#[test]
fn listen_checks_each_delivery_against_its_endpoints_contract_and_picks_up_a_change() {
    // The contract beside the config file, named relatively.
    let (dir, mut listener) = listening_with(
        &["acme-openapi.yaml", "schemas/money.json"],
        "[[endpoint]]\npath = \"/hooks/acme\"\ncontract = \"acme-openapi.yaml\"\n",
    );
    let mut post = |body: &Value| post_json(&mut listener, "/hooks/acme", body);
    let valid = post(&processed());
    assert_eq!(valid["checks"]["schema"]["status"], "pass", "{valid}");
    let mut body = processed();
    body["data"]["amount"] = json!("12.50");
    let invalid = post(&body);
    assert_eq!(invalid["checks"]["schema"]["status"], "fail");
    assert_eq!(
        invalid["checks"]["schema"]["violations"][0]["pointer"],
        "/data/amount"
    );

    // The provider publishes amounts as strings now: the edited contract applies to the next
    // delivery without a restart.
    let edited = std::fs::read_to_string(dir.path().join("acme-openapi.yaml"))
        .expect("read")
        .replace(
            "amount: {type: integer, minimum: 0}",
            "amount: {type: string}",
        );
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(dir.path().join("acme-openapi.yaml"), edited).expect("edit");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let again = loop {
        let again = post(&body);
        if again["checks"]["schema"]["status"] == "pass" || std::time::Instant::now() > deadline {
            break again;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(again["checks"]["schema"]["status"], "pass", "{again}");
    drop(listener);

    let out = common::run(dir.path(), &["list", "--json", "--filter", "schema:fail"]);
    let failed: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert!(!failed.is_empty());
    assert!(
        failed
            .iter()
            .all(|d| d["checks"]["schema"]["status"] == "fail")
    );
    assert_eq!(failed.last().map(|d| d["id"].clone()), Some(json!(2)));
    // The human lines say it under the delivery's line.
    let out = common::run(dir.path(), &["list", "--filter", "schema:fail"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("    schema: 1 violation of webhooks/document.processed in acme-openapi.yaml: `/data/amount` must be integer, got string \"12.50\"."),
        "{text}"
    );

    // A fixture records the contract and schema it was checked against.
    let out_file = dir.path().join("fixture.json");
    let export = || -> Value {
        let out = common::run(
            dir.path(),
            &[
                "export",
                "--ids",
                "2",
                "--format",
                "fixture",
                "--out",
                out_file.to_str().expect("utf-8"),
            ],
        );
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{said}");
        serde_json::from_str(&std::fs::read_to_string(&out_file).expect("read")).expect("JSON")
    };
    let exported = export();
    let contract = &exported["contract"];
    assert_eq!(
        [&contract["file"], &contract["schema"], &contract["status"]],
        ["acme-openapi.yaml", "webhooks/document.processed", "fail"]
    );
    // With the schema as the contract has it now (amounts as strings), which this body passes.
    assert_eq!(
        contract["json_schema"]["$defs"]["ProcessedData"]["properties"]["amount"],
        json!({"type": "string"})
    );
    assert_eq!(contract["json_schema_status"], "pass");

    // A broken $ref refuses the config, naming the file, the pointer and why.
    std::fs::copy(
        fixture("broken-ref.yaml"),
        dir.path().join("acme-openapi.yaml"),
    )
    .expect("copy");
    let out = common::run(dir.path(), &["listen", "--port", "0"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("endpoint /hooks/acme is invalid: contract acme-openapi.yaml at /components/schemas/DocumentProcessed/allOf/1/properties/data: $ref \"#/components/schemas/ProcessedDetails\" does not resolve"),
        "{said}"
    );
    // A fixture export still works, and its fixture says why it has no schema.
    let exported = export();
    assert!(exported["contract"].get("json_schema").is_none());
    let why = exported["contract"]["json_schema_detail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.starts_with("the config could not be read at export: endpoint /hooks/acme is invalid: contract acme-openapi.yaml at /components/schemas/DocumentProcessed"),
        "{why}"
    );
}

#[test]
fn a_folder_with_a_space_and_an_accent_and_a_broken_edit_said_once_keep_the_contract_before() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("Jane Doe/spécs #1");
    std::fs::create_dir_all(dir.join("schemas")).expect("dirs");
    std::fs::copy(fixture("acme-openapi.yaml"), dir.join("acme openapi.yaml")).expect("copy");
    std::fs::copy(
        fixture("schemas/money.json"),
        dir.join("schemas/money.json"),
    )
    .expect("copy");
    std::fs::write(
        dir.join("config.toml"),
        "[[endpoint]]\npath = \"/hooks/acme\"\ncontract = \"acme openapi.yaml\"\n",
    )
    .expect("config");
    let file = hookscope::config::load_file(&dir.join("config.toml")).expect("config loads");
    let settings = hookscope::config::Settings::resolve(&file, &Default::default())
        .expect("a contract in a folder named with a space, an accent and a #");
    let shared = hookscope::capture::SharedSettings::new(settings);
    let amount_as_text = {
        let mut body = processed();
        body["data"]["amount"] = json!("12.50");
        body.to_string()
    };
    let verdict = |shared: &hookscope::capture::SharedSettings| {
        let settings = shared.get();
        let contract = settings
            .endpoint_for("/hooks/acme")
            .contract
            .clone()
            .expect("contract");
        contract
            .check(Some("document.processed"), amount_as_text.as_bytes())
            .status
    };
    let reload =
        || hookscope::app::contract::reload_if_changed(&file, &Default::default(), &shared);
    assert!(reload().is_none(), "nothing changed");
    assert_eq!(verdict(&shared), SchemaStatus::Fail);

    // A broken edit: said once, and the contract before stays in force.
    let original = std::fs::read_to_string(dir.join("acme openapi.yaml")).expect("read");
    std::fs::write(
        dir.join("acme openapi.yaml"),
        format!("{original}\n  broken: [unclosed\n"),
    )
    .expect("break");
    let said = reload()
        .expect("the change is seen")
        .expect_err("and refused");
    assert!(
        said.to_string()
            .contains("contract acme openapi.yaml changed, and is not applied"),
        "{said}"
    );
    assert!(reload().is_none(), "said once");
    assert_eq!(
        verdict(&shared),
        SchemaStatus::Fail,
        "the contract before stays"
    );

    // Fixed, with amounts as text: applied.
    std::fs::write(
        dir.join("acme openapi.yaml"),
        original.replace(
            "amount: {type: integer, minimum: 0}",
            "amount: {type: string}",
        ),
    )
    .expect("fix");
    let applied = reload().expect("the fix is seen").expect("and applied");
    assert!(
        applied.contains("deliveries are checked against it from now"),
        "{applied}"
    );
    assert_eq!(verdict(&shared), SchemaStatus::Pass);
    assert!(reload().is_none());
}

#[test]
fn type_consts_rank_after_names_nullable_and_charset_are_read_and_a_tree_has_an_example() {
    let contract = hookscope::contracts::load(&fixture("tree-openapi30.yaml"))
        .expect("an OpenAPI 3.0 contract");
    // Both schemas list both types in the shared envelope's enum: the name decides.
    let failed = contract.check(Some("job.failed"), br#"{"type":"job.failed","reason":"x"}"#);
    assert_eq!(
        failed.schema.as_deref(),
        Some("x-webhooks/job.failed"),
        "{failed:?}"
    );
    assert_eq!(failed.status, SchemaStatus::Pass);
    // `nullable: true` (OpenAPI 3.0) lets a null through.
    let nullable = contract.check(
        Some("job.completed"),
        br#"{"type":"job.completed","note":null,"tree":{"name":"a","children":[]}}"#,
    );
    assert_eq!(nullable.status, SchemaStatus::Pass, "{nullable:?}");
    // A recursive schema still gets an example that passes.
    let (example, _) = contract.example("job.completed").expect("example");
    assert_eq!(
        contract.is_valid("job.completed", &example),
        Some(true),
        "{example}"
    );
}

#[test]
fn a_webhook_or_a_message_kept_in_a_sibling_file_is_followed_there() {
    let contract = hookscope::contracts::load(&fixture("sibling/api.yaml")).expect("loads");
    assert_eq!(contract.event_types(), ["refund.created"]);
    let failed = contract.check(
        Some("refund.created"),
        br#"{"type":"refund.created","amount":"5"}"#,
    );
    assert_eq!(failed.status, SchemaStatus::Fail, "{failed:?}");
    assert_eq!(failed.violations[0].pointer, "/amount");
    // Through a chain of two $refs, the made example still has the schema's members.
    let (example, _) = contract.example("refund.created").expect("example");
    assert_eq!(
        contract.is_valid("refund.created", &example),
        Some(true),
        "{example}"
    );
    assert_eq!(example["type"], "refund.created");

    let events = hookscope::contracts::load(&fixture("sibling/events.yaml")).expect("loads");
    assert_eq!(events.event_types(), ["refund.created"]);
    assert_eq!(
        events
            .check(Some("refund.created"), br#"{"amount":5}"#)
            .status,
        SchemaStatus::Pass
    );
}

/// Every test contract, compiled.
fn every_contract() -> Vec<std::sync::Arc<Contract>> {
    let load = |name: &str| hookscope::contracts::load(&fixture(name)).expect(name);
    vec![
        load("acme-openapi.yaml"),
        load("acme-asyncapi.yaml"),
        hookscope::contracts::load_dir(&fixture("schemas-dir")).expect("folder"),
        load("tree-openapi30.yaml"),
        load("sibling/api.yaml"),
        load("sibling/events.yaml"),
        load("edge-openapi30.yaml"),
        load("edge-asyncapi.yaml"),
        hookscope::contracts::load_dir(&fixture("edge-dir")).expect("edge folder"),
    ]
}

/// `body` with its leaves changed one at a time to a value of another type, and with each
/// object member removed in turn: bodies that pass and bodies that fail, for a comparison.
fn variants(body: &Value) -> Vec<Value> {
    fn walk(value: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(at.clone());
        match value {
            Value::Object(map) => map.iter().for_each(|(k, v)| {
                at.push(k.clone());
                walk(v, at, out);
                at.pop();
            }),
            Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| {
                at.push(i.to_string());
                walk(v, at, out);
                at.pop();
            }),
            _ => {}
        }
    }
    let mut paths = Vec::new();
    walk(body, &mut Vec::new(), &mut paths);
    let mut out = vec![body.clone()];
    for path in paths.iter().filter(|p| !p.is_empty()) {
        let pointer = |p: &[String]| {
            p.iter()
                .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
                .collect::<String>()
        };
        let mut changed = body.clone();
        let leaf = changed.pointer_mut(&pointer(path)).expect("leaf");
        *leaf = match leaf {
            Value::String(_) => json!(42),
            Value::Number(_) => json!("42"),
            Value::Bool(_) | Value::Null => json!("x"),
            Value::Array(_) => json!({}),
            Value::Object(_) => json!([]),
        };
        out.push(changed);
        let mut removed = body.clone();
        let (last, parent) = path.split_last().expect("a member");
        if let Some(Value::Object(map)) = removed.pointer_mut(&pointer(parent)) {
            map.remove(last);
            out.push(removed);
        }
    }
    out
}

#[test]
fn a_bundled_schema_stands_alone_and_judges_every_body_as_its_contract_does() {
    let (mut compared, mut failing) = (0, 0);
    for contract in every_contract() {
        for event_type in contract.event_types() {
            let bundle = contract.bundle(&event_type).expect("a bundle");
            // Every $ref points inside it: it compiles with nothing else to read.
            let text = bundle.to_string();
            let refs: Vec<&str> = text.split("\"$ref\":\"").skip(1).collect();
            assert!(
                refs.iter()
                    .all(|r| r.starts_with("#/$defs/") || r.starts_with("#/definitions/")),
                "{text}"
            );
            let alone = jsonschema::options()
                .should_validate_formats(true)
                .build(&bundle)
                .unwrap_or_else(|e| panic!("{} {event_type}: {e}\n{bundle:#}", contract.name));
            let (example, _) = contract.example(&event_type).expect("an example");
            assert_eq!(
                contract.is_valid(&event_type, &example),
                Some(true),
                "{} {event_type}: {example}",
                contract.name
            );
            for body in variants(&example) {
                let expected = contract.is_valid(&event_type, &body).expect("a schema");
                assert_eq!(
                    alone.is_valid(&body),
                    expected,
                    "{} {event_type}: {body}\n{bundle:#}",
                    contract.name
                );
                compared += 1;
                failing += usize::from(!expected);
            }
        }
    }
    // Enough of both verdicts to mean something (printed for the record).
    eprintln!("{compared} bodies compared, {failing} of them failing");
    assert!(compared > 100 && failing > 50, "{compared} {failing}");
    // The draft is the contract's: draft 4 for OpenAPI 3.0, draft 7 for AsyncAPI.
    let drafts: Vec<String> = every_contract()
        .iter()
        .map(|c| {
            let t = &c.event_types()[0];
            c.bundle(t).expect("bundle")["$schema"]
                .as_str()
                .expect("$schema")
                .to_string()
        })
        .collect();
    assert_eq!(drafts[1], "http://json-schema.org/draft-07/schema#");
    assert_eq!(drafts[3], "http://json-schema.org/draft-04/schema#");
    assert_eq!(drafts[0], "https://json-schema.org/draft/2020-12/schema");
    assert!(every_contract()[0].bundle("no.such.type").is_none());
}

#[test]
fn a_fixtures_example_tests_check_its_body_against_the_bundled_schema_in_python_and_node() {
    if !common::tool_runs(&["python3", "--version"]) || !common::tool_runs(&["node", "--version"]) {
        return;
    }
    // The validators a user installs: ajv (with its draft-04 class for OpenAPI 3.0, and the
    // formats), and Python's jsonschema (this machine's, else from PyPI).
    let Some(modules) = common::npm_dir("npm-ajv", &["ajv@8", "ajv-formats@3", "ajv-draft-04@1"])
    else {
        return;
    };
    let has_jsonschema = std::process::Command::new("python3")
        .args(["-c", "import jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    let python_path = if has_jsonschema {
        None
    } else {
        let Some(dir) = common::pip_target(
            "pip-jsonschema",
            "jsonschema",
            &[
                "jsonschema",
                "jsonschema-specifications",
                "referencing",
                "rpds-py",
                "attrs",
                "typing-extensions",
            ],
        ) else {
            return;
        };
        Some(dir)
    };

    let (dir, mut listener) = listening_with(
        &[
            "acme-openapi.yaml",
            "schemas/money.json",
            "tree-openapi30.yaml",
        ],
        "[[endpoint]]\npath = \"/hooks/acme\"\ncontract = \"acme-openapi.yaml\"\n\n[[endpoint]]\npath = \"/hooks/tree\"\ncontract = \"tree-openapi30.yaml\"\n",
    );
    let mut post = |path: &str, body: &Value| post_json(&mut listener, path, body);
    let valid = post("/hooks/acme", &processed());
    let mut body = processed();
    body["data"]["status"] = json!("needs_review");
    let invalid = post("/hooks/acme", &body);
    let draft4 = post("/hooks/tree", &json!({"type": "job.failed", "reason": "x"}));
    assert_eq!(invalid["checks"]["schema"]["status"], "fail");
    assert_eq!(draft4["checks"]["schema"]["status"], "pass", "{draft4}");
    drop(listener);

    // Exported where the ajv install is, so the snippets find its node_modules.
    let out = tempfile::tempdir_in(&modules).expect("out");
    let ids: Vec<String> = [&valid, &invalid, &draft4]
        .iter()
        .map(|d| d["id"].to_string())
        .collect();
    let exported = common::run(
        dir.path(),
        &[
            "export",
            "--ids",
            &ids.join(","),
            "--format",
            "fixture",
            "--resign-with-test-secret",
            "--scheme",
            "standard-webhooks",
            "--snippets",
            "--out",
            &format!("{}/", out.path().display()),
        ],
    );
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    let python = |id: &str| {
        let file = out.path().join(format!("test_delivery_{id}.py"));
        common::run_tool(
            "python3",
            &[file.to_str().expect("utf-8")],
            python_path.as_deref(),
        )
    };
    let node = |id: &str| {
        let file = out.path().join(format!("delivery_{id}.test.mjs"));
        common::run_tool("node", &["--test", file.to_str().expect("utf-8")], None)
    };
    let fixture_of = |id: &str| -> Value {
        let text = std::fs::read_to_string(out.path().join(format!("delivery-{id}.json")))
            .expect("fixture");
        serde_json::from_str(&text).expect("JSON")
    };

    // Each fixture is what assets/fixture.schema.json describes.
    let described: Value = serde_json::from_str(include_str!("../assets/fixture.schema.json"))
        .expect("the fixture schema");
    let described = jsonschema::validator_for(&described).expect("compiles");
    for id in &ids {
        let errors: Vec<String> = described
            .iter_errors(&fixture_of(id))
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "#{id}: {errors:?}");
    }

    // A valid body: the bundled schema is in the fixture, and both runtimes assert it.
    let recorded = fixture_of(&ids[0]);
    assert_eq!(recorded["contract"]["json_schema_status"], "pass");
    assert_eq!(
        recorded["contract"]["json_schema"]["title"],
        "webhooks/document.processed in acme-openapi.yaml"
    );
    let (ok, said) = python(&ids[0]);
    assert!(ok && said.contains("ok: 3 tests passed"), "{said}");
    let (ok, said) = node(&ids[0]);
    assert!(
        ok && said.contains("# pass 3") && said.contains("# fail 0"),
        "{said}"
    );
    // OpenAPI 3.0: a draft-04 bundle, checked by ajv-draft-04 and Draft4Validator.
    assert_eq!(
        fixture_of(&ids[2])["contract"]["json_schema"]["$schema"],
        "http://json-schema.org/draft-04/schema#"
    );
    let (ok, said) = python(&ids[2]);
    assert!(ok && said.contains("ok: 3 tests passed"), "{said}");
    let (ok, said) = node(&ids[2]);
    assert!(ok && said.contains("# pass 3"), "{said}");
    // A body that failed its schema: that test is skipped, saying why.
    let (ok, said) = python(&ids[1]);
    assert!(
        ok && said.contains("skipped: the body did not pass its schema when exported: ")
            && said.contains("needs_review")
            && said.contains("ok: 2 tests passed, 1 skipped"),
        "{said}"
    );
    let (ok, said) = node(&ids[1]);
    assert!(ok && said.contains("# skipped 1"), "{said}");

    // Every test contract's bundles, judged by the snippets' own validation (schema_errors in
    // the Python file, compileSchema in the Node one) over bodies that pass and fail: the same
    // verdict as the contract's, body by body.
    let mut cases = Vec::new();
    for contract in every_contract() {
        for event_type in contract.event_types() {
            let bundle = contract.bundle(&event_type).expect("a bundle");
            let (example, _) = contract.example(&event_type).expect("an example");
            for body in variants(&example) {
                let valid = contract.is_valid(&event_type, &body).expect("a schema");
                let label = format!("{} {event_type}: {body}", contract.name);
                cases.push(json!({"schema": bundle, "body": body, "valid": valid, "label": label}));
            }
        }
    }
    std::fs::write(
        out.path().join("cases.json"),
        Value::Array(cases.clone()).to_string(),
    )
    .expect("cases");
    let python_module = out.path().join(format!("test_delivery_{}.py", ids[0]));
    let judge = "import importlib.util, json, sys\n\
        spec = importlib.util.spec_from_file_location('snippet', sys.argv[1])\n\
        snippet = importlib.util.module_from_spec(spec)\n\
        spec.loader.exec_module(snippet)\n\
        cases = json.load(open(sys.argv[2]))\n\
        print('RESULTS ' + json.dumps([not snippet.schema_errors(c['schema'], c['body']) for c in cases]))\n";
    let (ok, python_said) = common::run_tool(
        "python3",
        &[
            "-c",
            judge,
            python_module.to_str().expect("utf-8"),
            out.path().join("cases.json").to_str().expect("utf-8"),
        ],
        python_path.as_deref(),
    );
    assert!(ok, "{python_said}");
    std::fs::write(
        out.path().join("judge.mjs"),
        format!(
            "import {{ readFileSync }} from \"node:fs\";\n\
             import {{ compileSchema }} from \"./delivery_{}.test.mjs\";\n\
             const cases = JSON.parse(readFileSync(new URL(\"./cases.json\", import.meta.url), \"utf8\"));\n\
             const results = [];\n\
             for (const c of cases) results.push((await compileSchema(c.schema))(c.body));\n\
             console.log(\"RESULTS \" + JSON.stringify(results));\n",
            ids[0]
        ),
    )
    .expect("judge");
    let (ok, node_said) = common::run_tool(
        "node",
        &[out.path().join("judge.mjs").to_str().expect("utf-8")],
        None,
    );
    assert!(ok, "{node_said}");
    for (runtime, said) in [("python", &python_said), ("node", &node_said)] {
        let line = said
            .lines()
            .find_map(|l| l.strip_prefix("RESULTS "))
            .unwrap_or_else(|| panic!("{runtime}: {said}"));
        let results: Vec<bool> = serde_json::from_str(line).expect("results");
        assert_eq!(results.len(), cases.len());
        let wrong: Vec<&str> = cases
            .iter()
            .zip(&results)
            .filter(|(c, r)| c["valid"] != **r)
            .map(|(c, _)| c["label"].as_str().unwrap_or_default())
            .collect();
        assert!(
            wrong.is_empty(),
            "{runtime} judged {} of {} otherwise:\n{}",
            wrong.len(),
            cases.len(),
            wrong.join("\n")
        );
    }

    // The body edited off the provider's shape: the schema test fails in both, naming where.
    let path = out.path().join(format!("delivery-{}.json", ids[0]));
    let text = std::fs::read_to_string(&path).expect("fixture");
    assert!(text.contains(r#"\"amount\":1250"#), "{text}");
    std::fs::write(
        &path,
        text.replace(r#"\"amount\":1250"#, r#"\"amount\":\"12.50\""#),
    )
    .expect("edit");
    let (ok, said) = python(&ids[0]);
    assert!(
        !ok && said.contains("FAILED test_the_body_matches_its_schema")
            && said.contains("/data/amount: '12.50' is not of type 'integer'"),
        "{said}"
    );
    let (ok, said) = node(&ids[0]);
    assert!(
        !ok && said.contains("not ok 3 - the body matches its schema")
            && said.contains("/data/amount: must be integer"),
        "{said}"
    );
}

#[test]
fn an_example_sent_again_is_a_new_event_whose_id_still_passes_the_schema() {
    let contract = openapi();
    let new_id = |event_type: &str| {
        let (example, _) = contract.example(event_type).expect("example");
        let sent = hookscope::app::contract::as_new_event(&contract, event_type, example.clone());
        assert_eq!(contract.is_valid(event_type, &sent), Some(true), "{sent}");
        (example, sent)
    };
    // The contract's own example (`evt_9f2c`): its prefix kept, a new number after it.
    let (given, first) = new_id("invoice.paid");
    let (_, second) = new_id("invoice.paid");
    let (a, b) = (
        first["id"].as_str().expect("id"),
        second["id"].as_str().expect("id"),
    );
    assert!(
        a.starts_with("evt_") && a != "evt_9f2c" && a != b,
        "{a} {b}"
    );
    assert_eq!(first["data"], given["data"]);
    // A made one too.
    let (made, sent) = new_id("document.processed");
    assert_ne!(made["id"], sent["id"]);
    // Without an id, nothing to change.
    let tree = hookscope::contracts::load(&fixture("tree-openapi30.yaml")).expect("tree");
    let body = json!({"type": "job.failed", "reason": "x"});
    assert_eq!(
        hookscope::app::contract::as_new_event(&tree, "job.failed", body.clone()),
        body
    );
}
