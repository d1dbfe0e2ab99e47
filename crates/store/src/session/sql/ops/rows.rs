//! Row structs of the session tables, their conversions to the model and the column lists they read.

use serde_json::{Map, Value};
use trueforge_protocol::{
    AgentInfo, AgentParent, ContextMessage, CurrentContextUsage, SubAgentCompletion, TurnInputItem, TurnState,
};

use crate::error::{StoreError, StoreResult};
use crate::session::model::*;
use crate::sql::{Column, FromRow, Json, SqlRow};
use crate::time::Timestamp;

/// `agent` is read as text: on Postgres it is a `json` column, kept as written (see `JSON_TEXT`).
pub(crate) const SESSION_COLUMNS: &str = "tenant_id, session_id, created_by, CAST(agent AS TEXT) AS agent, title, \
    last_turn_id, created_at, updated_at, custom";
pub(crate) const TURN_COLUMNS: &str = "ord, tenant_id, session_id, turn_id, first_turn_id, ancestor_ids, previous_turn_id, \
    state, input, custom, lease_owner, lease_expires_at, last_seq, created_at, updated_at, lease_epoch";

pub(crate) struct SessionRow {
    pub(crate) tenant_id: TenantId,
    pub(crate) session_id: SessionId,
    pub(crate) created_by: String,
    pub(crate) agent: String,
    pub(crate) title: Option<String>,
    pub(crate) last_turn_id: Option<TurnId>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) custom: Option<Json<Value>>,
}

impl FromRow for SessionRow {
    fn from_row(row: &impl SqlRow) -> StoreResult<Self> {
        Ok(Self {
            tenant_id: Column::column(row, 0)?,
            session_id: Column::column(row, 1)?,
            created_by: Column::column(row, 2)?,
            agent: Column::column(row, 3)?,
            title: Column::column(row, 4)?,
            last_turn_id: Column::column(row, 5)?,
            created_at: Column::column(row, 6)?,
            updated_at: Column::column(row, 7)?,
            custom: Column::column(row, 8)?,
        })
    }
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

pub(crate) struct TurnRow {
    pub(crate) ord: i64,
    pub(crate) tenant_id: TenantId,
    pub(crate) session_id: SessionId,
    pub(crate) turn_id: TurnId,
    pub(crate) first_turn_id: TurnId,
    pub(crate) ancestor_ids: Json<Vec<TurnId>>,
    pub(crate) previous_turn_id: Option<TurnId>,
    pub(crate) state: Json<TurnState>,
    pub(crate) input: Json<Vec<TurnInputItem>>,
    pub(crate) custom: Option<Json<Value>>,
    pub(crate) lease_owner: Option<String>,
    pub(crate) lease_expires_at: Option<i64>,
    pub(crate) last_seq: i64,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) lease_epoch: i64,
}

impl FromRow for TurnRow {
    fn from_row(row: &impl SqlRow) -> StoreResult<Self> {
        Ok(Self {
            ord: Column::column(row, 0)?,
            tenant_id: Column::column(row, 1)?,
            session_id: Column::column(row, 2)?,
            turn_id: Column::column(row, 3)?,
            first_turn_id: Column::column(row, 4)?,
            ancestor_ids: Column::column(row, 5)?,
            previous_turn_id: Column::column(row, 6)?,
            state: Column::column(row, 7)?,
            input: Column::column(row, 8)?,
            custom: Column::column(row, 9)?,
            lease_owner: Column::column(row, 10)?,
            lease_expires_at: Column::column(row, 11)?,
            last_seq: Column::column(row, 12)?,
            created_at: Column::column(row, 13)?,
            updated_at: Column::column(row, 14)?,
            lease_epoch: Column::column(row, 15)?,
        })
    }
}

impl From<TurnRow> for TurnSummary {
    fn from(row: TurnRow) -> Self {
        let lease = match (row.lease_owner, row.lease_expires_at) {
            (Some(owner), Some(expires_at)) => Some(Lease {
                owner,
                expires_at: Timestamp(expires_at),
                epoch: u64::try_from(row.lease_epoch).unwrap_or(0),
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

pub(crate) struct ThreadRow {
    pub(crate) thread_id: ThreadId,
    pub(crate) segment_id: i64,
    pub(crate) parent: Option<Json<AgentParent>>,
    pub(crate) agent_info: Option<Json<AgentInfo>>,
    pub(crate) completion: Option<Json<SubAgentCompletion>>,
    pub(crate) usage: Json<CurrentContextUsage>,
    pub(crate) capability_state: Option<Json<Map<String, Value>>>,
}

/// The columns a [`ThreadRow`] reads.
pub(crate) const THREAD_COLUMNS: &str =
    "thread_id, segment_id, parent, agent_info, completion, usage, capability_state";

impl FromRow for ThreadRow {
    fn from_row(row: &impl SqlRow) -> StoreResult<Self> {
        Ok(Self {
            thread_id: Column::column(row, 0)?,
            segment_id: Column::column(row, 1)?,
            parent: Column::column(row, 2)?,
            agent_info: Column::column(row, 3)?,
            completion: Column::column(row, 4)?,
            usage: Column::column(row, 5)?,
            capability_state: Column::column(row, 6)?,
        })
    }
}

pub(crate) struct HistoryRow {
    pub(crate) message_id: i64,
    pub(crate) turn_id: TurnId,
    pub(crate) pos: i64,
    pub(crate) body: Json<ContextMessage>,
    pub(crate) active: i64,
}

impl FromRow for HistoryRow {
    fn from_row(row: &impl SqlRow) -> StoreResult<Self> {
        Ok(Self {
            message_id: Column::column(row, 0)?,
            turn_id: Column::column(row, 1)?,
            pos: Column::column(row, 2)?,
            body: Column::column(row, 3)?,
            active: Column::column(row, 4)?,
        })
    }
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

pub(crate) fn seq_from_db(seq: i64) -> u64 {
    u64::try_from(seq).unwrap_or(0)
}
