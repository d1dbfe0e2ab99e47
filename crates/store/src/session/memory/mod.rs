//! The in-memory session store: the same segment-chain model as the SQL backends, held in maps behind one
//! mutex, so it gives the same answers (including ordering, errors and `null` semantics).
//!
//! The trait methods below do what precedes the lock (argument checks, the clock) and hand the rest to a
//! `State` method that runs under it; the submodules hold those methods by concept.

mod context;
mod events;
mod leases;
mod recall;
mod sessions;
mod state;
mod turns;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use serde_json::Value;
use trueforge_protocol::{
    AgentThreadSnapshot, ContextMessage, CurrentContextUsage, IdempotencyKey, McpServerInitInfo, SubAgentCompletion,
    TurnState,
};

use self::state::State;
use self::turns::lease_of;
use super::model::*;
use super::page;
use super::rules;
use super::search;
use super::store::SessionStore;
use crate::error::StoreResult;
use crate::time::Timestamp;
use trueforge_protocol::sync::lock;

/// Session store held in process memory (tests, embedding, ephemeral runs).
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    state: Arc<Mutex<State>>,
    /// Set on a [`fenced`](SessionStore::fenced) store: the turn whose writes carry a lease epoch, and
    /// that epoch.
    fence: Option<(TurnKey, u64)>,
}

impl MemorySessionStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied write: every write validates first and
        // mutates last. So a poisoned lock is still consistent.
        lock(&self.state)
    }

    /// The lease fence of a write through a fenced store: the turn's lease epoch must still be this
    /// store's.
    fn check_lease_epoch(&self, state: &State, key: &TurnKey) -> StoreResult<()> {
        let Some((_, epoch)) = self.fence.as_ref().filter(|(turn, _)| turn == key) else {
            return Ok(());
        };
        let row = state.turn(key).ok_or_else(|| crate::StoreError::TurnNotFound {
            turn_id: key.turn_id.clone(),
        })?;
        // A finished turn keeps no lease; the write is refused for that reason further on.
        let current = row.summary.lease.as_ref().map_or(*epoch, |lease| lease.epoch);
        if current == *epoch {
            Ok(())
        } else {
            Err(crate::StoreError::StaleLease {
                turn_id: key.turn_id.clone(),
                epoch: *epoch,
                current,
            })
        }
    }

    /// Runs a turn-scoped write and, only when it succeeds, bumps the turn's `updated_at`: a failed write
    /// leaves no trace, as a rolled-back SQL transaction leaves none.
    fn write_turn<T>(&self, key: &TurnKey, write: impl FnOnce(&mut State) -> StoreResult<T>) -> StoreResult<T> {
        let mut state = self.lock();
        self.check_lease_epoch(&state, key)?;
        let result = write(&mut state)?;
        state.touch(key, Timestamp::now());
        Ok(result)
    }
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord> {
        rules::require_id("session", &session.session_id)?;
        self.lock().create_session(session)
    }

    async fn delete_session(&self, tenant_id: &TenantId, session_id: &SessionId) -> StoreResult<()> {
        self.lock().delete_session(tenant_id, session_id)
    }

    async fn get_session(&self, tenant_id: &TenantId, session_id: &SessionId) -> StoreResult<Option<SessionRecord>> {
        Ok(self.lock().session(tenant_id, session_id).cloned())
    }

    async fn update_session(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> StoreResult<SessionRecord> {
        self.lock().update_session(tenant_id, session_id, update)
    }

    async fn list_sessions(
        &self,
        tenant_id: &TenantId,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionRecord>> {
        let after = page::sessions_cursor(page::open_page(page)?, filter.order)?;
        self.lock().list_sessions(tenant_id, filter, page, after)
    }

    async fn session_costs(
        &self,
        tenant_id: &TenantId,
        session_ids: &[SessionId],
    ) -> StoreResult<BTreeMap<SessionId, SessionCost>> {
        Ok(self.lock().session_costs(tenant_id, session_ids))
    }

    async fn create_turn(&self, turn: NewTurn) -> StoreResult<TurnSummary> {
        rules::require_id("turn", &turn.turn_id)?;
        let now = Timestamp::now();
        let lease = lease_of(&turn.lease, now)?;
        self.lock().create_turn(turn, now, lease)
    }

    async fn turn_by_idempotency_key(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        key: &IdempotencyKey,
    ) -> StoreResult<Option<KeyedTurn>> {
        Ok(self.lock().turn_by_idempotency_key(tenant_id, session_id, key))
    }

    async fn get_turn(&self, key: &TurnKey) -> StoreResult<Option<TurnRecord>> {
        Ok(self.lock().record(key))
    }

    async fn get_turn_summary(&self, key: &TurnKey) -> StoreResult<Option<TurnSummary>> {
        Ok(self.lock().turn(key).map(|row| row.summary.clone()))
    }

    async fn list_turns(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        page: &PageRequest,
    ) -> StoreResult<Page<TurnSummary>> {
        let after = page::turns_cursor(page::open_page(page)?)?.unwrap_or(0);
        self.lock().list_turns(tenant_id, session_id, page, after)
    }

    async fn freeze_and_get_turn(&self, key: &TurnKey, freeze: FreezeTurn) -> StoreResult<TurnRecord> {
        self.lock().freeze_and_get_turn(key, freeze)
    }

    async fn update_turn_state(&self, key: &TurnKey, new_state: TurnState, done: TurnDone) -> StoreResult<TurnState> {
        let now = Timestamp::now();
        let stamped = rules::stamp_terminal(new_state, now)?;
        let mut state = self.lock();
        self.check_lease_epoch(&state, key)?;
        state.update_turn_state(key, stamped, done, now)
    }

    async fn append_events(&self, key: &TurnKey, events: Vec<StoredEvent>) -> StoreResult<()> {
        self.write_turn(key, |state| state.append_events(key, events))
    }

    async fn list_turn_events(
        &self,
        key: &TurnKey,
        order: SortOrder,
        page: &PageRequest,
    ) -> StoreResult<Page<StoredEvent>> {
        let after = page::turn_events_cursor(page::open_page(page)?, order)?;
        self.lock().list_turn_events(key, order, page, after)
    }

    async fn list_turn_events_after(&self, key: &TurnKey, after_seq: u64, limit: u32) -> StoreResult<Vec<StoredEvent>> {
        page::open_page(&PageRequest::first(limit))?;
        self.lock().list_turn_events_after(key, after_seq, limit)
    }

    async fn list_session_events(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        last_turn_id: Option<&TurnId>,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionEventItem>> {
        let cursor = page::feed_cursor(page::open_page(page)?)?;
        self.lock()
            .list_session_events(tenant_id, session_id, last_turn_id, page, cursor)
    }

    async fn add_threads(&self, key: &TurnKey, threads: Vec<AgentThreadSnapshot>) -> StoreResult<()> {
        self.write_turn(key, |state| state.add_threads(key, threads))
    }

    async fn remove_threads(&self, key: &TurnKey, thread_ids: &[ThreadId]) -> StoreResult<()> {
        self.write_turn(key, |state| state.remove_threads(key, thread_ids))
    }

    async fn append_to_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> StoreResult<()> {
        self.write_turn(key, |state| {
            state.append_to_thread_context(key, thread_id, messages, usage, completion)
        })
    }

    async fn commit_thread_step(&self, key: &TurnKey, step: ThreadStep) -> StoreResult<()> {
        self.write_turn(key, |state| state.commit_thread_step(key, step))
    }

    async fn overwrite_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        events: Vec<StoredEvent>,
        messages: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> StoreResult<()> {
        self.write_turn(key, |state| {
            state.overwrite_thread_context(key, thread_id, events, messages, usage)
        })
    }

    async fn thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
    ) -> StoreResult<Option<serde_json::Map<String, Value>>> {
        let state = self.lock();
        state.turn(key).ok_or_else(|| crate::StoreError::TurnNotFound {
            turn_id: key.turn_id.clone(),
        })?;
        state
            .threads
            .get(&state::thread_key(key, thread_id))
            .map(|thread| thread.capability_state.clone())
            .ok_or_else(|| crate::StoreError::ThreadNotFound {
                turn_id: key.turn_id.clone(),
                thread_id: thread_id.clone(),
            })
    }

    async fn mark_live_stream(&self, key: &TurnKey, mark: LiveStreamMark) -> StoreResult<()> {
        self.write_turn(key, |state| state.mark_live_stream(key, mark))
    }

    async fn patch_mcp_servers(&self, key: &TurnKey, servers: Vec<McpServerInitInfo>) -> StoreResult<()> {
        self.write_turn(key, |state| state.patch_mcp_servers(key, servers))
    }

    async fn set_sandbox_info(&self, key: &TurnKey, info: SandboxInfo) -> StoreResult<()> {
        self.write_turn(key, |state| state.set_sandbox_info(key, info))
    }

    async fn patch_thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        state_key: &str,
        value: Value,
    ) -> StoreResult<()> {
        self.write_turn(key, |state| {
            state.patch_thread_capability_state(key, thread_id, state_key, value)
        })
    }

    async fn thread_history(&self, key: &TurnKey, thread_id: &ThreadId) -> StoreResult<Vec<HistoryEntry>> {
        self.lock().thread_history(key, thread_id)
    }

    async fn search_thread_history(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        query: &str,
        limit: u32,
    ) -> StoreResult<Vec<HistoryEntry>> {
        let terms = search::query_terms(query)?;
        page::open_page(&PageRequest::first(limit))?;
        self.lock().search_thread_history(key, thread_id, terms, limit)
    }

    fn fenced(&self, key: &TurnKey, epoch: u64) -> Arc<dyn SessionStore> {
        Arc::new(Self {
            state: self.state.clone(),
            fence: Some((key.clone(), epoch)),
        })
    }

    async fn renew_lease(&self, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        rules::check_ttl(ttl_ms)?;
        self.write_turn(key, |state| state.renew_lease(key, owner, ttl_ms))
    }

    async fn claim_expired_lease(&self, key: &TurnKey, new_owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        rules::check_ttl(ttl_ms)?;
        self.write_turn(key, |state| state.claim_expired_lease(key, new_owner, ttl_ms))
    }

    async fn list_expired_leases(&self, limit: u32) -> StoreResult<Vec<ExpiredLease>> {
        page::open_page(&PageRequest::first(limit))?;
        let now = Timestamp::now();
        self.lock().list_expired_leases(limit, now)
    }

    async fn expire_leases_of_others(&self, owner: &str) -> StoreResult<u64> {
        Ok(self.lock().expire_leases_of_others(owner, Timestamp::now()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn turn(turn_id: &str, previous: Option<&str>, messages: Vec<ContextMessage>) -> NewTurn {
        NewTurn {
            tenant_id: "t".into(),
            session_id: "s".into(),
            turn_id: turn_id.into(),
            previous_turn_id: previous.map(TurnId::from),
            input: Vec::new(),
            custom: None,
            new_threads: if previous.is_none() {
                vec![NewThread {
                    thread_id: "main".into(),
                    parent: None,
                    agent_info: None,
                }]
            } else {
                Vec::new()
            },
            context_appends: vec![ContextAppend {
                thread_id: "main".into(),
                messages,
                current_context_usage: None,
            }],
            capability_states: vec![("main".into(), None)],
            title_if_unset: None,
            lease: None,
            events: Vec::new(),
            idempotency: None,
        }
    }

    /// Idle turns must not lengthen a thread's chain: reading it stays proportional to what it holds.
    #[tokio::test]
    async fn idle_turns_do_not_lengthen_the_segment_chain() {
        let store = MemorySessionStore::new();
        let agent = serde_json::from_value(json!({"type": "inline", "spec": {"model": {"name": "p/m"}}})).unwrap();
        let session = NewSession {
            tenant_id: "t".into(),
            session_id: "s".into(),
            agent,
            created_by: "u".into(),
            custom: None,
        };
        store.create_session(session).await.unwrap();
        let done = || TurnDone {
            event_id: ulid::Ulid::new().to_string(),
            min_seq: 0,
        };
        let finished = || TurnState::Done {
            output: None,
            required_actions: Vec::new(),
            completed_at: String::new(),
            metrics: None,
        };
        let mut previous: Option<String> = None;
        for index in 0..50 {
            let turn_id = format!("t{index}");
            let messages = if index == 0 {
                vec![ContextMessage::user_text("only message")]
            } else {
                Vec::new()
            };
            store
                .create_turn(turn(&turn_id, previous.as_deref(), messages))
                .await
                .unwrap();
            let key = TurnKey::new("t", "s", &turn_id);
            store.update_turn_state(&key, finished(), done()).await.unwrap();
            previous = Some(turn_id);
        }
        let state = store.lock();
        let last = &state.threads[&("s".into(), "t49".into(), "main".into())];
        let mut chain = 0;
        let mut current = Some(last.segment_id);
        while let Some(id) = current {
            chain += 1;
            current = state.segments[&id].parent;
        }
        assert!(chain <= 2, "a chain of {chain} segments after 49 idle turns");
    }
}
