//! The Anthropic Messages side of the fake server: exact stream bytes, blocks and error bodies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{ask, body, events, payloads, post, url};
use serde_json::json;
use trueforge_testkit::fake_llm::{
    Api, FakeLlm, ScriptedError, ScriptedFinish, ScriptedStream, ScriptedToolCall, ScriptedUsage,
};

#[tokio::test]
async fn anthropic_text_stream_matches_the_wire_bytes() {
    let server = FakeLlm::start().await;
    let usage = ScriptedUsage {
        input_tokens: 25,
        output_tokens: 15,
        ..ScriptedUsage::default()
    };
    server.push(ScriptedStream::text("Hello!").chunks(2).usage(usage));

    let reply = ask(&server, Api::Anthropic, "hi").await;

    assert_eq!(reply.header("content-type"), Some("text/event-stream; charset=utf-8"));
    assert_eq!(reply.header("request-id"), Some("req_fake_1"));
    let expected = concat!(
        "event: message_start\n",
        r#"data: {"type":"message_start","message":{"id":"msg_fake_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#,
        "\n\n",
        "event: content_block_start\n",
        r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        "\n\n",
        "event: ping\n",
        r#"data: {"type": "ping"}"#,
        "\n\n",
        "event: content_block_delta\n",
        r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
        "\n\n",
        "event: content_block_delta\n",
        r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo!"}}"#,
        "\n\n",
        "event: content_block_stop\n",
        r#"data: {"type":"content_block_stop","index":0}"#,
        "\n\n",
        "event: message_delta\n",
        r#"data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":15}}"#,
        "\n\n",
        "event: message_stop\n",
        r#"data: {"type":"message_stop"}"#,
        "\n\n",
    );
    assert_eq!(reply.body, expected);
}

#[tokio::test]
async fn anthropic_reasoning_is_a_thinking_block_with_a_signature_delta() {
    let server = FakeLlm::start().await;
    let mut stream = ScriptedStream::text("Answer").reasoning("Hmm, let me see").chunks(2);
    stream.reasoning_signature = Some("EqQBCgIYAhIM".to_owned());
    stream.redacted_reasoning = Some("opaque-redacted".to_owned());
    server.push(stream);

    let reply = ask(&server, Api::Anthropic, "hi").await;

    let events = payloads(Api::Anthropic, &reply.body);
    let blocks: Vec<_> = events
        .iter()
        .filter(|event| event["type"] == "content_block_start")
        .map(|event| (event["index"].clone(), event["content_block"].clone()))
        .collect();
    assert_eq!(
        blocks,
        [
            (
                json!(0),
                json!({"type": "redacted_thinking", "data": "opaque-redacted"})
            ),
            (json!(1), json!({"type": "thinking", "thinking": "", "signature": ""})),
            (json!(2), json!({"type": "text", "text": ""})),
        ]
    );
    let thinking: Vec<_> = events
        .iter()
        .filter(|event| event["type"] == "content_block_delta" && event["index"] == 1)
        .map(|event| event["delta"].clone())
        .collect();
    assert_eq!(
        thinking,
        [
            json!({"type": "thinking_delta", "thinking": "Hmm, let"}),
            json!({"type": "thinking_delta", "thinking": " me see"}),
            json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        ]
    );
}

#[tokio::test]
async fn anthropic_parallel_tool_calls_are_tool_use_blocks_with_input_json_deltas() {
    let server = FakeLlm::start().await;
    server.push(
        ScriptedStream::text("Checking.")
            .tool_call(ScriptedToolCall::new("weather", json!({"city": "Oslo"})))
            .tool_call(ScriptedToolCall::new("time", json!({})).with_id("toolu_given")),
    );

    let reply = ask(&server, Api::Anthropic, "hi").await;

    let events = payloads(Api::Anthropic, &reply.body);
    let starts: Vec<_> = events
        .iter()
        .filter(|event| event["type"] == "content_block_start")
        .map(|event| event["content_block"].clone())
        .collect();
    assert_eq!(
        starts[1..],
        [
            json!({"type": "tool_use", "id": "toolu_fake_1_0", "name": "weather", "input": {}}),
            json!({"type": "tool_use", "id": "toolu_given", "name": "time", "input": {}}),
        ]
    );
    let inputs: Vec<_> = events
        .iter()
        .filter(|event| event["delta"]["type"] == "input_json_delta")
        .map(|event| {
            (
                event["index"].as_u64().unwrap(),
                event["delta"]["partial_json"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(inputs, [(1, ""), (1, "{\"city\":\"Oslo\"}"), (2, ""), (2, "{}")]);
    assert_eq!(events[events.len() - 2]["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn anthropic_usage_splits_cache_reads_and_writes_out_of_input_tokens() {
    let server = FakeLlm::start().await;
    let usage = ScriptedUsage {
        input_tokens: 1000,
        output_tokens: 50,
        cache_read_tokens: 700,
        cache_write_tokens: 200,
        reasoning_tokens: 0,
    };
    server.push(ScriptedStream::text("x").usage(usage));

    let reply = ask(&server, Api::Anthropic, "hi").await;

    let events = payloads(Api::Anthropic, &reply.body);
    let expected = json!({"input_tokens": 100, "cache_creation_input_tokens": 200,
                          "cache_read_input_tokens": 700, "output_tokens": 50});
    assert_eq!(events[events.len() - 2]["usage"], expected);
    assert_eq!(events[0]["message"]["usage"]["cache_read_input_tokens"], 700);
}

#[tokio::test]
async fn anthropic_finish_reasons_map_to_stop_reasons() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("a").finish(ScriptedFinish::Length));
    server.push(ScriptedStream::text("b").finish(ScriptedFinish::ContentFilter));

    let length = ask(&server, Api::Anthropic, "a").await;
    let refusal = ask(&server, Api::Anthropic, "b").await;

    assert!(length.body.contains(r#""stop_reason":"max_tokens""#));
    assert!(refusal.body.contains(r#""stop_reason":"refusal""#));
}

#[tokio::test]
async fn anthropic_error_529_is_an_overloaded_error() {
    let server = FakeLlm::start().await;
    server.push(ScriptedError::status(529));

    let reply = ask(&server, Api::Anthropic, "hi").await;

    assert_eq!(reply.status, 529);
    assert_eq!(
        reply.body,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake_1"}"#
    );
}

#[tokio::test]
async fn anthropic_error_429_carries_retry_after() {
    let server = FakeLlm::start().await;
    server.push(ScriptedError::status(429).retry_after(30));

    let reply = ask(&server, Api::Anthropic, "hi").await;

    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after"), Some("30"));
    assert_eq!(reply.json()["error"]["type"], "rate_limit_error");
}

#[tokio::test]
async fn anthropic_stream_error_is_an_error_event_without_message_stop() {
    let server = FakeLlm::start().await;
    let mut stream = ScriptedStream::text("partial");
    stream.stream_error = Some(ScriptedError::status(529));
    server.push(stream);

    let reply = ask(&server, Api::Anthropic, "hi").await;

    let events = events(Api::Anthropic, &reply.body);
    assert_eq!(
        events.last().unwrap(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"
    );
    assert!(!reply.body.contains("message_stop"));
}

#[tokio::test]
async fn anthropic_error_400_when_max_tokens_is_missing() {
    let server = FakeLlm::start().await;
    let mut request = body(Api::Anthropic, "hi");
    request.as_object_mut().unwrap().remove("max_tokens");

    let reply = post(&url(&server, Api::Anthropic, "claude-test"), &request).await;

    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["type"], "invalid_request_error");
    assert_eq!(reply.json()["error"]["message"], "max_tokens: field required");
}

#[tokio::test]
async fn anthropic_empty_answer_still_pings_and_stops() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::default());

    let reply = ask(&server, Api::Anthropic, "hi").await;

    let kinds: Vec<_> = payloads(Api::Anthropic, &reply.body)
        .iter()
        .map(|event| event["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["message_start", "ping", "message_delta", "message_stop"]);
}
