//! Turns: the fence of turn-scoped writes, reading a turn with its snapshot, creating a turn on its branch
//! and the terminal writes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use trueforge_protocol::{AgentThreadSnapshot, CurrentContextUsage, IdempotencyKey, McpServerInitInfo, TurnState};

use super::context::{append_messages, insert_thread, load_contexts, new_segment};
use super::events::insert_events;
use super::rows::{THREAD_COLUMNS, TURN_COLUMNS, ThreadRow, TurnRow, seq_from_db};
use super::turn_not_found;
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::page::{self, Cursor};
use crate::session::rules;
use crate::session::sql::SessionSql;
use crate::sql::{Json, Param, params};
use crate::time::Timestamp;

async fn read_state<C: SessionSql>(conn: &mut C, key: &TurnKey) -> StoreResult<Option<TurnState>> {
    let state: Option<(Json<TurnState>,)> = conn
        .fetch_optional(
            "SELECT state FROM turn WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3",
            &params![&key.tenant_id, &key.session_id, &key.turn_id],
        )
        .await?;
    Ok(state.map(|(state,)| state.0))
}

/// The fence of every turn-scoped write: a conditional update of the turn row that only matches while the
/// turn runs. On Postgres it also takes the row lock, so a concurrent freeze waits for this write and a
/// write queued behind a committed freeze re-checks the status and matches nothing. Returns the turn's
/// last stored seq.
pub(crate) async fn fence<C: SessionSql>(conn: &mut C, key: &TurnKey, now: Timestamp) -> StoreResult<u64> {
    let last_seq: Option<(i64,)> = conn
        .fetch_optional(
            "UPDATE turn SET updated_at = CASE WHEN updated_at < $4 THEN $4 ELSE updated_at END \
             WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3 AND status = 'running' RETURNING last_seq",
            &params![&key.tenant_id, &key.session_id, &key.turn_id, now.millis()],
        )
        .await?;
    match last_seq {
        Some((last_seq,)) => Ok(seq_from_db(last_seq)),
        None => Err(not_running(conn, key).await?),
    }
}

/// The lease fence of a write through a [`fenced`](crate::SessionStore::fenced) store, the first statement of
/// its transaction: the turn's lease epoch must still be `epoch`. On Postgres the row stays locked to the
/// end of the transaction, so a takeover cannot slip in between this check and the write.
pub(crate) async fn check_lease_epoch<C: SessionSql>(conn: &mut C, key: &TurnKey, epoch: u64) -> StoreResult<()> {
    let current: Option<(i64,)> = conn
        .fetch_optional(
            &format!(
                "SELECT lease_epoch FROM turn WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3{}",
                C::LOCK_ROW
            ),
            &params![&key.tenant_id, &key.session_id, &key.turn_id],
        )
        .await?;
    match current {
        None => Err(turn_not_found(key)),
        Some((current,)) => {
            let current = u64::try_from(current).unwrap_or(0);
            if current == epoch {
                Ok(())
            } else {
                Err(StoreError::StaleLease {
                    turn_id: key.turn_id.clone(),
                    epoch,
                    current,
                })
            }
        }
    }
}

/// Why a fence matched nothing: the turn is over, or there is no such turn.
pub(crate) async fn not_running<C: SessionSql>(conn: &mut C, key: &TurnKey) -> StoreResult<StoreError> {
    Ok(match read_state(conn, key).await? {
        Some(state) => StoreError::TurnNotRunning {
            turn_id: key.turn_id.clone(),
            state: Box::new(state),
        },
        None => turn_not_found(key),
    })
}

/// The write fence of a batch of events (ordered, seqs from 1 up): the turn must be running and its last
/// seq below the batch's first; the last seq moves to the batch's last, in one statement. An empty batch is
/// a plain [`fence`].
pub(crate) async fn fence_and_advance<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    now: Timestamp,
    events: &[StoredEvent],
) -> StoreResult<()> {
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return fence(conn, key, now).await.map(|_| ());
    };
    let advanced: Option<(i64,)> = conn
        .fetch_optional(
            "UPDATE turn SET updated_at = CASE WHEN updated_at < $4 THEN $4 ELSE updated_at END, last_seq = $6 \
             WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3 AND status = 'running' AND last_seq < $5 \
             RETURNING last_seq",
            &params![
                &key.tenant_id,
                &key.session_id,
                &key.turn_id,
                now.millis(),
                rules::seq_to_db(first.seq)?,
                rules::seq_to_db(last.seq)?,
            ],
        )
        .await?;
    if advanced.is_some() {
        return Ok(());
    }
    // Refused: say why (the turn is gone or over, or the batch is not above its last seq).
    let last_seq = fence(conn, key, now).await?;
    Err(StoreError::EventSequenceConflict {
        turn_id: key.turn_id.clone(),
        seq: first.seq,
        last_seq,
    })
}

async fn load_turn_row<C: SessionSql>(conn: &mut C, key: &TurnKey) -> StoreResult<Option<TurnRow>> {
    Ok(conn
        .fetch_optional(
            &format!("SELECT {TURN_COLUMNS} FROM turn WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3"),
            &params![&key.tenant_id, &key.session_id, &key.turn_id],
        )
        .await?)
}

/// The threads of a turn.
async fn thread_rows<C: SessionSql>(
    conn: &mut C,
    session_id: &SessionId,
    turn_id: &TurnId,
) -> StoreResult<Vec<ThreadRow>> {
    Ok(conn
        .fetch_all(
            &format!("SELECT {THREAD_COLUMNS} FROM turn_thread WHERE session_id = $1 AND turn_id = $2"),
            &params![session_id, turn_id],
        )
        .await?)
}

async fn load_record<C: SessionSql>(conn: &mut C, key: &TurnKey) -> StoreResult<Option<TurnRecord>> {
    Ok(load_record_reusing(conn, key, None).await?.map(|reused| reused.record))
}

/// Reads a turn with its snapshot; with `held`, leaves the contexts out when every thread's stored length
/// is the one held (see `SessionStore::get_turn_reusing`).
async fn load_record_reusing<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    held: Option<&BTreeMap<ThreadId, usize>>,
) -> StoreResult<Option<ReusedTurnRecord>> {
    let Some(row) = load_turn_row(conn, key).await? else {
        return Ok(None);
    };
    type Checkpoint = (
        Option<Json<BTreeMap<String, McpServerInitInfo>>>,
        Option<Json<SandboxInfo>>,
        i64,
        Option<Json<Vec<OpenMessage>>>,
    );
    let (mcp_servers, sandbox_info, streamed_seq, open_messages): Checkpoint = conn
        .fetch_one(
            "SELECT mcp_servers, sandbox_info, streamed_seq, open_messages FROM turn \
             WHERE session_id = $1 AND turn_id = $2",
            &params![&key.session_id, &key.turn_id],
        )
        .await?;
    let rows = thread_rows(conn, &key.session_id, &key.turn_id).await?;
    let contexts_left_out = match held {
        Some(held) if held.len() == rows.len() => {
            let lengths = context_lengths(conn, key).await?;
            rows.iter().all(|thread| {
                let stored = lengths.get(&thread.thread_id).copied().unwrap_or(0);
                held.get(&thread.thread_id)
                    .is_some_and(|held| i64::try_from(*held).is_ok_and(|held| held == stored))
            })
        }
        _ => false,
    };
    let mut contexts = if contexts_left_out {
        BTreeMap::new()
    } else {
        load_contexts(conn, key).await?
    };
    let threads = rows
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
    let record = TurnRecord {
        turn: row.into(),
        snapshot: TurnSnapshot {
            threads,
            mcp_servers: mcp_servers.map(|json| json.0),
            sandbox_info: sandbox_info.map(|json| json.0),
            live_stream: LiveStreamMark {
                seq: seq_from_db(streamed_seq),
                open_messages: open_messages.map(|json| json.0).unwrap_or_default(),
            },
        },
    };
    Ok(Some(ReusedTurnRecord {
        record,
        contexts_left_out,
    }))
}

/// The length of each thread's context on this turn: its tip segment's end (positions are absolute along
/// the chain). One row per thread, no bodies.
async fn context_lengths<C: SessionSql>(conn: &mut C, key: &TurnKey) -> StoreResult<BTreeMap<ThreadId, i64>> {
    let rows: Vec<(ThreadId, i64)> = conn
        .fetch_all(
            "SELECT tt.thread_id, s.len FROM turn_thread tt JOIN context_segment s ON s.segment_id = tt.segment_id \
             WHERE tt.session_id = $1 AND tt.turn_id = $2",
            &params![&key.session_id, &key.turn_id],
        )
        .await?;
    Ok(rows.into_iter().collect())
}

/// Writes a terminal state and its `turn.done` in the caller's transaction, if the turn still runs.
/// Returns false when the turn was no longer running.
async fn write_done<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    state: &TurnState,
    done: &TurnDone,
    now: Timestamp,
) -> StoreResult<bool> {
    let min_seq = rules::seq_to_db(done.min_seq)?;
    let seq: Option<(i64,)> = conn
        .fetch_optional(
            "UPDATE turn SET status = $4, state = $5, lease_owner = NULL, lease_expires_at = NULL, \
             updated_at = CASE WHEN updated_at < $6 THEN $6 ELSE updated_at END, \
             last_seq = CASE WHEN last_seq >= streamed_seq AND last_seq + 1 > $7 THEN last_seq + 1 \
                             WHEN last_seq < streamed_seq AND streamed_seq + 1 > $7 THEN streamed_seq + 1 \
                             ELSE $7 END \
             WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3 AND status = 'running' RETURNING last_seq",
            &params![
                &key.tenant_id,
                &key.session_id,
                &key.turn_id,
                state.status_str(),
                Param::json(state)?,
                now.millis(),
                min_seq,
            ],
        )
        .await?;
    let Some((seq,)) = seq else { return Ok(false) };
    let event = rules::turn_done_event(&done.event_id, state, now);
    insert_events(
        conn,
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

pub(crate) async fn require_turn<C: SessionSql>(conn: &mut C, key: &TurnKey) -> StoreResult<()> {
    let found: Option<(i64,)> = conn
        .fetch_optional(
            "SELECT ord FROM turn WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3",
            &params![&key.tenant_id, &key.session_id, &key.turn_id],
        )
        .await?;
    found.map(|_| ()).ok_or_else(|| turn_not_found(key))
}

/// The usage a new turn's appends leave on a thread: the last one given, if any.
fn appended_usage(turn: &NewTurn, thread_id: &ThreadId) -> Option<CurrentContextUsage> {
    turn.context_appends
        .iter()
        .filter(|append| append.thread_id == *thread_id)
        .filter_map(|append| append.current_context_usage)
        .next_back()
}

pub(crate) async fn create_turn<C: SessionSql>(conn: &mut C, turn: NewTurn) -> StoreResult<TurnSummary> {
    rules::require_id("turn", &turn.turn_id)?;
    if let Some(lease) = &turn.lease {
        rules::check_ttl(lease.ttl_ms)?;
    }
    let events = rules::order_event_batch(&turn.turn_id, turn.events.clone(), 0)?;
    let last_seq = rules::seq_to_db(events.last().map_or(0, |stored| stored.seq))?;
    let now = conn.now().await?;
    // Updating the session row first serialises turn creation per session (Postgres row lock).
    let tip: Option<(String,)> = conn
        .fetch_optional(
            "UPDATE session SET last_turn_id = $3, title = COALESCE(title, $4), \
             updated_at = CASE WHEN updated_at + 1 > $5 THEN updated_at + 1 ELSE $5 END \
             WHERE tenant_id = $1 AND session_id = $2 RETURNING session_id",
            &params![
                &turn.tenant_id,
                &turn.session_id,
                &turn.turn_id,
                &turn.title_if_unset,
                now.millis(),
            ],
        )
        .await?;
    if tip.is_none() {
        return Err(StoreError::SessionNotFound {
            session_id: turn.session_id.clone(),
        });
    }
    // After the session row: on Postgres a concurrent creation with the same key has committed by now (it
    // held the row), so this read sees it; the unique index stays the last word.
    if let Some(idempotency) = &turn.idempotency
        && let Some(keyed) = keyed_turn(conn, &turn.tenant_id, &turn.session_id, &idempotency.key).await?
    {
        return Err(StoreError::IdempotencyKeyUsed {
            turn_id: keyed.turn_id,
            fingerprint: keyed.fingerprint,
        });
    }
    let key = TurnKey::new(&turn.tenant_id, &turn.session_id, &turn.turn_id);
    let previous = match &turn.previous_turn_id {
        None => None,
        Some(previous_id) => {
            let previous_key = TurnKey::new(&turn.tenant_id, &turn.session_id, previous_id);
            let row = load_turn_row(conn, &previous_key)
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
        Some(previous) => thread_rows(conn, &previous.session_id, &previous.turn_id).await?,
    };
    let inherited_ids: BTreeSet<ThreadId> = inherited.iter().map(|thread| thread.thread_id.clone()).collect();
    rules::check_thread_delta(&turn, &inherited_ids)?;

    let (first_turn_id, ancestor_ids) = rules::ancestry(&turn.turn_id, previous.as_ref());
    let lease = turn
        .lease
        .as_ref()
        .map(|lease| (lease.owner.as_str(), now.plus_millis(lease.ttl_ms).millis()));
    let sql = format!(
        "INSERT INTO turn (session_id, turn_id, tenant_id, first_turn_id, previous_turn_id, ancestor_ids, status, \
         state, input, custom, mcp_servers, sandbox_info, last_seq, lease_owner, lease_expires_at, created_at, updated_at, \
         idempotency_key, request_fingerprint) \
         SELECT $1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, \
                (SELECT mcp_servers FROM turn WHERE session_id = $1 AND turn_id = $5), \
                (SELECT sandbox_info FROM turn WHERE session_id = $1 AND turn_id = $5), \
                $13, $10, $11, $12, $12, $14, $15 \
         RETURNING {TURN_COLUMNS}"
    );
    let params = params![
        &turn.session_id,
        &turn.turn_id,
        &turn.tenant_id,
        &first_turn_id,
        &turn.previous_turn_id,
        Param::json(&ancestor_ids)?,
        Param::json(&TurnState::Running)?,
        Param::json(&turn.input)?,
        Param::opt_json(turn.custom.as_ref())?,
        lease.map(|(owner, _)| owner),
        lease.map(|(_, expires)| expires),
        now.millis(),
        last_seq,
        turn.idempotency.as_ref().map(|idempotency| idempotency.key.as_str()),
        turn.idempotency
            .as_ref()
            .map(|idempotency| idempotency.fingerprint.as_str()),
    ];
    let row: TurnRow = conn.fetch_one(&sql, &params).await.map_err(|error| {
        if !error.is_unique_violation() {
            StoreError::from(error)
        } else if turn.idempotency.is_some() && error.unique_violation_names(IDEMPOTENCY_KEY_COLUMN) {
            // The read above missed a concurrent creation with the same key (it cannot while creations are
            // serialised on the session row); the retry reads the key and answers with its turn.
            StoreError::Transient("a concurrent request created a turn with the same idempotency key".to_owned())
        } else {
            StoreError::TurnAlreadyExists {
                turn_id: turn.turn_id.clone(),
            }
        }
    })?;

    let capability: BTreeMap<&str, &Option<Map<String, Value>>> = turn
        .capability_states
        .iter()
        .map(|(thread_id, state)| (thread_id.as_str(), state))
        .collect();
    let mut segments = BTreeMap::new();
    for thread in &inherited {
        let segment_id = new_segment(conn, &key, &thread.thread_id, Some(thread.segment_id), None).await?;
        let usage = appended_usage(&turn, &thread.thread_id).unwrap_or(thread.usage.0);
        insert_thread(
            conn,
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
        let segment_id = new_segment(conn, &key, &thread.thread_id, None, None).await?;
        let usage = appended_usage(&turn, &thread.thread_id).unwrap_or_default();
        insert_thread(
            conn,
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
            append_messages(conn, &key, *segment_id, &append.messages).await?;
        }
    }
    // A new turn has no events yet, so ids can only clash within the batch, which was checked above.
    insert_events(conn, &key, &events, now).await?;
    Ok(row.into())
}

/// The column of the unique index `turn_idempotency_key_idx` on `(session_id, idempotency_key)`: the
/// engines' messages name one or the other, and both contain it.
const IDEMPOTENCY_KEY_COLUMN: &str = "idempotency_key";

async fn keyed_turn<C: SessionSql>(
    conn: &mut C,
    tenant_id: &TenantId,
    session_id: &SessionId,
    key: &IdempotencyKey,
) -> StoreResult<Option<KeyedTurn>> {
    let row: Option<(TurnId, Option<String>)> = conn
        .fetch_optional(
            "SELECT turn_id, request_fingerprint FROM turn \
             WHERE tenant_id = $1 AND session_id = $2 AND idempotency_key = $3",
            &params![tenant_id, session_id, key.as_str()],
        )
        .await?;
    Ok(row.map(|(turn_id, fingerprint)| KeyedTurn {
        turn_id,
        // Written with the key, always; an absent one only matches nothing.
        fingerprint: fingerprint.unwrap_or_default(),
    }))
}

pub(crate) async fn turn_by_idempotency_key<C: SessionSql>(
    conn: &mut C,
    tenant_id: TenantId,
    session_id: SessionId,
    key: IdempotencyKey,
) -> StoreResult<Option<KeyedTurn>> {
    keyed_turn(conn, &tenant_id, &session_id, &key).await
}

pub(crate) async fn get_turn<C: SessionSql>(conn: &mut C, key: TurnKey) -> StoreResult<Option<TurnRecord>> {
    load_record(conn, &key).await
}

pub(crate) async fn get_turn_reusing<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    held: BTreeMap<ThreadId, usize>,
) -> StoreResult<Option<ReusedTurnRecord>> {
    load_record_reusing(conn, &key, Some(&held)).await
}

pub(crate) async fn get_turn_summary<C: SessionSql>(conn: &mut C, key: TurnKey) -> StoreResult<Option<TurnSummary>> {
    Ok(load_turn_row(conn, &key).await?.map(TurnSummary::from))
}

pub(crate) async fn list_turns<C: SessionSql>(
    conn: &mut C,
    tenant_id: TenantId,
    session_id: SessionId,
    page: PageRequest,
) -> StoreResult<Page<TurnSummary>> {
    let after = page::turns_cursor(page::open_page(&page)?)?.unwrap_or(0);
    let exists: Option<(String,)> = conn
        .fetch_optional(
            "SELECT session_id FROM session WHERE tenant_id = $1 AND session_id = $2",
            &params![&tenant_id, &session_id],
        )
        .await?;
    if exists.is_none() {
        return Err(StoreError::SessionNotFound { session_id });
    }
    let rows: Vec<TurnRow> = conn
        .fetch_all(
            &format!("SELECT {TURN_COLUMNS} FROM turn WHERE session_id = $1 AND ord > $2 ORDER BY ord LIMIT $3"),
            &params![&session_id, after, i64::from(page.limit) + 1],
        )
        .await?;
    let rows: Vec<(i64, TurnSummary)> = rows.into_iter().map(|row| (row.ord, row.into())).collect();
    let (rows, next_page_token) = page::finish_page(rows, page.limit, |(ord, _)| Cursor::Turns { ord: *ord });
    Ok(Page {
        data: rows.into_iter().map(|(_, summary)| summary).collect(),
        limit: page.limit,
        next_page_token,
    })
}

pub(crate) async fn freeze_and_get_turn<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    freeze: FreezeTurn,
) -> StoreResult<TurnRecord> {
    let now = conn.now().await?;
    let cancelled = rules::stamp_terminal(
        TurnState::Cancelled {
            reason: freeze.reason,
            completed_at: String::new(),
            metrics: freeze.metrics,
        },
        now,
    )?;
    write_done(conn, &key, &cancelled, &freeze.done, now).await?;
    load_record(conn, &key).await?.ok_or_else(|| turn_not_found(&key))
}

pub(crate) async fn update_turn_state<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    state: TurnState,
    done: TurnDone,
) -> StoreResult<TurnState> {
    let now = conn.now().await?;
    let stamped = rules::stamp_terminal(state, now)?;
    if !write_done(conn, &key, &stamped, &done, now).await? {
        return Err(not_running(conn, &key).await?);
    }
    Ok(stamped)
}
