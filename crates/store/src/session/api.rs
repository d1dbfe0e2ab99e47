//! Records as the HTTP API writes them (`trueforge_protocol::api`). The conversions live here because the
//! orphan rule allows them only next to one of the two types, and the protocol knows nothing of records.

use trueforge_protocol::api::{Session, Turn};

use super::model::{SessionCost, SessionRecord, TurnSummary};

impl SessionRecord {
    /// The session as the API writes it, with what its ended turns cost.
    pub fn into_session(self, cost: SessionCost) -> Session {
        Session::new(
            self.session_id,
            self.agent,
            self.title,
            self.created_by,
            self.created_at.to_iso(),
            self.updated_at.to_iso(),
        )
        .with_total_cost_in_usd(cost.total_usd())
    }
}

impl From<TurnSummary> for Turn {
    fn from(turn: TurnSummary) -> Self {
        Turn::new(
            turn.turn_id,
            turn.session_id,
            turn.previous_turn_id.map(String::from),
            turn.input,
            turn.state,
            turn.created_at.to_iso(),
        )
    }
}
