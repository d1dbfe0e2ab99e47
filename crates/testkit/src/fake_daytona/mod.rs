//! A fake Daytona API for testing the remote sandbox provider over real sockets.
//!
//! It follows the paths and JSON shapes of Daytona's public API (the NestJS API in `apps/api` and the
//! sandbox daemon's toolbox in `apps/daemon` of `daytonaio/daytona`) for what the provider uses:
//!
//! | what | path |
//! |---|---|
//! | sandboxes | `POST /api/sandbox`, `GET`/`DELETE /api/sandbox/{idOrName}`, `POST /api/sandbox/{idOrName}/start`, `…/stop` |
//! | snapshots | `POST /api/snapshots`, `GET`/`DELETE /api/snapshots/{idOrName}`, `POST /api/snapshots/{id}/activate` |
//! | toolbox | `POST {toolboxProxyUrl}/{sandboxId}/process/execute`, `GET …/files/info?path=`, `GET …/files/download?path=`, `POST …/files/upload?path=` |
//!
//! The toolbox is also served under the API's older proxy path `/api/toolbox/{sandboxId}/toolbox/…`, which
//! clients use when a sandbox carries no `toolboxProxyUrl` ([`FakeDaytonaOptions::omit_toolbox_proxy_url`]).
//!
//! Every request must carry `Authorization: Bearer <api key>` (401 otherwise). Errors have Daytona's shape,
//! `{"statusCode": N, "message": "…", "error": "…"}`.
//!
//! Sandboxes are real: each one is a temporary directory on the host. A sandbox path `/a/b` is
//! `<dir>/a/b`; `execute` splits the command line as the daemon does (whitespace, single and double quotes,
//! no shell) and runs the program in the mapped `cwd` with stdout and stderr combined, killing its process
//! group after `timeout` seconds (408). This is a test double: nothing is isolated, and absolute paths
//! inside a command are the host's.
//!
//! Fault injection: [`FakeDaytona::fail_next`] (500s), [`FakeDaytona::delay_next`] (slow answers),
//! [`FakeDaytona::delete_sandbox`] (gone behind the client's back), [`FakeDaytona::stop_sandbox`] /
//! [`FakeDaytona::archive_sandbox`], [`FakeDaytona::set_sandbox_state`] (stuck starting, error…),
//! [`FakeDaytona::set_snapshot`] (pending, active, error…).

mod api;
mod exec;
mod state;
mod toolbox;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::sync::oneshot;

use state::State;

/// Bodies above this size are refused; no test uploads more.
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// How the fake behaves; change what a test needs from [`FakeDaytonaOptions::default`].
#[derive(Clone, PartialEq, Eq)]
pub struct FakeDaytonaOptions {
    /// The key every request must bear.
    pub api_key: String,
    /// Snapshots registered from the start, `active` (sandboxes can be made from them).
    pub snapshots: Vec<String>,
    /// The image's working directory, made in every new sandbox and the default `cwd` of a command.
    pub home: String,
    /// Leave `toolboxProxyUrl` out of sandboxes, as older Daytona versions do: clients then use the API's
    /// own toolbox proxy path.
    pub omit_toolbox_proxy_url: bool,
}

impl std::fmt::Debug for FakeDaytonaOptions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("FakeDaytonaOptions")
            .field("snapshots", &self.snapshots)
            .field("home", &self.home)
            .field("omit_toolbox_proxy_url", &self.omit_toolbox_proxy_url)
            .finish_non_exhaustive()
    }
}

/// The key of a fake started with the default options.
pub const FAKE_DAYTONA_API_KEY: &str = "fake-daytona-key";
/// The snapshot a fake started with the default options has, active.
pub const FAKE_DAYTONA_SNAPSHOT: &str = "trueforge-sandbox";

impl Default for FakeDaytonaOptions {
    fn default() -> Self {
        Self {
            api_key: FAKE_DAYTONA_API_KEY.to_owned(),
            snapshots: vec![FAKE_DAYTONA_SNAPSHOT.to_owned()],
            home: "/home/trueforge".to_owned(),
            omit_toolbox_proxy_url: false,
        }
    }
}

/// A sandbox as the fake holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeSandbox {
    pub id: String,
    pub name: String,
    /// Daytona's state word: `started`, `stopped`, `archived`.
    pub state: String,
    pub snapshot: Option<String>,
    pub auto_stop_interval: Option<i64>,
    pub auto_archive_interval: Option<i64>,
    pub auto_delete_interval: Option<i64>,
    /// The host directory holding the sandbox's files (its `/`).
    pub root: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum FakeDaytonaError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A running fake. Dropping it stops the server, kills the commands still running and removes its
/// sandboxes' directories.
pub struct FakeDaytona {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for FakeDaytona {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("FakeDaytona")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeDaytona {
    /// Starts a fake with the default options on a free port of 127.0.0.1.
    ///
    /// # Panics
    ///
    /// When no local port can be bound, which leaves a test nothing to do; use [`FakeDaytona::bind`] to
    /// handle that case.
    pub async fn start() -> Self {
        Self::start_with(FakeDaytonaOptions::default()).await
    }

    /// Starts a fake with `options` on a free port of 127.0.0.1 (panics as [`FakeDaytona::start`]).
    pub async fn start_with(options: FakeDaytonaOptions) -> Self {
        match Self::bind(SocketAddr::from(([127, 0, 0, 1], 0)), options).await {
            Ok(server) => server,
            Err(error) => panic!("fake-daytona: {error}"),
        }
    }

    /// Starts a fake on `addr` (port 0: a free port).
    pub async fn bind(addr: SocketAddr, options: FakeDaytonaOptions) -> Result<Self, FakeDaytonaError> {
        let served = crate::serve::serve(addr, |addr| {
            let state = Arc::new(State::new(format!("http://{addr}"), options));
            let app = router(state.clone());
            (state, app)
        })
        .await
        .map_err(|(addr, source)| FakeDaytonaError::Bind { addr, source })?;
        Ok(Self {
            addr: served.addr,
            state: served.state,
            stop: Some(served.stop),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/api`: what a client takes as Daytona's API URL.
    pub fn api_url(&self) -> String {
        format!("{}/api", self.state.base)
    }

    /// The key requests must bear.
    pub fn api_key(&self) -> String {
        self.state.options.api_key.clone()
    }

    /// Answers the next `count` authenticated requests with a 500.
    pub fn fail_next(&self, count: u32) {
        self.state.faults().fail_next = count;
    }

    /// Holds the next `count` authenticated requests for `delay` before answering them.
    pub fn delay_next(&self, count: u32, delay: Duration) {
        self.state.faults().delay_next = Some((count, delay));
    }

    /// Registers a snapshot or changes its state (`pending`, `active`, `inactive`, `error`,
    /// `build_failed`…) and error reason.
    pub fn set_snapshot(&self, name: &str, state: &str, error_reason: Option<&str>) {
        self.state.set_snapshot(name, state, error_reason);
    }

    /// A snapshot's state, `None` when there is none of that name.
    pub fn snapshot_state(&self, name: &str) -> Option<String> {
        self.state.snapshot_state(name)
    }

    /// Deletes a sandbox (by id or name) behind the client's back, with its files. `false` when unknown.
    pub fn delete_sandbox(&self, id_or_name: &str) -> bool {
        self.state.remove_sandbox(id_or_name).is_some()
    }

    /// Stops a sandbox (by id or name) as Daytona's auto-stop does. `false` when unknown.
    pub fn stop_sandbox(&self, id_or_name: &str) -> bool {
        self.state.set_sandbox_state(id_or_name, "stopped")
    }

    /// Archives a sandbox (by id or name) as Daytona's auto-archive does. `false` when unknown.
    pub fn archive_sandbox(&self, id_or_name: &str) -> bool {
        self.state.set_sandbox_state(id_or_name, "archived")
    }

    /// Puts a sandbox (by id or name) in any of Daytona's states (`starting`, `error`, `destroyed`…), as if
    /// Daytona had moved it there; it stays there until started. `false` when unknown.
    pub fn set_sandbox_state(&self, id_or_name: &str, state: &str) -> bool {
        self.state.set_sandbox_state(id_or_name, state)
    }

    /// A sandbox by id or name.
    pub fn sandbox(&self, id_or_name: &str) -> Option<FakeSandbox> {
        self.state.sandbox_info(id_or_name)
    }

    /// Every request so far as `METHOD /path` (no query), in order, refused ones included.
    pub fn requests(&self) -> Vec<String> {
        self.state.requests()
    }
}

impl Drop for FakeDaytona {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Commands still running (a client that cancelled leaves them, as Daytona does) end with the fake.
        self.state.processes.kill_all();
    }
}

fn router(state: Arc<State>) -> Router {
    let mut router = Router::new()
        .route("/api/sandbox", post(api::create_sandbox))
        .route(
            "/api/sandbox/{id_or_name}",
            get(api::get_sandbox).delete(api::delete_sandbox),
        )
        .route("/api/sandbox/{id_or_name}/start", post(api::start_sandbox))
        .route("/api/sandbox/{id_or_name}/stop", post(api::stop_sandbox))
        .route("/api/snapshots", post(api::create_snapshot))
        .route(
            "/api/snapshots/{id_or_name}",
            get(api::get_snapshot).delete(api::delete_snapshot),
        )
        .route("/api/snapshots/{id_or_name}/activate", post(api::activate_snapshot));
    // The toolbox proxy (`toolboxProxyUrl` = `<base>/toolbox`) and the API's older proxy path.
    for prefix in ["/toolbox/{sandbox_id}", "/api/toolbox/{sandbox_id}/toolbox"] {
        router = router
            .route(&format!("{prefix}/process/execute"), post(toolbox::execute))
            .route(&format!("{prefix}/files/info"), get(toolbox::file_info))
            .route(&format!("{prefix}/files/download"), get(toolbox::download))
            .route(&format!("{prefix}/files/upload"), post(toolbox::upload));
    }
    router
        .fallback(api::not_found)
        .layer(axum::middleware::from_fn_with_state(state.clone(), api::gate))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}
