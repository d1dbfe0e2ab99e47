//! rmcp's failures in words, for the `detail` of an [`McpError`](crate::McpError).
//!
//! Those details reach people: API error answers (`GET /mcp-servers/{name}/tools`), tool results the model
//! reads, `tool.response` events. rmcp's own `Display` is written for Rust developers: a transport error
//! names the transport's Rust type (`Transport [rmcp::transport::worker::WorkerTransport<…>] error`), and an
//! unexpected handshake answer is printed with `{:?}`, type and field names included. So the errors are
//! described here by what happened, keeping only the parts that are about the server (an HTTP status, what
//! it answered, the operating system's reason) and never a `Debug` rendering.

use std::error::Error as StdError;

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

/// A failed request on an established connection.
pub(crate) fn service_error(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(data) => format!("the server answered with error {}: {}", data.code.0, data.message),
        ServiceError::TransportSend(transport) => transport_error(transport),
        ServiceError::TransportClosed => "the connection was closed".to_owned(),
        ServiceError::UnexpectedResponse => "the server answered with a result of the wrong kind".to_owned(),
        ServiceError::Cancelled { reason } => match reason {
            Some(reason) => format!("the request was cancelled ({reason})"),
            None => "the request was cancelled".to_owned(),
        },
        ServiceError::Timeout { timeout } => format!("no answer within {}s", timeout.as_secs_f64()),
        // rmcp's remaining messages are plain sentences without type names.
        other => other.to_string(),
    }
}

/// A failed `initialize` handshake.
pub(crate) fn initialize_error(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ExpectedInitResponse(_) | ClientInitializeError::ExpectedInitResult(_) => {
            "the server did not answer the initialize request with an initialize result".to_owned()
        }
        ClientInitializeError::ConflictInitResponseId(expected, received) => {
            format!("the server answered initialize request {expected} with the id {received}")
        }
        ClientInitializeError::UncorrelatedErrorResponse { expected, received } => {
            format!("the server answered initialize request {expected} with an error for request {received}")
        }
        ClientInitializeError::ConnectionClosed(during) => {
            format!("the connection closed before the handshake finished (while waiting for the {during})")
        }
        ClientInitializeError::TransportError { error, context } => {
            format!("{} (while trying to {context})", transport_error(error))
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!(
                "the server refused to initialize with error {}: {}",
                data.code.0, data.message
            )
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            client_supported,
            server_supported,
        } => format!(
            "no MCP protocol version in common: we speak {}, the server {}",
            join(client_supported),
            join(server_supported)
        ),
        ClientInitializeError::Cancelled => "the handshake was cancelled".to_owned(),
        ClientInitializeError::LegacyFallbackFailed { discover, fallback } => format!(
            "{}; the older handshake failed too: {}",
            initialize_error(discover),
            initialize_error(fallback)
        ),
        other => other.to_string(),
    }
}

/// A transport failure without the transport's type name: the underlying error and its causes, each cause
/// added only when it says something its parent did not (reqwest's "error sending request" is explained by
/// its source, "connection refused").
pub(crate) fn transport_error(error: &DynamicTransportError) -> String {
    // rmcp keeps the HTTP client's error as a field, not as the source, which would end the chain at
    // "error sending request" without saying why.
    if let Some(StreamableHttpError::Client(client)) = error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return format!("the request could not be sent: {}", causes(client));
    }
    causes(error.error.as_ref())
}

fn causes(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !more.is_empty() && !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

fn join(versions: &[rmcp::model::ProtocolVersion]) -> String {
    if versions.is_empty() {
        return "none".to_owned();
    }
    versions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use std::any::TypeId;
    use std::time::Duration;

    use rmcp::model::{ErrorCode, ErrorData, ProtocolVersion};

    use super::*;

    /// What a person must never see: Rust paths, rmcp's enum names, `Debug` renderings.
    fn assert_plain(text: &str) {
        for leak in [
            "rmcp::",
            "trueforge_",
            "Transport [",
            "ServiceError",
            "McpError",
            "Some(",
            "ProtocolVersion(",
            "JsonRpc",
            "{ ",
        ] {
            assert!(!text.contains(leak), "{leak:?} in {text:?}");
        }
    }

    fn transport(message: &str) -> DynamicTransportError {
        DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::Worker>",
            TypeId::of::<()>(),
            Box::new(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                message.to_owned(),
            )),
        )
    }

    #[test]
    fn transport_failures_name_the_cause_not_the_transport_type() {
        // rmcp's own text, which used to reach API answers verbatim.
        let raw = ClientInitializeError::TransportError {
            error: transport("connection refused"),
            context: "send initialize request".into(),
        };
        assert!(raw.to_string().contains("rmcp::transport"), "{raw}");

        let text = initialize_error(&raw);
        assert_eq!(text, "connection refused (while trying to send initialize request)");
        assert_plain(&text);
        let text = service_error(&ServiceError::TransportSend(transport("broken pipe")));
        assert_eq!(text, "broken pipe");
    }

    #[test]
    fn handshake_failures_are_sentences_without_debug_output() {
        let errors = [
            ClientInitializeError::ExpectedInitResponse(None),
            ClientInitializeError::ExpectedInitResult(None),
            ClientInitializeError::ConnectionClosed("initialize response".to_owned()),
            ClientInitializeError::JsonRpcError(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "no such method", None)),
            ClientInitializeError::NoCompatibleProtocolVersion {
                client_supported: vec![ProtocolVersion::V_2025_06_18],
                server_supported: vec![],
            },
            ClientInitializeError::Cancelled,
        ];
        for error in &errors {
            assert_plain(&initialize_error(error));
        }
        assert_eq!(
            initialize_error(&errors[4]),
            "no MCP protocol version in common: we speak 2025-06-18, the server none"
        );
        assert_eq!(
            initialize_error(&errors[3]),
            "the server refused to initialize with error -32601: no such method"
        );
    }

    #[test]
    fn request_failures_are_sentences() {
        let errors = [
            ServiceError::McpError(ErrorData::new(ErrorCode::INVALID_PARAMS, "bad arguments", None)),
            ServiceError::TransportClosed,
            ServiceError::UnexpectedResponse,
            ServiceError::Cancelled { reason: None },
            ServiceError::Timeout {
                timeout: Duration::from_secs(3),
            },
        ];
        for error in &errors {
            assert_plain(&service_error(error));
        }
        assert_eq!(
            service_error(&errors[0]),
            "the server answered with error -32602: bad arguments"
        );
        assert_eq!(service_error(&errors[4]), "no answer within 3s");
    }
}
