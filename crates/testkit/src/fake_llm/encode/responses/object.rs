//! The Responses API's response object and its output items, as the stream events carry them.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::fake_llm::plan::{FAKE_CREATED, Plan};
use crate::fake_llm::script::ScriptedFinish;

/// An output item. Untagged with an explicit `type` field, because the API writes `id` before `type`.
#[derive(Serialize, Clone)]
#[serde(untagged)]
pub(super) enum Item {
    Reasoning {
        id: String,
        #[serde(rename = "type")]
        kind: &'static str,
        encrypted_content: String,
        summary: Vec<SummaryPart>,
    },
    Message {
        id: String,
        #[serde(rename = "type")]
        kind: &'static str,
        status: &'static str,
        content: Vec<TextPart>,
        role: &'static str,
    },
    FunctionCall {
        id: String,
        #[serde(rename = "type")]
        kind: &'static str,
        status: &'static str,
        arguments: String,
        call_id: String,
        name: String,
    },
}

#[derive(Serialize, Clone)]
pub(super) struct TextPart {
    #[serde(rename = "type")]
    kind: &'static str,
    annotations: Vec<Value>,
    text: String,
}

#[derive(Serialize, Clone)]
pub(super) struct SummaryPart {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
}

/// The response object, echoing the request's settings the way the API does.
#[derive(Serialize, Clone)]
pub(super) struct ResponseObject {
    id: String,
    object: &'static str,
    created_at: u64,
    status: &'static str,
    background: bool,
    error: Option<FailureObject>,
    incomplete_details: Option<IncompleteDetails>,
    instructions: Value,
    max_output_tokens: Value,
    max_tool_calls: Value,
    model: String,
    output: Vec<Item>,
    parallel_tool_calls: Value,
    previous_response_id: Value,
    prompt_cache_key: Value,
    reasoning: Value,
    safety_identifier: Value,
    service_tier: &'static str,
    store: Value,
    temperature: Value,
    text: Value,
    tool_choice: Value,
    tools: Value,
    top_p: Value,
    truncation: &'static str,
    usage: Option<Usage>,
    user: Value,
    metadata: Value,
}

#[derive(Serialize, Clone)]
struct FailureObject {
    code: &'static str,
    message: String,
}

#[derive(Serialize, Clone)]
struct IncompleteDetails {
    reason: &'static str,
}

#[derive(Serialize, Clone)]
struct Usage {
    input_tokens: u64,
    input_tokens_details: InputDetails,
    output_tokens: u64,
    output_tokens_details: OutputDetails,
    total_tokens: u64,
}

#[derive(Serialize, Clone)]
struct InputDetails {
    cached_tokens: u64,
}

#[derive(Serialize, Clone)]
struct OutputDetails {
    reasoning_tokens: u64,
}

fn usage(plan: &Plan) -> Usage {
    Usage {
        input_tokens: plan.usage.input_tokens,
        input_tokens_details: InputDetails {
            cached_tokens: plan.usage.cache_read_tokens,
        },
        output_tokens: plan.usage.output_tokens,
        output_tokens_details: OutputDetails {
            reasoning_tokens: plan.usage.reasoning_tokens,
        },
        total_tokens: plan.usage.input_tokens + plan.usage.output_tokens,
    }
}

impl ResponseObject {
    /// The in-progress response, echoing the request's settings (with the API's defaults) as the API does.
    pub(super) fn new(plan: &Plan, request: &Value) -> Self {
        let field = |name: &str, default: Value| request.get(name).cloned().unwrap_or(default);
        let reasoning = request.get("reasoning");
        let reasoning_field = |name: &str| reasoning.and_then(|r| r.get(name)).cloned().unwrap_or(Value::Null);
        let mut reasoning_echo = Map::new();
        reasoning_echo.insert("effort".to_owned(), reasoning_field("effort"));
        reasoning_echo.insert("summary".to_owned(), reasoning_field("summary"));
        let mut format = Map::new();
        format.insert("type".to_owned(), Value::String("text".to_owned()));
        let mut text = Map::new();
        text.insert("format".to_owned(), Value::Object(format));
        ResponseObject {
            id: format!("resp_fake_{}", plan.seq),
            object: "response",
            created_at: FAKE_CREATED,
            status: "in_progress",
            background: false,
            error: None,
            incomplete_details: None,
            instructions: field("instructions", Value::Null),
            max_output_tokens: field("max_output_tokens", Value::Null),
            max_tool_calls: Value::Null,
            model: plan.model.clone(),
            output: Vec::new(),
            parallel_tool_calls: field("parallel_tool_calls", Value::Bool(true)),
            previous_response_id: Value::Null,
            prompt_cache_key: field("prompt_cache_key", Value::Null),
            reasoning: Value::Object(reasoning_echo),
            safety_identifier: Value::Null,
            service_tier: "auto",
            store: field("store", Value::Bool(true)),
            temperature: field("temperature", Value::from(1.0)),
            text: field("text", Value::Object(text)),
            tool_choice: field("tool_choice", Value::String("auto".to_owned())),
            tools: field("tools", Value::Array(Vec::new())),
            top_p: field("top_p", Value::from(1.0)),
            truncation: "disabled",
            usage: None,
            user: Value::Null,
            metadata: Value::Object(Map::new()),
        }
    }

    /// Records the output and the usage, sets the final status and returns the terminal event's type.
    pub(super) fn conclude(&mut self, plan: &Plan, output: Vec<Item>) -> &'static str {
        self.output = output;
        self.usage = Some(usage(plan));
        if let Some((status, message)) = &plan.stream_error {
            self.status = "failed";
            self.error = Some(FailureObject {
                code: match status {
                    429 => "rate_limit_exceeded",
                    400..=499 => "invalid_prompt",
                    _ => "server_error",
                },
                message: message.clone(),
            });
            "response.failed"
        } else {
            match plan.finish {
                ScriptedFinish::Stop | ScriptedFinish::ToolCalls => {
                    self.status = "completed";
                    self.service_tier = "default";
                    "response.completed"
                }
                ScriptedFinish::Length | ScriptedFinish::ContentFilter => {
                    self.status = "incomplete";
                    self.incomplete_details = Some(IncompleteDetails {
                        reason: if plan.finish == ScriptedFinish::Length {
                            "max_output_tokens"
                        } else {
                            "content_filter"
                        },
                    });
                    "response.incomplete"
                }
            }
        }
    }
}

impl TextPart {
    pub(super) fn output_text(text: &str) -> Self {
        Self {
            kind: "output_text",
            annotations: Vec::new(),
            text: text.to_owned(),
        }
    }
}

impl SummaryPart {
    pub(super) fn summary_text(text: &str) -> Self {
        Self {
            kind: "summary_text",
            text: text.to_owned(),
        }
    }
}
