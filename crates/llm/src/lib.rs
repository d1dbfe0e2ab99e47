//! Model provider clients: one provider-neutral request and event stream, four wire adapters (OpenAI
//! Responses, Chat Completions, Anthropic Messages, Google Gemini), shared retries, timeouts and
//! cancellation, usage and cost, token estimates.

pub mod error;
pub mod event;
pub mod request;
pub mod response;
pub mod wire;

pub use error::LlmError;
pub use event::{FinishReason, StreamEvent, Usage};
pub use request::{
    AssistantMessage, MediaSource, Message, ModelRequest, Origin, ReasoningBlock, SamplingParams, ToolCall, ToolChoice,
    ToolDefinition, ToolResult, ToolResultPart, UserPart,
};
pub use response::{Assembler, ModelResponse};
pub use wire::{Endpoint, HttpRequest, SseEvent, StreamDecoder, WireApi, WireFormat, merge_extras};
