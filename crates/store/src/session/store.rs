//! The session store contract. Pure durability: no streaming surface.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Map, Value};
use trueforge_protocol::{
    AgentThreadSnapshot, ContextMessage, CurrentContextUsage, IdempotencyKey, McpServerInitInfo, SubAgentCompletion,
    TurnState,
};

use super::model::{
    ExpiredLease, FreezeTurn, HistoryEntry, KeyedTurn, Lease, LiveStreamMark, NewSession, NewTurn, Page, PageRequest,
    ReusedTurnRecord, SandboxInfo, SessionCost, SessionEventItem, SessionFilter, SessionId, SessionRecord,
    SessionUpdate, SortOrder, StoredEvent, TenantId, ThreadId, ThreadStep, TurnDone, TurnId, TurnKey, TurnRecord,
    TurnSummary,
};
use crate::error::StoreResult;

/// Durable sessions, turns, thread contexts and events.
///
/// Every call names its tenant; a session or turn of another tenant is indistinguishable from a missing
/// one. Ids are compared byte-wise. Turn-scoped writes are fenced on the turn still running: on a terminal
/// turn they fail with [`StoreError::TurnNotRunning`](crate::StoreError::TurnNotRunning), on a missing one
/// with `TurnNotFound`.
#[async_trait]
pub trait SessionStore: Send + Sync {
    // ---- sessions ----

    /// Creates a session. Session ids are unique across tenants.
    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord>;

    /// Deletes a session with all its turns, contexts and events. Idempotent; a session of another tenant
    /// is left alone.
    async fn delete_session(&self, tenant_id: &TenantId, session_id: &SessionId) -> StoreResult<()>;

    /// Reads a session. Never bumps its activity time.
    async fn get_session(&self, tenant_id: &TenantId, session_id: &SessionId) -> StoreResult<Option<SessionRecord>>;

    /// Applies a partial update and bumps the activity time.
    async fn update_session(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> StoreResult<SessionRecord>;

    /// Lists a tenant's sessions by `(updated_at, session_id)`, newest first by default.
    async fn list_sessions(
        &self,
        tenant_id: &TenantId,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionRecord>>;

    /// What the ended turns of each of `session_ids` cost. Sessions without an ended turn, and those of
    /// another tenant, are left out of the map.
    async fn session_costs(
        &self,
        tenant_id: &TenantId,
        session_ids: &[SessionId],
    ) -> StoreResult<BTreeMap<SessionId, SessionCost>>;

    // ---- turns ----

    /// Creates a running turn, continuing or forking from `previous_turn_id` (which must be terminal), and
    /// makes it the session's tip, in one transaction. Costs O(threads + new messages), whatever the length
    /// of the inherited context. A turn with an idempotency key the session already has is not created
    /// (`IdempotencyKeyUsed`, naming the turn that has it); of concurrent calls with one key, one creates.
    async fn create_turn(&self, turn: NewTurn) -> StoreResult<TurnSummary>;

    /// The turn of the session created with this idempotency key (see [`NewTurn::idempotency`]), if any.
    /// A session of another tenant has none.
    async fn turn_by_idempotency_key(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        key: &IdempotencyKey,
    ) -> StoreResult<Option<KeyedTurn>>;

    /// Reads a turn with its full snapshot.
    async fn get_turn(&self, key: &TurnKey) -> StoreResult<Option<TurnRecord>>;

    /// Reads a turn like [`get_turn`](Self::get_turn), except the contexts a caller already holds:
    /// `held` names threads with the length of the context the caller has for them. When every thread of
    /// the turn is named there with its stored length, the contexts are left out (empty in the record)
    /// and the read costs O(threads) whatever the length of the conversation; otherwise they are all read.
    /// Lengths only prove the caller's copy current for a turn whose contexts can no longer change (a
    /// terminal one): the caller checks that.
    async fn get_turn_reusing(
        &self,
        key: &TurnKey,
        held: &BTreeMap<ThreadId, usize>,
    ) -> StoreResult<Option<ReusedTurnRecord>> {
        let Some(mut record) = self.get_turn(key).await? else {
            return Ok(None);
        };
        let contexts_left_out = record.snapshot.threads.len() == held.len()
            && record
                .snapshot
                .threads
                .values()
                .all(|thread| held.get(&thread.thread_id) == Some(&thread.context.len()));
        if contexts_left_out {
            for thread in record.snapshot.threads.values_mut() {
                thread.context = Vec::new();
            }
        }
        Ok(Some(ReusedTurnRecord {
            record,
            contexts_left_out,
        }))
    }

    /// Reads a turn without its snapshot: one row, whatever the length of its conversation (for its state,
    /// its lease, its wire shape).
    async fn get_turn_summary(&self, key: &TurnKey) -> StoreResult<Option<TurnSummary>>;

    /// Lists every turn of a session (all branches) in creation order.
    async fn list_turns(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        page: &PageRequest,
    ) -> StoreResult<Page<TurnSummary>>;

    /// Cancels a running turn with the store's `completed_at` and persists its `turn.done`, in one
    /// transaction. On a terminal turn it only reads. Returns the turn as it now is.
    async fn freeze_and_get_turn(&self, key: &TurnKey, freeze: FreezeTurn) -> StoreResult<TurnRecord>;

    /// Moves a running turn to a terminal state and persists its `turn.done`, in one transaction. The first
    /// terminal write wins. `completed_at` in `state` is replaced by the store's clock. Returns the state
    /// written.
    async fn update_turn_state(&self, key: &TurnKey, state: TurnState, done: TurnDone) -> StoreResult<TurnState>;

    // ---- events ----

    /// Appends events with their sequence numbers. Within the call they may come in any order; every seq
    /// must be above the turn's last stored seq, and seqs and event ids must be unique in the turn.
    async fn append_events(&self, key: &TurnKey, events: Vec<StoredEvent>) -> StoreResult<()>;

    /// A turn's events by seq. Works on terminal turns.
    async fn list_turn_events(
        &self,
        key: &TurnKey,
        order: SortOrder,
        page: &PageRequest,
    ) -> StoreResult<Page<StoredEvent>>;

    /// A turn's events with seq greater than `after_seq`, ascending, at most `limit`: the resume path.
    async fn list_turn_events_after(&self, key: &TurnKey, after_seq: u64, limit: u32) -> StoreResult<Vec<StoredEvent>>;

    /// The events of one branch, newest turn first and newest event first within a turn. The branch ends
    /// at `last_turn_id`, or at the session's tip; a page token keeps the branch it started on.
    async fn list_session_events(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        last_turn_id: Option<&TurnId>,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionEventItem>>;

    // ---- threads and context ----

    /// Adds threads (with their initial context and capability state) to a running turn.
    async fn add_threads(&self, key: &TurnKey, threads: Vec<AgentThreadSnapshot>) -> StoreResult<()>;

    /// Removes threads from this turn only; they do not carry into later turns.
    async fn remove_threads(&self, key: &TurnKey, thread_ids: &[ThreadId]) -> StoreResult<()>;

    /// Appends messages to a thread's context. A usage replaces the stored one; a completion is set once.
    async fn append_to_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> StoreResult<()>;

    /// Appends a thread step's events and context rows in one transaction (the runtime's commit point): a
    /// crash leaves both or neither. Fenced like every turn write; a missing thread fails the whole step.
    async fn commit_thread_step(&self, key: &TurnKey, step: ThreadStep) -> StoreResult<()>;

    /// Replaces a thread's context (compaction), storing `events` (the record of the compaction, under the
    /// rules of [`append_events`](Self::append_events)) in the same transaction: a crash leaves both or
    /// neither. The old bodies stay readable through [`thread_history`](Self::thread_history).
    async fn overwrite_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        events: Vec<StoredEvent>,
        messages: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> StoreResult<()>;

    /// One thread's capability state, without reading its context: `Ok(None)` when the thread has none,
    /// `TurnNotFound` / `ThreadNotFound` when either is missing.
    async fn thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
    ) -> StoreResult<Option<Map<String, Value>>>;

    /// Records how far the running turn's live stream went (see [`LiveStreamMark`]): its seq only grows,
    /// its open messages are replaced. `TurnNotRunning` once the turn has ended.
    async fn mark_live_stream(&self, key: &TurnKey, mark: LiveStreamMark) -> StoreResult<()>;

    /// Merges MCP server session info by server id, each id replaced whole.
    async fn patch_mcp_servers(&self, key: &TurnKey, servers: Vec<McpServerInitInfo>) -> StoreResult<()>;

    /// Records the sandbox the running turn uses (`sandbox.created`); later turns of the conversation inherit
    /// it. `TurnNotRunning` once the turn has ended.
    async fn set_sandbox_info(&self, key: &TurnKey, info: SandboxInfo) -> StoreResult<()>;

    /// Sets one key of a thread's capability state (last write wins). JSON `null` is stored as a value.
    async fn patch_thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        state_key: &str,
        state: Value,
    ) -> StoreResult<()>;

    // ---- recall ----

    /// Every body the thread ever had along this turn's branch, in write order, flagged active when it is
    /// part of the current context.
    async fn thread_history(&self, key: &TurnKey, thread_id: &ThreadId) -> StoreResult<Vec<HistoryEntry>>;

    /// The history entries whose text contains every word of `query` (case-insensitive, whole words), in
    /// write order, at most `limit`.
    async fn search_thread_history(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        query: &str,
        limit: u32,
    ) -> StoreResult<Vec<HistoryEntry>>;

    // ---- leases ----

    /// This store, with every write to the turn `key` fenced by the lease epoch `epoch`: once the turn's
    /// lease has been taken over (its epoch raised), such a write fails with `StaleLease` and changes
    /// nothing. Writes to other turns, and reads, are as on this store. The runtime writes a turn it runs
    /// through a store fenced with the epoch of its lease.
    fn fenced(&self, key: &TurnKey, epoch: u64) -> std::sync::Arc<dyn SessionStore>;

    /// Extends the lease of a running turn held by `owner`.
    async fn renew_lease(&self, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease>;

    /// Takes over a running turn whose lease has expired (or that has none). Exactly one of several
    /// concurrent claimers wins; the others get `LeaseHeldByOther`.
    async fn claim_expired_lease(&self, key: &TurnKey, new_owner: &str, ttl_ms: i64) -> StoreResult<Lease>;

    /// Running turns whose lease has expired, across tenants (for the recovery sweeper), oldest expiry first.
    async fn list_expired_leases(&self, limit: u32) -> StoreResult<Vec<ExpiredLease>>;

    /// Ends now every live lease of a running turn held by an owner other than `owner`; returns how many.
    /// For a process that is the only executor of its database (local mode) at start-up: every other
    /// holder is an earlier run of it that is gone, so its turns can be claimed at once instead of after
    /// their lease runs out.
    async fn expire_leases_of_others(&self, owner: &str) -> StoreResult<u64>;
}
