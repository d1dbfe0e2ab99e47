//! Segment chains: continuation, forks from any turn, compaction across turns, threads added and removed
//! mid-branch, deep chains, and the cost claim (a new turn never copies an inherited body).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use trueforge_protocol::{AgentParent, AgentThreadSnapshot};
use trueforge_store::StoreError;
use trueforge_store::session::{ContextAppend, TurnKey};

use super::fixtures::*;

const SUB: &str = "sub-agent";

/// Appends `texts` to `thread_id` of a running turn.
async fn append(store: &Store, turn_key: &TurnKey, thread_id: &str, texts: &[&str]) {
    store
        .append_to_thread_context(
            turn_key,
            &thread_id.into(),
            texts.iter().map(|text| user(text)).collect(),
            None,
            None,
        )
        .await
        .expect("append to thread context");
}

/// Replaces the context of `thread_id` (compaction).
async fn compact(store: &Store, turn_key: &TurnKey, thread_id: &str, texts: &[&str]) {
    store
        .overwrite_thread_context(
            turn_key,
            &thread_id.into(),
            Vec::new(),
            texts.iter().map(|text| user(text)).collect(),
            usage(1),
        )
        .await
        .expect("overwrite thread context");
}

async fn context_of(store: &Store, turn_key: &TurnKey, thread_id: &str) -> Vec<String> {
    let record = store.get_turn(turn_key).await.expect("get turn").expect("turn exists");
    texts(&record.snapshot.threads.get(thread_id).expect("thread exists").context)
}

/// Creates and finishes a continuation (or fork) of `previous` appending `texts` to `main`.
async fn finished(store: &Store, turn_id: &str, previous: Option<&str>, texts: &[&str]) -> TurnKey {
    finished_turn(store, with_messages(turn(turn_id, previous), MAIN, texts)).await
}

fn owned(texts: &[&str]) -> Vec<String> {
    texts.iter().map(std::string::ToString::to_string).collect()
}

pub async fn segments_continuation_inherits_whole_chain(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished(&store, "turn-1", None, &["a1", "a2"]).await;

    let turn_2 = key("turn-2");
    store
        .create_turn(with_messages(turn("turn-2", Some("turn-1")), MAIN, &["b1"]))
        .await
        .unwrap();
    append(&store, &turn_2, MAIN, &["b2"]).await;
    append(&store, &turn_2, MAIN, &["b3", "b4"]).await;
    finish(&store, &turn_2).await;

    finished(&store, "turn-3", Some("turn-2"), &["c1"]).await;

    let turn_4 = key("turn-4");
    store.create_turn(turn("turn-4", Some("turn-3"))).await.unwrap();
    append(&store, &turn_4, MAIN, &["d1"]).await;
    append(&store, &turn_4, MAIN, &["d2"]).await;

    assert_eq!(
        main_context(&store, &turn_4).await,
        owned(&["a1", "a2", "b1", "b2", "b3", "b4", "c1", "d1", "d2"]),
        "the last turn sees every message of the chain, in order"
    );
    // Every earlier turn still reads exactly the prefix it had when it ended.
    assert_eq!(main_context(&store, &key("turn-1")).await, owned(&["a1", "a2"]));
    assert_eq!(
        main_context(&store, &turn_2).await,
        owned(&["a1", "a2", "b1", "b2", "b3", "b4"])
    );
    assert_eq!(
        main_context(&store, &key("turn-3")).await,
        owned(&["a1", "a2", "b1", "b2", "b3", "b4", "c1"])
    );
}

pub async fn segments_fork_from_any_earlier_turn_sees_that_turns_context(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished(&store, "turn-1", None, &["a"]).await;
    finished(&store, "turn-2", Some("turn-1"), &["b"]).await;
    finished(&store, "turn-3", Some("turn-2"), &["c"]).await;
    finished(&store, "turn-4", Some("turn-3"), &["d"]).await;

    // Fork from the middle of the chain, not from the tip.
    let fork_2 = key("fork-of-2");
    store
        .create_turn(with_messages(turn("fork-of-2", Some("turn-2")), MAIN, &["f2-created"]))
        .await
        .unwrap();
    append(&store, &fork_2, MAIN, &["f2-appended"]).await;
    assert_eq!(
        main_context(&store, &fork_2).await,
        owned(&["a", "b", "f2-created", "f2-appended"])
    );

    // And from the root.
    let fork_1 = key("fork-of-1");
    store
        .create_turn(with_messages(turn("fork-of-1", Some("turn-1")), MAIN, &["f1"]))
        .await
        .unwrap();
    assert_eq!(main_context(&store, &fork_1).await, owned(&["a", "f1"]));

    // A fork of a fork.
    finish(&store, &fork_2).await;
    let fork_of_fork = key("fork-of-fork");
    store
        .create_turn(with_messages(turn("fork-of-fork", Some("fork-of-2")), MAIN, &["ff"]))
        .await
        .unwrap();
    assert_eq!(
        main_context(&store, &fork_of_fork).await,
        owned(&["a", "b", "f2-created", "f2-appended", "ff"])
    );

    // The original branch is untouched by the forks.
    assert_eq!(main_context(&store, &key("turn-4")).await, owned(&["a", "b", "c", "d"]));
    assert_eq!(main_context(&store, &key("turn-2")).await, owned(&["a", "b"]));
}

pub async fn segments_fork_before_overwrite_keeps_old_context(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished(&store, "turn-1", None, &["a", "b"]).await;
    let turn_2 = key("turn-2");
    store
        .create_turn(with_messages(turn("turn-2", Some("turn-1")), MAIN, &["c"]))
        .await
        .unwrap();
    compact(&store, &turn_2, MAIN, &["summary of a b c"]).await;
    finish(&store, &turn_2).await;

    // A fork from before the compaction sees the old, uncompacted context.
    let before = key("fork-before");
    store
        .create_turn(with_messages(turn("fork-before", Some("turn-1")), MAIN, &["x"]))
        .await
        .unwrap();
    assert_eq!(main_context(&store, &before).await, owned(&["a", "b", "x"]));

    // A continuation from after it sees only the compacted context.
    let after = key("continue-after");
    store
        .create_turn(with_messages(turn("continue-after", Some("turn-2")), MAIN, &["y"]))
        .await
        .unwrap();
    assert_eq!(main_context(&store, &after).await, owned(&["summary of a b c", "y"]));

    assert_eq!(
        main_context(&store, &key("turn-1")).await,
        owned(&["a", "b"]),
        "turn-1 is not compacted"
    );
    assert_eq!(main_context(&store, &turn_2).await, owned(&["summary of a b c"]));
}

pub async fn segments_overwrite_then_continuation_appends_after_compacted_context(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished(&store, "turn-1", None, &["a", "b", "c"]).await;
    let turn_2 = key("turn-2");
    store
        .create_turn(with_messages(turn("turn-2", Some("turn-1")), MAIN, &["d"]))
        .await
        .unwrap();
    compact(&store, &turn_2, MAIN, &["s1", "s2"]).await;
    append(&store, &turn_2, MAIN, &["after-compaction"]).await;
    assert_eq!(
        main_context(&store, &turn_2).await,
        owned(&["s1", "s2", "after-compaction"])
    );
    finish(&store, &turn_2).await;

    let turn_3 = key("turn-3");
    store
        .create_turn(with_messages(turn("turn-3", Some("turn-2")), MAIN, &["e"]))
        .await
        .unwrap();
    append(&store, &turn_3, MAIN, &["f"]).await;
    assert_eq!(
        main_context(&store, &turn_3).await,
        owned(&["s1", "s2", "after-compaction", "e", "f"])
    );

    // A second compaction in turn 3, then turn 4: only the newest compacted context plus what follows.
    compact(&store, &turn_3, MAIN, &["t"]).await;
    finish(&store, &turn_3).await;
    let turn_4 = key("turn-4");
    store
        .create_turn(with_messages(turn("turn-4", Some("turn-3")), MAIN, &["g"]))
        .await
        .unwrap();
    assert_eq!(main_context(&store, &turn_4).await, owned(&["t", "g"]));
}

pub async fn segments_concurrent_forks_from_one_turn_are_isolated(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished(&store, "turn-1", None, &["base-1", "base-2"]).await;

    let forks = (0..6).map(|index| {
        let store = store.clone();
        async move {
            let turn_id = format!("fork-{index}");
            let created = format!("created-{index}");
            store
                .create_turn(with_messages(turn(&turn_id, Some("turn-1")), MAIN, &[created.as_str()]))
                .await
                .expect("create fork");
            let turn_key = key(&turn_id);
            for step in 0..3 {
                append(&store, &turn_key, MAIN, &[format!("fork-{index}-step-{step}").as_str()]).await;
            }
            turn_key
        }
    });
    let keys = futures::future::join_all(forks).await;

    for (index, turn_key) in keys.iter().enumerate() {
        let mut expected = owned(&["base-1", "base-2"]);
        expected.push(format!("created-{index}"));
        expected.extend((0..3).map(|step| format!("fork-{index}-step-{step}")));
        assert_eq!(
            main_context(&store, turn_key).await,
            expected,
            "fork {index} sees only its own appends"
        );
    }
    assert_eq!(main_context(&store, &key("turn-1")).await, owned(&["base-1", "base-2"]));
}

pub async fn segments_sub_agent_thread_added_mid_turn_carries_into_next_turn(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_1 = key("turn-1");
    store
        .create_turn(with_messages(turn("turn-1", None), MAIN, &["m1"]))
        .await
        .unwrap();
    let parent = AgentParent {
        thread_id: MAIN.into(),
        tool_call_id: "call-1".into(),
    };
    let snapshot = AgentThreadSnapshot {
        context: vec![user("task"), user("detail")],
        current_context_usage: usage(12),
        parent: Some(parent.clone()),
        ..AgentThreadSnapshot::empty(SUB)
    };
    store.add_threads(&turn_1, vec![snapshot]).await.unwrap();
    append(&store, &turn_1, SUB, &["progress"]).await;
    append(&store, &turn_1, MAIN, &["m2"]).await;
    finish(&store, &turn_1).await;

    let mut next = with_messages(turn("turn-2", Some("turn-1")), SUB, &["resumed"]);
    next.capability_states.push((SUB.into(), None));
    store.create_turn(next).await.unwrap();
    let turn_2 = key("turn-2");
    append(&store, &turn_2, SUB, &["more"]).await;

    let record = store.get_turn(&turn_2).await.unwrap().unwrap();
    let sub = &record.snapshot.threads[SUB];
    assert_eq!(
        texts(&sub.context),
        owned(&["task", "detail", "progress", "resumed", "more"])
    );
    assert_eq!(
        sub.parent.as_ref(),
        Some(&parent),
        "the sub-agent keeps its parent link"
    );
    assert_eq!(sub.current_context_usage.prompt_tokens, 12, "usage carries forward");
    assert_eq!(texts(&record.snapshot.threads[MAIN].context), owned(&["m1", "m2"]));

    // Turn 1 still reads its own sub-agent context only.
    assert_eq!(
        context_of(&store, &turn_1, SUB).await,
        owned(&["task", "detail", "progress"])
    );
}

pub async fn segments_removed_thread_does_not_carry(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_1 = key("turn-1");
    store.create_turn(turn("turn-1", None)).await.unwrap();
    store
        .add_threads(
            &turn_1,
            vec![AgentThreadSnapshot {
                context: vec![user("s")],
                ..AgentThreadSnapshot::empty(SUB)
            }],
        )
        .await
        .unwrap();
    finish(&store, &turn_1).await;

    let mut second = turn("turn-2", Some("turn-1"));
    second.capability_states.push((SUB.into(), None));
    store.create_turn(second).await.unwrap();
    let turn_2 = key("turn-2");
    assert_eq!(context_of(&store, &turn_2, SUB).await, owned(&["s"]));
    store.remove_threads(&turn_2, &[SUB.to_string().into()]).await.unwrap();
    finish(&store, &turn_2).await;

    // The continuation of turn 2 has no sub-agent thread, and naming it is an error.
    let mut naming_removed = turn("turn-3", Some("turn-2"));
    naming_removed.capability_states.push((SUB.into(), None));
    let error = store.create_turn(naming_removed).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
    let mut appending_removed = turn("turn-3", Some("turn-2"));
    appending_removed.context_appends.push(ContextAppend {
        thread_id: SUB.into(),
        messages: vec![user("ghost")],
        current_context_usage: None,
    });
    let error = store.create_turn(appending_removed).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");

    store.create_turn(turn("turn-3", Some("turn-2"))).await.unwrap();
    let threads: Vec<ThreadId> = store
        .get_turn(&key("turn-3"))
        .await
        .unwrap()
        .unwrap()
        .snapshot
        .threads
        .keys()
        .cloned()
        .collect();
    assert_eq!(threads, [ThreadId::from(MAIN)]);

    // Removal is local to turn 2: turn 1 and a fork of it still have the thread.
    assert_eq!(context_of(&store, &turn_1, SUB).await, owned(&["s"]));
    store
        .update_turn_state(&key("turn-3"), done_state(), done_marker())
        .await
        .unwrap();
    let mut fork = turn("fork-of-1", Some("turn-1"));
    fork.capability_states.push((SUB.into(), None));
    store.create_turn(fork).await.unwrap();
    assert_eq!(context_of(&store, &key("fork-of-1"), SUB).await, owned(&["s"]));
}

pub async fn segments_deep_chain_reads_back_in_order(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    const DEPTH: usize = 60;
    let mut previous: Option<String> = None;
    for index in 0..DEPTH {
        let turn_id = format!("turn-{index:03}");
        let text = format!("message-{index:03}");
        finished(&store, &turn_id, previous.as_deref(), &[text.as_str()]).await;
        previous = Some(turn_id);
    }
    let tip = key("turn-059");
    let expected: Vec<String> = (0..DEPTH).map(|index| format!("message-{index:03}")).collect();
    assert_eq!(main_context(&store, &tip).await, expected);
    let record = store.get_turn(&tip).await.unwrap().unwrap();
    assert_eq!(record.turn.first_turn_id, "turn-000");
    assert_eq!(
        record.turn.previous_turn_id.as_ref().map(TurnId::as_str),
        Some("turn-058")
    );

    // A turn from the middle of the chain reads its own prefix.
    let middle = main_context(&store, &key("turn-029")).await;
    assert_eq!(middle, expected[..30].to_vec());

    // History along the deep branch: every body once, in write order.
    let history = store.thread_history(&tip, &MAIN.into()).await.unwrap();
    assert_eq!(
        history
            .iter()
            .map(|entry| entry.message.search_text())
            .collect::<Vec<_>>(),
        expected
    );
    assert!(history.iter().all(|entry| entry.active));
}

pub async fn segments_continuation_copies_no_bodies(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    const TURNS: usize = 20;
    let mut previous: Option<String> = None;
    for index in 0..TURNS {
        let turn_id = format!("turn-{index:02}");
        let texts_owned: Vec<String> = (0..3).map(|n| format!("t{index:02}-m{n}")).collect();
        let texts_ref: Vec<&str> = texts_owned.iter().map(String::as_str).collect();
        finished(&store, &turn_id, previous.as_deref(), &texts_ref).await;
        previous = Some(turn_id);
    }
    let last = key("turn-19");
    let history = store.thread_history(&last, &MAIN.into()).await.unwrap();
    assert_eq!(history.len(), TURNS * 3, "each body appears once along the branch");
    let ids: BTreeSet<i64> = history.iter().map(|entry| entry.message_id).collect();
    assert_eq!(ids.len(), history.len(), "message ids are unique: no body was copied");
    for entry in &history {
        let text = entry.message.search_text();
        assert_eq!(
            &entry.turn_id.as_str()[5..],
            &text[1..3],
            "{text} is attributed to the turn that wrote it"
        );
        assert!(entry.active);
    }

    // A continuation without appends writes no body: its history has exactly the same ids.
    store.create_turn(turn("turn-20", Some("turn-19"))).await.unwrap();
    let continued = store.thread_history(&key("turn-20"), &MAIN.into()).await.unwrap();
    assert_eq!(
        continued, history,
        "the continuation reuses the inherited bodies as they are"
    );

    // A continuation with one append adds exactly one body, after all the others.
    finish(&store, &key("turn-20")).await;
    store
        .create_turn(with_messages(turn("turn-21", Some("turn-20")), MAIN, &["fresh"]))
        .await
        .unwrap();
    let extended = store.thread_history(&key("turn-21"), &MAIN.into()).await.unwrap();
    assert_eq!(extended.len(), history.len() + 1);
    assert_eq!(extended[..history.len()], history[..]);
    let fresh = extended.last().unwrap();
    assert_eq!(fresh.message.search_text(), "fresh");
    assert_eq!(fresh.turn_id, "turn-21");
    assert!(fresh.message_id > *ids.iter().next_back().unwrap());

    // A fork from the middle reuses the same bodies for its prefix.
    store.create_turn(turn("fork", Some("turn-09"))).await.unwrap();
    let fork_ids: Vec<i64> = store
        .thread_history(&key("fork"), &MAIN.into())
        .await
        .unwrap()
        .iter()
        .map(|e| e.message_id)
        .collect();
    let prefix_ids: Vec<i64> = history[..30].iter().map(|entry| entry.message_id).collect();
    assert_eq!(fork_ids, prefix_ids);
}

pub async fn segments_create_turn_appends_apply_in_order(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished(&store, "turn-1", None, &["a"]).await;
    let turn_1_usage =
        store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads[MAIN].current_context_usage;

    // Two appends to one thread: both land in order; the usage of the first one that carries a usage is
    // the one stored, since the later append carries none ("a usage replaces the stored one").
    let mut next = turn("turn-2", Some("turn-1"));
    next.context_appends.push(ContextAppend {
        thread_id: MAIN.into(),
        messages: vec![user("b"), user("c")],
        current_context_usage: Some(usage(100)),
    });
    next.context_appends.push(ContextAppend {
        thread_id: MAIN.into(),
        messages: vec![user("d")],
        current_context_usage: None,
    });
    store.create_turn(next).await.unwrap();
    let record = store.get_turn(&key("turn-2")).await.unwrap().unwrap();
    let main = &record.snapshot.threads[MAIN];
    assert_eq!(texts(&main.context), owned(&["a", "b", "c", "d"]));
    assert_ne!(turn_1_usage, usage(100));
    assert_eq!(
        main.current_context_usage,
        usage(100),
        "an append without usage keeps the earlier append's usage"
    );
}

pub async fn segments_large_appends_cross_insert_chunks(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let first: Vec<String> = (0..1_200).map(|index| format!("first-{index}")).collect();
    let first_ref: Vec<&str> = first.iter().map(String::as_str).collect();
    finished(&store, "turn-1", None, &first_ref).await;
    let turn_2 = key("turn-2");
    store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap();
    let second: Vec<String> = (0..1_100).map(|index| format!("second-{index}")).collect();
    let second_ref: Vec<&str> = second.iter().map(String::as_str).collect();
    append(&store, &turn_2, MAIN, &second_ref).await;
    let expected: Vec<String> = first.iter().chain(second.iter()).cloned().collect();
    assert_eq!(
        main_context(&store, &turn_2).await,
        expected,
        "one large append per turn, read back in order"
    );
    let history = store.thread_history(&turn_2, &MAIN.into()).await.unwrap();
    let positions: Vec<i64> = history.iter().map(|entry| entry.position).collect();
    assert_eq!(
        positions,
        (0..2_300).collect::<Vec<i64>>(),
        "positions stay dense across insert chunks"
    );
    compact(&store, &turn_2, MAIN, &second_ref).await;
    assert_eq!(main_context(&store, &turn_2).await, second);
}

contract_group!(
    segments_continuation_inherits_whole_chain,
    segments_fork_from_any_earlier_turn_sees_that_turns_context,
    segments_fork_before_overwrite_keeps_old_context,
    segments_overwrite_then_continuation_appends_after_compacted_context,
    segments_concurrent_forks_from_one_turn_are_isolated,
    segments_sub_agent_thread_added_mid_turn_carries_into_next_turn,
    segments_removed_thread_does_not_carry,
    segments_deep_chain_reads_back_in_order,
    segments_continuation_copies_no_bodies,
    segments_create_turn_appends_apply_in_order,
    segments_large_appends_cross_insert_chunks,
);
