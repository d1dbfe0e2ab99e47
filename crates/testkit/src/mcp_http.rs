//! A minimal MCP server core over Streamable HTTP (JSON answers, no server-sent stream, no sessions) for the
//! testkit's MCP servers: `initialize`, `ping`, `tools/list` (paged by `cursor`) and `tools/call`, each
//! request shown to the server's [`ToolServer::observe`] first.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use crate::busy::BusyClock;

/// What a testkit MCP server offers.
pub trait ToolServer: Send + Sync + 'static {
    /// `serverInfo.name`.
    fn name(&self) -> &str;
    /// The tool definitions (`name`, `description`, `inputSchema`).
    fn tools(&self) -> Vec<Value>;
    /// Runs a tool: `Ok(text)` is its result, `Err(text)` a tool error (`isError: true`).
    fn call(&self, tool: &str, arguments: &Value) -> Result<String, String>;
    /// Sees every JSON-RPC message with the request's headers before it is answered.
    fn observe(&self, _message: &Value, _headers: &HeaderMap) {}
}

/// Tools per `tools/list` page.
const TOOLS_PAGE: usize = 50;

/// A served [`ToolServer`] and the clock its tool calls keep busy.
#[derive(Clone)]
struct Served {
    server: Arc<dyn ToolServer>,
    clock: Arc<BusyClock>,
}

/// Serves `server` at `http://127.0.0.1:<port>/mcp` until the returned task is aborted; `clock` is busy while a
/// `tools/call` runs.
pub(crate) async fn serve(
    server: Arc<dyn ToolServer>,
    clock: Arc<BusyClock>,
) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let app = Router::new()
        .route("/mcp", post(message).get(no_stream).delete(no_stream))
        .with_state(Served { server, clock });
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, task))
}

/// The optional GET stream and session DELETE are not offered (both allowed by the transport).
async fn no_stream() -> StatusCode {
    StatusCode::METHOD_NOT_ALLOWED
}

async fn message(State(served): State<Served>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let server = &served.server;
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    server.observe(&request, &headers);
    let Some(id) = request.get("id").cloned() else {
        // A notification or a response: nothing to answer.
        return StatusCode::ACCEPTED.into_response();
    };
    let params = &request["params"];
    let result = match request["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": server.name(), "version": "1.0.0"},
        }),
        "ping" => json!({}),
        "tools/list" => {
            let tools = server.tools();
            let start: usize = params["cursor"]
                .as_str()
                .and_then(|cursor| cursor.parse().ok())
                .unwrap_or(0);
            let end = (start + TOOLS_PAGE).min(tools.len());
            let mut page = json!({"tools": tools.get(start..end).unwrap_or_default()});
            if end < tools.len() {
                page["nextCursor"] = json!(end.to_string());
            }
            page
        }
        "tools/call" => {
            let tool = params["name"].as_str().unwrap_or_default();
            let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
            let _busy = served.clock.enter();
            match server.call(tool, &arguments) {
                Ok(text) => json!({"content": [{"type": "text", "text": text}]}),
                Err(text) => json!({"content": [{"type": "text", "text": text}], "isError": true}),
            }
        }
        other => {
            return axum::Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("method not found: {other}")}}))
            .into_response();
        }
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}
