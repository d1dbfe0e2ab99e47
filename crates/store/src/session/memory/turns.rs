//! Turns: snapshots, creating a turn on its branch, listing, and the terminal writes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use trueforge_protocol::{AgentThreadSnapshot, CurrentContextUsage, IdempotencyKey, TurnState};

use super::state::{State, ThreadRow, TurnRow, thread_key, turn_map_key};
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::page::{self, Cursor};
use crate::session::rules;
use crate::time::Timestamp;

impl State {
    fn snapshot_of(&self, key: &TurnKey, row: &TurnRow) -> TurnSnapshot {
        let threads = self
            .threads
            .range(
                (key.session_id.clone(), key.turn_id.clone(), ThreadId::from(""))
                    ..=(
                        key.session_id.clone(),
                        key.turn_id.clone(),
                        ThreadId::new(char::MAX.to_string()),
                    ),
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
            live_stream: row.live_stream.clone(),
        }
    }

    pub(super) fn record(&self, key: &TurnKey) -> Option<TurnRecord> {
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
        let seq = rules::done_seq(row.summary.last_seq, row.live_stream.seq, done.min_seq);
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

    pub(super) fn create_turn(
        &mut self,
        turn: NewTurn,
        now: Timestamp,
        lease: Option<Lease>,
    ) -> StoreResult<TurnSummary> {
        if self.session(&turn.tenant_id, &turn.session_id).is_none() {
            return Err(StoreError::SessionNotFound {
                session_id: turn.session_id,
            });
        }
        if self
            .turns
            .contains_key(&(turn.session_id.clone(), turn.turn_id.clone()))
        {
            return Err(StoreError::TurnAlreadyExists { turn_id: turn.turn_id });
        }
        if let Some(idempotency) = &turn.idempotency
            && let Some(keyed) = self
                .idempotency_keys
                .get(&(turn.session_id.clone(), idempotency.key.clone()))
        {
            return Err(StoreError::IdempotencyKeyUsed {
                turn_id: keyed.turn_id.clone(),
                fingerprint: keyed.fingerprint.clone(),
            });
        }
        let previous = match &turn.previous_turn_id {
            None => None,
            Some(previous_id) => {
                let row = self
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
        let inherited: Vec<(ThreadId, ThreadRow)> = match &previous_key {
            None => Vec::new(),
            Some(previous_key) => self
                .threads
                .iter()
                .filter(|((session, turn_id, _), _)| {
                    session == &previous_key.session_id && turn_id == &previous_key.turn_id
                })
                .map(|((_, _, thread_id), row)| (thread_id.clone(), row.clone()))
                .collect(),
        };
        let inherited_ids: BTreeSet<ThreadId> = inherited.iter().map(|(id, _)| id.clone()).collect();
        rules::check_thread_delta(&turn, &inherited_ids)?;
        let events = rules::order_event_batch(&turn.turn_id, turn.events.clone(), 0)?;
        for stored in &events {
            rules::seq_to_db(stored.seq)?;
        }

        let key = TurnKey::new(&turn.tenant_id, &turn.session_id, &turn.turn_id);
        let capability: BTreeMap<ThreadId, Option<Map<String, Value>>> = turn.capability_states.into_iter().collect();
        for (thread_id, row) in inherited {
            let segment_id = self.new_segment(&turn.session_id, Some(row.segment_id), None);
            let thread = ThreadRow {
                segment_id,
                capability_state: capability.get(&thread_id).cloned().flatten(),
                ..row
            };
            self.threads.insert(thread_key(&key, &thread_id), thread);
        }
        for new_thread in turn.new_threads {
            let segment_id = self.new_segment(&turn.session_id, None, None);
            let thread = ThreadRow {
                segment_id,
                parent: new_thread.parent,
                agent_info: new_thread.agent_info,
                completion: None,
                usage: CurrentContextUsage::default(),
                capability_state: capability.get(&new_thread.thread_id).cloned().flatten(),
            };
            self.threads.insert(thread_key(&key, &new_thread.thread_id), thread);
        }
        for append in turn.context_appends {
            let Some(thread) = self.threads.get_mut(&thread_key(&key, &append.thread_id)) else {
                continue;
            };
            if let Some(usage) = append.current_context_usage {
                thread.usage = usage;
            }
            let segment_id = thread.segment_id;
            self.append_messages(segment_id, &turn.turn_id, append.messages);
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
            last_seq: events.last().map_or(0, |stored| stored.seq),
            created_at: now,
            updated_at: now,
        };
        self.next_ord += 1;
        let row = TurnRow {
            ord: self.next_ord,
            summary: summary.clone(),
            mcp_servers: previous.as_ref().and_then(|row| row.mcp_servers.clone()),
            sandbox_info: previous.as_ref().and_then(|row| row.sandbox_info.clone()),
            live_stream: LiveStreamMark::default(),
        };
        self.turns.insert((turn.session_id.clone(), turn.turn_id.clone()), row);
        if let Some(idempotency) = turn.idempotency {
            self.idempotency_keys.insert(
                (turn.session_id.clone(), idempotency.key),
                KeyedTurn {
                    turn_id: turn.turn_id.clone(),
                    fingerprint: idempotency.fingerprint,
                },
            );
        }
        for stored in events {
            self.events
                .insert((turn.session_id.clone(), turn.turn_id.clone(), stored.seq), stored);
        }
        if let Some(session) = self.sessions.get_mut(&turn.session_id) {
            session.last_turn_id = Some(turn.turn_id);
            session.updated_at = now.max(session.updated_at.plus_millis(1));
            if session.title.is_none() {
                session.title = turn.title_if_unset;
            }
        }
        Ok(summary)
    }

    pub(super) fn turn_by_idempotency_key(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        key: &IdempotencyKey,
    ) -> Option<KeyedTurn> {
        self.session(tenant_id, session_id)?;
        self.idempotency_keys.get(&(session_id.clone(), key.clone())).cloned()
    }

    pub(super) fn list_turns(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        page: &PageRequest,
        after: i64,
    ) -> StoreResult<Page<TurnSummary>> {
        if self.session(tenant_id, session_id).is_none() {
            return Err(StoreError::SessionNotFound {
                session_id: session_id.clone(),
            });
        }
        let mut rows: Vec<&TurnRow> = self
            .turns
            .values()
            .filter(|row| row.summary.session_id == *session_id && row.ord > after)
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

    pub(super) fn freeze_and_get_turn(&mut self, key: &TurnKey, freeze: FreezeTurn) -> StoreResult<TurnRecord> {
        let row = self.turn(key).ok_or_else(|| StoreError::TurnNotFound {
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
            self.write_done(key, cancelled, &freeze.done, now)?;
        }
        self.record(key).ok_or_else(|| StoreError::TurnNotFound {
            turn_id: key.turn_id.clone(),
        })
    }

    pub(super) fn update_turn_state(
        &mut self,
        key: &TurnKey,
        stamped: TurnState,
        done: TurnDone,
        now: Timestamp,
    ) -> StoreResult<TurnState> {
        self.fence(key)?;
        self.write_done(key, stamped.clone(), &done, now)?;
        Ok(stamped)
    }
}

pub(super) fn lease_of(request: &Option<LeaseRequest>, now: Timestamp) -> StoreResult<Option<Lease>> {
    match request {
        None => Ok(None),
        Some(request) => {
            rules::check_ttl(request.ttl_ms)?;
            Ok(Some(Lease {
                owner: request.owner.clone(),
                expires_at: now.plus_millis(request.ttl_ms),
                epoch: 0,
            }))
        }
    }
}
