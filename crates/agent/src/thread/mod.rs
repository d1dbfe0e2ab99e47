//! One agent thread (the root agent or a sub-agent) running the loop for one turn: derive what the
//! context needs, then call the model, run tools, or stop for the user or for sub-agents.

mod compact;
mod model_step;
mod tool_step;
mod user_step;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use trueforge_llm::{Message, SamplingParams};
use trueforge_protocol::{
    ActionRequiredEvent, AgentInfo, AgentParent, AgentThreadSnapshot, ContextMessage, CurrentContextUsage,
    InputTokensBreakdown, McpAuthRequiredEvent, McpServerAuthInfo, ModelMessageEvent, ResponseFormat, SessionEvent,
    SubAgentCompletion, ThreadId, ToolResponseEvent,
};

use crate::bookkeeping::Record;
use crate::cancel::TurnCancel;
use crate::capabilities::DeferredTools;
use crate::context::{ModelMessages, ThreadNeed, thread_need};
use crate::error::AgentError;
use crate::journal::{Journal, Publish};
use crate::metrics::ThreadMetrics;
use crate::model::ResolvedModel;
use crate::tools::{ToolContext, ToolRegistry};

pub(crate) use model_step::sub_agent_failure_text;

/// Everything a thread runs with. Only the tool registry can change during the turn, when an MCP server's
/// tools change (the thread then takes a copy with the tools listed again).
#[derive(Clone)]
pub struct ThreadSetup {
    pub model: ResolvedModel,
    pub system_prompt: String,
    /// Messages sent before the context on every call (the spec's seed messages; a sub-agent's task).
    pub seed: Vec<Message>,
    pub sampling: SamplingParams,
    pub extras: Map<String, Value>,
    pub response_format: Option<ResponseFormat>,
    pub iteration_limit: u32,
    pub registry: ToolRegistry,
    pub deferred: Option<Arc<DeferredTools>>,
    /// Compact once the context reaches this many tokens; `None`: compaction is off.
    pub compaction_threshold: Option<u64>,
    pub large_responses: bool,
    /// The turn's sandbox, where large results are also saved whole.
    pub sandbox: Option<Arc<crate::sandbox::TurnSandbox>>,
    pub sub_agents_available: bool,
    /// The estimated parts of every call's input that do not depend on the conversation.
    pub breakdown: InputTokensBreakdown,
}

/// What the threads of a turn share.
pub struct TurnEnv {
    pub journal: Arc<Journal>,
    pub cancel: TurnCancel,
    pub tool_timeout: Duration,
    /// Tools the user allowed beyond one call, for the whole session or for every session of its saved
    /// agent (read when the turn started): `(tool set id, tool name)`.
    pub session_approvals: HashSet<(String, String)>,
}

impl TurnEnv {
    /// Stores and streams `mcp.auth_required` for `servers` (each once); the event is the turn's required
    /// action. Run-level, so it names no thread.
    pub async fn ask_for_authorization(
        &self,
        servers: impl IntoIterator<Item = McpServerAuthInfo>,
    ) -> Result<ActionRequiredEvent, AgentError> {
        let mut unique: Vec<McpServerAuthInfo> = Vec::new();
        for server in servers {
            if !unique.iter().any(|known| known.id == server.id) {
                unique.push(server);
            }
        }
        let event = McpAuthRequiredEvent {
            id: self.journal.next_id(),
            created_at: crate::ids::now_iso(),
            thread_id: None,
            mcp_servers: unique,
        };
        self.journal
            .persist(SessionEvent::McpAuthRequired(event.clone()))
            .await?;
        Ok(ActionRequiredEvent::McpAuthRequired(event))
    }
}

/// Why a thread stopped running.
#[derive(Debug)]
pub enum ThreadExit {
    /// The thread's agent gave its final answer.
    Done(ModelMessageEvent),
    /// The thread failed; a sub-agent's failure becomes its parent's tool result.
    Failed {
        error: String,
        output: Option<ModelMessageEvent>,
    },
    /// Calls wait for the user; the events were persisted and streamed.
    NeedsUser(Vec<ActionRequiredEvent>),
    /// Sub-agents to start, by the tool call that asked for each.
    Spawn(Vec<(String, AgentInfo)>),
    /// Only running sub-agents can move the thread on.
    WaitingForChildren,
    Cancelled,
}

pub struct AgentThread {
    pub id: ThreadId,
    pub title: String,
    pub context: Vec<ContextMessage>,
    pub usage: CurrentContextUsage,
    pub parent: Option<AgentParent>,
    pub agent_info: Option<AgentInfo>,
    pub completion: Option<SubAgentCompletion>,
    pub capability_state: Map<String, Value>,
    /// The context converted into model messages, updated as it grows (see [`ModelMessages`]).
    pub model_messages: ModelMessages,
    pub setup: Arc<ThreadSetup>,
    pub metrics: ThreadMetrics,
    /// Calls of this thread whose sub-agent is running.
    pub spawned: HashSet<String>,
}

impl AgentThread {
    pub fn from_snapshot(snapshot: AgentThreadSnapshot, setup: Arc<ThreadSetup>) -> Self {
        let title = snapshot
            .agent_info
            .as_ref()
            .map_or_else(|| snapshot.thread_id.to_string(), |info| info.name.clone());
        Self {
            id: snapshot.thread_id,
            title,
            context: snapshot.context,
            usage: snapshot.current_context_usage,
            parent: snapshot.parent,
            agent_info: snapshot.agent_info,
            completion: snapshot.completion,
            capability_state: snapshot.capability_state.unwrap_or_default(),
            model_messages: ModelMessages::default(),
            setup,
            metrics: ThreadMetrics::default(),
            spawned: HashSet::new(),
        }
    }

    pub fn is_sub_agent(&self) -> bool {
        self.parent.is_some()
    }

    pub fn need(&self) -> ThreadNeed {
        thread_need(&self.context, &self.spawned)
    }

    pub(crate) fn tool_context(&self, env: &TurnEnv) -> ToolContext {
        ToolContext {
            turn: env.journal.key.clone(),
            thread_id: self.id.clone(),
            is_sub_agent: self.is_sub_agent(),
            cancel: env.cancel.token().child_token(),
        }
    }

    /// Runs until the thread cannot go on by itself. Store failures end the turn (`Err`).
    pub async fn run(&mut self, env: &TurnEnv) -> Result<ThreadExit, AgentError> {
        loop {
            if env.cancel.is_cancelled() {
                return Ok(ThreadExit::Cancelled);
            }
            let exit = match self.need() {
                ThreadNeed::Model => {
                    if self.metrics.iterations >= self.setup.iteration_limit {
                        return Ok(ThreadExit::Failed {
                            error: format!(
                                "The iteration limit of {} model calls was reached; send another message to continue.",
                                self.setup.iteration_limit
                            ),
                            output: None,
                        });
                    }
                    if let Some(exit) = self.compact_if_needed(env).await? {
                        return Ok(exit);
                    }
                    self.model_step(env).await?
                }
                ThreadNeed::Tools => self.tool_step(env).await?,
                ThreadNeed::User => Some(self.user_step(env).await?),
                ThreadNeed::Children => Some(ThreadExit::WaitingForChildren),
            };
            if let Some(exit) = exit {
                return Ok(exit);
            }
        }
    }

    /// Commits a step: its events, rows and `record` are stored in one transaction, then kept in memory
    /// (and the streamed events sent live).
    pub(crate) async fn commit(
        &mut self,
        env: &TurnEnv,
        events: Vec<(SessionEvent, Publish)>,
        rows: Vec<ContextMessage>,
        usage: CurrentContextUsage,
        completion: Option<SubAgentCompletion>,
        record: Option<Record>,
    ) -> Result<(), AgentError> {
        let patch = record.as_ref().map(Record::patch);
        env.journal
            .commit(&self.id, events, rows.clone(), Some(usage), completion.clone(), patch)
            .await?;
        if let Some(record) = record {
            record.write_into(&mut self.capability_state);
        }
        self.context.extend(rows);
        self.usage = usage;
        if completion.is_some() {
            self.completion = completion;
        }
        Ok(())
    }

    /// Commits one tool result the runtime itself gives a call (a sub-agent's answer, a refusal), with its
    /// streamed `tool.response`.
    pub(crate) async fn commit_tool_result(
        &mut self,
        env: &TurnEnv,
        event: ToolResponseEvent,
        row: ContextMessage,
    ) -> Result<(), AgentError> {
        let rows = vec![row];
        let usage = self.usage_with(&rows);
        self.commit(env, vec![(event.into(), Publish::Stream)], rows, usage, None, None)
            .await
    }

    /// The usage after appending `rows`: the last known size plus an estimate of the new rows.
    pub(crate) fn usage_with(&self, rows: &[ContextMessage]) -> CurrentContextUsage {
        CurrentContextUsage {
            prompt_tokens: self.usage.prompt_tokens
                + self.usage.completion_tokens
                + crate::context::estimate_rows(rows),
            completion_tokens: 0,
        }
    }
}
