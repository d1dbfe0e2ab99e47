//! `TurnState`: where a turn is in its life, and what it produced once it ended.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{ActionRequiredEvent, ModelMessageEvent};

/// Schema `TurnState`, discriminated by `status`. A turn is `running` until exactly one terminal
/// state is written; terminal states never change afterwards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "status")]
#[expect(
    clippy::large_enum_variant,
    reason = "a state is built once per turn and mostly moved; boxing would only complicate matching"
)]
pub enum TurnState {
    #[serde(rename = "running")]
    Running,
    /// Finished, possibly paused on `required_actions` the client must resolve in a next turn.
    #[serde(rename = "done")]
    Done {
        /// The root agent's final message; `null` when the turn paused before producing one.
        #[serde(deserialize_with = "crate::nullable::required")]
        #[schema(required = true)]
        output: Option<ModelMessageEvent>,
        required_actions: Vec<ActionRequiredEvent>,
        completed_at: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        metrics: Option<TurnMetrics>,
    },
    #[serde(rename = "cancelled")]
    Cancelled {
        reason: CancellationReason,
        completed_at: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        metrics: Option<TurnMetrics>,
    },
    #[serde(rename = "error")]
    Error {
        message: String,
        completed_at: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        metrics: Option<TurnMetrics>,
    },
}

impl TurnState {
    /// Every state but `running`.
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Self::Running)
    }

    /// The `status` discriminator.
    pub fn status_str(&self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Done { .. } => "done",
            Self::Cancelled { .. } => "cancelled",
            Self::Error { .. } => "error",
        }
    }

    /// When the turn ended; `None` while running.
    pub fn completed_at(&self) -> Option<&str> {
        match self {
            Self::Running => None,
            Self::Done { completed_at, .. }
            | Self::Cancelled { completed_at, .. }
            | Self::Error { completed_at, .. } => Some(completed_at),
        }
    }

    /// Token and cost totals of an ended turn, when recorded.
    pub fn metrics(&self) -> Option<&TurnMetrics> {
        match self {
            Self::Running => None,
            Self::Done { metrics, .. } | Self::Cancelled { metrics, .. } | Self::Error { metrics, .. } => {
                metrics.as_ref()
            }
        }
    }
}

/// Schema `TurnStateCancelledReason`: who or what stopped the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
#[schema(as = TurnStateCancelledReason)]
pub enum CancellationReason {
    /// The turn ran past the server's execution limit.
    ServerExecutionTimeout,
    /// The client asked for it (or stopped listening without a server-side reason).
    ClientCancelled,
    /// A new turn was started on top of this one (barge-in).
    CancelledForNextTurn,
    /// The executor gave the turn up (shutdown, lost lease).
    Abandoned,
}

impl CancellationReason {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ServerExecutionTimeout => "server-execution-timeout",
            Self::ClientCancelled => "client-cancelled",
            Self::CancelledForNextTurn => "cancelled-for-next-turn",
            Self::Abandoned => "abandoned",
        }
    }
}

/// Schema `TurnMetrics`: billable totals of a turn, every field optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TurnMetrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub total_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub total_output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub total_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub total_cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub total_cache_write_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub total_reasoning_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub total_cost_in_usd: Option<f64>,
    /// Our addition: tool calls executed (all threads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub total_tool_calls: Option<u64>,
    /// Our addition: sub-agents spawned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub total_sub_agents: Option<u64>,
    /// Our addition: context compactions (summaries or the fallback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub total_summarizations: Option<u64>,
}
