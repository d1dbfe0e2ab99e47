//! Row structs of the session tables, their conversions to the model and the column lists they read.

use serde_json::{Map, Value};
use sqlx::types::Json;
use trueforge_protocol::{
    AgentInfo, AgentParent, ContextMessage, CurrentContextUsage, SubAgentCompletion, TurnInputItem, TurnState,
};

use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::time::Timestamp;

/// `agent` is read as text: on Postgres it is a `json` column, kept as written (see `JSON_TEXT`).
pub(super) const SESSION_COLUMNS: &str = "tenant_id, session_id, created_by, CAST(agent AS TEXT) AS agent, title, \
    last_turn_id, created_at, updated_at, custom";
pub(super) const TURN_COLUMNS: &str = "ord, tenant_id, session_id, turn_id, first_turn_id, ancestor_ids, previous_turn_id, \
    state, input, custom, lease_owner, lease_expires_at, last_seq, created_at, updated_at";

#[derive(sqlx::FromRow)]
pub(super) struct SessionRow {
    pub(super) tenant_id: String,
    pub(super) session_id: String,
    pub(super) created_by: String,
    pub(super) agent: String,
    pub(super) title: Option<String>,
    pub(super) last_turn_id: Option<String>,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
    pub(super) custom: Option<Json<Value>>,
}

impl TryFrom<SessionRow> for SessionRecord {
    type Error = StoreError;

    fn try_from(row: SessionRow) -> StoreResult<Self> {
        Ok(Self {
            tenant_id: row.tenant_id,
            session_id: row.session_id,
            created_by: row.created_by,
            agent: serde_json::from_str(&row.agent)?,
            title: row.title,
            last_turn_id: row.last_turn_id,
            created_at: Timestamp(row.created_at),
            updated_at: Timestamp(row.updated_at),
            custom: row.custom.map(|custom| custom.0),
        })
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct TurnRow {
    pub(super) ord: i64,
    pub(super) tenant_id: String,
    pub(super) session_id: String,
    pub(super) turn_id: String,
    pub(super) first_turn_id: String,
    pub(super) ancestor_ids: Json<Vec<String>>,
    pub(super) previous_turn_id: Option<String>,
    pub(super) state: Json<TurnState>,
    pub(super) input: Json<Vec<TurnInputItem>>,
    pub(super) custom: Option<Json<Value>>,
    pub(super) lease_owner: Option<String>,
    pub(super) lease_expires_at: Option<i64>,
    pub(super) last_seq: i64,
    pub(super) created_at: i64,
    pub(super) updated_at: i64,
}

impl From<TurnRow> for TurnSummary {
    fn from(row: TurnRow) -> Self {
        let lease = match (row.lease_owner, row.lease_expires_at) {
            (Some(owner), Some(expires_at)) => Some(Lease {
                owner,
                expires_at: Timestamp(expires_at),
            }),
            _ => None,
        };
        Self {
            tenant_id: row.tenant_id,
            session_id: row.session_id,
            turn_id: row.turn_id,
            first_turn_id: row.first_turn_id,
            ancestor_ids: row.ancestor_ids.0,
            previous_turn_id: row.previous_turn_id,
            state: row.state.0,
            input: row.input.0,
            custom: row.custom.map(|custom| custom.0),
            lease,
            last_seq: u64::try_from(row.last_seq).unwrap_or(0),
            created_at: Timestamp(row.created_at),
            updated_at: Timestamp(row.updated_at),
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct ThreadRow {
    pub(super) thread_id: String,
    pub(super) segment_id: i64,
    pub(super) parent: Option<Json<AgentParent>>,
    pub(super) agent_info: Option<Json<AgentInfo>>,
    pub(super) completion: Option<Json<SubAgentCompletion>>,
    pub(super) usage: Json<CurrentContextUsage>,
    pub(super) capability_state: Option<Json<Map<String, Value>>>,
}

#[derive(sqlx::FromRow)]
pub(super) struct HistoryRow {
    pub(super) message_id: i64,
    pub(super) turn_id: String,
    pub(super) pos: i64,
    pub(super) body: Json<ContextMessage>,
    pub(super) active: i64,
}

impl From<HistoryRow> for HistoryEntry {
    fn from(row: HistoryRow) -> Self {
        Self {
            message_id: row.message_id,
            turn_id: row.turn_id,
            position: row.pos,
            active: row.active != 0,
            message: row.body.0,
        }
    }
}

pub(super) fn seq_from_db(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}
