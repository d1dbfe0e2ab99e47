//! Model provider clients: one provider-neutral request and event stream, four wire adapters (OpenAI
//! Responses, Chat Completions, Anthropic Messages, Google Gemini), shared retries, timeouts and
//! cancellation, usage and cost, token estimates.

pub mod anthropic;
mod body;
pub mod catalog;
pub mod chat;
pub mod client;
pub mod error;
pub mod event;
pub mod gemini;
pub mod pricing;
pub mod providers;
pub mod request;
pub mod response;
pub mod responses;
pub mod retry;
pub mod sse;
pub mod tokens;
pub mod wire;

pub use anthropic::AnthropicWire;
pub use catalog::{CatalogError, CatalogModel, CatalogProvider, ModelCatalog};
pub use chat::ChatCompletions;
pub use client::{ClientOptions, EventStream, ModelClient};
pub use error::LlmError;
pub use event::{FinishReason, StreamEvent, Usage};
pub use gemini::GeminiWire;
pub use pricing::ModelPricing;
pub use providers::{ProviderType, wire_format};
pub use request::{
    AssistantMessage, BodyCache, MediaSource, Message, ModelRequest, Origin, ReasoningBlock, SamplingParams, ToolCall,
    ToolChoice, ToolDefinition, ToolResult, ToolResultPart, UserPart,
};
pub use response::{Assembler, ModelResponse};
pub use responses::OpenAiResponses;
pub use retry::RetryPolicy;
pub use tokens::{TokenizerFamily, estimate_request_tokens, estimate_tokens};
pub use wire::{Endpoint, HttpRequest, SseEvent, StreamDecoder, WireApi, WireFormat};
