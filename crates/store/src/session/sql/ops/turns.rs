//! Turns: the fence of turn-scoped writes, reading a turn with its snapshot, creating a turn on its branch
//! and the terminal writes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use sqlx::types::Json;
use trueforge_protocol::{AgentThreadSnapshot, CurrentContextUsage, McpServerInitInfo, TurnState};

use super::context::{append_messages, insert_thread, load_contexts, new_segment};
use super::events::insert_events;
use super::rows::{TURN_COLUMNS, ThreadRow, TurnRow, seq_from_db};
use super::{Store, Tx, clock, turn_not_found};
use crate::error::{StoreError, StoreResult, is_unique_violation};
use crate::session::model::*;
use crate::session::page::{self, Cursor};
use crate::session::rules;
use crate::time::Timestamp;

async fn read_state(tx: &mut Tx, key: &TurnKey) -> StoreResult<Option<TurnState>> {
    let state: Option<Json<TurnState>> =
        sqlx::query_scalar("SELECT state FROM turn WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3")
            .bind(&key.tenant_id)
            .bind(&key.session_id)
            .bind(&key.turn_id)
            .fetch_optional(&mut **tx)
            .await?;
    Ok(state.map(|state| state.0))
}

/// The fence of every turn-scoped write: a conditional update of the turn row that only matches while the
/// turn runs. On Postgres it also takes the row lock, so a concurrent freeze waits for this write and a
/// write queued behind a committed freeze re-checks the status and matches nothing. Returns the turn's
/// last stored seq.
pub(super) async fn fence(tx: &mut Tx, key: &TurnKey, now: Timestamp) -> StoreResult<u64> {
    let last_seq: Option<i64> = sqlx::query_scalar(
        "UPDATE turn SET updated_at = CASE WHEN updated_at < $4 THEN $4 ELSE updated_at END \
         WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3 AND status = 'running' RETURNING last_seq",
    )
    .bind(&key.tenant_id)
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(now.millis())
    .fetch_optional(&mut **tx)
    .await?;
    match last_seq {
        Some(last_seq) => Ok(seq_from_db(last_seq)),
        None => Err(match read_state(tx, key).await? {
            Some(state) => StoreError::TurnNotRunning {
                turn_id: key.turn_id.clone(),
                state: Box::new(state),
            },
            None => turn_not_found(key),
        }),
    }
}

/// The write fence of a batch of events (ordered, seqs from 1 up): the turn must be running and its last
/// seq below the batch's first; the last seq moves to the batch's last, in one statement. An empty batch is
/// a plain [`fence`].
pub(super) async fn fence_and_advance(
    tx: &mut Tx,
    key: &TurnKey,
    now: Timestamp,
    events: &[StoredEvent],
) -> StoreResult<()> {
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return fence(tx, key, now).await.map(|_| ());
    };
    let advanced: Option<i64> = sqlx::query_scalar(
        "UPDATE turn SET updated_at = CASE WHEN updated_at < $4 THEN $4 ELSE updated_at END, last_seq = $6 \
         WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3 AND status = 'running' AND last_seq < $5 \
         RETURNING last_seq",
    )
    .bind(&key.tenant_id)
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(now.millis())
    .bind(rules::seq_to_db(first.seq)?)
    .bind(rules::seq_to_db(last.seq)?)
    .fetch_optional(&mut **tx)
    .await?;
    if advanced.is_some() {
        return Ok(());
    }
    // Refused: say why (the turn is gone or over, or the batch is not above its last seq).
    let last_seq = fence(tx, key, now).await?;
    Err(StoreError::EventSequenceConflict {
        turn_id: key.turn_id.clone(),
        seq: first.seq,
        last_seq,
    })
}

async fn load_turn_row(tx: &mut Tx, key: &TurnKey) -> StoreResult<Option<TurnRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {TURN_COLUMNS} FROM turn WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3"
    ))
    .bind(&key.tenant_id)
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .fetch_optional(&mut **tx)
    .await?)
}

async fn load_record(tx: &mut Tx, key: &TurnKey) -> StoreResult<Option<TurnRecord>> {
    let Some(row) = load_turn_row(tx, key).await? else {
        return Ok(None);
    };
    type Checkpoint = (
        Option<Json<BTreeMap<String, McpServerInitInfo>>>,
        Option<Json<SandboxInfo>>,
    );
    let (mcp_servers, sandbox_info): Checkpoint =
        sqlx::query_as("SELECT mcp_servers, sandbox_info FROM turn WHERE session_id = $1 AND turn_id = $2")
            .bind(&key.session_id)
            .bind(&key.turn_id)
            .fetch_one(&mut **tx)
            .await?;
    let thread_rows: Vec<ThreadRow> = sqlx::query_as(
        "SELECT thread_id, segment_id, parent, agent_info, completion, usage, capability_state \
         FROM turn_thread WHERE session_id = $1 AND turn_id = $2",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .fetch_all(&mut **tx)
    .await?;
    let mut contexts = load_contexts(tx, key).await?;
    let threads = thread_rows
        .into_iter()
        .map(|thread| {
            let snapshot = AgentThreadSnapshot {
                context: contexts.remove(&thread.thread_id).unwrap_or_default(),
                thread_id: thread.thread_id.clone(),
                current_context_usage: thread.usage.0,
                parent: thread.parent.map(|json| json.0),
                agent_info: thread.agent_info.map(|json| json.0),
                completion: thread.completion.map(|json| json.0),
                capability_state: thread.capability_state.map(|json| json.0),
            };
            (thread.thread_id, snapshot)
        })
        .collect();
    Ok(Some(TurnRecord {
        turn: row.into(),
        snapshot: TurnSnapshot {
            threads,
            mcp_servers: mcp_servers.map(|json| json.0),
            sandbox_info: sandbox_info.map(|json| json.0),
        },
    }))
}

/// Writes a terminal state and its `turn.done` in the caller's transaction, if the turn still runs.
/// Returns false when the turn was no longer running.
async fn write_done(
    tx: &mut Tx,
    key: &TurnKey,
    state: &TurnState,
    done: &TurnDone,
    now: Timestamp,
) -> StoreResult<bool> {
    let min_seq = rules::seq_to_db(done.min_seq)?;
    let seq: Option<i64> = sqlx::query_scalar(
        "UPDATE turn SET status = $4, state = $5, lease_owner = NULL, lease_expires_at = NULL, \
         updated_at = CASE WHEN updated_at < $6 THEN $6 ELSE updated_at END, \
         last_seq = CASE WHEN last_seq + 1 > $7 THEN last_seq + 1 ELSE $7 END \
         WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3 AND status = 'running' RETURNING last_seq",
    )
    .bind(&key.tenant_id)
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(state.status_str())
    .bind(Json(state))
    .bind(now.millis())
    .bind(min_seq)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(seq) = seq else { return Ok(false) };
    let event = rules::turn_done_event(&done.event_id, state, now);
    insert_events(
        tx,
        key,
        &[StoredEvent {
            seq: seq_from_db(seq),
            event,
        }],
        now,
    )
    .await
    .map_err(|error| match error {
        // One event: the clash is its own id.
        StoreError::EventAlreadyExists { turn_id, .. } => StoreError::EventAlreadyExists {
            turn_id,
            event_id: done.event_id.clone(),
        },
        other => other,
    })?;
    Ok(true)
}

pub(super) async fn require_turn(tx: &mut Tx, key: &TurnKey) -> StoreResult<()> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT ord FROM turn WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3")
            .bind(&key.tenant_id)
            .bind(&key.session_id)
            .bind(&key.turn_id)
            .fetch_optional(&mut **tx)
            .await?;
    found.map(|_| ()).ok_or_else(|| turn_not_found(key))
}

/// The usage a new turn's appends leave on a thread: the last one given, if any.
fn appended_usage(turn: &NewTurn, thread_id: &str) -> Option<CurrentContextUsage> {
    turn.context_appends
        .iter()
        .filter(|append| append.thread_id == thread_id)
        .filter_map(|append| append.current_context_usage)
        .next_back()
}

pub(super) async fn create_turn(store: &Store, turn: NewTurn) -> StoreResult<TurnSummary> {
    rules::require_id("turn", &turn.turn_id)?;
    if let Some(lease) = &turn.lease {
        rules::check_ttl(lease.ttl_ms)?;
    }
    let events = rules::order_event_batch(&turn.turn_id, turn.events.clone(), 0)?;
    let last_seq = rules::seq_to_db(events.last().map_or(0, |stored| stored.seq))?;
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    // Updating the session row first serialises turn creation per session (Postgres row lock).
    let tip: Option<String> = sqlx::query_scalar(
        "UPDATE session SET last_turn_id = $3, title = COALESCE(title, $4), \
         updated_at = CASE WHEN updated_at + 1 > $5 THEN updated_at + 1 ELSE $5 END \
         WHERE tenant_id = $1 AND session_id = $2 RETURNING session_id",
    )
    .bind(&turn.tenant_id)
    .bind(&turn.session_id)
    .bind(&turn.turn_id)
    .bind(&turn.title_if_unset)
    .bind(now.millis())
    .fetch_optional(&mut *tx)
    .await?;
    if tip.is_none() {
        return Err(StoreError::SessionNotFound {
            session_id: turn.session_id.clone(),
        });
    }
    let key = TurnKey::new(&turn.tenant_id, &turn.session_id, &turn.turn_id);
    let previous = match &turn.previous_turn_id {
        None => None,
        Some(previous_id) => {
            let previous_key = TurnKey::new(&turn.tenant_id, &turn.session_id, previous_id);
            let row = load_turn_row(&mut tx, &previous_key)
                .await?
                .ok_or_else(|| StoreError::PreviousTurnNotFound {
                    turn_id: previous_id.clone(),
                })?;
            if !row.state.0.is_terminal() {
                return Err(StoreError::PreviousTurnRunning {
                    previous_turn_id: previous_id.clone(),
                });
            }
            Some(TurnSummary::from(row))
        }
    };
    let inherited: Vec<ThreadRow> = match &previous {
        None => Vec::new(),
        Some(previous) => {
            sqlx::query_as(
                "SELECT thread_id, segment_id, parent, agent_info, completion, usage, capability_state \
             FROM turn_thread WHERE session_id = $1 AND turn_id = $2",
            )
            .bind(&previous.session_id)
            .bind(&previous.turn_id)
            .fetch_all(&mut *tx)
            .await?
        }
    };
    let inherited_ids: BTreeSet<String> = inherited.iter().map(|thread| thread.thread_id.clone()).collect();
    rules::check_thread_delta(&turn, &inherited_ids)?;

    let (first_turn_id, ancestor_ids) = rules::ancestry(&turn.turn_id, previous.as_ref());
    let lease = turn
        .lease
        .as_ref()
        .map(|lease| (lease.owner.clone(), now.plus_millis(lease.ttl_ms).millis()));
    let row: TurnRow = sqlx::query_as(&format!(
        "INSERT INTO turn (session_id, turn_id, tenant_id, first_turn_id, previous_turn_id, ancestor_ids, status, \
         state, input, custom, mcp_servers, sandbox_info, last_seq, lease_owner, lease_expires_at, created_at, updated_at) \
         SELECT $1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, \
                (SELECT mcp_servers FROM turn WHERE session_id = $1 AND turn_id = $5), \
                (SELECT sandbox_info FROM turn WHERE session_id = $1 AND turn_id = $5), \
                $13, $10, $11, $12, $12 \
         RETURNING {TURN_COLUMNS}"
    ))
    .bind(&turn.session_id)
    .bind(&turn.turn_id)
    .bind(&turn.tenant_id)
    .bind(&first_turn_id)
    .bind(&turn.previous_turn_id)
    .bind(Json(&ancestor_ids))
    .bind(Json(&TurnState::Running))
    .bind(Json(&turn.input))
    .bind(turn.custom.as_ref().map(Json))
    .bind(lease.as_ref().map(|(owner, _)| owner.clone()))
    .bind(lease.as_ref().map(|(_, expires)| *expires))
    .bind(now.millis())
    .bind(last_seq)
    .fetch_one(&mut *tx)
    .await
    .map_err(|error| {
        if is_unique_violation(&error) {
            StoreError::TurnAlreadyExists { turn_id: turn.turn_id.clone() }
        } else {
            error.into()
        }
    })?;

    let capability: BTreeMap<&str, &Option<Map<String, Value>>> = turn
        .capability_states
        .iter()
        .map(|(thread_id, state)| (thread_id.as_str(), state))
        .collect();
    let mut segments = BTreeMap::new();
    for thread in &inherited {
        let segment_id = new_segment(&mut tx, &key, &thread.thread_id, Some(thread.segment_id), None).await?;
        let usage = appended_usage(&turn, &thread.thread_id).unwrap_or(thread.usage.0);
        insert_thread(
            &mut tx,
            &key,
            &thread.thread_id,
            segment_id,
            thread.parent.as_ref().map(|json| &json.0),
            thread.agent_info.as_ref().map(|json| &json.0),
            thread.completion.as_ref().map(|json| &json.0),
            &usage,
            capability
                .get(thread.thread_id.as_str())
                .copied()
                .and_then(Option::as_ref),
        )
        .await?;
        segments.insert(thread.thread_id.clone(), segment_id);
    }
    for thread in &turn.new_threads {
        let segment_id = new_segment(&mut tx, &key, &thread.thread_id, None, None).await?;
        let usage = appended_usage(&turn, &thread.thread_id).unwrap_or_default();
        insert_thread(
            &mut tx,
            &key,
            &thread.thread_id,
            segment_id,
            thread.parent.as_ref(),
            thread.agent_info.as_ref(),
            None,
            &usage,
            capability
                .get(thread.thread_id.as_str())
                .copied()
                .and_then(Option::as_ref),
        )
        .await?;
        segments.insert(thread.thread_id.clone(), segment_id);
    }
    for append in &turn.context_appends {
        if let Some(segment_id) = segments.get(&append.thread_id) {
            append_messages(&mut tx, &key, *segment_id, &append.messages).await?;
        }
    }
    // A new turn has no events yet, so ids can only clash within the batch, which was checked above.
    super::events::insert_events(&mut tx, &key, &events, now).await?;
    tx.commit().await?;
    Ok(row.into())
}

pub(super) async fn get_turn(store: &Store, key: &TurnKey) -> StoreResult<Option<TurnRecord>> {
    let mut tx = store.read_tx().await?;
    let record = load_record(&mut tx, key).await?;
    tx.commit().await?;
    Ok(record)
}

pub(super) async fn list_turns(
    store: &Store,
    tenant_id: &str,
    session_id: &str,
    page: &PageRequest,
) -> StoreResult<Page<TurnSummary>> {
    let after = page::turns_cursor(page::open_page(page)?)?.unwrap_or(0);
    let mut tx = store.read_tx().await?;
    let exists: Option<String> =
        sqlx::query_scalar("SELECT session_id FROM session WHERE tenant_id = $1 AND session_id = $2")
            .bind(tenant_id)
            .bind(session_id)
            .fetch_optional(&mut *tx)
            .await?;
    if exists.is_none() {
        return Err(StoreError::SessionNotFound {
            session_id: session_id.to_string(),
        });
    }
    let rows: Vec<TurnRow> = sqlx::query_as(&format!(
        "SELECT {TURN_COLUMNS} FROM turn WHERE session_id = $1 AND ord > $2 ORDER BY ord LIMIT $3"
    ))
    .bind(session_id)
    .bind(after)
    .bind(i64::from(page.limit) + 1)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    let rows: Vec<(i64, TurnSummary)> = rows.into_iter().map(|row| (row.ord, row.into())).collect();
    let (rows, next_page_token) = page::finish_page(rows, page.limit, |(ord, _)| Cursor::Turns { ord: *ord });
    Ok(Page {
        data: rows.into_iter().map(|(_, summary)| summary).collect(),
        limit: page.limit,
        next_page_token,
    })
}

pub(super) async fn freeze_and_get_turn(store: &Store, key: &TurnKey, freeze: FreezeTurn) -> StoreResult<TurnRecord> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    let cancelled = rules::stamp_terminal(
        TurnState::Cancelled {
            reason: freeze.reason,
            completed_at: String::new(),
            metrics: freeze.metrics,
        },
        now,
    )?;
    write_done(&mut tx, key, &cancelled, &freeze.done, now).await?;
    let record = load_record(&mut tx, key).await?.ok_or_else(|| turn_not_found(key))?;
    tx.commit().await?;
    Ok(record)
}

pub(super) async fn update_turn_state(
    store: &Store,
    key: &TurnKey,
    state: TurnState,
    done: TurnDone,
) -> StoreResult<TurnState> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    let stamped = rules::stamp_terminal(state, now)?;
    if !write_done(&mut tx, key, &stamped, &done, now).await? {
        return Err(match read_state(&mut tx, key).await? {
            Some(state) => StoreError::TurnNotRunning {
                turn_id: key.turn_id.clone(),
                state: Box::new(state),
            },
            None => turn_not_found(key),
        });
    }
    tx.commit().await?;
    Ok(stamped)
}
