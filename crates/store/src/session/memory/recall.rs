//! Recall: a thread's whole history along its lineage, optionally filtered by search terms.

use std::collections::BTreeSet;

use super::state::{State, thread_key};
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::search;

impl State {
    fn history(&self, key: &TurnKey, thread_id: &ThreadId) -> StoreResult<Vec<(i64, bool)>> {
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
                thread_id: thread_id.clone(),
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

    pub(super) fn thread_history(&self, key: &TurnKey, thread_id: &ThreadId) -> StoreResult<Vec<HistoryEntry>> {
        let ids = self.history(key, thread_id)?;
        Ok(ids
            .into_iter()
            .filter_map(|(id, active)| self.history_entry(id, active))
            .collect())
    }

    pub(super) fn search_thread_history(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        terms: Vec<String>,
        limit: u32,
    ) -> StoreResult<Vec<HistoryEntry>> {
        let ids = self.history(key, thread_id)?;
        Ok(ids
            .into_iter()
            .filter(|(id, _)| {
                self.messages
                    .get(id)
                    .is_some_and(|row| search::matches(&row.index_text, &terms))
            })
            .take(limit as usize)
            .filter_map(|(id, active)| self.history_entry(id, active))
            .collect())
    }
}
