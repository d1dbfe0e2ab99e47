//! One `GenerateContentResponse` of the stream, read leniently: fields this client does not use are
//! ignored, absent ones take their defaults.

use serde::Deserialize;
use serde_json::Value;

use crate::event::{FinishReason, Usage};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Chunk {
    pub candidates: Vec<Candidate>,
    pub prompt_feedback: Option<PromptFeedback>,
    pub usage_metadata: Option<UsageMetadata>,
    pub response_id: Option<String>,
    /// An error reported in place of a response.
    pub error: Option<Value>,
}

impl Chunk {
    /// The answer's candidate. Only one is asked for (`candidateCount` is never set); should several
    /// come, the first (index 0) is the answer and the rest are alternatives this client does not read.
    pub fn answer(&self) -> Option<&Candidate> {
        self.candidates
            .iter()
            .find(|candidate| candidate.index.unwrap_or(0) == 0)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Candidate {
    pub content: Option<Content>,
    pub finish_reason: Option<String>,
    pub finish_message: Option<String>,
    pub index: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Content {
    pub parts: Vec<Part>,
}

/// A part of the answer. Parts this client does not map (`inlineData` images, `executableCode`,
/// `codeExecutionResult`) are read as empty parts and skipped.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Part {
    pub text: Option<String>,
    pub thought: bool,
    pub thought_signature: Option<String>,
    pub function_call: Option<FunctionCall>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FunctionCall {
    pub id: Option<String>,
    pub name: String,
    pub args: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct PromptFeedback {
    pub block_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct UsageMetadata {
    pub prompt_token_count: u64,
    pub cached_content_token_count: u64,
    pub candidates_token_count: u64,
    pub thoughts_token_count: u64,
    pub tool_use_prompt_token_count: u64,
}

impl UsageMetadata {
    /// Gemini's counts normalised. `promptTokenCount` already includes the cached tokens; the prompts of
    /// built-in tools (search, code execution) are counted apart by Gemini but are input all the same.
    /// Thinking is counted apart from the answer (`thoughtsTokenCount`) and billed as output. Gemini
    /// reports no cache writes: its caches are created by a separate call.
    pub fn normalised(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_token_count + self.tool_use_prompt_token_count,
            output_tokens: self.candidates_token_count + self.thoughts_token_count,
            cache_read_tokens: self.cached_content_token_count,
            cache_write_tokens: 0,
            reasoning_tokens: self.thoughts_token_count,
            cost_usd: None,
        }
    }
}

/// Maps a candidate's `finishReason`:
/// - `STOP` → `Stop`, or `ToolCalls` when the answer called tools (Gemini says STOP either way);
/// - `MAX_TOKENS` → `Length`;
/// - `SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII` and their image variants →
///   `ContentFilter`;
/// - `MALFORMED_FUNCTION_CALL`, `UNEXPECTED_TOOL_CALL`, `TOO_MANY_TOOL_CALLS`, `MISSING_THOUGHT_SIGNATURE`,
///   `MALFORMED_RESPONSE` → `Error`: the model or the request went wrong and the answer is unusable, which
///   a caller should see as a failure it may retry rather than as a finished answer;
/// - anything else (`LANGUAGE`, `OTHER`, `NO_IMAGE`, unknown reasons) → `Other`, verbatim.
pub(super) fn finish_reason(reason: &str, message: Option<&str>, called_tools: bool) -> FinishReason {
    match reason {
        "STOP" if called_tools => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "TOO_MANY_TOOL_CALLS"
        | "MISSING_THOUGHT_SIGNATURE"
        | "MALFORMED_RESPONSE" => FinishReason::Error(match message {
            Some(message) if !message.is_empty() => format!("{reason}: {message}"),
            _ => reason.to_owned(),
        }),
        other => FinishReason::Other(other.to_owned()),
    }
}
