//! The model seam: what the loop needs from a model, and how agents name models.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use trueforge_llm::{
    Assembler, EventStream, LlmError, ModelClient, ModelRequest, ModelResponse, Origin, SamplingParams, TokenizerFamily,
};
use trueforge_protocol::{ModelParams, TenantId};

/// Something that answers model requests as a stream of events.
#[async_trait]
pub trait Model: Send + Sync {
    async fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> Result<EventStream, LlmError>;

    /// The wire and model answers come from; provider-bound reasoning is replayed only to the same origin.
    fn origin(&self) -> Origin;
}

#[async_trait]
impl Model for ModelClient {
    async fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> Result<EventStream, LlmError> {
        ModelClient::stream(self, request, cancel).await
    }

    fn origin(&self) -> Origin {
        ModelClient::origin(self)
    }
}

/// Drives a streamed answer to its end.
pub async fn complete(
    model: &dyn Model,
    request: &ModelRequest,
    cancel: CancellationToken,
) -> Result<ModelResponse, LlmError> {
    let mut stream = model.stream(request, cancel).await?;
    let mut assembler = Assembler::new();
    while let Some(event) = stream.next().await {
        assembler.push(&event?)?;
    }
    assembler.finish()
}

/// A model an agent named, ready to call.
#[derive(Clone)]
pub struct ResolvedModel {
    /// `provider/model`, as agents name it; stamped on assistant messages as their source.
    pub name: String,
    pub model: Arc<dyn Model>,
    /// The model's context window in tokens, when the catalog or the provider settings know it.
    pub context_window: Option<u64>,
    pub tokenizer: TokenizerFamily,
    /// Parameters the provider settings give every call (the agent's own params override them).
    pub default_params: Option<ModelParams>,
}

/// Why a model name could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelResolveError {
    pub message: String,
}

impl ModelResolveError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Turns `provider/model` names into callable models.
#[async_trait]
pub trait ModelResolver: Send + Sync {
    async fn resolve(&self, tenant_id: &TenantId, name: &str) -> Result<ResolvedModel, ModelResolveError>;

    /// Models a sub-agent may be started on instead of its parent's, with what each is good at.
    async fn sub_agent_models(&self, _tenant_id: &TenantId) -> Vec<crate::capabilities::SubAgentModel> {
        Vec::new()
    }
}

/// Sampling parameters and provider extras from an agent's params layered over the provider defaults.
pub fn request_params(
    defaults: Option<&ModelParams>,
    params: Option<&ModelParams>,
) -> (SamplingParams, Map<String, Value>) {
    let mut sampling = SamplingParams::default();
    let mut extras = Map::new();
    for layer in [defaults, params].into_iter().flatten() {
        if let Some(value) = layer.max_tokens.as_ref().and_then(serde_json::Number::as_u64) {
            sampling.max_tokens = Some(u32::try_from(value).unwrap_or(u32::MAX));
        }
        if let Some(value) = layer.temperature.as_ref().and_then(serde_json::Number::as_f64) {
            sampling.temperature = Some(value);
        }
        if let Some(value) = layer.top_p.as_ref().and_then(serde_json::Number::as_f64) {
            sampling.top_p = Some(value);
        }
        if let Some(value) = layer.top_k.as_ref().and_then(serde_json::Number::as_u64) {
            sampling.top_k = Some(u32::try_from(value).unwrap_or(u32::MAX));
        }
        if let Some(value) = layer.parallel_tool_calls {
            sampling.parallel_tool_calls = Some(value);
        }
        if let Some(effort) = layer.reasoning_effort {
            sampling.reasoning_effort = Some(effort);
        }
        for (key, value) in &layer.extra {
            extras.insert(key.clone(), value.clone());
        }
    }
    (sampling, extras)
}
