//! Anthropic Messages API (`POST {base_url}/messages`, provider type `anthropic`), streamed over SSE. The
//! provider type and its default base URL (`https://api.anthropic.com/v1`) are owned by the protocol crate.
//!
//! The adapter is split by concern: `request` builds the body's top level (system prompt, tools, tool
//! choice, sampling, extended thinking, output format, prompt caching), `messages` turns the
//! conversation into Anthropic's strictly alternating content-block messages, `decode` reads the event
//! stream and `errors` classifies failures, whether they come as an HTTP status or in-stream.

mod decode;
mod errors;
mod messages;
mod request;

use std::time::Duration;

pub use request::{DEFAULT_MAX_TOKENS, thinking_budget, uses_adaptive_thinking};

use crate::error::LlmError;
use crate::request::ModelRequest;
use crate::wire::{Endpoint, HttpRequest, StreamDecoder, WireApi, WireFormat};

/// The API version this adapter speaks. Anthropic requires the header on every request; features newer
/// than the version (thinking, structured outputs) are enabled per request, not by the version.
pub const API_VERSION: &str = "2023-06-01";

/// The Anthropic Messages wire format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicWire {
    prompt_caching: bool,
}

impl Default for AnthropicWire {
    fn default() -> Self {
        Self { prompt_caching: true }
    }
}

impl AnthropicWire {
    /// The wire format with prompt caching on.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns automatic prompt-cache breakpoints on or off. They are on by default because an agent resends
    /// the same growing prefix every turn: reading it from the cache costs a tenth of the input price and
    /// cuts latency, while a prefix below the model's minimum cacheable length is simply not cached.
    pub fn with_prompt_caching(mut self, enabled: bool) -> Self {
        self.prompt_caching = enabled;
        self
    }

    /// Whether requests carry prompt-cache breakpoints.
    pub fn prompt_caching(&self) -> bool {
        self.prompt_caching
    }
}

impl WireFormat for AnthropicWire {
    fn api(&self) -> WireApi {
        WireApi::Anthropic
    }

    fn build_request(&self, endpoint: &Endpoint, request: &ModelRequest) -> Result<HttpRequest, LlmError> {
        let body = request::build_body(&endpoint.model, request, self.prompt_caching)?;
        Ok(HttpRequest {
            url: format!("{}/messages", endpoint.base_url.trim_end_matches('/')),
            headers: headers(endpoint),
            body,
        })
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(decode::AnthropicDecoder::default())
    }

    fn classify_error(&self, status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
        errors::classify_http(status, retry_after, body)
    }
}

/// The API key and version headers, then the endpoint's own headers. An endpoint header replaces a default
/// of the same name (compared case-insensitively), so a gateway can pin another version or take its own
/// authorization header without the adapter sending two conflicting values.
fn headers(endpoint: &Endpoint) -> Vec<(String, String)> {
    let mut defaults = Vec::with_capacity(2);
    if let Some(key) = endpoint.api_key.as_deref().filter(|key| !key.is_empty()) {
        defaults.push(("x-api-key".to_owned(), key.to_owned()));
    }
    defaults.push(("anthropic-version".to_owned(), API_VERSION.to_owned()));
    let overridden = |name: &str| endpoint.headers.iter().any(|(own, _)| own.eq_ignore_ascii_case(name));
    defaults.retain(|(name, _)| !overridden(name));
    defaults.extend(endpoint.headers.iter().cloned());
    defaults
}
