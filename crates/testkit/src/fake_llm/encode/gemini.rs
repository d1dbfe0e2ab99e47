//! Google Gemini `streamGenerateContent?alt=sse`: every frame is a whole `GenerateContentResponse`; the
//! last one carries `finishReason` and `usageMetadata`. There is no other end marker.

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use crate::fake_llm::plan::Plan;
use crate::fake_llm::script::{ScriptedError, ScriptedFinish};
use crate::fake_llm::sse::gemini_frame;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    candidates: Vec<Candidate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_metadata: Option<UsageMetadata>,
    model_version: &'a str,
    response_id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    content: Content,
    #[serde(skip_serializing_if = "Option::is_none")]
    finish_reason: Option<&'static str>,
    index: u32,
}

#[derive(Serialize)]
struct Content {
    parts: Vec<Part>,
    role: &'static str,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<String>,
}

#[derive(Serialize)]
struct FunctionCall {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    name: String,
    args: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: u64,
    candidates_token_count: u64,
    total_token_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    cached_content_token_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    thoughts_token_count: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

pub(crate) fn stream(plan: &Plan) -> Vec<Bytes> {
    let mut contents: Vec<Vec<Part>> = Vec::new();
    if let Some(reasoning) = &plan.reasoning {
        for piece in &reasoning.chunks {
            contents.push(vec![Part {
                text: Some(piece.clone()),
                thought: Some(true),
                ..Part::default()
            }]);
        }
    }
    for piece in &plan.text_chunks {
        contents.push(vec![Part {
            text: Some(piece.clone()),
            ..Part::default()
        }]);
    }
    // Gemini sends each function call whole; parallel calls share one chunk. The thought signature rides
    // on the first call, or, without calls, on an empty text part at the end.
    let signature = plan.reasoning.as_ref().map(|reasoning| reasoning.signature.clone());
    if plan.tool_calls.is_empty() {
        if let Some(signature) = signature {
            contents.push(vec![Part {
                text: Some(String::new()),
                thought_signature: Some(signature),
                ..Part::default()
            }]);
        }
    } else {
        let calls = plan
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| Part {
                function_call: Some(FunctionCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: call.arguments_value.clone(),
                }),
                thought_signature: if index == 0 { signature.clone() } else { None },
                ..Part::default()
            })
            .collect();
        contents.push(calls);
    }

    let response_id = format!("fake-{}", plan.seq);
    let chunk = |parts, finish_reason, usage_metadata| Chunk {
        candidates: vec![Candidate {
            content: Content { parts, role: "model" },
            finish_reason,
            index: 0,
        }],
        usage_metadata,
        model_version: &plan.model,
        response_id: &response_id,
    };

    if let Some((status, message)) = &plan.stream_error {
        let mut frames: Vec<Bytes> = contents
            .into_iter()
            .map(|parts| gemini_frame(&chunk(parts, None, None)))
            .collect();
        frames.push(gemini_frame(&error_body(*status, message, None, None)));
        return frames;
    }
    let last = contents.pop().unwrap_or_else(|| {
        vec![Part {
            text: Some(String::new()),
            ..Part::default()
        }]
    });
    let mut frames: Vec<Bytes> = contents
        .into_iter()
        .map(|parts| gemini_frame(&chunk(parts, None, None)))
        .collect();
    let finish_reason = match plan.finish {
        ScriptedFinish::Stop | ScriptedFinish::ToolCalls => "STOP",
        ScriptedFinish::Length => "MAX_TOKENS",
        ScriptedFinish::ContentFilter => "SAFETY",
    };
    let usage = UsageMetadata {
        prompt_token_count: plan.usage.input_tokens,
        candidates_token_count: plan.visible_output_tokens(),
        total_token_count: plan.usage.input_tokens + plan.usage.output_tokens,
        cached_content_token_count: plan.usage.cache_read_tokens,
        thoughts_token_count: plan.usage.reasoning_tokens,
    };
    frames.push(gemini_frame(&chunk(last, Some(finish_reason), Some(usage))));
    frames
}

#[derive(Serialize)]
pub(crate) struct ErrorEnvelope {
    error: ErrorObject,
}

#[derive(Serialize)]
struct ErrorObject {
    code: u16,
    message: String,
    status: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    details: Vec<RetryInfo>,
}

#[derive(Serialize)]
struct RetryInfo {
    #[serde(rename = "@type")]
    kind: &'static str,
    #[serde(rename = "retryDelay")]
    retry_delay: String,
}

/// Google's error body; `retry_after` adds the `RetryInfo` detail Gemini sends with quota errors.
pub(crate) fn error_body(status: u16, message: &str, code: Option<&str>, retry_after: Option<u64>) -> ErrorEnvelope {
    let canonical = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        500 => "INTERNAL",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "UNKNOWN",
    };
    ErrorEnvelope {
        error: ErrorObject {
            code: status,
            message: message.to_owned(),
            status: code.unwrap_or(canonical).to_owned(),
            details: retry_after
                .map(|seconds| RetryInfo {
                    kind: "type.googleapis.com/google.rpc.RetryInfo",
                    retry_delay: format!("{seconds}s"),
                })
                .into_iter()
                .collect(),
        },
    }
}

pub(crate) fn http_error(error: &ScriptedError) -> ErrorEnvelope {
    error_body(
        error.status,
        &error.message_or_default(),
        error.code.as_deref(),
        error.retry_after,
    )
}
