//! Errors of the runtime's entry points.

use trueforge_protocol::TurnId;
use trueforge_store::StoreError;

use crate::model::ModelResolveError;
use crate::tools::ToolError;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The turn's input does not fit the conversation (the reference's `invalid_send_input`).
    #[error("{0}")]
    InvalidInput(String),
    #[error("session not found")]
    SessionNotFound,
    /// Only the session's creator may create its turns.
    #[error("only the session creator can create turns")]
    NotSessionCreator,
    #[error("turn {0} not found")]
    TurnNotFound(TurnId),
    /// A resume was asked for a turn that already ended.
    #[error("turn {0} is not running")]
    TurnNotRunning(TurnId),
    #[error("agent {0} not found")]
    AgentNotFound(String),
    /// The agent spec cannot run (bad config, unknown MCP server).
    #[error("{0}")]
    InvalidSpec(String),
    #[error(transparent)]
    Model(#[from] ModelResolveError),
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Shutdown has begun: no turn starts or resumes any more.
    #[error("The server is shutting down")]
    ShuttingDown,
    /// A bug in the runtime (a task panicked).
    #[error("internal error: {0}")]
    Internal(String),
}
