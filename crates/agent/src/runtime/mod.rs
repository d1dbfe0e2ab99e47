//! The runtime: the one owner of a turn's life. It creates turns (admit the input, commit it, run it; the
//! steps are in `create`), resumes a running turn from its persisted snapshot after a crash, and, in
//! `lifecycle`, cancels, freezes, renews and claims leases and shuts down, over the one registry of live
//! turns (`crate::lifecycle`).

mod create;
mod lifecycle;

pub use lifecycle::LeaseTiming;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use trueforge_bus::{BusEvent, Subscription};
use trueforge_protocol::{
    AgentSpec, AgentThreadSnapshot, ApprovalScope, CancellationReason, IdempotencyKey, MAIN_THREAD_ID,
    McpInitializeEvent, McpServerInitInfo, SessionAgent, SessionEvent, SessionId, TenantId, ThreadId, TurnId,
    TurnInputItem, TurnState,
};
use trueforge_store::session::model::{LeaseRequest, OpenMessage, StoredEvent, TurnKey};
use trueforge_store::{SessionStore, StoreError};

use crate::admission::{Admission, add_session_approvals, session_approvals};
use crate::cancel::TurnCancel;
use crate::context::ModelMessages;
use crate::context_cache::{ContextCache, KeptContexts};
use crate::error::AgentError;
use crate::finish::{Finished, finish_turn};
use crate::ids::{EventIds, now_iso};
use crate::journal::{Journal, STREAM_BUFFER, StreamItem};
use crate::lifecycle::Lifecycle;
use crate::live::{LiveStreams, stream_key};
use crate::metrics::ThreadMetrics;
use crate::model::ModelResolver;
use crate::orchestrator::{Orchestrator, TurnEnd};
use crate::recovery::reconcile_open_calls;
use crate::sandbox::{CodeModeTools, SandboxResolver, TurnSandbox};
use crate::seams::{AgentApprovals, AgentDirectory, ToolSetResolver};
use crate::setup::TurnResources;
use crate::thread::{AgentThread, TurnEnv};
use crate::tools::{ToolContext, ToolError};
use trueforge_sandbox::{SandboxError, SandboxOwner};

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
    /// How many context messages, across sessions, the runtime keeps in memory from turns that ended here,
    /// so the next turn of a session does not read its conversation back from the store (see
    /// `crate::context_cache`). 0 keeps none.
    pub kept_context_messages: usize,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            tool_timeout: Duration::from_secs(240),
            execution_timeout: None,
            lease: None,
            approval_timeout: None,
            approval_max_scope: ApprovalScope::Agent,
            // About 25 conversations of 2,000 messages.
            kept_context_messages: 50_000,
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
    Id(TurnId),
}

#[derive(Debug, Clone)]
pub struct TurnRequest {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    pub input: Vec<TurnInputItem>,
    pub previous_turn_id: PreviousTurn,
    pub custom: Option<Value>,
    /// The user asking for the turn; it must be the session's creator. `None`: the host checked already
    /// (or has no users).
    pub requested_by: Option<String>,
    /// The client's key for this creation: a request whose key already created a turn in the session
    /// starts nothing (see [`Runtime::start_turn`]). `None`: every request creates a turn.
    pub idempotency_key: Option<IdempotencyKey>,
}

/// What [`Runtime::start_turn`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnStart {
    /// The turn was created and runs; its first event is on the bus.
    Started(TurnKey),
    /// The request's idempotency key had already created this turn (for the same request): nothing was
    /// started or cancelled. The turn may be running or over.
    Existing(TurnKey),
}

/// A turn running in the background, registered and supervised by the runtime: its cancel handle, its live
/// stream (on the bus) and its end.
pub struct StartedTurn {
    pub key: TurnKey,
    pub cancel: TurnCancel,
    streams: LiveStreams,
    first: Option<oneshot::Receiver<()>>,
    end: oneshot::Receiver<Option<TurnState>>,
    subscription: Option<Subscription>,
    /// The number of the last entry read, so a new subscription (after the stream ended or broke) never
    /// gives an entry twice.
    cursor: u64,
}

impl StartedTurn {
    /// Waits until the turn's first event is on the bus (or its stream ended without one), so that a
    /// subscriber finds the stream.
    pub async fn first_event(&mut self) {
        if let Some(first) = self.first.take() {
            let _ = first.await;
        }
    }

    /// The next entry of the turn's live stream as the bus holds it (its number and its JSON), from the
    /// first; `None` after `turn.done` (or when the stream is gone). An SSE writer reads this way.
    pub async fn next_entry(&mut self) -> Option<BusEvent> {
        if self.subscription.is_none() {
            let stream = stream_key(&self.key);
            self.subscription = self
                .streams
                .bus
                .subscribe(&stream, self.cursor, Duration::ZERO)
                .await
                .ok();
        }
        let entry = match self.subscription.as_mut()?.next().await {
            Some(Ok(entry)) => entry,
            Some(Err(_)) | None => {
                self.subscription = None;
                return None;
            }
        };
        self.cursor = entry.seq;
        Some(entry)
    }

    /// The next event of the turn's live stream, read back into its type.
    pub async fn next_event(&mut self) -> Option<StreamItem> {
        let entry = self.next_entry().await?;
        match serde_json::from_str(&entry.json) {
            Ok(event) => Some(StreamItem { seq: entry.seq, event }),
            Err(error) => {
                tracing::error!(%error, "a published event does not read back");
                None
            }
        }
    }

    /// The state the turn ended with, once its stream has ended (`None`: not stored by this run).
    pub async fn end(self) -> Option<TurnState> {
        self.end.await.ok().flatten()
    }

    /// Waits for the end, gathering every streamed event.
    pub async fn collect(mut self) -> (Vec<StreamItem>, Option<TurnState>) {
        let mut items = Vec::new();
        while let Some(item) = self.next_event().await {
            items.push(item);
        }
        (items, self.end().await)
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
    /// The turns running here, their streams and their ends.
    lifecycle: Arc<Lifecycle>,
    /// The contexts of the latest turns that ended here, for the turns that continue them.
    kept: Arc<ContextCache>,
    /// Where agents with a sandbox get one; `None`: this host has none, and such agents cannot run.
    pub sandboxes: Option<Arc<dyn SandboxResolver>>,
    /// Carries cancels to the replica running a turn (hosted mode); `None`: this process is the only one.
    cancel_relay: Option<Arc<dyn trueforge_bus::CancelRelay>>,
}

/// The executor id of a runtime whose options name no lease owner.
const LOCAL_OWNER: &str = "local";

impl Runtime {
    pub fn new(
        store: Arc<dyn SessionStore>,
        models: Arc<dyn ModelResolver>,
        agents: Arc<dyn AgentDirectory>,
        tools: Arc<dyn ToolSetResolver>,
        options: RuntimeOptions,
    ) -> Self {
        let ids = Arc::new(EventIds::new());
        // Read before `options` moves into the runtime.
        let kept_capacity = options.kept_context_messages;
        let owner = options
            .lease
            .as_ref()
            .map_or_else(|| LOCAL_OWNER.to_owned(), |lease| lease.owner.clone());
        let lifecycle = Arc::new(Lifecycle::new(
            store.clone(),
            LiveStreams::default(),
            ids.clone(),
            owner,
        ));
        Self {
            store,
            models,
            agents,
            tools,
            agent_approvals: None,
            options,
            ids,
            lifecycle,
            kept: Arc::new(ContextCache::new(kept_capacity)),
            sandboxes: None,
            cancel_relay: None,
        }
    }

    /// Sends cancels of turns that do not run here to the other replicas through `relay`, before freezing
    /// a turn that none of them runs.
    pub fn with_cancel_relay(mut self, relay: Arc<dyn trueforge_bus::CancelRelay>) -> Self {
        self.cancel_relay = Some(relay);
        self
    }

    /// Gives agents with `config.sandbox` (or skills) their sandboxes from `sandboxes`.
    pub fn with_sandboxes(mut self, sandboxes: Arc<dyn SandboxResolver>) -> Self {
        self.sandboxes = Some(sandboxes);
        self
    }

    /// Streams turns' events on `streams` instead of a bus of its own (call before any turn starts).
    pub fn with_live_streams(mut self, streams: LiveStreams) -> Self {
        self.lifecycle = Arc::new(Lifecycle::new(
            self.store.clone(),
            streams,
            self.ids.clone(),
            self.lifecycle.owner.clone(),
        ));
        self
    }

    /// Remembers `agent`-scope approvals in `approvals` and lets saved agents' sessions use them.
    pub fn with_agent_approvals(mut self, approvals: Arc<dyn AgentApprovals>) -> Self {
        self.agent_approvals = Some(approvals);
        self
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
        if let Some(sandbox) = &resources.sandbox {
            sandbox.remember(record.snapshot.sandbox_info.as_ref());
        }
        // Written again: the crashed run may not have written them (writing the same bytes twice is harmless).
        resources.uploads = resources.stage_uploads(&record.turn.input)?.1;
        let threads = record.snapshot.threads;
        let approvals = standing_approvals(&threads, agent_approvals);
        let built = self.build_threads(&resources, threads, BTreeMap::new()).await?;
        // Numbering goes on right after everything the crashed run stored or streamed.
        let last_seq = record.turn.last_seq.max(record.snapshot.live_stream.seq);
        let open_messages = record.snapshot.live_stream.open_messages;
        Ok(self
            .start(
                key.clone(),
                last_seq,
                cancel,
                resources,
                built,
                approvals,
                Start::Resume(open_messages),
                record.turn.lease.map(|lease| lease.epoch),
            )
            .await)
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
        tip: Option<&TurnId>,
        admission: &mut Admission,
    ) -> Result<(), AgentError> {
        let Some(tip) = tip else { return Ok(()) };
        let key = TurnKey::new(&request.tenant_id, &request.session_id, tip);
        // Only the root's capability state is needed: the turn's contexts are not read.
        let state = match self.store.thread_capability_state(&key, &ThreadId::main()).await {
            Ok(state) => state,
            Err(StoreError::TurnNotFound { .. } | StoreError::ThreadNotFound { .. }) => return Ok(()),
            Err(other) => return Err(other.into()),
        };
        let approvals = session_approvals(state.as_ref());
        add_session_approvals(
            admission.capability_states.entry(ThreadId::main()).or_default(),
            &approvals,
        );
        Ok(())
    }

    /// The tools users allowed for the session's saved agent, read when a turn starts or resumes (a
    /// revocation reaches the next turn). None for an inline agent.
    async fn agent_approved_tools(
        &self,
        tenant_id: &TenantId,
        agent: &SessionAgent,
    ) -> Result<HashSet<(String, String)>, AgentError> {
        match (agent, &self.agent_approvals) {
            (SessionAgent::Reference { id, .. }, Some(store)) => store.approved_tools(tenant_id, id).await,
            _ => Ok(HashSet::new()),
        }
    }

    async fn spec(&self, tenant_id: &TenantId, agent: &SessionAgent) -> Result<AgentSpec, AgentError> {
        let spec = match agent {
            SessionAgent::Inline { spec } => spec.clone(),
            SessionAgent::Reference { id, .. } => self
                .agents
                .agent_spec(tenant_id, id)
                .await?
                .ok_or_else(|| AgentError::AgentNotFound(id.clone()))?,
        };
        spec.validate().map_err(AgentError::InvalidSpec)?;
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
        let sandbox = self.turn_sandbox(key, &spec).await?;
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
                thread_id: ThreadId::main(),
                is_sub_agent: false,
                cancel: cancel.token().clone(),
            },
            store: self.store.clone(),
            auth_required,
            known_mcp_sessions: BTreeMap::new(),
            sandbox,
            uploads: Vec::new(),
        })
    }

    /// The turn's sandbox when the agent has one (`config.sandbox.enabled`, or skills, which live in it). It
    /// is made on first use; here only its provider is found, so a turn that cannot have one is refused
    /// before anything is written.
    async fn turn_sandbox(&self, key: &TurnKey, spec: &AgentSpec) -> Result<Option<Arc<TurnSandbox>>, AgentError> {
        let wants_skills = spec.skills.as_ref().is_some_and(|skills| !skills.is_empty());
        if !(spec.config.sandbox.enabled || wants_skills) {
            return Ok(None);
        }
        let resolver = self
            .sandboxes
            .as_ref()
            .ok_or_else(|| SandboxError::Unavailable("this server provides no sandbox".to_owned()))?;
        let provider = resolver.provider(&key.tenant_id).await?;
        let owner = SandboxOwner {
            tenant: key.tenant_id.to_string(),
            session: key.session_id.to_string(),
        };
        let skill_names: Vec<String> = spec.skills.iter().flatten().map(|skill| skill.name.clone()).collect();
        let skills = if skill_names.is_empty() {
            Vec::new()
        } else {
            resolver.skills(&key.tenant_id, &skill_names).await?
        };
        Ok(Some(Arc::new(TurnSandbox::new(
            provider,
            owner,
            resolver.options().clone(),
            skills,
            resolver.skill_sources().clone(),
        ))))
    }

    /// The runtime threads of a turn, built from snapshots it is done with (their contexts move in).
    async fn build_threads(
        &self,
        resources: &TurnResources,
        threads: BTreeMap<ThreadId, AgentThreadSnapshot>,
        mut model_messages: BTreeMap<ThreadId, ModelMessages>,
    ) -> Result<Vec<AgentThread>, AgentError> {
        let mut built = Vec::with_capacity(threads.len());
        for (thread_id, snapshot) in threads {
            let setup = match &snapshot.agent_info {
                Some(info) => resources.sub_agent_setup(info).await?,
                None => resources.root_setup().await?,
            };
            let mut thread = AgentThread::from_snapshot(snapshot, setup);
            if let Some(converted) = model_messages.remove(&thread_id) {
                thread.model_messages = converted;
            }
            built.push(thread);
        }
        Ok(built)
    }

    /// Runs a committed turn: its publisher, its task and its supervisor, registered as live.
    #[allow(clippy::too_many_arguments)]
    async fn start(
        &self,
        key: TurnKey,
        last_seq: u64,
        cancel: TurnCancel,
        resources: TurnResources,
        threads: Vec<AgentThread>,
        session_approvals: HashSet<(String, String)>,
        start: Start,
        lease_epoch: Option<u64>,
    ) -> StartedTurn {
        // Every write of this run carries its lease's fencing token: once another executor takes the turn
        // over, this run can change nothing more.
        let store = match lease_epoch {
            Some(epoch) => self.store.fenced(&key, epoch),
            None => self.store.clone(),
        };
        let mut resources = resources;
        resources.store = store.clone();
        let streams = self.lifecycle.streams.clone();
        // Opened before anything runs, so a subscriber right after the start finds the stream.
        if let Err(error) = streams.bus.open(&stream_key(&key), streams.ttl).await {
            tracing::warn!(turn = %key.turn_id, %error, "could not open the turn's live stream");
        }
        if matches!(start, Start::Resume(_)) {
            streams.backfill(&store, &key, last_seq).await;
        }
        let (outbox, queued) = mpsc::channel(STREAM_BUFFER);
        let (first_sender, first) = oneshot::channel();
        let publisher = tokio::spawn(crate::live::publish(
            streams.clone(),
            store.clone(),
            key.clone(),
            queued,
            first_sender,
        ));
        let journal = Arc::new(Journal::new(key.clone(), store, self.ids.clone(), last_seq, outbox));
        let env = Arc::new(TurnEnv {
            journal,
            cancel: cancel.clone(),
            tool_timeout: self.options.tool_timeout,
            session_approvals,
        });
        let timeout = self.options.execution_timeout;
        let kept = Some(self.kept.clone()).filter(|_| self.options.kept_context_messages > 0);
        // In the trace of the request that started the turn (none for a resumed one).
        let span = crate::telemetry::turn_span(key.session_id.as_str(), key.turn_id.as_str());
        let task =
            tokio::spawn(run_turn(env, Arc::new(resources), threads, start, timeout, kept).instrument(span.clone()));
        let end = self
            .lifecycle
            .supervise(key.clone(), cancel.clone(), publisher, task, span);
        StartedTurn {
            key,
            cancel,
            streams,
            first: Some(first),
            end,
            subscription: None,
            cursor: 0,
        }
    }
}

/// The tools a turn may run without asking: those allowed for the session (recorded on the root thread) and
/// those allowed for every session of its saved agent.
fn standing_approvals(
    threads: &BTreeMap<ThreadId, AgentThreadSnapshot>,
    agent_approvals: HashSet<(String, String)>,
) -> HashSet<(String, String)> {
    let mut approvals = session_approvals(
        threads
            .get(MAIN_THREAD_ID)
            .and_then(|main| main.capability_state.as_ref()),
    );
    approvals.extend(agent_approvals);
    approvals
}

/// The threads with an empty root added when there is none yet (a conversation's first turn).
fn with_root(mut threads: BTreeMap<ThreadId, AgentThreadSnapshot>) -> BTreeMap<ThreadId, AgentThreadSnapshot> {
    threads
        .entry(ThreadId::main())
        .or_insert_with(|| AgentThreadSnapshot::empty(MAIN_THREAD_ID));
    threads
}

enum Start {
    /// A new turn, with the events stored along with it (`turn.created`, then the closing of calls and
    /// sub-agents its input stopped), still to be streamed.
    Fresh(Vec<StoredEvent>),
    /// A turn resumed after a crash, with the answers its crashed run left open.
    Resume(Vec<OpenMessage>),
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

/// Writes the files the user sent into the sandbox before the model reads about them. A file that cannot
/// be written fails the turn: the model must not be told of a file that is not there.
async fn upload_user_files(resources: &TurnResources) -> Result<(), AgentError> {
    let Some(sandbox) = &resources.sandbox else {
        return Ok(());
    };
    for upload in &resources.uploads {
        sandbox.upload(&upload.path, upload.content.clone()).await?;
    }
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
    kept: Option<Arc<ContextCache>>,
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
        Start::Resume(open_messages) => reconcile_open_calls(&env, &mut threads, open_messages).await,
    };
    if let Some(sandbox) = &resources.sandbox {
        sandbox.attach(env.journal.clone());
        if sandbox.supports_code_mode()
            && let Some(tools) = CodeModeTools::list(
                &resources.user_sets,
                env.session_approvals.clone(),
                resources.tool_cx.clone(),
            )
            .await
        {
            sandbox.enable_code_mode(tools);
        }
    }
    let prepared = match prepared {
        Ok(used_before) => announce_mcp_sessions(&env, &resources).await.map(|()| used_before),
        Err(error) => Err(error),
    };
    let prepared = match prepared {
        Ok(used_before) => upload_user_files(&resources).await.map(|()| used_before),
        Err(error) => Err(error),
    };
    let mut contexts = None;
    let (end, metrics) = match prepared {
        Ok(used_before) if !resources.auth_required.is_empty() => {
            (wait_for_authorization(&env, &resources).await, used_before)
        }
        Ok(used_before) => {
            let ran = Orchestrator::new(env.clone(), resources, threads).run().await;
            let mut metrics = ran.metrics;
            metrics.merge(&used_before);
            contexts = Some((ran.contexts, ran.model_messages));
            (ran.end, metrics)
        }
        Err(error) => (Err(error), ThreadMetrics::default()),
    };
    if let Some(timer) = timer {
        timer.abort();
    }
    let finished = finish_turn(&env, end, &metrics).await;
    // Only an end this run wrote, and only `done`: then the store holds exactly these contexts (every row
    // was committed before the end), and they can no longer change.
    if let (Some(kept), Some((contexts, model_messages)), Finished::Written(TurnState::Done { completed_at, .. })) =
        (kept, contexts, &finished)
    {
        kept.keep(
            &env.journal.key,
            KeptContexts {
                completed_at: completed_at.clone(),
                contexts,
                model_messages,
            },
        );
    }
    finished.into_state()
}
