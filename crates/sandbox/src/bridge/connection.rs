//! One connection: requests read and answered in order until the peer leaves, misbehaves or the bridge
//! stops. Scripts wanting parallel calls open more connections (the Python client opens one per call).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;

use super::MAX_REQUEST_BYTES;
use super::handler::{BridgeFailure, BridgeHandler, BridgeServer};
use super::token::BridgeToken;
use super::wire::{self, LineRead, Operation, Parsed, TraceFields};
use tracing::Instrument as _;

/// How long a connection may sit without sending a whole request. Generous for a script between two
/// calls; it only reclaims connections a script leaked (the handler's own time is not counted).
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// A line buffer grown past this by a large request is given back rather than kept for the connection's
/// life.
const KEPT_BUFFER_BYTES: usize = 1024 * 1024;

/// What every connection of one bridge shares.
pub(super) struct Shared {
    pub(super) token: BridgeToken,
    pub(super) handler: Arc<dyn BridgeHandler>,
}

pub(super) async fn serve(stream: UnixStream, shared: Arc<Shared>, cancel: CancellationToken) {
    let (read_half, mut write_half) = stream.into_split();
    let mut reader = BufReader::new(read_half);
    let mut line = Vec::new();
    loop {
        let read = tokio::select! {
            () = cancel.cancelled() => return,
            read = tokio::time::timeout(
                IDLE_TIMEOUT,
                wire::read_line_bounded(&mut reader, &mut line, MAX_REQUEST_BYTES),
            ) => read,
        };
        let (id, outcome, keep_open) = match read {
            Err(_elapsed) => {
                tracing::debug!("code mode bridge: closing a connection idle for {IDLE_TIMEOUT:?}");
                return;
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "code mode bridge: reading a request failed");
                return;
            }
            Ok(Ok(LineRead::Eof)) => return,
            // The rest of the line is never read: answering and closing is the only way to stay in step
            // without reading all the peer sends.
            Ok(Ok(LineRead::TooLong)) => (
                Value::Null,
                Err(BridgeFailure::caller(format!(
                    "request refused: a request line may hold at most {MAX_REQUEST_BYTES} bytes"
                ))),
                false,
            ),
            Ok(Ok(LineRead::Line)) if line.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(Ok(LineRead::Line)) => match wire::parse_request(&line, &shared.token) {
                Parsed::Invalid { id, message } => (id, Err(BridgeFailure::caller(message)), true),
                Parsed::Unauthorized { id } => {
                    tracing::warn!("code mode bridge: refused a request without the turn's token");
                    (
                        id,
                        Err(BridgeFailure::caller(
                            "unauthorized: the request has no valid bridge token",
                        )),
                        false,
                    )
                }
                Parsed::Request { id, operation, trace } => {
                    let span = request_span(&operation, &trace);
                    let outcome = tokio::select! {
                        () = cancel.cancelled() => return,
                        outcome = dispatch(&shared.handler, operation, span) => outcome,
                    };
                    (id, outcome, true)
                }
            },
        };
        if line.capacity() > KEPT_BUFFER_BYTES {
            line = Vec::new();
        }
        let response = wire::encode_response(&id, &outcome);
        let written = tokio::select! {
            () = cancel.cancelled() => return,
            written = write_half.write_all(&response) => written,
        };
        if let Err(error) = written {
            tracing::debug!(%error, "code mode bridge: writing a response failed");
            return;
        }
        if !keep_open {
            // Best effort: the peer may already be gone, and the connection closes either way.
            let _ = write_half.shutdown().await;
            return;
        }
    }
}

/// Checks a request against the handler's servers and allowed tools, then lets the handler serve it.
/// The span of one request from a script, continuing the trace its command was started in; disabled while
/// traces are not exported.
fn request_span(operation: &Operation, trace: &TraceFields) -> tracing::Span {
    if !trueforge_telemetry::enabled() {
        return tracing::Span::none();
    }
    let (op, server, tool) = match operation {
        Operation::ListTools { server } => ("list_tools", server.as_str(), None),
        Operation::CallTool { server, tool, .. } => ("call_tool", server.as_str(), Some(tool.as_str())),
    };
    let span = tracing::info_span!(
        target: "trueforge::code_mode",
        "code_mode.request",
        otel.name = format!("code_mode {op}"),
        otel.kind = "server",
        trueforge.code_mode.server = server,
        gen_ai.tool.name = tool,
    );
    trueforge_telemetry::continue_trace(&span, trace.traceparent.as_deref(), trace.tracestate.as_deref());
    span
}

async fn dispatch(
    handler: &Arc<dyn BridgeHandler>,
    operation: Operation,
    span: tracing::Span,
) -> Result<Value, BridgeFailure> {
    let servers = handler.servers();
    match operation {
        Operation::ListTools { server } => {
            let allowed = find_server(&servers, &server)?.tools.clone();
            let listed = isolated(Arc::clone(handler), |handler| {
                async move { handler.list_tools(&server).await }.instrument(span)
            })
            .await?;
            keep_allowed_tools(listed, &allowed)
        }
        Operation::CallTool {
            server,
            tool,
            arguments,
        } => {
            let entry = find_server(&servers, &server)?;
            if !entry.tools.contains(&tool) {
                return Err(BridgeFailure::caller(format!(
                    "Tool '{tool}' is not available on MCP server '{server}' in Code Mode; allowed tools: {}",
                    name_list(entry.tools.iter())
                )));
            }
            let arguments = wire::call_arguments(arguments)?;
            isolated(Arc::clone(handler), |handler| {
                async move { handler.call_tool(&server, &tool, arguments).await }.instrument(span)
            })
            .await
        }
    }
}

fn find_server<'a>(servers: &'a [BridgeServer], name: &str) -> Result<&'a BridgeServer, BridgeFailure> {
    servers.iter().find(|server| server.name == name).ok_or_else(|| {
        BridgeFailure::caller(format!(
            "MCP server '{name}' is not available in Code Mode; available servers: {}",
            name_list(servers.iter().map(|server| &server.name))
        ))
    })
}

fn name_list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.map(String::as_str).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

/// Runs one handler call in its own task, so a panicking handler fails that request (an `internal`
/// error) instead of killing the connection; the task is aborted if the connection ends first.
async fn isolated<F, Fut>(handler: Arc<dyn BridgeHandler>, call: F) -> Result<Value, BridgeFailure>
where
    F: FnOnce(Arc<dyn BridgeHandler>) -> Fut,
    Fut: Future<Output = Result<Value, BridgeFailure>> + Send + 'static,
{
    struct AbortOnDrop(tokio::task::AbortHandle);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }

    let task = tokio::spawn(call(handler));
    let _abort = AbortOnDrop(task.abort_handle());
    match task.await {
        Ok(outcome) => outcome,
        Err(error) => {
            tracing::error!(%error, "code mode bridge: the tool handler failed");
            Err(BridgeFailure::internal("the host failed while serving this request"))
        }
    }
}

/// Keeps only the allowed tools of a `ListToolsResult`, so a handler listing more than it lets scripts
/// call cannot advertise the rest.
fn keep_allowed_tools(mut listed: Value, allowed: &[String]) -> Result<Value, BridgeFailure> {
    let Some(tools) = listed.get_mut("tools").and_then(Value::as_array_mut) else {
        tracing::error!("code mode bridge: the handler's tool list has no `tools` array");
        return Err(BridgeFailure::internal("the host answered a malformed tool list"));
    };
    tools.retain(|tool| {
        tool.get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| allowed.iter().any(|allowed| allowed == name))
    });
    Ok(listed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn only_allowed_tools_are_listed() {
        let listed = json!({"tools": [{"name": "a"}, {"name": "b"}, {"title": "nameless"}], "nextCursor": null});
        let kept = keep_allowed_tools(listed, &["b".to_owned()]).unwrap();
        assert_eq!(kept, json!({"tools": [{"name": "b"}], "nextCursor": null}));
        assert!(keep_allowed_tools(json!([]), &[]).is_err());
    }
}
