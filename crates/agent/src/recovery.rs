//! Resuming a turn after its executor died: calls that were in flight are settled before the loop runs
//! again. A step's events and rows are committed together, so a call either has its result or none; a call
//! without a result that had started (it is in the thread's started list) is closed as interrupted, and a
//! call that never started runs normally. No call ever runs twice.

use trueforge_protocol::{ContextMessage, SessionEvent, ToolResponseEvent};
use trueforge_store::SessionStore;
use trueforge_store::session::model::{PageRequest, SortOrder, TurnKey};

use crate::admission::unfinished_call_result;
use crate::bookkeeping::ThreadRecords;
use crate::context::{approval_decisions, awaits_user, open_calls};
use crate::error::AgentError;
use crate::ids::now_iso;
use crate::journal::Publish;
use crate::metrics::ThreadMetrics;
use crate::thread::{AgentThread, TurnEnv};

/// Settles the in-flight calls and returns what the turn had used before the crash (token counts of its
/// stored model messages; each thread's model calls so far also count against its iteration limit).
pub async fn reconcile_open_calls(env: &TurnEnv, threads: &mut [AgentThread]) -> Result<ThreadMetrics, AgentError> {
    let events = all_turn_events(env.journal.store.as_ref(), &env.journal.key).await?;
    let mut used = ThreadMetrics::default();
    for item in &events {
        env.journal.tally(&item.event);
        if let SessionEvent::ModelMessage(message) = &item.event {
            if let Some(usage) = &message.usage {
                used.input_tokens += usage.input_tokens;
                used.output_tokens += usage.output_tokens;
                used.cache_read_tokens += usage.cache_read_tokens.unwrap_or(0);
                used.cache_write_tokens += usage.cache_write_tokens.unwrap_or(0);
            }
            if let Some(thread) = threads.iter_mut().find(|thread| thread.id == message.thread_id) {
                thread.metrics.iterations += 1;
            }
        }
    }
    for thread in threads.iter_mut() {
        let decisions = approval_decisions(&thread.context);
        let open = open_calls(&thread.context);
        if open.iter().any(|call| awaits_user(call, &decisions)) {
            continue;
        }
        let mut rows = Vec::new();
        let mut closing = Vec::new();
        let records = ThreadRecords::read(Some(&thread.capability_state));
        for call in open {
            if records.was_started(&call.id) && !call.is_thread_creation() {
                let content = unfinished_call_result(&records, &call.id);
                closing.push((
                    SessionEvent::ToolResponse(ToolResponseEvent {
                        id: env.journal.next_id(),
                        created_at: now_iso(),
                        thread_id: thread.id.clone(),
                        tool_call_id: call.id.clone(),
                        content: content.clone(),
                    }),
                    Publish::Stream,
                ));
                rows.push(ContextMessage::tool_result(call.id.clone(), content));
            }
        }
        if rows.is_empty() {
            continue;
        }
        let usage = thread.usage_with(&rows);
        thread.commit(env, closing, rows, usage, None).await?;
    }
    Ok(used)
}

/// Every event of a turn, oldest first: what the turn used and counted before the crash.
async fn all_turn_events(
    store: &dyn SessionStore,
    key: &TurnKey,
) -> Result<Vec<trueforge_store::session::model::StoredEvent>, AgentError> {
    let mut events = Vec::new();
    let mut page = PageRequest::first(trueforge_store::session::model::MAX_PAGE_LIMIT);
    loop {
        let batch = store.list_turn_events(key, SortOrder::Asc, &page).await?;
        events.extend(batch.data);
        match batch.next_page_token {
            Some(token) => page = PageRequest::after(trueforge_store::session::model::MAX_PAGE_LIMIT, token),
            None => return Ok(events),
        }
    }
}
