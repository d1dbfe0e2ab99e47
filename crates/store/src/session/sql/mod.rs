//! The SQL backends of the session store: one implementation over [`Database`], on SQLite (WAL, one writer
//! connection with `BEGIN IMMEDIATE`, concurrent readers, FTS5 recall) and Postgres (conditional updates as
//! fences with row locks, the database clock, full-text recall). `ops/` holds every statement, by concept;
//! `sqlite.rs` and `postgres.rs` supply the dialect hooks ([`SessionSql`]).
//!
//! Each store call is one operation in one transaction, on SQLite one hand-off to the connection's thread.
//! The one exception is a write refused for an event id the turn already stored: naming that id takes a
//! second, read-only operation once the failed transaction is gone.

mod ops;
mod postgres;
mod sqlite;

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Map, Value};
use trueforge_protocol::{
    AgentThreadSnapshot, ContextMessage, CurrentContextUsage, IdempotencyKey, McpServerInitInfo, SubAgentCompletion,
    TurnState,
};

use self::ops::{context, events, history, leases, sessions, turns};
use crate::db::{PostgresDb, SqliteDb};
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::rules;
use crate::session::store::SessionStore;
use crate::sql::{Access, Database, Sql};

/// How many times a write the database refused for a collision with a concurrent one is run again.
const TRANSIENT_RETRIES: u32 = 3;

/// The session store on a SQL database.
#[derive(Clone, Debug)]
pub struct SqlSessionStore<D> {
    db: D,
    /// Set on a [`fenced`](SessionStore::fenced) store: the turn whose writes carry a lease epoch, and
    /// that epoch.
    fence: Option<(TurnKey, u64)>,
}

/// The session store on a SQLite file (local mode).
pub type SqliteSessionStore = SqlSessionStore<SqliteDb>;

/// The session store on Postgres 15+ (hosted mode).
pub type PostgresSessionStore = SqlSessionStore<PostgresDb>;

impl<D> SqlSessionStore<D> {
    pub fn new(db: D) -> Self {
        Self { db, fence: None }
    }

    /// The fence of a write to `key`: the epoch it must still hold, when this store is fenced for it.
    fn fence_of(&self, key: &TurnKey) -> Option<(TurnKey, u64)> {
        self.fence.as_ref().filter(|(turn, _)| turn == key).cloned()
    }
}

/// A turn-scoped write in one transaction, after the lease fence when it has one.
async fn write_turn<D, T, F>(db: &D, fence: Option<(TurnKey, u64)>, op: F) -> StoreResult<T>
where
    D: Database,
    D::Conn: SessionSql,
    T: Send + 'static,
    F: for<'c> FnOnce(&'c mut D::Conn) -> crate::sql::Op<'c, T> + Send + 'static,
{
    match fence {
        None => db.run(Access::Write, op).await,
        Some((key, epoch)) => {
            db.run(Access::Write, move |conn| {
                Box::pin(async move {
                    turns::check_lease_epoch(conn, &key, epoch).await?;
                    op(conn).await
                })
            })
            .await
        }
    }
}

/// What the session store's statements say differently per engine.
pub(crate) trait SessionSql: Sql {
    /// What ends a `SELECT` of one row to hold it until the transaction ends (`FOR UPDATE`, or nothing
    /// where a write transaction already excludes every other writer).
    const LOCK_ROW: &'static str;

    /// Sets key `$5` (a path from [`capability_key_path`](Self::capability_key_path)) of a thread's
    /// capability state to the JSON value `$4`, in place.
    const SET_CAPABILITY_KEY: &'static str;

    /// The path of one capability key for [`SET_CAPABILITY_KEY`](Self::SET_CAPABILITY_KEY); `None` when the
    /// engine cannot name the key that way (the whole map is then rewritten).
    fn capability_key_path(key: &str) -> Option<String>;

    /// The `metrics` object of a turn row's `state`, as JSON (NULL when the state has none).
    const TURN_METRICS: &'static str;

    /// A full-text filter on `$4`, a query made by [`search_expression`](Self::search_expression), in a
    /// query over the rows of session `$2`.
    const SEARCH_CONDITION: &'static str;

    /// The full-text query matching rows that hold every term.
    fn search_expression(terms: &[String]) -> String;
}

#[async_trait]
impl<D> SessionStore for SqlSessionStore<D>
where
    D: Database,
    D::Conn: SessionSql,
{
    async fn create_session(&self, session: NewSession) -> StoreResult<SessionRecord> {
        rules::require_id("session", &session.session_id)?;
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(sessions::create_session(conn, session))
            })
            .await
    }

    async fn delete_session(&self, tenant_id: &TenantId, session_id: &SessionId) -> StoreResult<()> {
        let (tenant_id, session_id) = (tenant_id.to_owned(), session_id.to_owned());
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(sessions::delete_session(conn, tenant_id, session_id))
            })
            .await
    }

    async fn get_session(&self, tenant_id: &TenantId, session_id: &SessionId) -> StoreResult<Option<SessionRecord>> {
        let (tenant_id, session_id) = (tenant_id.to_owned(), session_id.to_owned());
        self.db
            .run(Access::ReadOne, move |conn| {
                Box::pin(sessions::get_session(conn, tenant_id, session_id))
            })
            .await
    }

    async fn update_session(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> StoreResult<SessionRecord> {
        let (tenant_id, session_id) = (tenant_id.to_owned(), session_id.to_owned());
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(sessions::update_session(conn, tenant_id, session_id, update))
            })
            .await
    }

    async fn list_sessions(
        &self,
        tenant_id: &TenantId,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionRecord>> {
        let (tenant_id, filter, page) = (tenant_id.to_owned(), filter.clone(), page.clone());
        self.db
            .run(Access::ReadOne, move |conn| {
                Box::pin(sessions::list_sessions(conn, tenant_id, filter, page))
            })
            .await
    }

    async fn session_costs(
        &self,
        tenant_id: &TenantId,
        session_ids: &[SessionId],
    ) -> StoreResult<BTreeMap<SessionId, SessionCost>> {
        if session_ids.is_empty() {
            return Ok(BTreeMap::new());
        }
        let (tenant_id, session_ids) = (tenant_id.to_owned(), session_ids.to_vec());
        self.db
            .run(Access::ReadOne, move |conn| {
                Box::pin(sessions::session_costs(conn, tenant_id, session_ids))
            })
            .await
    }

    async fn create_turn(&self, turn: NewTurn) -> StoreResult<TurnSummary> {
        // Turn creation meets every other writer of the session on the session row; a write the database
        // refused for a collision wrote nothing and is simply run again.
        let mut attempts_left = TRANSIENT_RETRIES;
        loop {
            let attempt = turn.clone();
            match self
                .db
                .run(Access::Write, move |conn| Box::pin(turns::create_turn(conn, attempt)))
                .await
            {
                Err(StoreError::Transient(_)) if attempts_left > 0 => attempts_left -= 1,
                result => return result,
            }
        }
    }

    async fn turn_by_idempotency_key(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        key: &IdempotencyKey,
    ) -> StoreResult<Option<KeyedTurn>> {
        let (tenant_id, session_id, key) = (tenant_id.to_owned(), session_id.to_owned(), key.clone());
        self.db
            .run(Access::ReadOne, move |conn| {
                Box::pin(turns::turn_by_idempotency_key(conn, tenant_id, session_id, key))
            })
            .await
    }

    async fn get_turn(&self, key: &TurnKey) -> StoreResult<Option<TurnRecord>> {
        let key = key.clone();
        self.db
            .run(Access::Read, move |conn| Box::pin(turns::get_turn(conn, key)))
            .await
    }

    async fn get_turn_reusing(
        &self,
        key: &TurnKey,
        held: &BTreeMap<ThreadId, usize>,
    ) -> StoreResult<Option<ReusedTurnRecord>> {
        let (key, held) = (key.clone(), held.clone());
        self.db
            .run(Access::Read, move |conn| {
                Box::pin(turns::get_turn_reusing(conn, key, held))
            })
            .await
    }

    async fn get_turn_summary(&self, key: &TurnKey) -> StoreResult<Option<TurnSummary>> {
        let key = key.clone();
        self.db
            .run(Access::Read, move |conn| Box::pin(turns::get_turn_summary(conn, key)))
            .await
    }

    async fn list_turns(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        page: &PageRequest,
    ) -> StoreResult<Page<TurnSummary>> {
        let (tenant_id, session_id, page) = (tenant_id.to_owned(), session_id.to_owned(), page.clone());
        self.db
            .run(Access::Read, move |conn| {
                Box::pin(turns::list_turns(conn, tenant_id, session_id, page))
            })
            .await
    }

    async fn freeze_and_get_turn(&self, key: &TurnKey, freeze: FreezeTurn) -> StoreResult<TurnRecord> {
        let key = key.clone();
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(turns::freeze_and_get_turn(conn, key, freeze))
            })
            .await
    }

    async fn update_turn_state(&self, key: &TurnKey, state: TurnState, done: TurnDone) -> StoreResult<TurnState> {
        let key = key.clone();
        write_turn(&self.db, self.fence_of(&key), move |conn| {
            Box::pin(turns::update_turn_state(conn, key, state, done))
        })
        .await
    }

    async fn append_events(&self, key: &TurnKey, events: Vec<StoredEvent>) -> StoreResult<()> {
        let events = rules::order_event_batch(&key.turn_id, events, 0)?;
        let ids = events::event_ids(&events);
        let owned = key.clone();
        let written = write_turn(&self.db, self.fence_of(key), move |conn| {
            Box::pin(events::append_events(conn, owned, events))
        })
        .await;
        events::name_duplicate(&self.db, key, ids, written).await
    }

    async fn list_turn_events(
        &self,
        key: &TurnKey,
        order: SortOrder,
        page: &PageRequest,
    ) -> StoreResult<Page<StoredEvent>> {
        let (key, page) = (key.clone(), page.clone());
        self.db
            .run(Access::Read, move |conn| {
                Box::pin(events::list_turn_events(conn, key, order, page))
            })
            .await
    }

    async fn list_turn_events_after(&self, key: &TurnKey, after_seq: u64, limit: u32) -> StoreResult<Vec<StoredEvent>> {
        let key = key.clone();
        self.db
            .run(Access::Read, move |conn| {
                Box::pin(events::list_turn_events_after(conn, key, after_seq, limit))
            })
            .await
    }

    async fn list_session_events(
        &self,
        tenant_id: &TenantId,
        session_id: &SessionId,
        last_turn_id: Option<&TurnId>,
        page: &PageRequest,
    ) -> StoreResult<Page<SessionEventItem>> {
        let (tenant_id, session_id) = (tenant_id.to_owned(), session_id.to_owned());
        let (last_turn_id, page) = (last_turn_id.cloned(), page.clone());
        self.db
            .run(Access::Read, move |conn| {
                Box::pin(events::list_session_events(
                    conn,
                    tenant_id,
                    session_id,
                    last_turn_id,
                    page,
                ))
            })
            .await
    }

    async fn add_threads(&self, key: &TurnKey, threads: Vec<AgentThreadSnapshot>) -> StoreResult<()> {
        let key = key.clone();
        write_turn(&self.db, self.fence_of(&key), move |conn| {
            Box::pin(context::add_threads(conn, key, threads))
        })
        .await
    }

    async fn remove_threads(&self, key: &TurnKey, thread_ids: &[ThreadId]) -> StoreResult<()> {
        let key = key.clone();
        let thread_ids = thread_ids.to_vec();
        write_turn(&self.db, self.fence_of(&key), move |conn| {
            Box::pin(context::remove_threads(conn, key, thread_ids))
        })
        .await
    }

    async fn append_to_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> StoreResult<()> {
        let step = ThreadStep {
            thread_id: thread_id.to_owned(),
            events: Vec::new(),
            messages,
            usage,
            completion,
            state_patch: None,
        };
        let key = key.clone();
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(context::commit_thread_step(conn, key, step))
            })
            .await
    }

    async fn commit_thread_step(&self, key: &TurnKey, step: ThreadStep) -> StoreResult<()> {
        let mut step = step;
        step.events = rules::order_event_batch(&key.turn_id, std::mem::take(&mut step.events), 0)?;
        let ids = events::event_ids(&step.events);
        let owned = key.clone();
        let written = write_turn(&self.db, self.fence_of(key), move |conn| {
            Box::pin(context::commit_thread_step(conn, owned, step))
        })
        .await;
        events::name_duplicate(&self.db, key, ids, written).await
    }

    async fn overwrite_thread_context(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        events: Vec<StoredEvent>,
        messages: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> StoreResult<()> {
        let events = rules::order_event_batch(&key.turn_id, events, 0)?;
        let ids = events::event_ids(&events);
        let (owned, thread_id) = (key.clone(), thread_id.to_owned());
        let written = write_turn(&self.db, self.fence_of(key), move |conn| {
            Box::pin(context::overwrite_thread_context(
                conn, owned, thread_id, events, messages, usage,
            ))
        })
        .await;
        events::name_duplicate(&self.db, key, ids, written).await
    }

    async fn thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
    ) -> StoreResult<Option<Map<String, Value>>> {
        let (key, thread_id) = (key.clone(), thread_id.to_owned());
        self.db
            .run(Access::Read, move |conn| {
                Box::pin(context::thread_capability_state(conn, key, thread_id))
            })
            .await
    }

    async fn mark_live_stream(&self, key: &TurnKey, mark: LiveStreamMark) -> StoreResult<()> {
        let key = key.clone();
        write_turn(&self.db, self.fence_of(&key), move |conn| {
            Box::pin(context::mark_live_stream(conn, key, mark))
        })
        .await
    }

    async fn patch_mcp_servers(&self, key: &TurnKey, servers: Vec<McpServerInitInfo>) -> StoreResult<()> {
        let key = key.clone();
        write_turn(&self.db, self.fence_of(&key), move |conn| {
            Box::pin(context::patch_mcp_servers(conn, key, servers))
        })
        .await
    }

    async fn set_sandbox_info(&self, key: &TurnKey, info: SandboxInfo) -> StoreResult<()> {
        let key = key.clone();
        write_turn(&self.db, self.fence_of(&key), move |conn| {
            Box::pin(context::set_sandbox_info(conn, key, info))
        })
        .await
    }

    async fn patch_thread_capability_state(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        state_key: &str,
        state: Value,
    ) -> StoreResult<()> {
        let (key, thread_id, state_key) = (key.clone(), thread_id.to_owned(), state_key.to_owned());
        write_turn(&self.db, self.fence_of(&key), move |conn| {
            Box::pin(context::patch_thread_capability_state(
                conn, key, thread_id, state_key, state,
            ))
        })
        .await
    }

    async fn thread_history(&self, key: &TurnKey, thread_id: &ThreadId) -> StoreResult<Vec<HistoryEntry>> {
        let (key, thread_id) = (key.clone(), thread_id.to_owned());
        self.db
            .run(Access::Read, move |conn| {
                Box::pin(history::thread_history(conn, key, thread_id))
            })
            .await
    }

    async fn search_thread_history(
        &self,
        key: &TurnKey,
        thread_id: &ThreadId,
        query: &str,
        limit: u32,
    ) -> StoreResult<Vec<HistoryEntry>> {
        let (key, thread_id, query) = (key.clone(), thread_id.to_owned(), query.to_owned());
        self.db
            .run(Access::Read, move |conn| {
                Box::pin(history::search_thread_history(conn, key, thread_id, query, limit))
            })
            .await
    }

    fn fenced(&self, key: &TurnKey, epoch: u64) -> std::sync::Arc<dyn SessionStore> {
        std::sync::Arc::new(Self {
            db: self.db.clone(),
            fence: Some((key.clone(), epoch)),
        })
    }

    async fn renew_lease(&self, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        let (key, owner) = (key.clone(), owner.to_owned());
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(leases::renew_lease(conn, key, owner, ttl_ms))
            })
            .await
    }

    async fn claim_expired_lease(&self, key: &TurnKey, new_owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        let (key, owner) = (key.clone(), new_owner.to_owned());
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(leases::claim_expired_lease(conn, key, owner, ttl_ms))
            })
            .await
    }

    async fn list_expired_leases(&self, limit: u32) -> StoreResult<Vec<ExpiredLease>> {
        self.db
            .run(Access::Read, move |conn| {
                Box::pin(leases::list_expired_leases(conn, limit))
            })
            .await
    }

    async fn expire_leases_of_others(&self, owner: &str) -> StoreResult<u64> {
        let owner = owner.to_owned();
        self.db
            .run(Access::Write, move |conn| {
                Box::pin(leases::expire_leases_of_others(conn, owner))
            })
            .await
    }
}
