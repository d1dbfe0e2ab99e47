//! The OpenAI Responses API (`POST {base_url}/responses`, provider type `openai`).
//!
//! We always run it stateless: `store: false` with the encrypted reasoning content requested and replayed,
//! so no conversation state lives at the provider and any answer can be replayed from our own history.

mod decode;
mod errors;
mod request;

use std::time::Duration;

use crate::error::LlmError;
use crate::request::ModelRequest;
use crate::wire::{Endpoint, HttpRequest, StreamDecoder, WireApi, WireFormat};

/// The Responses wire format. Stateless and cheap: one value serves every call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenAiResponses;

impl WireFormat for OpenAiResponses {
    fn api(&self) -> WireApi {
        WireApi::OpenAiResponses
    }

    fn build_request(&self, endpoint: &Endpoint, request: &ModelRequest) -> Result<HttpRequest, LlmError> {
        Ok(HttpRequest {
            url: format!("{}/responses", endpoint.base_url.trim_end_matches('/')),
            headers: request::headers(endpoint),
            body: request::body(&endpoint.model, request)?,
        })
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(decode::ResponsesDecoder::default())
    }

    fn classify_error(&self, status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
        errors::classify_http(status, retry_after, body)
    }
}
