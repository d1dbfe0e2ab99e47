#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Gemini adapter through its public interface: `WireFormat::build_request`, the decoder, error
//! classification and the `Assembler`. Streams come from fixtures under `fixtures/gemini/`, raw SSE text
//! whose first line (`#`) says where it comes from.

mod chunking;
mod decode;
mod errors;
mod replay;
mod request;

use crate::wire_support;
use crate::wire_support::{parse_sse, parse_sse_chunks};
use trueforge_llm::{GeminiWire, LlmError, ModelResponse, SseEvent, StreamEvent};

/// A fixture's SSE text (CRLF-framed, as Google sends it), without its header comment line.
pub fn fixture(name: &str) -> String {
    wire_support::fixture("gemini", name)
}

/// Every event a fresh Gemini decoder yields for `events`, and how the stream ended (`finish`, or the
/// first error).
pub fn decode_events(events: &[SseEvent]) -> (Vec<StreamEvent>, Result<(), LlmError>) {
    wire_support::decode_until_error(&GeminiWire, events)
}

pub fn decode_fixture(name: &str) -> (Vec<StreamEvent>, Result<(), LlmError>) {
    decode_events(&parse_sse(&fixture(name)))
}

/// The assembled answer of a stream, or the error that ended it.
pub fn assemble(events: &[SseEvent]) -> Result<ModelResponse, LlmError> {
    wire_support::assemble(&wire_support::decode_all(&GeminiWire, events)?)
}

pub fn assemble_fixture(name: &str) -> Result<ModelResponse, LlmError> {
    assemble(&parse_sse(&fixture(name)))
}

/// The crate's SSE parser, which the Gemini tests feed CRLF-framed text, reads `event:` names, `:` comments
/// and multi-line `data:` with CRLF line ends, in one piece or byte by byte (a CRLF cut in two), and drops an
/// event left open when the stream ends.
#[test]
fn gemini_sse_splitter_reads_fields_comments_and_multiline_data() {
    let text = ": keep-alive\r\nevent: ping\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata:x\n\ndata: open";
    let events = parse_sse(text);
    assert_eq!(
        events,
        vec![
            SseEvent {
                event: "ping".into(),
                data: "{\"a\":\n1}".into()
            },
            SseEvent {
                event: String::new(),
                data: "x".into()
            },
        ]
    );
    assert_eq!(parse_sse_chunks(text.as_bytes().chunks(1)).unwrap(), events);
}
