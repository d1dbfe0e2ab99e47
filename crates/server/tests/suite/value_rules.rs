//! What the API accepts, over a real socket: integers written as whole floats (`10.0`) in bodies and query
//! strings; the value rules the OpenAPI document states, each refused by the server as stated; and MCP
//! failures reported in words, without Rust type names.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{MODEL, TestServer};
use serde_json::{Value, json};

// ---- whole floats are integers ----

#[tokio::test]
async fn integers_in_bodies_may_be_written_as_whole_floats() {
    let server = TestServer::start().await;

    let (status, body) = server
        .post(
            "/api/v1/agents",
            json!({"name": "floaty", "manifest": {"model": {"name": MODEL}, "config": {
                "iteration_limit": 10.0,
                "context_management": {"compaction": {"compaction_threshold_tokens": 2e4}},
            }}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let config = &body["data"]["manifest"]["config"];
    assert_eq!(config["iteration_limit"], json!(10), "{body}");
    assert_eq!(
        config["context_management"]["compaction"]["compaction_threshold_tokens"],
        json!(20000)
    );

    let (status, body) = server
        .send(
            reqwest::Method::PUT,
            "/api/v1/settings/model-providers",
            Some(json!({"manifest": {"type": "custom", "name": "floats", "base_url": "http://127.0.0.1:9/v1",
                "models": [{"model_id": "m", "name": "mm", "properties": {"context_length": 8192.0, "max_output_tokens": 1e3}}]}})),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {body}");
    let properties = &body["data"]["manifest"]["models"][0]["properties"];
    assert_eq!(properties, &json!({"context_length": 8192, "max_output_tokens": 1000}));

    // A fraction is still no integer, and says so.
    let (status, body) = server
        .post(
            "/api/v1/agents",
            json!({"name": "fraction", "manifest": {"model": {"name": MODEL}, "config": {"iteration_limit": 10.5}}}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("a whole number"),
        "{body}"
    );
    server.stop().await;
}

#[tokio::test]
async fn integers_in_query_strings_may_be_written_as_whole_floats() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": [{"type": "user.message", "content": "hello"}]}),
        )
        .await;
    let turn_id = frames[0].1["turn_id"].as_str().unwrap().to_owned();

    for (path, limit) in [
        ("/api/v1/sessions?limit=10.0".to_owned(), 10),
        (format!("/api/v1/sessions/{session_id}/events?limit=5.0"), 5),
        (format!("/api/v1/sessions/{session_id}/turns?limit=3.0"), 3),
        (
            format!("/api/v1/sessions/{session_id}/turns/{turn_id}/events?limit=1e1"),
            10,
        ),
    ] {
        let (status, body) = server.get(&path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_eq!(body["pagination"]["limit"], json!(limit), "{path}: {body}");
    }
    for path in [
        "/api/v1/sessions?limit=2.5".to_owned(),
        "/api/v1/sessions?limit=26.0".to_owned(),
        format!("/api/v1/sessions/{session_id}/events?limit=-1"),
    ] {
        let (status, body) = server.get(&path).await;
        assert_eq!(status, 400, "{path}: {body}");
    }

    // The resume cursor of a subscription: `1.0` is after the first frame.
    let response = server
        .http
        .get(server.url(&format!(
            "/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe?after_sequence_number=1.0"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let replayed = crate::support::parse_frames(&response.text().await.unwrap());
    assert_eq!(replayed.first().map(|(id, _)| *id), Some(2), "{replayed:?}");
    server.stop().await;
}

// ---- the document's value rules are the server's ----

/// A rule the document states (at `pointer`, `keyword` equal to `value`) and a request that breaks it,
/// which the server must refuse with `status`.
struct Rule {
    pointer: &'static str,
    keyword: &'static str,
    value: Value,
    method: reqwest::Method,
    path: String,
    body: Option<Value>,
    status: u16,
}

fn spec_with(extra: Value) -> Value {
    let mut spec = json!({"model": {"name": MODEL}});
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    json!({"agent": {"spec": spec}})
}

fn rules(session_id: &str) -> Vec<Rule> {
    let post = reqwest::Method::POST;
    let get = reqwest::Method::GET;
    vec![
        Rule {
            pointer: "/components/schemas/Model/properties/name",
            keyword: "pattern",
            value: json!("^[^/]+/[^/]+$"),
            method: post.clone(),
            path: "/api/v1/sessions".to_owned(),
            body: Some(json!({"agent": {"spec": {"model": {"name": "fake-model"}}}})),
            status: 422,
        },
        Rule {
            pointer: "/components/schemas/InitialUserMessage/properties/content",
            keyword: "pattern",
            value: json!("\\S"),
            method: post.clone(),
            path: "/api/v1/sessions".to_owned(),
            body: Some(spec_with(
                json!({"messages": [{"type": "user.message", "content": " \n "}]}),
            )),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/Skill/properties/name",
            keyword: "pattern",
            value: json!("^(?!\\.\\.?$)(?!\\.tfy-)[A-Za-z0-9._-]+$"),
            method: post.clone(),
            path: "/api/v1/sessions".to_owned(),
            body: Some(spec_with(json!({"skills": [{"name": ".tfy-tools"}]}))),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/MCPServer/properties/enable_tools/items",
            keyword: "$ref",
            value: json!("#/components/schemas/MCPServerToolSelector"),
            method: post.clone(),
            path: "/api/v1/sessions".to_owned(),
            body: Some(spec_with(
                json!({"mcp_servers": [{"name": "docs", "enable_tools": [""]}]}),
            )),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/RuntimeConfig/properties/iteration_limit",
            keyword: "maximum",
            value: json!(1024),
            method: post.clone(),
            path: "/api/v1/sessions".to_owned(),
            body: Some(spec_with(json!({"config": {"iteration_limit": 1025}}))),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/ModelProviderAuth/properties/api_key",
            keyword: "minLength",
            value: json!(1),
            method: post.clone(),
            path: "/api/v1/settings/model-providers".to_owned(),
            body: Some(json!({"manifest": {"type": "openai", "auth": {"api_key": ""},
                "models": [{"model_id": "gpt", "name": "gpt", "properties": {}}]}})),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/ConfiguredModel/properties/name",
            keyword: "$ref",
            value: json!("#/components/schemas/ResourceName"),
            method: post.clone(),
            path: "/api/v1/settings/model-providers".to_owned(),
            body: Some(json!({"manifest": {"type": "openai", "auth": {"api_key": "k"},
                "models": [{"model_id": "gpt", "name": "GPT 5", "properties": {}}]}})),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/ModelProperties/properties/context_length",
            keyword: "minimum",
            value: json!(1),
            method: post.clone(),
            path: "/api/v1/settings/model-providers".to_owned(),
            body: Some(json!({"manifest": {"type": "openai", "auth": {"api_key": "k"},
                "models": [{"model_id": "gpt", "name": "gpt", "properties": {"context_length": 0}}]}})),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/MCPServerHeaderAuth/properties/headers",
            keyword: "minProperties",
            value: json!(1),
            method: post.clone(),
            path: "/api/v1/settings/mcp-servers".to_owned(),
            body: Some(
                json!({"manifest": {"type": "remote", "name": "docs", "url": "https://mcp.example.com/mcp",
                "description": "Docs", "auth": {"type": "header", "headers": {}}}}),
            ),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/StdioMCPServerManifest",
            keyword: "additionalProperties",
            value: json!(false),
            method: post.clone(),
            path: "/api/v1/settings/mcp-servers".to_owned(),
            body: Some(
                json!({"manifest": {"type": "stdio", "name": "local", "command": "mcp-server",
                "url": "https://mcp.example.com/mcp", "description": "Local"}}),
            ),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/RemoteMCPServerManifest/properties/description",
            keyword: "minLength",
            value: json!(1),
            method: post.clone(),
            path: "/api/v1/settings/mcp-servers".to_owned(),
            body: Some(
                json!({"manifest": {"type": "remote", "name": "docs", "url": "https://mcp.example.com/mcp",
                "description": ""}}),
            ),
            status: 400,
        },
        Rule {
            pointer: "/components/schemas/SkillManifest/properties/ref",
            keyword: "pattern",
            value: json!("^(?!/*$)(?!(?:.*/)?\\.\\.(?:/|$))[A-Za-z0-9._\\-/]+$"),
            method: post,
            path: "/api/v1/settings/skills".to_owned(),
            body: Some(
                json!({"manifest": {"type": "git", "name": "pdf", "url": "https://github.com/example/skills",
                "ref": "main/../../etc", "description": "Reads PDFs"}}),
            ),
            status: 400,
        },
        Rule {
            pointer: "/paths/~1api~1v1~1sessions~1{session_id}/get/parameters/0/schema",
            keyword: "maxLength",
            value: json!(64),
            method: get.clone(),
            path: format!("/api/v1/sessions/{}", "s".repeat(65)),
            body: None,
            status: 400,
        },
        Rule {
            pointer: "/paths/~1api~1v1~1sessions/get/parameters/0/schema",
            keyword: "maximum",
            value: json!(25),
            method: get.clone(),
            path: "/api/v1/sessions?limit=26".to_owned(),
            body: None,
            status: 400,
        },
        Rule {
            pointer: "/paths/~1api~1v1~1sessions~1{session_id}~1turns~1{turn_id}~1download-sandbox-file/get/parameters/2/schema",
            keyword: "pattern",
            value: json!("^/(?![\\s\\S]*/\\.\\.?(?:/|$))(?![\\s\\S]*[^/]{256})[^\\x00]*$"),
            method: get,
            path: format!("/api/v1/sessions/{session_id}/turns/t/download-sandbox-file?path=/work/../etc/passwd"),
            body: None,
            status: 400,
        },
    ]
}

#[tokio::test]
async fn the_rules_the_document_states_are_the_ones_the_server_applies() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, document) = server.get("/api/v1/openapi.json").await;
    assert_eq!(status, 200);
    let mut failures = Vec::new();
    for rule in rules(&session_id) {
        let stated = document
            .pointer(rule.pointer)
            .and_then(|schema| schema.get(rule.keyword));
        if stated != Some(&rule.value) {
            failures.push(format!(
                "{} {}: the document says {stated:?}, expected {}",
                rule.pointer, rule.keyword, rule.value
            ));
        }
        let (status, body) = server.send(rule.method.clone(), &rule.path, rule.body.clone()).await;
        if status != rule.status {
            failures.push(format!(
                "{} {} breaking {} {}: {status} {body}, expected {}",
                rule.method, rule.path, rule.pointer, rule.keyword, rule.status
            ));
        }
    }
    server.stop().await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---- MCP failures in words ----

/// What a person must never read in an error: Rust paths, SDK type names, `Debug` renderings.
const LEAKS: [&str; 8] = [
    "rmcp::",
    "trueforge_mcp::",
    "Transport [",
    "WorkerTransport",
    "Send message error",
    "ServiceError",
    "McpError",
    "Some(",
];

fn leaks(text: &str) -> Vec<&'static str> {
    LEAKS.into_iter().filter(|leak| text.contains(leak)).collect()
}

/// A port nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn mcp_failures_are_reported_in_words() {
    let server = TestServer::start().await;
    let port = closed_port();
    for manifest in [
        json!({"type": "remote", "name": "refused", "url": format!("http://127.0.0.1:{port}/mcp"),
            "description": "Nothing listens here."}),
        // Our own health route: an HTTP server that is no MCP server (it refuses the POST).
        json!({"type": "remote", "name": "not-mcp", "url": format!("{}/healthz", server.base),
            "description": "Not an MCP server."}),
        json!({"type": "stdio", "name": "exits", "command": "sh", "args": ["-c", "echo no tools here >&2; exit 3"],
            "description": "Exits at once."}),
    ] {
        let (status, body) = server
            .post("/api/v1/settings/mcp-servers", json!({"manifest": manifest}))
            .await;
        assert_eq!(status, 201, "{body}");
    }

    for name in ["refused", "not-mcp", "exits"] {
        let (status, body) = server.get(&format!("/api/v1/mcp-servers/{name}/tools")).await;
        assert_eq!(status, 502, "{name}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("MCP server \"{name}\" cannot be reached")),
            "{message}"
        );
        assert_eq!(leaks(message), Vec::<&str>::new(), "{message}");
    }
    // What went wrong is kept: the operating system's reason, the status the server answered.
    let (_, body) = server.get("/api/v1/mcp-servers/refused/tools").await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("connection refused"),
        "{body}"
    );
    let (_, body) = server.get("/api/v1/mcp-servers/not-mcp/tools").await;
    assert!(
        body["error"]["message"].as_str().unwrap().contains("HTTP 405"),
        "{body}"
    );

    // A turn whose agent uses the unreachable server is refused up front, in words too.
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            spec_with(json!({"mcp_servers": [{"name": "refused", "preload": true}]})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let session_id = body["data"]["id"].as_str().unwrap().to_owned();
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": [{"type": "user.message", "content": "hello"}]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("cannot be reached"), "{message}");
    assert_eq!(leaks(message), Vec::<&str>::new(), "{message}");
    server.stop().await;
}
