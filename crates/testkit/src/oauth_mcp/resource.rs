//! The protected MCP resource: a minimal Streamable HTTP server answering JSON, behind Bearer
//! tokens issued by the authorisation-server side.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::State as Extract;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::state::{State, random_token};

const SESSION_HEADER: &str = "mcp-session-id";
const SUPPORTED_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

pub(crate) async fn post(Extract(state): Extract<Arc<State>>, headers: HeaderMap, body: Bytes) -> Response {
    let user = match authenticate(&state, &headers) {
        Ok(user) => user,
        Err(refused) => return unauthorized(&state, &refused),
    };
    let accept = header_text(&headers, header::ACCEPT.as_str()).unwrap_or_default();
    if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
        return (
            StatusCode::NOT_ACCEPTABLE,
            "Accept must list application/json and text/event-stream",
        )
            .into_response();
    }
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(&body) else {
        return jsonrpc_error(Value::Null, -32700, "the body is not one JSON-RPC message");
    };
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").cloned();
    if method == Some("initialize") {
        return initialize(&state, id.unwrap_or(Value::Null), message.get("params"));
    }
    let session = header_text(&headers, SESSION_HEADER);
    match session {
        None => return (StatusCode::BAD_REQUEST, "Mcp-Session-Id is required").into_response(),
        Some(session) if !state.records().sessions.contains(session) => {
            return (StatusCode::NOT_FOUND, "unknown session").into_response();
        }
        Some(_) => {}
    }
    // Notifications and responses to our (never sent) requests have no answer.
    let (Some(method), Some(id)) = (method, id) else {
        return StatusCode::ACCEPTED.into_response();
    };
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    match method {
        "ping" => jsonrpc_result(id, json!({})),
        "tools/list" => jsonrpc_result(id, json!({ "tools": tools() })),
        "tools/call" => call_tool(id, &params, &user),
        other => jsonrpc_error(id, -32601, &format!("method {other} not found")),
    }
}

pub(crate) async fn get(Extract(state): Extract<Arc<State>>, headers: HeaderMap) -> Response {
    match authenticate(&state, &headers) {
        // No server-initiated stream: the spec's way of saying so.
        Ok(_) => (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST, DELETE")]).into_response(),
        Err(refused) => unauthorized(&state, &refused),
    }
}

pub(crate) async fn delete(Extract(state): Extract<Arc<State>>, headers: HeaderMap) -> Response {
    if let Err(refused) = authenticate(&state, &headers) {
        return unauthorized(&state, &refused);
    }
    match header_text(&headers, SESSION_HEADER) {
        Some(session) if state.records().sessions.remove(session) => StatusCode::OK.into_response(),
        Some(_) => StatusCode::NOT_FOUND.into_response(),
        None => StatusCode::BAD_REQUEST.into_response(),
    }
}

/// A request without a valid token; says whether one was presented (and was expired or unknown).
struct Refused {
    token_presented: bool,
}

/// The user of the request's valid Bearer token.
fn authenticate(state: &State, headers: &HeaderMap) -> Result<String, Refused> {
    let token = header_text(headers, header::AUTHORIZATION.as_str()).and_then(|value| {
        let (scheme, token) = value.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    token.and_then(|token| state.user_of(token)).ok_or(Refused {
        token_presented: token.is_some(),
    })
}

/// The 401 that points the client at the protected-resource metadata (RFC 9728 §5.1).
fn unauthorized(state: &State, refused: &Refused) -> Response {
    state.unauthorized.fetch_add(1, Ordering::SeqCst);
    let mut params = Vec::new();
    if state.options().resource_metadata {
        params.push(format!(r#"resource_metadata="{}""#, state.resource_metadata_url()));
    }
    if refused.token_presented {
        params.push(r#"error="invalid_token", error_description="expired or unknown token""#.to_owned());
    }
    let challenge = if params.is_empty() {
        "Bearer".to_owned()
    } else {
        format!("Bearer {}", params.join(", "))
    };
    let mut response = (StatusCode::UNAUTHORIZED, "authorization required").into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

fn initialize(state: &State, id: Value, params: Option<&Value>) -> Response {
    let requested = params
        .and_then(|params| params.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = requested
        .filter(|requested| SUPPORTED_VERSIONS.contains(requested))
        .unwrap_or(SUPPORTED_VERSIONS[0]);
    let session = random_token();
    state.records().sessions.insert(session.clone());
    let result = json!({
        "protocolVersion": version,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": { "name": "trueforge-testkit-oauth-mcp", "version": env!("CARGO_PKG_VERSION") },
    });
    let mut response = jsonrpc_result(id, result);
    if let Ok(value) = HeaderValue::from_str(&session) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

fn tools() -> Value {
    json!([
        {
            "name": "whoami",
            "description": "The user the access token was issued to.",
            "inputSchema": { "type": "object", "properties": {} },
        },
        {
            "name": "echo",
            "description": "Returns the message.",
            "inputSchema": {
                "type": "object",
                "properties": { "message": { "type": "string" } },
                "required": ["message"],
            },
        },
    ])
}

fn call_tool(id: Value, params: &Value, user: &str) -> Response {
    let text = match params.get("name").and_then(Value::as_str) {
        Some("whoami") => user.to_owned(),
        Some("echo") => match params.pointer("/arguments/message").and_then(Value::as_str) {
            Some(message) => message.to_owned(),
            None => return jsonrpc_error(id, -32602, "echo needs a string message"),
        },
        Some(other) => return jsonrpc_error(id, -32602, &format!("unknown tool {other}")),
        None => return jsonrpc_error(id, -32602, "name is required"),
    };
    jsonrpc_result(
        id,
        json!({ "content": [{ "type": "text", "text": text }], "isError": false }),
    )
}

fn jsonrpc_result(id: Value, result: Value) -> Response {
    json_response(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

fn jsonrpc_error(id: Value, code: i64, message: &str) -> Response {
    json_response(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }))
}

fn json_response(body: Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}
