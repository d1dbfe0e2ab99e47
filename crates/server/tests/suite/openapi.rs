//! The generated OpenAPI document: served over the socket with its docs page, and compatible with the
//! reference document (the repository's `reference/openapi.json`).
//!
//! Compatibility is directional. A request body or parameter must accept everything the reference accepts
//! (our accepted values ⊇ the reference's); a success response must stay within what a reference client
//! accepts (every property the reference requires is always sent, our enum values ⊆ the reference's, no
//! property the reference's closed objects do not declare). `$ref`s are resolved on both sides, `allOf`
//! merged, and `oneOf`/`anyOf` variants matched by their discriminator value or, failing that, by finding a
//! compatible variant. Value rules (lengths, counts, ranges, patterns) follow the same directions: a request's
//! may not refuse what the reference's document admits, a response's must refuse what it refuses (see
//! [`value_rules`]). Deliberate differences live in `tests/reference/allowed-differences.json` with a
//! reason each; an entry that no longer matches anything fails too, so the list stays true.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use crate::support::TestServer;
use serde_json::{Value, json};

// ---- the served document and page ----

#[tokio::test]
async fn the_document_and_its_docs_page_are_served() {
    let server = TestServer::start().await;
    let response = server
        .http
        .get(server.url("/api/v1/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let served: Value = response.json().await.unwrap();
    assert_eq!(
        served,
        serde_json::to_value(trueforge_server::openapi::document()).unwrap()
    );
    assert_eq!(served["openapi"], "3.1.0");
    assert_eq!(served["info"]["title"], "TrueForge API");

    let response = server.http.get(server.url("/api/v1/docs")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = response.text().await.unwrap();
    assert!(page.contains("/api/v1/openapi.json"), "{page}");
    assert!(page.contains("swagger-ui"), "{page}");

    // What the document leaves out, as the reference does.
    for path in ["/healthz", "/api/v1/openapi.json", "/api/v1/docs"] {
        assert!(served["paths"].get(path).is_none(), "{path} is documented");
    }
    server.stop().await;
}

/// Real answers of a running server, checked against the schemas our document gives their operations: the
/// derives and the hand-written schemas (JSON literals, hand-written serde) must describe what is sent.
#[tokio::test]
async fn live_answers_fit_the_document() {
    let server = TestServer::start().await;
    let document = our_document();
    let failures = std::cell::RefCell::new(Vec::new());
    let check = |method: &str, template: &str, status: u16, body: &Value| {
        let schema = &document["paths"][template][method]["responses"][status.to_string()]["content"]["application/json"]
            ["schema"];
        assert!(!schema.is_null(), "{method} {template} {status} has no JSON schema");
        for error in validate(&document, schema, body, "$") {
            failures
                .borrow_mut()
                .push(format!("{} {template} {status}: {error}", method.to_uppercase()));
        }
    };

    for (path, template) in [
        ("/api/v1/capabilities", "/api/v1/capabilities"),
        ("/api/v1/auth/me", "/api/v1/auth/me"),
        ("/api/v1/models", "/api/v1/models"),
        ("/api/v1/catalogs/model-providers", "/api/v1/catalogs/model-providers"),
        ("/api/v1/catalogs/mcp-servers", "/api/v1/catalogs/mcp-servers"),
        ("/api/v1/catalogs/skills", "/api/v1/catalogs/skills"),
        (
            "/api/v1/catalogs/sandbox-providers",
            "/api/v1/catalogs/sandbox-providers",
        ),
        ("/api/v1/settings/model-providers", "/api/v1/settings/model-providers"),
    ] {
        let (status, body) = server.get(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        check("get", template, status, &body);
    }

    let (status, body) = server
        .post(
            "/api/v1/settings/mcp-servers",
            json!({"manifest": {"type": "remote", "name": "docs", "url": "https://mcp.example.com/mcp",
                "description": "Docs search", "auth": {"type": "header", "headers": {"Authorization": "Bearer x"}}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    check("post", "/api/v1/settings/mcp-servers", status, &body);
    let (status, body) = server
        .post(
            "/api/v1/settings/skills",
            json!({"manifest": {"type": "git", "name": "pdf", "url": "https://github.com/example/skills",
                "path": "pdf", "ref": "main", "description": "Reads PDFs"}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    check("post", "/api/v1/settings/skills", status, &body);
    for path in [
        "/api/v1/settings/mcp-servers",
        "/api/v1/settings/skills",
        "/api/v1/mcp-servers",
        "/api/v1/skills",
    ] {
        let (status, body) = server.get(path).await;
        assert_eq!(status, 200, "{path}: {body}");
        check("get", path, status, &body);
    }
    let (status, body) = server.get("/api/v1/mcp-servers/docs/authorize").await;
    check("get", "/api/v1/mcp-servers/{name}/authorize", status, &body);

    let (status, body) = server
        .post(
            "/api/v1/agents",
            json!({"name": "helper", "manifest": {"model": {"name": crate::support::MODEL}, "instructions": "Be brief."}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    check("post", "/api/v1/agents", status, &body);
    let (status, body) = server.get("/api/v1/agents").await;
    check("get", "/api/v1/agents", status, &body);
    let agent_id = body["data"][0]["id"].as_str().unwrap().to_owned();
    let (status, body) = server.get(&format!("/api/v1/agents/{agent_id}/tool-approvals")).await;
    assert_eq!(status, 200, "{body}");
    check("get", "/api/v1/agents/{agent_id}/tool-approvals", status, &body);
    let (status, body) = server
        .send(
            reqwest::Method::DELETE,
            &format!("/api/v1/agents/{agent_id}/tool-approvals"),
            None,
        )
        .await;
    check("delete", "/api/v1/agents/{agent_id}/tool-approvals", status, &body);

    let (status, body) = server
        .post("/api/v1/sessions", json!({"agent": {"name": "helper"}}))
        .await;
    assert_eq!(status, 201, "{body}");
    check("post", "/api/v1/sessions", status, &body);
    let session_id = server.session().await;
    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": [{"type": "user.message", "content": "hello #chunks=2"}]}),
        )
        .await;
    let stream_schema = &document["paths"]["/api/v1/sessions/{session_id}/turns"]["post"]["responses"]["200"]["content"]
        ["text/event-stream"]["schema"];
    for (id, event) in &frames {
        for error in validate(&document, stream_schema, event, "$") {
            failures.borrow_mut().push(format!("SSE frame {id}: {error}"));
        }
    }
    let turn_id = frames[0].1["turn_id"].as_str().unwrap().to_owned();
    for (path, template) in [
        ("/api/v1/sessions".to_owned(), "/api/v1/sessions"),
        (
            format!("/api/v1/sessions/{session_id}"),
            "/api/v1/sessions/{session_id}",
        ),
        (
            format!("/api/v1/sessions/{session_id}/events"),
            "/api/v1/sessions/{session_id}/events",
        ),
        (
            format!("/api/v1/sessions/{session_id}/turns"),
            "/api/v1/sessions/{session_id}/turns",
        ),
        (
            format!("/api/v1/sessions/{session_id}/turns/{turn_id}"),
            "/api/v1/sessions/{session_id}/turns/{turn_id}",
        ),
        (
            format!("/api/v1/sessions/{session_id}/turns/{turn_id}/events"),
            "/api/v1/sessions/{session_id}/turns/{turn_id}/events",
        ),
    ] {
        let (status, body) = server.get(&path).await;
        assert_eq!(status, 200, "{path}: {body}");
        check("get", template, status, &body);
    }
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": [{"type": "user.message", "content": "again"}], "stream": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    check("post", "/api/v1/sessions/{session_id}/turns", status, &body);
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{session_id}/cancel"), json!({}))
        .await;
    check("post", "/api/v1/sessions/{session_id}/cancel", status, &body);

    // Error answers share one envelope.
    let (status, body) = server.get("/api/v1/sessions/unknown").await;
    assert_eq!(status, 404);
    check("get", "/api/v1/sessions/{session_id}", status, &body);
    server.stop().await;
    let failures = failures.into_inner();
    assert!(
        failures.is_empty(),
        "answers outside the document:\n{}",
        failures.join("\n")
    );
}

/// Where `value` does not fit `schema` (resolved in `document`): types, enums, required and undeclared
/// properties of closed objects, array items; a union needs one variant that fits.
pub(crate) fn validate(document: &Value, schema: &Value, value: &Value, path: &str) -> Vec<String> {
    let schema = resolve(document, schema).schema;
    if let Some(members) = schema.get("allOf").and_then(Value::as_array) {
        return members
            .iter()
            .flat_map(|member| validate(document, member, value, path))
            .collect();
    }
    if let Some(members) = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)
    {
        let outcomes: Vec<Vec<String>> = members
            .iter()
            .map(|member| validate(document, member, value, path))
            .collect();
        if outcomes.iter().any(Vec::is_empty) {
            return Vec::new();
        }
        let closest = outcomes.into_iter().min_by_key(Vec::len).unwrap_or_default();
        return vec![format!("{path}: fits no variant (closest: {})", closest.join("; "))];
    }
    let allowed = types(schema);
    let found: BTreeSet<String> = [json_type(value).to_owned()].into();
    if !types_within(&found, &allowed) {
        return vec![format!(
            "{path}: {} where the document says {}",
            json_type(value),
            list(&allowed)
        )];
    }
    if let Some(values) = enum_values(schema)
        && !values.contains(value)
    {
        return vec![format!("{path}: {value} is not one of {}", list(&values))];
    }
    let mut errors = Vec::new();
    match value {
        Value::Object(object) => {
            let declared = properties(schema);
            for name in required(schema) {
                if !object.contains_key(&name) {
                    errors.push(format!("{path}: `{name}` is required but missing"));
                }
            }
            for (name, item) in object {
                let at = format!("{path}.{name}");
                match (declared.get(name), schema.get("additionalProperties")) {
                    (Some(property), _) => errors.extend(validate(document, property, item, &at)),
                    (None, Some(Value::Bool(false))) => errors.push(format!("{at}: not declared on a closed object")),
                    (None, Some(extra @ Value::Object(_))) => errors.extend(validate(document, extra, item, &at)),
                    (None, _) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    errors.extend(validate(document, item_schema, item, &format!("{path}[{index}]")));
                }
            }
        }
        _ => {}
    }
    errors
}

#[test]
fn the_answer_check_reports_what_does_not_fit() {
    let document = our_document();
    let schema = json!({"$ref": "#/components/schemas/GetCapabilitiesResponse"});
    let fits = json!({"data": {"sandbox": {"enabled": false}, "skill": {"enabled": false, "reason": "no sandbox"},
        "settings": {"enabled": true}}});
    assert_eq!(validate(&document, &schema, &fits, "$"), Vec::<String>::new());
    let errors = validate(
        &document,
        &schema,
        &json!({"data": {"sandbox": {"enabled": "yes"}, "skill": {"enabled": false}}}),
        "$",
    );
    assert!(
        errors
            .iter()
            .any(|error| error.starts_with("$.data.sandbox.enabled: string")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|error| error.contains("`settings` is required")),
        "{errors:?}"
    );
    let event = json!({"$ref": "#/components/schemas/SessionEventItem"});
    let errors = validate(
        &document,
        &event,
        &json!({"turn_id": "t", "event": {"type": "turn.done", "created_at": "now", "thread_id": null,
            "state": {"status": "done"}}}),
        "$",
    );
    // Without an `id` no event variant fits, the custom-event one included.
    assert!(
        errors.iter().any(|error| error.contains("fits no variant")),
        "{errors:?}"
    );
}

/// Clients generate their types from the document (the TypeScript SDK does): a response property the
/// reference documents and our server sends must be documented by ours too, or those clients cannot read it.
/// Checked for the schemas whose answers carry optional fields a client acts on.
#[test]
fn optional_response_fields_the_reference_documents_are_documented() {
    let reference = reference_document();
    let ours = our_document();
    for schema in ["MCPAuthStatus"] {
        let theirs = properties(&reference["components"]["schemas"][schema]);
        let mine = properties(&ours["components"]["schemas"][schema]);
        for name in theirs.keys() {
            assert!(mine.contains_key(name), "{schema}.{name} is not in our document");
        }
    }
    let url = &ours["components"]["schemas"]["MCPAuthStatus"]["properties"]["authorization_url"];
    assert_eq!(url["format"], "uri", "{url}");
}

#[test]
fn every_reference_in_the_document_resolves() {
    let ours = our_document();
    let mut dangling = Vec::new();
    walk_refs(&ours, &mut |reference| {
        let name = reference.trim_start_matches("#/components/schemas/");
        if ours["components"]["schemas"].get(name).is_none() {
            dangling.push(reference.to_owned());
        }
    });
    assert!(dangling.is_empty(), "dangling $refs: {dangling:?}");
}

fn walk_refs(value: &Value, visit: &mut impl FnMut(&str)) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                visit(reference);
            }
            map.values().for_each(|value| walk_refs(value, visit));
        }
        Value::Array(items) => items.iter().for_each(|value| walk_refs(value, visit)),
        _ => {}
    }
}

// ---- the comparison with the reference ----

#[test]
fn the_document_is_compatible_with_the_reference() {
    let reference = reference_document();
    let ours = our_document();
    let differences = compare(&reference, &ours);
    let allowed = allowed_differences();

    let mut unexpected = Vec::new();
    let mut used = vec![false; allowed.len()];
    for difference in differences.iter().filter(|difference| difference.kind == ADDITIVE) {
        eprintln!("note: {}: {}", difference.at, difference.message);
    }
    for difference in differences.iter().filter(|difference| difference.kind != ADDITIVE) {
        match allowed.iter().position(|entry| entry.matches(difference)) {
            Some(index) => used[index] = true,
            None => unexpected.push(difference),
        }
    }
    for difference in &unexpected {
        eprintln!(
            "DIFFERENCE {} [{}]: {}",
            difference.at, difference.kind, difference.message
        );
    }
    let stale: Vec<&Allowed> = allowed
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(entry, _)| entry)
        .collect();
    for entry in &stale {
        eprintln!(
            "STALE ALLOWLIST ENTRY {} [{}]: matches no difference",
            entry.at, entry.kind
        );
    }
    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "{} difference(s) from the reference and {} stale allowlist entr(ies); see above",
        unexpected.len(),
        stale.len()
    );
}

#[test]
fn the_comparison_reports_a_missing_operation_and_a_changed_type() {
    let reference = reference_document();
    let mut broken = our_document();
    broken["paths"]["/api/v1/agents"]
        .as_object_mut()
        .unwrap()
        .remove("get")
        .expect("the document lists GET /api/v1/agents");
    broken["components"]["schemas"]["Agent"]["properties"]["id"] = json!({"type": "integer"});
    broken["components"]["schemas"]["Session"]["properties"]
        .as_object_mut()
        .unwrap()
        .remove("title");

    let differences = compare(&reference, &broken);
    let found = |at: &str, kind: &str| {
        differences
            .iter()
            .any(|difference| difference.at == at && difference.kind == kind)
    };
    assert!(found("GET /api/v1/agents", "missing-operation"), "{differences:#?}");
    assert!(found("Agent.id", "type"), "{differences:#?}");
    assert!(found("Session.title", "missing-property"), "{differences:#?}");
    // The intact document has none of them.
    let clean = compare(&reference, &our_document());
    for at in ["GET /api/v1/agents", "Agent.id", "Session.title"] {
        assert!(!clean.iter().any(|difference| difference.at == at), "{at}");
    }
}

#[test]
fn the_comparison_is_directional() {
    let closed_enum = |values: Value| {
        json!({"openapi": "3.1.0", "paths": {"/x": {"post": {
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/In"}}}},
            "responses": {"200": {"description": "", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Out"}}}}}
        }}}, "components": {"schemas": {
            "In": {"type": "object", "properties": {"kind": {"type": "string", "enum": values}}},
            "Out": {"type": "object", "required": ["kind"], "properties": {"kind": {"type": "string", "enum": values}}, "additionalProperties": false}
        }}})
    };
    let reference = closed_enum(json!(["a", "b"]));
    // Fewer accepted values in a request, more sent values in a response: both incompatible.
    let mut ours = closed_enum(json!(["a"]));
    ours["components"]["schemas"]["Out"]["properties"]["kind"]["enum"] = json!(["a", "b", "c"]);
    ours["components"]["schemas"]["Out"]["properties"]["extra"] = json!({"type": "string"});
    let differences = compare(&reference, &ours);
    let kinds: BTreeSet<(&str, &str)> = differences
        .iter()
        .map(|difference| (difference.at.as_str(), difference.kind.as_str()))
        .collect();
    assert!(kinds.contains(&("In.kind", "enum")), "{differences:#?}");
    assert!(kinds.contains(&("Out.kind", "enum")), "{differences:#?}");
    assert!(kinds.contains(&("Out", "extra-property")), "{differences:#?}");
    // The other way round is fine: more accepted, fewer sent.
    let mut ours = closed_enum(json!(["a", "b", "c"]));
    ours["components"]["schemas"]["Out"]["properties"]["kind"]["enum"] = json!(["a"]);
    let differences: Vec<Difference> = compare(&reference, &ours)
        .into_iter()
        .filter(|difference| difference.kind != ADDITIVE)
        .collect();
    assert_eq!(differences, Vec::new());
}

#[test]
fn value_rules_are_compared_in_the_direction_of_the_data() {
    let document = |input: Value, output: Value| {
        json!({"openapi": "3.1.0", "paths": {"/x": {"post": {
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/In"}}}},
            "responses": {"200": {"description": "", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Out"}}}}}
        }}}, "components": {"schemas": {
            "In": {"type": "object", "properties": {"name": input}},
            "Out": {"type": "object", "required": ["count"], "properties": {"count": output}}
        }}})
    };
    let reference = document(
        json!({"type": "string", "minLength": 1}),
        json!({"type": "integer", "exclusiveMinimum": 0}),
    );
    let found = |ours: &Value| -> BTreeSet<(String, String)> {
        compare(&reference, ours)
            .into_iter()
            .map(|difference| (difference.at, difference.kind))
            .collect()
    };
    let pair = |at: &str, kind: &str| (at.to_owned(), kind.to_owned());

    // A request rule the reference lacks, a response rule we lack: both reported.
    let stricter_in_looser_out = document(
        json!({"type": "string", "minLength": 1, "pattern": "^[a-z]+$"}),
        json!({"type": "integer"}),
    );
    let differences = found(&stricter_in_looser_out);
    assert!(
        differences.contains(&pair("In.name", "narrower-rule")),
        "{differences:?}"
    );
    assert!(
        differences.contains(&pair("Out.count", "wider-rule")),
        "{differences:?}"
    );

    // The same rules written differently (`minimum: 1` is `exclusiveMinimum: 0` for integers), a looser request
    // and a stricter response: nothing to report.
    let compatible = document(
        json!({"type": "string"}),
        json!({"type": "integer", "minimum": 1, "maximum": 10}),
    );
    assert_eq!(found(&compatible), BTreeSet::new());

    // A pattern with lookaheads put in front refuses more than the pattern: narrower in a request, and
    // within the reference's rule in a response. An enum is checked value by value.
    let mut reference_patterns = reference.clone();
    reference_patterns["components"]["schemas"]["In"]["properties"]["name"] =
        json!({"anyOf": [{"type": "string", "enum": ["auto"]}, {"type": "string", "pattern": "^[a-z]+$"}]});
    reference_patterns["components"]["schemas"]["Out"]["properties"]["label"] =
        json!({"type": "string", "pattern": "^[a-z]+$"});
    let mut ours = document(
        json!({"type": "string", "minLength": 1, "pattern": "^(?!x)[a-z]+$"}),
        json!({"type": "integer", "minimum": 1}),
    );
    ours["components"]["schemas"]["Out"]["properties"]["label"] =
        json!({"type": "string", "pattern": "^(?!\\.)(?!x)[a-z]+$"});
    let differences: Vec<Difference> = compare(&reference_patterns, &ours);
    let rules: Vec<(&str, &str)> = differences
        .iter()
        .map(|difference| (difference.at.as_str(), difference.kind.as_str()))
        .collect();
    assert_eq!(
        rules,
        vec![("In.name", "narrower-rule"), ("In.name", "narrower-rule")],
        "{differences:#?}"
    );
    // "auto" is long enough for `minLength: 1`; only the pattern is reported against it.
    assert!(
        differences.iter().any(|difference| difference.message
            == "refuses what the reference's document admits: pattern ^(?!x)[a-z]+$ (by \"auto\")"),
        "{differences:#?}"
    );

    // For numbers, `minimum: 0` admits the 0 that `exclusiveMinimum: 0` refuses.
    let mut reference_number = reference.clone();
    reference_number["components"]["schemas"]["Out"]["properties"]["count"] =
        json!({"type": "number", "exclusiveMinimum": 0});
    let ours = document(json!({"type": "string"}), json!({"type": "number", "minimum": 0}));
    let differences: BTreeSet<(String, String)> = compare(&reference_number, &ours)
        .into_iter()
        .map(|difference| (difference.at, difference.kind))
        .collect();
    assert!(
        differences.contains(&pair("Out.count", "wider-rule")),
        "{differences:?}"
    );
}

fn workspace_file(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn reference_document() -> Value {
    let path = workspace_file("../../reference/openapi.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap()
}

pub(crate) fn our_document() -> Value {
    serde_json::to_value(trueforge_server::openapi::document()).unwrap()
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Allowed {
    /// Where: `METHOD /path …` for operation-level differences, `Schema.property…` inside schemas (anchored
    /// at the nearest named reference schema).
    at: String,
    /// What kind of difference (see [`Difference::kind`]).
    kind: String,
    reason: String,
}

impl Allowed {
    fn matches(&self, difference: &Difference) -> bool {
        self.at == difference.at && self.kind == difference.kind
    }
}

fn allowed_differences() -> Vec<Allowed> {
    let path = workspace_file("tests/reference/allowed-differences.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let entries: Vec<Allowed> = serde_json::from_str(&text).unwrap();
    for entry in &entries {
        assert!(
            !entry.reason.trim().is_empty(),
            "{} [{}] needs a reason",
            entry.at,
            entry.kind
        );
    }
    entries
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Difference {
    /// Stable location: the operation, or the nearest named reference schema and the property path from it.
    at: String,
    /// `missing-operation`, `missing-parameter`, `parameter-in`, `parameter-required`, `missing-status`,
    /// `missing-body`, `body-required`, `missing-media-type`, `type`, `enum`, `missing-property`,
    /// `property-required`, `extra-property`, `closed-object`, `open-object`, `missing-variant`,
    /// `no-compatible-variant`, `narrower-rule`, `wider-rule`.
    kind: String,
    message: String,
}

/// Not a difference: a property our answers add to an open reference object. Listed, never failing.
const ADDITIVE: &str = "additive-property";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Direction {
    /// What a client sends: ours must accept all the reference accepts.
    Request,
    /// What the server sends: ours must stay within what the reference allows.
    Response,
}

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Every incompatibility of `ours` with `reference`, sorted and without duplicates.
fn compare(reference: &Value, ours: &Value) -> Vec<Difference> {
    let mut comparer = Comparer {
        reference,
        ours,
        cache: HashMap::new(),
    };
    let mut differences = Vec::new();
    let empty = serde_json::Map::new();
    for (path, item) in reference["paths"].as_object().unwrap_or(&empty) {
        for method in METHODS {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let at = format!("{} {path}", method.to_uppercase());
            match ours["paths"].get(path).and_then(|item| item.get(method)) {
                None => differences.push(difference(&at, "missing-operation", "the operation is not documented")),
                Some(our_operation) => {
                    differences.extend(comparer.operation(&at, operation, our_operation));
                }
            }
        }
    }
    differences.sort();
    differences.dedup();
    differences
}

fn difference(at: &str, kind: &str, message: impl Into<String>) -> Difference {
    Difference {
        at: at.to_owned(),
        kind: kind.to_owned(),
        message: message.into(),
    }
}

struct Comparer<'a> {
    reference: &'a Value,
    ours: &'a Value,
    /// Results per pair of named schemas and direction; an empty entry is put in first so that a recursive
    /// schema ends its own recursion.
    cache: HashMap<(String, String, Direction), Vec<Difference>>,
}

/// A schema with its `$ref`s followed: the schema and the name of the last component on the way.
struct Resolved<'v> {
    schema: &'v Value,
    name: Option<String>,
}

fn resolve<'v>(document: &'v Value, schema: &'v Value) -> Resolved<'v> {
    let mut current = schema;
    let mut name = None;
    // Bounded: a chain of references longer than the component count would be a loop.
    for _ in 0..64 {
        let Some(Value::String(reference)) = current.get("$ref") else {
            break;
        };
        let component = reference.trim_start_matches("#/components/schemas/");
        name = Some(component.to_owned());
        current = document["components"]["schemas"].get(component).unwrap_or(&Value::Null);
    }
    Resolved { schema: current, name }
}

/// The variants of a union (nested unions flattened), or the schema itself.
fn variants(document: &Value, schema: &Value) -> Vec<Value> {
    let resolved = resolve(document, schema);
    let members = resolved
        .schema
        .get("oneOf")
        .or_else(|| resolved.schema.get("anyOf"))
        .and_then(Value::as_array);
    match members {
        Some(members) => members.iter().flat_map(|member| variants(document, member)).collect(),
        None => vec![merged(document, resolved.schema)],
    }
}

/// `allOf` members merged into one schema: properties and required lists joined, closed if any member is.
fn merged(document: &Value, schema: &Value) -> Value {
    let schema = resolve(document, schema).schema;
    let Some(members) = schema.get("allOf").and_then(Value::as_array) else {
        return schema.clone();
    };
    let mut result = schema.clone();
    let object = result.as_object_mut().unwrap();
    object.remove("allOf");
    let mut properties = serde_json::Map::new();
    let mut required: Vec<Value> = Vec::new();
    for member in members {
        let member = merged(document, member);
        if let Some(Value::Object(more)) = member.get("properties") {
            properties.extend(more.clone());
        }
        if let Some(Value::Array(more)) = member.get("required") {
            required.extend(more.iter().cloned());
        }
        for key in ["type", "enum", "items", "additionalProperties"] {
            if let Some(value) = member.get(key) {
                let closed = key == "additionalProperties" && value == &Value::Bool(false);
                if closed || !object.contains_key(key) {
                    object.insert(key.to_owned(), value.clone());
                }
            }
        }
    }
    if !properties.is_empty() {
        let mut own = object
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        own.extend(properties);
        object.insert("properties".to_owned(), Value::Object(own));
    }
    if !required.is_empty() {
        object.insert("required".to_owned(), Value::Array(required));
    }
    result
}

const ALL_TYPES: [&str; 7] = ["array", "boolean", "integer", "null", "number", "object", "string"];

/// The JSON types a (non-union, merged) schema admits.
fn types(schema: &Value) -> BTreeSet<String> {
    let mut types = BTreeSet::new();
    match schema.get("type") {
        Some(Value::String(name)) => {
            types.insert(name.clone());
        }
        Some(Value::Array(names)) => types.extend(names.iter().filter_map(Value::as_str).map(str::to_owned)),
        _ => {
            if let Some(values) = enum_values(schema) {
                types.extend(values.iter().map(|value| json_type(value).to_owned()));
            } else if schema.get("properties").is_some() {
                types.insert("object".to_owned());
            } else if schema.get("items").is_some() {
                types.insert("array".to_owned());
            } else {
                types.extend(ALL_TYPES.iter().map(|name| (*name).to_owned()));
            }
        }
    }
    types
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether every type of `inner` is admitted by `outer` (an integer is a number).
fn types_within(inner: &BTreeSet<String>, outer: &BTreeSet<String>) -> bool {
    inner
        .iter()
        .all(|name| outer.contains(name) || (name == "integer" && outer.contains("number")))
}

fn enum_values(schema: &Value) -> Option<Vec<Value>> {
    if let Some(Value::Array(values)) = schema.get("enum") {
        return Some(values.clone());
    }
    schema.get("const").map(|value| vec![value.clone()])
}

/// The discriminator value of a variant: the single allowed value of its `type` or `status` property.
fn tag_of(document: &Value, variant: &Value) -> Option<(String, Value)> {
    let properties = variant.get("properties")?;
    ["type", "status"].into_iter().find_map(|key| {
        let property = resolve(document, properties.get(key)?).schema;
        match enum_values(property)?.as_slice() {
            [value] => Some((key.to_owned(), value.clone())),
            _ => None,
        }
    })
}

fn properties(schema: &Value) -> serde_json::Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn required(schema: &Value) -> BTreeSet<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn is_closed(schema: &Value) -> bool {
    schema.get("additionalProperties") == Some(&Value::Bool(false))
}

/// Explicitly admits undeclared properties (`true`, `{}` or a schema for them).
fn is_open(schema: &Value) -> bool {
    matches!(
        schema.get("additionalProperties"),
        Some(Value::Bool(true) | Value::Object(_))
    )
}

// ---- value rules ----

/// The kinds of difference [`value_rules`] reports.
const RULE_KINDS: [&str; 2] = ["narrower-rule", "wider-rule"];

/// The value rules of a schema the comparison reads: lengths, counts, ranges, patterns. `format` is left out:
/// in OpenAPI 3.1 it is an annotation that validators do not enforce unless asked to.
#[derive(Debug, Default)]
struct Rules {
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    lower: Option<Bound>,
    upper: Option<Bound>,
    pattern: Option<String>,
}

/// One end of a numeric range.
#[derive(Debug, Clone, Copy)]
struct Bound {
    value: f64,
    exclusive: bool,
}

impl Rules {
    fn of(schema: &Value) -> Self {
        let count = |key: &str| schema.get(key).and_then(Value::as_u64);
        let integer = types(schema).iter().all(|name| name == "integer");
        let bound = |inclusive: &str, exclusive: &str, step: f64| {
            // 3.1 writes `exclusiveMinimum: 0`; for integers that is the inclusive `minimum: 1`.
            let strict = schema
                .get(exclusive)
                .and_then(Value::as_f64)
                .map(|value| match integer {
                    true if value.fract() == 0.0 => Bound {
                        value: value + step,
                        exclusive: false,
                    },
                    _ => Bound { value, exclusive: true },
                });
            let plain = schema.get(inclusive).and_then(Value::as_f64).map(|value| Bound {
                value,
                exclusive: false,
            });
            // Both given: the tighter one holds.
            match (plain, strict) {
                (Some(plain), Some(strict)) if (plain.value - strict.value) * step > 0.0 => Some(plain),
                (_, Some(strict)) => Some(strict),
                (plain, None) => plain,
            }
        };
        Self {
            min_length: count("minLength"),
            max_length: count("maxLength"),
            min_items: count("minItems"),
            max_items: count("maxItems"),
            min_properties: count("minProperties"),
            max_properties: count("maxProperties"),
            lower: bound("minimum", "exclusiveMinimum", 1.0),
            upper: bound("maximum", "exclusiveMaximum", -1.0),
            pattern: schema.get("pattern").and_then(Value::as_str).map(str::to_owned),
        }
    }

    /// The rules of `self` that `other` does not imply (`other` admits a value they refuse), described.
    /// `other_values`: the only values `other` admits (its `enum` or `const`), checked one by one.
    fn not_implied_by(&self, other: &Self, other_values: Option<&[Value]>) -> Vec<String> {
        if let Some(values) = other_values {
            return self.refusing(values);
        }
        let mut missing = Vec::new();
        let mut minimum = |name: &str, mine: Option<u64>, theirs: Option<u64>| {
            if let Some(mine) = mine
                && theirs.is_none_or(|theirs| theirs < mine)
            {
                missing.push(format!("{name} {mine}"));
            }
        };
        minimum("minLength", self.min_length, other.min_length);
        minimum("minItems", self.min_items, other.min_items);
        minimum("minProperties", self.min_properties, other.min_properties);
        let mut maximum = |name: &str, mine: Option<u64>, theirs: Option<u64>| {
            if let Some(mine) = mine
                && theirs.is_none_or(|theirs| theirs > mine)
            {
                missing.push(format!("{name} {mine}"));
            }
        };
        maximum("maxLength", self.max_length, other.max_length);
        maximum("maxItems", self.max_items, other.max_items);
        maximum("maxProperties", self.max_properties, other.max_properties);
        let tighter = |mine: Bound, theirs: Bound, step: f64| {
            (theirs.value - mine.value) * step > 0.0
                || (theirs.value == mine.value && (theirs.exclusive || !mine.exclusive))
        };
        if let Some(lower) = self.lower
            && !other.lower.is_some_and(|theirs| tighter(lower, theirs, 1.0))
        {
            missing.push(format!(
                "{} {}",
                if lower.exclusive { "exclusiveMinimum" } else { "minimum" },
                lower.value
            ));
        }
        if let Some(upper) = self.upper
            && !other.upper.is_some_and(|theirs| tighter(upper, theirs, -1.0))
        {
            missing.push(format!(
                "{} {}",
                if upper.exclusive { "exclusiveMaximum" } else { "maximum" },
                upper.value
            ));
        }
        // Whether one pattern implies another is not decided in general: only the same pattern, or the same
        // pattern with negative lookaheads added at its start (which only take values away), implies it.
        if let Some(pattern) = &self.pattern
            && !other.pattern.as_deref().is_some_and(|theirs| {
                let (my_lookaheads, my_rest) = split_lookaheads(pattern);
                let (their_lookaheads, their_rest) = split_lookaheads(theirs);
                my_rest == their_rest
                    && my_lookaheads
                        .iter()
                        .all(|lookahead| their_lookaheads.contains(lookahead))
            })
        {
            missing.push(format!("pattern {pattern}"));
        }
        missing
    }

    /// The rules of `self` that one of `values` breaks, described. A pattern cannot be checked without a
    /// regular expression engine, so it counts as broken.
    fn refusing(&self, values: &[Value]) -> Vec<String> {
        let mut broken = Vec::new();
        for value in values {
            let length = value.as_str().map(|text| text.chars().count() as u64);
            let count = value
                .as_array()
                .map(|items| items.len() as u64)
                .or_else(|| value.as_object().map(|members| members.len() as u64));
            let number = value.as_f64();
            let below = |have: Option<u64>, min: Option<u64>| have.zip(min).is_some_and(|(have, min)| have < min);
            let above = |have: Option<u64>, max: Option<u64>| have.zip(max).is_some_and(|(have, max)| have > max);
            let under = number
                .zip(self.lower)
                .is_some_and(|(have, bound)| have < bound.value || (bound.exclusive && have == bound.value));
            let over = number
                .zip(self.upper)
                .is_some_and(|(have, bound)| have > bound.value || (bound.exclusive && have == bound.value));
            let checks = [
                (below(length, self.min_length), shown("minLength", self.min_length)),
                (above(length, self.max_length), shown("maxLength", self.max_length)),
                (below(count, self.min_items), shown("minItems", self.min_items)),
                (above(count, self.max_items), shown("maxItems", self.max_items)),
                (
                    below(count, self.min_properties),
                    shown("minProperties", self.min_properties),
                ),
                (
                    above(count, self.max_properties),
                    shown("maxProperties", self.max_properties),
                ),
                (under, shown("minimum", self.lower.map(|bound| bound.value))),
                (over, shown("maximum", self.upper.map(|bound| bound.value))),
                (
                    self.pattern.is_some() && value.is_string(),
                    shown("pattern", self.pattern.as_deref()),
                ),
            ];
            broken.extend(
                checks
                    .into_iter()
                    .filter(|(fails, _)| *fails)
                    .map(|(_, rule)| format!("{rule} (by {value})")),
            );
        }
        broken
    }
}

/// `name limit`, for messages.
fn shown(name: &str, limit: Option<impl std::fmt::Display>) -> String {
    limit.map(|limit| format!("{name} {limit}")).unwrap_or_default()
}

/// The negative lookaheads right after a pattern's leading `^`, and the pattern without them:
/// `^(?!\.)[a-z]+$` is `(?!\.)` and `^[a-z]+$`.
fn split_lookaheads(pattern: &str) -> (Vec<&str>, String) {
    let Some(mut rest) = pattern.strip_prefix('^') else {
        return (Vec::new(), pattern.to_owned());
    };
    let mut lookaheads = Vec::new();
    while let Some(group) = rest.strip_prefix("(?!") {
        // The end of the group: its closing parenthesis at depth zero, escapes and classes skipped.
        let mut depth = 0usize;
        let mut end = None;
        let mut chars = group.char_indices();
        let mut in_class = false;
        while let Some((index, c)) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '[' if !in_class => in_class = true,
                ']' if in_class => in_class = false,
                '(' if !in_class => depth += 1,
                ')' if !in_class && depth == 0 => {
                    end = Some(index);
                    break;
                }
                ')' if !in_class => depth -= 1,
                _ => {}
            }
        }
        let Some(end) = end else {
            return (Vec::new(), pattern.to_owned());
        };
        lookaheads.push(&rest[..end + 4]);
        rest = &group[end + 1..];
    }
    (lookaheads, format!("^{rest}"))
}

/// Value rules, in the comparison's direction. A request's rules must not refuse what the reference's
/// document admits (`narrower-rule`); a response's must refuse at least what the reference's refuses
/// (`wider-rule`), since reference clients may validate answers against them.
///
/// The reference server applies rules its document does not state (a model name must be `provider/model`,
/// a sandbox path absolute, ...). Stating such a rule in our document makes ours more accurate, not less
/// compatible, but only a person can tell that the reference applies it too: each `narrower-rule` is listed
/// in `allowed-differences.json` with the reference's behaviour as its reason, and the tests of
/// `tests/suite/value_rules.rs` check that the server applies what the document says.
fn value_rules(reference: &Value, ours: &Value, direction: Direction, at: &str) -> Vec<Difference> {
    let reference_rules = Rules::of(reference);
    let our_rules = Rules::of(ours);
    match direction {
        Direction::Request => {
            let stricter = our_rules.not_implied_by(&reference_rules, enum_values(reference).as_deref());
            if stricter.is_empty() {
                return Vec::new();
            }
            vec![difference(
                at,
                "narrower-rule",
                format!("refuses what the reference's document admits: {}", stricter.join(", ")),
            )]
        }
        Direction::Response => {
            let unkept = reference_rules.not_implied_by(&our_rules, enum_values(ours).as_deref());
            if unkept.is_empty() {
                return Vec::new();
            }
            vec![difference(
                at,
                "wider-rule",
                format!("may send what the reference's document refuses: {}", unkept.join(", ")),
            )]
        }
    }
}

fn list(values: impl IntoIterator<Item = impl std::fmt::Display>) -> String {
    values
        .into_iter()
        .map(|value| value.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Comparer<'_> {
    fn operation(&mut self, at: &str, reference: &Value, ours: &Value) -> Vec<Difference> {
        let mut differences = Vec::new();
        let no_parameters = Vec::new();
        let our_parameters = ours["parameters"].as_array().unwrap_or(&no_parameters);
        for parameter in reference["parameters"].as_array().unwrap_or(&no_parameters) {
            let name = parameter["name"].as_str().unwrap_or_default();
            let place = parameter["in"].as_str().unwrap_or_default();
            let at = format!("{at} parameter {name}");
            let same_name = |candidate: &&Value| {
                let candidate = candidate["name"].as_str().unwrap_or_default();
                if place == "header" {
                    candidate.eq_ignore_ascii_case(name)
                } else {
                    candidate == name
                }
            };
            let Some(our_parameter) = our_parameters.iter().find(same_name) else {
                differences.push(difference(
                    &at,
                    "missing-parameter",
                    format!("{place} parameter is not documented"),
                ));
                continue;
            };
            if our_parameter["in"] != parameter["in"] {
                differences.push(difference(
                    &at,
                    "parameter-in",
                    format!("in {} here, {place} in the reference", our_parameter["in"]),
                ));
            }
            let is_required = |parameter: &Value| parameter["required"].as_bool().unwrap_or(false);
            if is_required(our_parameter) != is_required(parameter) {
                differences.push(difference(
                    &at,
                    "parameter-required",
                    format!(
                        "required: {} here, {} in the reference",
                        is_required(our_parameter),
                        is_required(parameter)
                    ),
                ));
            }
            differences.extend(self.schemas(&parameter["schema"], &our_parameter["schema"], Direction::Request, &at));
        }

        // A parameter or body we insist on, which reference clients do not know to send.
        for parameter in our_parameters
            .iter()
            .filter(|parameter| parameter["required"] == Value::Bool(true))
        {
            let name = parameter["name"].as_str().unwrap_or_default();
            let known = reference["parameters"]
                .as_array()
                .is_some_and(|parameters| parameters.iter().any(|known| known["name"].as_str() == Some(name)));
            if !known {
                differences.push(difference(
                    &format!("{at} parameter {name}"),
                    "parameter-required",
                    "required here, unknown to the reference",
                ));
            }
        }
        if reference.get("requestBody").is_none() && ours["requestBody"]["required"] == Value::Bool(true) {
            differences.push(difference(
                &format!("{at} request body"),
                "body-required",
                "required here, the reference has none",
            ));
        }

        if let Some(body) = reference.get("requestBody") {
            let at = format!("{at} request body");
            match ours.get("requestBody") {
                None => differences.push(difference(&at, "missing-body", "no request body is documented")),
                Some(our_body) => {
                    let is_required = |body: &Value| body["required"].as_bool().unwrap_or(false);
                    if is_required(our_body) && !is_required(body) {
                        differences.push(difference(
                            &at,
                            "body-required",
                            "required here, optional in the reference",
                        ));
                    }
                    differences.extend(self.contents(&body["content"], &our_body["content"], Direction::Request, &at));
                }
            }
        }

        let empty = serde_json::Map::new();
        for (status, response) in reference["responses"].as_object().unwrap_or(&empty) {
            let at = format!("{at} response {status}");
            match ours["responses"].get(status) {
                None => differences.push(difference(&at, "missing-status", "the status is not documented")),
                Some(our_response) if status.starts_with('2') => {
                    differences.extend(self.contents(
                        &response["content"],
                        &our_response["content"],
                        Direction::Response,
                        &at,
                    ));
                }
                Some(_) => {}
            }
        }
        differences
    }

    fn contents(&mut self, reference: &Value, ours: &Value, direction: Direction, at: &str) -> Vec<Difference> {
        let mut differences = Vec::new();
        let empty = serde_json::Map::new();
        for (media_type, content) in reference.as_object().unwrap_or(&empty) {
            let at = format!("{at} {media_type}");
            match ours.get(media_type) {
                None => differences.push(difference(
                    &at,
                    "missing-media-type",
                    "the media type is not documented",
                )),
                Some(our_content) => {
                    differences.extend(self.schemas(&content["schema"], &our_content["schema"], direction, &at));
                }
            }
        }
        differences
    }

    /// Compares two schemas; `at` is where the reference's schema sits (reset to a component's name when
    /// the reference side goes through a `$ref`).
    fn schemas(&mut self, reference: &Value, ours: &Value, direction: Direction, at: &str) -> Vec<Difference> {
        let reference_name = resolve(self.reference, reference).name;
        let our_name = resolve(self.ours, ours).name;
        let at = reference_name.clone().unwrap_or_else(|| at.to_owned());
        if let (Some(reference_name), Some(our_name)) = (&reference_name, &our_name) {
            let key = (reference_name.clone(), our_name.clone(), direction);
            if let Some(cached) = self.cache.get(&key) {
                return cached.clone();
            }
            self.cache.insert(key.clone(), Vec::new());
            let differences = self.unions(reference, ours, direction, &at);
            self.cache.insert(key, differences.clone());
            return differences;
        }
        self.unions(reference, ours, direction, &at)
    }

    fn unions(&mut self, reference: &Value, ours: &Value, direction: Direction, at: &str) -> Vec<Difference> {
        let reference_variants = variants(self.reference, reference);
        let our_variants = variants(self.ours, ours);
        if let ([reference], [ours]) = (reference_variants.as_slice(), our_variants.as_slice()) {
            return self.single(reference, ours, direction, at);
        }
        // Each variant a value may take on the sending side must fit a variant of the receiving side.
        let (sources, targets, source_document, target_document) = match direction {
            Direction::Request => (&reference_variants, &our_variants, self.reference, self.ours),
            Direction::Response => (&our_variants, &reference_variants, self.ours, self.reference),
        };
        let mut differences = Vec::new();
        for source in sources {
            let tag = tag_of(source_document, source);
            let tagged_target = tag.as_ref().and_then(|tag| {
                targets
                    .iter()
                    .find(|target| tag_of(target_document, target).as_ref() == Some(tag))
            });
            let compare = |this: &mut Self, target: &Value| match direction {
                Direction::Request => this.single(source, target, direction, at),
                Direction::Response => this.single(target, source, direction, at),
            };
            if let Some(target) = tagged_target {
                let at = tag
                    .as_ref()
                    .map(|(key, value)| format!("{at}<{key}={}>", value.as_str().unwrap_or_default()))
                    .unwrap_or_else(|| at.to_owned());
                differences.extend(match direction {
                    Direction::Request => self.single(source, target, direction, &at),
                    Direction::Response => self.single(target, source, direction, &at),
                });
                continue;
            }
            let outcomes: Vec<Vec<Difference>> = targets.iter().map(|target| compare(self, target)).collect();
            if outcomes.iter().any(Vec::is_empty) {
                continue;
            }
            // A variant that differs only in value rules has the shape: the rules are reported as themselves
            // (where the allowlist can name them) rather than as a missing variant that hides them.
            if let Some(rules_only) = outcomes.iter().find(|outcome| {
                outcome
                    .iter()
                    .all(|difference| RULE_KINDS.contains(&difference.kind.as_str()))
            }) {
                differences.extend(rules_only.iter().cloned());
                continue;
            }
            let described = match &tag {
                Some((key, value)) => format!("the variant with {key} {value}"),
                None => format!("a variant of type {}", list(types(source))),
            };
            let (kind, side) = match direction {
                Direction::Request => ("missing-variant", "the reference accepts"),
                Direction::Response => ("no-compatible-variant", "we may send"),
            };
            let closest = outcomes
                .iter()
                .min_by_key(|outcome| outcome.len())
                .cloned()
                .unwrap_or_default();
            differences.push(difference(
                at,
                kind,
                format!(
                    "{side} {described}, which no variant on the other side admits (closest: {})",
                    list(
                        closest
                            .iter()
                            .map(|difference| format!("{} {}", difference.at, difference.message))
                    )
                ),
            ));
        }
        differences
    }

    fn single(&mut self, reference: &Value, ours: &Value, direction: Direction, at: &str) -> Vec<Difference> {
        let mut differences = Vec::new();
        let reference_types = types(reference);
        let our_types = types(ours);
        let compatible = match direction {
            Direction::Request => types_within(&reference_types, &our_types),
            Direction::Response => types_within(&our_types, &reference_types),
        };
        if !compatible {
            differences.push(difference(
                at,
                "type",
                format!("{} here, {} in the reference", list(&our_types), list(&reference_types)),
            ));
            return differences;
        }

        let reference_enum = enum_values(reference);
        let our_enum = enum_values(ours);
        match direction {
            Direction::Request => {
                if let Some(reference_enum) = &reference_enum {
                    let missing: Vec<&Value> = reference_enum
                        .iter()
                        .filter(|value| our_enum.as_ref().is_some_and(|ours| !ours.contains(value)))
                        .collect();
                    if !missing.is_empty() {
                        differences.push(difference(
                            at,
                            "enum",
                            format!("rejects {}, which the reference accepts", list(missing)),
                        ));
                    }
                } else if let Some(our_enum) = &our_enum {
                    differences.push(difference(
                        at,
                        "enum",
                        format!("accepts only {}, the reference any value", list(our_enum)),
                    ));
                }
            }
            Direction::Response => {
                if let Some(reference_enum) = &reference_enum {
                    match &our_enum {
                        None => differences.push(difference(
                            at,
                            "enum",
                            format!("may send any value, the reference allows only {}", list(reference_enum)),
                        )),
                        Some(our_enum) => {
                            let extra: Vec<&Value> = our_enum
                                .iter()
                                .filter(|value| !reference_enum.contains(value))
                                .collect();
                            if !extra.is_empty() {
                                differences.push(difference(
                                    at,
                                    "enum",
                                    format!("may send {}, which the reference does not allow", list(extra)),
                                ));
                            }
                        }
                    }
                }
            }
        }

        differences.extend(value_rules(reference, ours, direction, at));

        if reference_types.contains("object") && our_types.contains("object") {
            differences.extend(self.objects(reference, ours, direction, at));
        }
        if let (true, true, Some(reference_items), Some(our_items)) = (
            reference_types.contains("array"),
            our_types.contains("array"),
            reference.get("items"),
            ours.get("items"),
        ) {
            differences.extend(self.schemas(reference_items, our_items, direction, &format!("{at}[]")));
        }
        differences
    }

    fn objects(&mut self, reference: &Value, ours: &Value, direction: Direction, at: &str) -> Vec<Difference> {
        let mut differences = Vec::new();
        let reference_properties = properties(reference);
        let our_properties = properties(ours);
        let reference_required = required(reference);
        let our_required = required(ours);
        match direction {
            Direction::Request => {
                for (name, schema) in &reference_properties {
                    let at = format!("{at}.{name}");
                    match our_properties.get(name) {
                        Some(our_schema) => differences.extend(self.schemas(schema, our_schema, direction, &at)),
                        None if is_closed(ours) => differences.push(difference(
                            &at,
                            "closed-object",
                            "the reference accepts this property; ours rejects it as unknown",
                        )),
                        None => differences.push(difference(&at, "missing-property", "not declared here (ignored)")),
                    }
                }
                for name in our_required.difference(&reference_required) {
                    differences.push(difference(
                        &format!("{at}.{name}"),
                        "property-required",
                        "required here, optional in the reference",
                    ));
                }
                if is_open(reference) && is_closed(ours) {
                    differences.push(difference(
                        at,
                        "open-object",
                        "the reference accepts undeclared properties; ours rejects them",
                    ));
                }
            }
            Direction::Response => {
                for name in &reference_required {
                    let at = format!("{at}.{name}");
                    if !our_properties.contains_key(name) {
                        differences.push(difference(
                            &at,
                            "missing-property",
                            "required by the reference, never sent here",
                        ));
                    } else if !our_required.contains(name) {
                        differences.push(difference(
                            &at,
                            "property-required",
                            "required by the reference, may be left out here",
                        ));
                    }
                }
                for (name, schema) in &reference_properties {
                    if let Some(our_schema) = our_properties.get(name) {
                        differences.extend(self.schemas(schema, our_schema, direction, &format!("{at}.{name}")));
                    }
                }
                for name in our_properties
                    .keys()
                    .filter(|name| !reference_properties.contains_key(*name))
                {
                    differences.push(if is_closed(reference) {
                        difference(
                            at,
                            "extra-property",
                            format!("sends `{name}`, which the reference's closed object does not declare"),
                        )
                    } else {
                        difference(
                            at,
                            ADDITIVE,
                            format!("also sends `{name}` (reference clients ignore it)"),
                        )
                    });
                }
                if is_closed(reference) && is_open(ours) {
                    differences.push(difference(
                        at,
                        "open-object",
                        "may send undeclared properties; the reference's object is closed",
                    ));
                }
            }
        }
        if let (Some(reference_values @ Value::Object(_)), Some(our_values @ Value::Object(_))) =
            (reference.get("additionalProperties"), ours.get("additionalProperties"))
        {
            differences.extend(self.schemas(reference_values, our_values, direction, &format!("{at}.*")));
        }
        differences
    }
}
