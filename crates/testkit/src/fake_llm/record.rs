//! What the server saw: every request, and what became of its answer.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

use super::Api;
use super::script::Script;
use crate::busy::BusyClock;
use trueforge_protocol::sync::lock;

/// One request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The wire format its path belongs to; `None` for a path the server does not serve.
    pub api: Option<Api>,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Header names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body; `Null` when the body was not JSON.
    pub body: Value,
    /// What the server did with it, as of the moment `requests()` was called.
    pub outcome: Outcome,
}

impl RecordedRequest {
    /// The first value of a header (`name` in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// What became of a request's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The stream is still being sent.
    Streaming,
    /// Every event was sent, the end marker included.
    Completed,
    /// The body ended cleanly before the end marker (`cut_after`).
    CutShort,
    /// The connection was dropped mid-body (`abort_after`).
    Aborted,
    /// The client went away before the stream ended.
    ClientDisconnected,
    /// An HTTP error status was sent instead of a stream.
    HttpError(u16),
}

/// How much of each request the server keeps for [`super::FakeLlm::requests`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RequestLog {
    /// Everything, the parsed body included: what tests assert on.
    #[default]
    Full,
    /// Everything but the body, recorded as `Null`. For load runs: keeping a long conversation's
    /// half-megabyte bodies grows the process to about a gigabyte and slows its allocator for every thread in it
    /// (a load generator's own HTTP client included), which a benchmark would count as the harness's time.
    WithoutBodies,
}

/// The server's mutable state: the script queues and the request log.
#[derive(Default)]
pub(crate) struct State {
    pub log: RequestLog,
    inner: Mutex<Inner>,
    /// Nanoseconds spent answering requests, summed (see [`State::add_busy`]).
    busy_nanos: AtomicU64,
    /// Busy while at least one request is being answered (overlaps counted once).
    pub clock: Arc<BusyClock>,
}

#[derive(Default)]
struct Inner {
    script: Script,
    requests: Vec<RecordedRequest>,
    /// How many requests had each (path, body), by a hash of both: counting by scanning the log made every
    /// request cost O(log length), which a long load test turned quadratic.
    seen: HashMap<u64, usize>,
}

/// The body's bytes as received: a client's retry sends the same bytes, and hashing them costs far less
/// than writing the parsed body out again.
fn request_key(path: &str, body: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    path.hash(&mut hasher);
    body.hash(&mut hasher);
    hasher.finish()
}

impl State {
    pub fn with_log(log: RequestLog) -> Self {
        Self { log, ..Self::default() }
    }

    /// A panic while the lock was held cannot leave the queues or the log half-updated (every update is a
    /// single push or assignment), so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    pub fn script(&self, update: impl FnOnce(&mut Script)) {
        update(&mut self.lock().script);
    }

    pub fn take_next(&self, api: Api, raw_body: &[u8]) -> Option<super::ScriptedResponse> {
        self.lock().script.next_for(api, &String::from_utf8_lossy(raw_body))
    }

    pub fn pending(&self) -> usize {
        self.lock().script.len()
    }

    /// Logs a request whose body arrived as `raw_body`; returns its number (1-based) and how many earlier
    /// requests had the same path and body.
    pub fn record(&self, request: RecordedRequest, raw_body: &[u8]) -> (usize, usize) {
        let mut inner = self.lock();
        let seen = inner.seen.entry(request_key(&request.path, raw_body)).or_insert(0);
        let attempt = *seen;
        *seen += 1;
        inner.requests.push(request);
        (inner.requests.len(), attempt)
    }

    pub fn set_outcome(&self, seq: usize, outcome: Outcome) {
        if let Some(request) = self.lock().requests.get_mut(seq.wrapping_sub(1)) {
            request.outcome = outcome;
        }
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    pub fn requests_since(&self, skip: usize) -> Vec<RecordedRequest> {
        self.lock().requests.iter().skip(skip).cloned().collect()
    }

    pub fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    pub fn add_busy(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.busy_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    pub fn busy(&self) -> Duration {
        Duration::from_nanos(self.busy_nanos.load(Ordering::Relaxed))
    }
}
