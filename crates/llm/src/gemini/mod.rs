//! Google Gemini native streaming (`POST {base}/models/{model}:streamGenerateContent?alt=sse`).
//!
//! Gemini differs from the OpenAI-shaped APIs in ways this adapter absorbs:
//! - roles are `user` and `model`, tool results travel as `functionResponse` parts of a user turn and are
//!   matched by function name (and by id when Gemini assigned one);
//! - function calls arrive whole in one chunk, usually without ids: the decoder synthesises
//!   `call_{responseId}_{n}`, stable for one stream and unique across answers;
//! - reasoning comes as `thought: true` parts and opaque `thoughtSignature`s that must travel back on the
//!   exact part they came on (Gemini 3 rejects a function call replayed without its signature);
//! - the stream has no end marker: an answer is complete once a candidate carried a `finishReason` (or
//!   the prompt was blocked).

mod chunk;
mod contents;
mod decode;
mod errors;
mod request;

pub use request::uses_thinking_levels;

use std::time::Duration;

use crate::error::LlmError;
use crate::request::ModelRequest;
use crate::wire::{Endpoint, HttpRequest, StreamDecoder, WireApi, WireFormat};

/// The Gemini wire format, spoken to provider type `google-gemini` (whose default base URL,
/// `https://generativelanguage.googleapis.com/v1beta`, the protocol crate owns). Stateless: one value
/// serves every request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GeminiWire;

impl GeminiWire {
    /// The header carrying the API key. Gemini also accepts `?key=` in the URL, but a header keeps the key
    /// out of proxy and access logs.
    pub const API_KEY_HEADER: &'static str = "x-goog-api-key";

    pub fn new() -> Self {
        Self
    }
}

impl WireFormat for GeminiWire {
    fn api(&self) -> WireApi {
        WireApi::Gemini
    }

    fn build_request(&self, endpoint: &Endpoint, request: &ModelRequest) -> Result<HttpRequest, LlmError> {
        // Ids may be written with or without the resource prefix (`models/gemini-2.5-flash`).
        let model = endpoint.model.trim().trim_start_matches("models/");
        if model.is_empty() {
            return Err(LlmError::InvalidRequest("a Gemini request needs a model id".into()));
        }
        let url = format!(
            "{}/models/{model}:streamGenerateContent?alt=sse",
            endpoint.base_url.trim_end_matches('/')
        );
        let mut headers = Vec::with_capacity(endpoint.headers.len() + 1);
        // An endpoint that sets its own key header (a gateway) replaces ours rather than sending two.
        let own_key = endpoint
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case(Self::API_KEY_HEADER));
        if let Some(key) = endpoint.api_key.as_deref().filter(|key| !key.is_empty() && !own_key) {
            headers.push((Self::API_KEY_HEADER.to_owned(), key.to_owned()));
        }
        headers.extend(endpoint.headers.iter().cloned());
        let body = request::build_body(&endpoint.model, request)?;
        Ok(HttpRequest { url, headers, body })
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(decode::GeminiDecoder::default())
    }

    fn classify_error(&self, status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
        errors::classify_http(status, retry_after, body)
    }
}
