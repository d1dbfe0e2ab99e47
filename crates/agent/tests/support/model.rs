//! An in-process model whose answer is a function of the request, so a resumed turn sees the same answers
//! as an uninterrupted one.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use trueforge_protocol::TenantId;

use async_trait::async_trait;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trueforge_agent::{Model, ModelResolveError, ModelResolver, ResolvedModel};
use trueforge_llm::{
    EventStream, FinishReason, LlmError, Message, ModelRequest, Origin, StreamEvent, TokenizerFamily, Usage, WireApi,
};

/// One answer of the scripted model.
#[derive(Clone, Debug)]
pub enum Reply {
    Events(Vec<StreamEvent>),
    Error(LlmError),
    /// Streams `Events` only after the cancel token fires — never, unless the turn is cancelled.
    Hang,
}

/// Text in `chunks` deltas.
pub fn text(answer: &str) -> Reply {
    let mut events: Vec<StreamEvent> = answer
        .split_inclusive(' ')
        .map(|piece| StreamEvent::TextDelta { text: piece.to_owned() })
        .collect();
    events.push(usage(100, 10));
    events.push(StreamEvent::Finish {
        reason: FinishReason::Stop,
    });
    Reply::Events(events)
}

/// Tool calls `(id, name, arguments)`.
pub fn calls(calls: &[(&str, &str, &str)]) -> Reply {
    let mut events = Vec::new();
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        events.push(StreamEvent::ToolCallStart {
            index,
            id: (*id).to_owned(),
            name: (*name).to_owned(),
        });
        events.push(StreamEvent::ToolCallArgumentsDelta {
            index,
            delta: (*arguments).to_owned(),
        });
        events.push(StreamEvent::ToolCallEnd {
            index,
            provider_data: None,
        });
    }
    events.push(usage(120, 20));
    events.push(StreamEvent::Finish {
        reason: FinishReason::ToolCalls,
    });
    Reply::Events(events)
}

pub fn usage(input: u64, output: u64) -> StreamEvent {
    StreamEvent::Usage {
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
            cost_usd: None,
        },
    }
}

type Script = dyn Fn(&ModelRequest) -> Reply + Send + Sync;

/// A model answering by a script over the request.
pub struct ScriptedModel {
    script: Box<Script>,
    pub calls: AtomicUsize,
}

impl ScriptedModel {
    pub fn new(script: impl Fn(&ModelRequest) -> Reply + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            script: Box::new(script),
            calls: AtomicUsize::new(0),
        })
    }

    /// Answers by the number of assistant messages already in the request: the n-th model call of a
    /// thread gets `replies[n]` (the last one repeats).
    pub fn steps(replies: Vec<Reply>) -> Arc<Self> {
        Self::new(move |request| {
            let step = assistant_count(request);
            replies[step.min(replies.len() - 1)].clone()
        })
    }
}

pub fn assistant_count(request: &ModelRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|message| matches!(message, Message::Assistant(_)))
        .count()
}

/// The text of the request's first user message (a sub-agent's task).
pub fn first_user_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .find_map(|message| match message {
            Message::User { content } => content.iter().find_map(|part| match part {
                trueforge_llm::UserPart::Text { text } => Some(text.clone()),
                _ => None,
            }),
            _ => None,
        })
        .unwrap_or_default()
}

pub fn is_summary_request(request: &ModelRequest) -> bool {
    request.tools.is_empty()
        && request
            .instructions
            .as_deref()
            .is_some_and(|instructions| instructions == trueforge_agent::capabilities::SUMMARY_INSTRUCTIONS)
}

#[async_trait]
impl Model for ScriptedModel {
    async fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> Result<EventStream, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match (self.script)(request) {
            Reply::Events(events) => Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed()),
            Reply::Error(error) => Err(error),
            Reply::Hang => {
                cancel.cancelled().await;
                Err(LlmError::Cancelled)
            }
        }
    }

    fn origin(&self) -> Origin {
        Origin {
            provider: WireApi::ChatCompletions,
            model: "scripted".to_owned(),
        }
    }
}

/// Resolves every name to one model.
pub struct OneModel {
    pub model: Arc<dyn Model>,
    pub context_window: Option<u64>,
}

#[async_trait]
impl ModelResolver for OneModel {
    async fn resolve(&self, _tenant_id: &TenantId, name: &str) -> Result<ResolvedModel, ModelResolveError> {
        if name.starts_with("missing/") {
            return Err(ModelResolveError::new(format!("model {name} is not configured")));
        }
        Ok(ResolvedModel {
            name: name.to_owned(),
            model: self.model.clone(),
            context_window: self.context_window,
            tokenizer: TokenizerFamily::for_provider_type("custom"),
            default_params: None,
        })
    }
}
