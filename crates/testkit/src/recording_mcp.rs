//! A minimal MCP server over Streamable HTTP with one tool, `echo`, that records what each request carried:
//! its method, the W3C trace context in its HTTP headers and in its `_meta`, and whether it bore an
//! `Authorization` header. For tests of what a client sends along.

use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use crate::mcp_http::{ToolServer, serve};

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

#[derive(Default)]
struct Recorder(Mutex<Vec<RecordedMcpRequest>>);

impl ToolServer for Recorder {
    fn name(&self) -> &str {
        "recording"
    }

    fn tools(&self) -> Vec<Value> {
        vec![json!({
            "name": "echo",
            "description": "Echoes the message back.",
            "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
        })]
    }

    fn call(&self, tool: &str, arguments: &Value) -> Result<String, String> {
        match tool {
            "echo" => Ok(format!("Echo: {}", arguments["message"].as_str().unwrap_or_default())),
            other => Err(format!("unknown tool {other}")),
        }
    }

    fn observe(&self, message: &Value, headers: &HeaderMap) {
        let header_text = |name: &str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(RecordedMcpRequest {
                method: message["method"].as_str().unwrap_or_default().to_owned(),
                traceparent_header: header_text("traceparent"),
                traceparent_meta: message["params"]["_meta"]["traceparent"].as_str().map(str::to_owned),
                authorization: header_text(header::AUTHORIZATION.as_str()),
            });
    }
}

/// The running server; it stops when dropped.
pub struct RecordingMcpServer {
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    recorder: Arc<Recorder>,
    server: tokio::task::JoinHandle<()>,
}

impl RecordingMcpServer {
    pub async fn start() -> std::io::Result<Self> {
        let recorder = Arc::new(Recorder::default());
        let (url, server) = serve(recorder.clone(), crate::busy::BusyClock::new()).await?;
        Ok(Self { url, recorder, server })
    }

    /// Every message received so far, in order.
    pub fn requests(&self) -> Vec<RecordedMcpRequest> {
        self.recorder.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Drop for RecordingMcpServer {
    fn drop(&mut self) {
        self.server.abort();
    }
}
