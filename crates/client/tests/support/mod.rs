//! A real server on 127.0.0.1:0 over a temp data dir with the fake model configured as provider `fake`,
//! and a TCP proxy that cuts chosen connections to exercise resuming.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use trueforge_client::{Client, ResumePolicy, SessionAgentChoice, StreamedEvent};
use trueforge_server::ServerConfig;
use trueforge_testkit::fake_llm::{Api, FakeLlm};

pub const MODEL: &str = "fake/fake-model";

pub struct TestServer {
    pub base: String,
    pub client: Client,
    pub fake: FakeLlm,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    _dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(adjust: impl FnOnce(&mut ServerConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ServerConfig::for_data_dir(dir.path()).unwrap();
        config.graceful_timeout = Duration::from_secs(5);
        adjust(&mut config);
        let state = trueforge_server::local_state(config).await.unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (shutdown, signal) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(trueforge_server::serve(listener, state, async move {
            let _ = signal.await;
        }));
        let fake = FakeLlm::start().await;
        let server = Self {
            client: Client::new(&base).unwrap().with_resume_policy(fast_resume()),
            base,
            fake,
            shutdown: Some(shutdown),
            task: Some(task),
            _dir: dir,
        };
        server.configure_fake_provider().await;
        server
    }

    /// Settings are not part of the client: configured with plain HTTP.
    async fn configure_fake_provider(&self) {
        let response = reqwest::Client::new()
            .post(format!("{}/api/v1/settings/model-providers", self.base))
            .json(&json!({"manifest": {
                "type": "custom",
                "name": "fake",
                "base_url": self.fake.base_url(Api::Chat),
                "auth": {"api_key": "fake-key-123456"},
                "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {"context_length": 100000}}],
            }}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 201, "{}", response.text().await.unwrap());
    }

    /// A client of this server through `proxy`.
    pub fn client_via(&self, proxy: &CutProxy, policy: ResumePolicy) -> Client {
        Client::new(&proxy.base).unwrap().with_resume_policy(policy)
    }

    /// A session with an inline spec on the fake model.
    pub async fn session(&self) -> String {
        self.client
            .create_session(SessionAgentChoice::model(MODEL))
            .await
            .unwrap()
            .id
    }

    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(20), task)
                .await
                .expect("the server stops within its graceful timeout")
                .unwrap()
                .unwrap();
        }
    }
}

/// Quick retries, so that tests of resuming take milliseconds.
pub fn fast_resume() -> ResumePolicy {
    let mut policy = ResumePolicy::default();
    policy.max_attempts = 5;
    policy.initial_backoff = Duration::from_millis(10);
    policy.max_backoff = Duration::from_millis(100);
    policy.idle_timeout = Some(Duration::from_secs(20));
    policy.healthy_after = Duration::from_secs(30);
    policy
}

/// What the proxy does to one connection's response.
#[derive(Debug, Clone, Copy)]
pub enum Cut {
    /// Close both sides once this many bytes of the response body (chunked framing included) went through.
    AfterBodyBytes(usize),
    /// Close both sides when [`CutProxy::cut_now`] is called.
    OnSignal,
}

/// A TCP proxy in front of the server. Connection `i` (in accept order) gets `cuts[i]`; later ones pass
/// through untouched, but wait for [`CutProxy::open_gate`] first when the proxy was built gated.
pub struct CutProxy {
    pub base: String,
    accepted: Arc<AtomicUsize>,
    cut_signal: watch::Sender<bool>,
    gate: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl CutProxy {
    pub async fn start(upstream: &str, cuts: Vec<Cut>) -> Self {
        Self::start_gated(upstream, cuts, false).await
    }

    /// `gated`: connections after the cut ones are held until [`CutProxy::open_gate`].
    pub async fn start_gated(upstream: &str, cuts: Vec<Cut>, gated: bool) -> Self {
        let upstream = upstream.strip_prefix("http://").unwrap().to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let (cut_signal, _) = watch::channel(false);
        let (gate, _) = watch::channel(!gated);
        let task = {
            let accepted = accepted.clone();
            let cut_signal = cut_signal.clone();
            let gate = gate.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        return;
                    };
                    let index = accepted.fetch_add(1, Ordering::SeqCst);
                    let cut = cuts.get(index).copied();
                    let upstream = upstream.clone();
                    let cut_signal = cut_signal.subscribe();
                    let mut gate = gate.subscribe();
                    tokio::spawn(async move {
                        if cut.is_none() {
                            let _ = gate.wait_for(|open| *open).await;
                        }
                        let Ok(server) = TcpStream::connect(&upstream).await else {
                            return;
                        };
                        relay(client, server, cut, cut_signal).await;
                    });
                }
            })
        };
        Self {
            base,
            accepted,
            cut_signal,
            gate,
            task,
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn cut_now(&self) {
        self.cut_signal.send_replace(true);
    }

    pub fn open_gate(&self) {
        self.gate.send_replace(true);
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Copies both ways; the response side obeys `cut`. Dropping the sockets closes them.
async fn relay(client: TcpStream, server: TcpStream, cut: Option<Cut>, mut cut_signal: watch::Receiver<bool>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let requests = async {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    };
    let responses = async {
        let mut seen: Vec<u8> = Vec::new();
        let mut body_start: Option<usize> = None;
        let mut buffer = vec![0_u8; 16 * 1024];
        loop {
            let read = tokio::select! {
                read = server_read.read(&mut buffer) => read,
                _ = cut_signal.wait_for(|cut| *cut), if matches!(cut, Some(Cut::OnSignal)) => return,
            };
            let Ok(read) = read else { return };
            if read == 0 {
                return;
            }
            let mut chunk = &buffer[..read];
            if let Some(Cut::AfterBodyBytes(limit)) = cut {
                let before = seen.len();
                seen.extend_from_slice(chunk);
                if body_start.is_none() {
                    body_start = seen
                        .windows(4)
                        .position(|window| window == b"\r\n\r\n")
                        .map(|at| at + 4);
                }
                if let Some(start) = body_start {
                    let end = start + limit;
                    if seen.len() >= end {
                        chunk = &chunk[..end.saturating_sub(before)];
                        let _ = client_write.write_all(chunk).await;
                        let _ = client_write.flush().await;
                        return;
                    }
                }
            }
            if client_write.write_all(chunk).await.is_err() {
                return;
            }
        }
    };
    // Whichever side ends first ends the connection: a cut response must not leave the request half open.
    tokio::select! {
        () = requests => {}
        () = responses => {}
    }
}

/// Checks the stream starts at sequence number 1 with `turn.created`, numbers increase, and it ends with
/// exactly one `turn.done`. (Numbers may skip: this server numbers the stored-only complete
/// `model.message` too.)
pub fn assert_complete(events: &[StreamedEvent]) {
    assert_eq!(events[0].seq, 1);
    assert!(
        events.windows(2).all(|pair| pair[0].seq < pair[1].seq),
        "sequence numbers increase"
    );
    assert_eq!(events[0].event_type(), "turn.created");
    assert!(events.last().unwrap().turn_done().is_some(), "ends with turn.done");
    assert_eq!(events.iter().filter(|event| event.turn_done().is_some()).count(), 1);
}

/// The text of the root agent's deltas, concatenated.
pub fn streamed_text(events: &[StreamedEvent]) -> String {
    events
        .iter()
        .filter_map(StreamedEvent::text_delta)
        .filter(|(thread, _)| *thread == "main")
        .map(|(_, text)| text)
        .collect()
}
