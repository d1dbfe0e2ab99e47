//! A minimal MCP server over Streamable HTTP (JSON answers, no server-sent stream) with one tool, `echo`,
//! that records what each request carried: its method, the W3C trace context in its HTTP headers and in
//! its `_meta`, and whether it bore an `Authorization` header. For tests of what a client sends along.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// One JSON-RPC message the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedMcpRequest {
    pub method: String,
    /// The `traceparent` HTTP header.
    pub traceparent_header: Option<String>,
    /// `params._meta.traceparent`.
    pub traceparent_meta: Option<String>,
    /// The `Authorization` header, verbatim.
    pub authorization: Option<String>,
}

#[derive(Clone, Default)]
struct Recorded(Arc<Mutex<Vec<RecordedMcpRequest>>>);

/// The running server; it stops when dropped.
pub struct RecordingMcpServer {
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    recorded: Recorded,
    server: tokio::task::JoinHandle<()>,
}

impl RecordingMcpServer {
    pub async fn start() -> std::io::Result<Self> {
        let recorded = Recorded::default();
        let app = Router::new()
            .route("/mcp", post(message).get(no_stream).delete(no_stream))
            .with_state(recorded.clone());
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let url = format!("http://{}/mcp", listener.local_addr()?);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { url, recorded, server })
    }

    /// Every message received so far, in order.
    pub fn requests(&self) -> Vec<RecordedMcpRequest> {
        self.recorded.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Drop for RecordingMcpServer {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The optional GET stream and session DELETE are not offered (both allowed by the transport).
async fn no_stream() -> StatusCode {
    StatusCode::METHOD_NOT_ALLOWED
}

async fn message(State(recorded): State<Recorded>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let method = request["method"].as_str().unwrap_or_default().to_owned();
    let header_text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    recorded
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(RecordedMcpRequest {
            method: method.clone(),
            traceparent_header: header_text("traceparent"),
            traceparent_meta: request["params"]["_meta"]["traceparent"].as_str().map(str::to_owned),
            authorization: header_text(header::AUTHORIZATION.as_str()),
        });
    let Some(id) = request.get("id").cloned() else {
        // A notification or a response: nothing to answer.
        return StatusCode::ACCEPTED.into_response();
    };
    let result = match method.as_str() {
        "initialize" => json!({
            "protocolVersion": request["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "recording", "version": "1.0.0"},
        }),
        "ping" => json!({}),
        "tools/list" => json!({"tools": [{
            "name": "echo",
            "description": "Echoes the message back.",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
        }]}),
        "tools/call" => {
            let text = request["params"]["arguments"]["message"].as_str().unwrap_or_default();
            json!({"content": [{"type": "text", "text": format!("Echo: {text}")}]})
        }
        other => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("method not found: {other}")}}))
            .into_response();
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}
