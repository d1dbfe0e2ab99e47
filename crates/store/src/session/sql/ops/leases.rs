//! Leases on running turns: renewal, takeover of an expired lease and the sweeper's listing.

use super::turns::fence;
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::session::page;
use crate::session::rules;
use crate::session::sql::SessionSql;
use crate::sql::{Statement, params};
use crate::time::Timestamp;

/// Which lease a write may replace.
#[derive(Clone, Copy)]
enum Replace {
    /// Only the caller's own lease (renewal).
    Own,
    /// Only an expired lease, or none (takeover after a crash).
    Expired,
}

pub(crate) async fn renew_lease<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    owner: String,
    ttl_ms: i64,
) -> StoreResult<Lease> {
    set_lease(conn, key, owner, ttl_ms, Replace::Own).await
}

pub(crate) async fn claim_expired_lease<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    new_owner: String,
    ttl_ms: i64,
) -> StoreResult<Lease> {
    set_lease(conn, key, new_owner, ttl_ms, Replace::Expired).await
}

/// Sets the lease of a running turn when `replace` allows it; a conditional update, so of several
/// concurrent claimers exactly one matches.
async fn set_lease<C: SessionSql>(
    conn: &mut C,
    key: TurnKey,
    owner: String,
    ttl_ms: i64,
    replace: Replace,
) -> StoreResult<Lease> {
    rules::check_ttl(ttl_ms)?;
    let fenced_at = conn.now().await?;
    fence(conn, &key, fenced_at).await?;
    // Read the clock again once the fence holds the turn's row lock: a wait for that lock must not make the
    // expiry check (or the new expiry) older than the write.
    let now = conn.now().await?;
    let expires_at = now.plus_millis(ttl_ms);
    let mut update = Statement::new("UPDATE turn SET lease_owner = ");
    update
        .bind(&owner)
        .push(", lease_expires_at = ")
        .bind(expires_at.millis());
    if let Replace::Expired = replace {
        // A takeover: the fencing token moves on, so the writer that held the lease can write no more.
        update.push(", lease_epoch = lease_epoch + 1");
    }
    update.push(" WHERE session_id = ").bind(&key.session_id);
    update.push(" AND turn_id = ").bind(&key.turn_id);
    update.push(" AND tenant_id = ").bind(&key.tenant_id);
    match replace {
        Replace::Own => update.push(" AND lease_owner = ").bind(&owner),
        Replace::Expired => update
            .push(" AND (lease_expires_at IS NULL OR lease_expires_at < ")
            .bind(now.millis())
            .push(")"),
    };
    update.push(" RETURNING lease_epoch");
    let epoch: Option<(i64,)> = conn.fetch_optional(&update.sql, &update.params).await?;
    let Some((epoch,)) = epoch else {
        let (holder,): (Option<String>,) = conn
            .fetch_one(
                "SELECT lease_owner FROM turn WHERE session_id = $1 AND turn_id = $2",
                &params![&key.session_id, &key.turn_id],
            )
            .await?;
        return Err(StoreError::LeaseHeldByOther {
            turn_id: key.turn_id.clone(),
            owner: holder,
        });
    };
    Ok(Lease {
        owner,
        expires_at,
        epoch: u64::try_from(epoch).unwrap_or(0),
    })
}

pub(crate) async fn expire_leases_of_others<C: SessionSql>(conn: &mut C, owner: String) -> StoreResult<u64> {
    let now = conn.now().await?;
    // One millisecond in the past, so the sweeper's `lease_expires_at < now` holds at once.
    Ok(conn
        .execute(
            "UPDATE turn SET lease_expires_at = $1 WHERE status = 'running' AND lease_owner IS NOT NULL \
             AND lease_owner <> $2 AND lease_expires_at >= $3",
            &params![now.millis() - 1, &owner, now.millis()],
        )
        .await?)
}

pub(crate) async fn list_expired_leases<C: SessionSql>(conn: &mut C, limit: u32) -> StoreResult<Vec<ExpiredLease>> {
    page::open_page(&PageRequest::first(limit))?;
    let now = conn.now().await?;
    let rows: Vec<(TenantId, SessionId, TurnId, String, i64)> = conn
        .fetch_all(
            "SELECT tenant_id, session_id, turn_id, lease_owner, lease_expires_at FROM turn \
             WHERE status = 'running' AND lease_expires_at IS NOT NULL AND lease_owner IS NOT NULL \
             AND lease_expires_at < $1 ORDER BY lease_expires_at, session_id, turn_id LIMIT $2",
            &params![now.millis(), i64::from(limit)],
        )
        .await?;
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
