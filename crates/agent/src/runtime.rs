//! The runtime's entry points: create a turn (admit its input, commit it, run it) and resume a running
//! turn from its persisted snapshot after a crash.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use trueforge_protocol::{
    AgentSpec, AgentThreadSnapshot, ApprovalScope, CancellationReason, MAIN_THREAD_ID, McpInitializeEvent,
    McpServerInitInfo, SessionAgent, SessionEvent, ThreadDoneEvent, ThreadState, ToolResponseEvent, TurnCreatedEvent,
    TurnInputItem, TurnState, validate_turn_input,
};
use trueforge_store::session::model::{
    ContextAppend, FreezeTurn, LeaseRequest, NewThread, NewTurn, StoredEvent, TurnDone, TurnKey,
};
use trueforge_store::{SessionStore, StoreError};

use crate::admission::{Admission, add_session_approvals, admit, admit_with, session_approvals};
use crate::approvals::{agent_scope_target, check_max_scope};
use crate::cancel::TurnCancel;
use crate::error::AgentError;
use crate::finish::finish_turn;
use crate::ids::{EventIds, now_iso};
use crate::journal::{Journal, STREAM_BUFFER, StreamItem};
use crate::metrics::ThreadMetrics;
use crate::model::ModelResolver;
use crate::orchestrator::{Orchestrator, TurnEnd};
use crate::recovery::reconcile_open_calls;
use crate::seams::{AgentApprovals, AgentDirectory, ToolSetResolver};
use crate::setup::TurnResources;
use crate::thread::{AgentThread, TurnEnv};
use crate::tools::{ToolContext, ToolError};
use trueforge_protocol::sync::lock;

#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// How long one tool call may run.
    pub tool_timeout: Duration,
    /// How long a turn may run before it is cancelled with `server-execution-timeout`; `None`: no limit.
    pub execution_timeout: Option<Duration>,
    /// The lease a new turn is created with (owner and time to live), so a sweeper can tell a turn whose
    /// executor died from one still running; `None`: no lease (the host does not recover turns).
    pub lease: Option<LeaseRequest>,
    /// How long a paused turn's approvals and questions hold the conversation: after it, a new user message
    /// is accepted and closes them as unanswered (not executed) instead of being refused. `None`: they hold
    /// until answered.
    pub approval_timeout: Option<Duration>,
    /// The broadest approval scope a user may give; an input asking for more is refused.
    pub approval_max_scope: ApprovalScope,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            tool_timeout: Duration::from_secs(240),
            execution_timeout: None,
            lease: None,
            approval_timeout: None,
            approval_max_scope: ApprovalScope::Agent,
        }
    }
}

/// Which turn a new turn continues.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PreviousTurn {
    /// The session's latest turn.
    #[default]
    Auto,
    /// None: a new conversation in the same session.
    None,
    /// That turn (a fork when it is not the latest).
    Id(String),
}

#[derive(Debug, Clone)]
pub struct TurnRequest {
    pub tenant_id: String,
    pub session_id: String,
    pub turn_id: String,
    pub input: Vec<TurnInputItem>,
    pub previous_turn_id: PreviousTurn,
    pub custom: Option<Value>,
}

/// A turn running in the background: its live events, its cancel handle and its end.
pub struct StartedTurn {
    pub key: TurnKey,
    pub events: mpsc::Receiver<StreamItem>,
    pub cancel: TurnCancel,
    pub task: JoinHandle<Option<TurnState>>,
}

impl StartedTurn {
    /// Waits for the end, gathering every streamed event.
    pub async fn collect(mut self) -> (Vec<StreamItem>, Option<TurnState>) {
        let mut items = Vec::new();
        while let Some(item) = self.events.recv().await {
            items.push(item);
        }
        let state = self.task.await.ok().flatten();
        (items, state)
    }
}

pub struct Runtime {
    pub store: Arc<dyn SessionStore>,
    pub models: Arc<dyn ModelResolver>,
    pub agents: Arc<dyn AgentDirectory>,
    pub tools: Arc<dyn ToolSetResolver>,
    /// Where the tools allowed for a saved agent are kept; `None`: nowhere, so the `agent` scope is refused.
    pub agent_approvals: Option<Arc<dyn AgentApprovals>>,
    pub options: RuntimeOptions,
    pub ids: Arc<EventIds>,
    /// The turns this runtime is running, so a new turn or a client can cancel them.
    live: LiveTurns,
}

/// Cancel handles of the turns running in this process.
#[derive(Clone, Default)]
struct LiveTurns(Arc<std::sync::Mutex<HashMap<TurnKey, TurnCancel>>>);

impl LiveTurns {
    fn with<R>(&self, f: impl FnOnce(&mut HashMap<TurnKey, TurnCancel>) -> R) -> R {
        let mut map = lock(&self.0);
        f(&mut map)
    }
}

impl Runtime {
    pub fn new(
        store: Arc<dyn SessionStore>,
        models: Arc<dyn ModelResolver>,
        agents: Arc<dyn AgentDirectory>,
        tools: Arc<dyn ToolSetResolver>,
        options: RuntimeOptions,
    ) -> Self {
        Self {
            store,
            models,
            agents,
            tools,
            agent_approvals: None,
            options,
            ids: Arc::new(EventIds::new()),
            live: LiveTurns::default(),
        }
    }

    /// Remembers `agent`-scope approvals in `approvals` and lets saved agents' sessions use them.
    pub fn with_agent_approvals(mut self, approvals: Arc<dyn AgentApprovals>) -> Self {
        self.agent_approvals = Some(approvals);
        self
    }

    /// Cancels a turn this runtime is running. `false` when it runs elsewhere or has ended.
    pub fn cancel_turn(&self, key: &TurnKey, reason: CancellationReason) -> bool {
        match self.live.with(|turns| turns.get(key).cloned()) {
            Some(cancel) => {
                cancel.cancel(reason);
                true
            }
            None => false,
        }
    }

    /// Whether this runtime is running the turn.
    pub fn is_running(&self, key: &TurnKey) -> bool {
        self.live.with(|turns| turns.contains_key(key))
    }

    /// Validates and admits the input, freezes the predecessor, commits the turn and starts running it.
    /// Nothing is written when the input is rejected.
    pub async fn create_turn(&self, request: TurnRequest) -> Result<StartedTurn, AgentError> {
        validate_turn_input(&request.input).map_err(|error| AgentError::InvalidInput(error.to_string()))?;
        check_max_scope(&request.input, self.options.approval_max_scope)?;
        let session = self
            .store
            .get_session(&request.tenant_id, &request.session_id)
            .await?
            .ok_or(AgentError::SessionNotFound)?;
        // Everything that can fail without touching the conversation comes first, so a failing request
        // neither writes nor cancels a running predecessor.
        let approving_agent = agent_scope_target(&request.input, &session.agent)?;
        if approving_agent.is_some() && self.agent_approvals.is_none() {
            return Err(AgentError::InvalidInput(
                "the approval scope 'agent' is not available here: nothing remembers approvals for agents".to_owned(),
            ));
        }
        let spec = self.spec(&request.tenant_id, &session.agent).await?;
        let mut agent_approvals = self.agent_approved_tools(&request.tenant_id, &session.agent).await?;
        let key = TurnKey::new(&request.tenant_id, &request.session_id, &request.turn_id);
        let cancel = TurnCancel::new();
        let mut resources = self.resources(&key, &session.created_by, spec, &cancel).await?;
        let previous_id = match &request.previous_turn_id {
            PreviousTurn::Auto => session.last_turn_id.clone(),
            PreviousTurn::None => None,
            PreviousTurn::Id(id) => Some(id.clone()),
        };
        let mut threads: BTreeMap<String, AgentThreadSnapshot> = BTreeMap::new();
        let mut unanswered_expired = false;
        if let Some(previous_id) = &previous_id {
            let key = TurnKey::new(&request.tenant_id, &request.session_id, previous_id);
            let freeze = FreezeTurn {
                reason: CancellationReason::CancelledForNextTurn,
                metrics: None,
                done: TurnDone {
                    event_id: self.ids.next(),
                    min_seq: 0,
                },
            };
            let previous = self
                .store
                .get_turn(&key)
                .await?
                .ok_or_else(|| AgentError::TurnNotFound(previous_id.clone()))?;
            let previous = if previous.turn.state.is_terminal() {
                previous
            } else {
                // Check the input before cancelling the running predecessor, then admit it again against the
                // frozen snapshot below.
                admit(&with_root(previous.snapshot.threads), &request.input)?;
                let frozen = self
                    .store
                    .freeze_and_get_turn(&key, freeze)
                    .await
                    .map_err(|error| match error {
                        StoreError::TurnNotFound { turn_id } => AgentError::TurnNotFound(turn_id),
                        other => AgentError::Store(other),
                    })?;
                // The store already holds its `turn.done`; stopping the task ends its model calls and tools,
                // and its stream ends with that stored `turn.done`.
                self.cancel_turn(&key, CancellationReason::CancelledForNextTurn);
                frozen
            };
            unanswered_expired = self.pause_expired(&previous.turn.state);
            resources.known_mcp_sessions = previous.snapshot.mcp_servers.unwrap_or_default();
            threads = previous.snapshot.threads;
        }
        let first_turn = !threads.contains_key(MAIN_THREAD_ID);
        let mut threads = with_root(threads);
        let mut admission = admit_with(&threads, &request.input, unanswered_expired)?;
        if session.last_turn_id.is_some() && session.last_turn_id != previous_id {
            // A new conversation or a fork still has the tools allowed for the session on its latest turn.
            self.inherit_session_approvals(&request, session.last_turn_id.as_deref(), &mut admission)
                .await?;
        }

        // The threads as they are once the input is in.
        for (thread_id, rows) in &admission.appends {
            if let Some(thread) = threads.get_mut(thread_id) {
                thread.current_context_usage.prompt_tokens += crate::context::estimate_rows(rows);
                thread.context.extend(rows.iter().cloned());
            }
        }
        for (thread_id, state) in &admission.capability_states {
            if let Some(thread) = threads.get_mut(thread_id) {
                thread.capability_state = Some(state.clone());
            }
        }
        // Stopped sub-agents carry into the new turn (the store wants every thread accounted for) and are
        // dropped right after it is committed.
        let running: BTreeMap<String, AgentThreadSnapshot> = threads
            .iter()
            .filter(|(id, _)| !admission.stopped_threads.contains(id))
            .map(|(id, thread)| (id.clone(), thread.clone()))
            .collect();
        let closed_events = admission.closed_calls.iter().map(|(thread_id, call_id, content)| {
            SessionEvent::ToolResponse(ToolResponseEvent {
                id: self.ids.next(),
                created_at: now_iso(),
                thread_id: thread_id.clone(),
                tool_call_id: call_id.clone(),
                content: content.clone(),
            })
        });
        let closing_events: Vec<SessionEvent> = closed_events
            .chain(
                admission
                    .stopped_threads
                    .iter()
                    .filter_map(|id| threads.get(id))
                    .map(|thread| {
                        SessionEvent::ThreadDone(ThreadDoneEvent {
                            id: self.ids.next(),
                            created_at: now_iso(),
                            thread_id: thread.thread_id.clone(),
                            title: thread
                                .agent_info
                                .as_ref()
                                .map_or_else(|| thread.thread_id.clone(), |info| info.name.clone()),
                            parent: thread.parent.clone(),
                            state: ThreadState::Error {
                                error: "stopped: the user sent a new message".to_owned(),
                                output: None,
                            },
                        })
                    }),
            )
            .collect();
        let built = self.build_threads(&resources, &running).await?;
        // Remembered before the turn is committed: a failed write refuses the input with nothing written,
        // and a turn that fails later keeps what the user allowed. (The settings store is not the session
        // store, so the two writes cannot share a transaction; an approval without its turn is harmless.)
        if let (Some(agent_id), Some(store)) = (approving_agent, &self.agent_approvals)
            && !admission.agent_approvals.is_empty()
        {
            store
                .approve_tools(&request.tenant_id, agent_id, &admission.agent_approvals)
                .await?;
            agent_approvals.extend(admission.agent_approvals.iter().cloned());
        }

        // The turn's first events are stored with the turn itself, so a turn never exists without its
        // `turn.created` (nor without the closing of what its input stopped).
        let created = TurnCreatedEvent {
            id: self.ids.next(),
            created_at: now_iso(),
            thread_id: None,
            turn_id: request.turn_id.clone(),
            previous_turn_id: previous_id.clone(),
            input: (!request.input.is_empty()).then(|| request.input.clone()),
            state: TurnState::Running,
        };
        let first_events: Vec<StoredEvent> = std::iter::once(SessionEvent::TurnCreated(created))
            .chain(closing_events)
            .zip(1..)
            .map(|(event, seq)| StoredEvent { seq, event })
            .collect();
        let first_seq_count = first_events.len() as u64;
        let new_turn = NewTurn {
            tenant_id: request.tenant_id.clone(),
            session_id: request.session_id.clone(),
            turn_id: request.turn_id.clone(),
            previous_turn_id: previous_id.clone(),
            input: request.input.clone(),
            custom: request.custom.clone(),
            new_threads: if first_turn {
                vec![NewThread {
                    thread_id: MAIN_THREAD_ID.to_owned(),
                    parent: None,
                    agent_info: None,
                }]
            } else {
                Vec::new()
            },
            context_appends: admission
                .appends
                .iter()
                .filter(|(thread_id, _)| threads.contains_key(*thread_id))
                .map(|(thread_id, rows)| ContextAppend {
                    thread_id: thread_id.clone(),
                    messages: rows.clone(),
                    current_context_usage: threads.get(thread_id).map(|thread| thread.current_context_usage),
                })
                .collect(),
            capability_states: threads
                .iter()
                .map(|(id, thread)| (id.clone(), thread.capability_state.clone()))
                .collect(),
            title_if_unset: admission.title.clone(),
            lease: self.options.lease.clone(),
            events: first_events.clone(),
        };
        self.store.create_turn(new_turn).await.map_err(|error| match error {
            StoreError::SessionNotFound { .. } => AgentError::SessionNotFound,
            StoreError::PreviousTurnNotFound { turn_id } => AgentError::TurnNotFound(turn_id),
            other => AgentError::Store(other),
        })?;
        if !admission.stopped_threads.is_empty() {
            self.store.remove_threads(&key, &admission.stopped_threads).await?;
        }
        let mut approvals = session_approvals(
            threads
                .get(MAIN_THREAD_ID)
                .and_then(|main| main.capability_state.as_ref()),
        );
        approvals.extend(agent_approvals);
        Ok(self.start(
            key,
            first_seq_count,
            cancel,
            resources,
            built,
            approvals,
            Start::Fresh(first_events),
        ))
    }

    /// Continues a turn that is still `running` in the store (its executor died): rebuilds its threads
    /// from the snapshot, restores or closes the calls that were in flight, and runs it to its end.
    pub async fn resume_turn(&self, key: &TurnKey) -> Result<StartedTurn, AgentError> {
        let record = self
            .store
            .get_turn(key)
            .await?
            .ok_or_else(|| AgentError::TurnNotFound(key.turn_id.clone()))?;
        if record.turn.state.is_terminal() {
            return Err(AgentError::TurnNotRunning(key.turn_id.clone()));
        }
        let session = self
            .store
            .get_session(&key.tenant_id, &key.session_id)
            .await?
            .ok_or(AgentError::SessionNotFound)?;
        let spec = self.spec(&key.tenant_id, &session.agent).await?;
        let agent_approvals = self.agent_approved_tools(&key.tenant_id, &session.agent).await?;
        let cancel = TurnCancel::new();
        let mut resources = self.resources(key, &session.created_by, spec, &cancel).await?;
        resources.known_mcp_sessions = record.snapshot.mcp_servers.unwrap_or_default();
        let threads = record.snapshot.threads;
        let built = self.build_threads(&resources, &threads).await?;
        let mut approvals = session_approvals(
            threads
                .get(MAIN_THREAD_ID)
                .and_then(|main| main.capability_state.as_ref()),
        );
        approvals.extend(agent_approvals);
        Ok(self.start(
            key.clone(),
            crate::journal::resumed_seq(record.turn.last_seq),
            cancel,
            resources,
            built,
            approvals,
            Start::Resume,
        ))
    }

    /// Whether a paused turn has waited longer than the approval timeout for its answers.
    fn pause_expired(&self, state: &TurnState) -> bool {
        let (
            Some(timeout),
            TurnState::Done {
                required_actions,
                completed_at,
                ..
            },
        ) = (self.options.approval_timeout, state)
        else {
            return false;
        };
        if required_actions.is_empty() {
            return false;
        }
        let Ok(paused_at) = chrono::DateTime::parse_from_rfc3339(completed_at) else {
            return false;
        };
        let waited = chrono::Utc::now().signed_duration_since(paused_at);
        waited.to_std().is_ok_and(|waited| waited >= timeout)
    }

    async fn inherit_session_approvals(
        &self,
        request: &TurnRequest,
        tip: Option<&str>,
        admission: &mut Admission,
    ) -> Result<(), AgentError> {
        let Some(tip) = tip else { return Ok(()) };
        let key = TurnKey::new(&request.tenant_id, &request.session_id, tip);
        // Only the root's capability state is needed: the turn's contexts are not read.
        let state = match self.store.thread_capability_state(&key, MAIN_THREAD_ID).await {
            Ok(state) => state,
            Err(StoreError::TurnNotFound { .. } | StoreError::ThreadNotFound { .. }) => return Ok(()),
            Err(other) => return Err(other.into()),
        };
        let approvals = session_approvals(state.as_ref());
        add_session_approvals(
            admission
                .capability_states
                .entry(MAIN_THREAD_ID.to_owned())
                .or_default(),
            &approvals,
        );
        Ok(())
    }

    /// The tools users allowed for the session's saved agent, read when a turn starts or resumes (a
    /// revocation reaches the next turn). None for an inline agent.
    async fn agent_approved_tools(
        &self,
        tenant_id: &str,
        agent: &SessionAgent,
    ) -> Result<HashSet<(String, String)>, AgentError> {
        match (agent, &self.agent_approvals) {
            (SessionAgent::Reference { id, .. }, Some(store)) => store.approved_tools(tenant_id, id).await,
            _ => Ok(HashSet::new()),
        }
    }

    async fn spec(&self, tenant_id: &str, agent: &SessionAgent) -> Result<AgentSpec, AgentError> {
        let spec = match agent {
            SessionAgent::Inline { spec } => spec.clone(),
            SessionAgent::Reference { id, .. } => self
                .agents
                .agent_spec(tenant_id, id)
                .await?
                .ok_or_else(|| AgentError::AgentNotFound(id.clone()))?,
        };
        spec.validate()
            .map_err(|error| AgentError::InvalidSpec(error.to_string()))?;
        Ok(spec)
    }

    async fn resources(
        &self,
        key: &TurnKey,
        user_id: &str,
        spec: AgentSpec,
        cancel: &TurnCancel,
    ) -> Result<TurnResources, AgentError> {
        let root_model = self.models.resolve(&key.tenant_id, &spec.model.name).await?;
        let mut user_sets = Vec::new();
        let mut auth_required = Vec::new();
        for server in spec.mcp_servers.iter().flatten() {
            match self.tools.tool_set(&key.tenant_id, user_id, server).await {
                Ok(set) => user_sets.push(set),
                Err(ToolError {
                    auth_required: Some(info),
                    ..
                }) => auth_required.push(info),
                Err(error) => return Err(error.into()),
            }
        }
        let sub_agent_models = self.models.sub_agent_models(&key.tenant_id).await;
        Ok(TurnResources {
            tenant_id: key.tenant_id.clone(),
            spec,
            models: self.models.clone(),
            root_model,
            user_sets,
            sub_agent_models,
            tool_cx: ToolContext {
                turn: key.clone(),
                thread_id: MAIN_THREAD_ID.to_owned(),
                is_sub_agent: false,
                cancel: cancel.token().clone(),
            },
            store: self.store.clone(),
            auth_required,
            known_mcp_sessions: BTreeMap::new(),
        })
    }

    async fn build_threads(
        &self,
        resources: &TurnResources,
        threads: &BTreeMap<String, AgentThreadSnapshot>,
    ) -> Result<Vec<AgentThread>, AgentError> {
        let mut built = Vec::with_capacity(threads.len());
        for snapshot in threads.values() {
            let setup = match &snapshot.agent_info {
                Some(info) => resources.sub_agent_setup(info).await?,
                None => resources.root_setup().await?,
            };
            built.push(AgentThread::from_snapshot(snapshot.clone(), setup));
        }
        Ok(built)
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        key: TurnKey,
        last_seq: u64,
        cancel: TurnCancel,
        resources: TurnResources,
        threads: Vec<AgentThread>,
        session_approvals: HashSet<(String, String)>,
        start: Start,
    ) -> StartedTurn {
        let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
        let journal = Arc::new(Journal::new(
            key.clone(),
            self.store.clone(),
            self.ids.clone(),
            last_seq,
            sender,
        ));
        let env = Arc::new(TurnEnv {
            journal,
            cancel: cancel.clone(),
            tool_timeout: self.options.tool_timeout,
            session_approvals,
        });
        let timeout = self.options.execution_timeout;
        self.live.with(|turns| turns.insert(key.clone(), cancel.clone()));
        let live = self.live.clone();
        let live_key = key.clone();
        let task = tokio::spawn(async move {
            let state = run_turn(env, Arc::new(resources), threads, start, timeout).await;
            live.with(|turns| turns.remove(&live_key));
            state
        });
        StartedTurn {
            key,
            events: receiver,
            cancel,
            task,
        }
    }
}

/// The threads with an empty root added when there is none yet (a conversation's first turn).
fn with_root(mut threads: BTreeMap<String, AgentThreadSnapshot>) -> BTreeMap<String, AgentThreadSnapshot> {
    threads
        .entry(MAIN_THREAD_ID.to_owned())
        .or_insert_with(|| AgentThreadSnapshot::empty(MAIN_THREAD_ID));
    threads
}

enum Start {
    /// A new turn, with the events stored along with it (`turn.created`, then the closing of calls and
    /// sub-agents its input stopped), still to be streamed.
    Fresh(Vec<StoredEvent>),
    Resume,
}

/// Records the MCP sessions this turn runs on that the conversation did not know (a server used for the
/// first time, a new session after a reconnect or a restart): `mcp.initialize`, and the turn's snapshot, so
/// the next turn can tell whether it still runs on the same sessions.
async fn announce_mcp_sessions(env: &TurnEnv, resources: &TurnResources) -> Result<(), AgentError> {
    let new: Vec<McpServerInitInfo> = resources
        .user_sets
        .iter()
        .filter_map(|set| set.mcp_session())
        .filter(|session| resources.known_mcp_sessions.get(&session.id) != Some(session))
        .collect();
    if new.is_empty() {
        return Ok(());
    }
    let event = McpInitializeEvent {
        id: env.journal.next_id(),
        created_at: now_iso(),
        thread_id: MAIN_THREAD_ID.to_owned(),
        mcp_servers: new.clone(),
    };
    env.journal.persist(SessionEvent::McpInitialize(event)).await?;
    env.journal.store.patch_mcp_servers(&env.journal.key, new).await?;
    Ok(())
}

/// Ends a turn whose MCP servers the user must authorize first: the `mcp.auth_required` event is stored
/// and becomes the turn's required action; the model is not called, so the user's input waits in the
/// conversation for the next turn.
async fn wait_for_authorization(env: &TurnEnv, resources: &TurnResources) -> Result<TurnEnd, AgentError> {
    let action = env.ask_for_authorization(resources.auth_required.clone()).await?;
    Ok(TurnEnd::Done {
        output: None,
        required_actions: vec![action],
    })
}

async fn run_turn(
    env: Arc<TurnEnv>,
    resources: Arc<TurnResources>,
    mut threads: Vec<AgentThread>,
    start: Start,
    timeout: Option<Duration>,
) -> Option<TurnState> {
    let timer = timeout.map(|limit| {
        let cancel = env.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            cancel.cancel(CancellationReason::ServerExecutionTimeout);
        })
    });
    let prepared = match start {
        Start::Fresh(stored) => {
            env.journal.announce_stored(stored).await;
            Ok(ThreadMetrics::default())
        }
        Start::Resume => reconcile_open_calls(&env, &mut threads).await,
    };
    let prepared = match prepared {
        Ok(used_before) => announce_mcp_sessions(&env, &resources).await.map(|()| used_before),
        Err(error) => Err(error),
    };
    let (end, metrics) = match prepared {
        Ok(used_before) if !resources.auth_required.is_empty() => {
            (wait_for_authorization(&env, &resources).await, used_before)
        }
        Ok(used_before) => {
            let (end, mut metrics) = Orchestrator::new(env.clone(), resources, threads).run().await;
            metrics.merge(&used_before);
            (end, metrics)
        }
        Err(error) => (Err(error), ThreadMetrics::default()),
    };
    if let Some(timer) = timer {
        timer.abort();
    }
    finish_turn(&env, end, &metrics).await
}
