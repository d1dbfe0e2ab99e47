//! Renders resolved answers and errors in each provider's wire format.

mod anthropic;
mod chat;
mod gemini;
mod responses;

use bytes::Bytes;
use serde_json::Value;

use super::Api;
use super::plan::Plan;
use super::script::ScriptedError;
use super::sse::{compact, google_json};

/// The SSE frames of a streamed answer, the end marker last.
pub(crate) fn stream(api: Api, plan: &Plan, request: &Value) -> Vec<Bytes> {
    match api {
        Api::Responses => responses::stream(plan, request),
        Api::Chat => chat::stream(plan, request),
        Api::Anthropic => anthropic::stream(plan),
        Api::Gemini => gemini::stream(plan),
    }
}

/// The JSON body of an HTTP error in the provider's shape.
pub(crate) fn error_body(api: Api, error: &ScriptedError, seq: usize) -> String {
    match api {
        Api::Responses | Api::Chat => compact(&chat::http_error(error)),
        Api::Anthropic => compact(&anthropic::http_error(error, seq)),
        // Google pretty-prints its error bodies.
        Api::Gemini => {
            let body = gemini::http_error(error);
            serde_json::to_string_pretty(&body).unwrap_or_else(|_| google_json(&body))
        }
    }
}

/// The default id of the `index`-th tool call of request `seq`, as the format would name it. Gemini
/// assigns none.
pub(crate) fn default_tool_call_id(api: Api, seq: usize, index: usize) -> Option<String> {
    match api {
        Api::Responses => Some(responses::call_id(seq, index)),
        Api::Chat => Some(chat::tool_call_id(seq, index)),
        Api::Anthropic => Some(anthropic::tool_use_id(seq, index)),
        Api::Gemini => None,
    }
}
