//! The turn runtime: threads running the agent loop, the orchestrator of a turn's threads, the built-in
//! capabilities, and the entry points that create, run and resume turns.

pub mod admission;
pub mod approvals;
pub mod bookkeeping;
pub mod capabilities;
pub mod context;
pub mod error;
pub mod journal;
pub mod live;
pub mod metrics;
pub mod model;
pub mod orchestrator;
pub mod prompt;
pub mod runtime;
pub mod sandbox;
pub mod seams;
pub mod setup;
pub mod thread;
pub mod tools;

mod cancel;
mod context_cache;
mod finish;
mod idempotency;
mod ids;
mod lifecycle;
mod recovery;
mod telemetry;

pub use cancel::TurnCancel;
pub use error::{AgentError, InputError};
pub use ids::{EventIds, now_iso};
pub use journal::StreamItem;
pub use live::LiveStreams;
pub use model::{Model, ModelResolveError, ModelResolver, ResolvedModel};
pub use runtime::{LeaseTiming, PreviousTurn, Runtime, RuntimeOptions, StartedTurn, TurnRequest, TurnStart};
pub use seams::{AgentApprovals, AgentDirectory, StaticToolSets, StoredAgentApprovals, StoredAgents, ToolSetResolver};
