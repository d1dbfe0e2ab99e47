//! Request and response shapes of the API that are not protocol types: sessions, turns, pages, models and
//! health, as the server writes them. Unknown fields are ignored so that a newer server stays readable.

use serde::{Deserialize, Serialize, Serializer};

/// Query parameters as name and text, in a fixed order.
pub(crate) type QueryPairs = Vec<(&'static str, String)>;
use trueforge_protocol::{
    AgentSpec, ModelProperties, SessionAgent, TurnInputItem, TurnState, UserMessage, UserMessageContent,
};

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

/// The body of `POST /sessions`: `{"agent": {"name"}}` or `{"agent": {"spec"}}`.
#[derive(Serialize)]
pub(crate) struct CreateSessionBody<'a> {
    pub agent: AgentChoiceBody<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum AgentChoiceBody<'a> {
    Named { name: &'a str },
    Inline { spec: &'a AgentSpec },
}

impl<'a> From<&'a SessionAgentChoice> for AgentChoiceBody<'a> {
    fn from(choice: &'a SessionAgentChoice) -> Self {
        match choice {
            SessionAgentChoice::Named(name) => Self::Named { name },
            SessionAgentChoice::Inline(spec) => Self::Inline { spec },
        }
    }
}

/// Schema `Session`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Session {
    pub id: String,
    pub agent: SessionAgent,
    pub title: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
}

/// Schema `Turn`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Turn {
    pub id: String,
    pub session_id: String,
    pub previous_turn_id: Option<String>,
    /// The reference may omit it when empty.
    #[serde(default)]
    pub input: Vec<TurnInputItem>,
    pub state: TurnState,
    pub created_at: String,
}

/// Which turn a new turn continues.
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

impl Serialize for PreviousTurn {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(match self {
            Self::Auto => "auto",
            Self::None => "none",
            Self::Id(id) => id,
        })
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

#[derive(Serialize)]
pub(crate) struct CreateTurnBody<'a> {
    pub input: &'a [TurnInputItem],
    pub previous_turn_id: &'a PreviousTurn,
    pub stream: bool,
}

/// A page of a list and where the next one starts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Page<T> {
    pub data: Vec<T>,
    pub pagination: Pagination,
}

/// Schema `TokenPagination`: no `next_page_token` means this is the last page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Pagination {
    #[serde(default)]
    pub next_page_token: Option<String>,
    #[serde(default)]
    pub previous_page_token: Option<String>,
    pub limit: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SortOrder {
    Asc,
    Desc,
}

impl SortOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Asc => "asc",
            Self::Desc => "desc",
        }
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

/// Schema `AvailableModel`: a model an agent spec may name.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct AvailableModel {
    /// `provider/model`, the name agent specs use.
    pub name: String,
    pub model_id: String,
    pub provider: ModelProviderName,
    #[serde(default)]
    pub properties: ModelProperties,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct ModelProviderName {
    pub name: String,
}

/// The answer of `GET /healthz`: `status` is `ok` when the server can serve.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Health {
    pub status: String,
    #[serde(default)]
    pub version: Option<String>,
    /// Not sent by the reference server.
    #[serde(default)]
    pub database: Option<DatabaseHealth>,
}

impl Health {
    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct DatabaseHealth {
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
}
