//! Turn events: the batched insert, the per-turn listings and the branch-wide session feed.

use trueforge_protocol::SessionEvent;

use super::INSERT_CHUNK;
use super::rows::seq_from_db;
use super::turns::{fence_and_advance, require_turn};
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::page::{self, Cursor};
use crate::session::rules;
use crate::session::sql::SessionSql;
use crate::sql::{Access, Database, Json, Param, Statement, params};
use crate::time::Timestamp;

/// Inserts events. A batch is already ordered and free of duplicate ids, and its seqs are above the turn's
/// last seq (checked under the turn's write fence), so a unique violation here can only be an id the turn
/// already stored: it comes back as `EventAlreadyExists` with an empty id, which [`name_duplicate`] fills
/// in once the failed transaction is gone. Not looking the ids up first saves a statement on every write.
pub(crate) async fn insert_events<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    events: &[StoredEvent],
    now: Timestamp,
) -> StoreResult<()> {
    for chunk in events.chunks(INSERT_CHUNK) {
        let mut insert =
            Statement::new("INSERT INTO turn_event (session_id, turn_id, seq, event_id, event, created_at) VALUES ");
        for stored in chunk {
            insert.values(params![
                &key.session_id,
                &key.turn_id,
                rules::seq_to_db(stored.seq)?,
                stored.event.id(),
                Param::json(&stored.event)?,
                now.millis(),
            ]);
        }
        conn.execute(&insert.sql, &insert.params).await.map_err(|error| {
            if error.is_unique_violation() {
                StoreError::EventAlreadyExists {
                    turn_id: key.turn_id.clone(),
                    event_id: String::new(),
                }
            } else {
                error.into()
            }
        })?;
    }
    Ok(())
}

/// The ids of a batch, kept to name a clash after the write that inserts the batch failed.
pub(crate) fn event_ids(events: &[StoredEvent]) -> Vec<String> {
    events.iter().map(|stored| stored.event.id().to_owned()).collect()
}

/// Passes the result of a write that inserted events with `ids`; when it failed on an id the turn already
/// stored (see [`insert_events`]), names that id with one more read.
pub(crate) async fn name_duplicate<D>(
    db: &D,
    key: &TurnKey,
    ids: Vec<String>,
    written: StoreResult<()>,
) -> StoreResult<()>
where
    D: Database,
    D::Conn: SessionSql,
{
    let error = match written {
        Err(StoreError::EventAlreadyExists { event_id, .. }) if event_id.is_empty() => StoreError::EventAlreadyExists {
            turn_id: key.turn_id.clone(),
            event_id,
        },
        other => return other,
    };
    let owned = key.clone();
    let found = db
        .run(Access::ReadOne, move |conn| Box::pin(stored_event_id(conn, owned, ids)))
        .await;
    match found {
        Ok(Some(event_id)) => Err(StoreError::EventAlreadyExists {
            turn_id: key.turn_id.clone(),
            event_id,
        }),
        // Nothing to add: the write's own error stands.
        Ok(None) | Err(_) => Err(error),
    }
}

/// One of `ids` the turn has stored, if any.
async fn stored_event_id<C: SessionSql>(conn: &mut C, key: TurnKey, ids: Vec<String>) -> StoreResult<Option<String>> {
    let mut existing = Statement::new("SELECT event_id FROM turn_event WHERE session_id = ");
    existing
        .bind(&key.session_id)
        .push(" AND turn_id = ")
        .bind(&key.turn_id)
        .push(" AND event_id IN (");
    for (index, id) in ids.iter().enumerate() {
        if index > 0 {
            existing.push(", ");
        }
        existing.bind(id);
    }
    existing.push(") LIMIT 1");
    let found: Option<(String,)> = conn.fetch_optional(&existing.sql, &existing.params).await?;
    Ok(found.map(|(event_id,)| event_id))
}

pub(crate) async fn append_events<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    events: Vec<StoredEvent>,
) -> StoreResult<()> {
    let now = conn.now().await?;
    fence_and_advance(conn, &key, now, &events).await?;
    insert_events(conn, &key, &events, now).await
}

fn stored_events(rows: Vec<(i64, Json<SessionEvent>)>) -> Vec<StoredEvent> {
    rows.into_iter()
        .map(|(seq, event)| StoredEvent {
            seq: seq_from_db(seq),
            event: event.0,
        })
        .collect()
}

pub(crate) async fn list_turn_events<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    order: SortOrder,
    page: PageRequest,
) -> StoreResult<Page<StoredEvent>> {
    let after = page::turn_events_cursor(page::open_page(&page)?, order)?;
    let desc = order == SortOrder::Desc;
    require_turn(conn, &key).await?;
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
    let rows = conn
        .fetch_all(
            sql,
            &params![&key.session_id, &key.turn_id, bound, i64::from(page.limit) + 1],
        )
        .await?;
    let (data, next_page_token) = page::finish_page(stored_events(rows), page.limit, |e| Cursor::TurnEvents {
        desc,
        seq: e.seq,
    });
    Ok(Page {
        data,
        limit: page.limit,
        next_page_token,
    })
}

pub(crate) async fn list_turn_events_after<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    after_seq: u64,
    limit: u32,
) -> StoreResult<Vec<StoredEvent>> {
    page::open_page(&PageRequest::first(limit))?;
    require_turn(conn, &key).await?;
    let rows = conn
        .fetch_all(
            "SELECT seq, event FROM turn_event WHERE session_id = $1 AND turn_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
            &params![
                &key.session_id,
                &key.turn_id,
                i64::try_from(after_seq).unwrap_or(i64::MAX),
                i64::from(limit),
            ],
        )
        .await?;
    Ok(stored_events(rows))
}

pub(crate) async fn list_session_events<C: SessionSql>(
    conn: &mut C,
    tenant_id: TenantId,
    session_id: SessionId,
    last_turn_id: Option<TurnId>,
    page: PageRequest,
) -> StoreResult<Page<SessionEventItem>> {
    let cursor = page::feed_cursor(page::open_page(&page)?)?;
    let tip: Option<(Option<TurnId>,)> = conn
        .fetch_optional(
            "SELECT last_turn_id FROM session WHERE tenant_id = $1 AND session_id = $2",
            &params![&tenant_id, &session_id],
        )
        .await?;
    let Some((tip,)) = tip else {
        return Err(StoreError::SessionNotFound { session_id });
    };
    let (anchor, after) = match cursor {
        Some(cursor) => (Some(cursor.anchor), cursor.after),
        None => (last_turn_id.or(tip), None),
    };
    let Some(anchor) = anchor else {
        return Ok(Page {
            data: Vec::new(),
            limit: page.limit,
            next_page_token: None,
        });
    };
    require_turn(conn, &TurnKey::new(&tenant_id, &session_id, &anchor)).await?;
    let (after_depth, after_seq) = match after {
        Some((depth, seq)) => (depth, rules::seq_to_db(seq)?),
        None => (-1, 0),
    };
    let rows: Vec<(TurnId, i64, i64, Json<SessionEvent>)> = conn
        .fetch_all(
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
            &params![&session_id, &anchor, after_depth, after_seq, i64::from(page.limit) + 1],
        )
        .await?;
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
