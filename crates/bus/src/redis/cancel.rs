//! Cancelling a turn that runs on another replica, over Redis pub/sub: the request goes to every replica
//! on one channel; the replica running the turn cancels it, and every replica answers on the asker's own
//! channel whether it did. `PUBLISH` tells how many replicas listen, so the asker knows when all have
//! answered: a turn whose executor is gone is known to run nowhere within a round trip, not after a timeout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use redis::Client;
use redis::aio::ConnectionManager;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use trueforge_protocol::sync::lock;
use trueforge_protocol::{CancellationReason, TurnKey};

use super::{backend, connect_commands};
use crate::{BusError, CancelRelay, LocalCancel};

/// The channel every replica listens on for cancel requests.
const REQUESTS: &str = "trueforge:turn:cancel";
/// The wait after a lost subscription before subscribing again, doubled up to `RETRY_MAX`.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(2);

fn replies_channel(replica: &str) -> String {
    format!("trueforge:turn:cancel:reply:{replica}")
}

#[derive(Serialize, Deserialize)]
struct Request {
    id: String,
    from: String,
    tenant_id: String,
    session_id: String,
    turn_id: String,
    reason: CancellationReason,
}

#[derive(Serialize, Deserialize)]
struct Reply {
    id: String,
    cancelled: bool,
}

/// Cancel requests between replicas on Redis pub/sub.
#[derive(Clone)]
pub struct RedisCancelRelay {
    inner: Arc<Inner>,
}

struct Inner {
    commands: ConnectionManager,
    replica: String,
    /// The asks waiting for answers, by request id.
    pending: Mutex<HashMap<String, mpsc::UnboundedSender<bool>>>,
    /// How long an ask waits for every replica to answer.
    timeout: Duration,
    /// Cancels a turn running here; until it is set, nothing runs here.
    local: OnceLock<LocalCancel>,
}

impl RedisCancelRelay {
    /// Connects and subscribes (fails when Redis does not answer), so this replica is counted and answers
    /// from now on. `replica` names this process among the replicas.
    pub async fn connect(url: &str, replica: &str, timeout: Duration) -> Result<Self, BusError> {
        let client = Client::open(url).map_err(backend)?;
        let commands = connect_commands(&client).await?;
        let inner = Arc::new(Inner {
            commands,
            replica: replica.to_owned(),
            pending: Mutex::new(HashMap::new()),
            timeout,
            local: OnceLock::new(),
        });
        let subscription = subscribe(&client, replica).await?;
        tokio::spawn(listen(Arc::downgrade(&inner), client, subscription));
        Ok(Self { inner })
    }

    /// Sets how this replica cancels a turn running here (once; later calls are ignored).
    pub fn serve(&self, local: LocalCancel) {
        let _ = self.inner.local.set(local);
    }
}

async fn subscribe(client: &Client, replica: &str) -> Result<redis::aio::PubSub, BusError> {
    let mut pubsub = tokio::time::timeout(Duration::from_secs(6), client.get_async_pubsub())
        .await
        .map_err(|_| BusError::Backend("Redis did not answer within 6 s".to_owned()))?
        .map_err(backend)?;
    pubsub.subscribe(REQUESTS).await.map_err(backend)?;
    pubsub.subscribe(replies_channel(replica)).await.map_err(backend)?;
    Ok(pubsub)
}

/// Answers requests and routes replies until the relay is dropped; subscribes again after a lost
/// connection (logged once per outage).
async fn listen(inner: std::sync::Weak<Inner>, client: Client, first: redis::aio::PubSub) {
    let mut subscription = Some(first);
    let mut retry = RETRY_FIRST;
    loop {
        let pubsub = match subscription.take() {
            Some(pubsub) => pubsub,
            None => {
                let Some(replica) = inner.upgrade().map(|inner| inner.replica.clone()) else {
                    return;
                };
                match subscribe(&client, &replica).await {
                    Ok(pubsub) => {
                        tracing::info!("cancel requests between replicas flow again");
                        retry = RETRY_FIRST;
                        pubsub
                    }
                    Err(_) => {
                        tokio::time::sleep(retry).await;
                        retry = (retry * 2).min(RETRY_MAX);
                        continue;
                    }
                }
            }
        };
        let mut messages = pubsub.into_on_message();
        while let Some(message) = messages.next().await {
            let Some(inner) = inner.upgrade() else { return };
            let payload: Vec<u8> = match message.get_payload() {
                Ok(payload) => payload,
                Err(_) => continue,
            };
            if message.get_channel_name() == REQUESTS {
                tokio::spawn(answer(inner, payload));
            } else if let Ok(reply) = serde_json::from_slice::<Reply>(&payload)
                && let Some(waiting) = lock(&inner.pending).get(&reply.id)
            {
                let _ = waiting.send(reply.cancelled);
            }
        }
        if inner.strong_count() == 0 {
            return;
        }
        tracing::warn!("lost the Redis subscription for cancel requests between replicas; subscribing again");
    }
}

async fn answer(inner: Arc<Inner>, payload: Vec<u8>) {
    let Ok(request) = serde_json::from_slice::<Request>(&payload) else {
        tracing::debug!("ignored a malformed cancel request");
        return;
    };
    let key = TurnKey::new(
        request.tenant_id.as_str(),
        request.session_id.as_str(),
        request.turn_id.as_str(),
    );
    let cancelled = inner.local.get().is_some_and(|local| local(&key, request.reason));
    if cancelled {
        tracing::info!(turn = %key.turn_id, from = %request.from, "cancelled a turn at another replica's request");
    }
    let reply = Reply {
        id: request.id,
        cancelled,
    };
    let Ok(reply) = serde_json::to_vec(&reply) else { return };
    let sent: Result<i64, redis::RedisError> = redis::cmd("PUBLISH")
        .arg(replies_channel(&request.from))
        .arg(reply)
        .query_async(&mut inner.commands.clone())
        .await;
    if let Err(error) = sent {
        tracing::warn!(%error, "could not answer a cancel request");
    }
}

#[async_trait]
impl CancelRelay for RedisCancelRelay {
    async fn cancel_elsewhere(&self, key: &TurnKey, reason: CancellationReason) -> Result<bool, BusError> {
        let inner = &self.inner;
        let id = ulid::Ulid::new().to_string();
        let request = Request {
            id: id.clone(),
            from: inner.replica.clone(),
            tenant_id: key.tenant_id.to_string(),
            session_id: key.session_id.to_string(),
            turn_id: key.turn_id.to_string(),
            reason,
        };
        let payload = serde_json::to_vec(&request).map_err(|error| BusError::Backend(error.to_string()))?;
        let (sender, mut answers) = mpsc::unbounded_channel();
        lock(&inner.pending).insert(id.clone(), sender);
        let asked = async {
            let listeners: i64 = redis::cmd("PUBLISH")
                .arg(REQUESTS)
                .arg(payload)
                .query_async(&mut inner.commands.clone())
                .await
                .map_err(backend)?;
            let mut answered = 0;
            let all = tokio::time::timeout(inner.timeout, async {
                while answered < listeners {
                    match answers.recv().await {
                        Some(true) => return true,
                        Some(false) => answered += 1,
                        None => break,
                    }
                }
                false
            })
            .await;
            match all {
                Ok(cancelled) => Ok(cancelled),
                Err(_) => {
                    tracing::warn!(turn = %key.turn_id, listeners, "not every replica answered a cancel request in time");
                    Ok(false)
                }
            }
        }
        .await;
        lock(&inner.pending).remove(&id);
        asked
    }
}
