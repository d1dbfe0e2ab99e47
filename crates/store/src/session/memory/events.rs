//! Turn events: appends, the per-turn listings and the branch-wide session feed.

use std::collections::BTreeSet;

use super::state::{State, turn_map_key};
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::page::{self, Cursor, FeedCursor};
use crate::session::rules;

impl State {
    /// The turn ids of the branch ending at `anchor`, anchor first.
    fn branch(&self, session_id: &SessionId, anchor: &TurnId) -> Vec<TurnId> {
        let mut chain = Vec::new();
        let mut current = Some(anchor.clone());
        while let Some(turn_id) = current {
            let Some(row) = self.turns.get(&(session_id.clone(), turn_id.clone())) else {
                break;
            };
            current = row.summary.previous_turn_id.clone();
            chain.push(turn_id);
        }
        chain
    }

    pub(super) fn append_events(&mut self, key: &TurnKey, events: Vec<StoredEvent>) -> StoreResult<()> {
        let last_seq = self.fence(key)?.summary.last_seq;
        let events = rules::order_event_batch(&key.turn_id, events, last_seq)?;
        for stored in &events {
            rules::seq_to_db(stored.seq)?;
        }
        let range =
            (key.session_id.clone(), key.turn_id.clone(), 0)..=(key.session_id.clone(), key.turn_id.clone(), u64::MAX);
        let existing: BTreeSet<&str> = self.events.range(range).map(|(_, stored)| stored.event.id()).collect();
        if let Some(duplicate) = events.iter().find(|stored| existing.contains(stored.event.id())) {
            return Err(StoreError::EventAlreadyExists {
                turn_id: key.turn_id.clone(),
                event_id: duplicate.event.id().to_string(),
            });
        }
        if let (Some(last), Some(row)) = (events.last(), self.turns.get_mut(&turn_map_key(key))) {
            row.summary.last_seq = last.seq;
        }
        for stored in events {
            self.events
                .insert((key.session_id.clone(), key.turn_id.clone(), stored.seq), stored);
        }
        Ok(())
    }

    pub(super) fn list_turn_events(
        &self,
        key: &TurnKey,
        order: SortOrder,
        page: &PageRequest,
        after: Option<u64>,
    ) -> StoreResult<Page<StoredEvent>> {
        if self.turn(key).is_none() {
            return Err(StoreError::TurnNotFound {
                turn_id: key.turn_id.clone(),
            });
        }
        let range =
            (key.session_id.clone(), key.turn_id.clone(), 0)..=(key.session_id.clone(), key.turn_id.clone(), u64::MAX);
        let all = self.events.range(range).map(|(_, stored)| stored);
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

    pub(super) fn list_turn_events_after(
        &self,
        key: &TurnKey,
        after_seq: u64,
        limit: u32,
    ) -> StoreResult<Vec<StoredEvent>> {
        if self.turn(key).is_none() {
            return Err(StoreError::TurnNotFound {
                turn_id: key.turn_id.clone(),
            });
        }
        let range = (key.session_id.clone(), key.turn_id.clone(), after_seq.saturating_add(1))
            ..=(key.session_id.clone(), key.turn_id.clone(), u64::MAX);
        Ok(self
            .events
            .range(range)
            .take(limit as usize)
            .map(|(_, stored)| stored.clone())
            .collect())
    }

    pub(super) fn list_session_events(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        last_turn_id: Option<&TurnId>,
        page: &PageRequest,
        cursor: Option<FeedCursor>,
    ) -> StoreResult<Page<SessionEventItem>> {
        let session = self
            .session(tenant_id, session_id)
            .ok_or_else(|| StoreError::SessionNotFound {
                session_id: session_id.clone(),
            })?;
        let (anchor, after) = match cursor {
            Some(cursor) => (Some(cursor.anchor), cursor.after),
            None => (last_turn_id.cloned().or_else(|| session.last_turn_id.clone()), None),
        };
        let Some(anchor) = anchor else {
            return Ok(Page {
                data: Vec::new(),
                limit: page.limit,
                next_page_token: None,
            });
        };
        if !self.turns.contains_key(&(session_id.clone(), anchor.clone())) {
            return Err(StoreError::TurnNotFound { turn_id: anchor });
        }
        let mut rows: Vec<(i64, SessionEventItem)> = Vec::new();
        for (depth, turn_id) in self.branch(session_id, &anchor).into_iter().enumerate() {
            let depth = depth as i64;
            let range = (session_id.clone(), turn_id.clone(), 0)..=(session_id.clone(), turn_id.clone(), u64::MAX);
            for stored in self.events.range(range).rev().map(|(_, stored)| stored) {
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
}
