//! The store's tables (maps keyed like the SQL tables), their rows, the lookups and fence every operation
//! starts from, and the segment chains that hold thread contexts.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use trueforge_protocol::{
    ContextMessage, CurrentContextUsage, IdempotencyKey, McpServerInitInfo, SessionId, SubAgentCompletion, TenantId,
    ThreadId, TurnId,
};

use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::search;
use crate::time::Timestamp;

#[derive(Debug, Clone)]
pub(super) struct TurnRow {
    pub(super) ord: i64,
    pub(super) summary: TurnSummary,
    pub(super) mcp_servers: Option<BTreeMap<String, McpServerInitInfo>>,
    pub(super) sandbox_info: Option<SandboxInfo>,
    pub(super) live_stream: LiveStreamMark,
}

#[derive(Debug, Clone)]
pub(super) struct ThreadRow {
    pub(super) segment_id: i64,
    pub(super) parent: Option<trueforge_protocol::AgentParent>,
    pub(super) agent_info: Option<trueforge_protocol::AgentInfo>,
    pub(super) completion: Option<SubAgentCompletion>,
    pub(super) usage: CurrentContextUsage,
    pub(super) capability_state: Option<Map<String, Value>>,
}

/// A run of context: the first `parent_len` items of the parent's chain, then its own items.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub(super) session_id: SessionId,
    pub(super) parent: Option<i64>,
    pub(super) parent_len: i64,
    /// The segment an overwrite replaced (recall walks it).
    pub(super) supersedes: Option<i64>,
    pub(super) own: Vec<i64>,
}

#[derive(Debug, Clone)]
pub(super) struct MessageRow {
    pub(super) turn_id: TurnId,
    pub(super) position: i64,
    pub(super) message: ContextMessage,
    pub(super) index_text: String,
}

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) sessions: BTreeMap<SessionId, SessionRecord>,
    pub(super) turns: BTreeMap<(SessionId, TurnId), TurnRow>,
    pub(super) next_ord: i64,
    pub(super) threads: BTreeMap<(SessionId, TurnId, ThreadId), ThreadRow>,
    pub(super) segments: BTreeMap<i64, Segment>,
    pub(super) next_segment: i64,
    pub(super) messages: BTreeMap<i64, MessageRow>,
    pub(super) next_message: i64,
    pub(super) events: BTreeMap<(SessionId, TurnId, u64), StoredEvent>,
    /// The SQL backends' unique index on `(session_id, idempotency_key)`.
    pub(super) idempotency_keys: BTreeMap<(SessionId, IdempotencyKey), KeyedTurn>,
}

pub(super) fn turn_map_key(key: &TurnKey) -> (SessionId, TurnId) {
    (key.session_id.clone(), key.turn_id.clone())
}

pub(super) fn thread_key(key: &TurnKey, thread_id: &ThreadId) -> (SessionId, TurnId, ThreadId) {
    (key.session_id.clone(), key.turn_id.clone(), thread_id.clone())
}

impl State {
    pub(super) fn session(&self, tenant_id: &TenantId, session_id: &SessionId) -> Option<&SessionRecord> {
        self.sessions
            .get(session_id)
            .filter(|session| session.tenant_id == *tenant_id)
    }

    pub(super) fn turn(&self, key: &TurnKey) -> Option<&TurnRow> {
        self.turns
            .get(&turn_map_key(key))
            .filter(|row| row.summary.tenant_id == key.tenant_id)
    }

    /// The fence of every turn-scoped write: the turn exists for this tenant and is running. The caller
    /// bumps `updated_at` once the write succeeded ([`State::touch`]).
    pub(super) fn fence(&mut self, key: &TurnKey) -> StoreResult<&mut TurnRow> {
        let row = self
            .turns
            .get_mut(&turn_map_key(key))
            .filter(|row| row.summary.tenant_id == key.tenant_id)
            .ok_or_else(|| StoreError::TurnNotFound {
                turn_id: key.turn_id.clone(),
            })?;
        if row.summary.state.is_terminal() {
            return Err(StoreError::TurnNotRunning {
                turn_id: key.turn_id.clone(),
                state: Box::new(row.summary.state.clone()),
            });
        }
        Ok(row)
    }

    /// Records a successful turn-scoped write.
    pub(super) fn touch(&mut self, key: &TurnKey, now: Timestamp) {
        if let Some(row) = self.turns.get_mut(&turn_map_key(key)) {
            row.summary.updated_at = row.summary.updated_at.max(now);
        }
    }

    pub(super) fn thread_mut(&mut self, key: &TurnKey, thread_id: &ThreadId) -> StoreResult<&mut ThreadRow> {
        self.threads
            .get_mut(&thread_key(key, thread_id))
            .ok_or_else(|| StoreError::ThreadNotFound {
                turn_id: key.turn_id.clone(),
                thread_id: thread_id.clone(),
            })
    }

    pub(super) fn new_segment(&mut self, session_id: &SessionId, parent: Option<i64>, supersedes: Option<i64>) -> i64 {
        // A parent that added nothing is skipped (as the SQL backends do), so idle turns do not lengthen
        // the chain.
        let parent = match parent.and_then(|id| self.segments.get(&id).map(|segment| (id, segment))) {
            Some((_, segment)) if segment.own.is_empty() && segment.supersedes.is_none() => segment.parent,
            other => other.map(|(id, _)| id),
        };
        let parent_len = parent.map(|id| self.segment_len(id)).unwrap_or(0);
        self.next_segment += 1;
        let id = self.next_segment;
        self.segments.insert(
            id,
            Segment {
                session_id: session_id.clone(),
                parent,
                parent_len,
                supersedes,
                own: Vec::new(),
            },
        );
        id
    }

    fn segment_len(&self, id: i64) -> i64 {
        self.segments
            .get(&id)
            .map(|segment| segment.parent_len + segment.own.len() as i64)
            .unwrap_or(0)
    }

    pub(super) fn append_messages(&mut self, segment_id: i64, turn_id: &TurnId, messages: Vec<ContextMessage>) {
        let start = self.segment_len(segment_id);
        for (position, message) in (start..).zip(messages) {
            self.next_message += 1;
            let id = self.next_message;
            let index_text = search::index_text(&message.search_text());
            self.messages.insert(
                id,
                MessageRow {
                    turn_id: turn_id.clone(),
                    position,
                    message,
                    index_text,
                },
            );
            if let Some(segment) = self.segments.get_mut(&segment_id) {
                segment.own.push(id);
            }
        }
    }

    /// The message ids of a segment's logical content, in order.
    pub(super) fn chain_ids(&self, segment_id: i64) -> Vec<i64> {
        let mut links = Vec::new();
        let mut current = Some((segment_id, i64::MAX));
        while let Some((id, cap)) = current {
            let Some(segment) = self.segments.get(&id) else { break };
            links.push((id, cap));
            current = segment.parent.map(|parent| (parent, segment.parent_len));
        }
        let mut ids = Vec::new();
        for (id, cap) in links.into_iter().rev() {
            if let Some(segment) = self.segments.get(&id) {
                let take = (cap - segment.parent_len).clamp(0, segment.own.len() as i64) as usize;
                ids.extend_from_slice(&segment.own[..take]);
            }
        }
        ids
    }

    pub(super) fn context(&self, segment_id: i64) -> Vec<ContextMessage> {
        self.chain_ids(segment_id)
            .into_iter()
            .filter_map(|id| self.messages.get(&id).map(|row| row.message.clone()))
            .collect()
    }
}
