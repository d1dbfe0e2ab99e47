//! Resuming a turn after its executor died: calls that were in flight are settled before the loop runs
//! again. A step's events and rows are committed together, so a call either has its result or none; a call
//! without a result that had started (it is in the thread's started list) is closed as interrupted, and a
//! call that never started runs normally. No call ever runs twice. An answer the crashed run was streaming
//! (its placeholder went out, its complete `model.message` was never stored) is closed under its id as
//! interrupted: `finish_reason: null`, which no finished answer has.

use std::collections::HashSet;

use trueforge_protocol::{ContextMessage, ModelMessageEvent, SessionEvent, ToolResponseEvent};
use trueforge_store::SessionStore;
use trueforge_store::session::model::{OpenMessage, PageRequest, SortOrder, TurnKey};

use crate::admission::unfinished_call_result;
use crate::bookkeeping::ThreadRecords;
use crate::context::{approval_decisions, awaits_user, open_calls};
use crate::error::AgentError;
use crate::ids::now_iso;
use crate::journal::Publish;
use crate::metrics::ThreadMetrics;
use crate::thread::{AgentThread, TurnEnv};

/// Closes the answers left open, settles the in-flight calls and returns what the turn had used before the
/// crash (token counts of its stored model messages, whose cost is unknown; each thread's model calls so
/// far also count against its iteration limit).
pub async fn reconcile_open_calls(
    env: &TurnEnv,
    threads: &mut [AgentThread],
    open_messages: Vec<OpenMessage>,
) -> Result<ThreadMetrics, AgentError> {
    let events = all_turn_events(env.journal.store.as_ref(), &env.journal.key).await?;
    close_interrupted_answers(env, &events, open_messages).await?;
    let mut used = ThreadMetrics::default();
    for item in &events {
        env.journal.tally(&item.event);
        if let SessionEvent::ModelMessage(message) = &item.event {
            if let Some(usage) = &message.usage {
                used.input_tokens += usage.input_tokens;
                used.output_tokens += usage.output_tokens;
                used.cache_read_tokens += usage.cache_read_tokens.unwrap_or(0);
                used.cache_write_tokens += usage.cache_write_tokens.unwrap_or(0);
                // A stored message carries no cost, so what the dead run spent is not known.
                used.cost_unknown |= usage.input_tokens + usage.output_tokens > 0;
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
                        thread_id: thread.id.to_string(),
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
        thread.commit(env, closing, rows, usage, None, None).await?;
    }
    Ok(used)
}

/// Stores and streams, for each answer whose placeholder went out but whose `model.message` is not among
/// `events`, that message with no content and `finish_reason: null`: a client that showed the partial
/// answer replaces it (the resumed run asks the model again), and a reader of the store sees it closed.
async fn close_interrupted_answers(
    env: &TurnEnv,
    events: &[trueforge_store::session::model::StoredEvent],
    open_messages: Vec<OpenMessage>,
) -> Result<(), AgentError> {
    if open_messages.is_empty() {
        return Ok(());
    }
    let stored: HashSet<&str> = events
        .iter()
        .filter_map(|item| match &item.event {
            SessionEvent::ModelMessage(message) => Some(message.id.as_str()),
            _ => None,
        })
        .collect();
    let closing: Vec<SessionEvent> = open_messages
        .into_iter()
        .filter(|open| !stored.contains(open.id.as_str()))
        .map(|open| {
            SessionEvent::from(ModelMessageEvent {
                content: Some(None),
                finish_reason: Some(None),
                ..ModelMessageEvent::placeholder(open.id, open.thread_id, open.created_at)
            })
        })
        .collect();
    env.journal.persist_all(closing).await
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
