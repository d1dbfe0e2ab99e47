//! The Redis Streams backend, for many replicas sharing one Redis: a turn's stream is a Redis stream
//! (`XADD` with the ids `<seq>-1`), kept with a TTL, read by any replica.
//!
//! Subscribers do not poll. Each process runs one reader that blocks in `XREAD` on every stream one of its
//! subscribers waits on (see `wakeups`) and wakes those subscribers when entries arrive; a woken subscriber
//! reads what it has not seen with `XRANGE` from its own cursor. A stream's expiry is watched with a timer
//! set to its remaining life.

mod cancel;
mod scripts;
mod wakeups;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Value};
use tokio::sync::watch;

use super::{BusError, BusEvent, EventBus, StreamKey, Subscription};
use wakeups::Wakeups;

pub use cancel::RedisCancelRelay;

/// How long one command may take before it counts as failed (Redis answers in well under a millisecond).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
/// Entries read per `XRANGE`.
const PAGE: usize = 256;
/// The longest a waiting subscriber goes without checking that its stream still exists.
const EXPIRY_CHECK_MAX: Duration = Duration::from_secs(30);

/// A bus on Redis Streams.
#[derive(Clone)]
pub struct RedisBus {
    commands: ConnectionManager,
    wakeups: Arc<Wakeups>,
    /// The SHA1 of each script, loaded at connect: calls send the hash, not the script.
    scripts: Arc<Scripts>,
}

struct Scripts {
    open: String,
    publish: String,
    last_seq: String,
}

impl RedisBus {
    /// Whether Redis answers a `PING` within `limit` (readiness probes: a replica whose Redis is gone should
    /// leave the load balancer's rotation). `Err` holds the reason.
    pub async fn ping(&self, limit: std::time::Duration) -> Result<(), String> {
        let mut commands = self.commands.clone();
        let command = redis::cmd("PING");
        let ping = command.query_async::<String>(&mut commands);
        match tokio::time::timeout(limit, ping).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(format!("Redis does not answer: {error}")),
            Err(_) => Err(format!("Redis did not answer within {} ms", limit.as_millis())),
        }
    }

    /// Connects to the Redis at `url` (`redis://[user:password@]host:port[/db]`) and starts this process's
    /// stream reader. Fails when Redis does not answer within a few seconds, so a server that cannot reach
    /// it does not start.
    pub async fn connect(url: &str) -> Result<Self, BusError> {
        let client = Client::open(url).map_err(backend)?;
        let mut commands = connect_commands(&client).await?;
        let mut load = async |script: &str| -> Result<String, BusError> {
            redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(script)
                .query_async(&mut commands)
                .await
                .map_err(backend)
        };
        let scripts = Arc::new(Scripts {
            open: load(scripts::OPEN).await?,
            publish: load(scripts::PUBLISH).await?,
            last_seq: load(scripts::LAST_SEQ).await?,
        });
        let wakeups = Wakeups::start(client, commands.clone());
        Ok(Self {
            commands,
            wakeups,
            scripts,
        })
    }

    /// Runs a script by its hash; by its text when Redis no longer has it (it restarted).
    async fn eval(&self, script: &str, sha: &str, key: &StreamKey, args: &[&[u8]]) -> Result<Value, BusError> {
        let call = |command: &str, body: &str| {
            let mut call = redis::cmd(command);
            call.arg(body).arg(1).arg(key.as_str());
            for arg in args {
                call.arg(*arg);
            }
            call
        };
        match call("EVALSHA", sha).query_async(&mut self.commands.clone()).await {
            Err(error) if error.code() == Some("NOSCRIPT") => call("EVAL", script)
                .query_async(&mut self.commands.clone())
                .await
                .map_err(backend),
            result => result.map_err(backend),
        }
    }
}

/// The shared command connection: reconnects by itself after Redis comes back. The first connection must
/// succeed within a few seconds.
pub(crate) async fn connect_commands(client: &Client) -> Result<ConnectionManager, BusError> {
    let config = ConnectionManagerConfig::new()
        .set_response_timeout(Some(COMMAND_TIMEOUT))
        .set_connection_timeout(Some(COMMAND_TIMEOUT))
        .set_number_of_retries(2);
    let connecting = ConnectionManager::new_with_config(client.clone(), config);
    tokio::time::timeout(COMMAND_TIMEOUT * 3, connecting)
        .await
        .map_err(|_| BusError::Backend("Redis did not answer within 6 s".to_owned()))?
        .map_err(backend)
}

pub(crate) fn backend(error: redis::RedisError) -> BusError {
    BusError::Backend(error.to_string())
}

fn millis(duration: Duration) -> Vec<u8> {
    // Redis refuses a zero or negative expiry in PEXPIRE; the shortest life is 1 ms.
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
        .to_string()
        .into_bytes()
}

fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Int(number) => Some(*number),
        _ => None,
    }
}

fn unexpected(what: &str, value: &Value) -> BusError {
    BusError::Backend(format!("unexpected Redis answer to {what}: {value:?}"))
}

#[async_trait]
impl EventBus for RedisBus {
    async fn open(&self, key: &StreamKey, ttl: Duration) -> Result<(), BusError> {
        self.eval(scripts::OPEN, &self.scripts.open, key, &[&millis(ttl)])
            .await
            .map(|_| ())
    }

    async fn publish(&self, key: &StreamKey, event: BusEvent, ttl_after_end: Duration) -> Result<(), BusError> {
        self.publish_all(key, vec![event], ttl_after_end).await
    }

    async fn publish_all(
        &self,
        key: &StreamKey,
        events: Vec<BusEvent>,
        ttl_after_end: Duration,
    ) -> Result<(), BusError> {
        if events.is_empty() {
            return Ok(());
        }
        let life = millis(ttl_after_end);
        let seqs: Vec<String> = events.iter().map(|event| event.seq.to_string()).collect();
        let mut args: Vec<&[u8]> = Vec::with_capacity(1 + 3 * events.len());
        args.push(&life);
        for (event, seq) in events.iter().zip(&seqs) {
            args.push(seq.as_bytes());
            args.push(event.json.as_bytes());
            args.push(if event.terminal { b"1" } else { b"0" });
        }
        let answer = self.eval(scripts::PUBLISH, &self.scripts.publish, key, &args).await?;
        let (code, last, appended) = match &answer {
            Value::Array(items) if items.len() == 3 => (integer(&items[0]), integer(&items[1]), integer(&items[2])),
            _ => (None, None, None),
        };
        let refused = appended
            .and_then(|appended| usize::try_from(appended).ok())
            .and_then(|appended| events.get(appended));
        match (code, last, refused) {
            (Some(0), _, _) => Ok(()),
            (Some(-1), _, _) => Err(BusError::Gone(key.clone())),
            (Some(-2), _, _) => Err(BusError::Ended(key.clone())),
            (Some(-3), Some(last), Some(event)) => Err(BusError::OutOfOrder {
                key: key.clone(),
                seq: event.seq,
                last: u64::try_from(last).unwrap_or(0),
            }),
            _ => Err(unexpected("publish", &answer)),
        }
    }

    async fn subscribe(&self, key: &StreamKey, after: u64, min_remaining: Duration) -> Result<Subscription, BusError> {
        let left = remaining_life(&mut self.commands.clone(), key).await?;
        if left.is_some_and(|left| left < min_remaining) {
            return Err(BusError::Gone(key.clone()));
        }
        let wake = self.wakeups.register(key, after).await;
        let reader = Reader {
            key: key.clone(),
            commands: self.commands.clone(),
            wake,
            cursor: after,
            buffered: std::collections::VecDeque::new(),
            done: false,
        };
        Ok(Box::pin(futures::stream::unfold(reader, Reader::advance)))
    }

    async fn last_seq(&self, key: &StreamKey) -> Result<Option<u64>, BusError> {
        let answer = self.eval(scripts::LAST_SEQ, &self.scripts.last_seq, key, &[]).await?;
        match integer(&answer) {
            Some(-1) => Err(BusError::Gone(key.clone())),
            Some(0) => Ok(None),
            Some(seq) if seq > 0 => Ok(u64::try_from(seq).ok()),
            _ => Err(unexpected("last_seq", &answer)),
        }
    }

    async fn exists(&self, key: &StreamKey) -> Result<bool, BusError> {
        let found: i64 = redis::cmd("EXISTS")
            .arg(key.as_str())
            .query_async(&mut self.commands.clone())
            .await
            .map_err(backend)?;
        Ok(found == 1)
    }
}

/// The stream's remaining life: `None` when it has no expiry, `Err(Gone)` when it does not exist.
async fn remaining_life(commands: &mut ConnectionManager, key: &StreamKey) -> Result<Option<Duration>, BusError> {
    let left: i64 = redis::cmd("PTTL")
        .arg(key.as_str())
        .query_async(commands)
        .await
        .map_err(backend)?;
    match left {
        -2 => Err(BusError::Gone(key.clone())),
        -1 => Ok(None),
        left => Ok(Some(Duration::from_millis(u64::try_from(left).unwrap_or(0)))),
    }
}

/// One subscriber: reads entries after its cursor, waits for the reader's wake-ups when it has seen all.
struct Reader {
    key: StreamKey,
    commands: ConnectionManager,
    wake: watch::Receiver<u64>,
    cursor: u64,
    buffered: std::collections::VecDeque<BusEvent>,
    done: bool,
}

impl Reader {
    async fn advance(mut self) -> Option<(Result<BusEvent, BusError>, Self)> {
        if self.done {
            return None;
        }
        loop {
            if let Some(event) = self.buffered.pop_front() {
                self.cursor = event.seq;
                self.done = event.terminal;
                return Some((Ok(event), self));
            }
            // Mark the wake-ups seen before reading, so an entry added after the read wakes us.
            self.wake.borrow_and_update();
            match self.read().await {
                Ok(Some(Read { life, ended })) => {
                    if !self.buffered.is_empty() {
                        continue;
                    }
                    if ended {
                        // Ended, and nothing after the cursor: a cursor past the end gets nothing more.
                        return None;
                    }
                    let recheck = life.unwrap_or(EXPIRY_CHECK_MAX).min(EXPIRY_CHECK_MAX);
                    tokio::select! {
                        changed = self.wake.changed() => {
                            if changed.is_err() {
                                return self.fail(BusError::Backend("the stream reader stopped".to_owned()));
                            }
                        }
                        () = tokio::time::sleep(recheck) => {}
                    }
                }
                Ok(None) => {
                    let gone = BusError::Gone(self.key.clone());
                    return self.fail(gone);
                }
                Err(error) => return self.fail(error),
            }
        }
    }

    fn fail(mut self, error: BusError) -> Option<(Result<BusEvent, BusError>, Self)> {
        self.done = true;
        Some((Err(error), self))
    }

    /// Reads the entries after the cursor into the buffer, in one atomic round trip with the stream's
    /// remaining life and its last entry. `Ok(None)`: the stream is gone.
    async fn read(&mut self) -> Result<Option<Read>, BusError> {
        let (left, entries, top): (i64, Value, Value) = redis::pipe()
            .atomic()
            .cmd("PTTL")
            .arg(self.key.as_str())
            .cmd("XRANGE")
            .arg(self.key.as_str())
            .arg(format!("({}-1", self.cursor))
            .arg("+")
            .arg("COUNT")
            .arg(PAGE)
            .cmd("XREVRANGE")
            .arg(self.key.as_str())
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut self.commands)
            .await
            .map_err(backend)?;
        if left == -2 {
            return Ok(None);
        }
        for event in parse_entries(&entries)? {
            // A cursor past the end skips what comes up to it.
            if event.seq > self.cursor {
                self.buffered.push_back(event);
            }
        }
        let ended = parse_entries(&top)?.last().is_some_and(|event| event.terminal);
        Ok(Some(Read {
            life: u64::try_from(left).ok().map(Duration::from_millis),
            ended,
        }))
    }
}

/// What a read found besides the entries.
struct Read {
    /// The stream's remaining life (`None`: no expiry).
    life: Option<Duration>,
    /// Whether its last event is the terminal one.
    ended: bool,
}

/// The events of an `XRANGE`/`XREAD` entry list: `[[id, [field, value, …]], …]`.
pub(crate) fn parse_entries(value: &Value) -> Result<Vec<BusEvent>, BusError> {
    let Value::Array(entries) = value else {
        return Err(unexpected("XRANGE", value));
    };
    entries.iter().map(parse_entry).collect()
}

fn parse_entry(entry: &Value) -> Result<BusEvent, BusError> {
    let bad = || unexpected("a stream entry", entry);
    let Value::Array(parts) = entry else { return Err(bad()) };
    let [Value::BulkString(id), Value::Array(fields)] = parts.as_slice() else {
        return Err(bad());
    };
    let seq = std::str::from_utf8(id)
        .ok()
        .and_then(|id| id.split_once('-'))
        .and_then(|(seq, _)| seq.parse::<u64>().ok())
        .ok_or_else(bad)?;
    let mut json = None;
    let mut terminal = false;
    for pair in fields.chunks(2) {
        if let [Value::BulkString(name), Value::BulkString(value)] = pair {
            match name.as_slice() {
                b"data" => json = Some(String::from_utf8(value.clone()).map_err(|_| bad())?),
                b"end" => terminal = true,
                _ => {}
            }
        }
    }
    let json = json.ok_or_else(bad)?;
    Ok(BusEvent {
        seq,
        json: Arc::from(json),
        terminal,
    })
}
