//! Runs a turn's threads: the root agent and its sub-agents, at most [`MAX_PARALLEL_SUB_AGENTS`] of them
//! at once in a sliding pool (a finished sub-agent frees its slot at once), one level deep. A sub-agent's
//! result reaches its parent exactly once: its completion is stored with its last message, and delivery
//! checks that the parent's call is still open.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use tracing::Instrument as _;

use async_trait::async_trait;
use tokio::task::JoinSet;
use trueforge_protocol::{
    ActionRequiredEvent, AgentInfo, AgentParent, AgentThreadSnapshot, ContextMessage, ContextToolMessage,
    MAIN_THREAD_ID, ModelMessageEvent, SubAgentCompletion, ThreadCreatedEvent, ThreadDoneEvent, ThreadId, ThreadState,
    ToolResponseEvent,
};

use crate::context::open_calls;
use crate::error::AgentError;
use crate::ids::now_iso;
use crate::metrics::ThreadMetrics;
use crate::thread::{AgentThread, ThreadExit, ThreadSetup, TurnEnv, sub_agent_failure_text};

/// How many sub-agents run at the same time.
pub const MAX_PARALLEL_SUB_AGENTS: usize = 5;

/// Builds the setup of a sub-agent the root asks for.
#[async_trait]
pub trait ChildFactory: Send + Sync {
    async fn child_setup(&self, info: &AgentInfo) -> Result<Arc<ThreadSetup>, String>;
}

/// How the turn's threads ended.
#[derive(Debug)]
#[expect(clippy::large_enum_variant, reason = "one value per turn, moved once")]
pub enum TurnEnd {
    /// The root answered (`output`), or threads wait for the user (`required_actions`).
    Done {
        output: Option<ModelMessageEvent>,
        required_actions: Vec<ActionRequiredEvent>,
    },
    /// The root failed.
    Error(String),
    Cancelled,
}

/// What a run of the orchestrator ended with.
pub struct Ran {
    pub end: Result<TurnEnd, AgentError>,
    pub metrics: ThreadMetrics,
    /// The contexts of the threads the turn ended with, by thread id.
    pub contexts: crate::context_cache::ThreadContexts,
    /// Their conversions into model messages.
    pub model_messages: BTreeMap<ThreadId, crate::context::ModelMessages>,
}

/// Running threads are tasks of their own, so they keep making progress while the orchestrator awaits
/// its own writes (delivering a result, spawning): polling them only from this loop would stall a thread
/// holding the journal while the loop waits for that same journal.
type Running = JoinSet<(AgentThread, Result<ThreadExit, AgentError>)>;

pub struct Orchestrator {
    env: Arc<TurnEnv>,
    factory: Arc<dyn ChildFactory>,
    idle: BTreeMap<ThreadId, AgentThread>,
    /// Threads that stay idle until something changes for them (paused, waiting, or finished root).
    parked: HashSet<ThreadId>,
    finished: ThreadMetrics,
}

impl Orchestrator {
    pub fn new(env: Arc<TurnEnv>, factory: Arc<dyn ChildFactory>, threads: Vec<AgentThread>) -> Self {
        let mut idle: BTreeMap<ThreadId, AgentThread> =
            threads.into_iter().map(|thread| (thread.id.clone(), thread)).collect();
        let links: Vec<(String, String)> = idle
            .values()
            .filter_map(|thread| {
                thread
                    .parent
                    .as_ref()
                    .map(|parent| (parent.thread_id.clone(), parent.tool_call_id.clone()))
            })
            .collect();
        for (parent_id, call_id) in links {
            if let Some(parent) = idle.get_mut(parent_id.as_str()) {
                parent.spawned.insert(call_id);
            }
        }
        Self {
            env,
            factory,
            idle,
            parked: HashSet::new(),
            finished: ThreadMetrics::default(),
        }
    }

    /// Runs every thread until the root finishes, the turn is cancelled, or nothing can move without the
    /// user. `Err` only for store failures.
    pub async fn run(mut self) -> Ran {
        let end = self.drive().await;
        let mut metrics = std::mem::take(&mut self.finished);
        for thread in self.idle.values() {
            metrics.merge(&thread.metrics);
        }
        let mut contexts = BTreeMap::new();
        let mut model_messages = BTreeMap::new();
        for (id, thread) in std::mem::take(&mut self.idle) {
            model_messages.insert(id.clone(), thread.model_messages);
            contexts.insert(id, thread.context);
        }
        Ran {
            end,
            metrics,
            contexts,
            model_messages,
        }
    }

    async fn drive(&mut self) -> Result<TurnEnd, AgentError> {
        self.deliver_stored_completions().await?;
        let mut running: Running = JoinSet::new();
        let mut running_children = 0usize;
        let mut required_actions = Vec::new();
        let mut root_end: Option<TurnEnd> = None;
        let mut failure: Option<AgentError> = None;
        loop {
            if failure.is_none() && !self.env.cancel.is_cancelled() && root_end.is_none() {
                for id in self.runnable(running_children) {
                    let Some(mut thread) = self.idle.remove(&id) else {
                        continue;
                    };
                    if thread.is_sub_agent() {
                        running_children += 1;
                    }
                    let env = self.env.clone();
                    // In the turn's span (a sub-agent in one of its own under it): the thread's model and
                    // tool call spans belong to the turn's trace.
                    let span = match &thread.agent_info {
                        Some(info) => crate::telemetry::sub_agent_span(&info.name, thread.id.as_str()),
                        None => tracing::Span::current(),
                    };
                    running.spawn(
                        async move {
                            let exit = thread.run(&env).await;
                            (thread, exit)
                        }
                        .instrument(span),
                    );
                }
            }
            let Some(joined) = running.join_next().await else {
                break;
            };
            let (thread, exit) = match joined {
                Ok(finished) => finished,
                Err(panic) => {
                    // A thread task panicked: its state is gone, so the turn cannot go on.
                    self.env
                        .cancel
                        .cancel(trueforge_protocol::CancellationReason::Abandoned);
                    failure.get_or_insert(AgentError::Internal(panic));
                    continue;
                }
            };
            if thread.is_sub_agent() {
                running_children -= 1;
            }
            let id = thread.id.clone();
            let exit = match exit {
                Ok(exit) => exit,
                Err(error) => {
                    // The store failed: stop starting work and let the running threads see the cancel.
                    self.env
                        .cancel
                        .cancel(trueforge_protocol::CancellationReason::Abandoned);
                    failure.get_or_insert(error);
                    self.idle.insert(id, thread);
                    continue;
                }
            };
            self.idle.insert(id.clone(), thread);
            match exit {
                ThreadExit::Done(output) if id == MAIN_THREAD_ID => {
                    self.parked.insert(id);
                    root_end = Some(TurnEnd::Done {
                        output: Some(output),
                        required_actions: Vec::new(),
                    });
                }
                ThreadExit::Failed { error, .. } if id == MAIN_THREAD_ID => {
                    self.parked.insert(id);
                    root_end = Some(TurnEnd::Error(error));
                }
                ThreadExit::Done(_) | ThreadExit::Failed { .. } => {
                    if let Err(error) = self.finish_child(&id, exit).await {
                        failure.get_or_insert(error);
                    }
                }
                ThreadExit::NeedsUser(events) => {
                    self.parked.insert(id);
                    required_actions.extend(events);
                }
                ThreadExit::Spawn(requests) => {
                    if let Err(error) = self.spawn(&id, requests).await {
                        failure.get_or_insert(error);
                    }
                }
                ThreadExit::WaitingForChildren | ThreadExit::Cancelled => {
                    self.parked.insert(id);
                }
            }
        }
        if let Some(error) = failure {
            return Err(error);
        }
        if let Some(end) = root_end {
            return Ok(end);
        }
        if self.env.cancel.is_cancelled() {
            return Ok(TurnEnd::Cancelled);
        }
        Ok(TurnEnd::Done {
            output: None,
            required_actions,
        })
    }

    /// Idle threads that can run now: not parked, without sub-agents of their own still alive, and
    /// sub-agents only while a pool slot is free.
    fn runnable(&self, running_children: usize) -> Vec<ThreadId> {
        let parents_with_children: HashSet<&str> = self
            .idle
            .values()
            .filter_map(|thread| thread.parent.as_ref().map(|parent| parent.thread_id.as_str()))
            .collect();
        let mut free_slots = MAX_PARALLEL_SUB_AGENTS.saturating_sub(running_children);
        let mut ready = Vec::new();
        for thread in self.idle.values() {
            if self.parked.contains(&thread.id)
                || !thread.spawned.is_empty()
                || parents_with_children.contains(thread.id.as_str())
            {
                continue;
            }
            if thread.is_sub_agent() {
                if free_slots == 0 {
                    continue;
                }
                free_slots -= 1;
            }
            ready.push(thread.id.clone());
        }
        ready
    }

    /// Sub-agents that finished before a crash but whose result was not delivered yet.
    async fn deliver_stored_completions(&mut self) -> Result<(), AgentError> {
        let finished: Vec<ThreadId> = self
            .idle
            .values()
            .filter(|thread| thread.completion.is_some())
            .map(|thread| thread.id.clone())
            .collect();
        for id in finished {
            self.deliver(&id).await?;
        }
        Ok(())
    }

    /// Stores the completion of a sub-agent that failed without one, then delivers it.
    async fn finish_child(&mut self, id: &ThreadId, exit: ThreadExit) -> Result<(), AgentError> {
        let Some(thread) = self.idle.get_mut(id) else {
            return Ok(());
        };
        if thread.completion.is_none()
            && let (ThreadExit::Failed { error, output }, Some(parent)) = (exit, thread.parent.clone())
        {
            let output =
                output.unwrap_or_else(|| ModelMessageEvent::placeholder(self.env.journal.next_id(), id, now_iso()));
            let completion = SubAgentCompletion::Error {
                send_to_parent: ContextToolMessage {
                    tool_call_id: parent.tool_call_id,
                    content: sub_agent_failure_text(&error, &output.text()),
                    full_content: None,
                    images: Vec::new(),
                },
                output,
                error_message: Some(error),
            };
            self.env
                .journal
                .store
                .append_to_thread_context(&self.env.journal.key, id, Vec::new(), None, Some(completion.clone()))
                .await?;
            thread.completion = Some(completion);
        }
        self.deliver(id).await
    }

    /// Gives a finished sub-agent's result to its parent (unless the parent already has it), announces
    /// the end of the thread and drops it from the turn.
    async fn deliver(&mut self, id: &ThreadId) -> Result<(), AgentError> {
        let Some(child) = self.idle.remove(id) else {
            return Ok(());
        };
        let (Some(parent_ref), Some(completion)) = (child.parent.clone(), child.completion.clone()) else {
            self.idle.insert(id.clone(), child);
            return Ok(());
        };
        let journal = self.env.journal.clone();
        let result = completion.send_to_parent().clone();
        if let Some(parent) = self.idle.get_mut(parent_ref.thread_id.as_str()) {
            let still_open = open_calls(&parent.context)
                .iter()
                .any(|call| call.id == parent_ref.tool_call_id);
            if still_open {
                let event = ToolResponseEvent {
                    id: journal.next_id(),
                    created_at: now_iso(),
                    thread_id: parent.id.to_string(),
                    tool_call_id: result.tool_call_id.clone(),
                    content: result.content.clone(),
                };
                parent
                    .commit_tool_result(&self.env, event, ContextMessage::Tool(result))
                    .await?;
            }
            parent.spawned.remove(&parent_ref.tool_call_id);
            self.parked.remove(parent_ref.thread_id.as_str());
        }
        let state = match &completion {
            SubAgentCompletion::Done { output, .. } => ThreadState::Done { output: output.clone() },
            SubAgentCompletion::Error {
                output, error_message, ..
            } => ThreadState::Error {
                error: error_message
                    .clone()
                    .unwrap_or_else(|| "the sub-agent failed".to_owned()),
                output: Some(output.clone()),
            },
        };
        journal
            .persist(ThreadDoneEvent {
                id: journal.next_id(),
                created_at: now_iso(),
                thread_id: child.id.to_string(),
                title: child.title.clone(),
                parent: Some(parent_ref),
                state,
            })
            .await?;
        journal
            .store
            .remove_threads(&journal.key, std::slice::from_ref(&child.id))
            .await?;
        self.finished.merge(&child.metrics);
        Ok(())
    }

    async fn spawn(&mut self, parent_id: &ThreadId, requests: Vec<(String, AgentInfo)>) -> Result<(), AgentError> {
        for (call_id, info) in requests {
            let journal = self.env.journal.clone();
            let parent = AgentParent {
                thread_id: parent_id.to_string(),
                tool_call_id: call_id.clone(),
            };
            let setup = match self.factory.child_setup(&info).await {
                Ok(setup) => setup,
                Err(problem) => {
                    self.answer_call(
                        parent_id,
                        &call_id,
                        &format!("The sub-agent could not start: {problem}"),
                    )
                    .await?;
                    continue;
                }
            };
            let snapshot = AgentThreadSnapshot {
                parent: Some(parent.clone()),
                agent_info: Some(info.clone()),
                ..AgentThreadSnapshot::empty(journal.next_id())
            };
            journal.store.add_threads(&journal.key, vec![snapshot.clone()]).await?;
            let child = AgentThread::from_snapshot(snapshot, setup);
            journal
                .persist(ThreadCreatedEvent {
                    id: journal.next_id(),
                    created_at: now_iso(),
                    thread_id: child.id.to_string(),
                    title: child.title.clone(),
                    parent,
                    agent_info: info,
                })
                .await?;
            if let Some(parent) = self.idle.get_mut(parent_id) {
                parent.spawned.insert(call_id);
            }
            self.idle.insert(child.id.clone(), child);
        }
        self.parked.remove(parent_id);
        Ok(())
    }

    /// Closes a sub-agent call that never got its sub-agent.
    async fn answer_call(&mut self, thread_id: &ThreadId, call_id: &str, message: &str) -> Result<(), AgentError> {
        let Some(thread) = self.idle.get_mut(thread_id) else {
            return Ok(());
        };
        let content = crate::tools::error_json(message);
        let event = ToolResponseEvent {
            id: self.env.journal.next_id(),
            created_at: now_iso(),
            thread_id: thread_id.to_string(),
            tool_call_id: call_id.to_owned(),
            content: content.clone(),
        };
        thread
            .commit_tool_result(&self.env, event, ContextMessage::tool_result(call_id, content))
            .await
    }
}
