//! From a provider type of the settings API (`openai`, `anthropic`, `custom`, …) to the wire format that
//! speaks to it and the endpoint it is reached at.

use std::sync::Arc;

use trueforge_protocol::{CUSTOM_PROVIDER_TYPE, WellKnownProviderType};

use crate::anthropic::AnthropicWire;
use crate::chat::ChatCompletions;
use crate::error::LlmError;
use crate::gemini::GeminiWire;
use crate::responses::OpenAiResponses;
use crate::wire::{Endpoint, WireApi, WireFormat};

/// The adapter of `api`, with its defaults (Anthropic prompt caching on).
pub fn wire_format(api: WireApi) -> Arc<dyn WireFormat> {
    match api {
        WireApi::OpenAiResponses => Arc::new(OpenAiResponses),
        WireApi::ChatCompletions => Arc::new(ChatCompletions),
        WireApi::Anthropic => Arc::new(AnthropicWire::new()),
        WireApi::Gemini => Arc::new(GeminiWire::new()),
    }
}

/// A provider type and how this crate talks to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderType {
    WellKnown(WellKnownProviderType),
    /// Any OpenAI-compatible server the user points at (Ollama, vLLM, llama.cpp, gateways).
    Custom,
}

impl ProviderType {
    /// Parses a provider type string; unknown strings are an [`LlmError::InvalidRequest`].
    pub fn parse(value: &str) -> Result<Self, LlmError> {
        if value == CUSTOM_PROVIDER_TYPE {
            return Ok(Self::Custom);
        }
        WellKnownProviderType::parse(value)
            .map(Self::WellKnown)
            .ok_or_else(|| LlmError::InvalidRequest(format!("unknown model provider type `{value}`")))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::WellKnown(provider) => provider.as_str(),
            Self::Custom => CUSTOM_PROVIDER_TYPE,
        }
    }

    /// The API this crate speaks to the provider: each vendor's own native API where this crate has an
    /// adapter for it, Chat Completions for every OpenAI-compatible service.
    pub fn wire_api(self) -> WireApi {
        match self {
            Self::WellKnown(WellKnownProviderType::OpenAi) => WireApi::OpenAiResponses,
            Self::WellKnown(WellKnownProviderType::Anthropic) => WireApi::Anthropic,
            Self::WellKnown(WellKnownProviderType::GoogleGemini) => WireApi::Gemini,
            Self::WellKnown(
                WellKnownProviderType::Fireworks
                | WellKnownProviderType::Zai
                | WellKnownProviderType::Moonshot
                | WellKnownProviderType::Together
                | WellKnownProviderType::Alibaba,
            )
            | Self::Custom => WireApi::ChatCompletions,
        }
    }

    /// The adapter that speaks to this provider.
    pub fn wire_format(self) -> Arc<dyn WireFormat> {
        wire_format(self.wire_api())
    }

    /// The base URL used when the settings give none; a custom provider has no default.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::WellKnown(provider) => Some(provider.default_base_url()),
            Self::Custom => None,
        }
    }

    /// The endpoint of `model` at this provider: the given base URL (trailing slashes removed) or the
    /// provider's default. An empty API key means none, as for a custom provider without auth.
    pub fn endpoint(self, base_url: Option<&str>, api_key: Option<&str>, model: &str) -> Result<Endpoint, LlmError> {
        let base_url = base_url
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .or(self.default_base_url())
            .ok_or_else(|| {
                LlmError::InvalidRequest(format!("a `{}` model provider needs a base URL", self.as_str()))
            })?;
        Ok(Endpoint {
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.filter(|key| !key.is_empty()).map(str::to_owned),
            model: model.to_owned(),
            headers: Vec::new(),
        })
    }
}
