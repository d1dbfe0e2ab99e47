//! A server on 127.0.0.1:0 over a temp data dir, a fake model server configured as a custom provider, and
//! small HTTP helpers (reqwest over the real socket; SSE frames read from the raw body).
//!
//! With `TRUEFORGE_TEST_SERVER_MODE=hosted` the server runs in hosted mode instead: a fresh database on the
//! test run's Postgres (`TRUEFORGE_TEST_POSTGRES_URL`) and its Redis (`TRUEFORGE_TEST_REDIS_URL`), so the
//! same suites check the server on Postgres (`scripts/test.sh` runs the route, turn and recovery suites
//! that way too).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};
use trueforge_server::ServerConfig;
use trueforge_testkit::fake_llm::{Api, FakeLlm};

pub const MODEL: &str = "fake/fake-model";

pub struct TestServer {
    pub base: String,
    pub http: reqwest::Client,
    pub fake: FakeLlm,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// The server's state, for tests that look at its stores directly.
    pub state: trueforge_server::AppState,
    pub dir: tempfile::TempDir,
}

/// Hosted mode on a fresh database of the test run's Postgres and on its Redis.
pub fn hosted_config() -> trueforge_server::config::HostedConfig {
    let redis_url = std::env::var("TRUEFORGE_TEST_REDIS_URL").expect("hosted mode tests need TRUEFORGE_TEST_REDIS_URL");
    trueforge_server::config::HostedConfig {
        database_url: trueforge_testkit::postgres::fresh_database("server"),
        pool_max: 5,
        statement_timeout: Duration::from_secs(60),
        idle_in_transaction_timeout: Duration::from_secs(60),
        redis_url,
        cancel_timeout: Duration::from_secs(5),
        oidc: None,
    }
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(adjust: impl FnOnce(&mut ServerConfig)) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::start_on(listener, adjust).await
    }

    /// A server on `listener` (whose address a test had to know before the server started).
    pub async fn start_on(listener: tokio::net::TcpListener, adjust: impl FnOnce(&mut ServerConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ServerConfig::for_data_dir(dir.path()).unwrap();
        config.graceful_timeout = Duration::from_secs(5);
        if std::env::var("TRUEFORGE_TEST_SERVER_MODE").as_deref() == Ok("hosted") {
            config.hosted = Some(hosted_config());
        }
        adjust(&mut config);
        // With login on, setting up the fake provider needs an admin's token: the test does it.
        let login = config.hosted.as_ref().is_some_and(|hosted| hosted.oidc.is_some());
        let state = trueforge_server::state_for(config).await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (shutdown, signal) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(trueforge_server::serve(listener, state.clone(), async move {
            let _ = signal.await;
        }));
        let fake = FakeLlm::start().await;
        let server = Self {
            base,
            http: reqwest::Client::new(),
            fake,
            shutdown: Some(shutdown),
            task: Some(task),
            state,
            dir,
        };
        if !login {
            server.configure_fake_provider().await;
        }
        server
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn configure_fake_provider(&self) {
        // PUT: a server started on the data directory of an earlier one finds the provider there.
        let (status, body) = self
            .send(
                reqwest::Method::PUT,
                "/api/v1/settings/model-providers",
                Some(self.fake_provider_body()),
            )
            .await;
        assert!(status == 200 || status == 201, "{status} {body}");
    }

    /// The body that configures the fake model's provider as `fake` (with model `MODEL`).
    pub fn fake_provider_body(&self) -> Value {
        json!({"manifest": {
            "type": "custom",
            "name": "fake",
            "base_url": self.fake.base_url(Api::Chat),
            "auth": {"api_key": "fake-key-123456"},
            "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {"context_length": 100000}}],
        }})
    }

    /// Sends a JSON request; returns the status and the parsed body (`Value::Null` when empty).
    pub async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.http.request(method, self.url(path));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    /// A session with an inline spec on the fake model; returns its id.
    pub async fn session(&self) -> String {
        let (status, body) = self
            .post(
                "/api/v1/sessions",
                json!({"agent": {"spec": {"model": {"name": MODEL}}}}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        body["data"]["id"].as_str().unwrap().to_owned()
    }

    /// Streams a turn to its end: the SSE frames as (id, event JSON).
    pub async fn stream_turn(&self, session_id: &str, body: Value) -> Vec<(u64, Value)> {
        let response = self
            .http
            .post(self.url(&format!("/api/v1/sessions/{session_id}/turns")))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        if status != 200 {
            panic!(
                "starting a turn answered {status}: {}",
                response.text().await.unwrap_or_default()
            );
        }
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        parse_frames(&response.text().await.unwrap())
    }

    /// Subscribes to a turn from its start in the background; resolves to the whole SSE body.
    pub fn spawn_subscriber(&self, session_id: &str, turn_id: &str) -> tokio::task::JoinHandle<String> {
        let http = self.http.clone();
        let url = self.url(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe"));
        tokio::spawn(async move { http.get(url).send().await.unwrap().text().await.unwrap() })
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

/// Parses SSE bytes written as `data: <json>\nid: <n>\n\n` (comments skipped). Panics on any other shape,
/// so a framing change fails the tests.
pub fn parse_frames(text: &str) -> Vec<(u64, Value)> {
    let mut frames = Vec::new();
    for block in text.split("\n\n").filter(|block| !block.is_empty()) {
        if block.starts_with(':') {
            continue;
        }
        let mut lines = block.lines();
        let data = lines.next().unwrap().strip_prefix("data: ").expect("a data line first");
        let id = lines.next().unwrap().strip_prefix("id: ").expect("an id line second");
        assert!(lines.next().is_none(), "a frame has exactly two lines: {block:?}");
        frames.push((id.parse().unwrap(), serde_json::from_str(data).unwrap()));
    }
    frames
}

pub fn types(frames: &[(u64, Value)]) -> Vec<String> {
    frames
        .iter()
        .map(|(_, event)| event["type"].as_str().unwrap().to_owned())
        .collect()
}

/// The first event of `kind` in a turn's frames; panics listing the types when there is none.
pub fn first_event<'a>(frames: &'a [(u64, Value)], kind: &str) -> &'a Value {
    frames
        .iter()
        .map(|(_, event)| event)
        .find(|event| event["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {:?}", types(frames)))
}

/// The MCP servers the `mcp.initialize` events of a turn's frames record.
pub fn initialized_mcp_servers(frames: &[(u64, Value)]) -> Vec<Value> {
    frames
        .iter()
        .filter(|(_, event)| event["type"] == "mcp.initialize")
        .flat_map(|(_, event)| event["mcp_servers"].as_array().unwrap().clone())
        .collect()
}

/// server-everything from npm, installed by `scripts/test.sh` into `TRUEFORGE_TEST_MCP_DIR`.
pub fn everything_bin() -> String {
    let dir = std::env::var_os("TRUEFORGE_TEST_MCP_DIR").unwrap_or_else(|| {
        panic!("TRUEFORGE_TEST_MCP_DIR is not set: run scripts/test.sh, which installs the npm MCP test servers")
    });
    let bin = std::path::PathBuf::from(dir).join("node_modules/.bin/mcp-server-everything");
    assert!(bin.exists(), "{} is missing: run scripts/test.sh", bin.display());
    bin.to_string_lossy().into_owned()
}

/// A server-everything on Streamable HTTP on a free port, killed when dropped.
pub struct Everything {
    pub url: String,
    _child: tokio::process::Child,
}

impl Everything {
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new(everything_bin())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(std::time::Instant::now() < deadline, "server-everything did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            _child: child,
        }
    }

    /// Configures this server as the MCP server `everything` on `server` (201 asserted).
    pub async fn configure_on(&self, server: &TestServer) {
        let (status, body) = server
            .post(
                "/api/v1/settings/mcp-servers",
                serde_json::json!({"manifest": {"type": "remote", "name": "everything", "url": self.url,
                    "description": "The MCP test server with every feature."}}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
}
