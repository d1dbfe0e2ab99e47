//! Turn events: the batched insert, the per-turn listings and the branch-wide session feed.

use sqlx::QueryBuilder;
use sqlx::types::Json;
use trueforge_protocol::SessionEvent;

use super::rows::seq_from_db;
use super::turns::{fence_and_advance, require_turn};
use super::{Db, INSERT_CHUNK, Store, Tx, clock};
use crate::error::{StoreError, StoreResult, is_unique_violation};
use crate::session::model::*;
use crate::session::page::{self, Cursor};
use crate::session::rules;
use crate::time::Timestamp;

/// Inserts events. A batch is already ordered and free of duplicate ids, and its seqs are above the turn's
/// last seq (checked under the turn's write fence), so a unique violation here can only be an id the turn
/// already stored: it comes back as `EventAlreadyExists` with an empty id, which
/// [`naming_duplicates`] fills in once the failed transaction is gone. Not looking the ids up first saves
/// a round trip on every write.
pub(super) async fn insert_events(
    tx: &mut Tx,
    key: &TurnKey,
    events: &[StoredEvent],
    now: Timestamp,
) -> StoreResult<()> {
    for chunk in events.chunks(INSERT_CHUNK) {
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

/// Runs a write that inserts `events` and, when it fails on an id the turn already stored, names that id
/// (see [`insert_events`]) once the failed transaction is gone.
pub(super) async fn naming_duplicates(
    store: &Store,
    key: &TurnKey,
    events: &[StoredEvent],
    write: impl std::future::Future<Output = StoreResult<()>>,
) -> StoreResult<()> {
    match write.await {
        Ok(()) => Ok(()),
        Err(error) => Err(name_duplicate_event(store, key, events, error).await),
    }
}

/// Names the stored event id a failed insert clashed with; other errors pass.
async fn name_duplicate_event(store: &Store, key: &TurnKey, events: &[StoredEvent], error: StoreError) -> StoreError {
    let StoreError::EventAlreadyExists { event_id, .. } = &error else {
        return error;
    };
    if !event_id.is_empty() {
        return error;
    }
    let Ok(mut tx) = store.read_tx().await else {
        return error;
    };
    let mut existing = QueryBuilder::<Db>::new("SELECT event_id FROM turn_event WHERE session_id = ");
    existing
        .push_bind(&key.session_id)
        .push(" AND turn_id = ")
        .push_bind(&key.turn_id)
        .push(" AND event_id IN (");
    let mut ids = existing.separated(", ");
    for stored in events {
        ids.push_bind(stored.event.id());
    }
    existing.push(") LIMIT 1");
    let found: Option<String> = existing
        .build_query_scalar()
        .fetch_optional(&mut *tx)
        .await
        .ok()
        .flatten();
    match found {
        Some(event_id) => StoreError::EventAlreadyExists {
            turn_id: key.turn_id.clone(),
            event_id,
        },
        None => error,
    }
}

pub(super) async fn append_events(store: &Store, key: &TurnKey, events: Vec<StoredEvent>) -> StoreResult<()> {
    let events = rules::order_event_batch(&key.turn_id, events, 0)?;
    naming_duplicates(store, key, &events, async {
        let mut tx = store.write_tx().await?;
        let now = clock(&mut tx).await?;
        fence_and_advance(&mut tx, key, now, &events).await?;
        insert_events(&mut tx, key, &events, now).await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}

pub(super) async fn list_turn_events(
    store: &Store,
    key: &TurnKey,
    order: SortOrder,
    page: &PageRequest,
) -> StoreResult<Page<StoredEvent>> {
    let after = page::turn_events_cursor(page::open_page(page)?, order)?;
    let desc = order == SortOrder::Desc;
    let mut tx = store.read_tx().await?;
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

pub(super) async fn list_turn_events_after(
    store: &Store,
    key: &TurnKey,
    after_seq: u64,
    limit: u32,
) -> StoreResult<Vec<StoredEvent>> {
    page::open_page(&PageRequest::first(limit))?;
    let mut tx = store.read_tx().await?;
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

pub(super) async fn list_session_events(
    store: &Store,
    tenant_id: &str,
    session_id: &str,
    last_turn_id: Option<&str>,
    page: &PageRequest,
) -> StoreResult<Page<SessionEventItem>> {
    let cursor = page::feed_cursor(page::open_page(page)?)?;
    let mut tx = store.read_tx().await?;
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
