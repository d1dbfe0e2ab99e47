//! What a model stream yields, in a provider-neutral form.

use serde::{Deserialize, Serialize};

use crate::request::ReasoningBlock;

/// One step of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    TextDelta {
        text: String,
    },
    /// Readable reasoning as it streams (summaries or thinking text).
    ReasoningDelta {
        text: String,
    },
    /// A complete reasoning block to keep for replay (with its signature or encrypted content). Readable
    /// text already streamed as `ReasoningDelta` is repeated here whole.
    ReasoningBlock {
        block: ReasoningBlock,
    },
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArgumentsDelta {
        index: usize,
        delta: String,
    },
    /// The call at `index` is complete; `provider_data` is opaque data to replay with it.
    ToolCallEnd {
        index: usize,
        provider_data: Option<serde_json::Value>,
    },
    /// Token counts so far; a later `Usage` replaces an earlier one.
    Usage {
        usage: Usage,
    },
    Finish {
        reason: FinishReason,
    },
}

/// Why the model stopped. Length, content filter and errors stay distinct from a normal stop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    /// The provider ended the answer with an error it reported in-stream.
    Error(String),
    /// A reason this client does not know, kept verbatim.
    Other(String),
}

/// Token counts normalised across providers. `input_tokens` counts every prompt token, cached ones
/// included; `cache_read_tokens` and `cache_write_tokens` say how many of them hit or filled a cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Of `output_tokens`, those spent reasoning.
    pub reasoning_tokens: u64,
    /// Cost in USD, when the model's prices are known.
    pub cost_usd: Option<f64>,
}

impl Usage {
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}
