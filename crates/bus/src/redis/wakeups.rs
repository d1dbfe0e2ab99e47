//! This process's one stream reader: a task blocking in `XREAD` on every stream a local subscriber waits
//! on, which wakes those subscribers when entries arrive. A private control stream is read with them, so a
//! subscriber to a stream the reader does not read yet can interrupt the block.
//!
//! The reader carries no events: a woken subscriber reads from its own cursor. So a subscriber that starts
//! reading at any moment misses nothing: it registers (marking the wake-ups seen) before it reads, and any
//! entry added later is after the reader's position for that stream and wakes it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Client, Value};
use tokio::sync::watch;
use trueforge_protocol::sync::lock;

use super::{COMMAND_TIMEOUT, backend};
use crate::{BusError, StreamKey};

/// How long one `XREAD` blocks; after it the reader looks again at which streams have subscribers.
const BLOCK: Duration = Duration::from_secs(10);
/// Entries taken per stream per `XREAD` (only their ids matter).
const COUNT: usize = 64;
/// The wait after a failed read before reconnecting, doubled up to `RETRY_MAX`.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(2);
/// The control stream's life, renewed by every wake-up written to it.
const CONTROL_TTL_SECONDS: u64 = 3600;

pub(super) struct Wakeups {
    streams: Mutex<HashMap<String, Watched>>,
    control: String,
    commands: ConnectionManager,
}

struct Watched {
    wake: watch::Sender<u64>,
    /// The id of the last entry the reader has seen (or the first subscriber's cursor).
    last_id: String,
}

impl Wakeups {
    pub(super) fn start(client: Client, commands: ConnectionManager) -> Arc<Self> {
        let control = format!("trueforge:bus:wake:{}", ulid::Ulid::new().to_string().to_lowercase());
        let wakeups = Arc::new(Self {
            streams: Mutex::new(HashMap::new()),
            control,
            commands,
        });
        tokio::spawn(read_loop(Arc::downgrade(&wakeups), client));
        wakeups
    }

    /// Wake-ups for `key`, whose subscriber has seen the events up to `after`.
    pub(super) async fn register(&self, key: &StreamKey, after: u64) -> watch::Receiver<u64> {
        let (receiver, new) = {
            let mut streams = lock(&self.streams);
            match streams.get(key.as_str()) {
                // Still in the map means still read by the current `XREAD` or the next one.
                Some(watched) => (watched.wake.subscribe(), false),
                None => {
                    let (wake, receiver) = watch::channel(0);
                    let last_id = format!("{after}-1");
                    streams.insert(key.as_str().to_owned(), Watched { wake, last_id });
                    (receiver, true)
                }
            }
        };
        if new {
            self.interrupt().await;
        }
        receiver
    }

    /// Makes the reader's current `XREAD` return, so it reads the new stream too.
    async fn interrupt(&self) {
        let written: Result<(), redis::RedisError> = redis::pipe()
            .cmd("XADD")
            .arg(&self.control)
            .arg("MAXLEN")
            .arg("~")
            .arg(64)
            .arg("*")
            .arg("w")
            .arg(1)
            .ignore()
            .cmd("EXPIRE")
            .arg(&self.control)
            .arg(CONTROL_TTL_SECONDS)
            .ignore()
            .query_async(&mut self.commands.clone())
            .await;
        if let Err(error) = written {
            // The reader picks the stream up at its next round (within `BLOCK`) anyway.
            tracing::debug!(%error, "could not wake the stream reader");
        }
    }

    /// The streams with subscribers and the ids to read after; forgets the others.
    fn watched(&self) -> Vec<(String, String)> {
        let mut streams = lock(&self.streams);
        streams.retain(|_, watched| watched.wake.receiver_count() > 0);
        streams
            .iter()
            .map(|(key, watched)| (key.clone(), watched.last_id.clone()))
            .collect()
    }

    fn wake_all(&self) {
        for watched in lock(&self.streams).values() {
            watched.wake.send_modify(|version| *version = version.wrapping_add(1));
        }
    }

    fn woken(&self, key: &str, last_id: String) {
        if let Some(watched) = lock(&self.streams).get_mut(key) {
            watched.last_id = last_id;
            watched.wake.send_modify(|version| *version = version.wrapping_add(1));
        }
    }
}

async fn connect(client: &Client) -> Result<MultiplexedConnection, BusError> {
    // Its own connection: a blocked XREAD holds the connection it is sent on.
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(COMMAND_TIMEOUT))
        .set_response_timeout(Some(BLOCK + COMMAND_TIMEOUT));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(backend)
}

/// Runs until the bus is dropped. A lost Redis is logged once, retried with a growing pause, and logged
/// again when it is back; subscribers meanwhile see their own reads fail and fall back to the store.
async fn read_loop(wakeups: std::sync::Weak<Wakeups>, client: Client) {
    let mut connection: Option<MultiplexedConnection> = None;
    let mut control_last = "0-0".to_owned();
    let mut retry = RETRY_FIRST;
    let mut failing = false;
    loop {
        let Some(this) = wakeups.upgrade() else { return };
        let result = async {
            let connection = match &mut connection {
                Some(connection) => connection,
                None => connection.insert(connect(&client).await?),
            };
            read_once(&this, connection, &mut control_last).await
        }
        .await;
        drop(this);
        match result {
            Ok(()) => {
                if failing {
                    tracing::info!("the event bus's Redis answers again");
                    failing = false;
                }
                retry = RETRY_FIRST;
            }
            Err(error) => {
                if !failing {
                    tracing::warn!(%error, "the event bus's stream reader lost Redis; retrying");
                    failing = true;
                }
                // Waiting subscribers read now: they find Redis gone and fall back to the store, rather than
                // waiting for a wake-up that cannot come.
                if let Some(this) = wakeups.upgrade() {
                    this.wake_all();
                }
                connection = None;
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(RETRY_MAX);
            }
        }
    }
}

async fn read_once(
    wakeups: &Wakeups,
    connection: &mut MultiplexedConnection,
    control_last: &mut String,
) -> Result<(), BusError> {
    let watched = wakeups.watched();
    let mut command = redis::cmd("XREAD");
    command
        .arg("COUNT")
        .arg(COUNT)
        .arg("BLOCK")
        .arg(u64::try_from(BLOCK.as_millis()).unwrap_or(u64::MAX))
        .arg("STREAMS")
        .arg(&wakeups.control);
    for (key, _) in &watched {
        command.arg(key);
    }
    command.arg(control_last.as_str());
    for (_, last_id) in &watched {
        command.arg(last_id);
    }
    let reply: Value = command.query_async(connection).await.map_err(backend)?;
    for (key, last_id) in streams_read(&reply)? {
        if key == wakeups.control {
            *control_last = last_id;
        } else {
            wakeups.woken(&key, last_id);
        }
    }
    Ok(())
}

/// Per stream of an `XREAD` reply, its name and the id of its last entry read (`Nil`: nothing new).
fn streams_read(reply: &Value) -> Result<Vec<(String, String)>, BusError> {
    let unexpected = || BusError::Backend(format!("unexpected Redis answer to XREAD: {reply:?}"));
    let streams = match reply {
        Value::Nil => return Ok(Vec::new()),
        Value::Array(streams) => streams,
        _ => return Err(unexpected()),
    };
    let mut read = Vec::with_capacity(streams.len());
    for stream in streams {
        let Value::Array(parts) = stream else {
            return Err(unexpected());
        };
        let [Value::BulkString(name), Value::Array(entries)] = parts.as_slice() else {
            return Err(unexpected());
        };
        let last_id = entries.last().and_then(|entry| match entry {
            Value::Array(entry) => match entry.first() {
                Some(Value::BulkString(id)) => String::from_utf8(id.clone()).ok(),
                _ => None,
            },
            _ => None,
        });
        let name = String::from_utf8(name.clone()).map_err(|_| unexpected())?;
        if let Some(last_id) = last_id {
            read.push((name, last_id));
        }
    }
    Ok(read)
}
