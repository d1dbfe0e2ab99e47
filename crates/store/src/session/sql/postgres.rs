//! Postgres backend: conditional updates as fences (row locks), the database clock, full-text recall.

use sqlx::Transaction;

use crate::db::PostgresDb;
use crate::error::StoreResult;
use crate::time::Timestamp;

type Db = sqlx::Postgres;
type Store = PostgresSessionStore;

/// Session store on Postgres 15+.
#[derive(Clone, Debug)]
pub struct PostgresSessionStore {
    db: PostgresDb,
}

impl PostgresSessionStore {
    pub fn new(db: PostgresDb) -> Self {
        Self { db }
    }

    async fn write_tx(&self) -> StoreResult<Transaction<'static, Db>> {
        self.db.begin().await
    }

    /// Reads that span several statements share one snapshot.
    async fn read_tx(&self) -> StoreResult<Transaction<'static, Db>> {
        let mut tx = self.db.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    fn read_pool(&self) -> &sqlx::PgPool {
        self.db.pool()
    }
}

/// Replicas share the database's clock, not their own.
async fn clock(tx: &mut Transaction<'static, Db>) -> StoreResult<Timestamp> {
    let millis: i64 = sqlx::query_scalar("SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)")
        .fetch_one(&mut **tx)
        .await?;
    Ok(Timestamp(millis))
}

/// The type a JSON value bound as text is cast to where its text must be kept as written: `json` keeps
/// it verbatim, key order included, where `jsonb` would reorder it (an inline agent's response-format
/// schema must reach the model as its author wrote it).
const JSON_TEXT: &str = "json";

/// Sets key `$5` (a path of one key) of a thread's capability state to the JSON value `$4`, in place.
const SET_CAPABILITY_KEY: &str = "jsonb_set(COALESCE(capability_state, '{}'::jsonb), CAST($5 AS text[]), $4, true)";

/// The path of a capability key: a one-element text array.
fn capability_key_path(key: &str) -> Option<String> {
    let escaped = key.replace('\\', "\\\\").replace('"', "\\\"");
    Some(format!("{{\"{escaped}\"}}"))
}

/// Full-text filter on `$4`, a `tsquery` over the store's own tokens. Both sides bypass the text-search
/// parser (which drops or splits some tokens, such as `x²`), so they match exactly the store's words.
const SEARCH_CONDITION: &str = "array_to_tsvector(string_to_array(m.index_text, ' ')) @@ CAST($4 AS tsquery)";

/// Terms are alphanumeric, so quoting them as lexemes needs no escaping; `&` ANDs them.
fn search_expression(terms: &[String]) -> String {
    terms
        .iter()
        .map(|term| format!("'{term}'"))
        .collect::<Vec<_>>()
        .join(" & ")
}

// Deliberate: the shared SQL is compiled once per backend, against that backend's `Db`.
/// Postgres writes a step statement by statement in one transaction: its round trips go to the server
/// either way.
async fn commit_thread_step(
    store: &Store,
    key: &crate::session::model::TurnKey,
    step: crate::session::model::ThreadStep,
) -> StoreResult<()> {
    ops::commit_thread_step_by_statements(store, key, step).await
}

async fn patch_thread_capability_state(
    store: &Store,
    key: &crate::session::model::TurnKey,
    thread_id: &str,
    state_key: &str,
    state: serde_json::Value,
) -> StoreResult<()> {
    ops::patch_capability_state_by_statements(store, key, thread_id, state_key, state).await
}

#[allow(clippy::duplicate_mod)]
#[path = "ops/mod.rs"]
mod ops;
