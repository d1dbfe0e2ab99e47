//! Recall: a thread's whole history along its lineage, optionally filtered by full-text search.

use super::context::thread_segment;
use super::rows::HistoryRow;
use super::turns::require_turn;
use super::{SEARCH_CONDITION, Store, Tx, search_expression, thread_not_found};
use crate::error::StoreResult;
use crate::session::model::*;
use crate::session::page;
use crate::session::search;

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

pub(super) async fn thread_history(store: &Store, key: &TurnKey, thread_id: &str) -> StoreResult<Vec<HistoryEntry>> {
    let mut tx = store.read_tx().await?;
    let entries = history(&mut tx, key, thread_id, None).await?;
    tx.commit().await?;
    Ok(entries)
}

pub(super) async fn search_thread_history(
    store: &Store,
    key: &TurnKey,
    thread_id: &str,
    query: &str,
    limit: u32,
) -> StoreResult<Vec<HistoryEntry>> {
    let terms = search::query_terms(query)?;
    page::open_page(&PageRequest::first(limit))?;
    let mut tx = store.read_tx().await?;
    let entries = history(&mut tx, key, thread_id, Some((search_expression(&terms), limit))).await?;
    tx.commit().await?;
    Ok(entries)
}
