//! Sessions: create, read, update, delete and the keyset-paged listing.

use sqlx::QueryBuilder;
use sqlx::types::Json;
use trueforge_protocol::SessionAgent;

use super::rows::{SESSION_COLUMNS, SessionRow};
use super::{Db, JSON_TEXT, Store, clock};
use crate::error::{StoreError, StoreResult, is_unique_violation};
use crate::session::model::*;
use crate::session::page::{self, Cursor};
use crate::session::rules;

pub(super) async fn create_session(store: &Store, session: NewSession) -> StoreResult<SessionRecord> {
    rules::require_id("session", &session.session_id)?;
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    let agent_id = match &session.agent {
        SessionAgent::Reference { id, .. } => Some(id.clone()),
        _ => None,
    };
    let row: SessionRow = sqlx::query_as(&format!(
        "INSERT INTO session (session_id, tenant_id, created_by, agent, agent_id, custom, created_at, updated_at) \
         VALUES ($1, $2, $3, CAST($4 AS {JSON_TEXT}), $5, $6, $7, $7) RETURNING {SESSION_COLUMNS}"
    ))
    .bind(&session.session_id)
    .bind(&session.tenant_id)
    .bind(&session.created_by)
    .bind(serde_json::to_string(&session.agent)?)
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
    row.try_into()
}

pub(super) async fn delete_session(store: &Store, tenant_id: &str, session_id: &str) -> StoreResult<()> {
    let mut tx = store.write_tx().await?;
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

pub(super) async fn get_session(
    store: &Store,
    tenant_id: &str,
    session_id: &str,
) -> StoreResult<Option<SessionRecord>> {
    let row: Option<SessionRow> = sqlx::query_as(&format!(
        "SELECT {SESSION_COLUMNS} FROM session WHERE tenant_id = $1 AND session_id = $2"
    ))
    .bind(tenant_id)
    .bind(session_id)
    .fetch_optional(store.read_pool())
    .await?;
    row.map(SessionRecord::try_from).transpose()
}

pub(super) async fn update_session(
    store: &Store,
    tenant_id: &str,
    session_id: &str,
    update: SessionUpdate,
) -> StoreResult<SessionRecord> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    // The update merges in Rust, so the row must not change between the read and the write: an UPDATE
    // takes its lock first (a no-op on SQLite, whose write transaction already excludes other writers).
    sqlx::query("UPDATE session SET updated_at = updated_at WHERE tenant_id = $1 AND session_id = $2")
        .bind(tenant_id)
        .bind(session_id)
        .execute(&mut *tx)
        .await?;
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
    let current = SessionRecord::try_from(current)?;
    let agent = match update.agent_spec {
        None => current.agent,
        Some(spec) => match current.agent {
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
        "UPDATE session SET agent = CAST($3 AS {JSON_TEXT}), title = $4, \
         updated_at = CASE WHEN updated_at + 1 > $5 THEN updated_at + 1 ELSE $5 END \
         WHERE tenant_id = $1 AND session_id = $2 RETURNING {SESSION_COLUMNS}"
    ))
    .bind(tenant_id)
    .bind(session_id)
    .bind(serde_json::to_string(&agent)?)
    .bind(title)
    .bind(now.millis())
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    row.try_into()
}

pub(super) async fn list_sessions(
    store: &Store,
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
        // A row-value comparison, which both engines answer with one index range scan.
        let op = if desc { " < " } else { " > " };
        query.push(" AND (updated_at, session_id)").push(op).push("(");
        query.push_bind(updated_at).push(", ").push_bind(session_id).push(")");
    }
    let direction = if desc { "DESC" } else { "ASC" };
    query.push(format!(
        " ORDER BY updated_at {direction}, session_id {direction} LIMIT "
    ));
    query.push_bind(i64::from(page.limit) + 1);
    let rows: Vec<SessionRow> = query.build_query_as().fetch_all(store.read_pool()).await?;
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
