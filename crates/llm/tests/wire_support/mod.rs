//! Shared plumbing of the wire adapter tests (`chat_wire`, `responses_wire`, `anthropic_wire`, `gemini_wire`):
//! fixtures, SSE parsed by the crate's own parser (`trueforge_llm::sse::sse_events`, the one the client runs
//! every response body through), decoding with an adapter, assembling with the `Assembler`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;

use futures::{FutureExt, StreamExt};
use proptest::sample::Index;
use serde_json::Value;
use trueforge_llm::sse::sse_events;
use trueforge_llm::{
    Assembler, BodyCache, Endpoint, HttpRequest, LlmError, Message, ModelRequest, ModelResponse, SseEvent, StreamEvent,
    WireFormat,
};

/// The fixture `tests/fixtures/<dir>/<file>` as its `#` header line(s) and the SSE text after them. The text
/// is the file's bytes as they are (a CRLF-framed fixture stays CRLF).
pub fn fixture_parts(dir: &str, file: &str) -> (String, String) {
    let path = format!("{}/tests/fixtures/{dir}/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let mut header_end = 0;
    while text[header_end..].starts_with('#') {
        header_end = text[header_end..]
            .find('\n')
            .map_or(text.len(), |end| header_end + end + 1);
    }
    assert!(header_end > 0, "{path} must start with its `#` source note");
    let (header, body) = text.split_at(header_end);
    (header.to_owned(), body.to_owned())
}

/// The SSE text of the fixture `tests/fixtures/<dir>/<file>`, without its `#` header line(s).
pub fn fixture(dir: &str, file: &str) -> String {
    fixture_parts(dir, file).1
}

/// The JSON body of a built request, parsed back: adapters hand the client serialised bytes.
pub fn json_body(request: &HttpRequest) -> Value {
    serde_json::from_slice(&request.body).expect("an adapter's body is JSON")
}

/// Parses a body that arrives in `chunks` with the crate's SSE parser: the first parser error, or every
/// event (an event left open when the body ends is dropped, as the SSE standard says).
pub fn parse_sse_chunks<C: AsRef<[u8]>>(chunks: impl IntoIterator<Item = C>) -> Result<Vec<SseEvent>, LlmError> {
    let body: Vec<Result<Vec<u8>, Infallible>> = chunks.into_iter().map(|chunk| Ok(chunk.as_ref().to_vec())).collect();
    sse_events(futures::stream::iter(body))
        .collect::<Vec<_>>()
        .now_or_never()
        .expect("an in-memory body never waits")
        .into_iter()
        .collect()
}

/// `bytes` cut at `cuts` (sorted byte offsets up to `bytes.len()`, anywhere, even inside a UTF-8 character).
pub fn chunks_at<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for &end in cuts.iter().chain([bytes.len()].iter()) {
        chunks.push(&bytes[start..end]);
        start = end;
    }
    chunks
}

/// Sorted byte offsets into a text of `len` bytes, one a pick (0 and `len` included).
pub fn cut_offsets(len: usize, picks: &[Index]) -> Vec<usize> {
    let mut cuts: Vec<usize> = picks.iter().map(|pick| pick.index(len + 1)).collect();
    cuts.sort_unstable();
    cuts
}

/// The events of SSE `text` cut into chunks at `cuts` (see [`chunks_at`]).
pub fn parse_sse_chunked(text: &str, cuts: &[usize]) -> Vec<SseEvent> {
    parse_sse_chunks(chunks_at(text.as_bytes(), cuts)).expect("the SSE text parses")
}

/// The events of SSE `text` delivered whole.
pub fn parse_sse(text: &str) -> Vec<SseEvent> {
    parse_sse_chunked(text, &[])
}

/// Every event a fresh decoder of `wire` yields for `events`, and how the stream ended (`finish`, or the first
/// error).
pub fn decode_until_error(wire: &dyn WireFormat, events: &[SseEvent]) -> (Vec<StreamEvent>, Result<(), LlmError>) {
    let mut decoder = wire.decoder();
    let mut out = Vec::new();
    for event in events {
        match decoder.decode(event) {
            Ok(decoded) => out.extend(decoded),
            Err(error) => return (out, Err(error)),
        }
    }
    match decoder.finish() {
        Ok(last) => {
            out.extend(last);
            (out, Ok(()))
        }
        Err(error) => (out, Err(error)),
    }
}

/// Every event a fresh decoder of `wire` yields for `events`, its end-of-stream events included, or the
/// first error.
pub fn decode_all(wire: &dyn WireFormat, events: &[SseEvent]) -> Result<Vec<StreamEvent>, LlmError> {
    let (decoded, end) = decode_until_error(wire, events);
    end.map(|()| decoded)
}

/// SSE `text`, cut into chunks at `cuts`, through the crate's parser and a fresh decoder of `wire`.
pub fn decode_chunked(wire: &dyn WireFormat, text: &str, cuts: &[usize]) -> Result<Vec<StreamEvent>, LlmError> {
    decode_all(wire, &parse_sse_chunked(text, cuts))
}

/// The answer the `Assembler` builds from `events`.
pub fn assemble(events: &[StreamEvent]) -> Result<ModelResponse, LlmError> {
    let mut assembler = Assembler::new();
    for event in events {
        assembler.push(event)?;
    }
    assembler.finish()
}

/// SSE `text`, cut into chunks at `cuts`, parsed, decoded by `wire` and assembled.
pub fn assemble_chunked(wire: &dyn WireFormat, text: &str, cuts: &[usize]) -> Result<ModelResponse, LlmError> {
    assemble(&decode_chunked(wire, text, cuts)?)
}

/// Builds `request` with `cache` through `wire` and checks the body is the one built without a cache;
/// returns it parsed.
pub fn body_with_cache(wire: &dyn WireFormat, endpoint: &Endpoint, request: &ModelRequest, cache: &BodyCache) -> Value {
    let cached = ModelRequest {
        body_cache: cache.clone(),
        ..request.clone()
    };
    let from_cache = wire.build_request(endpoint, &cached).unwrap().body;
    let afresh = wire.build_request(endpoint, request).unwrap().body;
    assert_eq!(String::from_utf8_lossy(&from_cache), String::from_utf8_lossy(&afresh));
    serde_json::from_slice(&from_cache).unwrap()
}

/// A request of one user message.
pub fn user_request(text: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user_text(text)],
        ..ModelRequest::default()
    }
}
