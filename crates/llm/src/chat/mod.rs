//! OpenAI Chat Completions (`POST {base_url}/chat/completions`): the wire of `custom` providers, of every
//! OpenAI-compatible service (Fireworks, Together, Z.ai, Moonshot, Alibaba) and of local servers such as
//! Ollama, vLLM and llama.cpp. It stays within what all of them accept and reads what each of them sends.

mod decode;
mod errors;
mod request;

use std::time::Duration;

use crate::error::LlmError;
use crate::request::ModelRequest;
use crate::wire::{Endpoint, HttpRequest, StreamDecoder, WireApi, WireFormat};

/// The Chat Completions wire format.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatCompletions;

impl WireFormat for ChatCompletions {
    fn api(&self) -> WireApi {
        WireApi::ChatCompletions
    }

    /// The key goes out as `Authorization: Bearer …` only when one is set (local servers need none),
    /// and not when the endpoint brings its own `Authorization` header (gateways with other schemes).
    fn build_request(&self, endpoint: &Endpoint, request: &ModelRequest) -> Result<HttpRequest, LlmError> {
        let body = request::build_body(&endpoint.model, request)?;
        let own_authorization = endpoint
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        let mut headers = Vec::with_capacity(endpoint.headers.len() + 1);
        if let Some(key) = endpoint.api_key.as_deref().filter(|key| !key.is_empty())
            && !own_authorization
        {
            headers.push(("Authorization".to_owned(), format!("Bearer {key}")));
        }
        headers.extend(endpoint.headers.iter().cloned());
        Ok(HttpRequest {
            url: format!("{}/chat/completions", endpoint.base_url.trim_end_matches('/')),
            headers,
            body,
        })
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(decode::ChatDecoder::default())
    }

    fn classify_error(&self, status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
        errors::classify_http(status, retry_after, body)
    }
}
