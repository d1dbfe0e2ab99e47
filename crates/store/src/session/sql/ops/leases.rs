//! Leases on running turns: renewal, takeover of an expired lease and the sweeper's listing.

use super::turns::fence;
use super::{Store, clock};
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::page;
use crate::session::rules;
use crate::time::Timestamp;

pub(super) async fn renew_lease(store: &Store, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
    rules::check_ttl(ttl_ms)?;
    let mut tx = store.write_tx().await?;
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

pub(super) async fn claim_expired_lease(
    store: &Store,
    key: &TurnKey,
    new_owner: &str,
    ttl_ms: i64,
) -> StoreResult<Lease> {
    rules::check_ttl(ttl_ms)?;
    let mut tx = store.write_tx().await?;
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

pub(super) async fn list_expired_leases(store: &Store, limit: u32) -> StoreResult<Vec<ExpiredLease>> {
    page::open_page(&PageRequest::first(limit))?;
    let mut tx = store.read_tx().await?;
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
