// The session store's SQL, shared by the SQLite and Postgres backends: this file is compiled once inside
// each backend module (`#[path]`), where `super::Db`, `super::Store` and the few dialect hooks resolve to
// that backend. Everything here is plain SQL both engines accept, so the backends cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use serde_json::{Map, Value};
use sqlx::types::Json;
use sqlx::{QueryBuilder, Transaction};
use trueforge_protocol::{
    AgentInfo, AgentParent, AgentThreadSnapshot, ContextMessage, CurrentContextUsage, McpServerInitInfo, SessionAgent,
    SessionEvent, SubAgentCompletion, TurnInputItem, TurnState,
};

use super::{Db, SEARCH_CONDITION, Store, clock, search_expression};
use crate::error::{StoreError, StoreResult, is_unique_violation};
use crate::session::model::*;
use crate::session::page::{self, Cursor};
use crate::session::rules;
use crate::session::search;
use crate::session::store::SessionStore;
use crate::time::Timestamp;

type Tx = Transaction<'static, Db>;

/// Rows per multi-row INSERT: far below SQLite's bound-parameter limit.
const INSERT_CHUNK: usize = 500;

const SESSION_COLUMNS: &str =
    "tenant_id, session_id, created_by, agent, title, last_turn_id, created_at, updated_at, custom";
const TURN_COLUMNS: &str = "ord, tenant_id, session_id, turn_id, first_turn_id, ancestor_ids, previous_turn_id, \
    state, input, custom, lease_owner, lease_expires_at, last_seq, created_at, updated_at";

#[derive(sqlx::FromRow)]
struct SessionRow {
    tenant_id: String,
    session_id: String,
    created_by: String,
    agent: Json<SessionAgent>,
    title: Option<String>,
    last_turn_id: Option<String>,
    created_at: i64,
    updated_at: i64,
    custom: Option<Json<Value>>,
}

impl From<SessionRow> for SessionRecord {
    fn from(row: SessionRow) -> Self {
        Self {
            tenant_id: row.tenant_id,
            session_id: row.session_id,
            created_by: row.created_by,
            agent: row.agent.0,
            title: row.title,
            last_turn_id: row.last_turn_id,
            created_at: Timestamp(row.created_at),
            updated_at: Timestamp(row.updated_at),
            custom: row.custom.map(|custom| custom.0),
        }
    }
}

#[derive(sqlx::FromRow)]
struct TurnRow {
    ord: i64,
    tenant_id: String,
    session_id: String,
    turn_id: String,
    first_turn_id: String,
    ancestor_ids: Json<Vec<String>>,
    previous_turn_id: Option<String>,
    state: Json<TurnState>,
    input: Json<Vec<TurnInputItem>>,
    custom: Option<Json<Value>>,
    lease_owner: Option<String>,
    lease_expires_at: Option<i64>,
    last_seq: i64,
    created_at: i64,
    updated_at: i64,
}

impl From<TurnRow> for TurnSummary {
    fn from(row: TurnRow) -> Self {
        let lease = match (row.lease_owner, row.lease_expires_at) {
            (Some(owner), Some(expires_at)) => Some(Lease {
                owner,
                expires_at: Timestamp(expires_at),
            }),
            _ => None,
        };
        Self {
            tenant_id: row.tenant_id,
            session_id: row.session_id,
            turn_id: row.turn_id,
            first_turn_id: row.first_turn_id,
            ancestor_ids: row.ancestor_ids.0,
            previous_turn_id: row.previous_turn_id,
            state: row.state.0,
            input: row.input.0,
            custom: row.custom.map(|custom| custom.0),
            lease,
            last_seq: u64::try_from(row.last_seq).unwrap_or(0),
            created_at: Timestamp(row.created_at),
            updated_at: Timestamp(row.updated_at),
        }
    }
}

#[derive(sqlx::FromRow)]
struct ThreadRow {
    thread_id: String,
    segment_id: i64,
    parent: Option<Json<AgentParent>>,
    agent_info: Option<Json<AgentInfo>>,
    completion: Option<Json<SubAgentCompletion>>,
    usage: Json<CurrentContextUsage>,
    capability_state: Option<Json<Map<String, Value>>>,
}

#[derive(sqlx::FromRow)]
struct HistoryRow {
    message_id: i64,
    turn_id: String,
    pos: i64,
    body: Json<ContextMessage>,
    active: i64,
}

impl From<HistoryRow> for HistoryEntry {
    fn from(row: HistoryRow) -> Self {
        Self {
            message_id: row.message_id,
            turn_id: row.turn_id,
            position: row.pos,
            active: row.active != 0,
            message: row.body.0,
        }
    }
}

fn turn_not_found(key: &TurnKey) -> StoreError {
    StoreError::TurnNotFound {
        turn_id: key.turn_id.clone(),
    }
}

fn thread_not_found(key: &TurnKey, thread_id: &str) -> StoreError {
    StoreError::ThreadNotFound {
        turn_id: key.turn_id.clone(),
        thread_id: thread_id.to_string(),
    }
}

fn seq_from_db(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}

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
async fn fence(tx: &mut Tx, key: &TurnKey, now: Timestamp) -> StoreResult<u64> {
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

async fn thread_segment(tx: &mut Tx, key: &TurnKey, thread_id: &str) -> StoreResult<Option<i64>> {
    Ok(sqlx::query_scalar(
        "SELECT segment_id FROM turn_thread WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3",
    )
    .bind(&key.session_id)
    .bind(&key.turn_id)
    .bind(thread_id)
    .fetch_optional(&mut **tx)
    .await?)
}

async fn new_segment(
    tx: &mut Tx,
    key: &TurnKey,
    thread_id: &str,
    parent: Option<i64>,
    supersedes: Option<i64>,
) -> StoreResult<i64> {
    let parent_len: i64 = match parent {
        None => 0,
        Some(parent) => {
            sqlx::query_scalar("SELECT len FROM context_segment WHERE segment_id = $1")
                .bind(parent)
                .fetch_one(&mut **tx)
                .await?
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
async fn append_messages(tx: &mut Tx, key: &TurnKey, segment_id: i64, messages: &[ContextMessage]) -> StoreResult<()> {
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
async fn load_contexts(tx: &mut Tx, key: &TurnKey) -> StoreResult<BTreeMap<String, Vec<ContextMessage>>> {
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
    .await?;
    Ok(true)
}

async fn insert_events(tx: &mut Tx, key: &TurnKey, events: &[StoredEvent], now: Timestamp) -> StoreResult<()> {
    for chunk in events.chunks(INSERT_CHUNK) {
        let mut existing = QueryBuilder::<Db>::new("SELECT event_id FROM turn_event WHERE session_id = ");
        existing
            .push_bind(&key.session_id)
            .push(" AND turn_id = ")
            .push_bind(&key.turn_id)
            .push(" AND event_id IN (");
        let mut ids = existing.separated(", ");
        for stored in chunk {
            ids.push_bind(stored.event.id());
        }
        existing.push(")");
        let duplicate: Option<String> = existing.build_query_scalar().fetch_optional(&mut **tx).await?;
        if let Some(event_id) = duplicate {
            return Err(StoreError::EventAlreadyExists {
                turn_id: key.turn_id.clone(),
                event_id,
            });
        }
        let mut insert =
            QueryBuilder::<Db>::new("INSERT INTO turn_event (session_id, turn_id, seq, event_id, event, created_at) ");
        let mut rows = Vec::with_capacity(chunk.len());
        for stored in chunk {
            rows.push((rules::seq_to_db(stored.seq)?, stored));
        }
        insert.push_values(rows, |mut row, (seq, stored)| {
            row.push_bind(&key.session_id)
                .push_bind(&key.turn_id)
                .push_bind(seq)
                .push_bind(stored.event.id())
                .push_bind(Json(&stored.event))
                .push_bind(now.millis());
        });
        insert.build().execute(&mut **tx).await.map_err(|error| {
            if is_unique_violation(&error) {
                StoreError::EventSequenceConflict {
                    turn_id: key.turn_id.clone(),
                    seq: chunk[0].seq,
                    last_seq: chunk[0].seq,
                }
            } else {
                error.into()
            }
        })?;
    }
    Ok(())
}

async fn require_turn(tx: &mut Tx, key: &TurnKey) -> StoreResult<()> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT ord FROM turn WHERE tenant_id = $1 AND session_id = $2 AND turn_id = $3")
            .bind(&key.tenant_id)
            .bind(&key.session_id)
            .bind(&key.turn_id)
            .fetch_optional(&mut **tx)
            .await?;
    found.map(|_| ()).ok_or_else(|| turn_not_found(key))
}

/// Every body of a thread's lineage (parents and superseded segments), flagged active when it is in the
/// current chain, optionally filtered by a full-text condition on `$4`.
async fn history(
    tx: &mut Tx,
    key: &TurnKey,
    thread_id: &str,
    search: Option<(String, u32)>,
) -> StoreResult<Vec<HistoryEntry>> {
    require_turn(tx, key).await?;
    let segment_id = thread_segment(tx, key, thread_id)
        .await?
        .ok_or_else(|| thread_not_found(key, thread_id))?;
    let mut sql = String::from(
        "WITH RECURSIVE chain (segment_id, parent_segment_id, parent_len, cap) AS ( \
             SELECT segment_id, parent_segment_id, parent_len, len FROM context_segment WHERE segment_id = $1 \
           UNION ALL \
             SELECT s.segment_id, s.parent_segment_id, s.parent_len, c.parent_len \
             FROM chain c JOIN context_segment s ON s.segment_id = c.parent_segment_id \
         ), lineage (segment_id, parent_segment_id, supersedes_segment_id) AS ( \
             SELECT segment_id, parent_segment_id, supersedes_segment_id FROM context_segment WHERE segment_id = $1 \
           UNION \
             SELECT s.segment_id, s.parent_segment_id, s.supersedes_segment_id FROM lineage l \
             JOIN context_segment s ON s.segment_id IN (l.parent_segment_id, l.supersedes_segment_id) \
         ) \
         SELECT m.message_id, m.turn_id, m.pos, m.body, \
                CAST(CASE WHEN c.segment_id IS NULL THEN 0 ELSE 1 END AS BIGINT) AS active \
         FROM lineage l JOIN context_message m ON m.segment_id = l.segment_id \
         LEFT JOIN chain c ON c.segment_id = m.segment_id AND m.pos < c.cap \
         WHERE m.session_id = $2",
    );
    let (query, limit) = match search {
        Some((query, limit)) => {
            sql.push_str(" AND ");
            sql.push_str(SEARCH_CONDITION);
            (query, i64::from(limit))
        }
        None => (String::new(), i64::MAX),
    };
    sql.push_str(" ORDER BY m.message_id LIMIT $3");
    let mut statement = sqlx::query_as::<_, HistoryRow>(&sql)
        .bind(segment_id)
        .bind(&key.session_id)
        .bind(limit);
    if !query.is_empty() {
        statement = statement.bind(query);
    }
    let rows = statement.fetch_all(&mut **tx).await?;
    Ok(rows.into_iter().map(HistoryEntry::from).collect())
}

#[async_trait]
impl SessionStore for Store {
    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord> {
        rules::require_id("session", &session.session_id)?;
        let mut tx = self.write_tx().await?;
        let now = clock(&mut tx).await?;
        let agent_id = match &session.agent {
            SessionAgent::Reference { id, .. } => Some(id.clone()),
            _ => None,
        };
        let row: SessionRow = sqlx::query_as(&format!(
            "INSERT INTO session (session_id, tenant_id, created_by, agent, agent_id, custom, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING {SESSION_COLUMNS}"
        ))
        .bind(&session.session_id)
        .bind(&session.tenant_id)
        .bind(&session.created_by)
        .bind(Json(&session.agent))
        .bind(agent_id)
        .bind(session.custom.as_ref().map(Json))
        .bind(now.millis())
        .fetch_one(&mut *tx)
        .await
        .map_err(|error| {
            if is_unique_violation(&error) {
                StoreError::SessionAlreadyExists {
                    session_id: session.session_id.clone(),
                }
            } else {
                error.into()
            }
        })?;
        tx.commit().await?;
        Ok(row.into())
    }

    async fn delete_session(&self, tenant_id: &str, session_id: &str) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
        // Lock order: turn rows before the session row, the order every turn-scoped write takes them (its
        // fence locks the turn, its inserts then key-share-lock the session). Deleting the session first
        // and cascading to the turns deadlocks against such a writer on Postgres.
        sqlx::query("DELETE FROM turn WHERE tenant_id = $1 AND session_id = $2")
            .bind(tenant_id)
            .bind(session_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM session WHERE tenant_id = $1 AND session_id = $2")
            .bind(tenant_id)
            .bind(session_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn get_session(&self, tenant_id: &str, session_id: &str) -> StoreResult<Option<SessionRecord>> {
        let row: Option<SessionRow> = sqlx::query_as(&format!(
            "SELECT {SESSION_COLUMNS} FROM session WHERE tenant_id = $1 AND session_id = $2"
        ))
        .bind(tenant_id)
        .bind(session_id)
        .fetch_optional(self.read_pool())
        .await?;
        Ok(row.map(SessionRecord::from))
    }

    async fn update_session(
        &self,
        tenant_id: &str,
        session_id: &str,
        update: SessionUpdate,
    ) -> StoreResult<SessionRecord> {
        let mut tx = self.write_tx().await?;
        let now = clock(&mut tx).await?;
        let current: Option<SessionRow> = sqlx::query_as(&format!(
            "SELECT {SESSION_COLUMNS} FROM session WHERE tenant_id = $1 AND session_id = $2"
        ))
        .bind(tenant_id)
        .bind(session_id)
        .fetch_optional(&mut *tx)
        .await?;
        let current = current.ok_or_else(|| StoreError::SessionNotFound {
            session_id: session_id.to_string(),
        })?;
        let agent = match update.agent_spec {
            None => current.agent.0,
            Some(spec) => match current.agent.0 {
                SessionAgent::Inline { .. } => SessionAgent::Inline { spec },
                _ => {
                    return Err(StoreError::InvalidInput(
                        "the agent of a session bound to a named agent cannot be replaced".into(),
                    ));
                }
            },
        };
        let title = update.title.unwrap_or(current.title);
        let row: SessionRow = sqlx::query_as(&format!(
            "UPDATE session SET agent = $3, title = $4, \
             updated_at = CASE WHEN updated_at + 1 > $5 THEN updated_at + 1 ELSE $5 END \
             WHERE tenant_id = $1 AND session_id = $2 RETURNING {SESSION_COLUMNS}"
        ))
        .bind(tenant_id)
        .bind(session_id)
        .bind(Json(&agent))
        .bind(title)
        .bind(now.millis())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(row.into())
    }

    async fn list_sessions(
        &self,
        tenant_id: &str,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionRecord>> {
        let after = page::sessions_cursor(page::open_page(page)?, filter.order)?;
        let desc = filter.order == SortOrder::Desc;
        let mut query = QueryBuilder::<Db>::new(format!("SELECT {SESSION_COLUMNS} FROM session WHERE tenant_id = "));
        query.push_bind(tenant_id);
        if let Some(from) = filter.created_from {
            query.push(" AND created_at >= ").push_bind(from.millis());
        }
        if let Some(to) = filter.created_to {
            query.push(" AND created_at <= ").push_bind(to.millis());
        }
        if let Some(agent_id) = &filter.agent_id {
            query.push(" AND agent_id = ").push_bind(agent_id);
        }
        if let Some(created_by) = &filter.created_by {
            query.push(" AND created_by = ").push_bind(created_by);
        }
        if let Some((updated_at, session_id)) = after {
            let op = if desc { " < " } else { " > " };
            query.push(" AND (updated_at").push(op).push_bind(updated_at);
            query.push(" OR (updated_at = ").push_bind(updated_at);
            query.push(" AND session_id").push(op).push_bind(session_id).push("))");
        }
        let direction = if desc { "DESC" } else { "ASC" };
        query.push(format!(
            " ORDER BY updated_at {direction}, session_id {direction} LIMIT "
        ));
        query.push_bind(i64::from(page.limit) + 1);
        let rows: Vec<SessionRow> = query.build_query_as().fetch_all(self.read_pool()).await?;
        let rows: Vec<SessionRecord> = rows.into_iter().map(SessionRecord::from).collect();
        let (data, next_page_token) = page::finish_page(rows, page.limit, |s| Cursor::Sessions {
            desc,
            updated_at: s.updated_at.millis(),
            session_id: s.session_id.clone(),
        });
        Ok(Page {
            data,
            limit: page.limit,
            next_page_token,
        })
    }

    async fn create_turn(&self, turn: NewTurn) -> StoreResult<TurnSummary> {
        rules::require_id("turn", &turn.turn_id)?;
        if let Some(lease) = &turn.lease {
            rules::check_ttl(lease.ttl_ms)?;
        }
        let mut tx = self.write_tx().await?;
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
                let row =
                    load_turn_row(&mut tx, &previous_key)
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
                    0, $10, $11, $12, $12 \
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
        tx.commit().await?;
        Ok(row.into())
    }

    async fn get_turn(&self, key: &TurnKey) -> StoreResult<Option<TurnRecord>> {
        let mut tx = self.read_tx().await?;
        let record = load_record(&mut tx, key).await?;
        tx.commit().await?;
        Ok(record)
    }

    async fn list_turns(
        &self,
        tenant_id: &str,
        session_id: &str,
        page: &PageRequest,
    ) -> StoreResult<Page<TurnSummary>> {
        let after = page::turns_cursor(page::open_page(page)?)?.unwrap_or(0);
        let mut tx = self.read_tx().await?;
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

    async fn freeze_and_get_turn(&self, key: &TurnKey, freeze: FreezeTurn) -> StoreResult<TurnRecord> {
        let mut tx = self.write_tx().await?;
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

    async fn update_turn_state(&self, key: &TurnKey, state: TurnState, done: TurnDone) -> StoreResult<TurnState> {
        let mut tx = self.write_tx().await?;
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

    async fn append_events(&self, key: &TurnKey, events: Vec<StoredEvent>) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
        let now = clock(&mut tx).await?;
        let last_seq = fence(&mut tx, key, now).await?;
        let events = rules::order_event_batch(&key.turn_id, events, last_seq)?;
        if let Some(last) = events.last() {
            insert_events(&mut tx, key, &events, now).await?;
            sqlx::query("UPDATE turn SET last_seq = $3 WHERE session_id = $1 AND turn_id = $2")
                .bind(&key.session_id)
                .bind(&key.turn_id)
                .bind(rules::seq_to_db(last.seq)?)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn list_turn_events(
        &self,
        key: &TurnKey,
        order: SortOrder,
        page: &PageRequest,
    ) -> StoreResult<Page<StoredEvent>> {
        let after = page::turn_events_cursor(page::open_page(page)?, order)?;
        let desc = order == SortOrder::Desc;
        let mut tx = self.read_tx().await?;
        require_turn(&mut tx, key).await?;
        let sql = if desc {
            "SELECT seq, event FROM turn_event WHERE session_id = $1 AND turn_id = $2 AND seq < $3 ORDER BY seq DESC LIMIT $4"
        } else {
            "SELECT seq, event FROM turn_event WHERE session_id = $1 AND turn_id = $2 AND seq > $3 ORDER BY seq ASC LIMIT $4"
        };
        let bound = match after {
            Some(seq) => rules::seq_to_db(seq)?,
            None if desc => i64::MAX,
            None => 0,
        };
        let rows: Vec<(i64, Json<SessionEvent>)> = sqlx::query_as(sql)
            .bind(&key.session_id)
            .bind(&key.turn_id)
            .bind(bound)
            .bind(i64::from(page.limit) + 1)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        let rows: Vec<StoredEvent> = rows
            .into_iter()
            .map(|(seq, event)| StoredEvent {
                seq: seq_from_db(seq),
                event: event.0,
            })
            .collect();
        let (data, next_page_token) = page::finish_page(rows, page.limit, |e| Cursor::TurnEvents { desc, seq: e.seq });
        Ok(Page {
            data,
            limit: page.limit,
            next_page_token,
        })
    }

    async fn list_turn_events_after(&self, key: &TurnKey, after_seq: u64, limit: u32) -> StoreResult<Vec<StoredEvent>> {
        page::open_page(&PageRequest::first(limit))?;
        let mut tx = self.read_tx().await?;
        require_turn(&mut tx, key).await?;
        let rows: Vec<(i64, Json<SessionEvent>)> = sqlx::query_as(
            "SELECT seq, event FROM turn_event WHERE session_id = $1 AND turn_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
        )
        .bind(&key.session_id)
        .bind(&key.turn_id)
        .bind(i64::try_from(after_seq).unwrap_or(i64::MAX))
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(rows
            .into_iter()
            .map(|(seq, event)| StoredEvent {
                seq: seq_from_db(seq),
                event: event.0,
            })
            .collect())
    }

    async fn list_session_events(
        &self,
        tenant_id: &str,
        session_id: &str,
        last_turn_id: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionEventItem>> {
        let cursor = page::feed_cursor(page::open_page(page)?)?;
        let mut tx = self.read_tx().await?;
        let tip: Option<(Option<String>,)> =
            sqlx::query_as("SELECT last_turn_id FROM session WHERE tenant_id = $1 AND session_id = $2")
                .bind(tenant_id)
                .bind(session_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((tip,)) = tip else {
            return Err(StoreError::SessionNotFound {
                session_id: session_id.to_string(),
            });
        };
        let (anchor, after) = match cursor {
            Some(cursor) => (Some(cursor.anchor), cursor.after),
            None => (last_turn_id.map(str::to_string).or(tip), None),
        };
        let Some(anchor) = anchor else {
            return Ok(Page {
                data: Vec::new(),
                limit: page.limit,
                next_page_token: None,
            });
        };
        require_turn(&mut tx, &TurnKey::new(tenant_id, session_id, &anchor)).await?;
        let (after_depth, after_seq) = match after {
            Some((depth, seq)) => (depth, rules::seq_to_db(seq)?),
            None => (-1, 0),
        };
        let rows: Vec<(String, i64, i64, Json<SessionEvent>)> = sqlx::query_as(
            "WITH RECURSIVE branch (turn_id, depth) AS ( \
                 SELECT turn_id, CAST(0 AS BIGINT) FROM turn WHERE session_id = $1 AND turn_id = $2 \
               UNION ALL \
                 SELECT t.previous_turn_id, b.depth + 1 FROM branch b \
                 JOIN turn t ON t.session_id = $1 AND t.turn_id = b.turn_id \
                 WHERE t.previous_turn_id IS NOT NULL \
             ) \
             SELECT b.turn_id, b.depth, e.seq, e.event FROM branch b \
             JOIN turn_event e ON e.session_id = $1 AND e.turn_id = b.turn_id \
             WHERE b.depth > $3 OR (b.depth = $3 AND e.seq < $4) \
             ORDER BY b.depth ASC, e.seq DESC LIMIT $5",
        )
        .bind(session_id)
        .bind(&anchor)
        .bind(after_depth)
        .bind(after_seq)
        .bind(i64::from(page.limit) + 1)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let rows: Vec<(i64, SessionEventItem)> = rows
            .into_iter()
            .map(|(turn_id, depth, seq, event)| {
                (
                    depth,
                    SessionEventItem {
                        turn_id,
                        seq: seq_from_db(seq),
                        event: event.0,
                    },
                )
            })
            .collect();
        let (rows, next_page_token) = page::finish_page(rows, page.limit, |(depth, item)| Cursor::SessionFeed {
            anchor: anchor.clone(),
            depth: *depth,
            seq: item.seq,
        });
        Ok(Page {
            data: rows.into_iter().map(|(_, item)| item).collect(),
            limit: page.limit,
            next_page_token,
        })
    }

    async fn add_threads(&self, key: &TurnKey, threads: Vec<AgentThreadSnapshot>) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
        let now = clock(&mut tx).await?;
        fence(&mut tx, key, now).await?;
        let mut seen = BTreeSet::new();
        for thread in &threads {
            rules::require_id("thread", &thread.thread_id)?;
            if !seen.insert(thread.thread_id.clone())
                || thread_segment(&mut tx, key, &thread.thread_id).await?.is_some()
            {
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

    async fn remove_threads(&self, key: &TurnKey, thread_ids: &[String]) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
        let now = clock(&mut tx).await?;
        fence(&mut tx, key, now).await?;
        for thread_id in thread_ids {
            let removed =
                sqlx::query("DELETE FROM turn_thread WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3")
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

    async fn append_to_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &str,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
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

    async fn overwrite_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &str,
        messages: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
        let now = clock(&mut tx).await?;
        fence(&mut tx, key, now).await?;
        let old_segment = thread_segment(&mut tx, key, thread_id)
            .await?
            .ok_or_else(|| thread_not_found(key, thread_id))?;
        let segment_id = new_segment(&mut tx, key, thread_id, None, Some(old_segment)).await?;
        append_messages(&mut tx, key, segment_id, &messages).await?;
        sqlx::query("UPDATE turn_thread SET segment_id = $4, usage = $5 WHERE session_id = $1 AND turn_id = $2 AND thread_id = $3")
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

    async fn patch_mcp_servers(&self, key: &TurnKey, servers: Vec<McpServerInitInfo>) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
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

    async fn patch_sandbox_info(&self, key: &TurnKey, sandbox: SandboxInfo) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
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

    async fn patch_thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &str,
        state_key: &str,
        state: Value,
    ) -> StoreResult<()> {
        let mut tx = self.write_tx().await?;
        let now = clock(&mut tx).await?;
        fence(&mut tx, key, now).await?;
        let current: Option<(Option<Json<Map<String, Value>>>,)> = sqlx::query_as(
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

    async fn thread_history(&self, key: &TurnKey, thread_id: &str) -> StoreResult<Vec<HistoryEntry>> {
        let mut tx = self.read_tx().await?;
        let entries = history(&mut tx, key, thread_id, None).await?;
        tx.commit().await?;
        Ok(entries)
    }

    async fn search_thread_history(
        &self,
        key: &TurnKey,
        thread_id: &str,
        query: &str,
        limit: u32,
    ) -> StoreResult<Vec<HistoryEntry>> {
        let terms = search::query_terms(query)?;
        page::open_page(&PageRequest::first(limit))?;
        let mut tx = self.read_tx().await?;
        let entries = history(&mut tx, key, thread_id, Some((search_expression(&terms), limit))).await?;
        tx.commit().await?;
        Ok(entries)
    }

    async fn renew_lease(&self, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        rules::check_ttl(ttl_ms)?;
        let mut tx = self.write_tx().await?;
        let now = clock(&mut tx).await?;
        fence(&mut tx, key, now).await?;
        let expires_at = now.plus_millis(ttl_ms);
        let renewed = sqlx::query(
            "UPDATE turn SET lease_expires_at = $5 WHERE session_id = $1 AND turn_id = $2 AND tenant_id = $3 \
             AND lease_owner = $4",
        )
        .bind(&key.session_id)
        .bind(&key.turn_id)
        .bind(&key.tenant_id)
        .bind(owner)
        .bind(expires_at.millis())
        .execute(&mut *tx)
        .await?;
        if renewed.rows_affected() == 0 {
            let holder: Option<String> =
                sqlx::query_scalar("SELECT lease_owner FROM turn WHERE session_id = $1 AND turn_id = $2")
                    .bind(&key.session_id)
                    .bind(&key.turn_id)
                    .fetch_one(&mut *tx)
                    .await?;
            return Err(StoreError::LeaseHeldByOther {
                turn_id: key.turn_id.clone(),
                owner: holder,
            });
        }
        tx.commit().await?;
        Ok(Lease {
            owner: owner.to_string(),
            expires_at,
        })
    }

    async fn claim_expired_lease(&self, key: &TurnKey, new_owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        rules::check_ttl(ttl_ms)?;
        let mut tx = self.write_tx().await?;
        let now = clock(&mut tx).await?;
        fence(&mut tx, key, now).await?;
        let expires_at = now.plus_millis(ttl_ms);
        let claimed = sqlx::query(
            "UPDATE turn SET lease_owner = $4, lease_expires_at = $5 WHERE session_id = $1 AND turn_id = $2 \
             AND tenant_id = $3 AND (lease_expires_at IS NULL OR lease_expires_at < $6)",
        )
        .bind(&key.session_id)
        .bind(&key.turn_id)
        .bind(&key.tenant_id)
        .bind(new_owner)
        .bind(expires_at.millis())
        .bind(now.millis())
        .execute(&mut *tx)
        .await?;
        if claimed.rows_affected() == 0 {
            let holder: Option<String> =
                sqlx::query_scalar("SELECT lease_owner FROM turn WHERE session_id = $1 AND turn_id = $2")
                    .bind(&key.session_id)
                    .bind(&key.turn_id)
                    .fetch_one(&mut *tx)
                    .await?;
            return Err(StoreError::LeaseHeldByOther {
                turn_id: key.turn_id.clone(),
                owner: holder,
            });
        }
        tx.commit().await?;
        Ok(Lease {
            owner: new_owner.to_string(),
            expires_at,
        })
    }

    async fn list_expired_leases(&self, limit: u32) -> StoreResult<Vec<ExpiredLease>> {
        page::open_page(&PageRequest::first(limit))?;
        let mut tx = self.read_tx().await?;
        let now = clock(&mut tx).await?;
        let rows: Vec<(String, String, String, String, i64)> = sqlx::query_as(
            "SELECT tenant_id, session_id, turn_id, lease_owner, lease_expires_at FROM turn \
             WHERE status = 'running' AND lease_expires_at IS NOT NULL AND lease_owner IS NOT NULL \
             AND lease_expires_at < $1 ORDER BY lease_expires_at, session_id, turn_id LIMIT $2",
        )
        .bind(now.millis())
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(rows
            .into_iter()
            .map(|(tenant_id, session_id, turn_id, owner, expired_at)| ExpiredLease {
                tenant_id,
                session_id,
                turn_id,
                owner,
                expired_at: Timestamp(expired_at),
            })
            .collect())
    }
}

/// The usage a new turn's appends leave on a thread: the last one given, if any.
fn appended_usage(turn: &NewTurn, thread_id: &str) -> Option<CurrentContextUsage> {
    turn.context_appends
        .iter()
        .filter(|append| append.thread_id == thread_id)
        .filter_map(|append| append.current_context_usage)
        .next_back()
}

#[allow(clippy::too_many_arguments)]
async fn insert_thread(
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
