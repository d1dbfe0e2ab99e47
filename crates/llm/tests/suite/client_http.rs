#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The model client over HTTP: what it sends, how it reads server-sent events.

use std::convert::Infallible;

use crate::client_support::*;
use bytes::Bytes;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trueforge_llm::sse::sse_events;
use trueforge_llm::{FinishReason, LlmError, SseEvent, StreamEvent};

#[tokio::test]
async fn client_sends_the_adapter_request_with_endpoint_headers() {
    let server = ScriptedServer::start(vec![Reply::text(&["ok"])]).await;
    server
        .client(quick_options())
        .complete(&hello_request(), CancellationToken::new())
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/stream");
    assert_eq!(request.body, serde_json::json!({"model": "test-model", "messages": 1}));
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    };
    assert_eq!(header("authorization").as_deref(), Some("Bearer test-key"));
    assert_eq!(header("x-extra").as_deref(), Some("endpoint-header"));
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    assert_eq!(header("accept").as_deref(), Some("text/event-stream"));
}

#[tokio::test]
async fn client_streams_text_in_order_and_ends_after_the_decoder_finishes() {
    let server = ScriptedServer::start(vec![Reply::text(&["one ", "two ", "three"])]).await;
    let stream = server
        .client(quick_options())
        .stream(&hello_request(), CancellationToken::new())
        .await
        .unwrap();
    let items = drain(stream).await;
    let texts = ["one ", "two ", "three"].map(|text| Ok(StreamEvent::TextDelta { text: text.to_owned() }));
    let mut expected = texts.to_vec();
    expected.push(Ok(StreamEvent::Finish {
        reason: FinishReason::Stop,
    }));
    assert_eq!(items, expected);
}

#[tokio::test]
async fn client_error_when_the_body_is_not_an_event_stream_answer() {
    // A server ignoring the streaming request answers with one JSON document: no end marker ever comes.
    let server = ScriptedServer::start(vec![Reply::frames(vec!["{\"choices\":[]}".to_owned()])]).await;
    let mut options = quick_options();
    options.retry.max_attempts = 1;
    let error = server
        .client(options)
        .complete(&hello_request(), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error, LlmError::StreamCutShort);
}

async fn parse(chunks: Vec<&'static [u8]>) -> Vec<Result<SseEvent, LlmError>> {
    let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>));
    sse_events(body).collect().await
}

fn event(name: &str, data: &str) -> Result<SseEvent, LlmError> {
    Ok(SseEvent {
        event: name.to_owned(),
        data: data.to_owned(),
    })
}

#[tokio::test]
async fn client_sse_events_keep_names_and_join_data_lines_across_chunks() {
    let events = parse(vec![
        b"event: message_start\ndata: {\"a\"",
        b":1}\n\n: keep-alive comment\n\ndata: first line\ndata: second line\n\n",
        b"event: ping\r\ndata: {}\r\n\r\n",
    ])
    .await;
    assert_eq!(
        events,
        vec![
            event("message_start", "{\"a\":1}"),
            event("", "first line\nsecond line"),
            event("ping", "{}"),
        ]
    );
}

#[tokio::test]
async fn client_sse_events_drop_an_unterminated_last_event() {
    let events = parse(vec![b"data: complete\n\ndata: never termin"]).await;
    assert_eq!(events, vec![event("", "complete")]);
}

#[tokio::test]
async fn client_sse_error_on_invalid_utf8() {
    let events = parse(vec![b"data: \xff\xfe\n\n"]).await;
    assert!(matches!(events.as_slice(), [Err(LlmError::Protocol(_))]), "{events:?}");
}

#[tokio::test]
async fn client_sse_transport_error_is_a_connect_error() {
    let body = futures::stream::iter(vec![Ok(&b"data: a\n\n"[..]), Err("connection reset")]);
    let events: Vec<_> = sse_events(body).collect().await;
    assert_eq!(events[0], event("", "a"));
    assert!(matches!(&events[1], Err(LlmError::Connect(message)) if message.contains("connection reset")));
}

/// An SSE body with event names, multi-line data, comments, CRLF and non-ASCII text.
const SSE_BODY: &str = "event: start\ndata: {\"n\":1}\n\n: comment\n\ndata: caf\u{e9} \u{1f980}\ndata: line two\n\n\
event: delta\r\ndata: {\"text\":\"\u{fc}ber\"}\r\n\r\ndata: [DONE]\n\n";

proptest::proptest! {
    #[test]
    fn client_sse_events_are_the_same_for_any_chunking(cuts in proptest::collection::vec(0..SSE_BODY.len(), 0..12)) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        cuts.dedup();
        let bytes = SSE_BODY.as_bytes();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in cuts.into_iter().chain([bytes.len()]) {
            // Cuts may split a multi-byte character: the parser must join the bytes again.
            chunks.push(Bytes::copy_from_slice(&bytes[start..cut]));
            start = cut;
        }
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>));
        let events: Vec<_> = runtime.block_on(sse_events(body).collect());
        proptest::prop_assert_eq!(
            events,
            vec![
                event("start", "{\"n\":1}"),
                event("", "caf\u{e9} \u{1f980}\nline two"),
                event("delta", "{\"text\":\"\u{fc}ber\"}"),
                event("", "[DONE]"),
            ]
        );
    }
}

#[tokio::test]
async fn client_http_error_body_is_read_up_to_a_bound() {
    let huge = "x".repeat(4 * 1024 * 1024);
    let server = ScriptedServer::start(vec![Reply::status(400, &huge)]).await;
    let error = server
        .client(quick_options())
        .complete(&hello_request(), CancellationToken::new())
        .await
        .unwrap_err();
    let LlmError::BadRequest { message, .. } = error else {
        panic!("{error:?}")
    };
    assert!(
        message.len() <= 64 * 1024,
        "kept {} bytes of the error body",
        message.len()
    );
    assert!(message.starts_with("xxxx"));
}
