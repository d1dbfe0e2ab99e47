//! Records as the HTTP API writes them (`trueforge_protocol::api`). The conversions live here because the
//! orphan rule allows them only next to one of the two types, and the protocol knows nothing of records.

use trueforge_protocol::api::{Session, Turn};

use super::model::{SessionRecord, TurnSummary};

impl From<SessionRecord> for Session {
    fn from(record: SessionRecord) -> Self {
        Session::new(
            record.session_id,
            record.agent,
            record.title,
            record.created_by,
            record.created_at.to_iso(),
            record.updated_at.to_iso(),
        )
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
