//! The address of one turn.

use crate::{SessionId, TenantId, TurnId};

/// Addresses one turn of one session of one tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TurnKey {
    pub tenant_id: TenantId,
    pub session_id: SessionId,
    pub turn_id: TurnId,
}

impl TurnKey {
    pub fn new(tenant_id: impl Into<TenantId>, session_id: impl Into<SessionId>, turn_id: impl Into<TurnId>) -> Self {
        Self {
            tenant_id: tenant_id.into(),
            session_id: session_id.into(),
            turn_id: turn_id.into(),
        }
    }
}
