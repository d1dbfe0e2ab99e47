//! The seam between the shared HTTP machinery (retries, timeouts, cancellation, SSE parsing) and the
//! four wire formats. An adapter only builds a request and decodes server-sent events; it never does I/O.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::LlmError;
use crate::event::StreamEvent;
use crate::request::ModelRequest;

/// The provider APIs this crate speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireApi {
    /// OpenAI Responses (`POST /responses`).
    OpenAiResponses,
    /// OpenAI Chat Completions and every compatible server (`POST /chat/completions`).
    ChatCompletions,
    /// Anthropic Messages (`POST /v1/messages`).
    Anthropic,
    /// Google Gemini (`POST /models/{model}:streamGenerateContent?alt=sse`).
    Gemini,
}

/// Where and how to reach one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    /// The provider's base URL, without a trailing slash (e.g. `https://api.openai.com/v1`).
    pub base_url: String,
    pub api_key: Option<String>,
    /// The provider's model id.
    pub model: String,
    /// Extra headers for every request.
    pub headers: Vec<(String, String)>,
}

/// An HTTP request an adapter wants sent: always a JSON `POST` expecting an SSE response.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The JSON body, serialised once by the adapter: the client sends these bytes on every attempt
    /// (cloning `Bytes` only counts a reference).
    pub body: Bytes,
}

/// One server-sent event: its `event:` name (empty when absent) and its `data:` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// A wire format: how to ask, how to read the answer, how to read a failure.
pub trait WireFormat: Send + Sync {
    fn api(&self) -> WireApi;

    /// Builds the HTTP request for a streamed answer.
    fn build_request(&self, endpoint: &Endpoint, request: &ModelRequest) -> Result<HttpRequest, LlmError>;

    /// A fresh decoder for one response stream.
    fn decoder(&self) -> Box<dyn StreamDecoder>;

    /// Classifies a non-success HTTP response.
    fn classify_error(&self, status: u16, retry_after: Option<std::time::Duration>, body: &str) -> LlmError;
}

/// Turns the server-sent events of one response into stream events.
pub trait StreamDecoder: Send {
    /// Decodes one event. An error event of the provider becomes an `Err`.
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError>;

    /// Called when the stream ends: the last events, or `StreamCutShort` when the provider's end marker
    /// never came.
    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError>;
}
