//! The cost of one model call's request at the end of a long conversation: each adapter builds its HTTP
//! request for 2,000 messages and the body is serialised to the bytes the client sends, as
//! `ModelClient::stream` does before the first attempt. Everything the build allocates is dropped inside
//! the measured loop, since a turn pays for that too.
//!
//! The conversation repeats a realistic step: a user note, an assistant answer with text and two tool
//! calls, their two results of about 200 bytes, and a short assistant answer. Three tools with ordinary
//! JSON Schemas and a system prompt of about 2 KB go with it.
//!
//! `chat_cached` and `responses_cached` build the same request with the conversation's cache as the previous
//! call (one step shorter) left it: only the last five messages are written, the rest copied.
//!
//! Run: `cargo bench -p trueforge-llm --bench request_body`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use trueforge_llm::{
    AssistantMessage, BodyCache, Endpoint, Message, ModelRequest, ToolCall, ToolDefinition, ToolResult, ToolResultPart,
    WireApi, wire_format,
};

const MESSAGES: usize = 2_000;

fn tools() -> Vec<ToolDefinition> {
    let path = json!({ "type": "string", "description": "A path relative to the workspace root." });
    vec![
        ToolDefinition {
            name: "read_file".into(),
            description: Some("Reads a text file of the workspace and returns its lines, numbered.".into()),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": path,
                    "offset": { "type": "integer", "minimum": 1 },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 2000 },
                },
                "required": ["path"],
                "additionalProperties": false,
            }),
        },
        ToolDefinition {
            name: "search".into(),
            description: Some("Searches the workspace for a regular expression.".into()),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": { "type": "string" },
                    "glob": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
                },
                "required": ["pattern"],
            }),
        },
        ToolDefinition {
            name: "run".into(),
            description: Some("Runs a shell command in the workspace and returns its output.".into()),
            parameters: json!({
                "type": "object",
                "properties": { "command": { "type": "string" }, "timeout_ms": { "type": "integer" } },
                "required": ["command"],
            }),
        },
    ]
}

fn tool_result(call_id: String, name: &str, step: usize) -> Message {
    let text = format!(
        "src/module_{step}.rs:{line}: fn handle_request(&self, request: &Request) -> Result<Response, Error> {{\n\
         src/module_{step}.rs:{next}:     let session = self.sessions.get(&request.session_id)?; // checked above\n",
        line = step % 400 + 10,
        next = step % 400 + 11,
    );
    Message::Tool(ToolResult {
        call_id,
        name: name.into(),
        content: vec![ToolResultPart::Text { text }],
        is_error: false,
    })
}

/// Five messages of one step of the conversation.
fn step(step: usize) -> [Message; 5] {
    let read_id = format!("call_{step}_read");
    let search_id = format!("call_{step}_search");
    [
        Message::user_text(format!(
            "Step {step}: look at how module {step} handles a request whose session expired, and tell me \
             whether the error reaches the caller or is swallowed somewhere on the way."
        )),
        Message::Assistant(AssistantMessage {
            text: format!("I'll read module {step} and search for where the session error is mapped."),
            tool_calls: vec![
                ToolCall {
                    id: read_id.clone(),
                    name: "read_file".into(),
                    arguments: format!(r#"{{"path":"src/module_{step}.rs","offset":1,"limit":120}}"#),
                    provider_data: None,
                },
                ToolCall {
                    id: search_id.clone(),
                    name: "search".into(),
                    arguments: r#"{"pattern":"SessionExpired","glob":"src/**/*.rs"}"#.into(),
                    provider_data: None,
                },
            ],
            ..AssistantMessage::default()
        }),
        tool_result(read_id, "read_file", step),
        tool_result(search_id, "search", step),
        Message::Assistant(AssistantMessage {
            text: format!(
                "Module {step} returns the error to the caller: `handle_request` propagates it with `?`, and \
                 nothing between the handler and the router converts it."
            ),
            ..AssistantMessage::default()
        }),
    ]
}

fn request() -> ModelRequest {
    ModelRequest {
        instructions: Some("You are a careful software engineer working in the user's repository. ".repeat(30)),
        messages: (0..MESSAGES / 5).flat_map(step).collect(),
        tools: tools(),
        ..ModelRequest::default()
    }
}

/// Builds the request, whose body the adapter serialises, as the client does before sending it.
fn body_bytes(api: WireApi, endpoint: &Endpoint, request: &ModelRequest) -> Bytes {
    wire_format(api).build_request(endpoint, request).unwrap().body
}

fn request_body(criterion: &mut Criterion) {
    let request = request();
    assert_eq!(request.messages.len(), MESSAGES);
    let endpoint = Endpoint {
        base_url: "http://127.0.0.1:1/v1".into(),
        api_key: Some("bench".into()),
        model: "bench-model".into(),
        headers: Vec::new(),
    };
    let mut group = criterion.benchmark_group("request_body");
    for (name, api) in [
        ("responses", WireApi::OpenAiResponses),
        ("chat", WireApi::ChatCompletions),
        ("anthropic", WireApi::Anthropic),
        ("gemini", WireApi::Gemini),
    ] {
        let size = body_bytes(api, &endpoint, &request).len();
        eprintln!("{name}: {size} body bytes for {MESSAGES} messages");
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(name, |bencher| {
            bencher.iter(|| body_bytes(api, &endpoint, &request));
        });
    }
    // The next call of the same conversation: the thread's cache holds the messages up to the last step,
    // so only the last step's five messages are written (the other wires have no cache yet).
    for (name, api) in [
        ("responses_cached", WireApi::OpenAiResponses),
        ("chat_cached", WireApi::ChatCompletions),
    ] {
        assert_eq!(
            body_bytes(api, &endpoint, &primed(api, &endpoint, &request)),
            body_bytes(api, &endpoint, &request)
        );
        group.bench_function(name, |bencher| {
            bencher.iter_batched_ref(
                || primed(api, &endpoint, &request),
                |cached| body_bytes(api, &endpoint, cached),
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

/// `request` with a cache that holds all its messages but the last step's, as the previous call left it.
fn primed(api: WireApi, endpoint: &Endpoint, request: &ModelRequest) -> ModelRequest {
    let cache = BodyCache::new();
    let previous = ModelRequest {
        messages: request.messages[..MESSAGES - 5].to_vec(),
        body_cache: cache.clone(),
        ..request.clone()
    };
    body_bytes(api, endpoint, &previous);
    ModelRequest {
        body_cache: cache,
        ..request.clone()
    }
}

criterion_group!(benches, request_body);
criterion_main!(benches);
