//! A Rust client of the TrueForge HTTP API, for the CLI and anything else that talks to a server.
//!
//! [`Client`] has a typed method per call (sessions, turns, events, models, health). Turns stream as a
//! [`TurnStream`] of [`StreamedEvent`]s that resumes on its own when its connection breaks, so a consumer
//! sees every event of the turn exactly once, in order, up to `turn.done`. Failures are one
//! [`ClientError`].
//!
//! ```no_run
//! # async fn run() -> Result<(), trueforge_client::ClientError> {
//! use trueforge_client::{Client, CreateTurn, SessionAgentChoice};
//!
//! let client = Client::new("http://127.0.0.1:8790")?;
//! let session = client.create_session(SessionAgentChoice::model("fake/fake-model")).await?;
//! let events = client
//!     .stream_turn(&session.id, CreateTurn::message("hello"))
//!     .await?
//!     .collect_all()
//!     .await?;
//! let answer: String = events.iter().filter_map(|event| event.text_delta()).map(|(_, text)| text).collect();
//! # let _ = answer;
//! # Ok(())
//! # }
//! ```

mod client;
mod error;
mod stream;
mod types;

pub use client::Client;
pub use error::ClientError;
pub use stream::{ResumePolicy, StreamedEvent, TurnStream};
pub use types::{
    AvailableModel, CreateTurn, DatabaseHealth, Health, ListSessions, ListTurnEvents, ListTurns, ModelProviderName,
    Page, Pagination, PreviousTurn, Schedule, ScheduleManifest, ScheduleRequest, ScheduleRun, ScheduleRunStatus,
    ScheduleRunTrigger, ScheduleState, Session, SessionAgentChoice, SortOrder, Turn,
};

/// The protocol types that appear in this crate's API, so callers need not depend on it themselves.
pub use trueforge_protocol as protocol;
