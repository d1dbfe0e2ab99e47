//! The Code Mode bridge: scripts running in the sandbox call the agent's MCP tools through it.
//!
//! One bridge per turn: a Unix domain socket on the host, bound into the sandbox as one file (the local
//! provider puts it at `/run/trueforge/bridge.sock`), so it works with the network off. Unlike the
//! reference's unauthenticated NATS subject, every request carries a per-turn secret token; a request
//! without it is refused and its connection closed. What the agent runtime implements is
//! [`BridgeHandler`].
//!
//! Wire format: newline-delimited JSON, one request per line (at most [`MAX_REQUEST_BYTES`]), one
//! response per line, answered in order on a connection:
//! - `{"token": "<hex>", "id": <any>, "op": "list_tools", "server": "<name>"}`
//! - `{"token": "<hex>", "id": <any>, "op": "call_tool", "server": "<name>", "tool": "<name>",
//!   "arguments": {...}}` (`arguments` may be left out)
//! - `{"id": <the request's id>, "ok": true, "result": <value>}`
//! - `{"id": <the request's id, or null>, "ok": false, "error": "<message>", "source": "caller" |
//!   "internal" | "transport"}`
//!
//! A line that is not a valid request is a `caller` error and the connection stays open; a request
//! without the token (or with a wrong one) and an over-long line are answered with a `caller` error and
//! the connection is closed.
//!
//! Permissions: the socket lives in a directory the caller gives, which the bridge makes `0700` (and
//! refuses if it is a symlink or cannot be chmod-ed, i.e. is not ours), so no other user of the host can
//! reach the socket by its host path. The socket file itself is `0666`: connecting to a Unix socket needs
//! write permission on the file, and the sandboxed process may run as another uid than the server (a
//! user-namespace mapping, a dedicated sandbox user); `0600` would lock it out. That does not widen access:
//! on the host the `0700` directory stands in front of the file, and inside the sandbox the only way to
//! it is the bind mount of that one file. The token is what authenticates a request either way.
//! (Checked with bubblewrap: a process of another host uid reaches the bound `0666` socket but not a
//! `0600` one, and cannot reach the host path. Directories bubblewrap creates for a bind target are
//! `0700`, so a provider running commands as another uid makes `/run/trueforge` with `--perms 0755 --dir`.)
//!
//! What a command needs ([`Bridge::env`]): `TRUEFORGE_BRIDGE_SOCKET` (the path inside the sandbox),
//! `TRUEFORGE_BRIDGE_TOKEN` and `TRUEFORGE_TOOL_SERVERS` (JSON: `{"<server>": {"description"?: "...",
//! "tools": ["<tool>", ...]}}`). The caller also uploads [`CLIENT_SOURCE`] as [`CLIENT_MODULE_NAME`] into
//! a directory of the sandbox and puts that directory first on `PYTHONPATH`; the client's timeout can be
//! set with `TRUEFORGE_BRIDGE_TIMEOUT_SECONDS` (default 300).

mod connection;
mod handler;
mod token;
mod wire;

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::net::UnixListener;
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

pub use handler::{BridgeFailure, BridgeHandler, BridgeServer, FailureSource};

use connection::Shared;
use token::BridgeToken;

/// The file name the client module has in the sandbox (`import trueforge_tools`).
pub const CLIENT_MODULE_NAME: &str = "trueforge_tools.py";

/// The in-sandbox client (Python 3.11+ standard library only): `call_tool`, `list_tools` and the CLI
/// `python3 -m trueforge_tools call-tool <server> <tool> '<args-json>'`.
pub const CLIENT_SOURCE: &str = include_str!("../../assets/trueforge_tools.py");

/// The longest request line the bridge reads (arguments included); a longer one is refused and its
/// connection closed.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// Connections served at once; more wait to be accepted. Bounds what a runaway script can make the host
/// hold (tasks, descriptors) while leaving room for scripts calling tools from many threads.
pub const MAX_CONNECTIONS: usize = 128;

/// The socket's file name in the caller's directory.
const SOCKET_FILE: &str = "bridge.sock";

/// A Unix socket path must fit `sockaddr_un.sun_path` (108 bytes on Linux, the terminating NUL included).
const MAX_SOCKET_PATH_BYTES: usize = 107;

/// The environment variable names [`Bridge::env`] sets, and the client reads.
pub const ENV_SOCKET: &str = "TRUEFORGE_BRIDGE_SOCKET";
pub const ENV_TOKEN: &str = "TRUEFORGE_BRIDGE_TOKEN";
pub const ENV_TOOL_SERVERS: &str = "TRUEFORGE_TOOL_SERVERS";
/// Read by the client only (seconds, default 300); the caller sets it when its tool calls may take longer.
pub const ENV_TIMEOUT_SECONDS: &str = "TRUEFORGE_BRIDGE_TIMEOUT_SECONDS";

/// Why a bridge could not start.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error("code mode bridge: {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("code mode bridge: {path} is not a directory of ours ({reason})")]
    UnsafeDirectory { path: PathBuf, reason: &'static str },
    #[error(
        "code mode bridge: the socket path {path} is longer than the {MAX_SOCKET_PATH_BYTES} bytes a Unix socket allows"
    )]
    SocketPathTooLong { path: PathBuf },
    #[error("code mode bridge: no operating-system randomness for the token: {0}")]
    Random(String),
    #[error("code mode bridge: must be started inside a Tokio runtime")]
    NoRuntime,
}

/// A running bridge. Dropping it (or [`stop`](Self::stop)) closes the listener, ends every connection and
/// removes the socket file.
pub struct Bridge {
    socket_path: PathBuf,
    shared: Arc<Shared>,
    cancel: CancellationToken,
    /// `None` once stopped.
    accept_task: Option<JoinHandle<()>>,
}

impl Bridge {
    /// Binds `<dir>/bridge.sock` and starts serving. `dir` must exist; it is made `0700`. A socket file
    /// left there by an earlier bridge is replaced; anything else at that path is an error. Must be
    /// called inside a Tokio runtime.
    pub fn start(dir: &Path, handler: Arc<dyn BridgeHandler>) -> Result<Self, BridgeError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| BridgeError::NoRuntime)?;
        make_private(dir)?;
        let socket_path = dir.join(SOCKET_FILE);
        if socket_path.as_os_str().len() > MAX_SOCKET_PATH_BYTES {
            return Err(BridgeError::SocketPathTooLong { path: socket_path });
        }
        remove_stale_socket(&socket_path)?;
        let token = BridgeToken::generate()?;
        let listener = {
            // Binding registers the socket with the runtime's reactor.
            let _entered = runtime.enter();
            UnixListener::bind(&socket_path).map_err(|source| BridgeError::Io {
                action: "binding",
                path: socket_path.clone(),
                source,
            })?
        };
        // Between bind and this chmod the socket has the umask's mode, but nobody else can reach it yet:
        // the directory is already 0700.
        if let Err(source) = std::fs::set_permissions(&socket_path, std::fs::Permissions::from_mode(0o666)) {
            // Best effort: the start failed either way and the listener closes with this scope.
            let _ = std::fs::remove_file(&socket_path);
            return Err(BridgeError::Io {
                action: "setting the mode of",
                path: socket_path,
                source,
            });
        }
        let shared = Arc::new(Shared { token, handler });
        let cancel = CancellationToken::new();
        let accept_task = runtime.spawn(accept_loop(listener, Arc::clone(&shared), cancel.clone()));
        tracing::debug!(socket = %socket_path.display(), "code mode bridge started");
        Ok(Self {
            socket_path,
            shared,
            cancel,
            accept_task: Some(accept_task),
        })
    }

    /// The socket's path on the host: what [`crate::ExecRequest::bridge_socket`] takes.
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The environment a command needs to reach this bridge, given where the socket appears inside the
    /// sandbox (the provider's [`crate::SandboxProvider::code_mode_socket`]). Holds the token: pass it to
    /// the command only, never log it. The caller adds the directory holding [`CLIENT_MODULE_NAME`] to
    /// `PYTHONPATH` itself (and [`ENV_TIMEOUT_SECONDS`] when tool calls may outlast the client's default).
    pub fn env(&self, socket_path_inside: &str) -> BTreeMap<String, String> {
        let servers: Map<String, Value> = self
            .shared
            .handler
            .servers()
            .into_iter()
            .map(|server| {
                let mut entry = Map::new();
                if let Some(description) = server.description {
                    entry.insert("description".to_owned(), Value::String(description));
                }
                entry.insert(
                    "tools".to_owned(),
                    Value::Array(server.tools.into_iter().map(Value::String).collect()),
                );
                (server.name, Value::Object(entry))
            })
            .collect();
        BTreeMap::from([
            (ENV_SOCKET.to_owned(), socket_path_inside.to_owned()),
            (ENV_TOKEN.to_owned(), self.shared.token.as_str().to_owned()),
            (ENV_TOOL_SERVERS.to_owned(), Value::Object(servers).to_string()),
        ])
    }

    /// Stops accepting, ends every connection (in-flight handler calls are dropped) and removes the socket
    /// file, returning once all of that is done.
    pub async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.accept_task.take() {
            // The loop ends its connections before returning; a panic there has nothing left to clean.
            let _ = task.await;
        }
        self.remove_socket();
    }

    fn remove_socket(&self) {
        match std::fs::remove_file(&self.socket_path) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => tracing::warn!(%error, socket = %self.socket_path.display(),
                "code mode bridge: could not remove the socket file"),
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(task) = self.accept_task.take() {
            self.cancel.cancel();
            // Aborting drops the listener and the set of connection tasks, which aborts them too.
            task.abort();
            self.remove_socket();
        }
    }
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Bridge")
            .field("socket_path", &self.socket_path)
            .field("running", &self.accept_task.is_some())
            .finish_non_exhaustive()
    }
}

/// Makes `dir` `0700`, refusing a symlink (which could point anywhere) and a directory we cannot chmod
/// (someone else's).
fn make_private(dir: &Path) -> Result<(), BridgeError> {
    let metadata = std::fs::symlink_metadata(dir).map_err(|source| BridgeError::Io {
        action: "reading",
        path: dir.to_owned(),
        source,
    })?;
    if metadata.file_type().is_symlink() {
        return Err(BridgeError::UnsafeDirectory {
            path: dir.to_owned(),
            reason: "a symlink",
        });
    }
    if !metadata.is_dir() {
        return Err(BridgeError::UnsafeDirectory {
            path: dir.to_owned(),
            reason: "not a directory",
        });
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|_| BridgeError::UnsafeDirectory {
        path: dir.to_owned(),
        reason: "its mode cannot be set to 0700",
    })
}

fn remove_stale_socket(path: &Path) -> Result<(), BridgeError> {
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(BridgeError::Io {
            action: "reading",
            path: path.to_owned(),
            source,
        }),
        Ok(metadata) if metadata.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(|source| BridgeError::Io {
                action: "removing the stale socket",
                path: path.to_owned(),
                source,
            })
        }
        Ok(_) => Err(BridgeError::Io {
            action: "binding",
            path: path.to_owned(),
            source: io::Error::new(io::ErrorKind::AlreadyExists, "something other than a socket is there"),
        }),
    }
}

/// Accepts connections until cancelled, each served in its own task, at most [`MAX_CONNECTIONS`] at once.
async fn accept_loop(listener: UnixListener, shared: Arc<Shared>, cancel: CancellationToken) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        // Reaps finished connections so the set holds only live ones.
        while connections.try_join_next().is_some() {}
        let slot = tokio::select! {
            () = cancel.cancelled() => break,
            slot = Arc::clone(&slots).acquire_owned() => slot,
        };
        // The semaphore is never closed.
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            () = cancel.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _address)) => {
                let shared = Arc::clone(&shared);
                let cancel = cancel.clone();
                connections.spawn(async move {
                    connection::serve(stream, shared, cancel).await;
                    drop(slot);
                });
            }
            Err(error) => {
                // Typically out of descriptors; waiting a little lets connections finish instead of spinning.
                tracing::warn!(%error, "code mode bridge: accepting a connection failed");
                drop(slot);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    drop(listener);
    // Connections saw the cancellation too; aborting covers one stuck outside an await on it.
    connections.shutdown().await;
}
