//! The one place errors become HTTP answers: `{"error":{"message":…}}` with the reference's statuses.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use trueforge_agent::AgentError;
use trueforge_protocol::{SessionId, TurnId};
use trueforge_store::StoreError;

/// An error answer: status and the message clients see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

pub type ApiResult<T> = Result<T, ApiError>;

/// Error messages quote the offending input (a name, a path, a value); one that sent megabytes gets back
/// only their start, so an error is never an amplifier and never floods a log or a terminal.
pub const MAX_MESSAGE_CHARS: usize = 500;

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: shortened(message.into()),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    pub fn precondition_failed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PRECONDITION_FAILED, message)
    }

    /// An unexpected failure: logged with its cause, answered without it (the cause may hold internals).
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error")
    }

    pub fn session_not_found(session_id: &SessionId) -> Self {
        Self::not_found(format!("Session not found: {session_id}"))
    }

    pub fn turn_not_found(turn_id: &TurnId) -> Self {
        Self::not_found(format!("Turn not found: {turn_id}"))
    }
}

/// `message` cut to [`MAX_MESSAGE_CHARS`] characters, marked as cut.
fn shortened(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => message,
        Some((end, _)) => format!("{}… (truncated)", &message[..end]),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(json!({"error": {"message": self.message}}))).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::SessionNotFound { session_id } => Self::session_not_found(&session_id),
            StoreError::TurnNotFound { turn_id } | StoreError::PreviousTurnNotFound { turn_id } => {
                Self::turn_not_found(&turn_id)
            }
            StoreError::InvalidPageToken => Self::bad_request("Invalid page token"),
            StoreError::MissingStoredSecret(message) => Self::bad_request(message),
            StoreError::InvalidInput(error) => Self::unprocessable(error.to_string()),
            // The server's storage, not the request, failed (a full disk): worth retrying later, and a load
            // balancer or client should see that it is the service that is unavailable.
            StoreError::Storage(reason) => {
                tracing::error!(%reason, "the database cannot store data");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The server cannot store data right now (its database is full or failing); try again later",
                )
            }
            other => Self::internal(other),
        }
    }
}

impl From<AgentError> for ApiError {
    fn from(error: AgentError) -> Self {
        match error {
            AgentError::InvalidInput(error) => Self::unprocessable(error.to_string()),
            AgentError::InvalidSpec(error) => Self::unprocessable(error.to_string()),
            // Another user's session is as absent as a missing one (the reference's 403 tells it exists).
            AgentError::SessionNotFound | AgentError::NotSessionCreator => Self::not_found("Session not found"),
            AgentError::TurnNotFound(turn_id) => Self::turn_not_found(&turn_id),
            AgentError::AgentNotFound(agent_id) => Self::unprocessable(format!("Agent not found: {agent_id}")),
            AgentError::Model(error) => Self::unprocessable(error.message),
            AgentError::Tool(error) => Self::unprocessable(error.to_string()),
            AgentError::Store(error) => error.into(),
            // The agent needs a sandbox this server cannot give it now: the request cannot be served as it
            // is (the reference's 422); a provider that failed is a failed dependency.
            AgentError::Sandbox(error @ trueforge_sandbox::SandboxError::Provider(_)) => {
                Self::new(StatusCode::FAILED_DEPENDENCY, error.to_string())
            }
            AgentError::Sandbox(error) => Self::unprocessable(error.to_string()),
            reused @ AgentError::IdempotencyKeyReused(_) => Self::unprocessable(reused.to_string()),
            // `start_turn` answers with the turn instead; a caller that surfaces it asked to create it anew.
            created @ AgentError::AlreadyCreated(_) => Self::conflict(created.to_string()),
            AgentError::ShuttingDown => Self::new(StatusCode::SERVICE_UNAVAILABLE, "The server is shutting down"),
            other @ (AgentError::TurnNotRunning(_) | AgentError::Internal(_)) => Self::internal(other),
        }
    }
}
