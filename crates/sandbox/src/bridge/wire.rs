//! The bridge's wire format: newline-delimited JSON, one request per line, one response per line.
//!
//! Request:  `{"token": "<hex>", "id": <any>, "op": "list_tools", "server": "<name>"}`
//!           `{"token": "<hex>", "id": <any>, "op": "call_tool", "server": "<name>", "tool": "<name>",
//!             "arguments": {...}}` (`arguments` optional, an object)
//!           Either may carry the script's W3C trace context (`"traceparent"`, `"tracestate"`: strings), from
//!           the `TRACEPARENT` / `TRACESTATE` variables its command got, so its tool calls join the trace.
//! Response: `{"id": <the request's id>, "ok": true, "result": <value>}`
//!           `{"id": <the request's id or null>, "ok": false, "error": "<message>",
//!             "source": "caller" | "internal" | "transport"}`

use std::io;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::handler::{BridgeFailure, FailureSource};
use super::token::BridgeToken;

/// One operation, once the token has been checked.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum Operation {
    ListTools {
        server: String,
    },
    CallTool {
        server: String,
        tool: String,
        #[serde(default)]
        arguments: Option<Value>,
    },
}

/// The W3C trace context a request carried (strings only; anything else is ignored).
#[derive(Debug, Default)]
pub(super) struct TraceFields {
    pub(super) traceparent: Option<String>,
    pub(super) tracestate: Option<String>,
}

/// What a request line turned out to be.
pub(super) enum Parsed {
    Request {
        id: Value,
        operation: Operation,
        trace: TraceFields,
    },
    /// Not a valid request; answered with a caller error and the connection stays open.
    Invalid { id: Value, message: String },
    /// No token or a wrong one; answered and the connection closed.
    Unauthorized { id: Value },
}

/// Reads a request line. The token is taken out and checked before the rest is looked at, so a peer
/// without it learns nothing about the operations beyond "malformed" or "unauthorized".
pub(super) fn parse_request(line: &[u8], token: &BridgeToken) -> Parsed {
    let mut object = match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(object)) => object,
        Ok(_) => {
            return Parsed::Invalid {
                id: Value::Null,
                message: "malformed request: expected a JSON object".to_owned(),
            };
        }
        // serde_json's messages name a position, never the input, so nothing of the line is echoed.
        Err(error) => {
            return Parsed::Invalid {
                id: Value::Null,
                message: format!("malformed request: {error}"),
            };
        }
    };
    let id = object.remove("id").unwrap_or(Value::Null);
    let authorized = match object.remove("token") {
        Some(Value::String(presented)) => token.matches(&presented),
        _ => false,
    };
    if !authorized {
        return Parsed::Unauthorized { id };
    }
    let mut string = |name: &str| match object.remove(name) {
        Some(Value::String(value)) => Some(value),
        _ => None,
    };
    let trace = TraceFields {
        traceparent: string("traceparent"),
        tracestate: string("tracestate"),
    };
    match serde_json::from_value::<Operation>(Value::Object(object)) {
        Ok(operation) => Parsed::Request { id, operation, trace },
        Err(error) => Parsed::Invalid {
            id,
            message: format!("invalid request: {error}"),
        },
    }
}

/// The `arguments` of a call: an object, `{}` when absent or null.
pub(super) fn call_arguments(arguments: Option<Value>) -> Result<Value, BridgeFailure> {
    match arguments {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(Value::Object(object)) => Ok(Value::Object(object)),
        Some(_) => Err(BridgeFailure::caller(
            "invalid request: `arguments` must be a JSON object",
        )),
    }
}

#[derive(Serialize)]
struct Response<'a> {
    id: &'a Value,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<FailureSource>,
}

/// A response line, newline included.
pub(super) fn encode_response(id: &Value, outcome: &Result<Value, BridgeFailure>) -> Vec<u8> {
    let response = match outcome {
        Ok(result) => Response {
            id,
            ok: true,
            result: Some(result),
            error: None,
            source: None,
        },
        Err(failure) => Response {
            id,
            ok: false,
            result: None,
            error: Some(&failure.message),
            source: Some(failure.source),
        },
    };
    // Cannot fail: the fields are strings, booleans and `Value`s, whose map keys are strings. The fallback
    // is there so the script still gets a line rather than the connection hanging.
    let mut line = serde_json::to_vec(&response).unwrap_or_else(|_| {
        br#"{"id":null,"ok":false,"error":"the response could not be encoded","source":"internal"}"#.to_vec()
    });
    line.push(b'\n');
    line
}

/// How reading one line ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum LineRead {
    /// A line is in the buffer (without its newline). A last line without a newline counts too.
    Line,
    /// The peer closed the connection between lines.
    Eof,
    /// The line went past the limit; what was read of it is dropped and the rest not read.
    TooLong,
}

/// Reads one line into `line` (cleared first), holding at most `limit` bytes of it: a peer sending an
/// endless line costs `limit` bytes, not all it sends.
pub(super) async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    limit: usize,
) -> io::Result<LineRead> {
    line.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() { LineRead::Eof } else { LineRead::Line });
        }
        let (taken, complete) = match available.iter().position(|&byte| byte == b'\n') {
            Some(newline) => (newline, true),
            None => (available.len(), false),
        };
        if line.len() + taken > limit {
            line.clear();
            return Ok(LineRead::TooLong);
        }
        line.extend_from_slice(&available[..taken]);
        reader.consume(if complete { taken + 1 } else { taken });
        if complete {
            return Ok(LineRead::Line);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[tokio::test]
    async fn lines_are_split_and_bounded() {
        let input: &[u8] = b"one\ntwo\n0123456789abc\nlast";
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut line = Vec::new();
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 10).await.unwrap(),
            LineRead::Line
        );
        assert_eq!(line, b"one");
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 10).await.unwrap(),
            LineRead::Line
        );
        assert_eq!(line, b"two");
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 10).await.unwrap(),
            LineRead::TooLong
        );
        assert!(line.is_empty());

        let mut reader = tokio::io::BufReader::with_capacity(4, &b"exactly10!\nlast"[..]);
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 10).await.unwrap(),
            LineRead::Line
        );
        assert_eq!(line, b"exactly10!");
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 10).await.unwrap(),
            LineRead::Line
        );
        assert_eq!(line, b"last");
        assert_eq!(
            read_line_bounded(&mut reader, &mut line, 10).await.unwrap(),
            LineRead::Eof
        );
    }

    #[test]
    fn the_token_is_checked_before_the_operation() {
        let token = BridgeToken::generate().unwrap();
        let without = br#"{"id":1,"op":"nonsense"}"#;
        assert!(matches!(parse_request(without, &token), Parsed::Unauthorized { id } if id == 1));
        let wrong_type = br#"{"id":2,"token":5,"op":"list_tools","server":"a"}"#;
        assert!(matches!(parse_request(wrong_type, &token), Parsed::Unauthorized { .. }));
        let line = format!(r#"{{"id":"x","token":"{}","op":"nonsense"}}"#, token.as_str());
        assert!(matches!(parse_request(line.as_bytes(), &token), Parsed::Invalid { id, .. } if id == "x"));
        let line = format!(
            r#"{{"id":3,"token":"{}","op":"list_tools","server":"a"}}"#,
            token.as_str()
        );
        assert!(matches!(
            parse_request(line.as_bytes(), &token),
            Parsed::Request { operation: Operation::ListTools { server }, .. } if server == "a"
        ));
    }

    #[test]
    fn a_request_may_carry_trace_context_beside_its_operation() {
        let token = BridgeToken::generate().unwrap();
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let line = format!(
            r#"{{"id":1,"token":"{}","op":"call_tool","server":"a","tool":"t","traceparent":"{traceparent}","tracestate":"k=v"}}"#,
            token.as_str()
        );
        let Parsed::Request { operation, trace, .. } = parse_request(line.as_bytes(), &token) else {
            panic!("not parsed as a request");
        };
        assert!(matches!(operation, Operation::CallTool { tool, .. } if tool == "t"));
        assert_eq!(trace.traceparent.as_deref(), Some(traceparent));
        assert_eq!(trace.tracestate.as_deref(), Some("k=v"));
        // Not strings: ignored, and the operation is still read (its fields stay strict).
        let line = format!(
            r#"{{"id":2,"token":"{}","op":"list_tools","server":"a","traceparent":7}}"#,
            token.as_str()
        );
        let Parsed::Request { trace, .. } = parse_request(line.as_bytes(), &token) else {
            panic!("not parsed as a request");
        };
        assert_eq!(trace.traceparent, None);
        let line = format!(
            r#"{{"id":3,"token":"{}","op":"list_tools","server":"a","extra":1}}"#,
            token.as_str()
        );
        assert!(matches!(parse_request(line.as_bytes(), &token), Parsed::Invalid { .. }));
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(call_arguments(None).unwrap(), serde_json::json!({}));
        assert_eq!(call_arguments(Some(Value::Null)).unwrap(), serde_json::json!({}));
        assert!(call_arguments(Some(serde_json::json!([1]))).is_err());
    }
}
