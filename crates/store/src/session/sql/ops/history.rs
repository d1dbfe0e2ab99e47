//! Recall: a thread's whole history along its lineage, optionally filtered by full-text search.

use super::context::thread_segment;
use super::rows::HistoryRow;
use super::thread_not_found;
use super::turns::require_turn;
use crate::error::StoreResult;
use crate::session::model::*;
use crate::session::page;
use crate::session::search;
use crate::session::sql::SessionSql;
use crate::sql::Param;

/// Every body of a thread's lineage (parents and superseded segments), flagged active when it is in the
/// current chain, optionally filtered by a full-text query (`$4`) and limited.
async fn history<C: SessionSql>(
    conn: &mut C,
    key: &TurnKey,
    thread_id: &ThreadId,
    search: Option<(String, u32)>,
) -> StoreResult<Vec<HistoryEntry>> {
    require_turn(conn, key).await?;
    let segment_id = thread_segment(conn, key, thread_id)
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
    let mut params = vec![Param::from(segment_id), Param::from(key.session_id.as_str())];
    match search {
        Some((query, limit)) => {
            sql.push_str(" AND ");
            sql.push_str(C::SEARCH_CONDITION);
            params.push(Param::from(i64::from(limit)));
            params.push(Param::from(query));
        }
        None => params.push(Param::from(i64::MAX)),
    }
    sql.push_str(" ORDER BY m.message_id LIMIT $3");
    let rows: Vec<HistoryRow> = conn.fetch_all(&sql, &params).await?;
    Ok(rows.into_iter().map(HistoryEntry::from).collect())
}

pub(crate) async fn thread_history<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    thread_id: ThreadId,
) -> StoreResult<Vec<HistoryEntry>> {
    history(conn, &key, &thread_id, None).await
}

pub(crate) async fn search_thread_history<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    thread_id: ThreadId,
    query: String,
    limit: u32,
) -> StoreResult<Vec<HistoryEntry>> {
    let terms = search::query_terms(&query)?;
    page::open_page(&PageRequest::first(limit))?;
    history(conn, &key, &thread_id, Some((C::search_expression(&terms), limit))).await
}
