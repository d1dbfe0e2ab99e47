//! A database file written before the SQLite store moved from sqlx to rusqlite opens with today's store.
//!
//! `fixtures/sqlx-era.db` was written by the store of commit 13e81d0 (sqlx, migrations 1-7 recorded in
//! `_sqlx_migrations`, steps committed through the `step_commit` trigger) through its public API, then copied
//! with `VACUUM INTO`. It holds, in tenant `t1`, with the secret key of 32 bytes of 7:
//! - settings: agent `helper`; model provider `openai` (API key `sk-fixture-secret-key-0001`); MCP server
//!   `docs` (header `Authorization: Bearer fixture-header-secret`) with an OAuth token and an MCP session of
//!   `user-1`; the agent's approval of the server's tool `search`;
//! - session `s1` (inline agent, title `zebras`): `turn-1` done (two messages, a step, a capability key, three
//!   events); `turn-2` continuing it, still running under the expired lease of `old-server`, its context
//!   compacted to one summary; session `s2` bound to the agent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::suite::recall_index::{check_index, indexed_with, unindexed};

use std::path::{Path, PathBuf};

use serde_json::json;
use trueforge_protocol::{ContextMessage, SessionEvent, TurnId, TurnState};
use trueforge_store::StoreError;
use trueforge_store::crypto::SecretCipher;
use trueforge_store::db::{MigrateOnOpen, SqliteDb};
use trueforge_store::session::{
    NewTurn, PageRequest, SessionFilter, SessionStore, SortOrder, SqliteSessionStore, StoredEvent, ThreadStep,
    TurnDone, TurnKey,
};
use trueforge_store::settings::{
    AgentStore, AgentToolApprovalStore, McpServerStore, McpSessionStore, ModelProviderStore, OAuthTokenStore,
    SqliteSettingsStore,
};

const TENANT: &str = "t1";

/// A copy of the fixture in a fresh directory (the original stays untouched).
fn copy_fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sqlx-era.db"),
        &path,
    )
    .unwrap();
    (dir, path)
}

fn user_version(path: &Path) -> i64 {
    common::raw_sqlite(path)
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap()
}

/// Every table, index, view and trigger with its SQL, in name order.
fn schema(path: &Path) -> Vec<(String, String, Option<String>)> {
    let conn = common::raw_sqlite(path);
    let mut statement = conn
        .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY name")
        .unwrap();
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

fn texts(context: &[ContextMessage]) -> Vec<String> {
    context.iter().map(ContextMessage::search_text).collect()
}

fn model_message(id: &str, text: &str) -> SessionEvent {
    serde_json::from_value(json!({
        "type": "model.message", "id": id, "created_at": "2026-12-02T00:00:00.000Z", "thread_id": "main",
        "content": text
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_migrated_by_sqlx_is_taken_over_and_keeps_working() {
    let (_dir, path) = copy_fixture();
    assert_eq!(user_version(&path), 0, "the fixture predates rusqlite_migration");
    let sqlx_rows: i64 = common::raw_sqlite(&path)
        .query_row("SELECT count(*) FROM _sqlx_migrations WHERE success", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(sqlx_rows, 7);

    let db = SqliteDb::open(&path, MigrateOnOpen::Yes).await.unwrap();
    assert_eq!(user_version(&path), 14, "every migration of ours ran");
    let names: Vec<String> = schema(&path).into_iter().map(|(_, name, _)| name).collect();
    for gone in [
        "_sqlx_migrations",
        "step_commit",
        "step_commit_apply",
        "capability_patch",
        "capability_patch_apply",
    ] {
        assert!(
            !names.iter().any(|name| name == gone),
            "{gone} is still there: {names:?}"
        );
    }

    // Settings: the key check, every secret, every kind of row.
    let settings = SqliteSettingsStore::open(db.clone(), SecretCipher::from_key_bytes(&[7; 32]).unwrap())
        .await
        .unwrap();
    let agent = settings
        .get_agent_by_name(&TENANT.into(), "helper")
        .await
        .unwrap()
        .unwrap();
    let provider = settings
        .get_model_provider(&TENANT.into(), "openai")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(provider.manifest.api_key(), Some("sk-fixture-secret-key-0001"));
    let server = settings.get_mcp_server(&TENANT.into(), "docs").await.unwrap().unwrap();
    let manifest = serde_json::to_value(&server.manifest).unwrap();
    assert_eq!(
        manifest["auth"]["headers"]["Authorization"],
        "Bearer fixture-header-secret"
    );
    let token = settings
        .get_oauth_token(&TENANT.into(), &server.id, "user-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(token.token.access_token, "fixture-access");
    assert_eq!(token.token.refresh_token.as_deref(), Some("fixture-refresh"));
    let approvals = settings
        .list_agent_tool_approvals(&TENANT.into(), &agent.id)
        .await
        .unwrap();
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0].tool_name, "search");
    assert_eq!(
        settings
            .get_mcp_session(&TENANT.into(), &server.id, "user-1")
            .await
            .unwrap()
            .as_deref(),
        Some("mcp-session-1")
    );
    let wrong_key = SqliteSettingsStore::open(db.clone(), SecretCipher::generate()).await;
    assert!(matches!(wrong_key, Err(StoreError::Secret(_))), "{wrong_key:?}");

    // Sessions written by the trigger path read back whole.
    let sessions = SqliteSessionStore::new(db.clone());
    let s1 = sessions
        .get_session(&TENANT.into(), &"s1".into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(s1.title.as_deref(), Some("zebras"));
    assert_eq!(s1.custom, Some(json!({"k": "v"})));
    assert_eq!(s1.last_turn_id.as_ref().map(TurnId::as_str), Some("turn-2"));
    let listed = sessions
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(listed.data.len(), 2);

    let turn_1 = TurnKey::new(TENANT, "s1", "turn-1");
    let record = sessions.get_turn(&turn_1).await.unwrap().unwrap();
    assert!(matches!(record.turn.state, TurnState::Done { .. }));
    let main = &record.snapshot.threads["main"];
    assert_eq!(
        texts(&main.context),
        ["what is a zebra crossing", "assistant said: a striped crossing"]
    );
    assert_eq!(main.current_context_usage.prompt_tokens, 42);
    assert_eq!(
        main.capability_state.as_ref().unwrap()["tf.started_tool_calls"],
        json!(["call-1"])
    );
    let events = sessions
        .list_turn_events(&turn_1, SortOrder::Asc, &PageRequest::first(10))
        .await
        .unwrap();
    let types: Vec<&str> = events.data.iter().map(|stored| stored.event.event_type()).collect();
    assert_eq!(types, ["turn.created", "model.message", "turn.done"]);

    let turn_2 = TurnKey::new(TENANT, "s1", "turn-2");
    let record = sessions.get_turn(&turn_2).await.unwrap().unwrap();
    assert_eq!(record.turn.state, TurnState::Running);
    assert_eq!(record.turn.custom, Some(json!({"n": 2})));
    assert_eq!(
        texts(&record.snapshot.threads["main"].context),
        ["summary: zebra and pelican crossings"]
    );
    let history = sessions.thread_history(&turn_2, &"main".into()).await.unwrap();
    assert_eq!(history.len(), 5);
    assert_eq!(history.iter().filter(|entry| entry.active).count(), 1);
    let found = sessions
        .search_thread_history(&turn_2, &"main".into(), "zebra", 10)
        .await
        .unwrap();
    assert_eq!(
        texts(&found.into_iter().map(|entry| entry.message).collect::<Vec<_>>()),
        ["what is a zebra crossing", "summary: zebra and pelican crossings"]
    );

    // The running turn is taken over and continued, written now by Rust transactions.
    let expired = sessions.list_expired_leases(10).await.unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].owner, "old-server");
    sessions
        .claim_expired_lease(&turn_2, "new-server", 60_000)
        .await
        .unwrap();
    sessions
        .commit_thread_step(
            &turn_2,
            ThreadStep {
                thread_id: "main".into(),
                events: vec![StoredEvent {
                    seq: 3,
                    event: model_message("e2-3", "both are crossings"),
                }],
                messages: vec![ContextMessage::user_text("assistant said: both are crossings")],
                usage: None,
                completion: None,
                state_patch: None,
            },
        )
        .await
        .unwrap();
    sessions
        .patch_thread_capability_state(&turn_2, &"main".into(), "tf.started_tool_calls", json!(["call-9"]))
        .await
        .unwrap();
    sessions
        .update_turn_state(
            &turn_2,
            TurnState::Done {
                output: None,
                required_actions: Vec::new(),
                completed_at: String::new(),
                metrics: None,
            },
            TurnDone {
                event_id: "e2-done".into(),
                min_seq: 0,
            },
        )
        .await
        .unwrap();
    let mut next: NewTurn = NewTurn {
        tenant_id: TENANT.into(),
        session_id: "s1".into(),
        turn_id: "turn-3".into(),
        previous_turn_id: Some("turn-2".into()),
        input: Vec::new(),
        custom: None,
        new_threads: Vec::new(),
        context_appends: Vec::new(),
        capability_states: vec![("main".into(), None)],
        title_if_unset: None,
        lease: None,
        events: Vec::new(),
        idempotency: None,
    };
    next.context_appends.push(trueforge_store::session::ContextAppend {
        thread_id: "main".into(),
        messages: vec![ContextMessage::user_text("and a puffin crossing")],
        current_context_usage: None,
    });
    sessions.create_turn(next).await.unwrap();
    let record = sessions
        .get_turn(&TurnKey::new(TENANT, "s1", "turn-3"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        texts(&record.snapshot.threads["main"].context),
        [
            "summary: zebra and pelican crossings",
            "assistant said: both are crossings",
            "and a puffin crossing"
        ]
    );
    let feed = sessions
        .list_session_events(&TENANT.into(), &"s1".into(), None, &PageRequest::first(100))
        .await
        .unwrap();
    assert_eq!(feed.data.len(), 3 + 4);
    db.check_ready().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrated_file_has_the_schema_of_a_new_one() {
    let (_dir, path) = copy_fixture();
    SqliteDb::open(&path, MigrateOnOpen::Yes).await.unwrap().close().await;
    let fresh = common::sqlite_db().await;
    assert_eq!(schema(&path), schema(&fresh.path));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_from_an_unknown_sqlx_migration_is_refused() {
    let (_dir, path) = copy_fixture();
    common::raw_sqlite(&path)
        .execute_batch(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (20270101000001, 'from the future', 1, x'00', 0)",
        )
        .unwrap();
    let error = SqliteDb::open(&path, MigrateOnOpen::Yes).await.unwrap_err();
    assert!(error.to_string().contains("another version"), "{error}");
    assert_eq!(user_version(&path), 0, "nothing was migrated");
}

/// The batched recall index (migration 11) on a file whose rows the per-row trigger indexed: the migration
/// indexes nothing again, recall reads the old rows through the index and the new ones from the tail until
/// their turn ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_over_a_migrated_file_reads_the_index_and_the_new_tail() {
    let (_dir, path) = copy_fixture();
    let db = SqliteDb::open(&path, MigrateOnOpen::Yes).await.unwrap();
    let (mark, highest): (i64, i64) = common::raw_sqlite(&path)
        .query_row(
            "SELECT (SELECT indexed_through FROM context_message_fts_mark), (SELECT MAX(message_id) FROM context_message)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(mark, highest, "every existing row counts as indexed");
    assert_eq!(unindexed(&path), 0);
    check_index(&path);
    let with_zebra: i64 = common::raw_sqlite(&path)
        .query_row(
            "SELECT count(*) FROM context_message WHERE instr(' ' || index_text || ' ', ' zebra ') > 0",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(
        indexed_with(&path, "zebra"),
        with_zebra,
        "the index holds the old rows once"
    );

    let sessions = SqliteSessionStore::new(db.clone());
    let turn_2 = TurnKey::new(TENANT, "s1", "turn-2");
    sessions
        .claim_expired_lease(&turn_2, "new-server", 60_000)
        .await
        .unwrap();
    sessions
        .commit_thread_step(
            &turn_2,
            ThreadStep {
                thread_id: "main".into(),
                events: Vec::new(),
                messages: vec![ContextMessage::user_text("a zebra after the migration")],
                usage: None,
                completion: None,
                state_patch: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(unindexed(&path), 1);
    let expected = [
        "what is a zebra crossing",
        "summary: zebra and pelican crossings",
        "a zebra after the migration",
    ];
    let found = sessions
        .search_thread_history(&turn_2, &"main".into(), "zebra", 10)
        .await
        .unwrap();
    assert_eq!(
        texts(&found.into_iter().map(|entry| entry.message).collect::<Vec<_>>()),
        expected
    );

    sessions
        .update_turn_state(
            &turn_2,
            TurnState::Done {
                output: None,
                required_actions: Vec::new(),
                completed_at: String::new(),
                metrics: None,
            },
            TurnDone {
                event_id: "e2-done".into(),
                min_seq: 0,
            },
        )
        .await
        .unwrap();
    assert_eq!(unindexed(&path), 0);
    check_index(&path);
    assert_eq!(indexed_with(&path, "zebra"), with_zebra + 1);
    let found = sessions
        .search_thread_history(&turn_2, &"main".into(), "zebra", 10)
        .await
        .unwrap();
    assert_eq!(
        texts(&found.into_iter().map(|entry| entry.message).collect::<Vec<_>>()),
        expected
    );
}
