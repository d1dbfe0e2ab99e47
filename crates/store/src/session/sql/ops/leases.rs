//! Leases on running turns: renewal, takeover of an expired lease and the sweeper's listing.

use sqlx::QueryBuilder;

use super::turns::fence;
use super::{Db, Store, clock};
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::page;
use crate::session::rules;
use crate::time::Timestamp;

/// Which lease a write may replace.
#[derive(Clone, Copy)]
enum Replace {
    /// Only the caller's own lease (renewal).
    Own,
    /// Only an expired lease, or none (takeover after a crash).
    Expired,
}

pub(super) async fn renew_lease(store: &Store, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
    set_lease(store, key, owner, ttl_ms, Replace::Own).await
}

pub(super) async fn claim_expired_lease(
    store: &Store,
    key: &TurnKey,
    new_owner: &str,
    ttl_ms: i64,
) -> StoreResult<Lease> {
    set_lease(store, key, new_owner, ttl_ms, Replace::Expired).await
}

/// Sets the lease of a running turn when `replace` allows it; a conditional update, so of several
/// concurrent claimers exactly one matches.
async fn set_lease(store: &Store, key: &TurnKey, owner: &str, ttl_ms: i64, replace: Replace) -> StoreResult<Lease> {
    rules::check_ttl(ttl_ms)?;
    let mut tx = store.write_tx().await?;
    let fenced_at = clock(&mut tx).await?;
    fence(&mut tx, key, fenced_at).await?;
    // Read the clock again once the fence holds the turn's row lock: a wait for that lock must not make the
    // expiry check (or the new expiry) older than the write.
    let now = clock(&mut tx).await?;
    let expires_at = now.plus_millis(ttl_ms);
    let mut update = QueryBuilder::<Db>::new("UPDATE turn SET lease_owner = ");
    update
        .push_bind(owner)
        .push(", lease_expires_at = ")
        .push_bind(expires_at.millis());
    update.push(" WHERE session_id = ").push_bind(&key.session_id);
    update.push(" AND turn_id = ").push_bind(&key.turn_id);
    update.push(" AND tenant_id = ").push_bind(&key.tenant_id);
    match replace {
        Replace::Own => update.push(" AND lease_owner = ").push_bind(owner),
        Replace::Expired => update
            .push(" AND (lease_expires_at IS NULL OR lease_expires_at < ")
            .push_bind(now.millis())
            .push(")"),
    };
    if update.build().execute(&mut *tx).await?.rows_affected() == 0 {
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

pub(super) async fn expire_leases_of_others(store: &Store, owner: &str) -> StoreResult<u64> {
    let mut tx = store.write_tx().await?;
    let now = clock(&mut tx).await?;
    // One millisecond in the past, so the sweeper's `lease_expires_at < now` holds at once.
    let expired = sqlx::query(
        "UPDATE turn SET lease_expires_at = $1 WHERE status = 'running' AND lease_owner IS NOT NULL \
         AND lease_owner <> $2 AND lease_expires_at >= $3",
    )
    .bind(now.millis() - 1)
    .bind(owner)
    .bind(now.millis())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(expired)
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
