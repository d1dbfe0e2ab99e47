//! Sessions: create, read, update, delete and the keyset-paged listing.

use std::collections::BTreeMap;

use trueforge_protocol::{SessionAgent, TurnMetrics};

use super::rows::{SESSION_COLUMNS, SessionRow};
use crate::error::{InputError, StoreError, StoreResult};
use crate::session::model::*;
use crate::session::page::{self, Cursor};
use crate::session::sql::SessionSql;
use crate::sql::{Json, Param, Statement, params};

pub(crate) async fn create_session<C: SessionSql>(conn: &mut C, session: NewSession) -> StoreResult<SessionRecord> {
    let now = conn.now().await?;
    let agent_id = match &session.agent {
        SessionAgent::Reference { id, .. } => Some(id.as_str()),
        _ => None,
    };
    let sql = format!(
        "INSERT INTO session (session_id, tenant_id, created_by, agent, agent_id, custom, created_at, updated_at) \
         VALUES ($1, $2, $3, CAST($4 AS {}), $5, $6, $7, $7) RETURNING {SESSION_COLUMNS}",
        C::JSON_TEXT
    );
    let params = params![
        &session.session_id,
        &session.tenant_id,
        &session.created_by,
        serde_json::to_string(&session.agent)?,
        agent_id,
        Param::opt_json(session.custom.as_ref())?,
        now.millis(),
    ];
    let row: SessionRow = conn.fetch_one(&sql, &params).await.map_err(|error| {
        if error.is_unique_violation() {
            StoreError::SessionAlreadyExists {
                session_id: session.session_id.clone(),
            }
        } else {
            error.into()
        }
    })?;
    row.try_into()
}

pub(crate) async fn delete_session<C: SessionSql>(
    conn: &mut C,
    tenant_id: TenantId,
    session_id: SessionId,
) -> StoreResult<()> {
    // Lock order: turn rows before the session row, the order every turn-scoped write takes them (its
    // fence locks the turn, its inserts then key-share-lock the session). Deleting the session first
    // and cascading to the turns deadlocks against such a writer on Postgres.
    let params = params![&tenant_id, &session_id];
    conn.execute("DELETE FROM turn WHERE tenant_id = $1 AND session_id = $2", &params)
        .await?;
    conn.execute("DELETE FROM session WHERE tenant_id = $1 AND session_id = $2", &params)
        .await?;
    Ok(())
}

pub(crate) async fn get_session<C: SessionSql>(
    conn: &mut C,
    tenant_id: TenantId,
    session_id: SessionId,
) -> StoreResult<Option<SessionRecord>> {
    let row: Option<SessionRow> = conn
        .fetch_optional(
            &format!("SELECT {SESSION_COLUMNS} FROM session WHERE tenant_id = $1 AND session_id = $2"),
            &params![&tenant_id, &session_id],
        )
        .await?;
    row.map(SessionRecord::try_from).transpose()
}

pub(crate) async fn update_session<C: SessionSql>(
    conn: &mut C,
    tenant_id: TenantId,
    session_id: SessionId,
    update: SessionUpdate,
) -> StoreResult<SessionRecord> {
    let now = conn.now().await?;
    let key = params![&tenant_id, &session_id];
    // The update merges in Rust, so the row must not change between the read and the write: an UPDATE
    // takes its lock first (a no-op on SQLite, whose write transaction already excludes other writers).
    conn.execute(
        "UPDATE session SET updated_at = updated_at WHERE tenant_id = $1 AND session_id = $2",
        &key,
    )
    .await?;
    let current: Option<SessionRow> = conn
        .fetch_optional(
            &format!("SELECT {SESSION_COLUMNS} FROM session WHERE tenant_id = $1 AND session_id = $2"),
            &key,
        )
        .await?;
    let current = current.ok_or_else(|| StoreError::SessionNotFound {
        session_id: session_id.clone(),
    })?;
    let current = SessionRecord::try_from(current)?;
    let agent = match update.agent_spec {
        None => current.agent,
        Some(spec) => match current.agent {
            SessionAgent::Inline { .. } => SessionAgent::Inline { spec },
            _ => {
                return Err(InputError::NamedAgentReplaced.into());
            }
        },
    };
    let title = update.title.unwrap_or(current.title);
    let sql = format!(
        "UPDATE session SET agent = CAST($3 AS {}), title = $4, \
         updated_at = CASE WHEN updated_at + 1 > $5 THEN updated_at + 1 ELSE $5 END \
         WHERE tenant_id = $1 AND session_id = $2 RETURNING {SESSION_COLUMNS}",
        C::JSON_TEXT
    );
    let row: SessionRow = conn
        .fetch_one(
            &sql,
            &params![
                &tenant_id,
                &session_id,
                serde_json::to_string(&agent)?,
                title,
                now.millis()
            ],
        )
        .await?;
    row.try_into()
}

/// Sums the metrics of the sessions' ended turns. Only each turn's `metrics` leaves the database, not
/// its whole state (whose answer may be long).
pub(crate) async fn session_costs<C: SessionSql>(
    conn: &mut C,
    tenant_id: TenantId,
    session_ids: Vec<SessionId>,
) -> StoreResult<BTreeMap<SessionId, SessionCost>> {
    let mut query = Statement::new(format!(
        "SELECT session_id, {} FROM turn WHERE status <> 'running' AND tenant_id = ",
        C::TURN_METRICS
    ));
    query.bind(&tenant_id).push(" AND session_id IN (");
    for (index, session_id) in session_ids.iter().enumerate() {
        if index > 0 {
            query.push(", ");
        }
        query.bind(session_id);
    }
    query.push(")");
    let rows: Vec<(SessionId, Option<Json<TurnMetrics>>)> = conn.fetch_all(&query.sql, &query.params).await?;
    let mut costs: BTreeMap<SessionId, SessionCost> = BTreeMap::new();
    for (session_id, metrics) in rows {
        costs
            .entry(session_id)
            .or_default()
            .add_turn(metrics.as_ref().map(|metrics| &metrics.0));
    }
    Ok(costs)
}

pub(crate) async fn list_sessions<C: SessionSql>(
    conn: &mut C,
    tenant_id: TenantId,
    filter: SessionFilter,
    page: PageRequest,
) -> StoreResult<Page<SessionRecord>> {
    let after = page::sessions_cursor(page::open_page(&page)?, filter.order)?;
    let desc = filter.order == SortOrder::Desc;
    let mut query = Statement::new(format!("SELECT {SESSION_COLUMNS} FROM session WHERE tenant_id = "));
    query.bind(&tenant_id);
    if let Some(from) = filter.created_from {
        query.push(" AND created_at >= ").bind(from.millis());
    }
    if let Some(to) = filter.created_to {
        query.push(" AND created_at <= ").bind(to.millis());
    }
    if let Some(agent_id) = &filter.agent_id {
        query.push(" AND agent_id = ").bind(agent_id);
    }
    if let Some(created_by) = &filter.created_by {
        query.push(" AND created_by = ").bind(created_by);
    }
    if let Some((updated_at, session_id)) = after {
        // A row-value comparison, which both engines answer with one index range scan.
        let op = if desc { " < " } else { " > " };
        query.push(" AND (updated_at, session_id)").push(op).push("(");
        query.bind(updated_at).push(", ").bind(session_id).push(")");
    }
    let direction = if desc { "DESC" } else { "ASC" };
    query.push(&format!(
        " ORDER BY updated_at {direction}, session_id {direction} LIMIT "
    ));
    query.bind(i64::from(page.limit) + 1);
    let rows: Vec<SessionRow> = conn.fetch_all(&query.sql, &query.params).await?;
    let rows = rows
        .into_iter()
        .map(SessionRecord::try_from)
        .collect::<StoreResult<Vec<SessionRecord>>>()?;
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
