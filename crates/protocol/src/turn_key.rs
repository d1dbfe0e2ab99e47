//! The address of one turn.

/// Addresses one turn of one session of one tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TurnKey {
    pub tenant_id: String,
    pub session_id: String,
    pub turn_id: String,
}

impl TurnKey {
    pub fn new(tenant_id: impl Into<String>, session_id: impl Into<String>, turn_id: impl Into<String>) -> Self {
        Self {
            tenant_id: tenant_id.into(),
            session_id: session_id.into(),
            turn_id: turn_id.into(),
        }
    }
}
