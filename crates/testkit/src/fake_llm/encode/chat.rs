//! OpenAI Chat Completions: `data: {chat.completion.chunk}` frames, an optional usage chunk with empty
//! `choices`, then `data: [DONE]`.

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use crate::fake_llm::plan::{FAKE_CREATED, Plan};
use crate::fake_llm::script::{ScriptedError, ScriptedFinish};
use crate::fake_llm::sse::{data_frame, raw_data_frame};

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: Vec<Choice>,
    /// Present (as `null` until the last chunk) only when the client asked for usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Option<Usage>>,
}

#[derive(Serialize)]
struct Choice {
    index: u32,
    delta: Delta,
    logprobs: Option<()>,
    finish_reason: Option<&'static str>,
}

#[derive(Serialize, Default)]
struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// The field OpenAI-compatible reasoning servers (DeepSeek, vLLM, llama.cpp) stream thinking in.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Serialize)]
struct ToolCallDelta {
    index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    function: FunctionDelta,
}

#[derive(Serialize)]
struct FunctionDelta {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    arguments: String,
}

#[derive(Serialize)]
struct Usage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: PromptDetails,
    completion_tokens_details: CompletionDetails,
}

#[derive(Serialize)]
struct PromptDetails {
    cached_tokens: u64,
}

#[derive(Serialize)]
struct CompletionDetails {
    reasoning_tokens: u64,
}

/// The default id of the `index`-th tool call of request `seq`.
pub(crate) fn tool_call_id(seq: usize, index: usize) -> String {
    format!("call_fake_{seq}_{index}")
}

pub(crate) fn stream(plan: &Plan, request: &Value) -> Vec<Bytes> {
    let include_usage = request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let id = format!("chatcmpl-fake-{}", plan.seq);
    let chunk = |delta: Delta, finish_reason: Option<&'static str>| Chunk {
        id: &id,
        object: "chat.completion.chunk",
        created: FAKE_CREATED,
        model: &plan.model,
        choices: vec![Choice {
            index: 0,
            delta,
            logprobs: None,
            finish_reason,
        }],
        usage: include_usage.then_some(None),
    };

    let mut frames = vec![data_frame(&chunk(
        Delta {
            role: Some("assistant"),
            content: Some(String::new()),
            ..Delta::default()
        },
        None,
    ))];
    if let Some(reasoning) = &plan.reasoning {
        for piece in &reasoning.chunks {
            let delta = Delta {
                reasoning_content: Some(piece.clone()),
                ..Delta::default()
            };
            frames.push(data_frame(&chunk(delta, None)));
        }
    }
    for piece in &plan.text_chunks {
        let delta = Delta {
            content: Some(piece.clone()),
            ..Delta::default()
        };
        frames.push(data_frame(&chunk(delta, None)));
    }
    for (index, call) in plan.tool_calls.iter().enumerate() {
        let opening = ToolCallDelta {
            index,
            id: Some(call.id.clone().unwrap_or_else(|| tool_call_id(plan.seq, index))),
            kind: Some("function"),
            function: FunctionDelta {
                name: Some(call.name.clone()),
                arguments: String::new(),
            },
        };
        let pieces = call.argument_chunks.iter().map(|piece| ToolCallDelta {
            index,
            id: None,
            kind: None,
            function: FunctionDelta {
                name: None,
                arguments: piece.clone(),
            },
        });
        for tool_call in std::iter::once(opening).chain(pieces) {
            let delta = Delta {
                tool_calls: Some(vec![tool_call]),
                ..Delta::default()
            };
            frames.push(data_frame(&chunk(delta, None)));
        }
    }
    if let Some((status, message)) = &plan.stream_error {
        frames.push(data_frame(&error_body(*status, message, None)));
        return frames;
    }
    frames.push(data_frame(&chunk(Delta::default(), Some(finish_reason(plan.finish)))));
    if include_usage {
        let usage = Usage {
            prompt_tokens: plan.usage.input_tokens,
            completion_tokens: plan.usage.output_tokens,
            total_tokens: plan.usage.input_tokens + plan.usage.output_tokens,
            prompt_tokens_details: PromptDetails {
                cached_tokens: plan.usage.cache_read_tokens,
            },
            completion_tokens_details: CompletionDetails {
                reasoning_tokens: plan.usage.reasoning_tokens,
            },
        };
        frames.push(data_frame(&Chunk {
            id: &id,
            object: "chat.completion.chunk",
            created: FAKE_CREATED,
            model: &plan.model,
            choices: Vec::new(),
            usage: Some(Some(usage)),
        }));
    }
    frames.push(raw_data_frame("[DONE]"));
    frames
}

fn finish_reason(finish: ScriptedFinish) -> &'static str {
    match finish {
        ScriptedFinish::Stop => "stop",
        ScriptedFinish::ToolCalls => "tool_calls",
        ScriptedFinish::Length => "length",
        ScriptedFinish::ContentFilter => "content_filter",
    }
}

#[derive(Serialize)]
pub(crate) struct ErrorEnvelope {
    error: ErrorObject,
}

#[derive(Serialize)]
struct ErrorObject {
    message: String,
    #[serde(rename = "type")]
    kind: &'static str,
    param: Option<()>,
    code: Option<String>,
}

/// OpenAI's error body, shared by Chat Completions and Responses.
pub(crate) fn error_body(status: u16, message: &str, code: Option<&str>) -> ErrorEnvelope {
    let (kind, default_code) = match status {
        400 | 404 | 413 => ("invalid_request_error", None),
        401 => ("invalid_request_error", Some("invalid_api_key")),
        403 => ("permission_error", None),
        429 => ("requests", Some("rate_limit_exceeded")),
        _ => ("server_error", None),
    };
    ErrorEnvelope {
        error: ErrorObject {
            message: message.to_owned(),
            kind,
            param: None,
            code: code.or(default_code).map(str::to_owned),
        },
    }
}

pub(crate) fn http_error(error: &ScriptedError) -> ErrorEnvelope {
    error_body(error.status, &error.message_or_default(), error.code.as_deref())
}
