//! Cancelling a turn, with the reason the turn ends with.

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;
use trueforge_protocol::CancellationReason;
use trueforge_protocol::sync::lock;

/// A turn's cancellation: one token every model stream and tool call of the turn watches, and the reason
/// of the first cancel.
#[derive(Clone, Default)]
pub struct TurnCancel {
    token: CancellationToken,
    reason: Arc<Mutex<Option<CancellationReason>>>,
}

impl TurnCancel {
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels the turn. The first reason given is the one the turn ends with.
    pub fn cancel(&self, reason: CancellationReason) {
        {
            let mut slot = lock(&self.reason);
            slot.get_or_insert(reason);
        }
        self.token.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    pub fn reason(&self) -> Option<CancellationReason> {
        *lock(&self.reason)
    }

    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    pub async fn cancelled(&self) {
        self.token.cancelled().await;
    }
}
