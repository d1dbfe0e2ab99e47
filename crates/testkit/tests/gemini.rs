//! The Gemini side of the fake server: exact stream bytes (CRLF framing, Google's JSON spacing), function
//! calls, thought signatures and error bodies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{ask, body, events, payloads, post, url};
use serde_json::json;
use trueforge_testkit::fake_llm::{
    Api, FakeLlm, ScriptedError, ScriptedFinish, ScriptedStream, ScriptedToolCall, ScriptedUsage,
};

#[tokio::test]
async fn gemini_text_stream_matches_the_wire_bytes() {
    let server = FakeLlm::start().await;
    let usage = ScriptedUsage {
        input_tokens: 11,
        output_tokens: 4,
        ..ScriptedUsage::default()
    };
    server.push(ScriptedStream::text("Paris!").chunks(2).usage(usage));

    let reply = ask(&server, Api::Gemini, "Capital of France?").await;

    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let expected = concat!(
        r#"data: {"candidates": [{"content": {"parts": [{"text": "Par"}],"role": "model"},"index": 0}],"modelVersion": "gemini-test","responseId": "fake-1"}"#,
        "\r\n\r\n",
        r#"data: {"candidates": [{"content": {"parts": [{"text": "is!"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 11,"candidatesTokenCount": 4,"totalTokenCount": 15},"modelVersion": "gemini-test","responseId": "fake-1"}"#,
        "\r\n\r\n",
    );
    assert_eq!(reply.body, expected);
}

#[tokio::test]
async fn gemini_reasoning_streams_thought_parts_and_ends_with_a_thought_signature() {
    let server = FakeLlm::start().await;
    let usage = ScriptedUsage {
        input_tokens: 10,
        output_tokens: 30,
        cache_read_tokens: 4,
        cache_write_tokens: 0,
        reasoning_tokens: 20,
    };
    server.push(ScriptedStream::text("Yes.").reasoning("Considering").usage(usage));

    let reply = ask(&server, Api::Gemini, "hi").await;

    let chunks = payloads(Api::Gemini, &reply.body);
    let parts: Vec<_> = chunks
        .iter()
        .map(|chunk| chunk["candidates"][0]["content"]["parts"].clone())
        .collect();
    assert_eq!(
        parts,
        [
            json!([{"text": "Considering", "thought": true}]),
            json!([{"text": "Yes."}]),
            json!([{"text": "", "thoughtSignature": "sig_fake_1"}]),
        ]
    );
    assert_eq!(
        chunks[2]["usageMetadata"],
        json!({"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 40,
               "cachedContentTokenCount": 4, "thoughtsTokenCount": 20})
    );
}

#[tokio::test]
async fn gemini_parallel_tool_calls_share_one_chunk_with_the_signature_on_the_first() {
    let server = FakeLlm::start().await;
    server.push(
        ScriptedStream::default()
            .reasoning("Need data")
            .tool_call(ScriptedToolCall::new("weather", json!({"city": "Oslo"})))
            .tool_call(ScriptedToolCall::new("time", json!({})).with_id("given-id")),
    );

    let reply = ask(&server, Api::Gemini, "hi").await;

    let last = payloads(Api::Gemini, &reply.body).pop().unwrap();
    assert_eq!(
        last["candidates"][0]["content"]["parts"],
        json!([
            {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}, "thoughtSignature": "sig_fake_1"},
            {"functionCall": {"id": "given-id", "name": "time", "args": {}}}
        ])
    );
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert!(reply.body.contains(
        r#"{"functionCall": {"name": "weather","args": {"city": "Oslo"}},"thoughtSignature": "sig_fake_1"}"#
    ));
    assert_eq!(Api::Gemini.tool_call_id(1, 0), None);
}

#[tokio::test]
async fn gemini_finish_reasons_map_to_max_tokens_and_safety() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("a").finish(ScriptedFinish::Length));
    server.push(ScriptedStream::text("b").finish(ScriptedFinish::ContentFilter));

    let length = ask(&server, Api::Gemini, "a").await;
    let safety = ask(&server, Api::Gemini, "b").await;

    assert!(length.body.contains(r#""finishReason": "MAX_TOKENS""#));
    assert!(safety.body.contains(r#""finishReason": "SAFETY""#));
}

#[tokio::test]
async fn gemini_error_429_is_resource_exhausted_with_retry_info() {
    let server = FakeLlm::start().await;
    server.push(ScriptedError::status(429).retry_after(36).message("Quota exceeded"));

    let reply = ask(&server, Api::Gemini, "hi").await;

    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after"), Some("36"));
    let expected = r#"{
  "error": {
    "code": 429,
    "message": "Quota exceeded",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": "36s"
      }
    ]
  }
}"#;
    assert_eq!(reply.body, expected);
}

#[tokio::test]
async fn gemini_stream_error_is_an_error_object_in_a_data_frame() {
    let server = FakeLlm::start().await;
    let mut stream = ScriptedStream::text("partial");
    stream.stream_error = Some(ScriptedError::status(503).message("high demand"));
    server.push(stream);

    let reply = ask(&server, Api::Gemini, "hi").await;

    let events = events(Api::Gemini, &reply.body);
    assert_eq!(
        events.last().unwrap(),
        r#"data: {"error": {"code": 503,"message": "high demand","status": "UNAVAILABLE"}}"#
    );
    assert!(!reply.body.contains("finishReason"));
}

#[tokio::test]
async fn gemini_error_400_for_the_non_streaming_method_or_missing_alt_sse() {
    let server = FakeLlm::start().await;
    let base = server.base_url(Api::Gemini);
    let request = body(Api::Gemini, "hi");

    let unary = post(&format!("{base}/models/gemini-test:generateContent"), &request).await;
    let no_sse = post(&format!("{base}/models/gemini-test:streamGenerateContent"), &request).await;

    assert_eq!(unary.status, 400);
    assert_eq!(unary.json()["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(no_sse.status, 400);
    assert_eq!(no_sse.json()["error"]["message"], "fake-llm streams only with alt=sse");
    assert_eq!(server.pending(), 0);
}

#[tokio::test]
async fn gemini_model_comes_from_the_path() {
    let server = FakeLlm::start().await;

    let reply = post(&url(&server, Api::Gemini, "gemini-2.5-pro"), &body(Api::Gemini, "hi")).await;

    assert_eq!(payloads(Api::Gemini, &reply.body)[0]["modelVersion"], "gemini-2.5-pro");
}
