//! Threads and their contexts: adding and removing threads, appends, overwrites and the turn-scoped patches.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use trueforge_protocol::{
    AgentThreadSnapshot, ContextMessage, CurrentContextUsage, McpServerInitInfo, SubAgentCompletion,
};

use super::state::{State, ThreadRow, thread_key};
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::rules;

impl State {
    pub(super) fn add_threads(&mut self, key: &TurnKey, threads: Vec<AgentThreadSnapshot>) -> StoreResult<()> {
        self.fence(key)?;
        let mut seen = BTreeSet::new();
        for thread in &threads {
            rules::require_id("thread", &thread.thread_id)?;
            if self.threads.contains_key(&thread_key(key, &thread.thread_id)) || !seen.insert(thread.thread_id.clone())
            {
                return Err(StoreError::ThreadAlreadyExists {
                    turn_id: key.turn_id.clone(),
                    thread_id: thread.thread_id.clone(),
                });
            }
        }
        for thread in threads {
            let segment_id = self.new_segment(&key.session_id, None, None);
            self.append_messages(segment_id, &key.turn_id, thread.context);
            let row = ThreadRow {
                segment_id,
                parent: thread.parent,
                agent_info: thread.agent_info,
                completion: thread.completion,
                usage: thread.current_context_usage,
                capability_state: thread.capability_state,
            };
            self.threads.insert(thread_key(key, &thread.thread_id), row);
        }
        Ok(())
    }

    pub(super) fn remove_threads(&mut self, key: &TurnKey, thread_ids: &[ThreadId]) -> StoreResult<()> {
        self.fence(key)?;
        if let Some(missing) = thread_ids
            .iter()
            .find(|id| !self.threads.contains_key(&thread_key(key, id)))
        {
            return Err(StoreError::ThreadNotFound {
                turn_id: key.turn_id.clone(),
                thread_id: missing.clone(),
            });
        }
        for thread_id in thread_ids {
            self.threads.remove(&thread_key(key, thread_id));
        }
        Ok(())
    }

    pub(super) fn append_to_thread_context(
        &mut self,
        key: &TurnKey,
        thread_id: &ThreadId,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> StoreResult<()> {
        self.fence(key)?;
        let thread = self.thread_mut(key, thread_id)?;
        if let Some(usage) = usage {
            thread.usage = usage;
        }
        if completion.is_some() {
            thread.completion = completion;
        }
        let segment_id = thread.segment_id;
        self.append_messages(segment_id, &key.turn_id, messages);
        Ok(())
    }

    /// Validates everything before changing anything, so a refused step leaves no trace.
    pub(super) fn commit_thread_step(&mut self, key: &TurnKey, step: ThreadStep) -> StoreResult<()> {
        self.fence(key)?;
        self.thread_mut(key, &step.thread_id)?;
        self.append_events(key, step.events)?;
        self.append_to_thread_context(key, &step.thread_id, step.messages, step.usage, step.completion)?;
        if let Some(patch) = step.state_patch {
            self.patch_thread_capability_state(key, &step.thread_id, &patch.key, patch.value)?;
        }
        Ok(())
    }

    /// Validates everything before changing anything, as [`commit_thread_step`](Self::commit_thread_step).
    pub(super) fn overwrite_thread_context(
        &mut self,
        key: &TurnKey,
        thread_id: &ThreadId,
        events: Vec<StoredEvent>,
        messages: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> StoreResult<()> {
        self.fence(key)?;
        let old_segment = self.thread_mut(key, thread_id)?.segment_id;
        self.append_events(key, events)?;
        let segment_id = self.new_segment(&key.session_id, None, Some(old_segment));
        self.append_messages(segment_id, &key.turn_id, messages);
        let thread = self.thread_mut(key, thread_id)?;
        thread.segment_id = segment_id;
        thread.usage = usage;
        Ok(())
    }

    pub(super) fn mark_live_stream(&mut self, key: &TurnKey, mark: LiveStreamMark) -> StoreResult<()> {
        let row = self.fence(key)?;
        row.live_stream.seq = row.live_stream.seq.max(mark.seq);
        row.live_stream.open_messages = mark.open_messages;
        Ok(())
    }

    pub(super) fn patch_mcp_servers(&mut self, key: &TurnKey, servers: Vec<McpServerInitInfo>) -> StoreResult<()> {
        let row = self.fence(key)?;
        let map = row.mcp_servers.get_or_insert_with(BTreeMap::new);
        for server in servers {
            map.insert(server.id.clone(), server);
        }
        Ok(())
    }

    pub(super) fn set_sandbox_info(&mut self, key: &TurnKey, info: SandboxInfo) -> StoreResult<()> {
        self.fence(key)?.sandbox_info = Some(info);
        Ok(())
    }

    pub(super) fn patch_thread_capability_state(
        &mut self,
        key: &TurnKey,
        thread_id: &ThreadId,
        state_key: &str,
        value: Value,
    ) -> StoreResult<()> {
        self.fence(key)?;
        let thread = self.thread_mut(key, thread_id)?;
        thread
            .capability_state
            .get_or_insert_with(Map::new)
            .insert(state_key.to_string(), value);
        Ok(())
    }
}
