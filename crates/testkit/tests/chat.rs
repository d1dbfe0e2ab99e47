//! The Chat Completions side of the fake server: exact stream bytes and error bodies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{ask, body, events, payloads, post, url};
use serde_json::json;
use trueforge_testkit::fake_llm::{
    Api, FakeLlm, ScriptedError, ScriptedFinish, ScriptedStream, ScriptedToolCall, ScriptedUsage,
};

fn usage() -> ScriptedUsage {
    ScriptedUsage {
        input_tokens: 12,
        output_tokens: 5,
        cache_read_tokens: 4,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
    }
}

#[tokio::test]
async fn chat_text_stream_matches_the_wire_bytes() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("Hello world").chunks(2).usage(usage()));

    let reply = ask(&server, Api::Chat, "hi").await;

    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream; charset=utf-8"));
    let head = r#"data: {"id":"chatcmpl-fake-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":"#;
    let expected = [
        format!(r#"{head}[{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}],"usage":null}}"#),
        format!(r#"{head}[{{"index":0,"delta":{{"content":"Hello "}},"logprobs":null,"finish_reason":null}}],"usage":null}}"#),
        format!(r#"{head}[{{"index":0,"delta":{{"content":"world"}},"logprobs":null,"finish_reason":null}}],"usage":null}}"#),
        format!(r#"{head}[{{"index":0,"delta":{{}},"logprobs":null,"finish_reason":"stop"}}],"usage":null}}"#),
        format!(
            r#"{head}[],"usage":{{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{{"cached_tokens":4}},"completion_tokens_details":{{"reasoning_tokens":0}}}}}}"#
        ),
        "data: [DONE]".to_owned(),
    ]
    .map(|event| event + "\n\n")
    .concat();
    assert_eq!(reply.body, expected);
}

#[tokio::test]
async fn chat_usage_chunk_and_usage_fields_are_absent_without_include_usage() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("Hi").usage(usage()));
    let mut request = body(Api::Chat, "hi");
    request.as_object_mut().unwrap().remove("stream_options");

    let reply = post(&url(&server, Api::Chat, "gpt-test"), &request).await;

    assert!(!reply.body.contains("usage"), "{}", reply.body);
    assert!(
        reply
            .body
            .ends_with("\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
    );
}

#[tokio::test]
async fn chat_parallel_tool_calls_stream_ids_names_then_argument_chunks() {
    let server = FakeLlm::start().await;
    server.push(
        ScriptedStream::default()
            .tool_call(ScriptedToolCall::new("read_file", json!({"path": "a.txt"})))
            .tool_call(ScriptedToolCall::new("list", json!({})).with_id("call_custom"))
            .chunks(2),
    );

    let reply = ask(&server, Api::Chat, "go").await;

    let deltas: Vec<_> = payloads(Api::Chat, &reply.body)
        .into_iter()
        .filter_map(|chunk| chunk["choices"][0]["delta"].get("tool_calls").cloned())
        .collect();
    assert_eq!(
        deltas,
        [
            json!([{"index": 0, "id": "call_fake_1_0", "type": "function", "function": {"name": "read_file", "arguments": ""}}]),
            json!([{"index": 0, "function": {"arguments": "{\"path\":"}}]),
            json!([{"index": 0, "function": {"arguments": "\"a.txt\"}"}}]),
            json!([{"index": 1, "id": "call_custom", "type": "function", "function": {"name": "list", "arguments": ""}}]),
            json!([{"index": 1, "function": {"arguments": "{"}}]),
            json!([{"index": 1, "function": {"arguments": "}"}}]),
        ]
    );
    assert!(reply.body.contains(r#""finish_reason":"tool_calls""#));
    assert_eq!(Api::Chat.tool_call_id(1, 0).as_deref(), Some("call_fake_1_0"));
}

#[tokio::test]
async fn chat_reasoning_streams_as_reasoning_content_before_the_text() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("Answer").reasoning("Let me think"));

    let reply = ask(&server, Api::Chat, "hi").await;

    let deltas: Vec<_> = payloads(Api::Chat, &reply.body)
        .into_iter()
        .filter(|chunk| !chunk["choices"].as_array().unwrap().is_empty())
        .map(|chunk| chunk["choices"][0]["delta"].clone())
        .collect();
    assert_eq!(deltas[1], json!({"reasoning_content": "Let me think"}));
    assert_eq!(deltas[2], json!({"content": "Answer"}));
}

#[tokio::test]
async fn chat_finish_reasons_length_and_content_filter_stay_distinct() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("cut").finish(ScriptedFinish::Length));
    server.push(ScriptedStream::text("no").finish(ScriptedFinish::ContentFilter));

    let length = ask(&server, Api::Chat, "a").await;
    let filtered = ask(&server, Api::Chat, "b").await;

    assert!(length.body.contains(r#""finish_reason":"length""#));
    assert!(filtered.body.contains(r#""finish_reason":"content_filter""#));
}

#[tokio::test]
async fn chat_usage_reports_cached_and_reasoning_tokens() {
    let server = FakeLlm::start().await;
    let usage = ScriptedUsage {
        input_tokens: 100,
        output_tokens: 30,
        cache_read_tokens: 60,
        cache_write_tokens: 10,
        reasoning_tokens: 20,
    };
    server.push(ScriptedStream::text("x").reasoning("y").usage(usage));

    let reply = ask(&server, Api::Chat, "hi").await;

    let last = payloads(Api::Chat, &reply.body).pop().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(
        last["usage"],
        json!({"prompt_tokens": 100, "completion_tokens": 30, "total_tokens": 130,
               "prompt_tokens_details": {"cached_tokens": 60},
               "completion_tokens_details": {"reasoning_tokens": 20}})
    );
}

#[tokio::test]
async fn chat_error_429_has_retry_after_and_the_openai_error_body() {
    let server = FakeLlm::start().await;
    server.push(ScriptedError::status(429).retry_after(7).message("slow down"));

    let reply = ask(&server, Api::Chat, "hi").await;

    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after"), Some("7"));
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(
        reply.body,
        r#"{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#
    );
}

#[tokio::test]
async fn chat_error_code_override_names_context_length_exceeded() {
    let server = FakeLlm::start().await;
    server.push(ScriptedError::status(400).code("context_length_exceeded"));

    let reply = ask(&server, Api::Chat, "hi").await;

    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["code"], "context_length_exceeded");
    assert_eq!(reply.json()["error"]["type"], "invalid_request_error");
    assert_eq!(reply.header("retry-after"), None);
}

#[tokio::test]
async fn chat_stream_error_ends_with_an_error_chunk_and_no_done() {
    let server = FakeLlm::start().await;
    let mut stream = ScriptedStream::text("partial");
    stream.stream_error = Some(ScriptedError::status(500).message("model crashed"));
    server.push(stream);

    let reply = ask(&server, Api::Chat, "hi").await;

    let events = events(Api::Chat, &reply.body);
    assert_eq!(
        events.last().unwrap(),
        r#"data: {"error":{"message":"model crashed","type":"server_error","param":null,"code":null}}"#
    );
    assert!(!reply.body.contains("[DONE]"));
}
