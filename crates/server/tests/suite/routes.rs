//! Every route of the API over a real socket: its success status and shape, and each documented error path
//! with the reference's status and message (`shared/reference/notes/http-api.md`, `openapi.json`). Every
//! rejected write is followed by a read proving nothing was written.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::{MODEL, TestServer, parse_frames, types};
use reqwest::Method;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------

/// One answer: status, headers and body text.
struct Reply {
    status: u16,
    headers: HeaderMap,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        if self.text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&self.text).unwrap_or_else(|_| Value::String(self.text.clone()))
        }
    }

    fn pair(&self) -> (u16, Value) {
        (self.status, self.json())
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

async fn call(request: reqwest::RequestBuilder) -> Reply {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    Reply { status, headers, text }
}

/// A request with a raw body and content type.
async fn send_raw(server: &TestServer, method: Method, path: &str, content_type: Option<&str>, body: &str) -> Reply {
    let mut request = server.http.request(method, server.url(path)).body(body.to_owned());
    if let Some(content_type) = content_type {
        request = request.header(CONTENT_TYPE, content_type);
    }
    call(request).await
}

async fn put(server: &TestServer, path: &str, body: Value) -> (u16, Value) {
    server.send(Method::PUT, path, Some(body)).await
}

async fn patch(server: &TestServer, path: &str, body: Value) -> (u16, Value) {
    server.send(Method::PATCH, path, Some(body)).await
}

async fn delete(server: &TestServer, path: &str) -> (u16, Value) {
    server.send(Method::DELETE, path, None).await
}

/// The message of an error answer, after checking the envelope is exactly `{"error":{"message":…}}`.
fn error_message(body: &Value) -> &str {
    let object = body.as_object().unwrap_or_else(|| panic!("an error object: {body}"));
    assert_eq!(object.len(), 1, "only `error` in the envelope: {body}");
    let error = object["error"]
        .as_object()
        .unwrap_or_else(|| panic!("an error object: {body}"));
    let message = error["message"].as_str().unwrap_or_else(|| panic!("a message: {body}"));
    assert!(!message.is_empty(), "a non-empty message: {body}");
    message
}

/// A status and exactly this message.
#[track_caller]
fn assert_error(reply: &(u16, Value), status: u16, message: &str) {
    assert_eq!(reply.0, status, "{}", reply.1);
    assert_eq!(error_message(&reply.1), message);
}

/// A status and a message containing `fragment`.
#[track_caller]
fn assert_error_containing(reply: &(u16, Value), status: u16, fragment: &str) {
    assert_eq!(reply.0, status, "{}", reply.1);
    let message = error_message(&reply.1);
    assert!(message.contains(fragment), "{message:?} should contain {fragment:?}");
}

/// 400 in the error envelope (schema errors carry free text).
#[track_caller]
fn assert_bad_request(reply: &(u16, Value)) {
    assert_eq!(reply.0, 400, "{}", reply.1);
    error_message(&reply.1);
}

fn user(text: &str) -> Value {
    json!([{"type": "user.message", "content": text}])
}

fn spec() -> Value {
    json!({"model": {"name": MODEL}})
}

fn approval() -> Value {
    json!({"type": "user.tool_approval", "thread_id": "main", "tool_call_id": "call_1", "approval": {"status": "allow"}})
}

fn data_array(body: &Value) -> &Vec<Value> {
    body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("a data array: {body}"))
}

fn ids(body: &Value) -> Vec<String> {
    data_array(body)
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

fn names(body: &Value) -> Vec<String> {
    data_array(body)
        .iter()
        .map(|item| item["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn session_ids(server: &TestServer) -> Vec<String> {
    let (status, body) = server.get("/api/v1/sessions").await;
    assert_eq!(status, 200, "{body}");
    ids(&body)
}

async fn turn_ids(server: &TestServer, session_id: &str) -> Vec<String> {
    let (status, body) = server.get(&format!("/api/v1/sessions/{session_id}/turns")).await;
    assert_eq!(status, 200, "{body}");
    ids(&body)
}

async fn session_body(server: &TestServer, session_id: &str) -> Value {
    let (status, body) = server.get(&format!("/api/v1/sessions/{session_id}")).await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

/// Streams a turn with `text` to its end; returns its id and frames.
async fn finished_turn(server: &TestServer, session_id: &str, text: &str) -> (String, Vec<(u64, Value)>) {
    let frames = server
        .stream_turn(session_id, json!({"input": user(text), "previous_turn_id": "auto"}))
        .await;
    assert_eq!(types(&frames).last().map(String::as_str), Some("turn.done"));
    let turn_id = frames[0].1["turn_id"].as_str().unwrap().to_owned();
    (turn_id, frames)
}

async fn create_agent(server: &TestServer, name: &str) -> String {
    let (status, body) = server
        .post("/api/v1/agents", json!({"name": name, "manifest": spec()}))
        .await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

async fn agent_names(server: &TestServer) -> Vec<String> {
    let (status, body) = server.get("/api/v1/agents").await;
    assert_eq!(status, 200, "{body}");
    names(&body)
}

/// An MCP server manifest with header auth.
fn header_mcp(name: &str, header: &str, value: &str) -> Value {
    json!({
        "type": "remote",
        "name": name,
        "url": "https://mcp.example.com/mcp",
        "description": "An example server",
        "auth": {"type": "header", "headers": {header: value}},
    })
}

fn plain_mcp(name: &str) -> Value {
    json!({"type": "remote", "name": name, "url": "https://open.example.com/mcp", "description": "No auth"})
}

fn skill(name: &str, description: &str) -> Value {
    json!({
        "type": "git",
        "name": name,
        "url": "https://github.com/anthropics/skills",
        "path": "skills/pdf",
        "ref": "main",
        "description": description,
    })
}

fn daytona() -> Value {
    json!({
        "type": "daytona",
        "auth": {"api_key": "dtn-secret-key-123"},
        "exec_timeout_ms": 60000,
        "auto_stop_interval_in_minutes": 5,
        "auto_archive_interval_in_minutes": 60,
        "auto_delete_interval_in_minutes": 7200,
    })
}

/// The fake provider with the same key and a second model that offers reasoning efforts.
fn fake_provider_with_thinker(server: &TestServer, api_key: &str) -> Value {
    json!({
        "type": "custom",
        "name": "fake",
        "base_url": server.fake.base_url(trueforge_testkit::fake_llm::Api::Chat),
        "auth": {"api_key": api_key},
        "models": [
            {"model_id": "fake-model", "name": "fake-model", "properties": {"context_length": 100000}},
            {"model_id": "fake-thinker", "name": "thinker", "properties": {"reasoning_efforts": ["low", "high"]}},
        ],
    })
}

async fn provider_names(server: &TestServer) -> Vec<String> {
    let (status, body) = server.get("/api/v1/settings/model-providers").await;
    assert_eq!(status, 200, "{body}");
    names(&body)
}

fn contains_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(object) => object.contains_key(key) || object.values().any(|value| contains_key(value, key)),
        Value::Array(items) => items.iter().any(|value| contains_key(value, key)),
        _ => false,
    }
}

fn is_iso_utc(value: &Value) -> bool {
    value.as_str().is_some_and(|text| {
        text.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(text).is_ok() && text.len() == 24
    })
}

// ---------------------------------------------------------------------------------------------------------
// Health, auth, capabilities, models, catalogs
// ---------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn healthz_is_liveness_and_readyz_reports_the_database_and_redis() {
    let server = TestServer::start().await;
    let reply = call(server.http.get(server.url("/healthz"))).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(reply.header("content-type").unwrap().starts_with("application/json"));
    let body = reply.json();
    assert_eq!(body["status"], "ok");
    assert!(
        body["version"].as_str().is_some_and(|version| !version.is_empty()),
        "{body}"
    );
    assert!(body.get("database").is_none(), "liveness checks nothing else: {body}");
    let reply = call(server.http.get(server.url("/readyz"))).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let body = reply.json();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["database"]["status"], "ok", "{body}");
    // Redis is part of readiness in hosted mode only.
    let hosted = server.state.redis.is_some();
    assert_eq!(body["redis"]["status"].as_str(), hosted.then_some("ok"), "{body}");
    server.stop().await;
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn auth_login_redirects_home_without_oidc() {
    let server = TestServer::start().await;
    let http = no_redirects();
    for path in ["/api/v1/auth/login", "/api/v1/auth/login?return_to=/sessions"] {
        let reply = call(http.get(server.url(path))).await;
        assert_eq!(reply.status, 302, "{path}");
        assert_eq!(reply.header("location"), Some("/"), "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn auth_callback_redirects_home_without_oidc() {
    let server = TestServer::start().await;
    let reply = call(no_redirects().get(server.url("/api/v1/auth/callback?state=abc&code=xyz"))).await;
    assert_eq!(reply.status, 302);
    assert_eq!(reply.header("location"), Some("/"));
    server.stop().await;
}

/// `state` is a required query parameter (openapi.json; notes §1.2: "A missing `state` gets a Zod 400 JSON
/// response, not a redirect").
#[tokio::test]
async fn auth_callback_without_state_is_400() {
    let server = TestServer::start().await;
    let reply = call(no_redirects().get(server.url("/api/v1/auth/callback"))).await;
    assert_bad_request(&reply.pair());
    let reply = call(no_redirects().get(server.url("/api/v1/auth/callback?state="))).await;
    assert_bad_request(&reply.pair());
    server.stop().await;
}

#[tokio::test]
async fn auth_logout_is_204_and_clears_the_cookie() {
    let server = TestServer::start().await;
    let reply = call(server.http.post(server.url("/api/v1/auth/logout"))).await;
    assert_eq!(reply.status, 204);
    assert!(reply.text.is_empty(), "{:?}", reply.text);
    let cookie = reply.header("set-cookie").unwrap();
    assert!(cookie.starts_with("id_token=;"), "{cookie}");
    assert!(cookie.contains("Max-Age=0"), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("Path=/"), "{cookie}");
    server.stop().await;
}

#[tokio::test]
async fn auth_me_is_the_local_admin_not_enveloped() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/auth/me").await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"type": "default", "email": "trueforge-default", "role": "admin"})
    );
    server.stop().await;
}

#[tokio::test]
async fn capabilities_shape() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/capabilities").await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    assert!(data["sandbox"]["enabled"].is_boolean(), "{body}");
    assert!(data["skill"]["enabled"].is_boolean(), "{body}");
    assert_eq!(data["settings"]["enabled"], true, "{body}");
    assert_eq!(
        data["limits"]["max_request_body_bytes"], 31_457_280,
        "the default request-body limit, for clients to check uploads against: {body}"
    );
    // Skills mirror the sandbox; a disabled skill says why.
    assert_eq!(data["skill"]["enabled"], data["sandbox"]["enabled"], "{body}");
    if data["skill"]["enabled"] == false {
        assert!(
            data["skill"]["reason"]
                .as_str()
                .is_some_and(|reason| !reason.is_empty()),
            "{body}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn models_lists_configured_models_fully_qualified() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/models").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"data": [{
            "name": "fake/fake-model",
            "model_id": "fake-model",
            "provider": {"name": "fake"},
            "properties": {"context_length": 100000},
        }]})
    );
    assert!(!contains_key(&body, "pricing"));
    server.stop().await;
}

#[tokio::test]
async fn catalogs_model_providers_shape_ends_with_custom_and_has_no_pricing() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/catalogs/model-providers").await;
    assert_eq!(status, 200, "{body}");
    let providers = data_array(&body);
    assert!(providers.len() > 1, "{body}");
    assert_eq!(
        providers.last().unwrap(),
        &json!({"type": "custom", "supported_reasoning_efforts": ["none", "minimal", "low", "medium", "high", "xhigh", "max"]})
    );
    for provider in &providers[..providers.len() - 1] {
        let kind = provider["type"].as_str().unwrap();
        assert_ne!(kind, "custom");
        let models = provider["models"]
            .as_array()
            .unwrap_or_else(|| panic!("models: {provider}"));
        for model in models {
            assert!(model["model_id"].is_string(), "{model}");
            assert!(model["name"].is_string(), "{model}");
            assert!(model["properties"].is_object(), "{model}");
        }
    }
    assert!(providers.iter().any(|provider| provider["type"] == "openai"));
    assert!(!contains_key(&body, "pricing"), "no pricing on the wire");
    server.stop().await;
}

#[tokio::test]
async fn catalogs_mcp_servers_shape() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/catalogs/mcp-servers").await;
    assert_eq!(status, 200, "{body}");
    let servers = data_array(&body);
    assert!(!servers.is_empty());
    for entry in servers {
        assert_eq!(entry["type"], "remote", "{entry}");
        assert!(entry["name"].is_string() && entry["url"].is_string(), "{entry}");
        assert!(
            entry["description"].as_str().is_some_and(|text| !text.is_empty()),
            "{entry}"
        );
        if let Some(auth) = entry.get("auth") {
            assert!(auth["type"] == "header" || auth["type"] == "dcr", "{entry}");
        }
    }
    assert!(!contains_key(&body, "pricing"));
    server.stop().await;
}

#[tokio::test]
async fn catalogs_skills_shape() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/catalogs/skills").await;
    assert_eq!(status, 200, "{body}");
    let skills = data_array(&body);
    assert!(!skills.is_empty());
    for entry in skills {
        assert_eq!(entry["type"], "git", "{entry}");
        for key in ["name", "url", "ref", "description"] {
            assert!(entry[key].is_string(), "{key} in {entry}");
        }
    }
    assert!(!contains_key(&body, "pricing"));
    server.stop().await;
}

#[tokio::test]
async fn catalogs_sandbox_providers_shape() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/catalogs/sandbox-providers").await;
    assert_eq!(status, 200, "{body}");
    let providers = data_array(&body);
    assert!(!providers.is_empty());
    for entry in providers {
        assert_eq!(entry["type"], "daytona", "{entry}");
        assert!(entry["exec_timeout_ms"].as_u64().is_some_and(|ms| ms > 0), "{entry}");
        for key in [
            "auto_stop_interval_in_minutes",
            "auto_archive_interval_in_minutes",
            "auto_delete_interval_in_minutes",
        ] {
            assert!(entry[key].is_u64(), "{key} in {entry}");
        }
        assert!(
            entry.get("auth").is_none(),
            "catalog entries carry no credentials: {entry}"
        );
    }
    assert!(!contains_key(&body, "pricing"));
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Routing
// ---------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn unknown_route_is_404_with_method_and_path() {
    let server = TestServer::start().await;
    assert_error(
        &server.get("/api/v1/nothing-here?x=1").await,
        404,
        "Route not found: GET /api/v1/nothing-here",
    );
    // `GET /` is the web UI (suite::ui); other methods there are no route.
    assert_error(&server.post("/", json!({})).await, 404, "Route not found: POST /");
    assert_error(
        &server.post("/api/v1/sessions/abc/turns/def/nope", json!({})).await,
        404,
        "Route not found: POST /api/v1/sessions/abc/turns/def/nope",
    );
    server.stop().await;
}

#[tokio::test]
async fn trailing_slash_is_404() {
    let server = TestServer::start().await;
    for path in [
        "/api/v1/capabilities/",
        "/api/v1/sessions/",
        "/healthz/",
        "/api/v1/agents/",
    ] {
        assert_error(&server.get(path).await, 404, &format!("Route not found: GET {path}"));
    }
    assert_error(
        &server
            .post("/api/v1/sessions/", json!({"agent": {"spec": spec()}}))
            .await,
        404,
        "Route not found: POST /api/v1/sessions/",
    );
    assert!(session_ids(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn wrong_method_is_405() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    for (method, path) in [
        (Method::DELETE, "/api/v1/capabilities".to_owned()),
        (Method::GET, "/api/v1/auth/logout".to_owned()),
        (Method::PUT, "/api/v1/sessions".to_owned()),
        (Method::POST, format!("/api/v1/sessions/{session_id}")),
        (Method::GET, format!("/api/v1/sessions/{session_id}/cancel")),
        (Method::DELETE, "/api/v1/settings/model-providers".to_owned()),
        (Method::POST, "/healthz".to_owned()),
    ] {
        let reply = server.send(method.clone(), &path, None).await;
        assert_error(&reply, 405, &format!("Method not allowed: {method} {path}"));
    }
    // The session is untouched.
    assert_eq!(session_ids(&server).await, vec![session_id]);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Request bodies: size limit, malformed JSON, content types
// ---------------------------------------------------------------------------------------------------------

const SMALL_LIMIT: usize = 1024;

/// A valid create-session body padded with spaces to exactly `size` bytes.
fn session_body_of_size(size: usize) -> String {
    let body = json!({"agent": {"spec": spec()}}).to_string();
    assert!(body.len() <= size);
    format!("{body}{}", " ".repeat(size - body.len()))
}

#[tokio::test]
async fn body_over_limit_with_content_length_is_413_and_nothing_written() {
    let server = TestServer::start_with(|config| config.body_limit = SMALL_LIMIT).await;
    let body = session_body_of_size(SMALL_LIMIT + 1);
    let reply = send_raw(
        &server,
        Method::POST,
        "/api/v1/sessions",
        Some("application/json"),
        &body,
    )
    .await;
    assert_error(
        &reply.pair(),
        413,
        "Request body exceeds the maximum size of 1024 bytes",
    );
    assert!(session_ids(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn body_over_limit_chunked_is_413_and_nothing_written() {
    let server = TestServer::start_with(|config| config.body_limit = SMALL_LIMIT).await;
    let body = session_body_of_size(4 * SMALL_LIMIT);
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = body
        .as_bytes()
        .chunks(256)
        .map(|chunk| Ok(bytes::Bytes::copy_from_slice(chunk)))
        .collect();
    let request = server
        .http
        .post(server.url("/api/v1/sessions"))
        .header(CONTENT_TYPE, "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)));
    let reply = call(request).await;
    assert_error(
        &reply.pair(),
        413,
        "Request body exceeds the maximum size of 1024 bytes",
    );
    assert!(session_ids(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn body_at_limit_is_accepted() {
    let server = TestServer::start_with(|config| config.body_limit = SMALL_LIMIT).await;
    let body = session_body_of_size(SMALL_LIMIT);
    let reply = send_raw(
        &server,
        Method::POST,
        "/api/v1/sessions",
        Some("application/json"),
        &body,
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    assert_eq!(session_ids(&server).await.len(), 1);
    server.stop().await;
}

/// The reference's body limit is a global middleware (notes §0.1: "This applies to every path"), so a
/// route that ignores its body still refuses an oversized one.
#[tokio::test]
async fn body_over_limit_on_a_route_that_ignores_its_body_is_413() {
    let server = TestServer::start_with(|config| config.body_limit = SMALL_LIMIT).await;
    let session_id = server.session().await;
    let path = format!("/api/v1/sessions/{session_id}/cancel");
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(2 * SMALL_LIMIT));
    let reply = send_raw(&server, Method::POST, &path, Some("application/json"), &big).await;
    assert_error(
        &reply.pair(),
        413,
        "Request body exceeds the maximum size of 1024 bytes",
    );
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = big
        .as_bytes()
        .chunks(256)
        .map(|chunk| Ok(bytes::Bytes::copy_from_slice(chunk)))
        .collect();
    let reply = call(
        server
            .http
            .post(server.url(&path))
            .header(CONTENT_TYPE, "application/json")
            .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks))),
    )
    .await;
    assert_error(
        &reply.pair(),
        413,
        "Request body exceeds the maximum size of 1024 bytes",
    );
    server.stop().await;
}

#[tokio::test]
async fn malformed_json_is_400_on_every_json_route_and_nothing_written() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let before = session_body(&server, &session_id).await;
    let agent_id = create_agent(&server, "keeper").await;
    for (method, path) in [
        (Method::POST, "/api/v1/sessions".to_owned()),
        (Method::PATCH, format!("/api/v1/sessions/{session_id}")),
        (Method::POST, format!("/api/v1/sessions/{session_id}/turns")),
        (Method::POST, "/api/v1/agents".to_owned()),
        (Method::PUT, format!("/api/v1/agents/{agent_id}")),
        (Method::POST, "/api/v1/settings/model-providers".to_owned()),
        (Method::PUT, "/api/v1/settings/model-providers".to_owned()),
        (Method::POST, "/api/v1/settings/mcp-servers".to_owned()),
        (Method::PUT, "/api/v1/settings/mcp-servers".to_owned()),
        (Method::POST, "/api/v1/settings/skills".to_owned()),
        (Method::PUT, "/api/v1/settings/skills".to_owned()),
        (Method::PUT, "/api/v1/settings/sandbox-providers".to_owned()),
    ] {
        for text in ["{\"agent\":", "{'a': 1}", "not json"] {
            let reply = send_raw(&server, method.clone(), &path, Some("application/json"), text).await;
            assert_error(&reply.pair(), 400, "Malformed JSON in request body");
        }
    }
    assert_eq!(session_ids(&server).await, vec![session_id.clone()]);
    assert_eq!(session_body(&server, &session_id).await, before);
    assert!(turn_ids(&server, &session_id).await.is_empty());
    assert_eq!(agent_names(&server).await, vec!["keeper"]);
    assert_eq!(provider_names(&server).await, vec!["fake"]);
    server.stop().await;
}

#[tokio::test]
async fn non_json_content_type_is_read_as_an_empty_object() {
    let server = TestServer::start().await;
    let valid = json!({"agent": {"spec": spec()}}).to_string();
    // Read as `{}`, which lacks the required `agent`.
    for content_type in [Some("text/plain"), None, Some("application/x-www-form-urlencoded")] {
        let reply = send_raw(&server, Method::POST, "/api/v1/sessions", content_type, &valid).await;
        assert_bad_request(&reply.pair());
    }
    assert!(session_ids(&server).await.is_empty());
    // A JSON-suffixed type is JSON.
    let reply = send_raw(
        &server,
        Method::POST,
        "/api/v1/sessions",
        Some("application/json; charset=utf-8"),
        &valid,
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    let session_id = reply.json()["data"]["id"].as_str().unwrap().to_owned();
    // PATCH with a spec under text/plain is `{}`: a no-op on the agent.
    let before = session_body(&server, &session_id).await;
    let other = json!({"agent": {"spec": {"model": {"name": MODEL}, "instructions": "changed"}}}).to_string();
    let reply = send_raw(
        &server,
        Method::PATCH,
        &format!("/api/v1/sessions/{session_id}"),
        Some("text/plain"),
        &other,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(session_body(&server, &session_id).await["agent"], before["agent"]);
    server.stop().await;
}

/// notes §0.2: "a `POST /turns` with a non-JSON content type is treated as `{}`: it streams a turn with
/// empty input".
#[tokio::test]
async fn turns_create_with_non_json_content_type_streams_a_turn_with_empty_input() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let body = json!({"input": user("ignored"), "stream": false}).to_string();
    let reply = send_raw(
        &server,
        Method::POST,
        &format!("/api/v1/sessions/{session_id}/turns"),
        Some("text/plain"),
        &body,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let frames = parse_frames(&reply.text);
    assert_eq!(types(&frames).first().map(String::as_str), Some("turn.created"));
    assert_eq!(types(&frames).last().map(String::as_str), Some("turn.done"));
    assert!(
        frames[0].1.get("input").is_none(),
        "empty input is omitted: {}",
        frames[0].1
    );
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Agents
// ---------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn agents_create_list_get_update_delete() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/agents").await;
    assert_eq!((status, body), (200, json!({"data": []})));

    let (status, created) = server
        .post(
            "/api/v1/agents",
            json!({"name": "helper", "manifest": {"model": {"name": MODEL}, "instructions": "Be brief."}}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let agent = &created["data"];
    let agent_id = agent["id"].as_str().unwrap().to_owned();
    assert_eq!(agent_id.len(), 26, "a ULID: {agent_id}");
    assert_eq!(agent_id, agent_id.to_lowercase());
    assert_eq!(agent["name"], "helper");
    assert_eq!(agent["manifest"]["model"]["name"], MODEL);
    assert_eq!(agent["manifest"]["instructions"], "Be brief.");
    assert!(
        agent["manifest"]["config"].is_object(),
        "defaults are materialised: {agent}"
    );
    assert_eq!(agent.as_object().unwrap().len(), 3, "{agent}");

    let (status, listed) = server.get("/api/v1/agents").await;
    assert_eq!(status, 200);
    assert_eq!(listed["data"], json!([agent]));

    let (status, got) = server.get(&format!("/api/v1/agents/{agent_id}")).await;
    assert_eq!((status, &got["data"]), (200, agent));

    let (status, updated) = put(
        &server,
        &format!("/api/v1/agents/{agent_id}"),
        json!({"manifest": {"model": {"name": MODEL}, "instructions": "Be thorough."}}),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["data"]["id"], agent_id.as_str());
    assert_eq!(updated["data"]["name"], "helper");
    assert_eq!(updated["data"]["manifest"]["instructions"], "Be thorough.");
    let (_, got) = server.get(&format!("/api/v1/agents/{agent_id}")).await;
    assert_eq!(got["data"]["manifest"]["instructions"], "Be thorough.");

    let (status, body) = delete(&server, &format!("/api/v1/agents/{agent_id}")).await;
    assert_eq!((status, body), (200, json!({})));
    assert!(agent_names(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn agents_create_duplicate_name_is_409_and_keeps_the_first() {
    let server = TestServer::start().await;
    let agent_id = create_agent(&server, "helper").await;
    let reply = server
        .post(
            "/api/v1/agents",
            json!({"name": "helper", "manifest": {"model": {"name": MODEL}, "instructions": "other"}}),
        )
        .await;
    assert_error(&reply, 409, "Agent name already exists: helper");
    let (_, listed) = server.get("/api/v1/agents").await;
    assert_eq!(ids(&listed), vec![agent_id]);
    assert!(listed["data"][0]["manifest"].get("instructions").is_none());
    server.stop().await;
}

#[tokio::test]
async fn agents_create_bad_name_or_types_are_400_and_nothing_written() {
    let server = TestServer::start().await;
    for body in [
        json!({"name": "A", "manifest": spec()}),
        json!({"name": "Helper", "manifest": spec()}),
        json!({"name": "9lives", "manifest": spec()}),
        json!({"name": "ends-with-", "manifest": spec()}),
        json!({"name": "x".repeat(65), "manifest": spec()}),
        json!({"name": 5, "manifest": spec()}),
        json!({"name": "helper"}),
        json!({"manifest": spec()}),
        json!({"name": "helper", "manifest": {"model": "fake/fake-model"}}),
        json!({"name": "helper", "manifest": {}}),
        json!([]),
    ] {
        assert_bad_request(&server.post("/api/v1/agents", body).await);
    }
    assert!(agent_names(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn agents_create_unknown_fields_are_400_and_nothing_written() {
    let server = TestServer::start().await;
    let reply = server
        .post(
            "/api/v1/agents",
            json!({"name": "helper", "manifest": spec(), "owner": "me"}),
        )
        .await;
    assert_bad_request(&reply);
    assert!(agent_names(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn agents_create_bad_spec_is_422_and_nothing_written() {
    let server = TestServer::start().await;
    for (manifest, message) in [
        (
            json!({"model": {"name": "no-slash"}}),
            "Model name must be a fully qualified \"provider/model\": no-slash",
        ),
        (
            json!({"model": {"name": "ghost/fake-model"}}),
            "Unknown model \"ghost/fake-model\" — provider not configured",
        ),
        (
            json!({"model": {"name": "fake/ghost"}}),
            "Unknown model \"fake/ghost\" — not configured on provider",
        ),
        (
            json!({"model": {"name": MODEL, "params": {"reasoning_effort": "high"}}}),
            "Model \"fake/fake-model\" does not support configurable reasoning effort",
        ),
        (
            json!({"model": {"name": MODEL}, "mcp_servers": [{"name": "ghost"}]}),
            "Unknown MCP server \"ghost\" — not configured",
        ),
        (
            json!({"model": {"name": MODEL}, "skills": [{"name": "ghost"}]}),
            "Unknown skill \"ghost\" — not configured",
        ),
    ] {
        let reply = server
            .post("/api/v1/agents", json!({"name": "helper", "manifest": manifest}))
            .await;
        assert_error(&reply, 422, message);
    }
    assert!(agent_names(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn agents_get_unknown_is_404() {
    let server = TestServer::start().await;
    assert_error(
        &server.get("/api/v1/agents/01nothing").await,
        404,
        "Agent not found: 01nothing",
    );
    server.stop().await;
}

/// `agent_id` is 1..64 characters (openapi.json path parameter).
#[tokio::test]
async fn agents_overlong_id_is_400() {
    let server = TestServer::start().await;
    let long = "a".repeat(65);
    let path = format!("/api/v1/agents/{long}");
    assert_bad_request(&server.get(&path).await);
    assert_bad_request(&put(&server, &path, json!({"manifest": spec()})).await);
    assert_bad_request(&delete(&server, &path).await);
    server.stop().await;
}

#[tokio::test]
async fn agents_update_unknown_is_404_and_nothing_written() {
    let server = TestServer::start().await;
    let reply = put(&server, "/api/v1/agents/01nothing", json!({"manifest": spec()})).await;
    assert_error(&reply, 404, "Agent not found: 01nothing");
    assert!(agent_names(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn agents_update_bad_spec_is_422_and_keeps_the_manifest() {
    let server = TestServer::start().await;
    let agent_id = create_agent(&server, "helper").await;
    let path = format!("/api/v1/agents/{agent_id}");
    let (_, before) = server.get(&path).await;
    let reply = put(&server, &path, json!({"manifest": {"model": {"name": "fake/ghost"}}})).await;
    assert_error(&reply, 422, "Unknown model \"fake/ghost\" — not configured on provider");
    let (_, after) = server.get(&path).await;
    assert_eq!(after, before);
    server.stop().await;
}

#[tokio::test]
async fn agents_update_unknown_fields_or_types_are_400_and_keep_the_manifest() {
    let server = TestServer::start().await;
    let agent_id = create_agent(&server, "helper").await;
    let path = format!("/api/v1/agents/{agent_id}");
    let (_, before) = server.get(&path).await;
    // The name is immutable and not part of the strict update body.
    for body in [
        json!({"name": "renamed", "manifest": spec()}),
        json!({"manifest": 5}),
        json!({}),
    ] {
        assert_bad_request(&put(&server, &path, body).await);
    }
    let (_, after) = server.get(&path).await;
    assert_eq!(after, before);
    server.stop().await;
}

#[tokio::test]
async fn agents_delete_is_idempotent() {
    let server = TestServer::start().await;
    let agent_id = create_agent(&server, "helper").await;
    for _ in 0..2 {
        let (status, body) = delete(&server, &format!("/api/v1/agents/{agent_id}")).await;
        assert_eq!((status, body), (200, json!({})));
    }
    let (status, body) = delete(&server, "/api/v1/agents/01never").await;
    assert_eq!((status, body), (200, json!({})));
    assert_error(
        &server.get(&format!("/api/v1/agents/{agent_id}")).await,
        404,
        &format!("Agent not found: {agent_id}"),
    );
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Settings: model providers
// ---------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn settings_model_providers_list_redacts_keys() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/settings/model-providers").await;
    assert_eq!(status, 200, "{body}");
    let providers = data_array(&body);
    assert_eq!(providers.len(), 1);
    assert_eq!(providers[0]["name"], "fake");
    assert_eq!(providers[0]["manifest"]["type"], "custom");
    assert_eq!(providers[0]["manifest"]["name"], "fake");
    assert_eq!(providers[0]["manifest"]["auth"]["api_key"], "***REDACTED***");
    assert!(!body.to_string().contains("fake-key-123456"));
    server.stop().await;
}

#[tokio::test]
async fn settings_model_providers_short_key_is_fully_redacted() {
    let server = TestServer::start().await;
    let mut manifest = fake_provider_with_thinker(&server, "short");
    manifest["name"] = json!("tiny");
    let (status, body) = server
        .post("/api/v1/settings/model-providers", json!({"manifest": manifest}))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["name"], "tiny");
    assert_eq!(body["data"]["manifest"]["auth"]["api_key"], "***REDACTED***");
    server.stop().await;
}

#[tokio::test]
async fn settings_model_providers_put_with_redacted_key_keeps_the_stored_key() {
    let server = TestServer::start().await;
    let manifest = fake_provider_with_thinker(&server, "***REDACTED***");
    let (status, body) = put(
        &server,
        "/api/v1/settings/model-providers",
        json!({"manifest": manifest}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["manifest"]["auth"]["api_key"], "***REDACTED***");
    assert_eq!(body["data"]["manifest"]["models"].as_array().unwrap().len(), 2);
    let (_, listed) = server.get("/api/v1/settings/model-providers").await;
    assert_eq!(listed["data"][0]["manifest"]["auth"]["api_key"], "***REDACTED***");
    // The stored key still authenticates a turn.
    let session_id = server.session().await;
    finished_turn(&server, &session_id, "hello").await;
    let requests = server.fake.requests();
    let last = requests.last().unwrap();
    assert_eq!(last.header("authorization"), Some("Bearer fake-key-123456"));
    server.stop().await;
}

#[tokio::test]
async fn settings_model_providers_put_with_a_new_key_replaces_it() {
    let server = TestServer::start().await;
    let manifest = fake_provider_with_thinker(&server, "brand-new-key-789");
    let (status, body) = put(
        &server,
        "/api/v1/settings/model-providers",
        json!({"manifest": manifest}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["manifest"]["auth"]["api_key"], "***REDACTED***");
    let session_id = server.session().await;
    finished_turn(&server, &session_id, "hello").await;
    let requests = server.fake.requests();
    assert_eq!(
        requests.last().unwrap().header("authorization"),
        Some("Bearer brand-new-key-789")
    );
    server.stop().await;
}

#[tokio::test]
async fn settings_model_providers_post_with_redacted_key_and_nothing_stored_is_400() {
    let server = TestServer::start().await;
    let mut manifest = fake_provider_with_thinker(&server, "***REDACTED***");
    manifest["name"] = json!("other");
    let reply = server
        .post("/api/v1/settings/model-providers", json!({"manifest": manifest}))
        .await;
    assert_error(&reply, 400, "API key is required");
    assert_eq!(provider_names(&server).await, vec!["fake"]);
    server.stop().await;
}

#[tokio::test]
async fn settings_model_providers_put_new_with_redacted_key_is_400() {
    let server = TestServer::start().await;
    let mut manifest = fake_provider_with_thinker(&server, "***REDACTED***");
    manifest["name"] = json!("other");
    let reply = put(
        &server,
        "/api/v1/settings/model-providers",
        json!({"manifest": manifest}),
    )
    .await;
    assert_error(&reply, 400, "API key is required");
    assert_eq!(provider_names(&server).await, vec!["fake"]);
    server.stop().await;
}

#[tokio::test]
async fn settings_model_providers_post_duplicate_is_409_and_keeps_the_first() {
    let server = TestServer::start().await;
    let manifest = fake_provider_with_thinker(&server, "another-key-000");
    let reply = server
        .post("/api/v1/settings/model-providers", json!({"manifest": manifest}))
        .await;
    assert_error(&reply, 409, "Model provider name already exists: fake");
    let (_, listed) = server.get("/api/v1/settings/model-providers").await;
    assert_eq!(listed["data"][0]["manifest"]["auth"]["api_key"], "***REDACTED***");
    assert_eq!(listed["data"][0]["manifest"]["models"].as_array().unwrap().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn settings_model_providers_invalid_manifest_is_400_and_nothing_written() {
    let server = TestServer::start().await;
    let base_url = server.fake.base_url(trueforge_testkit::fake_llm::Api::Chat);
    for manifest in [
        json!({"type": "custom", "name": "nourl", "models": [{"model_id": "m", "name": "mm", "properties": {}}]}),
        json!({"type": "custom", "name": "Bad Name", "base_url": base_url, "models": [{"model_id": "m", "name": "mm", "properties": {}}]}),
        json!({"type": "custom", "name": "nomodels", "base_url": base_url, "models": []}),
        json!({"type": "custom", "name": "dupes", "base_url": base_url, "models": [
            {"model_id": "m", "name": "mm", "properties": {}},
            {"model_id": "m2", "name": "mm", "properties": {}},
        ]}),
        json!({"type": "openai", "models": [{"model_id": "m", "name": "mm", "properties": {}}]}),
        json!({"type": "nonsense", "name": "x1"}),
        json!({"type": "custom", "name": "extra", "base_url": base_url, "models": [{"model_id": "m", "name": "mm", "properties": {}}], "colour": "red"}),
    ] {
        let reply = server
            .post(
                "/api/v1/settings/model-providers",
                json!({"manifest": manifest.clone()}),
            )
            .await;
        assert_bad_request(&reply);
        assert_bad_request(
            &put(
                &server,
                "/api/v1/settings/model-providers",
                json!({"manifest": manifest}),
            )
            .await,
        );
    }
    // Unknown top-level field.
    let mut body = json!({"manifest": fake_provider_with_thinker(&server, "k-1234567890")});
    body["manifest"]["name"] = json!("strict");
    body["extra"] = json!(true);
    assert_bad_request(&server.post("/api/v1/settings/model-providers", body).await);
    assert_eq!(provider_names(&server).await, vec!["fake"]);
    server.stop().await;
}

#[tokio::test]
async fn settings_model_providers_well_known_gets_its_default_base_url() {
    let server = TestServer::start().await;
    let (status, body) = server
        .post(
            "/api/v1/settings/model-providers",
            json!({"manifest": {
                "type": "openai",
                "auth": {"api_key": "sk-abcdefghijklmnop"},
                "models": [{"model_id": "gpt-x", "name": "gpt-x", "properties": {}}],
            }}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["name"], "openai");
    assert_eq!(body["data"]["manifest"]["base_url"], "https://api.openai.com/v1");
    assert_eq!(body["data"]["manifest"]["auth"]["api_key"], "***REDACTED***");
    let (_, models) = server.get("/api/v1/models").await;
    assert!(names(&models).contains(&"openai/gpt-x".to_owned()), "{models}");
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Settings: MCP servers; the chat view of MCP servers
// ---------------------------------------------------------------------------------------------------------

async fn mcp_names(server: &TestServer) -> Vec<String> {
    let (status, body) = server.get("/api/v1/settings/mcp-servers").await;
    assert_eq!(status, 200, "{body}");
    names(&body)
}

#[tokio::test]
async fn settings_mcp_servers_create_get_list_with_redacted_headers() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/settings/mcp-servers").await;
    assert_eq!((status, body), (200, json!({"data": []})));

    let (status, created) = server
        .post(
            "/api/v1/settings/mcp-servers",
            json!({"manifest": header_mcp("docs", "Authorization", "Bearer secret-token-abc")}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let expected = json!({
        "name": "docs",
        "manifest": header_mcp("docs", "Authorization", "***REDACTED***--abc"),
        "auth_status": {"status": "authenticated"},
    });
    assert_eq!(created["data"], expected);

    let (status, got) = server.get("/api/v1/settings/mcp-servers/docs").await;
    assert_eq!((status, &got["data"]), (200, &expected));
    let (_, listed) = server.get("/api/v1/settings/mcp-servers").await;
    assert_eq!(listed["data"], json!([expected]));

    let (status, plain) = server
        .post("/api/v1/settings/mcp-servers", json!({"manifest": plain_mcp("open")}))
        .await;
    assert_eq!(status, 201, "{plain}");
    assert_eq!(plain["data"]["auth_status"], json!({"status": "not_required"}));
    assert!(!listed.to_string().contains("secret-token"));
    server.stop().await;
}

#[tokio::test]
async fn settings_mcp_servers_get_unknown_is_404() {
    let server = TestServer::start().await;
    let reply = server.get("/api/v1/settings/mcp-servers/ghost").await;
    assert_eq!(reply.0, 404, "{}", reply.1);
    error_message(&reply.1);
    server.stop().await;
}

#[tokio::test]
async fn settings_mcp_servers_post_duplicate_is_409_and_keeps_the_first() {
    let server = TestServer::start().await;
    let (status, _) = server
        .post("/api/v1/settings/mcp-servers", json!({"manifest": plain_mcp("docs")}))
        .await;
    assert_eq!(status, 201);
    let reply = server
        .post(
            "/api/v1/settings/mcp-servers",
            json!({"manifest": header_mcp("docs", "X-Key", "value-123456")}),
        )
        .await;
    assert_error(&reply, 409, "MCP server name already exists: docs");
    let (_, got) = server.get("/api/v1/settings/mcp-servers/docs").await;
    assert_eq!(got["data"]["manifest"], plain_mcp("docs"));
    server.stop().await;
}

/// A deliberate difference: OAuth (DCR) MCP servers answer 422 until MCP OAuth lands.
#[tokio::test]
async fn settings_mcp_servers_dcr_is_stored_and_waits_for_each_users_authorization() {
    let server = TestServer::start().await;
    let manifest = json!({"type": "remote", "name": "linear", "url": "https://mcp.linear.app/mcp", "description": "Linear", "auth": {"type": "dcr"}});
    let (status, body) = server
        .post("/api/v1/settings/mcp-servers", json!({"manifest": manifest.clone()}))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["manifest"]["auth"], json!({"type": "dcr"}));
    assert_eq!(body["data"]["auth_status"]["status"], "auth_required");
    let (status, body) = server.get("/api/v1/mcp-servers").await;
    assert_eq!(status, 200);
    assert_eq!(body["data"][0]["auth"], json!({"type": "dcr"}));
    assert_eq!(body["data"][0]["auth_status"]["status"], "auth_required");
    assert_eq!(mcp_names(&server).await, ["linear"]);
    server.stop().await;
}

#[tokio::test]
async fn settings_mcp_servers_post_redacted_header_with_nothing_stored_is_400() {
    let server = TestServer::start().await;
    let reply = server
        .post(
            "/api/v1/settings/mcp-servers",
            json!({"manifest": header_mcp("docs", "Authorization", "***REDACTED***--abc")}),
        )
        .await;
    assert_error(&reply, 400, "Header secret is required");
    let reply = put(
        &server,
        "/api/v1/settings/mcp-servers",
        json!({"manifest": header_mcp("docs", "Authorization", "***REDACTED***")}),
    )
    .await;
    assert_error(&reply, 400, "Header secret is required");
    assert!(mcp_names(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn settings_mcp_servers_put_with_redacted_header_keeps_the_secret() {
    let server = TestServer::start().await;
    let (status, _) = server
        .post(
            "/api/v1/settings/mcp-servers",
            json!({"manifest": header_mcp("docs", "Authorization", "Bearer secret-token-abc")}),
        )
        .await;
    assert_eq!(status, 201);
    // The redacted value sent back, with a changed description: the secret stays.
    let mut manifest = header_mcp("docs", "Authorization", "***REDACTED***--abc");
    manifest["description"] = json!("Renamed description");
    let (status, body) = put(&server, "/api/v1/settings/mcp-servers", json!({"manifest": manifest})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["manifest"]["description"], "Renamed description");
    assert_eq!(
        body["data"]["manifest"]["auth"]["headers"]["Authorization"],
        "***REDACTED***--abc"
    );
    // A redacted value under a header name that has no stored secret is refused, and nothing changes.
    let reply = put(
        &server,
        "/api/v1/settings/mcp-servers",
        json!({"manifest": header_mcp("docs", "X-Api-Key", "***REDACTED***--abc")}),
    )
    .await;
    assert_error(&reply, 400, "Header secret is required");
    let (_, got) = server.get("/api/v1/settings/mcp-servers/docs").await;
    assert_eq!(got["data"]["manifest"]["description"], "Renamed description");
    assert_eq!(
        got["data"]["manifest"]["auth"]["headers"],
        json!({"Authorization": "***REDACTED***--abc"})
    );
    // A real new value replaces it.
    let (status, body) = put(
        &server,
        "/api/v1/settings/mcp-servers",
        json!({"manifest": header_mcp("docs", "Authorization", "Token other-secret-xyz")}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["manifest"]["auth"]["headers"]["Authorization"],
        "***REDACTED***--xyz"
    );
    server.stop().await;
}

#[tokio::test]
async fn settings_mcp_servers_invalid_manifest_is_400_and_nothing_written() {
    let server = TestServer::start().await;
    for manifest in [
        json!({"type": "remote", "name": "docs", "url": "not a url", "description": "x"}),
        json!({"type": "remote", "name": "docs", "url": "https://a.example.com", "description": ""}),
        json!({"type": "remote", "name": "docs", "url": "https://a.example.com"}),
        json!({"type": "local", "name": "docs", "url": "https://a.example.com", "description": "x"}),
        json!({"type": "remote", "name": "docs", "url": "https://a.example.com", "description": "x", "auth": {"type": "header", "headers": {}}}),
        json!({"type": "remote", "name": "docs", "url": "https://a.example.com", "description": "x", "extra": 1}),
    ] {
        assert_bad_request(
            &server
                .post("/api/v1/settings/mcp-servers", json!({"manifest": manifest.clone()}))
                .await,
        );
        assert_bad_request(&put(&server, "/api/v1/settings/mcp-servers", json!({"manifest": manifest})).await);
    }
    assert!(mcp_names(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn mcp_servers_list_shows_auth_type_and_status() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/mcp-servers").await;
    assert_eq!((status, body), (200, json!({"data": []})));
    for manifest in [
        header_mcp("docs", "Authorization", "Bearer secret-token-abc"),
        plain_mcp("open"),
    ] {
        let (status, _) = server
            .post("/api/v1/settings/mcp-servers", json!({"manifest": manifest}))
            .await;
        assert_eq!(status, 201);
    }
    let (status, body) = server.get("/api/v1/mcp-servers").await;
    assert_eq!(status, 200, "{body}");
    let mut servers = data_array(&body).clone();
    servers.sort_by_key(|server| server["name"].as_str().unwrap().to_owned());
    assert_eq!(
        servers,
        vec![
            json!({"name": "docs", "url": "https://mcp.example.com/mcp", "auth": {"type": "header"}, "auth_status": {"status": "authenticated"}}),
            json!({"name": "open", "url": "https://open.example.com/mcp", "auth_status": {"status": "not_required"}}),
        ]
    );
    assert!(!body.to_string().contains("secret"));
    server.stop().await;
}

#[tokio::test]
async fn mcp_servers_tools_unknown_is_404() {
    let server = TestServer::start().await;
    let reply = server.get("/api/v1/mcp-servers/ghost/tools").await;
    assert_eq!(reply.0, 404, "{}", reply.1);
    error_message(&reply.1);
    server.stop().await;
}

/// A deliberate difference: MCP connections land later, so a configured server cannot be reached (502).
#[tokio::test]
async fn mcp_servers_tools_of_a_configured_server_is_502() {
    let server = TestServer::start().await;
    let (status, _) = server
        .post("/api/v1/settings/mcp-servers", json!({"manifest": plain_mcp("open")}))
        .await;
    assert_eq!(status, 201);
    let reply = server.get("/api/v1/mcp-servers/open/tools").await;
    assert_error_containing(&reply, 502, "\"open\"");
    server.stop().await;
}

#[tokio::test]
async fn mcp_servers_authorize_get_answers_a_bare_status() {
    let server = TestServer::start().await;
    for manifest in [
        header_mcp("docs", "Authorization", "Bearer secret-token-abc"),
        plain_mcp("open"),
    ] {
        server
            .post("/api/v1/settings/mcp-servers", json!({"manifest": manifest}))
            .await;
    }
    let (status, body) = server.get("/api/v1/mcp-servers/docs/authorize").await;
    assert_eq!((status, body), (200, json!({"status": "authenticated"})));
    let (status, body) = server
        .get("/api/v1/mcp-servers/open/authorize?return_to=//evil.example.com")
        .await;
    assert_eq!((status, body), (200, json!({"status": "not_required"})));
    let reply = server.get("/api/v1/mcp-servers/ghost/authorize").await;
    assert_eq!(reply.0, 404, "{}", reply.1);
    error_message(&reply.1);
    server.stop().await;
}

#[tokio::test]
async fn mcp_servers_authorize_delete_returns_the_configured_server() {
    let server = TestServer::start().await;
    server
        .post(
            "/api/v1/settings/mcp-servers",
            json!({"manifest": header_mcp("docs", "Authorization", "Bearer secret-token-abc")}),
        )
        .await;
    let (status, body) = delete(&server, "/api/v1/mcp-servers/docs/authorize").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!({
            "name": "docs",
            "manifest": header_mcp("docs", "Authorization", "***REDACTED***--abc"),
            "auth_status": {"status": "authenticated"},
        })
    );
    // The server itself stays configured.
    assert_eq!(mcp_names(&server).await, vec!["docs"]);
    let reply = delete(&server, "/api/v1/mcp-servers/ghost/authorize").await;
    assert_eq!(reply.0, 404, "{}", reply.1);
    error_message(&reply.1);
    server.stop().await;
}

#[tokio::test]
async fn mcp_servers_oauth_callback_unknown_state_is_400() {
    let server = TestServer::start().await;
    assert_error(
        &server
            .get("/api/v1/mcp-servers/oauth/callback?state=never-issued&code=abc")
            .await,
        400,
        "Unknown or expired OAuth state",
    );
    server.stop().await;
}

#[tokio::test]
async fn mcp_servers_oauth_callback_without_state_is_400() {
    let server = TestServer::start().await;
    assert_bad_request(&server.get("/api/v1/mcp-servers/oauth/callback").await);
    assert_bad_request(&server.get("/api/v1/mcp-servers/oauth/callback?state=").await);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Settings: skills; the chat view of skills
// ---------------------------------------------------------------------------------------------------------

async fn skill_names(server: &TestServer) -> Vec<String> {
    let (status, body) = server.get("/api/v1/settings/skills").await;
    assert_eq!(status, 200, "{body}");
    names(&body)
}

#[tokio::test]
async fn settings_skills_create_list_and_upsert() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/settings/skills").await;
    assert_eq!((status, body), (200, json!({"data": []})));
    let (status, created) = server
        .post(
            "/api/v1/settings/skills",
            json!({"manifest": skill("pdf", "Reads PDFs")}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(
        created["data"],
        json!({"name": "pdf", "manifest": skill("pdf", "Reads PDFs")})
    );
    let (_, listed) = server.get("/api/v1/settings/skills").await;
    assert_eq!(listed["data"], json!([created["data"]]));

    let (status, updated) = put(
        &server,
        "/api/v1/settings/skills",
        json!({"manifest": skill("pdf", "Reads and writes PDFs")}),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["data"]["manifest"]["description"], "Reads and writes PDFs");
    // PUT creates a missing one too.
    let (status, _) = put(
        &server,
        "/api/v1/settings/skills",
        json!({"manifest": skill("docx", "Word")}),
    )
    .await;
    assert_eq!(status, 200);
    let mut names = skill_names(&server).await;
    names.sort();
    assert_eq!(names, vec!["docx", "pdf"]);
    server.stop().await;
}

#[tokio::test]
async fn settings_skills_post_duplicate_is_409_and_keeps_the_first() {
    let server = TestServer::start().await;
    server
        .post(
            "/api/v1/settings/skills",
            json!({"manifest": skill("pdf", "Reads PDFs")}),
        )
        .await;
    let reply = server
        .post("/api/v1/settings/skills", json!({"manifest": skill("pdf", "Other")}))
        .await;
    assert_error(&reply, 409, "Skill name already exists: pdf");
    let (_, listed) = server.get("/api/v1/settings/skills").await;
    assert_eq!(listed["data"][0]["manifest"]["description"], "Reads PDFs");
    server.stop().await;
}

#[tokio::test]
async fn settings_skills_invalid_manifest_is_400_and_nothing_written() {
    let server = TestServer::start().await;
    let mut bad_url = skill("pdf", "x");
    bad_url["url"] = json!("https://example.com/some/repo");
    let mut traversal = skill("pdf", "x");
    traversal["ref"] = json!("../main");
    let mut bad_ref = skill("pdf", "x");
    bad_ref["ref"] = json!("main branch");
    let mut no_ref = skill("pdf", "x");
    no_ref.as_object_mut().unwrap().remove("ref");
    let mut extra = skill("pdf", "x");
    extra["stars"] = json!(5);
    let mut empty_description = skill("pdf", "x");
    empty_description["description"] = json!("");
    for manifest in [bad_url, traversal, bad_ref, no_ref, extra, empty_description] {
        assert_bad_request(
            &server
                .post("/api/v1/settings/skills", json!({"manifest": manifest.clone()}))
                .await,
        );
        assert_bad_request(&put(&server, "/api/v1/settings/skills", json!({"manifest": manifest})).await);
    }
    assert!(skill_names(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn skills_lists_name_and_description() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/skills").await;
    assert_eq!((status, body), (200, json!({"data": []})));
    server
        .post(
            "/api/v1/settings/skills",
            json!({"manifest": skill("pdf", "Reads PDFs")}),
        )
        .await;
    let (status, body) = server.get("/api/v1/skills").await;
    assert_eq!(status, 200);
    assert_eq!(body, json!({"data": [{"name": "pdf", "description": "Reads PDFs"}]}));
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Settings: sandbox provider
// ---------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn settings_sandbox_providers_get_without_one_is_404() {
    let server = TestServer::start().await;
    assert_error(
        &server.get("/api/v1/settings/sandbox-providers").await,
        404,
        "No sandbox provider configured",
    );
    server.stop().await;
}

/// A deliberate difference: Daytona answers 422 "not supported yet".
#[tokio::test]
async fn settings_sandbox_providers_put_with_daytona_unreachable_is_502_and_nothing_written() {
    // A port nothing listens on: the key cannot be checked, so nothing is saved.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = TestServer::start_with(|config| {
        config.sandbox.daytona_api_url = format!("http://127.0.0.1:{closed}/api");
    })
    .await;
    let reply = put(
        &server,
        "/api/v1/settings/sandbox-providers",
        json!({"manifest": daytona()}),
    )
    .await;
    assert_error_containing(&reply, 502, "Daytona did not answer");
    assert!(!error_message(&reply.1).contains("dtn-secret"));
    assert_error(
        &server.get("/api/v1/settings/sandbox-providers").await,
        404,
        "No sandbox provider configured",
    );
    server.stop().await;
}

#[tokio::test]
async fn settings_sandbox_providers_put_invalid_is_400() {
    let server = TestServer::start().await;
    let mut zero_timeout = daytona();
    zero_timeout["exec_timeout_ms"] = json!(0);
    let mut negative = daytona();
    negative["auto_stop_interval_in_minutes"] = json!(-1);
    let mut missing = daytona();
    missing.as_object_mut().unwrap().remove("auth");
    let mut extra = daytona();
    extra["region"] = json!("eu");
    for manifest in [zero_timeout, negative, missing, extra, json!({"type": "local"})] {
        assert_bad_request(
            &put(
                &server,
                "/api/v1/settings/sandbox-providers",
                json!({"manifest": manifest}),
            )
            .await,
        );
    }
    assert_bad_request(&put(&server, "/api/v1/settings/sandbox-providers", json!({})).await);
    assert_eq!(server.get("/api/v1/settings/sandbox-providers").await.0, 404);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn sessions_create_inline_shape() {
    let server = TestServer::start().await;
    let (status, body) = server
        .post("/api/v1/sessions", json!({"agent": {"spec": spec()}}))
        .await;
    assert_eq!(status, 201, "{body}");
    let session = &body["data"];
    let id = session["id"].as_str().unwrap();
    assert_eq!(id.len(), 26, "{id}");
    assert_eq!(id, id.to_lowercase());
    assert_eq!(session["agent"]["type"], "inline");
    assert_eq!(session["agent"]["spec"]["model"]["name"], MODEL);
    assert!(
        session["agent"]["spec"]["config"].is_object(),
        "defaults materialised: {session}"
    );
    assert_eq!(session["title"], Value::Null);
    assert_eq!(session["created_by"], "trueforge-default");
    assert!(is_iso_utc(&session["created_at"]), "{session}");
    assert!(is_iso_utc(&session["updated_at"]), "{session}");
    let mut keys: Vec<&str> = session.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "agent",
            "created_at",
            "created_by",
            "id",
            "title",
            "total_cost_in_usd",
            "updated_at"
        ]
    );
    assert_eq!(session["total_cost_in_usd"], 0.0, "nothing spent yet");
    assert_eq!(session_body(&server, id).await, *session);
    server.stop().await;
}

#[tokio::test]
async fn sessions_create_by_agent_name_is_a_reference() {
    let server = TestServer::start().await;
    let agent_id = create_agent(&server, "helper").await;
    let (status, body) = server
        .post("/api/v1/sessions", json!({"agent": {"name": "helper"}}))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["data"]["agent"],
        json!({"type": "reference", "id": agent_id, "name": "helper"})
    );
    server.stop().await;
}

#[tokio::test]
async fn sessions_create_unknown_agent_name_is_404_and_nothing_written() {
    let server = TestServer::start().await;
    let reply = server
        .post("/api/v1/sessions", json!({"agent": {"name": "ghost"}}))
        .await;
    assert_error(&reply, 404, "Agent not found: ghost");
    assert!(session_ids(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn sessions_create_wrong_types_are_400_and_nothing_written() {
    let server = TestServer::start().await;
    for body in [
        json!({"agent": 5}),
        json!({"agent": "helper"}),
        json!({"agent": {}}),
        json!({"agent": {"name": 5}}),
        json!({"agent": {"spec": 5}}),
        json!({"agent": {"spec": {}}}),
        json!({"agent": {"spec": {"model": {"name": 7}}}}),
        json!({}),
        json!([]),
        json!(null),
    ] {
        assert_bad_request(&server.post("/api/v1/sessions", body).await);
    }
    assert!(session_ids(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn sessions_create_unknown_fields_are_400_and_nothing_written() {
    let server = TestServer::start().await;
    create_agent(&server, "helper").await;
    for body in [
        json!({"agent": {"spec": spec()}, "title": "mine"}),
        json!({"agent": {"name": "helper", "version": 2}}),
        json!({"agent": {"spec": spec(), "name": "helper"}}),
        json!({"agent": {"spec": spec(), "extra": true}}),
    ] {
        assert_bad_request(&server.post("/api/v1/sessions", body).await);
    }
    assert!(session_ids(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn sessions_create_unknown_model_is_422_and_nothing_written() {
    let server = TestServer::start().await;
    for (name, message) in [
        (
            "fake-model",
            "Model name must be a fully qualified \"provider/model\": fake-model",
        ),
        (
            "ghost/fake-model",
            "Unknown model \"ghost/fake-model\" — provider not configured",
        ),
        (
            "fake/ghost",
            "Unknown model \"fake/ghost\" — not configured on provider",
        ),
    ] {
        let reply = server
            .post(
                "/api/v1/sessions",
                json!({"agent": {"spec": {"model": {"name": name}}}}),
            )
            .await;
        assert_error(&reply, 422, message);
    }
    assert!(session_ids(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn sessions_create_unknown_mcp_server_is_422_and_nothing_written() {
    let server = TestServer::start().await;
    server
        .post("/api/v1/settings/mcp-servers", json!({"manifest": plain_mcp("open")}))
        .await;
    let reply = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL}, "mcp_servers": [{"name": "open"}, {"name": "ghost"}]}}}),
        )
        .await;
    assert_error(&reply, 422, "Unknown MCP server \"ghost\" — not configured");
    assert!(session_ids(&server).await.is_empty());
    // A configured one is accepted.
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL}, "mcp_servers": [{"name": "open"}]}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn sessions_create_unsupported_reasoning_effort_is_422_and_nothing_written() {
    let server = TestServer::start().await;
    let (status, body) = put(
        &server,
        "/api/v1/settings/model-providers",
        json!({"manifest": fake_provider_with_thinker(&server, "fake-key-123456")}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for (model, effort, message) in [
        (
            "fake/fake-model",
            "low",
            "Model \"fake/fake-model\" does not support configurable reasoning effort",
        ),
        (
            "fake/thinker",
            "medium",
            "Reasoning effort \"medium\" is not supported by model \"fake/thinker\"",
        ),
    ] {
        let reply = server
            .post(
                "/api/v1/sessions",
                json!({"agent": {"spec": {"model": {"name": model, "params": {"reasoning_effort": effort}}}}}),
            )
            .await;
        assert_error(&reply, 422, message);
    }
    // An effort no provider knows is refused as a bad request, not dropped on the way to the model.
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": "fake/thinker", "params": {"reasoning_effort": "turbo"}}}}}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("turbo"), "{body}");
    assert!(session_ids(&server).await.is_empty());
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": "fake/thinker", "params": {"reasoning_effort": "high"}}}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn sessions_create_skills_or_sandbox_without_a_provider_is_422_and_nothing_written() {
    // Without the local sandbox, a tenant with no remote provider has none.
    let server = TestServer::start_with(|config| config.sandbox.local = false).await;
    let reply = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL}, "skills": [{"name": "ghost"}]}}}),
        )
        .await;
    assert_error(&reply, 422, "Unknown skill \"ghost\" — not configured");
    server
        .post(
            "/api/v1/settings/skills",
            json!({"manifest": skill("pdf", "Reads PDFs")}),
        )
        .await;
    let reply = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL}, "skills": [{"name": "pdf"}]}}}),
        )
        .await;
    assert_error(
        &reply,
        422,
        "skills require a sandbox provider — configure via PUT /settings/sandbox-providers",
    );
    let reply = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL}, "config": {"sandbox": {"enabled": true}}}}}),
        )
        .await;
    assert_error(
        &reply,
        422,
        "sandbox is enabled but no sandbox provider is configured — PUT /settings/sandbox-providers",
    );
    assert!(session_ids(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn sessions_list_paginates_with_page_tokens() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/api/v1/sessions").await;
    assert_eq!(status, 200);
    assert_eq!(body, json!({"data": [], "pagination": {"limit": 25}}));
    let mut created = Vec::new();
    for _ in 0..3 {
        created.push(server.session().await);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (status, first) = server.get("/api/v1/sessions?limit=2").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["pagination"]["limit"], 2);
    // Newest first by default.
    assert_eq!(ids(&first), vec![created[2].clone(), created[1].clone()]);
    let token = first["pagination"]["next_page_token"].as_str().unwrap();
    assert!(!token.is_empty());
    let (status, second) = server
        .get(&format!("/api/v1/sessions?limit=2&page_token={token}"))
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(ids(&second), vec![created[0].clone()]);
    assert!(second["pagination"].get("next_page_token").is_none(), "{second}");
    assert_eq!(second["pagination"]["limit"], 2);
    server.stop().await;
}

#[tokio::test]
async fn sessions_list_order_asc_is_oldest_first() {
    let server = TestServer::start().await;
    let mut created = Vec::new();
    for _ in 0..3 {
        created.push(server.session().await);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (status, body) = server.get("/api/v1/sessions?order=asc").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), created);
    let (_, body) = server.get("/api/v1/sessions?order=desc").await;
    created.reverse();
    assert_eq!(ids(&body), created);
    server.stop().await;
}

#[tokio::test]
async fn sessions_list_bad_query_is_400() {
    let server = TestServer::start().await;
    server.session().await;
    for query in [
        "limit=abc",
        "limit=0",
        "limit=26",
        "limit=-1",
        "limit=2.5",
        "order=sideways",
        "start_timestamp=yesterday",
        "start_timestamp=2024-01-01T00:00:00",
        "end_timestamp=2024-13-01T00:00:00Z",
        "page_token=",
        "page_token=not-a-token",
    ] {
        assert_bad_request(&server.get(&format!("/api/v1/sessions?{query}")).await);
    }
    server.stop().await;
}

#[tokio::test]
async fn sessions_list_filters_by_created_time_and_agent() {
    let server = TestServer::start().await;
    let agent_id = create_agent(&server, "helper").await;
    let inline = server.session().await;
    let (_, body) = server
        .post("/api/v1/sessions", json!({"agent": {"name": "helper"}}))
        .await;
    let bound = body["data"]["id"].as_str().unwrap().to_owned();

    let (status, body) = server
        .get("/api/v1/sessions?start_timestamp=2999-01-01T00:00:00Z")
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(ids(&body).is_empty());
    let (_, body) = server.get("/api/v1/sessions?end_timestamp=2000-01-01T00:00:00Z").await;
    assert!(ids(&body).is_empty());
    let (_, body) = server
        .get("/api/v1/sessions?start_timestamp=2000-01-01T00:00:00Z&end_timestamp=2999-01-01T00:00:00%2B02:00")
        .await;
    let mut all = ids(&body);
    all.sort();
    let mut expected = vec![inline.clone(), bound.clone()];
    expected.sort();
    assert_eq!(all, expected);
    let (_, body) = server.get(&format!("/api/v1/sessions?agent_id={agent_id}")).await;
    assert_eq!(ids(&body), vec![bound]);
    server.stop().await;
}

#[tokio::test]
async fn sessions_get_unknown_is_404() {
    let server = TestServer::start().await;
    assert_error(
        &server.get("/api/v1/sessions/01nothing").await,
        404,
        "Session not found: 01nothing",
    );
    server.stop().await;
}

/// `session_id` is 1..64 characters (openapi.json path parameter; notes §1.9).
#[tokio::test]
async fn sessions_overlong_id_is_400() {
    let server = TestServer::start().await;
    let long = "a".repeat(65);
    assert_bad_request(&server.get(&format!("/api/v1/sessions/{long}")).await);
    assert_bad_request(&patch(&server, &format!("/api/v1/sessions/{long}"), json!({})).await);
    assert_bad_request(&server.get(&format!("/api/v1/sessions/{long}/turns")).await);
    server.stop().await;
}

#[tokio::test]
async fn sessions_patch_empty_bumps_updated_at() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let before = session_body(&server, &session_id).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (status, body) = patch(&server, &format!("/api/v1/sessions/{session_id}"), json!({})).await;
    assert_eq!(status, 200, "{body}");
    let after = &body["data"];
    assert_eq!(after["agent"], before["agent"]);
    assert_eq!(after["created_at"], before["created_at"]);
    assert!(
        after["updated_at"].as_str().unwrap() > before["updated_at"].as_str().unwrap(),
        "{before} -> {after}"
    );
    assert_eq!(session_body(&server, &session_id).await, *after);
    server.stop().await;
}

#[tokio::test]
async fn sessions_patch_replaces_the_inline_spec() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = patch(
        &server,
        &format!("/api/v1/sessions/{session_id}"),
        json!({"agent": {"spec": {"model": {"name": MODEL}, "instructions": "Be brief."}}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["agent"]["type"], "inline");
    assert_eq!(body["data"]["agent"]["spec"]["instructions"], "Be brief.");
    assert_eq!(
        session_body(&server, &session_id).await["agent"]["spec"]["instructions"],
        "Be brief."
    );
    server.stop().await;
}

#[tokio::test]
async fn sessions_patch_bad_spec_is_422_and_keeps_the_spec() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let before = session_body(&server, &session_id).await;
    let reply = patch(
        &server,
        &format!("/api/v1/sessions/{session_id}"),
        json!({"agent": {"spec": {"model": {"name": "fake/ghost"}}}}),
    )
    .await;
    assert_error(&reply, 422, "Unknown model \"fake/ghost\" — not configured on provider");
    assert_eq!(session_body(&server, &session_id).await, before);
    server.stop().await;
}

#[tokio::test]
async fn sessions_patch_agent_of_a_reference_session_is_422_and_keeps_it() {
    let server = TestServer::start().await;
    create_agent(&server, "helper").await;
    let (_, body) = server
        .post("/api/v1/sessions", json!({"agent": {"name": "helper"}}))
        .await;
    let session_id = body["data"]["id"].as_str().unwrap().to_owned();
    let before = session_body(&server, &session_id).await;
    let reply = patch(
        &server,
        &format!("/api/v1/sessions/{session_id}"),
        json!({"agent": {"spec": spec()}}),
    )
    .await;
    assert_eq!(reply.0, 422, "{}", reply.1);
    error_message(&reply.1);
    assert_eq!(session_body(&server, &session_id).await, before);
    assert_eq!(before["agent"]["type"], "reference");
    server.stop().await;
}

#[tokio::test]
async fn sessions_patch_title_renames_and_bad_titles_are_400() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let path = format!("/api/v1/sessions/{session_id}");
    let (status, body) = patch(&server, &path, json!({"title": "  Quarterly report  "})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["title"], "Quarterly report");
    assert_eq!(body["data"]["agent"]["type"], "inline", "the agent is kept: {body}");
    assert_eq!(session_body(&server, &session_id).await["title"], "Quarterly report");
    let before = session_body(&server, &session_id).await;
    for bad in [
        json!(""),
        json!("   "),
        json!("two\nlines"),
        json!("x".repeat(201)),
        json!(7),
    ] {
        let reply = patch(&server, &path, json!({"title": bad})).await;
        assert_bad_request(&reply);
    }
    assert_eq!(
        session_body(&server, &session_id).await,
        before,
        "no rejected rename was written"
    );
    let (status, body) = patch(&server, &path, json!({"title": "é".repeat(200)})).await;
    assert_eq!(status, 200, "200 characters (not bytes) are allowed: {body}");
    server.stop().await;
}

#[tokio::test]
async fn sessions_patch_unknown_fields_or_types_are_400_and_keep_the_session() {
    let server = TestServer::start().await;
    create_agent(&server, "helper").await;
    let session_id = server.session().await;
    let before = session_body(&server, &session_id).await;
    // `title` is our addition (the reference refuses it); an unknown field is still a 400.
    for body in [
        json!({"name": "renamed"}),
        json!({"title": null, "extra": true}),
        json!({"agent": {"name": "helper"}}),
        json!({"agent": 5}),
        json!({"agent": {"spec": spec(), "extra": 1}}),
        json!({"agent": {"spec": {}}}),
    ] {
        assert_bad_request(&patch(&server, &format!("/api/v1/sessions/{session_id}"), body).await);
    }
    assert_eq!(session_body(&server, &session_id).await, before);
    server.stop().await;
}

#[tokio::test]
async fn sessions_patch_unknown_session_is_404() {
    let server = TestServer::start().await;
    assert_error(
        &patch(&server, "/api/v1/sessions/01nothing", json!({})).await,
        404,
        "Session not found: 01nothing",
    );
    assert!(session_ids(&server).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn sessions_delete_is_204_twice_then_get_is_404() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let kept = server.session().await;
    finished_turn(&server, &session_id, "hello").await;
    let path = format!("/api/v1/sessions/{session_id}");
    for _ in 0..2 {
        let reply = call(server.http.delete(server.url(&path))).await;
        assert_eq!(reply.status, 204, "{}", reply.text);
        assert!(reply.text.is_empty(), "{:?}", reply.text);
    }
    assert_error(
        &server.get(&path).await,
        404,
        &format!("Session not found: {session_id}"),
    );
    assert_error(
        &server.get(&format!("{path}/turns")).await,
        404,
        &format!("Session not found: {session_id}"),
    );
    assert_eq!(session_ids(&server).await, vec![kept]);
    server.stop().await;
}

/// A deliberate difference: deleting a session stops its running turn first.
#[tokio::test]
async fn sessions_delete_with_a_running_turn_stops_it_and_is_204() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("slow #delay=30000"), "stream": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let started = std::time::Instant::now();
    let (status, _) = delete(&server, &format!("/api/v1/sessions/{session_id}")).await;
    assert_eq!(status, 204);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(server.get(&format!("/api/v1/sessions/{session_id}")).await.0, 404);
    server.stop().await;
}

#[tokio::test]
async fn sessions_cancel_without_a_turn_is_200_empty() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let path = format!("/api/v1/sessions/{session_id}/cancel");
    let (status, body) = server.post(&path, json!({})).await;
    assert_eq!((status, body), (200, json!({})));
    // The body is optional and may be anything that is not JSON.
    let reply = call(server.http.post(server.url(&path))).await;
    assert_eq!(reply.pair(), (200, json!({})));
    let reply = send_raw(&server, Method::POST, &path, Some("text/plain"), "please").await;
    assert_eq!(reply.pair(), (200, json!({})));
    server.stop().await;
}

#[tokio::test]
async fn sessions_cancel_of_a_finished_turn_is_a_no_op() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{session_id}/cancel"), json!({}))
        .await;
    assert_eq!((status, body), (200, json!({})));
    let (_, turn) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}"))
        .await;
    assert_eq!(turn["data"]["state"]["status"], "done");
    server.stop().await;
}

#[tokio::test]
async fn sessions_cancel_unknown_session_is_404() {
    let server = TestServer::start().await;
    assert_error(
        &server.post("/api/v1/sessions/01nothing/cancel", json!({})).await,
        404,
        "Session not found: 01nothing",
    );
    server.stop().await;
}

#[tokio::test]
async fn sessions_events_newest_first_without_deltas() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (first, first_frames) = finished_turn(&server, &session_id, "one #chunks=3").await;
    let (second, second_frames) = finished_turn(&server, &session_id, "two #chunks=3").await;
    assert!(types(&first_frames).iter().any(|kind| kind == "model.message.delta"));
    let (status, body) = server.get(&format!("/api/v1/sessions/{session_id}/events")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["pagination"]["limit"], 100);
    let items = data_array(&body);
    for item in items {
        assert_eq!(item.as_object().unwrap().len(), 2, "{{turn_id, event}}: {item}");
        assert_ne!(item["event"]["type"], "model.message.delta");
    }
    // Newest first: the second turn's events (reversed), then the first's.
    let persisted = |frames: &[(u64, Value)], turn_id: &str| -> Vec<(String, String)> {
        frames
            .iter()
            .filter(|(_, event)| event["type"] != "model.message.delta")
            .map(|(_, event)| (turn_id.to_owned(), event["type"].as_str().unwrap().to_owned()))
            .collect()
    };
    let mut expected = persisted(&first_frames, &first);
    expected.extend(persisted(&second_frames, &second));
    expected.reverse();
    let got: Vec<(String, String)> = items
        .iter()
        .map(|item| {
            (
                item["turn_id"].as_str().unwrap().to_owned(),
                item["event"]["type"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(items[0]["event"]["type"], "turn.done");
    assert_eq!(items.last().unwrap()["event"]["type"], "turn.created");
    server.stop().await;
}

#[tokio::test]
async fn sessions_events_paginate_and_anchor_on_last_turn_id() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (first, _) = finished_turn(&server, &session_id, "one").await;
    finished_turn(&server, &session_id, "two").await;
    let path = format!("/api/v1/sessions/{session_id}/events");
    let (_, all) = server.get(&path).await;
    let all = data_array(&all).clone();
    assert!(all.len() > 3);

    let mut paged = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let query = match &token {
            Some(token) => format!("{path}?limit=2&page_token={token}"),
            None => format!("{path}?limit=2"),
        };
        let (status, page) = server.get(&query).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["pagination"]["limit"], 2);
        assert!(data_array(&page).len() <= 2);
        paged.extend(data_array(&page).iter().cloned());
        match page["pagination"]["next_page_token"].as_str() {
            Some(next) => token = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(paged, all);

    // Anchored on the first turn: only its branch (itself).
    let (status, anchored) = server.get(&format!("{path}?last_turn_id={first}")).await;
    assert_eq!(status, 200, "{anchored}");
    let anchored = data_array(&anchored);
    assert!(!anchored.is_empty());
    assert!(anchored.iter().all(|item| item["turn_id"] == first.as_str()));
    server.stop().await;
}

#[tokio::test]
async fn sessions_events_bad_query_is_400() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    finished_turn(&server, &session_id, "one").await;
    for query in ["limit=0", "limit=101", "limit=abc", "page_token=garbage"] {
        assert_bad_request(
            &server
                .get(&format!("/api/v1/sessions/{session_id}/events?{query}"))
                .await,
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn sessions_events_unknown_session_or_last_turn_is_404() {
    let server = TestServer::start().await;
    assert_error(
        &server.get("/api/v1/sessions/01nothing/events").await,
        404,
        "Session not found: 01nothing",
    );
    let session_id = server.session().await;
    let reply = server
        .get(&format!(
            "/api/v1/sessions/{session_id}/events?last_turn_id=01ghost.local"
        ))
        .await;
    assert_eq!(reply.0, 404, "{}", reply.1);
    error_message(&reply.1);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------------------
// Turns
// ---------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn turns_create_streams_sse_with_the_reference_headers() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let reply = call(
        server
            .http
            .post(server.url(&format!("/api/v1/sessions/{session_id}/turns")))
            .json(&json!({"input": user("hello #chunks=8")})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.header("cache-control"), Some("no-cache"));
    let frames = parse_frames(&reply.text);
    // Ids are the per-turn sequence numbers: 1-based and dense (notes §2.3).
    let ids: Vec<u64> = frames.iter().map(|(id, _)| *id).collect();
    let dense: Vec<u64> = (1..=u64::try_from(frames.len()).unwrap()).collect();
    assert_eq!(ids, dense, "{:?}", types(&frames));
    assert_eq!(frames[0].1["type"], "turn.created");
    assert_eq!(frames[0].1["input"], user("hello #chunks=8"));
    assert_eq!(frames[0].1["state"], json!({"status": "running"}));
    assert_eq!(types(&frames).last().map(String::as_str), Some("turn.done"));
    server.stop().await;
}

#[tokio::test]
async fn turns_create_stream_false_returns_the_running_turn() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("hi #delay=300"), "stream": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let turn = &body["data"];
    let turn_id = turn["id"].as_str().unwrap();
    // The suffix names the executor: `local`, or a hosted replica's id.
    assert!(
        turn_id.ends_with(&format!(".{}", server.state.executor_id)),
        "{turn_id}"
    );
    assert_eq!(turn["session_id"], session_id.as_str());
    assert_eq!(turn["previous_turn_id"], Value::Null);
    assert_eq!(turn["input"], user("hi #delay=300"));
    assert_eq!(turn["state"], json!({"status": "running"}));
    assert!(is_iso_utc(&turn["created_at"]), "{turn}");
    let mut keys: Vec<&str> = turn.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["created_at", "id", "input", "previous_turn_id", "session_id", "state"]
    );
    server.stop().await;
}

#[tokio::test]
async fn turns_create_unknown_session_is_404() {
    let server = TestServer::start().await;
    assert_error(
        &server
            .post("/api/v1/sessions/01nothing/turns", json!({"input": user("hi")}))
            .await,
        404,
        "Session not found: 01nothing",
    );
    server.stop().await;
}

#[tokio::test]
async fn turns_create_wrong_types_are_400_and_nothing_written() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let path = format!("/api/v1/sessions/{session_id}/turns");
    for body in [
        json!({"input": "x"}),
        json!({"input": [{"type": "user.message"}]}),
        json!({"input": [{"type": "user.message", "content": 5}]}),
        json!({"input": [{"type": "bogus", "content": "x"}]}),
        json!({"input": [{"type": "user.tool_response", "thread_id": "main", "tool_call_id": "c", "content": ""}]}),
        json!({"input": user("hi"), "stream": "yes"}),
        json!({"input": user("hi"), "previous_turn_id": 5}),
        json!({"input": user("hi"), "previous_turn_id": ""}),
        json!([]),
    ] {
        assert_bad_request(&server.post(&path, body).await);
    }
    assert!(turn_ids(&server, &session_id).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn turns_create_mixing_a_message_with_an_approval_is_400_and_nothing_written() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let reply = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": [{"type": "user.message", "content": "hi"}, approval()]}),
        )
        .await;
    assert_bad_request(&reply);
    let reply = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": [{"type": "user.tool_response", "thread_id": "main", "tool_call_id": "c1", "content": "ok"}, {"type": "user.message", "content": "hi"}]}),
        )
        .await;
    assert_bad_request(&reply);
    assert!(turn_ids(&server, &session_id).await.is_empty());
    assert_eq!(session_body(&server, &session_id).await["title"], Value::Null);
    server.stop().await;
}

#[tokio::test]
async fn turns_create_approval_with_nothing_pending_is_422_and_nothing_written() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    for input in [
        json!([approval()]),
        json!([{"type": "user.tool_response", "thread_id": "main", "tool_call_id": "call_1", "content": "ok"}]),
    ] {
        let reply = server
            .post(
                &format!("/api/v1/sessions/{session_id}/turns"),
                json!({"input": input, "stream": false}),
            )
            .await;
        assert_eq!(reply.0, 422, "{}", reply.1);
        error_message(&reply.1);
    }
    assert_eq!(turn_ids(&server, &session_id).await, vec![turn_id.clone()]);
    let (_, turn) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}"))
        .await;
    assert_eq!(turn["data"]["state"]["status"], "done");
    server.stop().await;
}

#[tokio::test]
async fn turns_create_unknown_previous_turn_is_404_and_nothing_written() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let reply = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("hi"), "previous_turn_id": "01ghost.local"}),
        )
        .await;
    assert_error(&reply, 404, "Turn not found: 01ghost.local");
    assert!(turn_ids(&server, &session_id).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn turns_create_ignores_unknown_fields() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("hi"), "stream": false, "temperature": 3}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(turn_ids(&server, &session_id).await.len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn turns_create_chains_on_the_previous_turn() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (first, _) = finished_turn(&server, &session_id, "one").await;
    let (second, frames) = finished_turn(&server, &session_id, "two").await;
    assert_eq!(frames[0].1["previous_turn_id"], first.as_str());
    // "none" starts a new root; an explicit id forks.
    let frames = server
        .stream_turn(&session_id, json!({"input": user("root"), "previous_turn_id": "none"}))
        .await;
    assert_eq!(frames[0].1["previous_turn_id"], Value::Null);
    let frames = server
        .stream_turn(&session_id, json!({"input": user("fork"), "previous_turn_id": first}))
        .await;
    assert_eq!(frames[0].1["previous_turn_id"], first.as_str());
    let (_, turn) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns/{second}"))
        .await;
    assert_eq!(turn["data"]["previous_turn_id"], first.as_str());
    server.stop().await;
}

#[tokio::test]
async fn turns_create_on_a_session_of_a_deleted_agent_is_422_and_nothing_written() {
    let server = TestServer::start().await;
    let agent_id = create_agent(&server, "helper").await;
    let (_, body) = server
        .post("/api/v1/sessions", json!({"agent": {"name": "helper"}}))
        .await;
    let session_id = body["data"]["id"].as_str().unwrap().to_owned();
    delete(&server, &format!("/api/v1/agents/{agent_id}")).await;
    let reply = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("hi"), "stream": false}),
        )
        .await;
    assert_error(&reply, 422, &format!("Agent not found: {agent_id}"));
    assert!(turn_ids(&server, &session_id).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn turns_create_first_turn_sets_the_session_title() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    finished_turn(&server, &session_id, "   Plan a trip to the mountains   ").await;
    assert_eq!(
        session_body(&server, &session_id).await["title"],
        "Plan a trip to the mountains"
    );
    // Later turns keep it.
    finished_turn(&server, &session_id, "Something else").await;
    assert_eq!(
        session_body(&server, &session_id).await["title"],
        "Plan a trip to the mountains"
    );
    // At most 50 characters.
    let other = server.session().await;
    finished_turn(&server, &other, &"word ".repeat(30)).await;
    let title = session_body(&server, &other).await["title"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(title.chars().count() <= 50, "{title:?}");
    assert!(title.starts_with("word word"), "{title:?}");
    server.stop().await;
}

#[tokio::test]
async fn turns_list_ascending_with_pagination() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = server.get(&format!("/api/v1/sessions/{session_id}/turns")).await;
    assert_eq!((status, body), (200, json!({"data": [], "pagination": {"limit": 25}})));
    let (first, _) = finished_turn(&server, &session_id, "one").await;
    let (second, _) = finished_turn(&server, &session_id, "two").await;
    let (_, body) = server.get(&format!("/api/v1/sessions/{session_id}/turns")).await;
    assert_eq!(ids(&body), vec![first.clone(), second.clone()]);
    assert_eq!(body["data"][0]["state"]["status"], "done");
    assert_eq!(body["data"][1]["previous_turn_id"], first.as_str());
    let (status, page) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns?limit=1"))
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(ids(&page), vec![first]);
    assert_eq!(page["pagination"]["limit"], 1);
    let token = page["pagination"]["next_page_token"].as_str().unwrap();
    let (_, page) = server
        .get(&format!(
            "/api/v1/sessions/{session_id}/turns?limit=1&page_token={token}"
        ))
        .await;
    assert_eq!(ids(&page), vec![second]);
    assert!(page["pagination"].get("next_page_token").is_none(), "{page}");
    server.stop().await;
}

#[tokio::test]
async fn turns_list_bad_query_is_400() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    for query in ["limit=0", "limit=26", "limit=abc", "page_token=garbage"] {
        assert_bad_request(
            &server
                .get(&format!("/api/v1/sessions/{session_id}/turns?{query}"))
                .await,
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn turns_list_unknown_session_is_404() {
    let server = TestServer::start().await;
    assert_error(
        &server.get("/api/v1/sessions/01nothing/turns").await,
        404,
        "Session not found: 01nothing",
    );
    server.stop().await;
}

#[tokio::test]
async fn turns_get_shape() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    let (status, body) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}"))
        .await;
    assert_eq!(status, 200, "{body}");
    let turn = &body["data"];
    assert_eq!(turn["id"], turn_id.as_str());
    assert_eq!(turn["session_id"], session_id.as_str());
    assert_eq!(turn["input"], user("hello"));
    assert_eq!(turn["state"]["status"], "done");
    assert!(is_iso_utc(&turn["state"]["completed_at"]), "{turn}");
    assert!(turn["state"]["required_actions"].is_array(), "{turn}");
    server.stop().await;
}

#[tokio::test]
async fn turns_get_unknown_or_of_another_session_is_404() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let other = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    assert_error(
        &server
            .get(&format!("/api/v1/sessions/{session_id}/turns/01ghost.local"))
            .await,
        404,
        "Turn not found: 01ghost.local",
    );
    assert_error(
        &server.get(&format!("/api/v1/sessions/{other}/turns/{turn_id}")).await,
        404,
        &format!("Turn not found: {turn_id}"),
    );
    assert_error(
        &server.get(&format!("/api/v1/sessions/01nothing/turns/{turn_id}")).await,
        404,
        "Session not found: 01nothing",
    );
    server.stop().await;
}

#[tokio::test]
async fn turns_events_ascending_descending_and_paginated_without_deltas() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, frames) = finished_turn(&server, &session_id, "hello #chunks=4").await;
    let path = format!("/api/v1/sessions/{session_id}/turns/{turn_id}/events");
    let (status, body) = server.get(&path).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["pagination"]["limit"], 100);
    let ascending = data_array(&body).clone();
    let kinds: Vec<&str> = ascending.iter().map(|event| event["type"].as_str().unwrap()).collect();
    let streamed: Vec<&str> = frames
        .iter()
        .map(|(_, event)| event["type"].as_str().unwrap())
        .filter(|kind| *kind != "model.message.delta")
        .collect();
    assert_eq!(kinds, streamed);
    assert!(ascending.iter().all(|event| event.get("sequence_number").is_none()));

    let (_, body) = server.get(&format!("{path}?order=desc")).await;
    let mut descending = data_array(&body).clone();
    descending.reverse();
    assert_eq!(descending, ascending);
    let (_, body) = server.get(&format!("{path}?order=asc")).await;
    assert_eq!(data_array(&body), &ascending);

    let (_, page) = server.get(&format!("{path}?limit=2")).await;
    assert_eq!(data_array(&page), &ascending[..2].to_vec());
    let token = page["pagination"]["next_page_token"].as_str().unwrap();
    let (_, page) = server.get(&format!("{path}?limit=2&page_token={token}")).await;
    assert_eq!(data_array(&page), &ascending[2..4.min(ascending.len())].to_vec());
    server.stop().await;
}

#[tokio::test]
async fn turns_events_bad_query_is_400() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    for query in [
        "order=sideways",
        "limit=0",
        "limit=101",
        "limit=abc",
        "page_token=garbage",
    ] {
        assert_bad_request(
            &server
                .get(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}/events?{query}"))
                .await,
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn turns_events_unknown_turn_is_404() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    assert_error(
        &server
            .get(&format!("/api/v1/sessions/{session_id}/turns/01ghost.local/events"))
            .await,
        404,
        "Turn not found: 01ghost.local",
    );
    server.stop().await;
}

#[tokio::test]
async fn turns_subscribe_replays_a_finished_turn_with_deltas() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, frames) = finished_turn(&server, &session_id, "hello #chunks=3").await;
    let reply = call(
        server
            .http
            .get(server.url(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe"))),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(parse_frames(&reply.text), frames);
    // An empty cursor counts as absent.
    let reply = call(server.http.get(server.url(&format!(
        "/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe?after_sequence_number="
    ))))
    .await;
    assert_eq!(parse_frames(&reply.text), frames);
    server.stop().await;
}

/// notes §3.1: the cursor is exclusive ("events with sequence number greater than N") and "an
/// `after_sequence_number` past the end parks until new events arrive".
#[tokio::test]
async fn turns_subscribe_with_a_cursor_ahead_of_a_running_turn_gets_only_later_events() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("hi #chunks=8 #delay=100"), "stream": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let turn_id = body["data"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe");
    // Both subscribe at once, while the turn has fewer events than their cursors.
    let (by_query, by_header) = tokio::join!(
        call(server.http.get(server.url(&format!("{path}?after_sequence_number=4")))),
        call(server.http.get(server.url(&path)).header("Last-Event-ID", "5")),
    );
    let everything = parse_frames(&call(server.http.get(server.url(&path))).await.text);
    assert!(everything.len() > 6, "{everything:?}");
    for (after, reply) in [(4, by_query), (5, by_header)] {
        let frames = parse_frames(&reply.text);
        let ids: Vec<u64> = frames.iter().map(|(id, _)| *id).collect();
        assert!(ids.iter().all(|id| *id > after), "after {after}: {ids:?}");
        let expected: Vec<(u64, Value)> = everything.iter().filter(|(id, _)| *id > after).cloned().collect();
        assert_eq!(frames, expected, "after {after}");
    }
    server.stop().await;
}

#[tokio::test]
async fn turns_subscribe_invalid_last_event_id_is_400_before_any_lookup() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    for path in [
        format!("/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe"),
        "/api/v1/sessions/01nothing/turns/01ghost.local/subscribe".to_owned(),
    ] {
        for value in ["abc", "-1", "1.5", "1e3"] {
            let reply = call(server.http.get(server.url(&path)).header("Last-Event-ID", value)).await;
            assert_error(&reply.pair(), 400, "Invalid Last-Event-Id header");
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn turns_subscribe_bad_after_sequence_number_is_400() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    for value in ["abc", "-1", "1.5"] {
        assert_bad_request(
            &server
                .get(&format!(
                    "/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe?after_sequence_number={value}"
                ))
                .await,
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn turns_subscribe_unknown_turn_or_session_is_404() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    assert_error(
        &server
            .get(&format!("/api/v1/sessions/{session_id}/turns/01ghost.local/subscribe"))
            .await,
        404,
        "Turn not found: 01ghost.local",
    );
    assert_error(
        &server
            .get("/api/v1/sessions/01nothing/turns/01ghost.local/subscribe")
            .await,
        404,
        "Session not found: 01nothing",
    );
    server.stop().await;
}

#[tokio::test]
async fn turns_download_sandbox_file_bad_path_is_400_before_any_lookup() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    let long_segment = format!("/{}", "a".repeat(256));
    let long_path = "/abc".repeat(1100);
    for base in [
        format!("/api/v1/sessions/{session_id}/turns/{turn_id}"),
        "/api/v1/sessions/01nothing/turns/01ghost.local".to_owned(),
    ] {
        for (raw, shown) in [
            ("relative/file.txt", "relative/file.txt"),
            ("/work/../etc/passwd", "/work/../etc/passwd"),
            ("/work/./file", "/work/./file"),
            ("/work/a%00b", "/work/a\0b"),
            (long_segment.as_str(), long_segment.as_str()),
            (long_path.as_str(), long_path.as_str()),
        ] {
            let reply = server.get(&format!("{base}/download-sandbox-file?path={raw}")).await;
            assert_eq!(reply.0, 400, "{raw}: {}", reply.1);
            let message = error_message(&reply.1);
            assert!(message.starts_with("Path "), "{message}");
            // A long path is quoted only in part (error messages are capped).
            if message.ends_with("… (truncated)") {
                let quoted = message.split_once(": ").unwrap().1.trim_end_matches("… (truncated)");
                assert!(shown.starts_with(quoted) && quoted.len() > 400, "{message}");
            } else {
                assert!(message.ends_with(&format!(": {shown}")), "{message}");
            }
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn turns_download_sandbox_file_without_path_is_400() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    assert_bad_request(
        &server
            .get(&format!(
                "/api/v1/sessions/{session_id}/turns/{turn_id}/download-sandbox-file"
            ))
            .await,
    );
    server.stop().await;
}

#[tokio::test]
async fn turns_download_sandbox_file_without_a_sandbox_is_412() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (turn_id, _) = finished_turn(&server, &session_id, "hello").await;
    assert_error(
        &server
            .get(&format!(
                "/api/v1/sessions/{session_id}/turns/{turn_id}/download-sandbox-file?path=/work/out.txt"
            ))
            .await,
        412,
        &format!("Turn has no sandbox: {turn_id}"),
    );
    server.stop().await;
}

#[tokio::test]
async fn turns_download_sandbox_file_unknown_turn_or_session_is_404() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    assert_error(
        &server
            .get(&format!(
                "/api/v1/sessions/{session_id}/turns/01ghost.local/download-sandbox-file?path=/a"
            ))
            .await,
        404,
        "Turn not found: 01ghost.local",
    );
    assert_error(
        &server
            .get("/api/v1/sessions/01nothing/turns/01ghost.local/download-sandbox-file?path=/a")
            .await,
        404,
        "Session not found: 01nothing",
    );
    server.stop().await;
}
