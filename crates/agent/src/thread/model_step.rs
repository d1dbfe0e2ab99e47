//! The model step: one streamed model call, committed as the thread's next assistant row.

use std::collections::HashMap;
use std::sync::Arc;
use tracing::Instrument as _;

use futures::StreamExt;
use serde_json::{Map, Value, json};
use trueforge_llm::{Assembler, FinishReason, LlmError, ModelRequest, ModelResponse, StreamEvent, ToolChoice, Usage};
use trueforge_protocol::{
    AssistantContent, ContextAssistantMessage, ContextMessage, ContextToolCall, ContextToolInfo, ContextToolMessage,
    CurrentContextUsage, DeltaToolCall, DeltaToolFunction, FinishReason as WireFinish, InputTokensBreakdown,
    ModelMessageDeltaEvent, ModelMessageEvent, ModelMessageUsage, SessionEvent, SubAgentCompletion, ToolCall,
    ToolCallKind, ToolFunction, ToolInfo, ToolResponseEvent,
};

use super::{AgentThread, ThreadExit, TurnEnv};
use crate::bookkeeping::Record;
use crate::capabilities::validate_question_arguments;
use crate::context::{awaits_user, to_model_messages};
use crate::error::AgentError;
use crate::ids::now_iso;
use crate::journal::Publish;
use crate::tools::{ToolKind, ToolSet, context_tool_info, error_json, wire_tool_info};

/// The calls of a new answer that the tool step runs right away (none waits for the user), as the record
/// that they started: committed with the answer, it spares the tool step a store write of its own.
fn starting_at_once(calls: &[ContextToolCall]) -> Option<Record> {
    let no_decisions = HashMap::new();
    let run_at_once = !calls.is_empty() && !calls.iter().any(|call| awaits_user(call, &no_decisions));
    run_at_once.then(|| Record::StartedToolCalls(calls.iter().map(|call| call.id.clone()).collect()))
}

/// The readable part of an answer's reasoning (thinking text, reasoning summaries), blocks apart by a
/// blank line; encrypted-only blocks have none.
fn readable_reasoning(message: &trueforge_llm::AssistantMessage) -> String {
    message
        .reasoning
        .iter()
        .filter_map(|block| match block {
            trueforge_llm::ReasoningBlock::Thinking { text, .. } => Some(text.as_str()),
            trueforge_llm::ReasoningBlock::Encrypted { summary, .. } => Some(summary.as_str()),
            trueforge_llm::ReasoningBlock::Redacted { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Key in an assistant row's extra fields holding the id of its `model.message` event, which pause events
/// name as `source_event_id`.
pub const EVENT_ID_KEY: &str = "tf_event_id";

impl AgentThread {
    /// The request for the thread's next model call. Its messages are lent from the thread's converted
    /// context: hand the request back with [`return_request`](Self::return_request).
    pub(crate) fn model_request(&mut self) -> ModelRequest {
        let model = &self.setup.model;
        let origin = model.model.origin();
        self.model_messages.update(&self.context, &model.name, &origin);
        let messages = self.model_messages.lend(&self.setup.seed);
        // The tests run debug builds: every request is checked against a conversion of the whole context.
        debug_assert_eq!(
            messages[self.setup.seed.len()..],
            to_model_messages(&self.context, &model.name, &origin)[..],
            "the converted context of thread {} strayed from its context",
            self.id
        );
        ModelRequest {
            instructions: Some(self.setup.system_prompt.clone()),
            messages,
            tools: self.setup.registry.definitions(),
            tool_choice: ToolChoice::Auto,
            response_format: self.setup.response_format.clone(),
            params: self.setup.sampling.clone(),
            prompt_cache_key: None,
            extras: self.setup.extras.clone(),
            body_cache: self.model_messages.body_cache(),
        }
    }

    /// Calls the model and commits its answer. `None`: the loop goes on.
    pub(crate) async fn model_step(&mut self, env: &TurnEnv) -> Result<Option<ThreadExit>, AgentError> {
        self.relist_changed_tools(env).await;
        let request = self.model_request();
        self.metrics.iterations += 1;
        let message_id = env.journal.next_id();
        let created_at = now_iso();
        env.journal
            .open_message(ModelMessageEvent::placeholder(&message_id, &self.id, &created_at))
            .await;
        let call_started = std::time::Instant::now();
        let span = crate::telemetry::model_span(&self.setup.model.name);
        let answered = self
            .stream_answer(env, &request, &message_id, &created_at)
            .instrument(span.clone())
            .await;
        let (outcome, usage) = match &answered {
            Ok(response) => ("ok", Some(&response.usage)),
            Err(LlmError::Cancelled) => ("cancelled", None),
            Err(_) => ("error", None),
        };
        crate::telemetry::model_span_answered(
            &span,
            answered
                .as_ref()
                .map(|response| (&response.usage, &response.finish_reason))
                .map_err(|_| outcome),
        );
        crate::telemetry::model_call(&self.setup.model.name, outcome, call_started.elapsed(), usage);
        self.return_request(request);
        let response = match answered {
            Ok(response) => response,
            Err(LlmError::Cancelled) => return Ok(Some(ThreadExit::Cancelled)),
            Err(error) => {
                return Ok(Some(ThreadExit::Failed {
                    error: format!("The model call failed: {error}"),
                    output: None,
                }));
            }
        };
        if env.cancel.is_cancelled() {
            // A partial or unconfirmed answer is never committed.
            return Ok(Some(ThreadExit::Cancelled));
        }
        self.metrics.add_usage(&response.usage);
        let row = self.assistant_row(env, &response, &message_id).await;
        let event = self.final_event(&response, &message_id, &created_at);
        let finished = response.message.tool_calls.is_empty() || response.finish_reason == FinishReason::Length;
        let failure = match &response.finish_reason {
            FinishReason::Length => {
                Some("The model reached its output token limit (max_tokens) before finishing.".to_owned())
            }
            FinishReason::Error(message) => Some(format!("The model ended its answer with an error: {message}")),
            _ => None,
        };
        let completion = match (&self.parent, finished) {
            (Some(parent), true) => Some(completion_for(parent.tool_call_id.clone(), &event, failure.as_deref())),
            _ => None,
        };
        let usage = CurrentContextUsage {
            prompt_tokens: response.usage.input_tokens,
            completion_tokens: response.usage.output_tokens,
        };
        let started = if finished {
            None
        } else {
            starting_at_once(row.tool_calls.as_deref().unwrap_or_default())
        };
        let quiet = vec![(SessionEvent::from(event.clone()), Publish::Quiet)];
        self.commit(
            env,
            quiet,
            vec![ContextMessage::Assistant(row)],
            usage,
            completion,
            started,
        )
        .await?;
        if let Some(error) = failure {
            return Ok(Some(ThreadExit::Failed {
                error,
                output: Some(event),
            }));
        }
        if finished {
            return Ok(Some(ThreadExit::Done(event)));
        }
        self.reject_malformed_questions(env).await?;
        Ok(None)
    }

    /// Takes back the messages a request borrowed from the converted context.
    pub(crate) fn return_request(&mut self, request: ModelRequest) {
        self.model_messages.give_back(request.messages, self.setup.seed.len());
    }

    async fn stream_answer(
        &self,
        env: &TurnEnv,
        request: &ModelRequest,
        message_id: &str,
        created_at: &str,
    ) -> Result<ModelResponse, LlmError> {
        let mut stream = self
            .setup
            .model
            .model
            .stream(request, env.cancel.token().clone())
            .await?;
        let mut assembler = Assembler::new();
        let mut usage = Usage::default();
        let mut first_delta = true;
        while let Some(event) = stream.next().await {
            let event = event?;
            assembler.push(&event)?;
            if let StreamEvent::Usage { usage: latest } = &event {
                usage = *latest;
            }
            if let Some(mut delta) = self.delta(&event, message_id, &usage) {
                if first_delta {
                    delta.created_at = Some(created_at.to_owned());
                    first_delta = false;
                }
                env.journal.stream(delta).await;
            }
        }
        let mut response = assembler.finish()?;
        response.message.origin = Some(self.setup.model.model.origin());
        Ok(response)
    }

    fn delta(&self, event: &StreamEvent, message_id: &str, usage: &Usage) -> Option<ModelMessageDeltaEvent> {
        let mut delta = ModelMessageDeltaEvent {
            id: message_id.to_owned(),
            thread_id: self.id.to_string(),
            created_at: None,
            content: None,
            refusal: None,
            reasoning_content: None,
            tool_calls: None,
            finish_reason: None,
            usage: None,
        };
        match event {
            StreamEvent::TextDelta { text } if !text.is_empty() => delta.content = Some(Some(text.clone())),
            StreamEvent::ReasoningDelta { text } if !text.is_empty() => delta.reasoning_content = Some(text.clone()),
            StreamEvent::ToolCallStart { index, id, name } => {
                delta.tool_calls = Some(vec![DeltaToolCall {
                    index: wire_index(*index),
                    id: Some(id.clone()),
                    kind: Some(ToolCallKind::Function),
                    function: Some(DeltaToolFunction {
                        name: Some(name.clone()),
                        arguments: Some(String::new()),
                    }),
                    tool_info: Some(self.wire_info(name)),
                    provider_specific_fields: None,
                }]);
            }
            StreamEvent::ToolCallArgumentsDelta {
                index,
                delta: arguments,
            } if !arguments.is_empty() => {
                delta.tool_calls = Some(vec![DeltaToolCall {
                    index: wire_index(*index),
                    id: None,
                    kind: None,
                    function: Some(DeltaToolFunction {
                        name: None,
                        arguments: Some(arguments.clone()),
                    }),
                    tool_info: None,
                    provider_specific_fields: None,
                }]);
            }
            StreamEvent::Finish { reason } => {
                delta.finish_reason = Some(wire_finish(reason));
                delta.usage = Some(self.message_usage(usage));
            }
            _ => return None,
        }
        Some(delta)
    }

    /// Lists the tools again when a server said they changed (`tools/list_changed`), so the model is
    /// offered what the server offers now. A failed listing keeps the tools as they were: the calls of
    /// tools that went away are answered by the server itself.
    async fn relist_changed_tools(&mut self, env: &TurnEnv) {
        if !self.setup.registry.is_stale() {
            return;
        }
        match self.setup.registry.relisted(&self.tool_context(env)).await {
            Ok(registry) => {
                let mut setup = (*self.setup).clone();
                setup.registry = registry;
                self.setup = Arc::new(setup);
            }
            Err(error) => {
                tracing::warn!(thread = %self.id, %error, "listing changed tools failed; keeping the old list")
            }
        }
    }

    fn wire_info(&self, function_name: &str) -> ToolInfo {
        self.setup.registry.get(function_name).map_or_else(
            || ToolInfo::System {
                name: function_name.to_owned(),
            },
            |tool| wire_tool_info(&tool.context_info(false)),
        )
    }

    fn message_usage(&self, usage: &Usage) -> ModelMessageUsage {
        let base = &self.setup.breakdown;
        let fixed = base.harness + base.skills + base.instructions + base.tool_definitions;
        ModelMessageUsage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: Some(usage.cache_read_tokens),
            cache_write_tokens: Some(usage.cache_write_tokens),
            input_tokens_breakdown: InputTokensBreakdown {
                messages: usage.input_tokens.saturating_sub(fixed),
                ..base.clone()
            },
        }
    }

    /// The assistant row as the context keeps it: tool calls carry where their tool comes from and whether
    /// they wait for the user (a deferred `call_tool` takes the policy of the tool it reaches).
    async fn assistant_row(
        &self,
        env: &TurnEnv,
        response: &ModelResponse,
        message_id: &str,
    ) -> ContextAssistantMessage {
        let message = &response.message;
        let mut calls = Vec::with_capacity(message.tool_calls.len());
        for call in &message.tool_calls {
            let tool_info = self.call_info(env, &call.name, &call.arguments).await;
            calls.push(ContextToolCall {
                id: call.id.clone(),
                kind: ToolCallKind::Function,
                function: ToolFunction {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
                tool_info,
                provider_specific_fields: match &call.provider_data {
                    Some(Value::Object(fields)) => Some(fields.clone()),
                    _ => None,
                },
                extra: Map::new(),
            });
        }
        let reasoning_text = readable_reasoning(message);
        let mut extra = Map::new();
        extra.insert(EVENT_ID_KEY.to_owned(), json!(message_id));
        ContextAssistantMessage {
            content: Some((!message.text.is_empty()).then(|| AssistantContent::Text(message.text.clone()))),
            name: None,
            refusal: None,
            tool_calls: (!calls.is_empty()).then_some(calls),
            reasoning_content: (!reasoning_text.is_empty()).then_some(reasoning_text),
            thinking_blocks: (!message.reasoning.is_empty()).then(|| {
                message
                    .reasoning
                    .iter()
                    .filter_map(|block| serde_json::to_value(block).ok())
                    .collect()
            }),
            source: Some(self.setup.model.name.clone()),
            extra,
        }
    }

    async fn call_info(&self, env: &TurnEnv, function_name: &str, arguments: &str) -> Option<ContextToolInfo> {
        let tool = self.setup.registry.get(function_name)?;
        let approved = |set_id: &str, tool_name: &str| {
            env.session_approvals
                .contains(&(set_id.to_owned(), tool_name.to_owned()))
        };
        if let Some(deferred) = &self.setup.deferred
            && tool.set.id() == deferred.id()
            && tool.spec.name == "call_tool"
        {
            let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
            let cx = self.tool_context(env);
            if let Some((set, spec)) = deferred.resolve(&arguments, &cx).await {
                let gated = set.requires_approval(&spec) && !approved(set.id(), &spec.name);
                return Some(context_tool_info(set.as_ref(), &spec, gated, true));
            }
            return Some(tool.context_info(true));
        }
        let mut info = tool.context_info(false);
        if info.is_approval_required == Some(true) && approved(tool.set.id(), &tool.spec.name) {
            info.is_approval_required = Some(false);
        }
        Some(info)
    }

    fn final_event(&self, response: &ModelResponse, message_id: &str, created_at: &str) -> ModelMessageEvent {
        let message = &response.message;
        let tool_calls: Vec<ToolCall> = message
            .tool_calls
            .iter()
            .map(|call| ToolCall {
                id: call.id.clone(),
                kind: ToolCallKind::Function,
                function: ToolFunction {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
                provider_specific_fields: match &call.provider_data {
                    Some(Value::Object(fields)) => Some(fields.clone()),
                    _ => None,
                },
                tool_info: self.wire_info(&call.name),
            })
            .collect();
        let reasoning_text = readable_reasoning(message);
        ModelMessageEvent {
            content: (!message.text.is_empty()).then(|| Some(AssistantContent::Text(message.text.clone()))),
            // Stored with the answer, so a client reading the history shows the reasoning the live stream
            // showed as deltas.
            reasoning_content: (!reasoning_text.is_empty()).then_some(reasoning_text),
            tool_calls: (!tool_calls.is_empty()).then_some(tool_calls),
            finish_reason: Some(wire_finish(&response.finish_reason)),
            usage: Some(self.message_usage(&response.usage)),
            ..ModelMessageEvent::placeholder(message_id, &self.id, created_at)
        }
    }

    /// A question with malformed arguments goes back to the model as an error instead of reaching the user.
    async fn reject_malformed_questions(&mut self, env: &TurnEnv) -> Result<(), AgentError> {
        let mut rows = Vec::new();
        let mut events = Vec::new();
        for call in crate::context::open_calls(&self.context) {
            let is_question = self
                .setup
                .registry
                .get(&call.function.name)
                .is_some_and(|tool| tool.spec.kind == ToolKind::ClientSide);
            if !is_question {
                continue;
            }
            let arguments: Value = serde_json::from_str(&call.function.arguments).unwrap_or(Value::Null);
            if let Err(problem) = validate_question_arguments(&arguments) {
                let content = error_json(&format!("The question was not asked: {problem}"));
                events.push((
                    SessionEvent::from(ToolResponseEvent {
                        id: env.journal.next_id(),
                        created_at: now_iso(),
                        thread_id: self.id.to_string(),
                        tool_call_id: call.id.clone(),
                        content: content.clone(),
                    }),
                    Publish::Stream,
                ));
                rows.push(ContextMessage::Tool(ContextToolMessage {
                    tool_call_id: call.id.clone(),
                    content,
                    full_content: None,
                    images: Vec::new(),
                }));
            }
        }
        if rows.is_empty() {
            return Ok(());
        }
        let usage = self.usage_with(&rows);
        self.commit(env, events, rows, usage, None, None).await
    }
}

fn wire_index(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

/// The contract's finish reasons; an in-stream error or an unknown reason is `null`, never a fake `stop`.
fn wire_finish(reason: &FinishReason) -> Option<WireFinish> {
    match reason {
        FinishReason::Stop => Some(WireFinish::Stop),
        FinishReason::Length => Some(WireFinish::Length),
        FinishReason::ToolCalls => Some(WireFinish::ToolCalls),
        FinishReason::ContentFilter => Some(WireFinish::ContentFilter),
        FinishReason::Error(_) | FinishReason::Other(_) => None,
    }
}

/// How a finished sub-agent's answer reaches its parent.
fn completion_for(parent_call_id: String, output: &ModelMessageEvent, failure: Option<&str>) -> SubAgentCompletion {
    let text = output.text();
    match failure {
        None => SubAgentCompletion::Done {
            output: output.clone(),
            send_to_parent: ContextToolMessage {
                tool_call_id: parent_call_id,
                // The parent's call must read as answered, and an empty result reads as a lost one.
                content: if text.trim().is_empty() {
                    "The sub-agent finished without writing an answer.".to_owned()
                } else {
                    text
                },
                full_content: None,
                images: Vec::new(),
            },
        },
        Some(error) => SubAgentCompletion::Error {
            output: output.clone(),
            error_message: Some(error.to_owned()),
            send_to_parent: ContextToolMessage {
                tool_call_id: parent_call_id,
                content: sub_agent_failure_text(error, &text),
                full_content: None,
                images: Vec::new(),
            },
        },
    }
}

/// What the parent reads when its sub-agent failed: the error and whatever the sub-agent said last.
pub(crate) fn sub_agent_failure_text(error: &str, last_text: &str) -> String {
    if last_text.is_empty() {
        error_json(&format!("The sub-agent failed: {error}"))
    } else {
        error_json(&format!("The sub-agent failed: {error}\nIts last output:\n{last_text}"))
    }
}
