//! The in-memory session store: the same segment-chain model as the SQL backends, held in maps behind one
//! mutex, so it gives the same answers (including ordering, errors and `null` semantics).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use serde_json::{Map, Value};
use trueforge_protocol::{
    AgentThreadSnapshot, ContextMessage, CurrentContextUsage, McpServerInitInfo, SessionAgent, SubAgentCompletion,
    TurnState,
};

use super::model::*;
use super::page::{self, Cursor};
use super::rules;
use super::search;
use super::store::SessionStore;
use crate::error::{StoreError, StoreResult};
use crate::time::Timestamp;

#[derive(Debug, Clone)]
struct TurnRow {
    ord: i64,
    summary: TurnSummary,
    mcp_servers: Option<BTreeMap<String, McpServerInitInfo>>,
    sandbox_info: Option<SandboxInfo>,
}

#[derive(Debug, Clone)]
struct ThreadRow {
    segment_id: i64,
    parent: Option<trueforge_protocol::AgentParent>,
    agent_info: Option<trueforge_protocol::AgentInfo>,
    completion: Option<SubAgentCompletion>,
    usage: CurrentContextUsage,
    capability_state: Option<Map<String, Value>>,
}

/// A run of context: the first `parent_len` items of the parent's chain, then its own items.
#[derive(Debug, Clone)]
struct Segment {
    session_id: String,
    parent: Option<i64>,
    parent_len: i64,
    /// The segment an overwrite replaced (recall walks it).
    supersedes: Option<i64>,
    own: Vec<i64>,
}

#[derive(Debug, Clone)]
struct MessageRow {
    turn_id: String,
    position: i64,
    message: ContextMessage,
    index_text: String,
}

#[derive(Debug, Default)]
struct State {
    sessions: BTreeMap<String, SessionRecord>,
    turns: BTreeMap<(String, String), TurnRow>,
    next_ord: i64,
    threads: BTreeMap<(String, String, String), ThreadRow>,
    segments: BTreeMap<i64, Segment>,
    next_segment: i64,
    messages: BTreeMap<i64, MessageRow>,
    next_message: i64,
    events: BTreeMap<(String, String, u64), StoredEvent>,
}

/// Session store held in process memory (tests, embedding, ephemeral runs).
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    state: Mutex<State>,
}

impl MemorySessionStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied write: every write validates first and
        // mutates last. So a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn turn_map_key(key: &TurnKey) -> (String, String) {
    (key.session_id.clone(), key.turn_id.clone())
}

fn thread_key(key: &TurnKey, thread_id: &str) -> (String, String, String) {
    (key.session_id.clone(), key.turn_id.clone(), thread_id.to_string())
}

impl State {
    fn session(&self, tenant_id: &str, session_id: &str) -> Option<&SessionRecord> {
        self.sessions
            .get(session_id)
            .filter(|session| session.tenant_id == tenant_id)
    }

    fn turn(&self, key: &TurnKey) -> Option<&TurnRow> {
        self.turns
            .get(&turn_map_key(key))
            .filter(|row| row.summary.tenant_id == key.tenant_id)
    }

    /// The fence of every turn-scoped write: the turn exists for this tenant and is running. Bumps
    /// `updated_at`.
    fn fence(&mut self, key: &TurnKey) -> StoreResult<&mut TurnRow> {
        let now = Timestamp::now();
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
        row.summary.updated_at = row.summary.updated_at.max(now);
        Ok(row)
    }

    fn thread_mut(&mut self, key: &TurnKey, thread_id: &str) -> StoreResult<&mut ThreadRow> {
        self.threads
            .get_mut(&thread_key(key, thread_id))
            .ok_or_else(|| StoreError::ThreadNotFound {
                turn_id: key.turn_id.clone(),
                thread_id: thread_id.to_string(),
            })
    }

    fn new_segment(&mut self, session_id: &str, parent: Option<i64>, supersedes: Option<i64>) -> i64 {
        let parent_len = parent.map(|id| self.segment_len(id)).unwrap_or(0);
        self.next_segment += 1;
        let id = self.next_segment;
        self.segments.insert(
            id,
            Segment {
                session_id: session_id.to_string(),
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

    fn append_messages(&mut self, segment_id: i64, turn_id: &str, messages: Vec<ContextMessage>) {
        let start = self.segment_len(segment_id);
        for (position, message) in (start..).zip(messages) {
            self.next_message += 1;
            let id = self.next_message;
            let index_text = search::index_text(&message.search_text());
            self.messages.insert(
                id,
                MessageRow {
                    turn_id: turn_id.to_string(),
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
    fn chain_ids(&self, segment_id: i64) -> Vec<i64> {
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

    fn context(&self, segment_id: i64) -> Vec<ContextMessage> {
        self.chain_ids(segment_id)
            .into_iter()
            .filter_map(|id| self.messages.get(&id).map(|row| row.message.clone()))
            .collect()
    }

    fn snapshot_of(&self, key: &TurnKey, row: &TurnRow) -> TurnSnapshot {
        let threads = self
            .threads
            .range(
                (key.session_id.clone(), key.turn_id.clone(), String::new())
                    ..=(key.session_id.clone(), key.turn_id.clone(), char::MAX.to_string()),
            )
            .map(|((_, _, thread_id), thread)| {
                let snapshot = AgentThreadSnapshot {
                    thread_id: thread_id.clone(),
                    context: self.context(thread.segment_id),
                    current_context_usage: thread.usage,
                    parent: thread.parent.clone(),
                    agent_info: thread.agent_info.clone(),
                    completion: thread.completion.clone(),
                    capability_state: thread.capability_state.clone(),
                };
                (thread_id.clone(), snapshot)
            })
            .collect();
        TurnSnapshot {
            threads,
            mcp_servers: row.mcp_servers.clone(),
            sandbox_info: row.sandbox_info.clone(),
        }
    }

    fn record(&self, key: &TurnKey) -> Option<TurnRecord> {
        let row = self.turn(key)?;
        Some(TurnRecord {
            turn: row.summary.clone(),
            snapshot: self.snapshot_of(key, row),
        })
    }

    fn write_done(&mut self, key: &TurnKey, state: TurnState, done: &TurnDone, now: Timestamp) -> StoreResult<()> {
        let event = rules::turn_done_event(&done.event_id, &state, now);
        let row = self
            .turns
            .get_mut(&turn_map_key(key))
            .ok_or_else(|| StoreError::TurnNotFound {
                turn_id: key.turn_id.clone(),
            })?;
        let already = self
            .events
            .range(
                (key.session_id.clone(), key.turn_id.clone(), 0)
                    ..=(key.session_id.clone(), key.turn_id.clone(), u64::MAX),
            )
            .any(|(_, stored)| stored.event.id() == done.event_id);
        if already {
            return Err(StoreError::EventAlreadyExists {
                turn_id: key.turn_id.clone(),
                event_id: done.event_id.clone(),
            });
        }
        let seq = rules::done_seq(row.summary.last_seq, done.min_seq);
        rules::seq_to_db(seq)?;
        row.summary.state = state;
        row.summary.last_seq = seq;
        row.summary.lease = None;
        row.summary.updated_at = row.summary.updated_at.max(now);
        self.events.insert(
            (key.session_id.clone(), key.turn_id.clone(), seq),
            StoredEvent { seq, event },
        );
        Ok(())
    }

    /// The turn ids of the branch ending at `anchor`, anchor first.
    fn branch(&self, session_id: &str, anchor: &str) -> Vec<String> {
        let mut chain = Vec::new();
        let mut current = Some(anchor.to_string());
        while let Some(turn_id) = current {
            let Some(row) = self.turns.get(&(session_id.to_string(), turn_id.clone())) else {
                break;
            };
            current = row.summary.previous_turn_id.clone();
            chain.push(turn_id);
        }
        chain
    }

    fn history(&self, key: &TurnKey, thread_id: &str) -> StoreResult<Vec<(i64, bool)>> {
        if self.turn(key).is_none() {
            return Err(StoreError::TurnNotFound {
                turn_id: key.turn_id.clone(),
            });
        }
        let thread = self
            .threads
            .get(&thread_key(key, thread_id))
            .ok_or_else(|| StoreError::ThreadNotFound {
                turn_id: key.turn_id.clone(),
                thread_id: thread_id.to_string(),
            })?;
        let active: BTreeSet<i64> = self.chain_ids(thread.segment_id).into_iter().collect();
        let mut seen = BTreeSet::new();
        let mut pending = vec![thread.segment_id];
        let mut ids = BTreeSet::new();
        while let Some(id) = pending.pop() {
            if !seen.insert(id) {
                continue;
            }
            if let Some(segment) = self.segments.get(&id) {
                ids.extend(segment.own.iter().copied());
                pending.extend(segment.parent);
                pending.extend(segment.supersedes);
            }
        }
        Ok(ids.into_iter().map(|id| (id, active.contains(&id))).collect())
    }

    fn history_entry(&self, id: i64, active: bool) -> Option<HistoryEntry> {
        self.messages.get(&id).map(|row| HistoryEntry {
            message_id: id,
            turn_id: row.turn_id.clone(),
            position: row.position,
            active,
            message: row.message.clone(),
        })
    }
}

fn lease_of(request: &Option<LeaseRequest>, now: Timestamp) -> StoreResult<Option<Lease>> {
    match request {
        None => Ok(None),
        Some(request) => {
            rules::check_ttl(request.ttl_ms)?;
            Ok(Some(Lease {
                owner: request.owner.clone(),
                expires_at: now.plus_millis(request.ttl_ms),
            }))
        }
    }
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord> {
        rules::require_id("session", &session.session_id)?;
        let mut state = self.lock();
        if state.sessions.contains_key(&session.session_id) {
            return Err(StoreError::SessionAlreadyExists {
                session_id: session.session_id,
            });
        }
        let now = Timestamp::now();
        let record = SessionRecord {
            tenant_id: session.tenant_id,
            session_id: session.session_id.clone(),
            created_by: session.created_by,
            agent: session.agent,
            title: None,
            last_turn_id: None,
            created_at: now,
            updated_at: now,
            custom: session.custom,
        };
        state.sessions.insert(session.session_id, record.clone());
        Ok(record)
    }

    async fn delete_session(&self, tenant_id: &str, session_id: &str) -> StoreResult<()> {
        let mut state = self.lock();
        if state.session(tenant_id, session_id).is_none() {
            return Ok(());
        }
        state.sessions.remove(session_id);
        state.turns.retain(|(session, _), _| session != session_id);
        state.threads.retain(|(session, _, _), _| session != session_id);
        state.events.retain(|(session, _, _), _| session != session_id);
        let segments: Vec<i64> = state
            .segments
            .iter()
            .filter(|(_, s)| s.session_id == session_id)
            .map(|(id, _)| *id)
            .collect();
        for id in segments {
            if let Some(segment) = state.segments.remove(&id) {
                for message in segment.own {
                    state.messages.remove(&message);
                }
            }
        }
        Ok(())
    }

    async fn get_session(&self, tenant_id: &str, session_id: &str) -> StoreResult<Option<SessionRecord>> {
        Ok(self.lock().session(tenant_id, session_id).cloned())
    }

    async fn update_session(
        &self,
        tenant_id: &str,
        session_id: &str,
        update: SessionUpdate,
    ) -> StoreResult<SessionRecord> {
        let mut state = self.lock();
        let record = state
            .sessions
            .get_mut(session_id)
            .filter(|session| session.tenant_id == tenant_id)
            .ok_or_else(|| StoreError::SessionNotFound {
                session_id: session_id.to_string(),
            })?;
        if let Some(spec) = update.agent_spec {
            if !matches!(record.agent, SessionAgent::Inline { .. }) {
                return Err(StoreError::InvalidInput(
                    "the agent of a session bound to a named agent cannot be replaced".into(),
                ));
            }
            record.agent = SessionAgent::Inline { spec };
        }
        if let Some(title) = update.title {
            record.title = title;
        }
        record.updated_at = Timestamp::now().max(record.updated_at.plus_millis(1));
        Ok(record.clone())
    }

    async fn list_sessions(
        &self,
        tenant_id: &str,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionRecord>> {
        let after = page::sessions_cursor(page::open_page(page)?, filter.order)?;
        let state = self.lock();
        let mut rows: Vec<&SessionRecord> = state
            .sessions
            .values()
            .filter(|s| s.tenant_id == tenant_id)
            .filter(|s| filter.created_from.is_none_or(|from| s.created_at >= from))
            .filter(|s| filter.created_to.is_none_or(|to| s.created_at <= to))
            .filter(|s| filter.created_by.as_ref().is_none_or(|by| &s.created_by == by))
            .filter(|s| {
                filter
                    .agent_id
                    .as_ref()
                    .is_none_or(|agent_id| matches!(&s.agent, SessionAgent::Reference { id, .. } if id == agent_id))
            })
            .collect();
        let desc = filter.order == SortOrder::Desc;
        rows.sort_by(|a, b| {
            let ordering = (a.updated_at, a.session_id.as_bytes()).cmp(&(b.updated_at, b.session_id.as_bytes()));
            if desc { ordering.reverse() } else { ordering }
        });
        let rows: Vec<SessionRecord> = rows
            .into_iter()
            .filter(|s| match &after {
                None => true,
                Some((updated_at, id)) => {
                    let key = (s.updated_at.millis(), s.session_id.as_bytes());
                    let cursor = (*updated_at, id.as_bytes());
                    if desc { key < cursor } else { key > cursor }
                }
            })
            .take(page.limit as usize + 1)
            .cloned()
            .collect();
        let (data, next_page_token) = page::finish_page(rows, page.limit, |s| Cursor::Sessions {
            desc,
            updated_at: s.updated_at.millis(),
            session_id: s.session_id.clone(),
        });
        Ok(Page {
            data,
            limit: page.limit,
            next_page_token,
        })
    }

    async fn create_turn(&self, turn: NewTurn) -> StoreResult<TurnSummary> {
        rules::require_id("turn", &turn.turn_id)?;
        let now = Timestamp::now();
        let lease = lease_of(&turn.lease, now)?;
        let mut state = self.lock();
        if state.session(&turn.tenant_id, &turn.session_id).is_none() {
            return Err(StoreError::SessionNotFound {
                session_id: turn.session_id,
            });
        }
        if state
            .turns
            .contains_key(&(turn.session_id.clone(), turn.turn_id.clone()))
        {
            return Err(StoreError::TurnAlreadyExists { turn_id: turn.turn_id });
        }
        let previous = match &turn.previous_turn_id {
            None => None,
            Some(previous_id) => {
                let row = state
                    .turns
                    .get(&(turn.session_id.clone(), previous_id.clone()))
                    .ok_or_else(|| StoreError::PreviousTurnNotFound {
                        turn_id: previous_id.clone(),
                    })?;
                if !row.summary.state.is_terminal() {
                    return Err(StoreError::PreviousTurnRunning {
                        previous_turn_id: previous_id.clone(),
                    });
                }
                Some(row.clone())
            }
        };
        let previous_key = previous
            .as_ref()
            .map(|row| TurnKey::new(&turn.tenant_id, &turn.session_id, &row.summary.turn_id));
        let inherited: Vec<(String, ThreadRow)> = match &previous_key {
            None => Vec::new(),
            Some(previous_key) => state
                .threads
                .iter()
                .filter(|((session, turn_id, _), _)| {
                    session == &previous_key.session_id && turn_id == &previous_key.turn_id
                })
                .map(|((_, _, thread_id), row)| (thread_id.clone(), row.clone()))
                .collect(),
        };
        let inherited_ids: BTreeSet<String> = inherited.iter().map(|(id, _)| id.clone()).collect();
        rules::check_thread_delta(&turn, &inherited_ids)?;

        let key = TurnKey::new(&turn.tenant_id, &turn.session_id, &turn.turn_id);
        let capability: BTreeMap<String, Option<Map<String, Value>>> = turn.capability_states.into_iter().collect();
        for (thread_id, row) in inherited {
            let segment_id = state.new_segment(&turn.session_id, Some(row.segment_id), None);
            let thread = ThreadRow {
                segment_id,
                capability_state: capability.get(&thread_id).cloned().flatten(),
                ..row
            };
            state.threads.insert(thread_key(&key, &thread_id), thread);
        }
        for new_thread in turn.new_threads {
            let segment_id = state.new_segment(&turn.session_id, None, None);
            let thread = ThreadRow {
                segment_id,
                parent: new_thread.parent,
                agent_info: new_thread.agent_info,
                completion: None,
                usage: CurrentContextUsage::default(),
                capability_state: capability.get(&new_thread.thread_id).cloned().flatten(),
            };
            state.threads.insert(thread_key(&key, &new_thread.thread_id), thread);
        }
        for append in turn.context_appends {
            let Some(thread) = state.threads.get_mut(&thread_key(&key, &append.thread_id)) else {
                continue;
            };
            if let Some(usage) = append.current_context_usage {
                thread.usage = usage;
            }
            let segment_id = thread.segment_id;
            state.append_messages(segment_id, &turn.turn_id, append.messages);
        }

        let (first_turn_id, ancestor_ids) = rules::ancestry(&turn.turn_id, previous.as_ref().map(|row| &row.summary));
        let summary = TurnSummary {
            tenant_id: turn.tenant_id.clone(),
            session_id: turn.session_id.clone(),
            turn_id: turn.turn_id.clone(),
            first_turn_id,
            ancestor_ids,
            previous_turn_id: turn.previous_turn_id,
            state: TurnState::Running,
            input: turn.input,
            custom: turn.custom,
            lease,
            last_seq: 0,
            created_at: now,
            updated_at: now,
        };
        state.next_ord += 1;
        let row = TurnRow {
            ord: state.next_ord,
            summary: summary.clone(),
            mcp_servers: previous.as_ref().and_then(|row| row.mcp_servers.clone()),
            sandbox_info: previous.as_ref().and_then(|row| row.sandbox_info.clone()),
        };
        state.turns.insert((turn.session_id.clone(), turn.turn_id.clone()), row);
        if let Some(session) = state.sessions.get_mut(&turn.session_id) {
            session.last_turn_id = Some(turn.turn_id);
            session.updated_at = now.max(session.updated_at.plus_millis(1));
            if session.title.is_none() {
                session.title = turn.title_if_unset;
            }
        }
        Ok(summary)
    }

    async fn get_turn(&self, key: &TurnKey) -> StoreResult<Option<TurnRecord>> {
        Ok(self.lock().record(key))
    }

    async fn list_turns(
        &self,
        tenant_id: &str,
        session_id: &str,
        page: &PageRequest,
    ) -> StoreResult<Page<TurnSummary>> {
        let after = page::turns_cursor(page::open_page(page)?)?.unwrap_or(0);
        let state = self.lock();
        if state.session(tenant_id, session_id).is_none() {
            return Err(StoreError::SessionNotFound {
                session_id: session_id.to_string(),
            });
        }
        let mut rows: Vec<&TurnRow> = state
            .turns
            .values()
            .filter(|row| row.summary.session_id == session_id && row.ord > after)
            .collect();
        rows.sort_by_key(|row| row.ord);
        let rows: Vec<(i64, TurnSummary)> = rows
            .into_iter()
            .take(page.limit as usize + 1)
            .map(|row| (row.ord, row.summary.clone()))
            .collect();
        let (rows, next_page_token) = page::finish_page(rows, page.limit, |(ord, _)| Cursor::Turns { ord: *ord });
        Ok(Page {
            data: rows.into_iter().map(|(_, summary)| summary).collect(),
            limit: page.limit,
            next_page_token,
        })
    }

    async fn freeze_and_get_turn(&self, key: &TurnKey, freeze: FreezeTurn) -> StoreResult<TurnRecord> {
        let mut state = self.lock();
        let row = state.turn(key).ok_or_else(|| StoreError::TurnNotFound {
            turn_id: key.turn_id.clone(),
        })?;
        if !row.summary.state.is_terminal() {
            let now = Timestamp::now();
            let cancelled = rules::stamp_terminal(
                TurnState::Cancelled {
                    reason: freeze.reason,
                    completed_at: String::new(),
                    metrics: freeze.metrics,
                },
                now,
            )?;
            state.write_done(key, cancelled, &freeze.done, now)?;
        }
        state.record(key).ok_or_else(|| StoreError::TurnNotFound {
            turn_id: key.turn_id.clone(),
        })
    }

    async fn update_turn_state(&self, key: &TurnKey, new_state: TurnState, done: TurnDone) -> StoreResult<TurnState> {
        let now = Timestamp::now();
        let stamped = rules::stamp_terminal(new_state, now)?;
        let mut state = self.lock();
        state.fence(key)?;
        state.write_done(key, stamped.clone(), &done, now)?;
        Ok(stamped)
    }

    async fn append_events(&self, key: &TurnKey, events: Vec<StoredEvent>) -> StoreResult<()> {
        let mut state = self.lock();
        let last_seq = state.fence(key)?.summary.last_seq;
        let events = rules::order_event_batch(&key.turn_id, events, last_seq)?;
        for stored in &events {
            rules::seq_to_db(stored.seq)?;
        }
        let range =
            (key.session_id.clone(), key.turn_id.clone(), 0)..=(key.session_id.clone(), key.turn_id.clone(), u64::MAX);
        let existing: BTreeSet<&str> = state.events.range(range).map(|(_, stored)| stored.event.id()).collect();
        if let Some(duplicate) = events.iter().find(|stored| existing.contains(stored.event.id())) {
            return Err(StoreError::EventAlreadyExists {
                turn_id: key.turn_id.clone(),
                event_id: duplicate.event.id().to_string(),
            });
        }
        if let (Some(last), Some(row)) = (events.last(), state.turns.get_mut(&turn_map_key(key))) {
            row.summary.last_seq = last.seq;
        }
        for stored in events {
            state
                .events
                .insert((key.session_id.clone(), key.turn_id.clone(), stored.seq), stored);
        }
        Ok(())
    }

    async fn list_turn_events(
        &self,
        key: &TurnKey,
        order: SortOrder,
        page: &PageRequest,
    ) -> StoreResult<Page<StoredEvent>> {
        let after = page::turn_events_cursor(page::open_page(page)?, order)?;
        let state = self.lock();
        if state.turn(key).is_none() {
            return Err(StoreError::TurnNotFound {
                turn_id: key.turn_id.clone(),
            });
        }
        let range =
            (key.session_id.clone(), key.turn_id.clone(), 0)..=(key.session_id.clone(), key.turn_id.clone(), u64::MAX);
        let all = state.events.range(range).map(|(_, stored)| stored);
        let desc = order == SortOrder::Desc;
        let rows: Vec<StoredEvent> = if desc {
            all.rev()
                .filter(|e| after.is_none_or(|seq| e.seq < seq))
                .take(page.limit as usize + 1)
                .cloned()
                .collect()
        } else {
            all.filter(|e| after.is_none_or(|seq| e.seq > seq))
                .take(page.limit as usize + 1)
                .cloned()
                .collect()
        };
        let (data, next_page_token) = page::finish_page(rows, page.limit, |e| Cursor::TurnEvents { desc, seq: e.seq });
        Ok(Page {
            data,
            limit: page.limit,
            next_page_token,
        })
    }

    async fn list_turn_events_after(&self, key: &TurnKey, after_seq: u64, limit: u32) -> StoreResult<Vec<StoredEvent>> {
        page::open_page(&PageRequest::first(limit))?;
        let state = self.lock();
        if state.turn(key).is_none() {
            return Err(StoreError::TurnNotFound {
                turn_id: key.turn_id.clone(),
            });
        }
        let range = (key.session_id.clone(), key.turn_id.clone(), after_seq.saturating_add(1))
            ..=(key.session_id.clone(), key.turn_id.clone(), u64::MAX);
        Ok(state
            .events
            .range(range)
            .take(limit as usize)
            .map(|(_, stored)| stored.clone())
            .collect())
    }

    async fn list_session_events(
        &self,
        tenant_id: &str,
        session_id: &str,
        last_turn_id: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionEventItem>> {
        let cursor = page::feed_cursor(page::open_page(page)?)?;
        let state = self.lock();
        let session = state
            .session(tenant_id, session_id)
            .ok_or_else(|| StoreError::SessionNotFound {
                session_id: session_id.to_string(),
            })?;
        let (anchor, after) = match cursor {
            Some(cursor) => (Some(cursor.anchor), cursor.after),
            None => (
                last_turn_id
                    .map(str::to_string)
                    .or_else(|| session.last_turn_id.clone()),
                None,
            ),
        };
        let Some(anchor) = anchor else {
            return Ok(Page {
                data: Vec::new(),
                limit: page.limit,
                next_page_token: None,
            });
        };
        if !state.turns.contains_key(&(session_id.to_string(), anchor.clone())) {
            return Err(StoreError::TurnNotFound { turn_id: anchor });
        }
        let mut rows: Vec<(i64, SessionEventItem)> = Vec::new();
        for (depth, turn_id) in state.branch(session_id, &anchor).into_iter().enumerate() {
            let depth = depth as i64;
            let range =
                (session_id.to_string(), turn_id.clone(), 0)..=(session_id.to_string(), turn_id.clone(), u64::MAX);
            for stored in state.events.range(range).rev().map(|(_, stored)| stored) {
                if after.is_some_and(|(after_depth, after_seq)| {
                    (depth, u64::MAX - stored.seq) <= (after_depth, u64::MAX - after_seq)
                }) {
                    continue;
                }
                rows.push((
                    depth,
                    SessionEventItem {
                        turn_id: turn_id.clone(),
                        seq: stored.seq,
                        event: stored.event.clone(),
                    },
                ));
                if rows.len() > page.limit as usize {
                    break;
                }
            }
            if rows.len() > page.limit as usize {
                break;
            }
        }
        let (rows, next_page_token) = page::finish_page(rows, page.limit, |(depth, item)| Cursor::SessionFeed {
            anchor: anchor.clone(),
            depth: *depth,
            seq: item.seq,
        });
        Ok(Page {
            data: rows.into_iter().map(|(_, item)| item).collect(),
            limit: page.limit,
            next_page_token,
        })
    }

    async fn add_threads(&self, key: &TurnKey, threads: Vec<AgentThreadSnapshot>) -> StoreResult<()> {
        let mut state = self.lock();
        state.fence(key)?;
        let mut seen = BTreeSet::new();
        for thread in &threads {
            rules::require_id("thread", &thread.thread_id)?;
            if state.threads.contains_key(&thread_key(key, &thread.thread_id)) || !seen.insert(thread.thread_id.clone())
            {
                return Err(StoreError::ThreadAlreadyExists {
                    turn_id: key.turn_id.clone(),
                    thread_id: thread.thread_id.clone(),
                });
            }
        }
        for thread in threads {
            let segment_id = state.new_segment(&key.session_id, None, None);
            state.append_messages(segment_id, &key.turn_id, thread.context);
            let row = ThreadRow {
                segment_id,
                parent: thread.parent,
                agent_info: thread.agent_info,
                completion: thread.completion,
                usage: thread.current_context_usage,
                capability_state: thread.capability_state,
            };
            state.threads.insert(thread_key(key, &thread.thread_id), row);
        }
        Ok(())
    }

    async fn remove_threads(&self, key: &TurnKey, thread_ids: &[String]) -> StoreResult<()> {
        let mut state = self.lock();
        state.fence(key)?;
        if let Some(missing) = thread_ids
            .iter()
            .find(|id| !state.threads.contains_key(&thread_key(key, id)))
        {
            return Err(StoreError::ThreadNotFound {
                turn_id: key.turn_id.clone(),
                thread_id: missing.clone(),
            });
        }
        for thread_id in thread_ids {
            state.threads.remove(&thread_key(key, thread_id));
        }
        Ok(())
    }

    async fn append_to_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &str,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.fence(key)?;
        let thread = state.thread_mut(key, thread_id)?;
        if let Some(usage) = usage {
            thread.usage = usage;
        }
        if completion.is_some() {
            thread.completion = completion;
        }
        let segment_id = thread.segment_id;
        state.append_messages(segment_id, &key.turn_id, messages);
        Ok(())
    }

    async fn overwrite_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &str,
        messages: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.fence(key)?;
        let old_segment = state.thread_mut(key, thread_id)?.segment_id;
        let segment_id = state.new_segment(&key.session_id, None, Some(old_segment));
        state.append_messages(segment_id, &key.turn_id, messages);
        let thread = state.thread_mut(key, thread_id)?;
        thread.segment_id = segment_id;
        thread.usage = usage;
        Ok(())
    }

    async fn patch_mcp_servers(&self, key: &TurnKey, servers: Vec<McpServerInitInfo>) -> StoreResult<()> {
        let mut state = self.lock();
        let row = state.fence(key)?;
        let map = row.mcp_servers.get_or_insert_with(BTreeMap::new);
        for server in servers {
            map.insert(server.id.clone(), server);
        }
        Ok(())
    }

    async fn patch_sandbox_info(&self, key: &TurnKey, sandbox: SandboxInfo) -> StoreResult<()> {
        let mut state = self.lock();
        state.fence(key)?.sandbox_info = Some(sandbox);
        Ok(())
    }

    async fn patch_thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &str,
        state_key: &str,
        value: Value,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        state.fence(key)?;
        let thread = state.thread_mut(key, thread_id)?;
        thread
            .capability_state
            .get_or_insert_with(Map::new)
            .insert(state_key.to_string(), value);
        Ok(())
    }

    async fn thread_history(&self, key: &TurnKey, thread_id: &str) -> StoreResult<Vec<HistoryEntry>> {
        let state = self.lock();
        let ids = state.history(key, thread_id)?;
        Ok(ids
            .into_iter()
            .filter_map(|(id, active)| state.history_entry(id, active))
            .collect())
    }

    async fn search_thread_history(
        &self,
        key: &TurnKey,
        thread_id: &str,
        query: &str,
        limit: u32,
    ) -> StoreResult<Vec<HistoryEntry>> {
        let terms = search::query_terms(query)?;
        page::open_page(&PageRequest::first(limit))?;
        let state = self.lock();
        let ids = state.history(key, thread_id)?;
        Ok(ids
            .into_iter()
            .filter(|(id, _)| {
                state
                    .messages
                    .get(id)
                    .is_some_and(|row| search::matches(&row.index_text, &terms))
            })
            .take(limit as usize)
            .filter_map(|(id, active)| state.history_entry(id, active))
            .collect())
    }

    async fn renew_lease(&self, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        rules::check_ttl(ttl_ms)?;
        let mut state = self.lock();
        let now = Timestamp::now();
        let row = state.fence(key)?;
        match &row.summary.lease {
            Some(lease) if lease.owner == owner => {
                let renewed = Lease {
                    owner: owner.to_string(),
                    expires_at: now.plus_millis(ttl_ms),
                };
                row.summary.lease = Some(renewed.clone());
                Ok(renewed)
            }
            other => Err(StoreError::LeaseHeldByOther {
                turn_id: key.turn_id.clone(),
                owner: other.as_ref().map(|lease| lease.owner.clone()),
            }),
        }
    }

    async fn claim_expired_lease(&self, key: &TurnKey, new_owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        rules::check_ttl(ttl_ms)?;
        let mut state = self.lock();
        let now = Timestamp::now();
        let row = state.fence(key)?;
        match &row.summary.lease {
            Some(lease) if lease.expires_at >= now => Err(StoreError::LeaseHeldByOther {
                turn_id: key.turn_id.clone(),
                owner: Some(lease.owner.clone()),
            }),
            _ => {
                let lease = Lease {
                    owner: new_owner.to_string(),
                    expires_at: now.plus_millis(ttl_ms),
                };
                row.summary.lease = Some(lease.clone());
                Ok(lease)
            }
        }
    }

    async fn list_expired_leases(&self, limit: u32) -> StoreResult<Vec<ExpiredLease>> {
        page::open_page(&PageRequest::first(limit))?;
        let now = Timestamp::now();
        let state = self.lock();
        let mut expired: Vec<ExpiredLease> = state
            .turns
            .values()
            .filter(|row| !row.summary.state.is_terminal())
            .filter_map(|row| {
                let lease = row.summary.lease.as_ref()?;
                (lease.expires_at < now).then(|| ExpiredLease {
                    tenant_id: row.summary.tenant_id.clone(),
                    session_id: row.summary.session_id.clone(),
                    turn_id: row.summary.turn_id.clone(),
                    owner: lease.owner.clone(),
                    expired_at: lease.expires_at,
                })
            })
            .collect();
        expired.sort_by(|a, b| {
            (a.expired_at, a.session_id.as_bytes(), a.turn_id.as_bytes()).cmp(&(
                b.expired_at,
                b.session_id.as_bytes(),
                b.turn_id.as_bytes(),
            ))
        });
        expired.truncate(limit as usize);
        Ok(expired)
    }
}
