//! SQLite's recall index written in batches (migration 11): what the contract cases of `recall` cannot
//! see through the store's API. Rows wait above the mark until their turn ends or the tail passes its bound,
//! and deleting rows, indexed or not, leaves the FTS5 index consistent with its content table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use trueforge_protocol::{CancellationReason, ContextMessage};
use trueforge_store::session::{FreezeTurn, SessionStore, SqliteSessionStore, ThreadStep, TurnDone, TurnKey};

use crate::common;
use crate::suite::session_contract::fixtures::*;

/// The most rows migration 11 leaves above the mark.
const TAIL_BOUND: i64 = 512;

/// Rows above the mark (written since the last batch).
pub fn unindexed(path: &Path) -> i64 {
    common::raw_sqlite(path)
        .query_row(
            "SELECT count(*) FROM context_message \
             WHERE message_id > (SELECT indexed_through FROM context_message_fts_mark)",
            [],
            |row| row.get(0),
        )
        .unwrap()
}

/// How many rows the index itself holds with `word` (not the content table: FTS5's vocabulary).
pub fn indexed_with(path: &Path, word: &str) -> i64 {
    let conn = common::raw_sqlite(path);
    conn.execute_batch("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, context_message_fts, row)")
        .unwrap();
    conn.query_row(
        "SELECT COALESCE(SUM(doc), 0) FROM temp.vocab WHERE term = ?1",
        [word],
        |row| row.get(0),
    )
    .unwrap()
}

/// FTS5's own check that the index holds exactly the content table's rows (it fails while a tail is
/// unindexed, so it is asked after a batch).
pub fn check_index(path: &Path) {
    common::raw_sqlite(path)
        .execute(
            "INSERT INTO context_message_fts (context_message_fts, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .expect("the index matches its content");
}

fn step(texts: &[String]) -> ThreadStep {
    ThreadStep {
        thread_id: MAIN.into(),
        events: Vec::new(),
        messages: texts.iter().map(ContextMessage::user_text).collect(),
        usage: None,
        completion: None,
        state_patch: None,
    }
}

fn freeze() -> FreezeTurn {
    FreezeTurn {
        reason: CancellationReason::ClientCancelled,
        metrics: None,
        done: TurnDone {
            event_id: event_id(),
            min_seq: 0,
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_are_indexed_when_their_turn_ends() {
    let temp = common::sqlite_db().await;
    let store = SqliteSessionStore::new(temp.db.clone());
    store.create_session(new_session(TENANT, SESSION)).await.unwrap();
    let turn_1 = key("turn-1");
    store
        .create_turn(with_messages(turn("turn-1", None), MAIN, &["zebra one"]))
        .await
        .unwrap();
    store
        .commit_thread_step(&turn_1, step(&["zebra two".to_owned(), "pelican".to_owned()]))
        .await
        .unwrap();
    assert_eq!(unindexed(&temp.path), 3, "a step's commit writes no index");
    assert_eq!(indexed_with(&temp.path, "zebra"), 0);
    let found = store
        .search_thread_history(&turn_1, &MAIN.into(), "zebra", 10)
        .await
        .unwrap();
    assert_eq!(found.len(), 2, "found from the tail");

    store
        .update_turn_state(&turn_1, done_state(), done_marker())
        .await
        .unwrap();
    assert_eq!(unindexed(&temp.path), 0, "the turn's end indexed its rows");
    assert_eq!(indexed_with(&temp.path, "zebra"), 2);
    check_index(&temp.path);
    let found = store
        .search_thread_history(&turn_1, &MAIN.into(), "zebra", 10)
        .await
        .unwrap();
    assert_eq!(found.len(), 2, "found through the index");

    // The freeze of a cancel ends a turn too.
    let turn_2 = key("turn-2");
    store
        .create_turn(with_messages(turn("turn-2", Some("turn-1")), MAIN, &["zebra three"]))
        .await
        .unwrap();
    assert_eq!(unindexed(&temp.path), 1);
    store.freeze_and_get_turn(&turn_2, freeze()).await.unwrap();
    assert_eq!(unindexed(&temp.path), 0);
    assert_eq!(indexed_with(&temp.path, "zebra"), 3);
    check_index(&temp.path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_leaves_at_most_the_bound_unindexed() {
    let temp = common::sqlite_db().await;
    let store = SqliteSessionStore::new(temp.db.clone());
    store.create_session(new_session(TENANT, SESSION)).await.unwrap();
    let turn_1 = key("turn-1");
    store.create_turn(turn("turn-1", None)).await.unwrap();
    let mut written = 0;
    let mut batches = 0;
    let mut previous = 0;
    for _ in 0..30 {
        let texts: Vec<String> = (written..written + 45).map(|index| format!("row {index}")).collect();
        written += 45;
        store.commit_thread_step(&turn_1, step(&texts)).await.unwrap();
        let tail = unindexed(&temp.path);
        assert!(tail <= TAIL_BOUND, "{tail} rows unindexed");
        if tail < previous {
            batches += 1;
        }
        previous = tail;
    }
    assert_eq!(written, 1350);
    assert_eq!(batches, 2, "one batch per {TAIL_BOUND} rows, none per step");
    assert_eq!(indexed_with(&temp.path, "row"), 1350 - previous);
    for query in ["row", "0 row", "1349 row"] {
        let found = store
            .search_thread_history(&turn_1, &MAIN.into(), query, 1000)
            .await
            .unwrap();
        let expected = if query == "row" { 1000 } else { 1 };
        assert_eq!(found.len(), expected, "{query}");
    }
    store
        .update_turn_state(&turn_1, done_state(), done_marker())
        .await
        .unwrap();
    assert_eq!(unindexed(&temp.path), 0);
    check_index(&temp.path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_indexed_and_unindexed_rows_keeps_the_index_whole() {
    let temp = common::sqlite_db().await;
    let store = SqliteSessionStore::new(temp.db.clone());
    for session in ["gone", "kept"] {
        store.create_session(new_session(TENANT, session)).await.unwrap();
        let ended = TurnKey::new(TENANT, session, "turn-1");
        store
            .create_turn(with_messages(
                turn_in(TENANT, session, "turn-1", None),
                MAIN,
                &[format!("ghost {session} ended").as_str()],
            ))
            .await
            .unwrap();
        store
            .update_turn_state(&ended, done_state(), done_marker())
            .await
            .unwrap();
        store
            .create_turn(with_messages(
                turn_in(TENANT, session, "turn-2", Some("turn-1")),
                MAIN,
                &[format!("ghost {session} running").as_str()],
            ))
            .await
            .unwrap();
    }
    // The end of `kept`'s first turn indexed every row written before it, `gone`'s running turn's too.
    assert_eq!(indexed_with(&temp.path, "ghost"), 3);
    assert_eq!(unindexed(&temp.path), 1);
    store
        .commit_thread_step(
            &TurnKey::new(TENANT, "gone", "turn-2"),
            step(&["ghost gone step".to_owned()]),
        )
        .await
        .unwrap();
    assert_eq!(unindexed(&temp.path), 2);

    store.delete_session(&TENANT.into(), &"gone".into()).await.unwrap();
    assert_eq!(indexed_with(&temp.path, "gone"), 0, "the indexed rows left the index");
    assert_eq!(unindexed(&temp.path), 1, "the unindexed row just went");
    store
        .update_turn_state(&TurnKey::new(TENANT, "kept", "turn-2"), done_state(), done_marker())
        .await
        .unwrap();
    check_index(&temp.path);
    assert_eq!(indexed_with(&temp.path, "ghost"), 2);
    assert_eq!(indexed_with(&temp.path, "gone"), 0);
    assert_eq!(indexed_with(&temp.path, "kept"), 2);

    // The newest rows deleted before any batch: the mark stays where it was and the next rows are found.
    store.create_session(new_session(TENANT, "late")).await.unwrap();
    store
        .create_turn(with_messages(
            turn_in(TENANT, "late", "turn-1", None),
            MAIN,
            &["ghost late"],
        ))
        .await
        .unwrap();
    store.delete_session(&TENANT.into(), &"late".into()).await.unwrap();
    let kept_3 = TurnKey::new(TENANT, "kept", "turn-3");
    store
        .create_turn(with_messages(
            turn_in(TENANT, "kept", "turn-3", Some("turn-2")),
            MAIN,
            &["ghost kept again"],
        ))
        .await
        .unwrap();
    let found = store
        .search_thread_history(&kept_3, &MAIN.into(), "ghost", 10)
        .await
        .unwrap();
    assert_eq!(found.len(), 3);
    store
        .update_turn_state(&kept_3, done_state(), done_marker())
        .await
        .unwrap();
    check_index(&temp.path);
    assert_eq!(indexed_with(&temp.path, "late"), 0);
    assert_eq!(indexed_with(&temp.path, "ghost"), 3);
}

/// Words that the tokenisation treats in every way it can: case (ASCII and not), letters whose lowercase
/// grows or turns ASCII (`İ`, the Kelvin sign), combining marks inside and outside words, numeric symbols,
/// scripts without case, and separators that are ASCII punctuation, underscores or spaces.
const WORDS: [&str; 24] = [
    "cat",
    "Cat",
    "CAT",
    "cats",
    "concat",
    "İstanbul",
    "istanbul",
    "\u{212a}elvin",
    "kelvin",
    "straße",
    "STRASSE",
    "h₂o",
    "x²",
    "½",
    "كَتَبَ",
    "हिन्दी",
    "東京",
    "a_b",
    "don't",
    "e\u{301}te",
    "ǅemal",
    "Σίσυφος",
    "10",
    "x",
];
const SEPARATORS: [&str; 6] = [" ", ", ", "-", ".\n", "_", "  "];

/// A small deterministic generator (the tests must not depend on a random seed to reproduce).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(self.0 >> 33).unwrap() % bound
    }

    fn text(&mut self, words: usize) -> String {
        let mut text = String::new();
        for index in 0..words {
            if index > 0 {
                text.push_str(SEPARATORS[self.below(SEPARATORS.len())]);
            }
            text.push_str(WORDS[self.below(WORDS.len())]);
        }
        text
    }
}

/// Recall over the unindexed tail answers exactly what recall through the index answers, and what the
/// memory backend answers, for the same rows and queries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tail_matches_exactly_what_the_index_matches() {
    let temp = common::sqlite_db().await;
    let sqlite = SqliteSessionStore::new(temp.db.clone());
    let memory = trueforge_store::session::MemorySessionStore::new();
    let mut generator = Lcg(7);
    let texts: Vec<String> = (0..150).map(|index| generator.text(1 + index % 5)).collect();
    let queries: Vec<String> = (0..120).map(|index| generator.text(1 + index % 3)).collect();
    let turn_1 = key("turn-1");
    let stores: [&dyn SessionStore; 2] = [&sqlite, &memory];
    for store in stores {
        store.create_session(new_session(TENANT, SESSION)).await.unwrap();
        store.create_turn(turn("turn-1", None)).await.unwrap();
        for chunk in texts.chunks(10) {
            store.commit_thread_step(&turn_1, step(chunk)).await.unwrap();
        }
    }
    async fn answers(store: &dyn SessionStore, turn_1: &TurnKey, queries: &[String]) -> Vec<Vec<i64>> {
        let mut answers = Vec::new();
        for query in queries {
            let found = store
                .search_thread_history(turn_1, &MAIN.into(), query, 1000)
                .await
                .unwrap();
            answers.push(found.iter().map(|entry| entry.position).collect());
        }
        answers
    }
    assert_eq!(unindexed(&temp.path), 150);
    let from_tail = answers(&sqlite, &turn_1, &queries).await;
    assert!(
        from_tail.iter().filter(|found| !found.is_empty()).count() > 60,
        "most queries find something"
    );
    for store in stores {
        store
            .update_turn_state(&turn_1, done_state(), done_marker())
            .await
            .unwrap();
    }
    assert_eq!(unindexed(&temp.path), 0);
    let from_index = answers(&sqlite, &turn_1, &queries).await;
    let from_memory = answers(&memory, &turn_1, &queries).await;
    for (index, query) in queries.iter().enumerate() {
        assert_eq!(from_tail[index], from_index[index], "{query:?}");
        assert_eq!(from_index[index], from_memory[index], "{query:?}");
    }
}
