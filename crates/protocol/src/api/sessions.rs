//! `/sessions`: a session, the body that creates one, and the items of its event feed.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{AgentSpec, SessionAgent, SessionEvent};

/// A conversation with an agent, owned by the user who created it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[non_exhaustive]
pub struct Session {
    pub id: String,
    pub agent: SessionAgent,
    // Written as `null` until a title is set.
    #[schema(required = true)]
    pub title: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
    /// Our addition: what the session's ended turns cost in USD, summed over every branch (a running turn
    /// adds its cost when it ends). `null` when the cost of one of them is unknown: its model has no
    /// prices, or it ended without recording what it used (frozen by a new turn, say).
    #[serde(default)]
    #[schema(required = true, minimum = 0.0)]
    pub total_cost_in_usd: Option<f64>,
}

impl Session {
    pub fn new(
        id: impl Into<String>,
        agent: SessionAgent,
        title: Option<String>,
        created_by: impl Into<String>,
        created_at: impl Into<String>,
        updated_at: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            agent,
            title,
            created_by: created_by.into(),
            created_at: created_at.into(),
            updated_at: updated_at.into(),
            total_cost_in_usd: None,
        }
    }

    /// The session with the cost of its ended turns (`None`: unknown).
    pub fn with_total_cost_in_usd(mut self, cost: Option<f64>) -> Self {
        self.total_cost_in_usd = cost;
        self
    }
}

/// A persisted event with the turn it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[non_exhaustive]
pub struct SessionEventItem {
    pub turn_id: String,
    pub event: SessionEvent,
}

impl SessionEventItem {
    pub fn new(turn_id: impl Into<String>, event: SessionEvent) -> Self {
        Self {
            turn_id: turn_id.into(),
            event,
        }
    }
}

/// A new session: the agent it runs, saved (by name) or inline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CreateSessionRequest {
    #[serde(deserialize_with = "agent_choice")]
    pub agent: CreateSessionAgent,
}

impl CreateSessionRequest {
    pub fn new(agent: CreateSessionAgent) -> Self {
        Self { agent }
    }
}

/// Reads the agent by the key it has (`spec` or `name`), so a bad spec is refused with its own error (which
/// field, which value); the untagged enum (kept for the document's `oneOf`) would only say that no variant
/// matched.
fn agent_choice<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<CreateSessionAgent, D::Error> {
    use serde::de::Error;
    let value = serde_json::Value::deserialize(deserializer)?;
    if value.get("spec").is_some() {
        serde_json::from_value::<SessionAgentSpecBody>(value)
            .map(|inline| CreateSessionAgent::Inline(Box::new(inline)))
            .map_err(D::Error::custom)
    } else {
        serde_json::from_value::<SessionAgentNameRef>(value)
            .map(CreateSessionAgent::Named)
            .map_err(D::Error::custom)
    }
}

/// A saved agent by name, or a spec of the session's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
// Exhaustive: these are the two forms the contract has, and the server must handle each of them.
pub enum CreateSessionAgent {
    Named(SessionAgentNameRef),
    Inline(Box<SessionAgentSpecBody>),
}

/// A saved agent, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SessionAgentNameRef {
    #[schema(value_type = crate::openapi::ResourceName)]
    pub name: String,
}

impl SessionAgentNameRef {
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }
}

/// A spec owned by the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct SessionAgentSpecBody {
    pub spec: AgentSpec,
}

impl SessionAgentSpecBody {
    pub fn new(spec: AgentSpec) -> Self {
        Self { spec }
    }
}
