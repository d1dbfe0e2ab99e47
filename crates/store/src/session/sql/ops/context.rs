//! Thread contexts: segment chains and their bodies, the thread rows, and the turn-scoped patches of
//! threads, MCP servers and sandbox info.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use sqlx::QueryBuilder;
use sqlx::types::Json;
use trueforge_protocol::{
    AgentInfo, AgentParent, AgentThreadSnapshot, ContextMessage, CurrentContextUsage, McpServerInitInfo,
    SubAgentCompletion,
};

use super::events::{insert_events, naming_duplicates};
use super::turns::{fence, fence_and_advance, require_turn};
use super::{Db, INSERT_CHUNK, SET_CAPABILITY_KEY, Store, Tx, capability_key_path, clock, thread_not_found};
use crate::error::{StoreError, StoreResult, is_unique_violation};
use crate::session::model::*;
use crate::session::rules;
use crate::session::search;

pub(super) async fn thread_segment(tx: &mut Tx, key: &TurnKey, thread_id: &str) -> StoreResult<Option<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT segment_id FROM turn_thread WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .fetch_optional(&mut **tx)
    .await?)
}

pub(super) async fn thread_capability_state(
    store: &Store,
    key: &TurnKey,
    thread_id: &str,
) -> StoreResult<Option<Map<String, Value>>> {
    let mut tx = store.read_tx().await?;
    require_turn(&mut tx, key).await?;
    type CapabilityRow = (Option<Json<Map<String, Value>>>,);
    let row: Option<CapabilityRow> = sqlx::query_as(
        "SELECT capability_state FROM turn_thread WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    let (state,) = row.ok_or_else(|| thread_not_found(key, thread_id))?;
    Ok(state.map(|json| json.0))
}

pub(super) async fn new_segment(
    tx: &mut Tx,
    key: &TurnKey,
    thread_id: &str,
    parent: Option<i64>,
    supersedes: Option<i64>,
) -> StoreResult<i64> {
    let (parent, parent_len) = match parent {
        None => (None, 0),
        Some(parent) => {
            let (len, parent_len, grandparent, parent_supersedes): (i64, i64, Option<i64>, Option<i64>) =
                sqlx::query_as(
                    "SELECT len, parent_len, parent_segment_id, supersedes_segment_id FROM context_segment \
                     WHERE segment_id = $1",
                )
                .bind(parent)
                .fetch_one(&mut **tx)
                .await?;
            // A parent that added nothing (a turn in which the thread was idle) is skipped: linking past it
            // keeps chains as long as the number of segments with messages, not the number of turns. It
            // holds no body, so recall loses nothing.
            if len == parent_len && parent_supersedes.is_none() {
                (grandparent, parent_len)
            } else {
                (Some(parent), len)
            }
        }
    };
    Ok(sqlx::query_scalar(
        "INSERT INTO context_segment (session_id, turn_id, thread_id, parent_segment_id, parent_len, \
         supersedes_segment_id, len) VALUES ($1, $2, $3, $4, $5, $6, $5) RETURNING segment_id",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .bind(parent)
    .bind(parent_len)
    .bind(supersedes)
    .fetch_one(&mut **tx)
    .await?)
}

/// Appends bodies at the end of a segment: one multi-row insert per chunk plus one update of its length.
pub(super) async fn append_messages(
    tx: &mut Tx,
    key: &TurnKey,
    segment_id: i64,
    messages: &[ContextMessage],
) -> StoreResult<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let count = i64::try_from(messages.len()).map_err(|_| StoreError::InvalidInput("too many messages".into()))?;
    let end: i64 = sqlx::query_scalar("UPDATE context_segment SET len = len + $2 WHERE segment_id = $1 RETURNING len")
        .bind(segment_id)
        .bind(count)
        .fetch_one(&mut **tx)
        .await?;
    let mut position = end - count;
    for chunk in messages.chunks(INSERT_CHUNK) {
        let mut insert = QueryBuilder::<Db>::new(
            "INSERT INTO context_message (segment_id, session_id, turn_id, pos, body, index_text) ",
        );
        insert.push_values(chunk, |mut row, message| {
            row.push_bind(segment_id)
                .push_bind(&key.session_id)
                .push_bind(&key.turn_id)
                .push_bind(position)
                .push_bind(Json(message))
                .push_bind(search::index_text(&message.search_text()));
            position += 1;
        });
        insert.build().execute(&mut **tx).await?;
    }
    Ok(())
}

/// The contexts of every thread of a turn, read with one recursive query over the segment chains.
pub(super) async fn load_contexts(tx: &mut Tx, key: &TurnKey) -> StoreResult<BTreeMap<String, Vec<ContextMessage>>> {
    let rows: Vec<(String, Json<ContextMessage>)> = sqlx::query_as(
        "WITH RECURSIVE chain (thread_id, segment_id, parent_segment_id, parent_len, cap) AS ( \
             SELECT tt.thread_id, s.segment_id, s.parent_segment_id, s.parent_len, s.len \
             FROM turn_thread tt JOIN context_segment s ON s.segment_id = tt.segment_id \
             WHERE tt.session_id = $1 AND tt.turn_id = $2 \
           UNION ALL \
             SELECT c.thread_id, s.segment_id, s.parent_segment_id, s.parent_len, c.parent_len \
             FROM chain c JOIN context_segment s ON s.segment_id = c.parent_segment_id \
         ) \
         SELECT c.thread_id, m.body FROM chain c \
         JOIN context_message m ON m.segment_id = c.segment_id AND m.pos < c.cap \
         ORDER BY c.thread_id, m.pos",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .fetch_all(&mut **tx)
    .await?;
    let mut contexts: BTreeMap<String, Vec<ContextMessage>> = BTreeMap::new();
    for (thread_id, body) in rows {
        contexts.entry(thread_id).or_default().push(body.0);
    }
    Ok(contexts)
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn insert_thread(
    tx: &mut Tx,
    key: &TurnKey,
    thread_id: &str,
    segment_id: i64,
    parent: Option<&AgentParent>,
    agent_info: Option<&AgentInfo>,
    completion: Option<&SubAgentCompletion>,
    usage: &CurrentContextUsage,
    capability_state: Option<&Map<String, Value>>,
) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO turn_thread (session_id, turn_id, thread_id, segment_id, parent, agent_info, completion, usage, \
         capability_state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .bind(segment_id)
    .bind(parent.map(Json))
    .bind(agent_info.map(Json))
    .bind(completion.map(Json))
    .bind(Json(usage))
    .bind(capability_state.map(Json))
    .execute(&mut **tx)
    .await
    .map_err(|error| {
        if is_unique_violation(&error) {
            StoreError::ThreadAlreadyExists {
                turn_id: key.turn_id.clone(),
                thread_id: thread_id.to_string(),
            }
        } else {
            error.into()
        }
    })?;
    Ok(())
}

pub(super) async fn add_threads(store: &Store, key: &TurnKey, threads: Vec<AgentThreadSnapshot>) -> StoreResult<()> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    fence(&mut tx, key, now).await?;
    let mut seen = BTreeSet::new();
    for thread in &threads {
        rules::require_id("thread", &thread.thread_id)?;
        if !seen.insert(thread.thread_id.clone()) || thread_segment(&mut tx, key, &thread.thread_id).await?.is_some() {
            return Err(StoreError::ThreadAlreadyExists {
                turn_id: key.turn_id.clone(),
                thread_id: thread.thread_id.clone(),
            });
        }
    }
    for thread in &threads {
        let segment_id = new_segment(&mut tx, key, &thread.thread_id, None, None).await?;
        insert_thread(
            &mut tx,
            key,
            &thread.thread_id,
            segment_id,
            thread.parent.as_ref(),
            thread.agent_info.as_ref(),
            thread.completion.as_ref(),
            &thread.current_context_usage,
            thread.capability_state.as_ref(),
        )
        .await?;
        append_messages(&mut tx, key, segment_id, &thread.context).await?;
    }
    tx.commit().await?;
    Ok(())
}

pub(super) async fn remove_threads(store: &Store, key: &TurnKey, thread_ids: &[String]) -> StoreResult<()> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    fence(&mut tx, key, now).await?;
    // A repeated id removes its thread once (as the memory backend does), not "not found" the second time.
    let distinct: std::collections::BTreeSet<&String> = thread_ids.iter().collect();
    for thread_id in distinct {
        let removed = sqlx::query("DELETE FROM turn_thread WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3")
            .bind(&key.session_id)
            .bind(&key.turn_id)
            .bind(thread_id)
            .execute(&mut *tx)
            .await?;
        if removed.rows_affected() == 0 {
            return Err(thread_not_found(key, thread_id));
        }
    }
    tx.commit().await?;
    Ok(())
}

pub(super) async fn append_to_thread_context(
    store: &Store,
    key: &TurnKey,
    thread_id: &str,
    messages: Vec<ContextMessage>,
    usage: Option<CurrentContextUsage>,
    completion: Option<SubAgentCompletion>,
) -> StoreResult<()> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    fence(&mut tx, key, now).await?;
    let segment_id: Option<i64> = sqlx::query_scalar(
        "UPDATE turn_thread SET usage = COALESCE($4, usage), completion = COALESCE($5, completion) \
         WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3 RETURNING segment_id",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .bind(usage.as_ref().map(Json))
    .bind(completion.as_ref().map(Json))
    .fetch_optional(&mut *tx)
    .await?;
    let segment_id = segment_id.ok_or_else(|| thread_not_found(key, thread_id))?;
    append_messages(&mut tx, key, segment_id, &messages).await?;
    tx.commit().await?;
    Ok(())
}

/// A step written statement by statement in one transaction (the Postgres path, and SQLite's fallback that
/// reports exactly why a step was refused).
pub(crate) async fn commit_thread_step(store: &Store, key: &TurnKey, step: ThreadStep) -> StoreResult<()> {
    let events = rules::order_event_batch(&key.turn_id, step.events, 0)?;
    naming_duplicates(store, key, &events, async {
        let mut tx = store.write_tx().await?;
        let now = clock(&mut tx).await?;
        fence_and_advance(&mut tx, key, now, &events).await?;
        let segment_id: Option<i64> = sqlx::query_scalar(
            "UPDATE turn_thread SET usage = COALESCE($4, usage), completion = COALESCE($5, completion) \
             WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3 RETURNING segment_id",
        )
        .bind(&key.session_id)
        .bind(&key.turn_id)
        .bind(&step.thread_id)
        .bind(step.usage.as_ref().map(Json))
        .bind(step.completion.as_ref().map(Json))
        .fetch_optional(&mut *tx)
        .await?;
        let segment_id = segment_id.ok_or_else(|| thread_not_found(key, &step.thread_id))?;
        insert_events(&mut tx, key, &events, now).await?;
        append_messages(&mut tx, key, segment_id, &step.messages).await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}

pub(super) async fn overwrite_thread_context(
    store: &Store,
    key: &TurnKey,
    thread_id: &str,
    messages: Vec<ContextMessage>,
    usage: CurrentContextUsage,
) -> StoreResult<()> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    fence(&mut tx, key, now).await?;
    let old_segment = thread_segment(&mut tx, key, thread_id)
        .await?
        .ok_or_else(|| thread_not_found(key, thread_id))?;
    let segment_id = new_segment(&mut tx, key, thread_id, None, Some(old_segment)).await?;
    append_messages(&mut tx, key, segment_id, &messages).await?;
    sqlx::query(
        "UPDATE turn_thread SET segment_id = $4, usage = $5 WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .bind(segment_id)
    .bind(Json(&usage))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

pub(super) async fn patch_mcp_servers(
    store: &Store,
    key: &TurnKey,
    servers: Vec<McpServerInitInfo>,
) -> StoreResult<()> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    fence(&mut tx, key, now).await?;
    let current: Option<Json<BTreeMap<String, McpServerInitInfo>>> =
        sqlx::query_scalar("SELECT mcp_servers FROM turn WHERE session_id = $1 AND turn_id = $2")
            .bind(&key.session_id)
            .bind(&key.turn_id)
            .fetch_one(&mut *tx)
            .await?;
    let mut merged = current.map(|json| json.0).unwrap_or_default();
    for server in servers {
        merged.insert(server.id.clone(), server);
    }
    sqlx::query("UPDATE turn SET mcp_servers = $3 WHERE session_id = $1 AND turn_id = $2")
        .bind(&key.session_id)
        .bind(&key.turn_id)
        .bind(Json(&merged))
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

pub(super) async fn patch_sandbox_info(store: &Store, key: &TurnKey, sandbox: SandboxInfo) -> StoreResult<()> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    fence(&mut tx, key, now).await?;
    sqlx::query("UPDATE turn SET sandbox_info = $3 WHERE session_id = $1 AND turn_id = $2")
        .bind(&key.session_id)
        .bind(&key.turn_id)
        .bind(Json(&sandbox))
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn patch_thread_capability_state(
    store: &Store,
    key: &TurnKey,
    thread_id: &str,
    state_key: &str,
    state: Value,
) -> StoreResult<()> {
    let Some(path) = capability_key_path(state_key) else {
        return rewrite_capability_state(store, key, thread_id, state_key, state).await;
    };
    // One statement sets the key in place: the runtime writes a key before every tool step, so a read
    // and a rewrite of the whole map would cost a round trip each time.
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    fence(&mut tx, key, now).await?;
    let updated: Option<String> = sqlx::query_scalar(&format!(
        "UPDATE turn_thread SET capability_state = {SET_CAPABILITY_KEY} \
         WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3 RETURNING thread_id"
    ))
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .bind(Json(&state))
    .bind(path)
    .fetch_optional(&mut *tx)
    .await?;
    updated.ok_or_else(|| thread_not_found(key, thread_id))?;
    tx.commit().await?;
    Ok(())
}

/// Reads the whole map, sets the key and writes it back: for keys a JSON path cannot name.
async fn rewrite_capability_state(
    store: &Store,
    key: &TurnKey,
    thread_id: &str,
    state_key: &str,
    state: Value,
) -> StoreResult<()> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    fence(&mut tx, key, now).await?;
    type CapabilityRow = (Option<Json<Map<String, Value>>>,);
    let current: Option<CapabilityRow> = sqlx::query_as(
        "SELECT capability_state FROM turn_thread WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .fetch_optional(&mut *tx)
    .await?;
    let (current,) = current.ok_or_else(|| thread_not_found(key, thread_id))?;
    let mut map = current.map(|json| json.0).unwrap_or_default();
    map.insert(state_key.to_string(), state);
    sqlx::query(
        "UPDATE turn_thread SET capability_state = $4 WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .bind(Json(&map))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}
