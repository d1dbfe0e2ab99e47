//! The OpenAI Responses side of the fake server: exact stream bytes, event sequence and error bodies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{ask, body, events, payloads, post, url};
use serde_json::{Value, json};
use trueforge_testkit::fake_llm::{
    Api, FakeLlm, ScriptedError, ScriptedFinish, ScriptedStream, ScriptedToolCall, ScriptedUsage,
};

fn event_types(body: &str) -> Vec<String> {
    payloads(Api::Responses, body)
        .iter()
        .map(|event| event["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn responses_text_stream_matches_the_wire_bytes() {
    let server = FakeLlm::start().await;
    let usage = ScriptedUsage {
        input_tokens: 20,
        output_tokens: 3,
        cache_read_tokens: 8,
        ..ScriptedUsage::default()
    };
    server.push(ScriptedStream::text("Hi there").chunks(2).usage(usage));

    let reply = ask(&server, Api::Responses, "hello").await;

    assert_eq!(reply.header("content-type"), Some("text/event-stream; charset=utf-8"));
    let response = |status: &str, output: &str, usage: &str, tier: &str| {
        format!(
            r#"{{"id":"resp_fake_1","object":"response","created_at":1700000000,"status":"{status}","background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"max_tool_calls":null,"model":"gpt-test","output":[{output}],"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":null,"reasoning":{{"effort":null,"summary":null}},"safety_identifier":null,"service_tier":"{tier}","store":false,"temperature":1.0,"text":{{"format":{{"type":"text"}}}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":{usage},"user":null,"metadata":{{}}}}"#
        )
    };
    let message = r#"{"id":"msg_fake_1_0","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Hi there"}],"role":"assistant"}"#;
    let usage = r#"{"input_tokens":20,"input_tokens_details":{"cached_tokens":8},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":23}"#;
    let expected = [
        (
            "response.created",
            format!(r#""sequence_number":0,"response":{}"#, response("in_progress", "", "null", "auto")),
        ),
        (
            "response.in_progress",
            format!(r#""sequence_number":1,"response":{}"#, response("in_progress", "", "null", "auto")),
        ),
        (
            "response.output_item.added",
            r#""sequence_number":2,"output_index":0,"item":{"id":"msg_fake_1_0","type":"message","status":"in_progress","content":[],"role":"assistant"}"#.to_owned(),
        ),
        (
            "response.content_part.added",
            r#""sequence_number":3,"item_id":"msg_fake_1_0","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}"#.to_owned(),
        ),
        (
            "response.output_text.delta",
            r#""sequence_number":4,"item_id":"msg_fake_1_0","output_index":0,"content_index":0,"delta":"Hi t""#.to_owned(),
        ),
        (
            "response.output_text.delta",
            r#""sequence_number":5,"item_id":"msg_fake_1_0","output_index":0,"content_index":0,"delta":"here""#.to_owned(),
        ),
        (
            "response.output_text.done",
            r#""sequence_number":6,"item_id":"msg_fake_1_0","output_index":0,"content_index":0,"text":"Hi there""#.to_owned(),
        ),
        (
            "response.content_part.done",
            r#""sequence_number":7,"item_id":"msg_fake_1_0","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"Hi there"}"#.to_owned(),
        ),
        (
            "response.output_item.done",
            format!(r#""sequence_number":8,"output_index":0,"item":{message}"#),
        ),
        (
            "response.completed",
            format!(r#""sequence_number":9,"response":{}"#, response("completed", message, usage, "default")),
        ),
    ]
    .map(|(kind, rest)| format!("event: {kind}\ndata: {{\"type\":\"{kind}\",{rest}}}\n\n"))
    .concat();
    assert_eq!(reply.body, expected);
}

#[tokio::test]
async fn responses_reasoning_item_carries_encrypted_content_and_summary() {
    let server = FakeLlm::start().await;
    let mut stream = ScriptedStream::text("Done").reasoning("Plan the work");
    stream.reasoning_signature = Some("gAAAA-opaque".to_owned());
    server.push(stream);

    let reply = ask(&server, Api::Responses, "hi").await;

    assert_eq!(
        event_types(&reply.body)[2..8],
        [
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
        ]
    );
    let events = payloads(Api::Responses, &reply.body);
    assert_eq!(
        events[7]["item"],
        json!({"id": "rs_fake_1_0", "type": "reasoning", "encrypted_content": "gAAAA-opaque",
               "summary": [{"type": "summary_text", "text": "Plan the work"}]})
    );
    assert_eq!(events[4]["delta"], "Plan the work");
    // The message comes second.
    assert_eq!(events[8]["item"]["id"], "msg_fake_1_1");
    assert_eq!(events[8]["output_index"], 1);
}

#[tokio::test]
async fn responses_parallel_tool_calls_are_function_call_items_with_argument_deltas() {
    let server = FakeLlm::start().await;
    server.push(
        ScriptedStream::default()
            .tool_call(ScriptedToolCall::new("a", json!({"x": 1})))
            .tool_call(ScriptedToolCall::new("b", Value::String("{not json".to_owned())).with_id("call_b")),
    );

    let reply = ask(&server, Api::Responses, "go").await;

    let events = payloads(Api::Responses, &reply.body);
    let done: Vec<_> = events
        .iter()
        .filter(|event| event["type"] == "response.output_item.done")
        .map(|event| event["item"].clone())
        .collect();
    assert_eq!(
        done,
        [
            json!({"id": "fc_fake_1_0", "type": "function_call", "status": "completed", "arguments": "{\"x\":1}",
                   "call_id": "call_fake_1_0", "name": "a"}),
            json!({"id": "fc_fake_1_1", "type": "function_call", "status": "completed", "arguments": "{not json",
                   "call_id": "call_b", "name": "b"}),
        ]
    );
    let deltas: Vec<_> = events
        .iter()
        .filter(|event| event["type"] == "response.function_call_arguments.delta")
        .map(|event| (event["item_id"].clone(), event["delta"].clone()))
        .collect();
    assert_eq!(
        deltas,
        [
            (json!("fc_fake_1_0"), json!("{\"x\":1}")),
            (json!("fc_fake_1_1"), json!("{not json"))
        ]
    );
    let completed = events.last().unwrap();
    assert_eq!(completed["type"], "response.completed");
    assert_eq!(completed["response"]["output"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn responses_length_finish_is_an_incomplete_response() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("trunc").finish(ScriptedFinish::Length));
    server.push(ScriptedStream::text("blocked").finish(ScriptedFinish::ContentFilter));

    let length = ask(&server, Api::Responses, "a").await;
    let filtered = ask(&server, Api::Responses, "b").await;

    let last = payloads(Api::Responses, &length.body).pop().unwrap();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(
        last["response"]["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(last["response"]["output"][0]["status"], "incomplete");
    let last = payloads(Api::Responses, &filtered.body).pop().unwrap();
    assert_eq!(
        last["response"]["incomplete_details"],
        json!({"reason": "content_filter"})
    );
}

#[tokio::test]
async fn responses_usage_reports_cached_and_reasoning_tokens() {
    let server = FakeLlm::start().await;
    let usage = ScriptedUsage {
        input_tokens: 50,
        output_tokens: 40,
        cache_read_tokens: 30,
        cache_write_tokens: 0,
        reasoning_tokens: 25,
    };
    server.push(ScriptedStream::text("x").reasoning("r").usage(usage));

    let reply = ask(&server, Api::Responses, "hi").await;

    let last = payloads(Api::Responses, &reply.body).pop().unwrap();
    assert_eq!(
        last["response"]["usage"],
        json!({"input_tokens": 50, "input_tokens_details": {"cached_tokens": 30}, "output_tokens": 40,
               "output_tokens_details": {"reasoning_tokens": 25}, "total_tokens": 90})
    );
}

#[tokio::test]
async fn responses_echo_request_settings_in_the_response_object() {
    let server = FakeLlm::start().await;
    let mut request = body(Api::Responses, "hi");
    request["instructions"] = json!("Be brief.");
    request["prompt_cache_key"] = json!("session-1");
    request["reasoning"] = json!({"effort": "high", "summary": "auto"});

    let reply = post(&url(&server, Api::Responses, "gpt-test"), &request).await;

    let created = &payloads(Api::Responses, &reply.body)[0]["response"];
    assert_eq!(created["instructions"], "Be brief.");
    assert_eq!(created["prompt_cache_key"], "session-1");
    assert_eq!(created["reasoning"], json!({"effort": "high", "summary": "auto"}));
    assert_eq!(created["store"], false);
}

#[tokio::test]
async fn responses_stream_error_ends_with_response_failed() {
    let server = FakeLlm::start().await;
    let mut stream = ScriptedStream::text("partial");
    stream.stream_error = Some(ScriptedError::status(500).message("boom"));
    server.push(stream);

    let reply = ask(&server, Api::Responses, "hi").await;

    let last = payloads(Api::Responses, &reply.body).pop().unwrap();
    assert_eq!(last["type"], "response.failed");
    assert_eq!(last["response"]["status"], "failed");
    assert_eq!(
        last["response"]["error"],
        json!({"code": "server_error", "message": "boom"})
    );
    assert!(!reply.body.contains("response.completed"));
}

#[tokio::test]
async fn responses_error_500_has_the_openai_error_body() {
    let server = FakeLlm::start().await;
    server.push_for(Api::Responses, ScriptedError::status(500));

    let reply = ask(&server, Api::Responses, "hi").await;

    assert_eq!(reply.status, 500);
    assert_eq!(reply.header("x-request-id"), Some("req_fake_1"));
    assert_eq!(
        reply.body,
        r#"{"error":{"message":"Internal server error","type":"server_error","param":null,"code":null}}"#
    );
}

#[tokio::test]
async fn responses_sequence_numbers_count_every_event() {
    let server = FakeLlm::start().await;
    server.push(
        ScriptedStream::text("abcdef")
            .reasoning("xyz")
            .chunks(3)
            .tool_call(ScriptedToolCall::new("t", json!({}))),
    );

    let reply = ask(&server, Api::Responses, "hi").await;

    let numbers: Vec<_> = payloads(Api::Responses, &reply.body)
        .iter()
        .map(|event| event["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (0..numbers.len() as u64).collect::<Vec<_>>());
    assert_eq!(events(Api::Responses, &reply.body).len(), numbers.len());
}
