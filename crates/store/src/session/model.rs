//! Records the session store returns and the inputs its writes take.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use trueforge_protocol::{
    AgentInfo, AgentParent, AgentSpec, AgentThreadSnapshot, CancellationReason, ContextMessage, CurrentContextUsage,
    IdempotencyKey, McpServerInitInfo, SessionAgent, SessionEvent, SubAgentCompletion, TurnInputItem, TurnMetrics,
    TurnState,
};

use crate::time::Timestamp;

/// How many ancestor ids a turn record carries (newest last). The store walks the full chain itself; the
/// window is informational, kept for wire compatibility.
pub const ANCESTOR_WINDOW: usize = 20;

/// The largest page a list call accepts.
pub const MAX_PAGE_LIMIT: u32 = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
    pub created_by: String,
    pub agent: SessionAgent,
    pub title: Option<String>,
    /// The most recently created turn on any branch (the session's tip).
    pub last_turn_id: Option<TurnId>,
    pub created_at: Timestamp,
    /// Also the session's last-activity time: bumped, strictly, by every session write and turn creation.
    pub updated_at: Timestamp,
    pub custom: Option<Value>,
}

/// What a session's ended turns cost, all branches, summed from the metrics each turn stored at its end
/// (a running turn adds its cost when it ends).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SessionCost {
    /// The sum of the known costs, in USD.
    pub known_usd: f64,
    /// Ended turns whose cost is unknown: they used tokens without a cost (a model without prices), or
    /// stored no metrics at all (a turn frozen from outside its run, such as one a new turn cancelled).
    pub unknown_turns: u64,
}

impl SessionCost {
    /// Adds an ended turn by the metrics it stored.
    pub fn add_turn(&mut self, metrics: Option<&TurnMetrics>) {
        match metrics {
            Some(TurnMetrics {
                total_cost_in_usd: Some(cost),
                ..
            }) => self.known_usd += cost,
            Some(metrics)
                if metrics.total_input_tokens.unwrap_or(0) + metrics.total_output_tokens.unwrap_or(0) == 0 => {}
            _ => self.unknown_turns += 1,
        }
    }

    /// The session's cost in USD, when every ended turn's is known: a sum that left some out would
    /// understate it.
    pub fn total_usd(&self) -> Option<f64> {
        (self.unknown_turns == 0).then_some(self.known_usd)
    }
}

#[derive(Debug, Clone)]
pub struct NewSession {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
    pub agent: SessionAgent,
    pub created_by: String,
    pub custom: Option<Value>,
}

/// A partial update: `None` leaves a field unchanged; `title: Some(None)` clears the title.
#[derive(Debug, Clone, Default)]
pub struct SessionUpdate {
    /// Replaces the inline spec; rejected on a session bound to a named agent.
    pub agent_spec: Option<AgentSpec>,
    pub title: Option<Option<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    Asc,
    #[default]
    Desc,
}

#[derive(Debug, Clone, Default)]
pub struct SessionFilter {
    pub order: SortOrder,
    /// Inclusive bounds on `created_at`.
    pub created_from: Option<Timestamp>,
    pub created_to: Option<Timestamp>,
    /// Only sessions bound to this named agent.
    pub agent_id: Option<String>,
    pub created_by: Option<String>,
}

/// A page request. `limit` must be 1..=[`MAX_PAGE_LIMIT`]; `page_token` is the opaque token of a previous
/// page (an empty string means the first page).
#[derive(Debug, Clone)]
pub struct PageRequest {
    pub limit: u32,
    pub page_token: Option<String>,
}

impl PageRequest {
    pub fn first(limit: u32) -> Self {
        Self {
            limit,
            page_token: None,
        }
    }

    pub fn after(limit: u32, token: impl Into<String>) -> Self {
        Self {
            limit,
            page_token: Some(token.into()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub data: Vec<T>,
    pub limit: u32,
    /// Present when more rows follow. Keyset-based: stable under concurrent inserts.
    pub next_page_token: Option<String>,
}

/// Ownership of a running turn by one executor, until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub owner: String,
    pub expires_at: Timestamp,
    /// The fencing token: 0 for the lease a turn is created with, raised by every takeover. Writes through
    /// a store [`fenced`](crate::SessionStore::fenced) with an older epoch are refused.
    pub epoch: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRequest {
    pub owner: String,
    pub ttl_ms: i64,
}

/// A running turn whose lease has run out: its executor is presumed gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredLease {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    pub owner: String,
    pub expired_at: Timestamp,
}

/// A turn without its thread snapshot (what listings return).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSummary {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// The root of this turn's chain (a fork inherits it).
    pub first_turn_id: TurnId,
    /// Up to [`ANCESTOR_WINDOW`] ancestors, newest last.
    pub ancestor_ids: Vec<TurnId>,
    pub previous_turn_id: Option<TurnId>,
    pub state: TurnState,
    pub input: Vec<TurnInputItem>,
    pub custom: Option<Value>,
    pub lease: Option<Lease>,
    /// The highest event sequence number stored for this turn (0 when none).
    pub last_seq: u64,
    pub created_at: Timestamp,
    /// Bumped by every write to the turn or its threads, context, events and capability state.
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SandboxInfo {
    pub sandbox_id: String,
}

/// Turn-level state the runtime resumes from: every live thread, MCP sessions, the sandbox and how far the
/// live stream went.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnSnapshot {
    pub threads: BTreeMap<ThreadId, AgentThreadSnapshot>,
    pub mcp_servers: Option<BTreeMap<String, McpServerInitInfo>>,
    pub sandbox_info: Option<SandboxInfo>,
    pub live_stream: LiveStreamMark,
}

/// How far a running turn's live stream went beyond its stored events, written before the stream used it.
/// Streamed-only items (an answer's placeholder and deltas) take sequence numbers the store never sees
/// otherwise; a run that resumes the turn after a crash continues right after `seq`, so the stream stays
/// dense for a client holding one of those numbers, and closes the answers left open.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct LiveStreamMark {
    /// The highest sequence number the live stream may have used (0: only stored events so far).
    pub seq: u64,
    /// Answers whose placeholder went out and whose complete `model.message` had not been stored when the
    /// mark was written (it may have been since).
    pub open_messages: Vec<OpenMessage>,
}

/// An answer being streamed: its `model.message` id, the number of its placeholder, its thread and when
/// it started.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpenMessage {
    pub id: String,
    pub seq: u64,
    pub thread_id: ThreadId,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    pub turn: TurnSummary,
    pub snapshot: TurnSnapshot,
}

/// A turn read by [`SessionStore::get_turn_reusing`](crate::SessionStore::get_turn_reusing).
#[derive(Debug, Clone, PartialEq)]
pub struct ReusedTurnRecord {
    pub record: TurnRecord,
    /// The caller's contexts are current: the record's are left out (empty).
    pub contexts_left_out: bool,
}

/// A thread that did not exist on the previous turn (turn 1: the root thread).
#[derive(Debug, Clone, PartialEq)]
pub struct NewThread {
    pub thread_id: ThreadId,
    pub parent: Option<AgentParent>,
    pub agent_info: Option<AgentInfo>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextAppend {
    pub thread_id: ThreadId,
    pub messages: Vec<ContextMessage>,
    /// Replaces the stored usage when present.
    pub current_context_usage: Option<CurrentContextUsage>,
}

/// Creates a running turn. The store derives `first_turn_id` and `ancestor_ids` from the previous turn,
/// so the topology cannot disagree with `previous_turn_id`.
#[derive(Debug, Clone)]
pub struct NewTurn {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// `None`: a new root turn. Otherwise a terminal turn of the same session to continue or fork from.
    pub previous_turn_id: Option<TurnId>,
    pub input: Vec<TurnInputItem>,
    pub custom: Option<Value>,
    pub new_threads: Vec<NewThread>,
    pub context_appends: Vec<ContextAppend>,
    /// Exactly one entry per resulting thread: the complete capability map (nothing is carried forward).
    pub capability_states: Vec<(ThreadId, Option<Map<String, Value>>)>,
    /// Sets the session title when it has none.
    pub title_if_unset: Option<String>,
    pub lease: Option<LeaseRequest>,
    /// The turn's first events (its `turn.created`, …), stored in the same transaction as the turn, so a
    /// turn never exists without them. Their seqs start at 1.
    pub events: Vec<StoredEvent>,
    /// The client's idempotency key, stored with the turn in its transaction: when the session already has
    /// a turn with this key, nothing is written and the call fails with
    /// [`IdempotencyKeyUsed`](crate::StoreError::IdempotencyKeyUsed).
    pub idempotency: Option<TurnIdempotency>,
}

/// An idempotency key and the fingerprint of the request that carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnIdempotency {
    pub key: IdempotencyKey,
    /// Opaque to the store (the caller's digest of what defines the turn); compared byte-wise.
    pub fingerprint: String,
}

/// The turn a session's idempotency key created, and the fingerprint stored with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedTurn {
    pub turn_id: TurnId,
    pub fingerprint: String,
}

// Defined with the wire types, so crates below the store (the tool-set interface) can address a turn too.
pub use trueforge_protocol::{SessionId, TenantId, ThreadId, TurnId, TurnKey};

/// The `turn.done` event a terminal write persists. The store builds the event itself from the state it
/// writes, so the stored state and the event can never disagree.
#[derive(Debug, Clone)]
pub struct TurnDone {
    /// Id of the `turn.done` event (a monotonic ULID minted by the caller).
    pub event_id: String,
    /// The sequence number the live stream would give the event; the store uses
    /// `max(min_seq, last stored seq + 1)`.
    pub min_seq: u64,
}

/// Freezes a running turn as cancelled (a no-op read on a terminal turn).
#[derive(Debug, Clone)]
pub struct FreezeTurn {
    pub reason: CancellationReason,
    pub metrics: Option<TurnMetrics>,
    pub done: TurnDone,
}

/// One step of a thread, committed in one transaction: its events and its context rows (a model answer and
/// its `model.message`; tool results and their `tool.response`s). Either everything is stored or nothing.
#[derive(Debug, Clone)]
pub struct ThreadStep {
    pub thread_id: ThreadId,
    /// Events with their sequence numbers, under the same rules as [`append_events`](crate::SessionStore::append_events).
    pub events: Vec<StoredEvent>,
    pub messages: Vec<ContextMessage>,
    /// Replaces the stored usage when present.
    pub usage: Option<CurrentContextUsage>,
    /// Set once, as in `append_to_thread_context`.
    pub completion: Option<SubAgentCompletion>,
    /// One key of the thread's capability state set with the step, as
    /// [`patch_thread_capability_state`](crate::SessionStore::patch_thread_capability_state) would.
    pub state_patch: Option<CapabilityStatePatch>,
}

/// One key of a thread's capability state and its new value.
#[derive(Debug, Clone, PartialEq)]
pub struct CapabilityStatePatch {
    pub key: String,
    pub value: Value,
}

/// One event with its per-turn sequence number.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub seq: u64,
    pub event: SessionEvent,
}

/// An event of the session feed, with the turn it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEventItem {
    pub turn_id: TurnId,
    pub seq: u64,
    pub event: SessionEvent,
}

/// One body a thread ever had along a turn's branch.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// Stable id of the body (write order).
    pub message_id: i64,
    /// The turn that wrote it.
    pub turn_id: TurnId,
    /// Its position in the context it was written into.
    pub position: i64,
    /// Whether the body is part of the turn's current context (false: superseded by a compaction).
    pub active: bool,
    pub message: ContextMessage,
}

/// Completion marker of a sub-agent thread, set once.
pub type Completion = SubAgentCompletion;
