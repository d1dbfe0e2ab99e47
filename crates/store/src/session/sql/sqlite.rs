//! SQLite backend: WAL, one writer connection with `BEGIN IMMEDIATE`, concurrent readers, FTS5 recall.

use sqlx::Transaction;

use crate::db::SqliteDb;
use crate::error::{StoreResult, is_sqlite_constraint};
use crate::time::Timestamp;

type Db = sqlx::Sqlite;
type Store = SqliteSessionStore;

/// Session store on a SQLite file.
#[derive(Clone, Debug)]
pub struct SqliteSessionStore {
    db: SqliteDb,
}

impl SqliteSessionStore {
    pub fn new(db: SqliteDb) -> Self {
        Self { db }
    }

    async fn write_tx(&self) -> StoreResult<Transaction<'static, Db>> {
        self.db.begin_write().await
    }

    async fn read_tx(&self) -> StoreResult<Transaction<'static, Db>> {
        self.db.begin_read().await
    }

    fn read_pool(&self) -> &sqlx::SqlitePool {
        self.db.reader()
    }
}

/// SQLite runs in this process, so the process clock is the database's clock.
async fn clock(_tx: &mut Transaction<'static, Db>) -> StoreResult<Timestamp> {
    Ok(Timestamp::now())
}

/// Sets key `$5` (a JSON path) of a thread's capability state to the JSON value `$4`, in place.
const SET_CAPABILITY_KEY: &str = "json_set(COALESCE(capability_state, '{}'), $5, json($4))";

/// The JSON path of a capability key, when the key can be written as one (no quote or backslash).
fn capability_key_path(key: &str) -> Option<String> {
    (!key.contains(['"', '\\'])).then(|| format!("$.\"{key}\""))
}

/// The type a JSON value bound as text is cast to where its text must be kept as written.
const JSON_TEXT: &str = "TEXT";

/// Full-text filter on `$4`, an FTS5 query.
const SEARCH_CONDITION: &str =
    "m.message_id IN (SELECT rowid FROM context_message_fts WHERE context_message_fts MATCH $4)";

/// Every term quoted (terms are alphanumeric, so quoting is exact): FTS5 ANDs juxtaposed terms.
fn search_expression(terms: &[String]) -> String {
    terms
        .iter()
        .map(|term| format!("\"{term}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

// Deliberate: the shared SQL is compiled once per backend, against that backend's `Db`.
/// Commits a step with one statement (the `step_commit` trigger, migration 3): one round trip to the driver's
/// worker thread instead of seven. When the trigger refuses the step (a constraint error; nothing is written), the
/// step is replayed statement by statement, which reports the exact typed error (or succeeds, if the refusal was
/// a race).
async fn commit_thread_step(
    store: &Store,
    key: &crate::session::model::TurnKey,
    step: crate::session::model::ThreadStep,
) -> StoreResult<()> {
    let events = crate::session::rules::order_event_batch(&key.turn_id, step.events.clone(), 0)?;
    let mut event_rows = Vec::with_capacity(events.len());
    for stored in &events {
        event_rows.push(serde_json::json!({
            "seq": crate::session::rules::seq_to_db(stored.seq)?,
            "event_id": stored.event.id(),
            "event": stored.event,
        }));
    }
    let messages: Vec<serde_json::Value> = step
        .messages
        .iter()
        .map(|message| {
            serde_json::json!({
                "body": message,
                "index_text": crate::session::search::index_text(&message.search_text()),
            })
        })
        .collect();
    let payload = serde_json::json!({
        "tenant_id": key.tenant_id,
        "session_id": key.session_id,
        "turn_id": key.turn_id,
        "thread_id": step.thread_id,
        "now": Timestamp::now().millis(),
        "first_seq": events.first().map(|stored| stored.seq),
        "last_seq": events.last().map(|stored| stored.seq),
        "events": event_rows,
        "messages": messages,
        "usage": step.usage,
        "completion": step.completion,
    });
    let applied = sqlx::query("INSERT INTO step_commit (payload) VALUES ($1)")
        .bind(payload.to_string())
        .execute(store.db.writer())
        .await;
    match applied {
        Ok(_) => Ok(()),
        Err(error) if is_sqlite_constraint(&error) => ops::commit_thread_step_by_statements(store, key, step).await,
        // Anything else is the database failing (a full disk, an I/O error): replaying the step would only
        // hide that behind a second attempt.
        Err(error) => Err(error.into()),
    }
}

/// Sets one capability key with one statement (the `capability_patch` trigger, migration 4), falling back
/// to the statement-by-statement path for keys a JSON path cannot name and for refusals (typed errors).
async fn patch_thread_capability_state(
    store: &Store,
    key: &crate::session::model::TurnKey,
    thread_id: &str,
    state_key: &str,
    state: serde_json::Value,
) -> StoreResult<()> {
    let Some(path) = capability_key_path(state_key) else {
        return ops::patch_capability_state_by_statements(store, key, thread_id, state_key, state).await;
    };
    let applied = sqlx::query(
        "INSERT INTO capability_patch (tenant_id, session_id, turn_id, thread_id, path, state, now) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&key.tenant_id)
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .bind(&path)
    .bind(state.to_string())
    .bind(Timestamp::now().millis())
    .execute(store.db.writer())
    .await;
    match applied {
        Ok(_) => Ok(()),
        Err(error) if is_sqlite_constraint(&error) => {
            ops::patch_capability_state_by_statements(store, key, thread_id, state_key, state).await
        }
        Err(error) => Err(error.into()),
    }
}

#[allow(clippy::duplicate_mod)]
#[path = "ops/mod.rs"]
mod ops;
