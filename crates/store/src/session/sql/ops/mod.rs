// The session store's SQL, shared by the SQLite and Postgres backends: this module is compiled once inside
// each backend module (`#[path]`), where `super::Db`, `super::Store` and the few dialect hooks resolve to
// that backend. Everything here is plain SQL both engines accept, so the backends cannot drift apart.
// The submodules split the statements by concept and reach the backend's items through the imports below.

mod context;
mod events;
mod history;
mod leases;
mod rows;
mod sessions;
mod turns;

pub(super) use context::commit_thread_step as commit_thread_step_by_statements;
pub(super) use context::patch_thread_capability_state as patch_capability_state_by_statements;

use async_trait::async_trait;

/// How many times a write the database refused for a collision with a concurrent one is run again.
const TRANSIENT_RETRIES: u32 = 3;
use serde_json::Value;
use sqlx::Transaction;
use trueforge_protocol::{
    AgentThreadSnapshot, ContextMessage, CurrentContextUsage, McpServerInitInfo, SubAgentCompletion, TurnState,
};

use super::{
    Db, JSON_TEXT, SEARCH_CONDITION, SET_CAPABILITY_KEY, Store, capability_key_path, clock, search_expression,
};
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::store::SessionStore;

type Tx = Transaction<'static, Db>;

/// Rows per multi-row INSERT: far below SQLite's bound-parameter limit.
const INSERT_CHUNK: usize = 500;

fn turn_not_found(key: &TurnKey) -> StoreError {
    StoreError::TurnNotFound {
        turn_id: key.turn_id.clone(),
    }
}

fn thread_not_found(key: &TurnKey, thread_id: &str) -> StoreError {
    StoreError::ThreadNotFound {
        turn_id: key.turn_id.clone(),
        thread_id: thread_id.to_string(),
    }
}

#[async_trait]
impl SessionStore for Store {
    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord> {
        sessions::create_session(self, session).await
    }

    async fn delete_session(&self, tenant_id: &str, session_id: &str) -> StoreResult<()> {
        sessions::delete_session(self, tenant_id, session_id).await
    }

    async fn get_session(&self, tenant_id: &str, session_id: &str) -> StoreResult<Option<SessionRecord>> {
        sessions::get_session(self, tenant_id, session_id).await
    }

    async fn update_session(
        &self,
        tenant_id: &str,
        session_id: &str,
        update: SessionUpdate,
    ) -> StoreResult<SessionRecord> {
        sessions::update_session(self, tenant_id, session_id, update).await
    }

    async fn list_sessions(
        &self,
        tenant_id: &str,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionRecord>> {
        sessions::list_sessions(self, tenant_id, filter, page).await
    }

    async fn create_turn(&self, turn: NewTurn) -> StoreResult<TurnSummary> {
        // Turn creation meets every other writer of the session on the session row; a write the database
        // refused for a collision wrote nothing and is simply run again.
        let mut attempts_left = TRANSIENT_RETRIES;
        loop {
            match turns::create_turn(self, turn.clone()).await {
                Err(StoreError::Transient(_)) if attempts_left > 0 => attempts_left -= 1,
                result => return result,
            }
        }
    }

    async fn get_turn(&self, key: &TurnKey) -> StoreResult<Option<TurnRecord>> {
        turns::get_turn(self, key).await
    }

    async fn list_turns(
        &self,
        tenant_id: &str,
        session_id: &str,
        page: &PageRequest,
    ) -> StoreResult<Page<TurnSummary>> {
        turns::list_turns(self, tenant_id, session_id, page).await
    }

    async fn freeze_and_get_turn(&self, key: &TurnKey, freeze: FreezeTurn) -> StoreResult<TurnRecord> {
        turns::freeze_and_get_turn(self, key, freeze).await
    }

    async fn update_turn_state(&self, key: &TurnKey, state: TurnState, done: TurnDone) -> StoreResult<TurnState> {
        turns::update_turn_state(self, key, state, done).await
    }

    async fn append_events(&self, key: &TurnKey, events: Vec<StoredEvent>) -> StoreResult<()> {
        events::append_events(self, key, events).await
    }

    async fn list_turn_events(
        &self,
        key: &TurnKey,
        order: SortOrder,
        page: &PageRequest,
    ) -> StoreResult<Page<StoredEvent>> {
        events::list_turn_events(self, key, order, page).await
    }

    async fn list_turn_events_after(&self, key: &TurnKey, after_seq: u64, limit: u32) -> StoreResult<Vec<StoredEvent>> {
        events::list_turn_events_after(self, key, after_seq, limit).await
    }

    async fn list_session_events(
        &self,
        tenant_id: &str,
        session_id: &str,
        last_turn_id: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionEventItem>> {
        events::list_session_events(self, tenant_id, session_id, last_turn_id, page).await
    }

    async fn add_threads(&self, key: &TurnKey, threads: Vec<AgentThreadSnapshot>) -> StoreResult<()> {
        context::add_threads(self, key, threads).await
    }

    async fn remove_threads(&self, key: &TurnKey, thread_ids: &[String]) -> StoreResult<()> {
        context::remove_threads(self, key, thread_ids).await
    }

    async fn append_to_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &str,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> StoreResult<()> {
        context::append_to_thread_context(self, key, thread_id, messages, usage, completion).await
    }

    async fn commit_thread_step(&self, key: &TurnKey, step: ThreadStep) -> StoreResult<()> {
        super::commit_thread_step(self, key, step).await
    }

    async fn overwrite_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &str,
        messages: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> StoreResult<()> {
        context::overwrite_thread_context(self, key, thread_id, messages, usage).await
    }

    async fn thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &str,
    ) -> StoreResult<Option<serde_json::Map<String, Value>>> {
        context::thread_capability_state(self, key, thread_id).await
    }

    async fn patch_mcp_servers(&self, key: &TurnKey, servers: Vec<McpServerInitInfo>) -> StoreResult<()> {
        context::patch_mcp_servers(self, key, servers).await
    }

    async fn patch_sandbox_info(&self, key: &TurnKey, sandbox: SandboxInfo) -> StoreResult<()> {
        context::patch_sandbox_info(self, key, sandbox).await
    }

    async fn patch_thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &str,
        state_key: &str,
        state: Value,
    ) -> StoreResult<()> {
        super::patch_thread_capability_state(self, key, thread_id, state_key, state).await
    }

    async fn thread_history(&self, key: &TurnKey, thread_id: &str) -> StoreResult<Vec<HistoryEntry>> {
        history::thread_history(self, key, thread_id).await
    }

    async fn search_thread_history(
        &self,
        key: &TurnKey,
        thread_id: &str,
        query: &str,
        limit: u32,
    ) -> StoreResult<Vec<HistoryEntry>> {
        history::search_thread_history(self, key, thread_id, query, limit).await
    }

    async fn renew_lease(&self, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        leases::renew_lease(self, key, owner, ttl_ms).await
    }

    async fn claim_expired_lease(&self, key: &TurnKey, new_owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        leases::claim_expired_lease(self, key, new_owner, ttl_ms).await
    }

    async fn list_expired_leases(&self, limit: u32) -> StoreResult<Vec<ExpiredLease>> {
        leases::list_expired_leases(self, limit).await
    }

    async fn expire_leases_of_others(&self, owner: &str) -> StoreResult<u64> {
        leases::expire_leases_of_others(self, owner).await
    }
}
