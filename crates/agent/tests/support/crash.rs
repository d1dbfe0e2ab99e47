//! A session store that "crashes" the process: after a given number of context commits, every write
//! fails, as if the executor died right after that commit. Reads keep working.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::Value;
use trueforge_protocol::{
    AgentThreadSnapshot, ContextMessage, CurrentContextUsage, IdempotencyKey, McpServerInitInfo, SubAgentCompletion,
    TurnState,
};
use trueforge_store::session::model::{
    ExpiredLease, FreezeTurn, HistoryEntry, KeyedTurn, Lease, LiveStreamMark, NewSession, NewTurn, Page, PageRequest,
    ReusedTurnRecord, SessionCost, SessionEventItem, SessionFilter, SessionId, SessionRecord, SessionUpdate, SortOrder,
    StoredEvent, TenantId, ThreadId, ThreadStep, TurnDone, TurnId, TurnKey, TurnRecord, TurnSummary,
};
use trueforge_store::{SessionStore, StoreError, StoreResult};

pub struct CrashingStore {
    pub inner: Arc<dyn SessionStore>,
    /// Context commits (steps, appends and overwrites) allowed before the crash; `usize::MAX`: never crash.
    pub commits_before_crash: usize,
    /// Shared with the store's fenced handles, which count and crash with it.
    pub commits: Arc<AtomicUsize>,
    pub crashed: Arc<AtomicBool>,
    /// Reads of a turn that left its contexts out (the caller held them).
    pub contexts_reused: Arc<AtomicUsize>,
}

impl CrashingStore {
    pub fn new(inner: Arc<dyn SessionStore>, commits_before_crash: usize) -> Self {
        Self {
            inner,
            commits_before_crash,
            commits: Arc::new(AtomicUsize::new(0)),
            crashed: Arc::new(AtomicBool::new(false)),
            contexts_reused: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn check(&self) -> StoreResult<()> {
        if self.crashed.load(Ordering::SeqCst) {
            return Err(StoreError::Backend("simulated crash".to_owned()));
        }
        Ok(())
    }

    fn committed(&self) {
        let commits = self.commits.fetch_add(1, Ordering::SeqCst) + 1;
        if commits >= self.commits_before_crash {
            self.crashed.store(true, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl SessionStore for CrashingStore {
    fn fenced(&self, key: &TurnKey, epoch: u64) -> Arc<dyn SessionStore> {
        Arc::new(Self {
            inner: self.inner.fenced(key, epoch),
            commits_before_crash: self.commits_before_crash,
            commits: self.commits.clone(),
            crashed: self.crashed.clone(),
            contexts_reused: self.contexts_reused.clone(),
        })
    }
    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord> {
        self.check()?;
        self.inner.create_session(session).await
    }
    async fn delete_session(&self, tenant_id: &TenantId, session_id: &SessionId) -> StoreResult<()> {
        self.check()?;
        self.inner.delete_session(tenant_id, session_id).await
    }
    async fn get_session(&self, tenant_id: &TenantId, session_id: &SessionId) -> StoreResult<Option<SessionRecord>> {
        self.inner.get_session(tenant_id, session_id).await
    }
    async fn update_session(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> StoreResult<SessionRecord> {
        self.check()?;
        self.inner.update_session(tenant_id, session_id, update).await
    }
    async fn list_sessions(
        &self,
        tenant_id: &TenantId,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionRecord>> {
        self.inner.list_sessions(tenant_id, filter, page).await
    }
    async fn session_costs(
        &self,
        tenant_id: &TenantId,
        session_ids: &[SessionId],
    ) -> StoreResult<BTreeMap<SessionId, SessionCost>> {
        self.inner.session_costs(tenant_id, session_ids).await
    }
    async fn create_turn(&self, turn: NewTurn) -> StoreResult<TurnSummary> {
        self.check()?;
        self.inner.create_turn(turn).await
    }
    async fn turn_by_idempotency_key(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        key: &IdempotencyKey,
    ) -> StoreResult<Option<KeyedTurn>> {
        self.inner.turn_by_idempotency_key(tenant_id, session_id, key).await
    }
    async fn get_turn(&self, key: &TurnKey) -> StoreResult<Option<TurnRecord>> {
        self.inner.get_turn(key).await
    }
    async fn get_turn_reusing(
        &self,
        key: &TurnKey,
        held: &BTreeMap<ThreadId, usize>,
    ) -> StoreResult<Option<ReusedTurnRecord>> {
        let reused = self.inner.get_turn_reusing(key, held).await?;
        if reused.as_ref().is_some_and(|reused| reused.contexts_left_out) {
            self.contexts_reused.fetch_add(1, Ordering::SeqCst);
        }
        Ok(reused)
    }
    async fn get_turn_summary(&self, key: &TurnKey) -> StoreResult<Option<TurnSummary>> {
        self.inner.get_turn_summary(key).await
    }
    async fn list_turns(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        page: &PageRequest,
    ) -> StoreResult<Page<TurnSummary>> {
        self.inner.list_turns(tenant_id, session_id, page).await
    }
    async fn freeze_and_get_turn(&self, key: &TurnKey, freeze: FreezeTurn) -> StoreResult<TurnRecord> {
        self.check()?;
        self.inner.freeze_and_get_turn(key, freeze).await
    }
    async fn update_turn_state(&self, key: &TurnKey, state: TurnState, done: TurnDone) -> StoreResult<TurnState> {
        self.check()?;
        self.inner.update_turn_state(key, state, done).await
    }
    async fn append_events(&self, key: &TurnKey, events: Vec<StoredEvent>) -> StoreResult<()> {
        self.check()?;
        self.inner.append_events(key, events).await
    }
    async fn list_turn_events(
        &self,
        key: &TurnKey,
        order: SortOrder,
        page: &PageRequest,
    ) -> StoreResult<Page<StoredEvent>> {
        self.inner.list_turn_events(key, order, page).await
    }
    async fn list_turn_events_after(&self, key: &TurnKey, after_seq: u64, limit: u32) -> StoreResult<Vec<StoredEvent>> {
        self.inner.list_turn_events_after(key, after_seq, limit).await
    }
    async fn list_session_events(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        last_turn_id: Option<&TurnId>,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionEventItem>> {
        self.inner
            .list_session_events(tenant_id, session_id, last_turn_id, page)
            .await
    }
    async fn add_threads(&self, key: &TurnKey, threads: Vec<AgentThreadSnapshot>) -> StoreResult<()> {
        self.check()?;
        self.inner.add_threads(key, threads).await
    }
    async fn remove_threads(&self, key: &TurnKey, thread_ids: &[ThreadId]) -> StoreResult<()> {
        self.check()?;
        self.inner.remove_threads(key, thread_ids).await
    }
    async fn append_to_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> StoreResult<()> {
        self.check()?;
        self.inner
            .append_to_thread_context(key, thread_id, messages, usage, completion)
            .await?;
        self.committed();
        Ok(())
    }
    async fn commit_thread_step(&self, key: &TurnKey, step: ThreadStep) -> StoreResult<()> {
        self.check()?;
        self.inner.commit_thread_step(key, step).await?;
        self.committed();
        Ok(())
    }
    async fn overwrite_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        events: Vec<StoredEvent>,
        messages: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> StoreResult<()> {
        self.check()?;
        self.inner
            .overwrite_thread_context(key, thread_id, events, messages, usage)
            .await?;
        self.committed();
        Ok(())
    }
    async fn thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
    ) -> StoreResult<Option<serde_json::Map<String, Value>>> {
        self.inner.thread_capability_state(key, thread_id).await
    }
    async fn mark_live_stream(&self, key: &TurnKey, mark: LiveStreamMark) -> StoreResult<()> {
        self.check()?;
        self.inner.mark_live_stream(key, mark).await
    }
    async fn patch_mcp_servers(&self, key: &TurnKey, servers: Vec<McpServerInitInfo>) -> StoreResult<()> {
        self.check()?;
        self.inner.patch_mcp_servers(key, servers).await
    }
    async fn set_sandbox_info(&self, key: &TurnKey, info: trueforge_store::session::SandboxInfo) -> StoreResult<()> {
        self.check()?;
        self.inner.set_sandbox_info(key, info).await
    }
    async fn patch_thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        state_key: &str,
        state: Value,
    ) -> StoreResult<()> {
        self.check()?;
        self.inner
            .patch_thread_capability_state(key, thread_id, state_key, state)
            .await
    }
    async fn thread_history(&self, key: &TurnKey, thread_id: &ThreadId) -> StoreResult<Vec<HistoryEntry>> {
        self.inner.thread_history(key, thread_id).await
    }
    async fn search_thread_history(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        query: &str,
        limit: u32,
    ) -> StoreResult<Vec<HistoryEntry>> {
        self.inner.search_thread_history(key, thread_id, query, limit).await
    }
    async fn renew_lease(&self, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        self.check()?;
        self.inner.renew_lease(key, owner, ttl_ms).await
    }
    async fn claim_expired_lease(&self, key: &TurnKey, new_owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        self.check()?;
        self.inner.claim_expired_lease(key, new_owner, ttl_ms).await
    }
    async fn list_expired_leases(&self, limit: u32) -> StoreResult<Vec<ExpiredLease>> {
        self.inner.list_expired_leases(limit).await
    }
    async fn expire_leases_of_others(&self, owner: &str) -> StoreResult<u64> {
        self.check()?;
        self.inner.expire_leases_of_others(owner).await
    }
}
