//! The pause: open calls wait for the user, so the thread emits what it waits for and stops.

use serde_json::Value;
use trueforge_protocol::{ActionRequiredEvent, ToolApprovalRequiredEvent, ToolCallRef, ToolResponseRequiredEvent};

use super::model_step::EVENT_ID_KEY;
use super::{AgentThread, ThreadExit, TurnEnv};
use crate::context::{approval_decisions, last_assistant, open_calls};
use crate::error::AgentError;
use crate::ids::now_iso;

impl AgentThread {
    pub(crate) async fn user_step(&mut self, env: &TurnEnv) -> Result<ThreadExit, AgentError> {
        let source_event_id = last_assistant(&self.context)
            .and_then(|(_, row)| row.extra.get(EVENT_ID_KEY).and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        let decisions = approval_decisions(&self.context);
        let mut questions = Vec::new();
        let mut approvals = Vec::new();
        for call in open_calls(&self.context) {
            let reference = ToolCallRef {
                id: call.id.clone(),
                source_event_id: source_event_id.clone(),
            };
            if call.is_client_side() {
                questions.push(reference);
            } else if call.is_approval_required() && !decisions.contains_key(call.id.as_str()) {
                approvals.push(reference);
            }
        }
        // Questions first, then approvals, as the reference orders them.
        let mut events = Vec::new();
        if !questions.is_empty() {
            events.push(ActionRequiredEvent::ToolResponseRequired(ToolResponseRequiredEvent {
                id: env.journal.next_id(),
                created_at: now_iso(),
                thread_id: self.id.to_string(),
                tool_calls: questions,
            }));
        }
        if !approvals.is_empty() {
            events.push(ActionRequiredEvent::ToolApprovalRequired(ToolApprovalRequiredEvent {
                id: env.journal.next_id(),
                created_at: now_iso(),
                thread_id: self.id.to_string(),
                tool_calls: approvals,
            }));
        }
        env.journal
            .persist_all(events.iter().cloned().map(Into::into).collect())
            .await?;
        Ok(ThreadExit::NeedsUser(events))
    }
}
