//! Recall: a thread's full history along its branch (superseded bodies included, flagged inactive) and
//! word search over it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use trueforge_protocol::CancellationReason;
use trueforge_store::StoreError;
use trueforge_store::session::{FreezeTurn, HistoryEntry, ThreadStep, TurnDone, TurnKey};

use super::fixtures::*;

async fn append(store: &Store, turn_key: &TurnKey, texts: &[&str]) {
    store
        .append_to_thread_context(
            turn_key,
            &MAIN.into(),
            texts.iter().map(|text| user(text)).collect(),
            None,
            None,
        )
        .await
        .expect("append to thread context");
}

async fn compact(store: &Store, turn_key: &TurnKey, texts: &[&str]) {
    store
        .overwrite_thread_context(
            turn_key,
            &MAIN.into(),
            Vec::new(),
            texts.iter().map(|text| user(text)).collect(),
            usage(1),
        )
        .await
        .expect("overwrite thread context");
}

/// `(text, active)` of each entry.
fn flagged(entries: &[HistoryEntry]) -> Vec<(String, bool)> {
    entries
        .iter()
        .map(|entry| (entry.message.search_text(), entry.active))
        .collect()
}

fn entry_texts(entries: &[HistoryEntry]) -> Vec<String> {
    entries.iter().map(|entry| entry.message.search_text()).collect()
}

fn pairs(expected: &[(&str, bool)]) -> Vec<(String, bool)> {
    expected
        .iter()
        .map(|(text, active)| (text.to_string(), *active))
        .collect()
}

fn owned(texts: &[&str]) -> Vec<String> {
    texts.iter().map(std::string::ToString::to_string).collect()
}

async fn search(store: &Store, turn_key: &TurnKey, query: &str) -> Vec<String> {
    entry_texts(
        &store
            .search_thread_history(turn_key, &MAIN.into(), query, 100)
            .await
            .expect("search"),
    )
}

/// turn-1: [a, b]; turn-2 (running): appends [c], compacts to [summary], appends [d].
async fn compacted_branch(store: &Store) -> TurnKey {
    seed_session(store, TENANT, SESSION).await;
    finished_turn(
        store,
        with_messages(turn("turn-1", None), MAIN, &["alpha one", "bravo two"]),
    )
    .await;
    let turn_2 = key("turn-2");
    store
        .create_turn(with_messages(turn("turn-2", Some("turn-1")), MAIN, &["charlie three"]))
        .await
        .unwrap();
    compact(store, &turn_2, &["summary of alpha bravo charlie"]).await;
    append(store, &turn_2, &["delta four"]).await;
    turn_2
}

pub async fn recall_history_flags_superseded_bodies_in_write_order(store: Store) {
    let turn_2 = compacted_branch(&store).await;
    let history = store.thread_history(&turn_2, &MAIN.into()).await.unwrap();
    assert_eq!(
        flagged(&history),
        pairs(&[
            ("alpha one", false),
            ("bravo two", false),
            ("charlie three", false),
            ("summary of alpha bravo charlie", true),
            ("delta four", true),
        ])
    );
    let writers: Vec<&str> = history.iter().map(|entry| entry.turn_id.as_str()).collect();
    assert_eq!(writers, ["turn-1", "turn-1", "turn-2", "turn-2", "turn-2"]);
    let positions: Vec<i64> = history.iter().map(|entry| entry.position).collect();
    assert_eq!(
        positions,
        [0, 1, 2, 0, 1],
        "each body keeps its position in the context it was written into"
    );
    assert!(
        history.windows(2).all(|pair| pair[0].message_id < pair[1].message_id),
        "write order"
    );

    // The continuation inherits the same history; its own appends come last and are active.
    finish(&store, &turn_2).await;
    let turn_3 = key("turn-3");
    store
        .create_turn(with_messages(turn("turn-3", Some("turn-2")), MAIN, &["echo five"]))
        .await
        .unwrap();
    let continued = store.thread_history(&turn_3, &MAIN.into()).await.unwrap();
    assert_eq!(continued[..history.len()], history[..]);
    assert_eq!(flagged(&continued[history.len()..]), pairs(&[("echo five", true)]));
}

pub async fn recall_history_excludes_sibling_forks(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, with_messages(turn("turn-1", None), MAIN, &["shared root"])).await;
    let left = key("left");
    store
        .create_turn(with_messages(turn("left", Some("turn-1")), MAIN, &["left only"]))
        .await
        .unwrap();
    compact(&store, &left, &["left summary"]).await;
    finish(&store, &left).await;
    let right = key("right");
    store
        .create_turn(with_messages(turn("right", Some("turn-1")), MAIN, &["right only"]))
        .await
        .unwrap();

    let history = store.thread_history(&right, &MAIN.into()).await.unwrap();
    assert_eq!(flagged(&history), pairs(&[("shared root", true), ("right only", true)]));
    let history = store.thread_history(&left, &MAIN.into()).await.unwrap();
    assert_eq!(
        flagged(&history),
        pairs(&[("shared root", false), ("left only", false), ("left summary", true)])
    );
}

pub async fn recall_history_before_overwrite_shows_only_active_bodies(store: Store) {
    compacted_branch(&store).await;
    let history = store.thread_history(&key("turn-1"), &MAIN.into()).await.unwrap();
    assert_eq!(flagged(&history), pairs(&[("alpha one", true), ("bravo two", true)]));
}

pub async fn recall_history_of_added_and_compacted_sub_thread(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_1 = key("turn-1");
    store
        .create_turn(with_messages(turn("turn-1", None), MAIN, &["main text"]))
        .await
        .unwrap();
    let snapshot = trueforge_protocol::AgentThreadSnapshot {
        context: vec![user("sub task")],
        ..trueforge_protocol::AgentThreadSnapshot::empty("sub")
    };
    store.add_threads(&turn_1, vec![snapshot]).await.unwrap();
    store
        .overwrite_thread_context(
            &turn_1,
            &"sub".into(),
            Vec::new(),
            vec![user("sub compacted")],
            usage(2),
        )
        .await
        .unwrap();
    let history = store.thread_history(&turn_1, &"sub".into()).await.unwrap();
    assert_eq!(
        flagged(&history),
        pairs(&[("sub task", false), ("sub compacted", true)])
    );
    let main = store.thread_history(&turn_1, &MAIN.into()).await.unwrap();
    assert_eq!(
        flagged(&main),
        pairs(&[("main text", true)]),
        "threads do not share history"
    );
}

pub async fn recall_search_is_case_insensitive_and_whole_word(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_1 = key("turn-1");
    store
        .create_turn(with_messages(
            turn("turn-1", None),
            MAIN,
            &[
                "The Cat sat",
                "category theory",
                "two cats",
                "CAT!",
                "concat",
                "bobcat's cat-flap",
                "scatter",
            ],
        ))
        .await
        .unwrap();
    assert_eq!(
        search(&store, &turn_1, "cat").await,
        owned(&["The Cat sat", "CAT!", "bobcat's cat-flap"])
    );
    assert_eq!(
        search(&store, &turn_1, "CAT").await,
        owned(&["The Cat sat", "CAT!", "bobcat's cat-flap"])
    );
    assert_eq!(search(&store, &turn_1, "Category").await, owned(&["category theory"]));
    assert_eq!(search(&store, &turn_1, "cats").await, owned(&["two cats"]));
    assert!(search(&store, &turn_1, "ca").await.is_empty(), "no prefix matches");
    assert!(search(&store, &turn_1, "dog").await.is_empty());
}

pub async fn recall_search_requires_every_word(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_1 = key("turn-1");
    store
        .create_turn(with_messages(
            turn("turn-1", None),
            MAIN,
            &[
                "the cat chased the dog",
                "a cat alone",
                "a dog alone",
                "Dog, meet CAT.",
                "catalog of dogs",
            ],
        ))
        .await
        .unwrap();
    let both = owned(&["the cat chased the dog", "Dog, meet CAT."]);
    assert_eq!(search(&store, &turn_1, "cat dog").await, both);
    assert_eq!(
        search(&store, &turn_1, "DOG cat").await,
        both,
        "word order does not matter"
    );
    assert_eq!(
        search(&store, &turn_1, "  cat,   dog!! cat ").await,
        both,
        "punctuation and repeats are ignored"
    );
    assert_eq!(
        search(&store, &turn_1, "cat dog chased").await,
        owned(&["the cat chased the dog"])
    );
    assert!(search(&store, &turn_1, "cat dog bird").await.is_empty());
}

pub async fn recall_search_unicode_words(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_1 = key("turn-1");
    store
        .create_turn(with_messages(
            turn("turn-1", None),
            MAIN,
            &["Größe des Cafés", "cafe plain", "東京 タワー", "x2 version 10"],
        ))
        .await
        .unwrap();
    assert_eq!(
        search(&store, &turn_1, "GRÖSSE").await,
        Vec::<String>::new(),
        "no folding beyond lowercase"
    );
    assert_eq!(search(&store, &turn_1, "größe").await, owned(&["Größe des Cafés"]));
    assert_eq!(search(&store, &turn_1, "CAFÉS").await, owned(&["Größe des Cafés"]));
    assert_eq!(
        search(&store, &turn_1, "cafe").await,
        owned(&["cafe plain"]),
        "accents are significant"
    );
    assert_eq!(search(&store, &turn_1, "東京").await, owned(&["東京 タワー"]));
    assert_eq!(search(&store, &turn_1, "x2 10").await, owned(&["x2 version 10"]));
    assert!(search(&store, &turn_1, "1").await.is_empty());
}

/// Words are runs of alphanumeric characters (Unicode's Alphabetic and Numeric), so a word may contain
/// combining vowel signs and marks (Devanagari, Arabic) or enclosed letters. A search for such a word must
/// match that whole word, not its letters written apart, on every backend.
pub async fn recall_search_words_with_marks_match_whole(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_1 = key("turn-1");
    store
        .create_turn(with_messages(
            turn("turn-1", None),
            MAIN,
            &["ك ت ب", "كَتَبَ الدرس", "ह न", "हिन्दी भाषा", "ⓐⓑ marks", "plain marks"],
        ))
        .await
        .unwrap();
    assert_eq!(
        search(&store, &turn_1, "كَتَبَ").await,
        owned(&["كَتَبَ الدرس"]),
        "Arabic with harakat"
    );
    assert_eq!(
        search(&store, &turn_1, "हिन").await,
        owned(&["हिन्दी भाषा"]),
        "Devanagari with a vowel sign"
    );
    assert_eq!(
        search(&store, &turn_1, "ⓐⓑ").await,
        owned(&["ⓐⓑ marks"]),
        "enclosed letters are a word"
    );
    assert_eq!(
        search(&store, &turn_1, "ⓐⓑ marks").await,
        owned(&["ⓐⓑ marks"]),
        "and count in an AND query"
    );
}

/// Numeric characters count as word characters too (superscripts, subscripts, vulgar fractions): a word
/// containing them is one word, matched whole, on every backend.
pub async fn recall_search_words_with_numeric_symbols_match_whole(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_1 = key("turn-1");
    store
        .create_turn(with_messages(
            turn("turn-1", None),
            MAIN,
            &["x y", "x² area", "h o", "h₂o molecule", "½ cup", "plain cup"],
        ))
        .await
        .unwrap();
    assert_eq!(search(&store, &turn_1, "x²").await, owned(&["x² area"]), "superscript");
    assert_eq!(
        search(&store, &turn_1, "h₂o").await,
        owned(&["h₂o molecule"]),
        "subscript"
    );
    assert_eq!(search(&store, &turn_1, "½").await, owned(&["½ cup"]), "vulgar fraction");
    assert_eq!(
        search(&store, &turn_1, "½ cup").await,
        owned(&["½ cup"]),
        "in an AND query"
    );
    assert!(search(&store, &turn_1, "x").await.iter().all(|text| text == "x y"));
}

pub async fn recall_search_includes_superseded_bodies(store: Store) {
    let turn_2 = compacted_branch(&store).await;
    let found = store
        .search_thread_history(&turn_2, &MAIN.into(), "bravo", 10)
        .await
        .unwrap();
    assert_eq!(
        flagged(&found),
        pairs(&[("bravo two", false), ("summary of alpha bravo charlie", true)])
    );
    assert_eq!(found[0].turn_id, "turn-1");
    let found = store
        .search_thread_history(&turn_2, &MAIN.into(), "charlie three", 10)
        .await
        .unwrap();
    assert_eq!(flagged(&found), pairs(&[("charlie three", false)]));
    // The full entry matches the history's.
    let history = store.thread_history(&turn_2, &MAIN.into()).await.unwrap();
    assert_eq!(found[0], history[2]);
}

pub async fn recall_search_respects_limit_in_write_order(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let texts_owned: Vec<String> = (0..12).map(|index| format!("needle number {index}")).collect();
    let texts_ref: Vec<&str> = texts_owned.iter().map(String::as_str).collect();
    finished_turn(&store, with_messages(turn("turn-1", None), MAIN, &texts_ref[..6])).await;
    store
        .create_turn(with_messages(turn("turn-2", Some("turn-1")), MAIN, &texts_ref[6..]))
        .await
        .unwrap();
    let turn_2 = key("turn-2");
    let found = store
        .search_thread_history(&turn_2, &MAIN.into(), "needle", 4)
        .await
        .unwrap();
    assert_eq!(
        entry_texts(&found),
        texts_owned[..4].to_vec(),
        "the first matches in write order"
    );
    let found = store
        .search_thread_history(&turn_2, &MAIN.into(), "needle", 1)
        .await
        .unwrap();
    assert_eq!(entry_texts(&found), texts_owned[..1].to_vec());
    let found = store
        .search_thread_history(&turn_2, &MAIN.into(), "needle", 1000)
        .await
        .unwrap();
    assert_eq!(entry_texts(&found), texts_owned);
    let error = store
        .search_thread_history(&turn_2, &MAIN.into(), "needle", 0)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
}

pub async fn recall_search_excludes_sibling_forks(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(
        &store,
        with_messages(turn("turn-1", None), MAIN, &["common marker root"]),
    )
    .await;
    finished_turn(
        &store,
        with_messages(turn("left", Some("turn-1")), MAIN, &["marker left"]),
    )
    .await;
    store
        .create_turn(with_messages(turn("right", Some("turn-1")), MAIN, &["marker right"]))
        .await
        .unwrap();
    assert_eq!(
        search(&store, &key("right"), "marker").await,
        owned(&["common marker root", "marker right"])
    );
    assert_eq!(
        search(&store, &key("left"), "marker").await,
        owned(&["common marker root", "marker left"])
    );
    assert!(search(&store, &key("right"), "left").await.is_empty());
    assert_eq!(
        search(&store, &key("turn-1"), "marker").await,
        owned(&["common marker root"])
    );
}

pub async fn recall_search_without_words_is_invalid_input(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store
        .create_turn(with_messages(turn("turn-1", None), MAIN, &["anything"]))
        .await
        .unwrap();
    for query in ["", "   ", "!!! ?? --", "\n\t"] {
        let error = store
            .search_thread_history(&key("turn-1"), &MAIN.into(), query, 10)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::InvalidInput(_)), "{query:?}: {error:?}");
    }
}

pub async fn recall_unknown_thread_is_thread_not_found(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
    let error = store.thread_history(&key("turn-1"), &"ghost".into()).await.unwrap_err();
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
    let error = store
        .search_thread_history(&key("turn-1"), &"ghost".into(), "word", 10)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
    // A thread removed from the turn is gone for recall too.
    store
        .add_threads(
            &key("turn-1"),
            vec![trueforge_protocol::AgentThreadSnapshot::empty("sub")],
        )
        .await
        .unwrap();
    store.remove_threads(&key("turn-1"), &["sub".into()]).await.unwrap();
    let error = store.thread_history(&key("turn-1"), &"sub".into()).await.unwrap_err();
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
}

pub async fn recall_unknown_turn_is_turn_not_found(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
    for turn_key in [key("ghost"), key_in(TENANT, "no-such-session", "turn-1")] {
        let error = store.thread_history(&turn_key, &MAIN.into()).await.unwrap_err();
        assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
        let error = store
            .search_thread_history(&turn_key, &MAIN.into(), "word", 10)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
    }
}

pub async fn recall_works_on_terminal_turns(store: Store) {
    let turn_2 = compacted_branch(&store).await;
    let before = store.thread_history(&turn_2, &MAIN.into()).await.unwrap();
    let freeze = FreezeTurn {
        reason: CancellationReason::ClientCancelled,
        metrics: None,
        done: TurnDone {
            event_id: event_id(),
            min_seq: 0,
        },
    };
    store.freeze_and_get_turn(&turn_2, freeze).await.unwrap();
    assert_eq!(store.thread_history(&turn_2, &MAIN.into()).await.unwrap(), before);
    assert_eq!(search(&store, &turn_2, "delta").await, owned(&["delta four"]));
    assert_eq!(search(&store, &key("turn-1"), "alpha").await, owned(&["alpha one"]));
}

/// A step of the running turn.
async fn step(store: &Store, turn_key: &TurnKey, texts: &[&str]) {
    store
        .commit_thread_step(
            turn_key,
            ThreadStep {
                thread_id: MAIN.into(),
                events: Vec::new(),
                messages: texts.iter().map(|text| user(text)).collect(),
                usage: None,
                completion: None,
                state_patch: None,
            },
        )
        .await
        .expect("commit thread step");
}

/// turn-1 (done): [crossing]; turn-2 (running): created with [tail], then one step and one append. Words
/// sit first, last, alone and beside longer or shorter words, in any case.
async fn running_tail(store: &Store) -> TurnKey {
    seed_session(store, TENANT, SESSION).await;
    finished_turn(
        store,
        with_messages(turn("turn-1", None), MAIN, &["Zebra crossing ahead"]),
    )
    .await;
    let turn_2 = key("turn-2");
    store
        .create_turn(with_messages(
            turn("turn-2", Some("turn-1")),
            MAIN,
            &["a zebra in the tail"],
        ))
        .await
        .unwrap();
    step(store, &turn_2, &["ZEBRAS and a Zebra", "zebrafish", "zebra"]).await;
    append(store, &turn_2, &["crossing the tail", "ebra", "x² zebra_crossing"]).await;
    turn_2
}

/// What [`running_tail`]'s branch answers, whether its rows are indexed yet or not.
async fn assert_tail_found(store: &Store, turn_2: &TurnKey) {
    assert_eq!(
        search(store, turn_2, "zebra").await,
        owned(&[
            "Zebra crossing ahead",
            "a zebra in the tail",
            "ZEBRAS and a Zebra",
            "zebra",
            "x² zebra_crossing"
        ])
    );
    assert_eq!(
        search(store, turn_2, "CROSSING").await,
        owned(&["Zebra crossing ahead", "crossing the tail", "x² zebra_crossing"])
    );
    assert_eq!(
        search(store, turn_2, "tail zebra").await,
        owned(&["a zebra in the tail"])
    );
    assert_eq!(search(store, turn_2, "zebras").await, owned(&["ZEBRAS and a Zebra"]));
    assert_eq!(search(store, turn_2, "x²").await, owned(&["x² zebra_crossing"]));
    assert_eq!(search(store, turn_2, "ebra").await, owned(&["ebra"]));
    assert!(search(store, turn_2, "zebr").await.is_empty(), "no prefix matches");
    assert!(
        search(store, turn_2, "tail ahead").await.is_empty(),
        "every word in one row"
    );
    assert_eq!(
        search(store, &key("turn-1"), "zebra").await,
        owned(&["Zebra crossing ahead"]),
        "the earlier turn does not see its continuation"
    );
}

/// A row is found the moment its write commits, while its turn still runs (SQLite indexes rows in batches
/// and searches the rows written since the last one without the index).
pub async fn recall_search_finds_rows_right_after_their_commit(store: Store) {
    let turn_2 = running_tail(&store).await;
    assert_tail_found(&store, &turn_2).await;
}

/// The same rows, found the same way, once their turn ended (done, or frozen by a cancel).
pub async fn recall_search_finds_rows_after_their_turn_ended(store: Store) {
    let turn_2 = running_tail(&store).await;
    finish(&store, &turn_2).await;
    assert_tail_found(&store, &turn_2).await;

    let turn_3 = key("turn-3");
    store
        .create_turn(with_messages(turn("turn-3", Some("turn-2")), MAIN, &["zebra frozen"]))
        .await
        .unwrap();
    step(&store, &turn_3, &["frozen Zebra step"]).await;
    let freeze = FreezeTurn {
        reason: CancellationReason::ClientCancelled,
        metrics: None,
        done: TurnDone {
            event_id: event_id(),
            min_seq: 0,
        },
    };
    store.freeze_and_get_turn(&turn_3, freeze).await.unwrap();
    assert_eq!(
        search(&store, &turn_3, "frozen zebra").await,
        owned(&["zebra frozen", "frozen Zebra step"])
    );
    assert_eq!(search(&store, &turn_3, "zebra").await.len(), 7);
}

/// A turn writing more rows than SQLite leaves unindexed (512; the bound is crossed inside a step's
/// multi-row insert): every row is found while it runs and after it ended.
pub async fn recall_search_finds_rows_of_a_long_running_turn(store: Store) {
    /// Row `index` of the turn: every 97th from 300 on holds a needle.
    fn row(index: usize) -> String {
        let word = if index >= 300 && index.is_multiple_of(97) {
            "needle"
        } else {
            "filler"
        };
        format!("row {index} {word}")
    }
    seed_session(&store, TENANT, SESSION).await;
    let created: Vec<String> = (0..300).map(row).collect();
    let turn_1 = key("turn-1");
    store
        .create_turn(with_messages(
            turn("turn-1", None),
            MAIN,
            &created.iter().map(String::as_str).collect::<Vec<_>>(),
        ))
        .await
        .unwrap();
    for first in (300..1000).step_by(50) {
        let texts: Vec<String> = (first..first + 50).map(row).collect();
        step(&store, &turn_1, &texts.iter().map(String::as_str).collect::<Vec<_>>()).await;
    }
    let needles: Vec<String> = (300..1000_usize)
        .filter(|index| index.is_multiple_of(97))
        .map(row)
        .collect();
    assert_eq!(needles.len(), 7);
    for ended in [false, true] {
        if ended {
            finish(&store, &turn_1).await;
        }
        assert_eq!(search(&store, &turn_1, "needle").await, needles, "ended: {ended}");
        for index in [0, 299, 300, 511, 512, 513, 582, 700, 999] {
            assert_eq!(
                search(&store, &turn_1, &format!("{index} row")).await,
                [row(index)],
                "ended: {ended}"
            );
        }
        let all = store
            .search_thread_history(&turn_1, &MAIN.into(), "row", 1000)
            .await
            .unwrap();
        assert_eq!(all.len(), 1000, "ended: {ended}");
    }
}

/// Deleting a session takes its rows out of recall, those of its ended turns and those of its running one
/// alike, and leaves every other session's recall as it was, before and after the next batch; a session
/// made again with the same id starts empty.
pub async fn recall_leaves_nothing_of_a_deleted_session(store: Store) {
    const GONE: &str = "gone";
    seed_session(&store, TENANT, GONE).await;
    finished_turn(
        &store,
        with_messages(turn_in(TENANT, GONE, "turn-1", None), MAIN, &["ghost ended"]),
    )
    .await;
    let gone_running = key_in(TENANT, GONE, "turn-2");
    store
        .create_turn(with_messages(
            turn_in(TENANT, GONE, "turn-2", Some("turn-1")),
            MAIN,
            &["ghost running"],
        ))
        .await
        .unwrap();
    step(&store, &gone_running, &["ghost step"]).await;

    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, with_messages(turn("turn-1", None), MAIN, &["ghost kept ended"])).await;
    let kept = key("turn-2");
    store
        .create_turn(with_messages(
            turn("turn-2", Some("turn-1")),
            MAIN,
            &["ghost kept running"],
        ))
        .await
        .unwrap();

    store.delete_session(&TENANT.into(), &GONE.into()).await.unwrap();
    let error = store
        .search_thread_history(&gone_running, &MAIN.into(), "ghost", 10)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
    let both_kept = owned(&["ghost kept ended", "ghost kept running"]);
    assert_eq!(search(&store, &kept, "ghost").await, both_kept);
    finish(&store, &kept).await;
    assert_eq!(search(&store, &kept, "ghost").await, both_kept);

    seed_session(&store, TENANT, GONE).await;
    let reborn = key_in(TENANT, GONE, "turn-1");
    store
        .create_turn(with_messages(
            turn_in(TENANT, GONE, "turn-1", None),
            MAIN,
            &["ghost reborn"],
        ))
        .await
        .unwrap();
    assert_eq!(search(&store, &reborn, "ghost").await, owned(&["ghost reborn"]));
    finish(&store, &reborn).await;
    assert_eq!(search(&store, &reborn, "ghost").await, owned(&["ghost reborn"]));
    assert!(search(&store, &reborn, "running").await.is_empty());
    assert!(search(&store, &reborn, "step").await.is_empty());
}

contract_group!(
    recall_history_flags_superseded_bodies_in_write_order,
    recall_history_excludes_sibling_forks,
    recall_history_before_overwrite_shows_only_active_bodies,
    recall_history_of_added_and_compacted_sub_thread,
    recall_search_is_case_insensitive_and_whole_word,
    recall_search_requires_every_word,
    recall_search_unicode_words,
    recall_search_words_with_marks_match_whole,
    recall_search_words_with_numeric_symbols_match_whole,
    recall_search_includes_superseded_bodies,
    recall_search_respects_limit_in_write_order,
    recall_search_excludes_sibling_forks,
    recall_search_without_words_is_invalid_input,
    recall_unknown_thread_is_thread_not_found,
    recall_unknown_turn_is_turn_not_found,
    recall_works_on_terminal_turns,
    recall_search_finds_rows_right_after_their_commit,
    recall_search_finds_rows_after_their_turn_ended,
    recall_search_finds_rows_of_a_long_running_turn,
    recall_leaves_nothing_of_a_deleted_session,
);
