//! Leases on running turns: renewal, takeover of an expired lease and the sweeper's listing.

use super::state::State;
use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::time::Timestamp;

impl State {
    pub(super) fn renew_lease(&mut self, key: &TurnKey, owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        let now = Timestamp::now();
        let row = self.fence(key)?;
        match &row.summary.lease {
            Some(lease) if lease.owner == owner => {
                let renewed = Lease {
                    owner: owner.to_string(),
                    expires_at: now.plus_millis(ttl_ms),
                    epoch: lease.epoch,
                };
                row.summary.lease = Some(renewed.clone());
                Ok(renewed)
            }
            other => Err(StoreError::LeaseHeldByOther {
                turn_id: key.turn_id.clone(),
                owner: other.as_ref().map(|lease| lease.owner.clone()),
            }),
        }
    }

    pub(super) fn claim_expired_lease(&mut self, key: &TurnKey, new_owner: &str, ttl_ms: i64) -> StoreResult<Lease> {
        let now = Timestamp::now();
        let row = self.fence(key)?;
        match &row.summary.lease {
            Some(lease) if lease.expires_at >= now => Err(StoreError::LeaseHeldByOther {
                turn_id: key.turn_id.clone(),
                owner: Some(lease.owner.clone()),
            }),
            previous => {
                let lease = Lease {
                    owner: new_owner.to_string(),
                    expires_at: now.plus_millis(ttl_ms),
                    epoch: previous.as_ref().map_or(0, |lease| lease.epoch) + 1,
                };
                row.summary.lease = Some(lease.clone());
                Ok(lease)
            }
        }
    }

    pub(super) fn list_expired_leases(&self, limit: u32, now: Timestamp) -> StoreResult<Vec<ExpiredLease>> {
        let mut expired: Vec<ExpiredLease> = self
            .turns
            .values()
            .filter(|row| !row.summary.state.is_terminal())
            .filter_map(|row| {
                let lease = row.summary.lease.as_ref()?;
                (lease.expires_at < now).then(|| ExpiredLease {
                    tenant_id: row.summary.tenant_id.clone(),
                    session_id: row.summary.session_id.clone(),
                    turn_id: row.summary.turn_id.clone(),
                    owner: lease.owner.clone(),
                    expired_at: lease.expires_at,
                })
            })
            .collect();
        expired.sort_by(|a, b| {
            (
                a.expired_at,
                a.session_id.as_str().as_bytes(),
                a.turn_id.as_str().as_bytes(),
            )
                .cmp(&(
                    b.expired_at,
                    b.session_id.as_str().as_bytes(),
                    b.turn_id.as_str().as_bytes(),
                ))
        });
        expired.truncate(limit as usize);
        Ok(expired)
    }

    pub(super) fn expire_leases_of_others(&mut self, owner: &str, now: Timestamp) -> u64 {
        let mut expired = 0;
        for row in self.turns.values_mut() {
            if row.summary.state.is_terminal() {
                continue;
            }
            if let Some(lease) = row.summary.lease.as_mut()
                && lease.owner != owner
                && lease.expires_at >= now
            {
                // Already in the past for the sweeper's `expires_at < now`.
                lease.expires_at = now.plus_millis(-1);
                expired += 1;
            }
        }
        expired
    }
}
