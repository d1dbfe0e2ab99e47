//! `SessionAgent`: which agent a session runs, as stored on the session.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::rules;
use crate::{AgentSpec, ProtocolError};

/// Schema `SessionAgent`, discriminated by `type`; both variants are closed objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", deny_unknown_fields)]
#[expect(
    clippy::large_enum_variant,
    reason = "one binding per session, read far more than moved; boxing would only complicate matching"
)]
pub enum SessionAgent {
    /// A named agent of the registry. `name` is a snapshot taken when the session was created
    /// (`null` for legacy or orphaned rows); the spec itself is looked up live at each turn.
    #[serde(rename = "reference")]
    Reference {
        #[schema(min_length = 1)]
        id: String,
        #[serde(deserialize_with = "crate::nullable::required")]
        #[schema(required = true)]
        name: Option<String>,
    },
    /// A spec owned by the session itself.
    #[serde(rename = "inline")]
    Inline { spec: AgentSpec },
}

impl SessionAgent {
    /// Non-empty registry id; a valid inline spec.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        match self {
            Self::Reference { id, .. } => rules::non_empty("agent.id", id),
            Self::Inline { spec } => spec.validate().map_err(|error| match error {
                ProtocolError::Invalid { path, message } => {
                    ProtocolError::invalid(format!("agent.spec.{path}"), message)
                }
            }),
        }
    }

    /// The registry id of a reference binding.
    pub fn agent_id(&self) -> Option<&str> {
        match self {
            Self::Reference { id, .. } => Some(id),
            Self::Inline { .. } => None,
        }
    }
}
