//! A turn's life after it is created: starting it for a caller, cancelling it wherever it runs, renewing
//! the leases of the turns running here and resuming turns whose executor died, shutting down. Every
//! operation goes through the one registry of live turns (`crate::lifecycle::Lifecycle`).

use std::time::Duration;

use tokio::task::JoinSet;
use trueforge_protocol::{CancellationReason, SessionId, TenantId};
use trueforge_store::StoreError;
use trueforge_store::session::model::TurnKey;

use super::{Runtime, TurnRequest, TurnStart};
use crate::error::AgentError;

/// How long a lease lasts, and how often the runtime renews its turns' leases and looks for orphans.
#[derive(Debug, Clone, Copy)]
pub struct LeaseTiming {
    pub ttl: Duration,
    pub renew_every: Duration,
}

impl LeaseTiming {
    /// Renewal every third of the lease, so two renewals can fail before it runs out.
    pub fn for_ttl(ttl: Duration) -> Self {
        Self {
            ttl,
            renew_every: (ttl / 3).max(Duration::from_millis(100)),
        }
    }
}

impl Runtime {
    /// Creates the turn and starts it; returns once its first event (`turn.created`) is on the bus, so a
    /// subscriber right after finds the stream. From here the turn runs whatever the caller does.
    ///
    /// A request whose idempotency key already created a turn in the session, with the same request (a
    /// client's retry), creates, starts and cancels nothing: it answers with that turn.
    pub async fn start_turn(&self, request: TurnRequest) -> Result<TurnStart, AgentError> {
        let (tenant_id, session_id) = (request.tenant_id.clone(), request.session_id.clone());
        match self.create_turn(request).await {
            Ok(mut started) => {
                started.first_event().await;
                Ok(TurnStart::Started(started.key))
            }
            Err(AgentError::AlreadyCreated(turn_id)) => {
                Ok(TurnStart::Existing(TurnKey::new(&tenant_id, &session_id, &turn_id)))
            }
            Err(other) => Err(other),
        }
    }

    /// Whether shutdown has begun (new turns are refused).
    pub fn is_stopping(&self) -> bool {
        self.lifecycle.is_stopping()
    }

    /// This process's executor id (the owner of its turns' leases).
    pub fn owner(&self) -> &str {
        &self.lifecycle.owner
    }

    /// Whether the turn runs here.
    pub fn is_running(&self, key: &TurnKey) -> bool {
        self.lifecycle.is_running(key)
    }

    /// The turns running here.
    pub fn running(&self) -> Vec<TurnKey> {
        self.lifecycle.running()
    }

    /// Waits until the turn's stream has ended (at once when it does not run here).
    pub async fn wait_for_end(&self, key: &TurnKey) {
        self.lifecycle.wait_for_end(key).await;
    }

    /// Cancels a running turn, wherever it runs. Here: its task is cancelled and its own `turn.done`
    /// follows. On another replica (hosted mode): the cancel relay asks it to, and its `turn.done` follows
    /// there. Nowhere (its executor is gone): the turn is frozen in the store and the stored `turn.done` is
    /// published, so subscribers end too. A turn that already ended is left alone.
    pub async fn cancel(&self, key: &TurnKey, reason: CancellationReason) -> Result<(), StoreError> {
        if self.lifecycle.cancel(key, reason) {
            return Ok(());
        }
        if let Some(relay) = &self.cancel_relay {
            match relay.cancel_elsewhere(key, reason).await {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(turn = %key.turn_id, %error, "could not ask the other replicas to cancel; freezing the turn");
                }
            }
        }
        self.freeze(key, reason).await
    }

    /// Cancels the turn if it runs here (its own `turn.done` follows); `false` when it does not. What a
    /// cancel relay calls on the replica running the turn.
    pub fn cancel_here(&self, key: &TurnKey, reason: CancellationReason) -> bool {
        self.lifecycle.cancel(key, reason)
    }

    async fn freeze(&self, key: &TurnKey, reason: CancellationReason) -> Result<(), StoreError> {
        self.lifecycle.freeze_with(key, self.lifecycle.freezing(reason)).await
    }

    /// Shutdown: refuses new turns from now on, cancels every running turn as `abandoned` and waits (up to
    /// `grace`) for their `turn.done`. Turns that started while it ran are cancelled too.
    pub async fn shutdown(&self, grace: Duration) {
        self.lifecycle.stop();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let running = self.running();
            if running.is_empty() {
                return;
            }
            let mut waits = JoinSet::new();
            for key in running {
                self.lifecycle.cancel(&key, CancellationReason::Abandoned);
                let lifecycle = self.lifecycle.clone();
                waits.spawn(async move { lifecycle.wait_for_end(&key).await });
            }
            if tokio::time::timeout_at(deadline, waits.join_all()).await.is_err() {
                tracing::warn!("some turns did not end within the graceful shutdown timeout");
                return;
            }
        }
    }

    /// Cancels every turn of a session running here and waits (up to `grace`) for their end; forgets the
    /// contexts kept for it (the session is being deleted).
    pub async fn cancel_session(&self, tenant_id: &TenantId, session_id: &SessionId, grace: Duration) {
        self.kept.forget(tenant_id, session_id);
        let keys: Vec<TurnKey> = self
            .running()
            .into_iter()
            .filter(|key| key.tenant_id == *tenant_id && key.session_id == *session_id)
            .collect();
        for key in &keys {
            self.lifecycle.cancel(key, CancellationReason::ClientCancelled);
        }
        let waits = keys.iter().map(|key| self.lifecycle.wait_for_end(key));
        if tokio::time::timeout(grace, futures::future::join_all(waits))
            .await
            .is_err()
        {
            tracing::warn!(
                session = session_id.as_str(),
                "turns of a deleted session did not end in time"
            );
        }
    }

    /// Renews the leases of the turns running here; then claims and resumes turns whose lease ran out
    /// (their executor died, or this process was restarted).
    pub async fn maintain_leases(&self, timing: LeaseTiming) {
        if self.is_stopping() {
            return;
        }
        let owner = self.owner().to_owned();
        let ttl_ms = i64::try_from(timing.ttl.as_millis()).unwrap_or(i64::MAX);
        for key in self.running() {
            if let Err(error) = self.store.renew_lease(&key, &owner, ttl_ms).await {
                tracing::debug!(turn = %key.turn_id, %error, "lease not renewed (the turn may have just ended)");
            }
        }
        let expired = match self.store.list_expired_leases(25).await {
            Ok(expired) => expired,
            Err(error) => {
                tracing::warn!(%error, "could not list expired turn leases");
                return;
            }
        };
        for lease in expired {
            let key = TurnKey::new(&lease.tenant_id, &lease.session_id, &lease.turn_id);
            if self.is_stopping() {
                return;
            }
            // A turn still settling here may be storing its end (its store failed): not an orphan.
            if self.is_running(&key) {
                continue;
            }
            if let Err(error) = self.store.claim_expired_lease(&key, &owner, ttl_ms).await {
                tracing::debug!(turn = %key.turn_id, %error, "lease claimed by someone else");
                continue;
            }
            crate::telemetry::lease_claimed();
            tracing::info!(turn = %key.turn_id, previous_owner = %lease.owner, "resuming a turn whose executor is gone");
            if let Err(error) = self.resume_turn(&key).await {
                crate::telemetry::turn_recovered("failed");
                tracing::error!(turn = %key.turn_id, %error, "could not resume a turn; ending it");
                if let Err(error) = self.freeze(&key, CancellationReason::Abandoned).await {
                    tracing::error!(turn = %key.turn_id, %error, "could not end a turn that failed to resume");
                }
            } else {
                crate::telemetry::turn_recovered("resumed");
            }
        }
    }
}
