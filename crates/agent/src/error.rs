//! Errors of the runtime's entry points.

use trueforge_protocol::{ApprovalScope, IdempotencyKey, ProtocolError, ThreadId, TurnId};
use trueforge_store::StoreError;

use crate::model::ModelResolveError;
use crate::tools::ToolError;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The turn's input does not fit the conversation (the reference's `invalid_send_input`).
    #[error(transparent)]
    InvalidInput(#[from] InputError),
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
    /// Saved agents have no id type of their own: their ids are the settings store's and the wire's strings.
    #[error("agent {0} not found")]
    AgentNotFound(String),
    /// The agent spec cannot run (a value its schema refuses).
    #[error("{0}")]
    InvalidSpec(#[source] ProtocolError),
    #[error(transparent)]
    Model(#[from] ModelResolveError),
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The turn needs a sandbox and none could be provided or used.
    #[error(transparent)]
    Sandbox(#[from] trueforge_sandbox::SandboxError),
    /// The request's idempotency key already created this turn, for the same request: nothing was started.
    /// [`Runtime::start_turn`](crate::Runtime::start_turn) answers with that turn instead.
    #[error("the idempotency key already created turn {0}")]
    AlreadyCreated(TurnId),
    /// The idempotency key already created a turn in this session, for another request.
    #[error(
        "the Idempotency-Key '{0}' was already used in this session with a different request; \
         a retry must repeat the original request, a new request needs a new key"
    )]
    IdempotencyKeyReused(IdempotencyKey),
    /// Shutdown has begun: no turn starts or resumes any more.
    #[error("The server is shutting down")]
    ShuttingDown,
    /// A bug in the runtime: a thread's task panicked (or was aborted), so the turn cannot go on.
    #[error("internal error: a thread of the turn failed: {0}")]
    Internal(#[source] tokio::task::JoinError),
}

/// Why a turn's input was refused before anything was written. The messages reach the API's 422 answers
/// as they are.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A value the input's schema refuses.
    #[error(transparent)]
    Rules(#[from] ProtocolError),
    #[error("the approval scope '{scope}' is not allowed on this server; the broadest allowed scope is '{max}'")]
    ScopeNotAllowed { scope: ApprovalScope, max: ApprovalScope },
    #[error(
        "the approval scope 'agent' needs a session of a saved agent; this session's agent is given inline \
         (use 'session' or 'once')"
    )]
    AgentScopeOfInlineAgent,
    #[error("the approval scope 'agent' is not available here: nothing remembers approvals for agents")]
    AgentScopeUnavailable,
    #[error("a user message must not be empty")]
    EmptyUserMessage,
    #[error("the conversation has no root thread")]
    NoRootThread,
    #[error("a user message cannot be sent while approvals or questions are pending")]
    MessageWhilePending,
    #[error("unknown thread_id '{0}'")]
    UnknownThread(ThreadId),
    #[error("tool call '{0}' is answered twice")]
    AnsweredTwice(String),
    #[error("no pending approval for tool_call_id '{0}'")]
    NoPendingApproval(String),
    #[error("no pending question for tool_call_id '{0}'")]
    NoPendingQuestion(String),
    /// The calls (by id) that wait for the user and the input left unanswered.
    #[error("the input must resolve every tool call waiting for the user; missing: {}", .0.join(", "))]
    UnresolvedCalls(Vec<String>),
    /// A file that must go into the sandbox, sent to an agent without one.
    #[error(
        "the file '{0}' needs a sandbox (only images and PDFs are sent to the model directly); \
         enable config.sandbox for this agent"
    )]
    SandboxRequired(String),
    #[error("the file '{name}' is too large: {size} bytes, the limit is {limit}")]
    FileTooLarge { name: String, size: u64, limit: u64 },
    #[error("the file '{name}' cannot be read: {reason}")]
    InvalidFile { name: String, reason: &'static str },
    /// The input could not be written as JSON to fingerprint it for its idempotency key.
    #[error("the input cannot be written as JSON: {0}")]
    NotJson(#[source] serde_json::Error),
}
