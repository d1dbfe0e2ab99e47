//! What the client's calls take: the agent of a new session, a new turn, the queries of the lists. The
//! request and response bodies are `trueforge_protocol::api`'s, re-exported here; they ignore unknown fields
//! so that a newer server stays readable.

use trueforge_protocol::api::{CreateSessionAgent, CreateTurnRequest, SessionAgentNameRef, SessionAgentSpecBody};
use trueforge_protocol::{AgentSpec, TurnInputItem, UserMessage, UserMessageContent};

// The bodies themselves are the protocol's, shared with the server; the names are this crate's public API.
pub use trueforge_protocol::api::{
    AvailableModel, AvailableModelProvider as ModelProviderName, DatabaseHealth, Health, Page, Pagination,
    PreviousTurn, Schedule, ScheduleManifest, ScheduleRequest, ScheduleRun, ScheduleRunStatus, ScheduleRunTrigger,
    ScheduleState, Session, SortOrder, Turn,
};

/// Query parameters as name and text, in a fixed order.
pub(crate) type QueryPairs = Vec<(&'static str, String)>;

/// Which agent a new session runs: a saved agent by name, or a spec owned by the session.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SessionAgentChoice {
    Named(String),
    Inline(Box<AgentSpec>),
}

impl SessionAgentChoice {
    pub fn named(name: impl Into<String>) -> Self {
        Self::Named(name.into())
    }

    pub fn inline(spec: AgentSpec) -> Self {
        Self::Inline(Box::new(spec))
    }

    /// An inline spec on `model` (`provider/model`) with every other setting at its default.
    pub fn model(model: impl Into<String>) -> Self {
        Self::inline(AgentSpec::for_model(model))
    }
}

/// `POST /sessions` names a saved agent as `{"name"}` and carries an inline spec as `{"spec"}`.
impl From<SessionAgentChoice> for CreateSessionAgent {
    fn from(choice: SessionAgentChoice) -> Self {
        match choice {
            SessionAgentChoice::Named(name) => Self::Named(SessionAgentNameRef::new(name)),
            SessionAgentChoice::Inline(spec) => Self::Inline(Box::new(SessionAgentSpecBody::new(*spec))),
        }
    }
}

/// What a new turn is given. `stream` is not here: each call of the client picks it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CreateTurn {
    /// User messages, or tool approvals and tool responses answering a paused turn; empty to continue
    /// after an MCP authorization.
    pub input: Vec<TurnInputItem>,
    pub previous_turn_id: PreviousTurn,
}

impl CreateTurn {
    pub fn new(input: Vec<TurnInputItem>) -> Self {
        Self {
            input,
            previous_turn_id: PreviousTurn::Auto,
        }
    }

    /// One plain-text user message.
    pub fn message(text: impl Into<String>) -> Self {
        Self::new(vec![TurnInputItem::UserMessage(UserMessage {
            content: UserMessageContent::Text(text.into()),
        })])
    }

    pub fn with_previous_turn(mut self, previous: PreviousTurn) -> Self {
        self.previous_turn_id = previous;
        self
    }
}

impl CreateTurn {
    /// The body of `POST …/turns`; `stream` is the call's.
    pub(crate) fn request(self, stream: bool) -> CreateTurnRequest {
        CreateTurnRequest::new(self.input, Some(self.previous_turn_id), Some(stream))
    }
}

/// Adds `name=value` when the value is set.
fn push<T: ToString>(pairs: &mut QueryPairs, name: &'static str, value: Option<&T>) {
    if let Some(value) = value {
        pairs.push((name, value.to_string()));
    }
}

/// Query of `GET /sessions`; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListSessions {
    pub limit: Option<u32>,
    /// By `updated_at`; the server's default is newest first.
    pub order: Option<SortOrder>,
    pub page_token: Option<String>,
    /// RFC 3339 with an offset; inclusive bounds on `created_at`.
    pub start_timestamp: Option<String>,
    pub end_timestamp: Option<String>,
    pub agent_id: Option<String>,
}

impl ListSessions {
    pub(crate) fn pairs(&self) -> QueryPairs {
        let mut pairs = QueryPairs::new();
        push(&mut pairs, "limit", self.limit.as_ref());
        push(&mut pairs, "order", self.order.map(SortOrder::as_str).as_ref());
        push(&mut pairs, "page_token", self.page_token.as_ref());
        push(&mut pairs, "start_timestamp", self.start_timestamp.as_ref());
        push(&mut pairs, "end_timestamp", self.end_timestamp.as_ref());
        push(&mut pairs, "agent_id", self.agent_id.as_ref());
        pairs
    }
}

/// Query of `GET …/turns`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListTurns {
    pub limit: Option<u32>,
    pub page_token: Option<String>,
}

impl ListTurns {
    pub(crate) fn pairs(&self) -> QueryPairs {
        let mut pairs = QueryPairs::new();
        push(&mut pairs, "limit", self.limit.as_ref());
        push(&mut pairs, "page_token", self.page_token.as_ref());
        pairs
    }
}

/// Query of `GET …/turns/{turn_id}/events`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListTurnEvents {
    pub limit: Option<u32>,
    pub page_token: Option<String>,
    /// By event id; the server's default is oldest first.
    pub order: Option<SortOrder>,
}

impl ListTurnEvents {
    pub(crate) fn pairs(&self) -> QueryPairs {
        let mut pairs = QueryPairs::new();
        push(&mut pairs, "limit", self.limit.as_ref());
        push(&mut pairs, "page_token", self.page_token.as_ref());
        push(&mut pairs, "order", self.order.map(SortOrder::as_str).as_ref());
        pairs
    }
}
