//! Anthropic Messages: `message_start`, a `ping`, one `content_block_start/delta/stop` group per block
//! (redacted thinking, thinking, text, tool use), `message_delta` with the stop reason and usage,
//! `message_stop`.

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::fake_llm::plan::Plan;
use crate::fake_llm::script::{ScriptedError, ScriptedFinish};
use crate::fake_llm::sse::named_frame;

#[derive(Serialize)]
struct MessageStart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    message: Message<'a>,
}

#[derive(Serialize)]
struct Message<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    model: &'a str,
    content: Vec<Value>,
    stop_reason: Option<()>,
    stop_sequence: Option<()>,
    usage: Usage,
}

#[derive(Serialize)]
struct Usage {
    input_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
    output_tokens: u64,
}

#[derive(Serialize)]
struct BlockStart {
    #[serde(rename = "type")]
    kind: &'static str,
    index: usize,
    content_block: Block,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    RedactedThinking {
        data: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Map<String, Value>,
    },
}

#[derive(Serialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    index: usize,
    delta: Delta<'a>,
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum Delta<'a> {
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
    #[serde(rename = "signature_delta")]
    Signature { signature: &'a str },
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
}

#[derive(Serialize)]
struct BlockStop {
    #[serde(rename = "type")]
    kind: &'static str,
    index: usize,
}

#[derive(Serialize)]
struct MessageDelta {
    #[serde(rename = "type")]
    kind: &'static str,
    delta: StopDelta,
    usage: Usage,
}

#[derive(Serialize)]
struct StopDelta {
    stop_reason: &'static str,
    stop_sequence: Option<()>,
}

#[derive(Serialize)]
struct TypeOnly {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// Anthropic's error body; also the payload of an in-stream `error` event.
#[derive(Serialize)]
pub(crate) struct ErrorEnvelope {
    #[serde(rename = "type")]
    kind: &'static str,
    error: ErrorObject,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<String>,
}

#[derive(Serialize)]
struct ErrorObject {
    #[serde(rename = "type")]
    kind: String,
    message: String,
}

/// The default id of the `index`-th tool call of request `seq`.
pub(crate) fn tool_use_id(seq: usize, index: usize) -> String {
    format!("toolu_fake_{seq}_{index}")
}

pub(crate) fn stream(plan: &Plan) -> Vec<Bytes> {
    let mut frames = vec![named_frame(
        "message_start",
        &MessageStart {
            kind: "message_start",
            message: Message {
                id: format!("msg_fake_{}", plan.seq),
                kind: "message",
                role: "assistant",
                model: &plan.model,
                content: Vec::new(),
                stop_reason: None,
                stop_sequence: None,
                usage: usage(plan, 1),
            },
        },
    )];
    let mut blocks = Blocks {
        frames: &mut frames,
        count: 0,
    };
    if let Some(data) = &plan.redacted_reasoning {
        blocks.block(Block::RedactedThinking { data: data.clone() }, Vec::new());
    }
    if let Some(reasoning) = &plan.reasoning {
        let mut deltas: Vec<Delta> = reasoning
            .chunks
            .iter()
            .map(|piece| Delta::Thinking { thinking: piece })
            .collect();
        deltas.push(Delta::Signature {
            signature: &reasoning.signature,
        });
        let start = Block::Thinking {
            thinking: String::new(),
            signature: String::new(),
        };
        blocks.block(start, deltas);
    }
    if !plan.text.is_empty() {
        let deltas = plan
            .text_chunks
            .iter()
            .map(|piece| Delta::Text { text: piece })
            .collect();
        blocks.block(Block::Text { text: String::new() }, deltas);
    }
    for (index, call) in plan.tool_calls.iter().enumerate() {
        // The API opens every tool input with an empty JSON fragment.
        let deltas = std::iter::once("")
            .chain(call.argument_chunks.iter().map(String::as_str))
            .map(|piece| Delta::InputJson { partial_json: piece })
            .collect();
        let start = Block::ToolUse {
            id: call.id.clone().unwrap_or_else(|| tool_use_id(plan.seq, index)),
            name: call.name.clone(),
            input: Map::new(),
        };
        blocks.block(start, deltas);
    }
    if blocks.count == 0 {
        frames.push(ping());
    }
    if let Some((status, message)) = &plan.stream_error {
        frames.push(named_frame("error", &error_body(*status, message, None, None)));
        return frames;
    }
    let stop_reason = match plan.finish {
        ScriptedFinish::Stop => "end_turn",
        ScriptedFinish::ToolCalls => "tool_use",
        ScriptedFinish::Length => "max_tokens",
        ScriptedFinish::ContentFilter => "refusal",
    };
    frames.push(named_frame(
        "message_delta",
        &MessageDelta {
            kind: "message_delta",
            delta: StopDelta {
                stop_reason,
                stop_sequence: None,
            },
            usage: usage(plan, plan.usage.output_tokens),
        },
    ));
    frames.push(named_frame("message_stop", &TypeOnly { kind: "message_stop" }));
    frames
}

/// Appends content blocks, numbering them and sending the `ping` after the first block opens, where the
/// API sends it.
struct Blocks<'a> {
    frames: &'a mut Vec<Bytes>,
    count: usize,
}

impl Blocks<'_> {
    fn block(&mut self, start: Block, deltas: Vec<Delta>) {
        let index = self.count;
        self.frames.push(named_frame(
            "content_block_start",
            &BlockStart {
                kind: "content_block_start",
                index,
                content_block: start,
            },
        ));
        if index == 0 {
            self.frames.push(ping());
        }
        for delta in deltas {
            self.frames.push(named_frame(
                "content_block_delta",
                &BlockDelta {
                    kind: "content_block_delta",
                    index,
                    delta,
                },
            ));
        }
        self.frames.push(named_frame(
            "content_block_stop",
            &BlockStop {
                kind: "content_block_stop",
                index,
            },
        ));
        self.count += 1;
    }
}

/// The API writes its ping with a space after the colon.
fn ping() -> Bytes {
    Bytes::from_static(b"event: ping\ndata: {\"type\": \"ping\"}\n\n")
}

fn usage(plan: &Plan, output_tokens: u64) -> Usage {
    Usage {
        input_tokens: plan.uncached_input_tokens(),
        cache_creation_input_tokens: plan.usage.cache_write_tokens,
        cache_read_input_tokens: plan.usage.cache_read_tokens,
        output_tokens,
    }
}

pub(crate) fn error_body(status: u16, message: &str, code: Option<&str>, request_id: Option<String>) -> ErrorEnvelope {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    ErrorEnvelope {
        kind: "error",
        error: ErrorObject {
            kind: code.unwrap_or(kind).to_owned(),
            message: message.to_owned(),
        },
        request_id,
    }
}

pub(crate) fn http_error(error: &ScriptedError, seq: usize) -> ErrorEnvelope {
    error_body(
        error.status,
        &error.message_or_default(),
        error.code.as_deref(),
        Some(format!("req_fake_{seq}")),
    )
}
