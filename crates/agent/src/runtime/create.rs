//! Creating a turn, in named steps: check the request, freeze the predecessor, admit the input into the
//! threads, close what the input stopped, commit the turn with its first events, start it. Everything that
//! can fail without touching the conversation comes first, so a refused request neither writes nor cancels
//! a running predecessor.

use std::collections::{BTreeMap, HashSet};

use trueforge_protocol::{
    AgentSpec, AgentThreadSnapshot, CancellationReason, IdempotencyKey, MAIN_THREAD_ID, McpServerInitInfo,
    SessionEvent, ThreadDoneEvent, ThreadId, ThreadState, ToolResponseEvent, TurnCreatedEvent, TurnId, TurnInputItem,
    TurnState, validate_turn_input,
};
use trueforge_store::StoreError;
use trueforge_store::session::model::{
    ContextAppend, FreezeTurn, KeyedTurn, NewThread, NewTurn, SandboxInfo, SessionRecord, StoredEvent, TurnDone,
    TurnIdempotency, TurnKey, TurnRecord,
};

use super::{PreviousTurn, Runtime, Start, StartedTurn, TurnRequest, standing_approvals, with_root};
use crate::admission::{Admission, admit, admit_with};
use crate::approvals::{agent_scope_target, check_max_scope};
use crate::cancel::TurnCancel;
use crate::context::ModelMessages;
use crate::error::{AgentError, InputError};
use crate::idempotency::request_fingerprint;
use crate::ids::now_iso;

/// What a request is, once checked: its session, the agent's spec, and the approvals it brings.
struct CheckedRequest {
    session: SessionRecord,
    spec: AgentSpec,
    /// The saved agent an `agent`-scope approval in the input is for.
    approving_agent: Option<String>,
    /// The tools already allowed for every session of the saved agent.
    agent_approvals: HashSet<(String, String)>,
}

/// A predecessor as read: its record, and its threads' contexts converted into model messages when this
/// runtime kept them.
type ReadPredecessor = (TurnRecord, BTreeMap<ThreadId, ModelMessages>);

/// What the turn continues from: the predecessor's threads (frozen if it was running) and MCP sessions.
struct Predecessor {
    id: Option<TurnId>,
    threads: BTreeMap<ThreadId, AgentThreadSnapshot>,
    /// The threads' contexts converted into model messages, when this runtime kept them.
    model_messages: BTreeMap<ThreadId, ModelMessages>,
    /// The predecessor paused for answers longer than the approval timeout: a new message may close them.
    unanswered_expired: bool,
    mcp_sessions: Option<BTreeMap<String, McpServerInitInfo>>,
    /// The sandbox the conversation used so far.
    sandbox: Option<SandboxInfo>,
}

impl Runtime {
    /// Validates and admits the input, freezes the predecessor, commits the turn and starts running it.
    /// Nothing is written when the input is rejected.
    pub async fn create_turn(&self, request: TurnRequest) -> Result<StartedTurn, AgentError> {
        if self.is_stopping() {
            return Err(AgentError::ShuttingDown);
        }
        let checked = self.check_request(&request).await?;
        // Before anything that writes or cancels: a retry must leave the turn its key created alone.
        let idempotency = self.check_idempotency_key(&request).await?;
        let key = TurnKey::new(&request.tenant_id, &request.session_id, &request.turn_id);
        let cancel = TurnCancel::new();
        let mut resources = self
            .resources(&key, &checked.session.created_by, checked.spec.clone(), &cancel)
            .await?;
        let mut predecessor = self.freeze_predecessor(&request, &checked.session).await?;
        if let Some(sessions) = predecessor.mcp_sessions.take() {
            resources.known_mcp_sessions = sessions;
        }
        // Files for the sandbox leave the input the model reads (an announcement takes their place); the
        // turn stores the input as it was sent.
        let (model_input, uploads) = resources.stage_uploads(&request.input)?;
        resources.uploads = uploads;
        if let Some(sandbox) = &resources.sandbox {
            // One workspace per session: a new conversation in the session (or a fork from before the
            // sandbox was made) works in the sandbox the session's latest turn used.
            let known = match predecessor.sandbox.take() {
                Some(known) => Some(known),
                None => self.session_sandbox(&request, &checked.session).await?,
            };
            sandbox.remember(known.as_ref());
        }
        let first_turn = !predecessor.threads.contains_key(MAIN_THREAD_ID);
        // The contexts move from the snapshot read into the running threads without a copy: copying
        // them (and dropping the copies) cost time in proportion to the conversation on every turn.
        let previous_threads = std::mem::take(&mut predecessor.threads);
        let (threads, admission) = self
            .admit_input(&request, &model_input, &checked.session, &predecessor, previous_threads)
            .await?;
        let closing_events = self.closing_events(&threads, &admission);
        // Committing the turn and the standing approvals need every thread but none of their contexts.
        let shells: BTreeMap<ThreadId, AgentThreadSnapshot> = threads
            .iter()
            .map(|(id, thread)| (id.clone(), without_context(thread)))
            .collect();
        // Stopped sub-agents carry into the new turn (the store wants every thread accounted for) and are
        // dropped right after it is committed.
        let running: BTreeMap<ThreadId, AgentThreadSnapshot> = threads
            .into_iter()
            .filter(|(id, _)| !admission.stopped_threads.contains(id))
            .collect();
        let model_messages = std::mem::take(&mut predecessor.model_messages);
        let built = self.build_threads(&resources, running, model_messages).await?;
        let mut agent_approvals = checked.agent_approvals;
        // Remembered before the turn is committed: a failed write refuses the input with nothing written,
        // and a turn that fails later keeps what the user allowed. (The settings store is not the session
        // store, so the two writes cannot share a transaction; an approval without its turn is harmless.)
        if let (Some(agent_id), Some(store)) = (checked.approving_agent.as_deref(), &self.agent_approvals)
            && !admission.agent_approvals.is_empty()
        {
            store
                .approve_tools(&request.tenant_id, agent_id, &admission.agent_approvals)
                .await?;
            agent_approvals.extend(admission.agent_approvals.iter().cloned());
        }
        let first_events = self.first_events(&request, predecessor.id.clone(), closing_events);
        let lease_epoch = self
            .commit_turn(
                &request,
                &predecessor,
                first_turn,
                &shells,
                &admission,
                first_events.clone(),
                idempotency,
            )
            .await?;
        if !admission.stopped_threads.is_empty() {
            self.store.remove_threads(&key, &admission.stopped_threads).await?;
        }
        let approvals = standing_approvals(&shells, agent_approvals);
        Ok(self
            .start(
                key,
                first_events.len() as u64,
                cancel,
                resources,
                built,
                approvals,
                Start::Fresh(first_events),
                lease_epoch,
            )
            .await)
    }

    /// The checks that need no write: the input's rules, the approval scopes it asks for, the session, the
    /// agent's spec.
    async fn check_request(&self, request: &TurnRequest) -> Result<CheckedRequest, AgentError> {
        validate_turn_input(&request.input).map_err(InputError::from)?;
        check_max_scope(&request.input, self.options.approval_max_scope)?;
        let session = self
            .store
            .get_session(&request.tenant_id, &request.session_id)
            .await?
            .ok_or(AgentError::SessionNotFound)?;
        if request
            .requested_by
            .as_ref()
            .is_some_and(|user| *user != session.created_by)
        {
            return Err(AgentError::NotSessionCreator);
        }
        let approving_agent = agent_scope_target(&request.input, &session.agent)?.map(str::to_owned);
        if approving_agent.is_some() && self.agent_approvals.is_none() {
            return Err(InputError::AgentScopeUnavailable.into());
        }
        let spec = self.spec(&request.tenant_id, &session.agent).await?;
        let agent_approvals = self.agent_approved_tools(&request.tenant_id, &session.agent).await?;
        Ok(CheckedRequest {
            session,
            spec,
            approving_agent,
            agent_approvals,
        })
    }

    /// The request's idempotency key with its fingerprint, once the store shows the key unused in the
    /// session; a key already used answers with its turn (the same request) or is refused (another one).
    /// The session was read before this, so a concurrent creation with the key that this read misses had
    /// not committed when the session was read: its turn is not the predecessor this request may freeze,
    /// and the store refuses this request's commit for the key.
    async fn check_idempotency_key(&self, request: &TurnRequest) -> Result<Option<TurnIdempotency>, AgentError> {
        let Some(key) = &request.idempotency_key else {
            return Ok(None);
        };
        let fingerprint = request_fingerprint(request)?;
        let keyed = self
            .store
            .turn_by_idempotency_key(&request.tenant_id, &request.session_id, key)
            .await?;
        if let Some(keyed) = keyed {
            return Err(key_used(key, &fingerprint, keyed));
        }
        Ok(Some(TurnIdempotency {
            key: key.clone(),
            fingerprint,
        }))
    }

    /// The sandbox of the session's latest turn, if it has one.
    async fn session_sandbox(
        &self,
        request: &TurnRequest,
        session: &SessionRecord,
    ) -> Result<Option<SandboxInfo>, AgentError> {
        let Some(latest) = &session.last_turn_id else {
            return Ok(None);
        };
        let key = TurnKey::new(&request.tenant_id, &request.session_id, latest);
        Ok(self
            .store
            .get_turn(&key)
            .await?
            .and_then(|record| record.snapshot.sandbox_info))
    }

    /// Reads the turn this one continues and, if it is still running, checks the input against it and
    /// freezes it (barge-in): its stream ends with the `turn.done` the store wrote.
    async fn freeze_predecessor(
        &self,
        request: &TurnRequest,
        session: &SessionRecord,
    ) -> Result<Predecessor, AgentError> {
        let id = match &request.previous_turn_id {
            PreviousTurn::Auto => session.last_turn_id.clone(),
            PreviousTurn::None => None,
            PreviousTurn::Id(id) => Some(id.clone()),
        };
        let Some(previous_id) = &id else {
            return Ok(Predecessor {
                id,
                threads: BTreeMap::new(),
                model_messages: BTreeMap::new(),
                unanswered_expired: false,
                sandbox: None,
                mcp_sessions: None,
            });
        };
        let key = TurnKey::new(&request.tenant_id, &request.session_id, previous_id);
        let (previous, model_messages) = self
            .read_predecessor(&key)
            .await?
            .ok_or_else(|| AgentError::TurnNotFound(previous_id.clone()))?;
        let previous = if previous.turn.state.is_terminal() {
            previous
        } else {
            // Check the input before cancelling the running predecessor, then admit it again against the
            // frozen snapshot.
            admit(&with_root(previous.snapshot.threads), &request.input)?;
            let freeze = FreezeTurn {
                reason: CancellationReason::CancelledForNextTurn,
                metrics: None,
                done: TurnDone {
                    event_id: self.ids.next(),
                    min_seq: 0,
                },
            };
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
            self.lifecycle.cancel(&key, CancellationReason::CancelledForNextTurn);
            frozen
        };
        Ok(Predecessor {
            unanswered_expired: self.pause_expired(&previous.turn.state),
            mcp_sessions: Some(previous.snapshot.mcp_servers.unwrap_or_default()),
            sandbox: previous.snapshot.sandbox_info,
            threads: previous.snapshot.threads,
            model_messages,
            id,
        })
    }

    /// Reads the turn a new one continues, with the contexts this runtime kept from it when it ended here
    /// (if the store proves them current) instead of reading them back.
    async fn read_predecessor(&self, key: &TurnKey) -> Result<Option<ReadPredecessor>, AgentError> {
        let from_store = |record: Option<TurnRecord>| record.map(|record| (record, BTreeMap::new()));
        let Some(mut kept) = self.kept.take(key) else {
            return Ok(from_store(self.store.get_turn(key).await?));
        };
        let Some(reused) = self.store.get_turn_reusing(key, &kept.lengths()).await? else {
            return Ok(None);
        };
        if !reused.contexts_left_out {
            return Ok(from_store(Some(reused.record)));
        }
        // Same lengths, but is it the same turn? Its stored end says so: a turn of the same ids made
        // again (its session deleted and created anew) ended at another time.
        if reused.record.turn.state.completed_at() != Some(kept.completed_at.as_str()) {
            return Ok(from_store(self.store.get_turn(key).await?));
        }
        let mut record = reused.record;
        for (thread_id, thread) in &mut record.snapshot.threads {
            thread.context = kept.contexts.remove(thread_id).unwrap_or_default();
        }
        #[cfg(debug_assertions)]
        self.check_kept_contexts(key, &record).await?;
        Ok(Some((record, kept.model_messages)))
    }

    /// Debug builds (the tests) compare every kept context taken with the store's: a runtime whose memory
    /// strayed from what it committed would otherwise continue from a conversation the store never held.
    #[cfg(debug_assertions)]
    async fn check_kept_contexts(&self, key: &TurnKey, record: &TurnRecord) -> Result<(), AgentError> {
        let stored = self.store.get_turn(key).await?;
        let stored = stored.as_ref().map(|stored| &stored.snapshot.threads);
        assert_eq!(
            stored,
            Some(&record.snapshot.threads),
            "the contexts kept from turn {} differ from the store's",
            key.turn_id
        );
        Ok(())
    }

    /// Admits the input into the predecessor's threads (taken out of `predecessor`); returns the threads as
    /// they are once it is in.
    async fn admit_input(
        &self,
        request: &TurnRequest,
        input: &[TurnInputItem],
        session: &SessionRecord,
        predecessor: &Predecessor,
        previous_threads: BTreeMap<ThreadId, AgentThreadSnapshot>,
    ) -> Result<(BTreeMap<ThreadId, AgentThreadSnapshot>, Admission), AgentError> {
        let mut threads = with_root(previous_threads);
        let mut admission = admit_with(&threads, input, predecessor.unanswered_expired)?;
        if admission.title.is_some() {
            admission.title = crate::admission::input_title(&request.input);
        }
        if session.last_turn_id.is_some() && session.last_turn_id != predecessor.id {
            // A new conversation or a fork still has the tools allowed for the session on its latest turn.
            self.inherit_session_approvals(request, session.last_turn_id.as_ref(), &mut admission)
                .await?;
        }
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
        Ok((threads, admission))
    }

    /// A `tool.response` for every call the input closed and a `thread.done` for every sub-agent it
    /// stopped, so clients see each of them end.
    fn closing_events(
        &self,
        threads: &BTreeMap<ThreadId, AgentThreadSnapshot>,
        admission: &Admission,
    ) -> Vec<SessionEvent> {
        let closed_calls = admission.closed_calls.iter().map(|(thread_id, call_id, content)| {
            SessionEvent::ToolResponse(ToolResponseEvent {
                id: self.ids.next(),
                created_at: now_iso(),
                thread_id: thread_id.to_string(),
                tool_call_id: call_id.clone(),
                content: content.clone(),
            })
        });
        let stopped_threads = admission
            .stopped_threads
            .iter()
            .filter_map(|id| threads.get(id))
            .map(|thread| {
                SessionEvent::ThreadDone(ThreadDoneEvent {
                    id: self.ids.next(),
                    created_at: now_iso(),
                    thread_id: thread.thread_id.to_string(),
                    title: thread
                        .agent_info
                        .as_ref()
                        .map_or_else(|| thread.thread_id.to_string(), |info| info.name.clone()),
                    parent: thread.parent.clone(),
                    state: ThreadState::Error {
                        error: "stopped: the user sent a new message".to_owned(),
                        output: None,
                    },
                })
            });
        closed_calls.chain(stopped_threads).collect()
    }

    /// The events stored with the turn itself, numbered from 1: `turn.created`, then the closings, so a
    /// turn never exists without them.
    fn first_events(
        &self,
        request: &TurnRequest,
        previous_turn_id: Option<TurnId>,
        closing_events: Vec<SessionEvent>,
    ) -> Vec<StoredEvent> {
        let created = TurnCreatedEvent {
            id: self.ids.next(),
            created_at: now_iso(),
            thread_id: None,
            turn_id: request.turn_id.to_string(),
            previous_turn_id: previous_turn_id.map(String::from),
            input: (!request.input.is_empty()).then(|| request.input.clone()),
            state: TurnState::Running,
        };
        std::iter::once(SessionEvent::TurnCreated(created))
            .chain(closing_events)
            .zip(1..)
            .map(|(event, seq)| StoredEvent { seq, event })
            .collect()
    }

    /// Writes the turn: its threads' new rows and capability states, its lease and its first events, in
    /// one store transaction. `threads` need no contexts (see [`without_context`]).
    // The values the earlier steps of `create_turn` computed, handed over as they are: a struct made for
    // this one call would only rename them.
    #[allow(clippy::too_many_arguments)]
    async fn commit_turn(
        &self,
        request: &TurnRequest,
        predecessor: &Predecessor,
        first_turn: bool,
        threads: &BTreeMap<ThreadId, AgentThreadSnapshot>,
        admission: &Admission,
        events: Vec<StoredEvent>,
        idempotency: Option<TurnIdempotency>,
    ) -> Result<Option<u64>, AgentError> {
        let new_turn = NewTurn {
            tenant_id: request.tenant_id.clone(),
            session_id: request.session_id.clone(),
            turn_id: request.turn_id.clone(),
            previous_turn_id: predecessor.id.clone(),
            input: request.input.clone(),
            custom: request.custom.clone(),
            new_threads: if first_turn {
                vec![NewThread {
                    thread_id: ThreadId::main(),
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
            events,
            idempotency: idempotency.clone(),
        };
        let created = self.store.create_turn(new_turn).await.map_err(|error| match error {
            StoreError::SessionNotFound { .. } => AgentError::SessionNotFound,
            StoreError::PreviousTurnNotFound { turn_id } => AgentError::TurnNotFound(turn_id),
            // A concurrent request with the key committed first: this one answers as a later retry would.
            StoreError::IdempotencyKeyUsed { turn_id, fingerprint } => match &idempotency {
                Some(ours) => key_used(&ours.key, &ours.fingerprint, KeyedTurn { turn_id, fingerprint }),
                None => AgentError::Store(StoreError::IdempotencyKeyUsed { turn_id, fingerprint }),
            },
            other => AgentError::Store(other),
        })?;
        // The fencing token this run writes the turn with.
        Ok(created.lease.map(|lease| lease.epoch))
    }
}

/// The answer to a request whose key already created `keyed`: that turn when the request is the same,
/// a refusal otherwise.
fn key_used(key: &IdempotencyKey, fingerprint: &str, keyed: KeyedTurn) -> AgentError {
    if keyed.fingerprint == fingerprint {
        AgentError::AlreadyCreated(keyed.turn_id)
    } else {
        AgentError::IdempotencyKeyReused(key.clone())
    }
}

/// A thread's snapshot without its context: what committing a turn and its standing approvals read.
fn without_context(thread: &AgentThreadSnapshot) -> AgentThreadSnapshot {
    AgentThreadSnapshot {
        thread_id: thread.thread_id.clone(),
        context: Vec::new(),
        current_context_usage: thread.current_context_usage,
        parent: thread.parent.clone(),
        agent_info: thread.agent_info.clone(),
        completion: thread.completion.clone(),
        capability_state: thread.capability_state.clone(),
    }
}
