//! `turn.created` and `turn.done`: the first and last event of every turn.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::tagged::tagged_struct;
use crate::{TurnInputItem, TurnState};

/// Schema `TurnCreatedEvent`. Run-level, so `thread_id` is `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct TurnCreatedEvent {
    pub id: String,
    pub created_at: String,
    #[serde(deserialize_with = "crate::nullable::required")]
    #[schema(required = true)]
    pub thread_id: Option<String>,
    pub turn_id: String,
    /// `null` for the root turn of a conversation.
    #[serde(deserialize_with = "crate::nullable::required")]
    #[schema(required = true)]
    pub previous_turn_id: Option<String>,
    /// Omitted when the turn had no input (e.g. an empty continuation turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub input: Option<Vec<TurnInputItem>>,
    /// Always [`TurnState::Running`]; anything else is rejected on input.
    #[serde(deserialize_with = "running_state")]
    #[schema(schema_with = crate::openapi::running_state_schema)]
    pub state: TurnState,
}

tagged_struct!(TurnCreatedEvent, type = "turn.created");

/// Schema `TurnDoneEvent`. Run-level, so `thread_id` is `null`; written in the same transaction
/// as the terminal state it carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct TurnDoneEvent {
    pub id: String,
    pub created_at: String,
    #[serde(deserialize_with = "crate::nullable::required")]
    #[schema(required = true)]
    pub thread_id: Option<String>,
    /// A terminal state (done, cancelled or error); `running` is rejected on input.
    #[serde(deserialize_with = "terminal_state")]
    #[schema(schema_with = crate::openapi::terminal_state_schema)]
    pub state: TurnState,
}

tagged_struct!(TurnDoneEvent, type = "turn.done");

fn running_state<'de, D: Deserializer<'de>>(deserializer: D) -> Result<TurnState, D::Error> {
    let state = TurnState::deserialize(deserializer)?;
    if state.is_terminal() {
        return Err(D::Error::custom(format!(
            "turn.created state must be running, found {}",
            state.status_str()
        )));
    }
    Ok(state)
}

fn terminal_state<'de, D: Deserializer<'de>>(deserializer: D) -> Result<TurnState, D::Error> {
    let state = TurnState::deserialize(deserializer)?;
    if !state.is_terminal() {
        return Err(D::Error::custom("turn.done state must be terminal, found running"));
    }
    Ok(state)
}
