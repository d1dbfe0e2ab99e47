//! `/sessions/{id}/turns`: a turn, and the body that starts one.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use utoipa::ToSchema;

use crate::{TurnInputItem, TurnState};

/// One exchange of a session: its input and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[non_exhaustive]
pub struct Turn {
    pub id: String,
    pub session_id: String,
    /// The turn this one continues; `null` for the first turn of a conversation.
    #[schema(required = true)]
    pub previous_turn_id: Option<String>,
    // Always sent by this server; the reference may omit it when empty.
    #[serde(default)]
    #[schema(required = true)]
    pub input: Vec<TurnInputItem>,
    pub state: TurnState,
    pub created_at: String,
}

impl Turn {
    pub fn new(
        id: impl Into<String>,
        session_id: impl Into<String>,
        previous_turn_id: Option<String>,
        input: Vec<TurnInputItem>,
        state: TurnState,
        created_at: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            session_id: session_id.into(),
            previous_turn_id,
            input,
            state,
            created_at: created_at.into(),
        }
    }
}

/// A new turn: its input, the turn it continues, and whether to stream it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[non_exhaustive]
pub struct CreateTurnRequest {
    /// User messages, or approvals and tool responses for a turn that paused on them (not both).
    #[serde(default)]
    pub input: Vec<TurnInputItem>,
    /// `auto` (the default): the session's latest turn; `none`: a new conversation; or a turn id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, min_length = 1, default = "auto")]
    pub previous_turn_id: Option<PreviousTurn>,
    /// `true` (the default): answer with the turn's event stream; `false`: with the turn, once it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(default = true)]
    pub stream: Option<bool>,
}

impl CreateTurnRequest {
    pub fn new(input: Vec<TurnInputItem>, previous_turn_id: Option<PreviousTurn>, stream: Option<bool>) -> Self {
        Self {
            input,
            previous_turn_id,
            stream,
        }
    }
}

/// Which turn a new turn continues: `previous_turn_id` on the wire, `auto`, `none` or a turn id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PreviousTurn {
    /// The session's latest turn (the server's default).
    #[default]
    Auto,
    /// Start a fresh conversation in the session.
    None,
    /// Fork from this turn.
    Id(String),
}

impl PreviousTurn {
    const AUTO: &str = "auto";
    const NONE: &str = "none";

    /// The value as it is written on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Auto => Self::AUTO,
            Self::None => Self::NONE,
            Self::Id(id) => id,
        }
    }
}

impl Serialize for PreviousTurn {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Any string is read, the empty one included: whether an id is acceptable is the server's call, with its
/// own error message, not a deserialization failure.
impl<'de> Deserialize<'de> for PreviousTurn {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Read as a `String` so that a value of another type fails with the same message as before.
        let text = String::deserialize(deserializer)?;
        Ok(match text.as_str() {
            Self::AUTO => Self::Auto,
            Self::NONE => Self::None,
            _ => Self::Id(text),
        })
    }
}
