//! The tool step: run every open call of the last assistant row at once, each with its own timeout, and
//! commit the results together.

use std::collections::HashMap;
use tracing::Instrument as _;

use serde_json::{Value, json};
use trueforge_protocol::{
    AgentInfo, ApprovalDecision, ContextMessage, ContextToolCall, ContextToolMessage, McpServerAuthInfo,
    ToolResponseEvent, ToolResultImage,
};

use super::{AgentThread, ThreadExit, TurnEnv};
use crate::bookkeeping::{Record, ThreadRecords};
use crate::capabilities::{RECALL_SET, ToolResultDraft, limit_batch};
use crate::context::{approval_decisions, open_calls};
use crate::error::AgentError;
use crate::ids::now_iso;
use crate::journal::Publish;
use crate::tools::{ToolContent, ToolError, ToolKind, ToolOutput, ToolPart};

enum CallOutcome {
    Result(ToolContent, String),
    /// A recall result: already bounded by the reader's own size limit, and shortening it again would make
    /// the full text unreachable.
    Recalled(ToolContent, String),
    Spawn(AgentInfo),
    /// The server refused the call until the user authorizes it; the call did not run.
    AuthRequired(McpServerAuthInfo),
    Cancelled,
}

impl AgentThread {
    pub(crate) async fn tool_step(&mut self, env: &TurnEnv) -> Result<Option<ThreadExit>, AgentError> {
        let open: Vec<ContextToolCall> = open_calls(&self.context)
            .into_iter()
            .filter(|call| !(call.is_thread_creation() && self.spawned.contains(&call.id)))
            .cloned()
            .collect();
        let decisions: HashMap<String, ApprovalDecision> = approval_decisions(&self.context)
            .into_iter()
            .map(|(id, decision)| (id.to_owned(), decision.clone()))
            .collect();

        let mut to_run = Vec::new();
        let mut outcomes: HashMap<String, CallOutcome> = HashMap::new();
        for call in &open {
            match decisions.get(&call.id) {
                Some(ApprovalDecision::Deny { reason }) if call.is_approval_required() => {
                    let text = match reason {
                        Some(reason) => format!("The user denied this tool call. Reason: {reason}"),
                        None => "The user denied this tool call.".to_owned(),
                    };
                    outcomes.insert(
                        call.id.clone(),
                        CallOutcome::Result(ToolContent::error(text), tool_name(call)),
                    );
                }
                _ => to_run.push(call),
            }
        }
        let started: Vec<String> = to_run.iter().map(|call| call.id.clone()).collect();
        // The model step already recorded them when they run right away.
        if !started.is_empty() && ThreadRecords::read(Some(&self.capability_state)).started_tool_calls != started {
            self.write_record(env, Record::StartedToolCalls(started)).await?;
        }
        let executed = futures::future::join_all(to_run.iter().map(|call| self.execute(env, call))).await;
        for (call, outcome) in to_run.iter().zip(executed) {
            outcomes.insert(call.id.clone(), outcome);
        }

        let mut drafts = Vec::new();
        let mut spawn = Vec::new();
        let mut cancelled = false;
        let mut unauthorized: Vec<(String, McpServerAuthInfo)> = Vec::new();
        for call in &open {
            match outcomes.remove(&call.id) {
                Some(CallOutcome::Result(content, name)) => drafts.push(draft(call, name, &content, true)),
                Some(CallOutcome::Recalled(content, name)) => drafts.push(draft(call, name, &content, false)),
                Some(CallOutcome::Spawn(info)) => spawn.push((call.id.clone(), info)),
                Some(CallOutcome::AuthRequired(server)) => unauthorized.push((call.id.clone(), server)),
                Some(CallOutcome::Cancelled) | None => cancelled = true,
            }
        }
        self.commit_results(env, drafts).await?;
        if cancelled {
            return Ok(Some(ThreadExit::Cancelled));
        }
        if !spawn.is_empty() {
            return Ok(Some(ThreadExit::Spawn(spawn)));
        }
        if !unauthorized.is_empty() {
            return self.wait_for_authorization(env, unauthorized).await.map(Some);
        }
        Ok(None)
    }

    /// Leaves the calls an MCP server refused open (marked as not run, to run again once the user
    /// authorized) and asks the user to authorize their servers.
    /// Writes one of the runtime's records into the thread's capability state, stored first.
    async fn write_record(&mut self, env: &TurnEnv, record: Record) -> Result<(), AgentError> {
        env.journal
            .store
            .patch_thread_capability_state(&env.journal.key, &self.id, record.key(), record.value())
            .await?;
        record.write_into(&mut self.capability_state);
        Ok(())
    }

    async fn wait_for_authorization(
        &mut self,
        env: &TurnEnv,
        unauthorized: Vec<(String, McpServerAuthInfo)>,
    ) -> Result<ThreadExit, AgentError> {
        let refused: Vec<String> = unauthorized.iter().map(|(call_id, _)| call_id.clone()).collect();
        let mut started = ThreadRecords::read(Some(&self.capability_state)).started_tool_calls;
        started.retain(|id| !refused.contains(id));
        self.write_record(env, Record::StartedToolCalls(started)).await?;
        self.write_record(env, Record::AuthInterruptedToolCalls(refused))
            .await?;
        let action = env
            .ask_for_authorization(unauthorized.into_iter().map(|(_, server)| server))
            .await?;
        Ok(ThreadExit::NeedsUser(vec![action]))
    }

    /// Runs one call, counting it (tool set, outcome, time) for the metrics.
    async fn execute(&self, env: &TurnEnv, call: &ContextToolCall) -> CallOutcome {
        let started = std::time::Instant::now();
        let span = crate::telemetry::tool_span(&call.function.name, &call.id);
        let outcome = self.run_call(env, call).instrument(span.clone()).await;
        let tool_set = self
            .setup
            .registry
            .get(&call.function.name)
            .map_or("unavailable", |tool| tool.set.id());
        let label = match &outcome {
            CallOutcome::Result(content, _) | CallOutcome::Recalled(content, _) if content.is_error => "error",
            CallOutcome::Result(..) | CallOutcome::Recalled(..) | CallOutcome::Spawn(_) => "ok",
            CallOutcome::AuthRequired(_) => "auth_required",
            CallOutcome::Cancelled => "cancelled",
        };
        crate::telemetry::tool_call(tool_set, label, started.elapsed());
        crate::telemetry::tool_span_ended(&span, tool_set, label);
        outcome
    }

    async fn run_call(&self, env: &TurnEnv, call: &ContextToolCall) -> CallOutcome {
        let name = tool_name(call);
        let arguments = match parse_arguments(&call.function.arguments) {
            Ok(arguments) => arguments,
            Err(problem) => return CallOutcome::Result(ToolContent::error(problem), name),
        };
        let Some(tool) = self.setup.registry.get(&call.function.name) else {
            return CallOutcome::Result(
                ToolContent::error(format!("Tool {} is not available to this agent.", call.function.name)),
                name,
            );
        };
        let cx = self.tool_context(env);
        let timeout = env.tool_timeout;
        let run = tokio::time::timeout(timeout, tool.set.call_tool(&tool.spec.name, arguments, &cx));
        // Biased: once the turn is cancelled, a tool that returns in the same instant still counts as
        // cancelled, so the outcome does not depend on scheduling.
        let result = tokio::select! {
            biased;
            () = env.cancel.cancelled() => {
                cx.cancel.cancel();
                return CallOutcome::Cancelled;
            }
            result = run => result,
        };
        match result {
            Err(_elapsed) => {
                cx.cancel.cancel();
                CallOutcome::Result(
                    ToolContent::error(format!("The tool did not finish within {}.", describe(timeout))),
                    name,
                )
            }
            Ok(Err(ToolError {
                auth_required: Some(server),
                ..
            })) => CallOutcome::AuthRequired(server),
            Ok(Err(error)) => CallOutcome::Result(ToolContent::error(error.message), name),
            Ok(Ok(ToolOutput::Content(content))) if tool.set.id() == RECALL_SET => CallOutcome::Recalled(content, name),
            Ok(Ok(ToolOutput::Content(content))) => CallOutcome::Result(content, name),
            Ok(Ok(ToolOutput::CreateSubAgent(info))) if tool.spec.kind == ToolKind::ThreadCreation => {
                CallOutcome::Spawn(info)
            }
            Ok(Ok(ToolOutput::CreateSubAgent(_))) => CallOutcome::Result(
                ToolContent::error("This tool cannot start sub-agents.".to_owned()),
                name,
            ),
        }
    }

    /// Persists one `tool.response` per result, then the result rows (the step's commit point).
    pub(crate) async fn commit_results(&mut self, env: &TurnEnv, mut drafts: Vec<Draft>) -> Result<(), AgentError> {
        if drafts.is_empty() {
            return Ok(());
        }
        if self.setup.large_responses {
            let mut batch: Vec<ToolResultDraft> = drafts
                .iter()
                .filter(|draft| draft.limited)
                .map(|draft| draft.result.clone())
                .collect();
            limit_batch(&mut batch, self.setup.sub_agents_available);
            let mut limited = batch.into_iter();
            for draft in drafts.iter_mut().filter(|draft| draft.limited) {
                if let Some(result) = limited.next() {
                    draft.result = result;
                }
            }
            if let Some(sandbox) = &self.setup.sandbox {
                save_shortened_results(sandbox, &mut drafts).await;
            }
        }
        let events = drafts
            .iter()
            .map(|draft| {
                let event = ToolResponseEvent {
                    id: env.journal.next_id(),
                    created_at: draft.finished_at.clone(),
                    thread_id: self.id.to_string(),
                    tool_call_id: draft.result.tool_call_id.clone(),
                    content: draft.result.content.clone(),
                };
                (event.into(), Publish::Stream)
            })
            .collect();
        let rows: Vec<ContextMessage> = drafts
            .into_iter()
            .map(|draft| {
                ContextMessage::Tool(ContextToolMessage {
                    tool_call_id: draft.result.tool_call_id,
                    content: draft.result.content,
                    full_content: draft.result.full_content,
                    images: draft.images,
                })
            })
            .collect();
        let usage = self.usage_with(&rows);
        self.commit(env, events, rows, usage, None, None).await
    }
}

/// Saves the complete text of every shortened result in the sandbox and points the model at the file. A
/// failure to save leaves the result as it is: the complete text is still in the store for recall.
async fn save_shortened_results(sandbox: &crate::sandbox::TurnSandbox, drafts: &mut [Draft]) {
    for draft in drafts.iter_mut() {
        let result = &mut draft.result;
        let Some(full) = result.full_content.as_deref().filter(|_| !result.is_error) else {
            continue;
        };
        match crate::sandbox::offload_large_result(
            sandbox,
            &result.tool_name,
            &result.tool_call_id,
            &result.content,
            full,
        )
        .await
        {
            Ok(content) => result.content = content,
            Err(error) => tracing::warn!(
                tool_call_id = %result.tool_call_id,
                %error,
                "could not save a large tool result in the sandbox"
            ),
        }
    }
}

/// A result on its way to the context: when its call finished, and whether large-response limits apply.
pub(crate) struct Draft {
    result: ToolResultDraft,
    /// The result's images, passed to the model beside the text (not limited: they are not text).
    images: Vec<ToolResultImage>,
    finished_at: String,
    limited: bool,
}

fn draft(call: &ContextToolCall, tool_name: String, content: &ToolContent, limited: bool) -> Draft {
    Draft {
        result: ToolResultDraft {
            tool_call_id: call.id.clone(),
            tool_name,
            content: content.to_model_text(),
            full_content: None,
            is_error: content.is_error,
        },
        images: content
            .parts
            .iter()
            .filter_map(|part| match part {
                ToolPart::Image { media_type, data } => Some(ToolResultImage {
                    media_type: media_type.clone(),
                    data: data.clone(),
                }),
                ToolPart::Text(_) => None,
            })
            .collect(),
        finished_at: now_iso(),
        limited,
    }
}

fn tool_name(call: &ContextToolCall) -> String {
    call.tool_info
        .as_ref()
        .map_or_else(|| call.function.name.clone(), |info| info.original_tool_name.clone())
}

fn describe(duration: std::time::Duration) -> String {
    if duration.as_millis() < 1_000 {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{} s", duration.as_secs())
    }
}

/// The model's arguments as a JSON object; empty arguments mean `{}`.
fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err("The tool arguments must be a JSON object.".to_owned()),
        Err(error) => Err(format!("The tool arguments are not valid JSON: {error}")),
    }
}
