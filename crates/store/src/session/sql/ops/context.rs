//! Thread contexts: segment chains and their bodies, the thread rows, and the turn-scoped patches of
//! threads, capability state and MCP servers.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use trueforge_protocol::{
    AgentInfo, AgentParent, AgentThreadSnapshot, ContextMessage, CurrentContextUsage, McpServerInitInfo,
    SubAgentCompletion,
};

use super::events::insert_events;
use super::turns::{fence, fence_and_advance, require_turn};
use super::{INSERT_CHUNK, thread_not_found};
use crate::error::{InputError, StoreError, StoreResult};
use crate::session::model::*;
use crate::session::rules;
use crate::session::search;
use crate::session::sql::SessionSql;
use crate::sql::{Json, Param, Statement, params};

pub(crate) async fn thread_segment<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    thread_id: &ThreadId,
) -> StoreResult<Option<i64>> {
    let segment: Option<(i64,)> = conn
        .fetch_optional(
            "SELECT segment_id FROM turn_thread WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
            &params![&key.session_id, &key.turn_id, thread_id],
        )
        .await?;
    Ok(segment.map(|(segment_id,)| segment_id))
}

/// A thread's capability state; `None` when the thread has none.
type CapabilityState = Option<Map<String, Value>>;

/// A thread's capability state, `None` when there is no such thread.
async fn read_capability_state<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    thread_id: &ThreadId,
) -> StoreResult<Option<CapabilityState>> {
    type CapabilityRow = (Option<Json<Map<String, Value>>>,);
    let row: Option<CapabilityRow> = conn
        .fetch_optional(
            "SELECT capability_state FROM turn_thread WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
            &params![&key.session_id, &key.turn_id, thread_id],
        )
        .await?;
    Ok(row.map(|(state,)| state.map(|json| json.0)))
}

pub(crate) async fn thread_capability_state<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    thread_id: ThreadId,
) -> StoreResult<Option<Map<String, Value>>> {
    require_turn(conn, &key).await?;
    read_capability_state(conn, &key, &thread_id)
        .await?
        .ok_or_else(|| thread_not_found(&key, &thread_id))
}

pub(crate) async fn new_segment<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    thread_id: &ThreadId,
    parent: Option<i64>,
    supersedes: Option<i64>,
) -> StoreResult<i64> {
    let (parent, parent_len) = match parent {
        None => (None, 0),
        Some(parent) => {
            let (len, parent_len, grandparent, parent_supersedes): (i64, i64, Option<i64>, Option<i64>) = conn
                .fetch_one(
                    "SELECT len, parent_len, parent_segment_id, supersedes_segment_id FROM context_segment \
                     WHERE segment_id = $1",
                    &params![parent],
                )
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
    let (segment_id,): (i64,) = conn
        .fetch_one(
            "INSERT INTO context_segment (session_id, turn_id, thread_id, parent_segment_id, parent_len, \
             supersedes_segment_id, len) VALUES ($1, $2, $3, $4, $5, $6, $5) RETURNING segment_id",
            &params![&key.session_id, &key.turn_id, thread_id, parent, parent_len, supersedes],
        )
        .await?;
    Ok(segment_id)
}

/// Appends bodies at the end of a segment: one multi-row insert per chunk plus one update of its length.
pub(crate) async fn append_messages<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    segment_id: i64,
    messages: &[ContextMessage],
) -> StoreResult<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let count = i64::try_from(messages.len()).map_err(|_| InputError::TooManyMessages)?;
    let (end,): (i64,) = conn
        .fetch_one(
            "UPDATE context_segment SET len = len + $2 WHERE segment_id = $1 RETURNING len",
            &params![segment_id, count],
        )
        .await?;
    let mut position = end - count;
    for chunk in messages.chunks(INSERT_CHUNK) {
        let mut insert = Statement::new(
            "INSERT INTO context_message (segment_id, session_id, turn_id, pos, body, index_text) VALUES ",
        );
        for message in chunk {
            insert.values(params![
                segment_id,
                &key.session_id,
                &key.turn_id,
                position,
                Param::json(message)?,
                search::index_text(&message.search_text()),
            ]);
            position += 1;
        }
        conn.execute(&insert.sql, &insert.params).await?;
    }
    Ok(())
}

/// The contexts of every thread of a turn, read with one recursive query over the segment chains.
pub(crate) async fn load_contexts<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
) -> StoreResult<BTreeMap<ThreadId, Vec<ContextMessage>>> {
    // The bodies come as text and are read by `ContextMessage::from_json`, not through the generic JSON
    // column (which buffers each row as a `serde_json::Value` first): this is every row of the
    // conversation, read on every turn. `CAST` makes Postgres's `jsonb` text; SQLite stores text already.
    // No `ORDER BY`: the engine would sort the rows with their bodies (a temporary B-tree on SQLite, most
    // of the query's time on a long conversation); sorting the positions here is cheaper.
    let mut rows: Vec<(ThreadId, i64, String)> = conn
        .fetch_all(
            "WITH RECURSIVE chain (thread_id, segment_id, parent_segment_id, parent_len, cap) AS ( \
                 SELECT tt.thread_id, s.segment_id, s.parent_segment_id, s.parent_len, s.len \
                 FROM turn_thread tt JOIN context_segment s ON s.segment_id = tt.segment_id \
                 WHERE tt.session_id = $1 AND tt.turn_id = $2 \
               UNION ALL \
                 SELECT c.thread_id, s.segment_id, s.parent_segment_id, s.parent_len, c.parent_len \
                 FROM chain c JOIN context_segment s ON s.segment_id = c.parent_segment_id \
             ) \
             SELECT c.thread_id, m.pos, CAST(m.body AS TEXT) FROM chain c \
             JOIN context_message m ON m.segment_id = c.segment_id AND m.pos < c.cap",
            &params![&key.session_id, &key.turn_id],
        )
        .await?;
    let mut contexts: BTreeMap<ThreadId, Vec<ContextMessage>> = BTreeMap::new();
    rows.sort_unstable_by(|(thread_a, pos_a, _), (thread_b, pos_b, _)| thread_a.cmp(thread_b).then(pos_a.cmp(pos_b)));
    for (thread_id, _, body) in rows {
        contexts
            .entry(thread_id)
            .or_default()
            .push(ContextMessage::from_json(&body)?);
    }
    Ok(contexts)
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn insert_thread<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    thread_id: &ThreadId,
    segment_id: i64,
    parent: Option<&AgentParent>,
    agent_info: Option<&AgentInfo>,
    completion: Option<&SubAgentCompletion>,
    usage: &CurrentContextUsage,
    capability_state: Option<&Map<String, Value>>,
) -> StoreResult<()> {
    let params = params![
        &key.session_id,
        &key.turn_id,
        thread_id,
        segment_id,
        Param::opt_json(parent)?,
        Param::opt_json(agent_info)?,
        Param::opt_json(completion)?,
        Param::json(usage)?,
        Param::opt_json(capability_state)?,
    ];
    conn.execute(
        "INSERT INTO turn_thread (session_id, turn_id, thread_id, segment_id, parent, agent_info, completion, usage, \
         capability_state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &params,
    )
    .await
    .map_err(|error| {
        if error.is_unique_violation() {
            StoreError::ThreadAlreadyExists {
                turn_id: key.turn_id.clone(),
                thread_id: thread_id.clone(),
            }
        } else {
            error.into()
        }
    })?;
    Ok(())
}

pub(crate) async fn add_threads<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    threads: Vec<AgentThreadSnapshot>,
) -> StoreResult<()> {
    let now = conn.now().await?;
    fence(conn, &key, now).await?;
    let mut seen = BTreeSet::new();
    for thread in &threads {
        rules::require_id("thread", &thread.thread_id)?;
        if !seen.insert(thread.thread_id.clone()) || thread_segment(conn, &key, &thread.thread_id).await?.is_some() {
            return Err(StoreError::ThreadAlreadyExists {
                turn_id: key.turn_id.clone(),
                thread_id: thread.thread_id.clone(),
            });
        }
    }
    for thread in &threads {
        let segment_id = new_segment(conn, &key, &thread.thread_id, None, None).await?;
        insert_thread(
            conn,
            &key,
            &thread.thread_id,
            segment_id,
            thread.parent.as_ref(),
            thread.agent_info.as_ref(),
            thread.completion.as_ref(),
            &thread.current_context_usage,
            thread.capability_state.as_ref(),
        )
        .await?;
        append_messages(conn, &key, segment_id, &thread.context).await?;
    }
    Ok(())
}

pub(crate) async fn remove_threads<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    thread_ids: Vec<ThreadId>,
) -> StoreResult<()> {
    let now = conn.now().await?;
    fence(conn, &key, now).await?;
    // A repeated id removes its thread once (as the memory backend does), not "not found" the second time.
    let distinct: BTreeSet<&ThreadId> = thread_ids.iter().collect();
    for thread_id in distinct {
        let removed = conn
            .execute(
                "DELETE FROM turn_thread WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
                &params![&key.session_id, &key.turn_id, thread_id],
            )
            .await?;
        if removed == 0 {
            return Err(thread_not_found(&key, thread_id));
        }
    }
    Ok(())
}

/// A thread step in one transaction: the fence (advancing the last seq past the step's events, which come
/// ordered), usage and completion, the events and the context rows. Also the path of
/// `append_to_thread_context`, a step without events.
pub(crate) async fn commit_thread_step<C: SessionSql>(conn: &mut C, key: TurnKey, step: ThreadStep) -> StoreResult<()> {
    let now = conn.now().await?;
    fence_and_advance(conn, &key, now, &step.events).await?;
    let segment_id: Option<(i64,)> = conn
        .fetch_optional(
            "UPDATE turn_thread SET usage = COALESCE($4, usage), completion = COALESCE($5, completion) \
             WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3 RETURNING segment_id",
            &params![
                &key.session_id,
                &key.turn_id,
                &step.thread_id,
                Param::opt_json(step.usage.as_ref())?,
                Param::opt_json(step.completion.as_ref())?,
            ],
        )
        .await?;
    let (segment_id,) = segment_id.ok_or_else(|| thread_not_found(&key, &step.thread_id))?;
    insert_events(conn, &key, &step.events, now).await?;
    append_messages(conn, &key, segment_id, &step.messages).await?;
    if let Some(patch) = step.state_patch {
        set_capability_key(conn, &key, &step.thread_id, patch.key, patch.value).await?;
    }
    Ok(())
}

/// A compaction in one transaction: the fence (advancing the last seq past its events, which come
/// ordered), the events, and a new root segment holding `messages` that the thread points to from now on.
pub(crate) async fn overwrite_thread_context<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    thread_id: ThreadId,
    events: Vec<StoredEvent>,
    messages: Vec<ContextMessage>,
    usage: CurrentContextUsage,
) -> StoreResult<()> {
    let now = conn.now().await?;
    fence_and_advance(conn, &key, now, &events).await?;
    let old_segment = thread_segment(conn, &key, &thread_id)
        .await?
        .ok_or_else(|| thread_not_found(&key, &thread_id))?;
    insert_events(conn, &key, &events, now).await?;
    let segment_id = new_segment(conn, &key, &thread_id, None, Some(old_segment)).await?;
    append_messages(conn, &key, segment_id, &messages).await?;
    conn.execute(
        "UPDATE turn_thread SET segment_id = $4, usage = $5 WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
        &params![
            &key.session_id,
            &key.turn_id,
            &thread_id,
            segment_id,
            Param::json(&usage)?
        ],
    )
    .await?;
    Ok(())
}

/// One conditional update: the mark goes on the running turn only, and its seq never goes down.
pub(crate) async fn mark_live_stream<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    mark: LiveStreamMark,
) -> StoreResult<()> {
    let seq = rules::seq_to_db(mark.seq)?;
    let open = (!mark.open_messages.is_empty()).then_some(&mark.open_messages);
    let marked: Option<(i64,)> = conn
        .fetch_optional(
            "UPDATE turn SET streamed_seq = CASE WHEN streamed_seq < $4 THEN $4 ELSE streamed_seq END, \
             open_messages = $5 \
             WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3 AND status = 'running' RETURNING last_seq",
            &params![
                &key.tenant_id,
                &key.session_id,
                &key.turn_id,
                seq,
                Param::opt_json(open)?
            ],
        )
        .await?;
    match marked {
        Some(_) => Ok(()),
        None => Err(super::turns::not_running(conn, &key).await?),
    }
}

pub(crate) async fn patch_mcp_servers<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    servers: Vec<McpServerInitInfo>,
) -> StoreResult<()> {
    let now = conn.now().await?;
    fence(conn, &key, now).await?;
    let (current,): (Option<Json<BTreeMap<String, McpServerInitInfo>>>,) = conn
        .fetch_one(
            "SELECT mcp_servers FROM turn WHERE session_id = $1 AND turn_id = $2",
            &params![&key.session_id, &key.turn_id],
        )
        .await?;
    let mut merged = current.map(|json| json.0).unwrap_or_default();
    for server in servers {
        merged.insert(server.id.clone(), server);
    }
    conn.execute(
        "UPDATE turn SET mcp_servers = $3 WHERE session_id = $1 AND turn_id = $2",
        &params![&key.session_id, &key.turn_id, Param::json(&merged)?],
    )
    .await?;
    Ok(())
}

/// Records the sandbox the turn runs in (replacing one that was gone), fenced like every turn write.
pub(crate) async fn set_sandbox_info<C: SessionSql>(conn: &mut C, key: TurnKey, info: SandboxInfo) -> StoreResult<()> {
    let now = conn.now().await?;
    fence(conn, &key, now).await?;
    conn.execute(
        "UPDATE turn SET sandbox_info = $3 WHERE session_id = $1 AND turn_id = $2",
        &params![&key.session_id, &key.turn_id, Param::json(&info)?],
    )
    .await?;
    Ok(())
}

/// Sets one key of a thread's capability state, fenced like every turn write.
pub(crate) async fn patch_thread_capability_state<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    thread_id: ThreadId,
    state_key: String,
    state: Value,
) -> StoreResult<()> {
    let now = conn.now().await?;
    fence(conn, &key, now).await?;
    set_capability_key(conn, &key, &thread_id, state_key, state).await
}

/// Sets one key in place when the engine can name it as a path: the runtime writes a key before every tool
/// step, so a read and a rewrite of the whole map would cost a statement more each time. Other keys rewrite
/// the whole map. The caller has fenced the turn.
async fn set_capability_key<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    thread_id: &ThreadId,
    state_key: String,
    state: Value,
) -> StoreResult<()> {
    let Some(path) = C::capability_key_path(&state_key) else {
        let current = read_capability_state(conn, key, thread_id)
            .await?
            .ok_or_else(|| thread_not_found(key, thread_id))?;
        let mut map = current.unwrap_or_default();
        map.insert(state_key, state);
        conn.execute(
            "UPDATE turn_thread SET capability_state = $4 WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
            &params![&key.session_id, &key.turn_id, thread_id, Param::json(&map)?],
        )
        .await?;
        return Ok(());
    };
    let updated: Option<(String,)> = conn
        .fetch_optional(
            &format!(
                "UPDATE turn_thread SET capability_state = {} \
                 WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3 RETURNING thread_id",
                C::SET_CAPABILITY_KEY
            ),
            &params![&key.session_id, &key.turn_id, thread_id, Param::json(&state)?, path],
        )
        .await?;
    updated.ok_or_else(|| thread_not_found(key, thread_id))?;
    Ok(())
}
