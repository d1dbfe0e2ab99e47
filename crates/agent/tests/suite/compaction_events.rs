//! The `context.compacted` event: one per compaction, with what a client needs to show it (the method, the
//! summary, how much was replaced, the size before and after), placed after the messages it compacted and
//! before the next model call's answer, on the live stream and in the store alike, for the root thread and
//! for sub-agents. Stored with the new context, it survives a crash: a resumed turn counts it in its
//! metrics and does not compact again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::support::crash::CrashingStore;
use crate::support::fixtures::{
    AsyncModel, all_text, answer_text, is_child, is_summary, metrics, session_events, steps_since_user, stored,
    threads_created, threads_done, unsummarisable_reader, with_usage,
};
use crate::support::model::{calls, text};
use crate::support::{Harness, spec, user};
use trueforge_agent::capabilities::{CONTINUATION_NOTE, internal};
use trueforge_agent::{PreviousTurn, RuntimeOptions, StreamItem};
use trueforge_protocol::{
    AgentSpec, CompactionMethod, ContextCompactedEvent, ContextMessage, SessionEvent, TurnStreamingEvent,
};
use trueforge_store::session::{PageRequest, SortOrder, TurnKey};

const THRESHOLD: u64 = 1_000;
const SUMMARY: &str = "Summary: the user asked to read a big output; it was read.";

fn compacting_spec() -> AgentSpec {
    let mut spec = spec();
    spec.config.context_management.compaction.compaction_threshold_tokens = Some(THRESHOLD);
    spec
}

fn compactions(events: &[SessionEvent]) -> Vec<ContextCompactedEvent> {
    events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::ContextCompacted(compacted) => Some(compacted.clone()),
            _ => None,
        })
        .collect()
}

fn position(events: &[SessionEvent], pick: impl Fn(&SessionEvent) -> bool) -> usize {
    events
        .iter()
        .position(pick)
        .unwrap_or_else(|| panic!("not found in {:?}", types(events)))
}

fn types(events: &[SessionEvent]) -> Vec<&str> {
    events.iter().map(SessionEvent::event_type).collect()
}

fn is_compaction(event: &SessionEvent) -> bool {
    matches!(event, SessionEvent::ContextCompacted(_))
}

fn is_response_to(call_id: &str) -> impl Fn(&SessionEvent) -> bool + '_ {
    move |event| matches!(event, SessionEvent::ToolResponse(response) if response.tool_call_id == call_id)
}

/// The id of the stored answer (`model.message`) of `thread_id` whose text is `content`.
fn answer_id(stored: &[SessionEvent], thread_id: &str, content: &str) -> String {
    stored
        .iter()
        .find_map(|event| match event {
            SessionEvent::ModelMessage(message)
                if message.thread_id == thread_id && serde_json::to_value(message).unwrap()["content"] == content =>
            {
                Some(message.id.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no answer {content:?} in {:?}", types(stored)))
}

/// The message with this id: live its placeholder (the deltas follow it), stored the complete message.
fn is_message(id: &str) -> impl Fn(&SessionEvent) -> bool + '_ {
    move |event| matches!(event, SessionEvent::ModelMessage(message) if message.id == id)
}

/// The compaction as streamed, with its sequence number; checks the store holds it under the same number.
async fn streamed_and_stored(harness: &Harness, key: &TurnKey, items: &[StreamItem]) -> ContextCompactedEvent {
    let streamed: Vec<(u64, &ContextCompactedEvent)> = items
        .iter()
        .filter_map(|item| match &item.event {
            TurnStreamingEvent::Event(SessionEvent::ContextCompacted(compacted)) => Some((item.seq, compacted)),
            _ => None,
        })
        .collect();
    assert_eq!(streamed.len(), 1, "one event per compaction");
    let (seq, compacted) = streamed[0];
    let stored: Vec<_> = harness
        .stored_events(key)
        .await
        .into_iter()
        .filter(|item| is_compaction(&item.event))
        .collect();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].seq, seq, "stored under the number it streamed with");
    assert_eq!(stored[0].event, SessionEvent::ContextCompacted(compacted.clone()));
    compacted.clone()
}

/// Reads a big output, is compacted by a summary, then answers from the summary.
fn summarising_model() -> Arc<AsyncModel> {
    AsyncModel::scripted(|request| {
        if is_summary(request) {
            return text(SUMMARY);
        }
        if all_text(request).contains("condensed to save space") {
            return text("Carrying on.");
        }
        calls(&[("call_big", "big", r#"{"chars": 4000}"#)])
    })
}

#[tokio::test]
async fn a_summary_is_recorded_between_the_messages_it_replaced_and_the_next_answer() {
    let harness = Harness::new(summarising_model(), compacting_spec()).await;
    let (items, state, key) = harness.turn(vec![user("read it")]).await;
    assert_eq!(answer_text(&state), "Carrying on.");
    assert_eq!(metrics(&state).total_summarizations, Some(1));

    let compacted = streamed_and_stored(&harness, &key, &items).await;
    let summary_tokens =
        (SUMMARY.chars().count() as u64).div_ceil(4) + (internal(CONTINUATION_NOTE).chars().count() as u64).div_ceil(4);
    assert_eq!(
        compacted,
        ContextCompactedEvent {
            thread_id: "main".to_owned(),
            method: CompactionMethod::Summary,
            summary: Some(SUMMARY.to_owned()),
            // The user's message, the answer with the call, and the call's result.
            replaced_messages: 3,
            tokens_after: summary_tokens,
            ..compacted.clone()
        }
    );
    assert!(compacted.tokens_before >= THRESHOLD, "{compacted:?}");
    // The summary is the one the agent works from.
    assert_eq!(
        harness.main_context(&key).await[0],
        ContextMessage::assistant_text(SUMMARY)
    );

    let answer = answer_id(&stored(&harness, &key).await, "main", "Carrying on.");
    for events in [session_events(&items), stored(&harness, &key).await] {
        let at = position(&events, is_compaction);
        assert!(
            position(&events, is_response_to("call_big")) < at,
            "{:?}",
            types(&events)
        );
        assert!(at < position(&events, is_message(&answer)), "{:?}", types(&events));
    }
    // Live, right before the placeholder that opens the answer.
    let live = session_events(&items);
    assert_eq!(
        position(&live, is_compaction) + 1,
        position(&live, is_message(&answer)),
        "{:?}",
        types(&live)
    );
}

#[tokio::test]
async fn the_truncation_fallback_is_recorded_without_a_summary() {
    let model = unsummarisable_reader();
    let harness = Harness::new(model, compacting_spec()).await;
    let (items, state, key) = harness.turn(vec![user("read three things")]).await;
    assert_eq!(answer_text(&state), "Done reading.");

    let compacted = streamed_and_stored(&harness, &key, &items).await;
    assert_eq!(compacted.thread_id, "main");
    assert_eq!(compacted.method, CompactionMethod::Truncation);
    assert_eq!(compacted.summary, None);
    assert_eq!(
        compacted.replaced_messages, 1,
        "only call_1's output is cut: the two most recent stay"
    );
    assert!(
        compacted.tokens_after < compacted.tokens_before && compacted.tokens_before >= THRESHOLD,
        "{compacted:?}"
    );
    let json = serde_json::to_value(SessionEvent::ContextCompacted(compacted)).unwrap();
    assert!(json.get("summary").is_none(), "{json}");

    let answer = answer_id(&stored(&harness, &key).await, "main", "Done reading.");
    for events in [session_events(&items), stored(&harness, &key).await] {
        let at = position(&events, is_compaction);
        assert!(position(&events, is_response_to("call_3")) < at, "{:?}", types(&events));
        assert!(at < position(&events, is_message(&answer)), "{:?}", types(&events));
    }
}

#[tokio::test]
async fn a_sub_agent_compaction_names_its_thread_and_comes_before_its_end() {
    let model = AsyncModel::scripted(|request| {
        if is_summary(request) {
            return text("Summary: echoed x twice.");
        }
        if is_child(request) {
            if all_text(request).contains("condensed to save space") {
                return with_usage(text("Echoed x twice."), 10, 5);
            }
            // Each step reports a context over the threshold; from its third call the child's context
            // holds more than a summary would, so it is compacted.
            let id = format!("child_{}", steps_since_user(request));
            return with_usage(calls(&[(id.as_str(), "echo", r#"{"text": "x"}"#)]), 5_000, 10);
        }
        match steps_since_user(request) {
            0 => with_usage(
                calls(&[(
                    "call_sub",
                    "create_sub_agent",
                    r#"{"name": "Helper", "input": "Echo x twice."}"#,
                )]),
                10,
                5,
            ),
            _ => with_usage(text("The helper echoed x twice."), 10, 5),
        }
    });
    let harness = Harness::new(model, compacting_spec()).await;
    let (items, state, key) = harness.turn(vec![user("delegate")]).await;
    assert_eq!(answer_text(&state), "The helper echoed x twice.");

    let compacted = streamed_and_stored(&harness, &key, &items).await;
    let live = session_events(&items);
    let child = threads_created(&live)[0].thread_id.clone();
    assert_eq!(compacted.thread_id, child);
    assert_eq!(compacted.method, CompactionMethod::Summary);
    assert_eq!(compacted.summary.as_deref(), Some("Summary: echoed x twice."));
    assert_eq!(compacted.replaced_messages, 4, "two calls and their results");
    assert_eq!(
        compactions(&stored(&harness, &key).await).len(),
        1,
        "the root never compacted"
    );

    let answer = answer_id(&stored(&harness, &key).await, &child, "Echoed x twice.");
    for events in [live, stored(&harness, &key).await] {
        let at = position(&events, is_compaction);
        assert!(
            position(&events, is_response_to("child_1")) < at,
            "{:?}",
            types(&events)
        );
        assert!(at < position(&events, is_message(&answer)), "{:?}", types(&events));
        let done = position(
            &events,
            |event| matches!(event, SessionEvent::ThreadDone(done) if done.thread_id == child),
        );
        assert!(at < done, "{:?}", types(&events));
        assert!(!threads_done(&events).is_empty());
    }
}

#[tokio::test]
async fn no_event_without_a_compaction() {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => calls(&[("call_big", "big", r#"{"chars": 400}"#)]),
        _ => text("Read it."),
    });
    let harness = Harness::new(model, compacting_spec()).await;
    let (items, state, key) = harness.turn(vec![user("read it")]).await;
    assert_eq!(answer_text(&state), "Read it.");
    assert!(compactions(&session_events(&items)).is_empty());
    assert!(compactions(&stored(&harness, &key).await).is_empty());
}

#[tokio::test]
async fn a_turn_resumed_after_its_compaction_counts_it_and_does_not_compact_again() {
    let dir = tempfile::tempdir().unwrap();
    let inner = crate::support::fresh_store(dir.path()).await;
    let model = summarising_model();
    // Three commits: the answer with the call, its result, the compaction; then the process "dies".
    let crashing = Arc::new(CrashingStore::new(inner.clone(), 3));
    let first = Harness::on_store(
        crashing,
        model.clone(),
        compacting_spec(),
        RuntimeOptions::default(),
        None,
        dir,
    )
    .await;
    let started = first
        .runtime
        .create_turn(first.request(vec![user("read it")], PreviousTurn::Auto))
        .await
        .unwrap();
    let key = started.key.clone();
    let (_, state) = started.collect().await;
    assert_eq!(state, None, "the crashed run does not end the turn");
    let before: Vec<SessionEvent> = inner
        .list_turn_events(&key, SortOrder::Asc, &PageRequest::first(100))
        .await
        .unwrap()
        .data
        .into_iter()
        .map(|item| item.event)
        .collect();
    assert_eq!(compactions(&before).len(), 1, "{:?}", types(&before));
    assert!(!before.iter().any(|event| matches!(event, SessionEvent::TurnDone(_))));

    let second = Harness::on_store(
        inner.clone(),
        model.clone(),
        compacting_spec(),
        RuntimeOptions::default(),
        None,
        tempfile::tempdir().unwrap(),
    )
    .await;
    let (_, state) = second.runtime.resume_turn(&key).await.unwrap().collect().await;
    let state = state.expect("the resumed run ends the turn");
    assert_eq!(answer_text(&state), "Carrying on.");
    assert_eq!(
        metrics(&state).total_summarizations,
        Some(1),
        "counted from the stored event"
    );
    let summaries = model.requests().iter().filter(|request| is_summary(request)).count();
    assert_eq!(summaries, 1, "the resumed run works from the stored summary");
    assert_eq!(compactions(&stored(&second, &key).await).len(), 1);
}
