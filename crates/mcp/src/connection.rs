//! One live connection to an MCP server: connect and initialise, list tools, call a tool, close.

use std::collections::{HashMap, HashSet, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;
use tracing::Instrument as _;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams,
    ProtocolVersion, ServerPeerInfo, Tool,
};
use rmcp::service::NotificationContext;
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::http_client::RecordingClient;
use crate::{McpError, McpServerConfig, describe};
use trueforge_protocol::sync::lock;

/// How many of a stdio server's last stderr lines are kept to explain a failed start.
const STDERR_TAIL_LINES: usize = 20;

/// How long a failed start waits for the rest of the server's stderr.
const STDERR_GRACE: Duration = Duration::from_millis(500);

/// How long connecting and initialising may take when the caller does not say.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Bounds a `tools/list` walk: a server that keeps handing out new cursors is broken, and an
/// unbounded loop would hang the turn.
const MAX_TOOL_PAGES: usize = 1000;

type Service = RunningService<RoleClient, Notifications>;

/// Our side of the session: who we are, and what we do with the server's notifications.
#[derive(Clone)]
struct Notifications {
    config: ClientConfig,
    /// Bumped by every `notifications/tools/list_changed`.
    tools_changed: Arc<AtomicU64>,
}

impl ClientHandler for Notifications {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.fetch_add(1, Ordering::SeqCst);
    }
}

/// A connected, initialised MCP server. Cheap to share behind an `Arc`: calls run concurrently.
pub struct McpConnection {
    label: String,
    peer: Peer<RoleClient>,
    /// Held only to close; `None` once closed.
    service: Mutex<Option<Service>>,
    stderr_tail: Option<Arc<StdMutex<VecDeque<String>>>>,
    /// The `Mcp-Session-Id` the server assigned (Streamable HTTP only).
    session: Option<Arc<StdMutex<Option<String>>>>,
    tools_changed: Arc<AtomicU64>,
    /// Set once the server said our session expired: the connection can only be replaced.
    expired: AtomicBool,
    /// Keeps the HTTP session on the server when closing (see [`McpConnection::close_keeping_session`]).
    keep_session: Option<Arc<AtomicBool>>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    /// Starts or reaches the server and runs the `initialize` handshake within `connect_timeout`.
    pub async fn connect(config: &McpServerConfig, connect_timeout: Duration) -> Result<Self, McpError> {
        Self::open_detached(config, connect_timeout, None).await
    }

    /// Resumes the Streamable HTTP session `session_id` that an earlier connection (another process)
    /// opened, without a new handshake: the first request tells whether the server still knows it
    /// (`SessionExpired` otherwise; then connect anew). A stdio config has no session and connects anew.
    pub async fn resume(
        config: &McpServerConfig,
        session_id: &str,
        server_name: &str,
        connect_timeout: Duration,
    ) -> Result<Self, McpError> {
        let resume = Some((session_id.to_owned(), server_name.to_owned()));
        Self::open_detached(config, connect_timeout, resume).await
    }

    /// Opens the connection in a task of its own, outside the caller's span: rmcp's worker, which lives as
    /// long as the connection, would otherwise make its spans children of the request or turn that
    /// happened to connect, holding that span open (and unexported) until the connection closes.
    async fn open_detached(
        config: &McpServerConfig,
        connect_timeout: Duration,
        resume: Option<(String, String)>,
    ) -> Result<Self, McpError> {
        let config = config.clone();
        let label = config.label();
        let opening = tokio::spawn(async move {
            let resume = resume
                .as_ref()
                .map(|(session, server)| (session.as_str(), server.as_str()));
            Self::open(&config, connect_timeout, resume).await
        });
        // Dropping the caller's future (a cancelled turn) stops the connect too.
        let abort = opening.abort_handle();
        let _abort_on_drop = AbortOnDrop(abort);
        opening.await.map_err(|error| McpError::ConnectFailed {
            server: label,
            detail: format!("the connecting task failed: {error}"),
        })?
    }

    async fn open(
        config: &McpServerConfig,
        connect_timeout: Duration,
        resume: Option<(&str, &str)>,
    ) -> Result<Self, McpError> {
        let label = config.label();
        let tools_changed = Arc::new(AtomicU64::new(0));
        let client = Notifications {
            config: client_config(),
            tools_changed: tools_changed.clone(),
        };
        match config {
            McpServerConfig::Stdio { command, args, env } => {
                if command.is_empty() {
                    return Err(McpError::InvalidConfig("the stdio command is empty".to_owned()));
                }
                let mut cmd = tokio::process::Command::new(command);
                // Not our whole environment: it holds provider keys and the secret key, which a tool
                // server has no business reading. Only what programs need to run, then the manifest's.
                cmd.args(args).env_clear().envs(inherited_env()).envs(env);
                // Piped rather than inherited: a server's stderr must not land in ours, and its last
                // lines explain a failed start.
                let (transport, stderr) =
                    TokioChildProcess::builder(cmd)
                        .stderr(Stdio::piped())
                        .spawn()
                        .map_err(|error| McpError::ConnectFailed {
                            server: label.clone(),
                            detail: error.to_string(),
                        })?;
                let drain = stderr.map(|stderr| drain_stderr(stderr, label.clone()));
                let (tail, reader) = drain.unzip();
                let started = initialize(client, transport, &label, connect_timeout).await;
                match started {
                    Ok(service) => Ok(Self::new(label, service, tail, None, tools_changed)),
                    Err(error) => {
                        // A server that failed to start has usually said why on stderr; give the
                        // reader a moment to reach the end of it.
                        if let Some(reader) = reader {
                            let _ = tokio::time::timeout(STDERR_GRACE, reader).await;
                        }
                        Err(with_stderr(error, tail.as_ref()))
                    }
                }
            }
            McpServerConfig::StreamableHttp { url, headers } => {
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let header_name = HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| McpError::InvalidConfig(format!("invalid header name {name:?}")))?;
                    // The value is not echoed: it may be a credential.
                    let header_value = HeaderValue::from_str(value)
                        .map_err(|_| McpError::InvalidConfig(format!("invalid value for header {name:?}")))?;
                    custom.insert(header_name, header_value);
                }
                // rmcp would re-initialise on an expired session and re-send the failed request,
                // which may re-run a tool call. We surface the expiry instead and let the owner
                // reconnect.
                let transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom)
                    .reinit_on_expired_session(false);
                let http = match resume {
                    Some((session_id, server_name)) => RecordingClient::resuming(session_id, server_name),
                    None => RecordingClient::new(),
                }
                .map_err(|error| McpError::ConnectFailed {
                    server: label.clone(),
                    detail: error.to_string(),
                })?;
                let session = http.session();
                let keep_session = http.keep_session();
                let transport = StreamableHttpClientTransport::with_client(http, transport_config);
                let service = initialize(client, transport, &label, connect_timeout).await?;
                let mut connection = Self::new(label, service, None, Some(session), tools_changed);
                connection.keep_session = Some(keep_session);
                Ok(connection)
            }
        }
    }

    fn new(
        label: String,
        service: Service,
        stderr_tail: Option<Arc<StdMutex<VecDeque<String>>>>,
        session: Option<Arc<StdMutex<Option<String>>>>,
        tools_changed: Arc<AtomicU64>,
    ) -> Self {
        Self {
            label,
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            stderr_tail,
            session,
            tools_changed,
            expired: AtomicBool::new(false),
            keep_session: None,
        }
    }

    /// The `Mcp-Session-Id` the server assigned; `None` for stdio and for stateless HTTP servers.
    pub fn session_id(&self) -> Option<String> {
        self.session.as_ref().and_then(|session| lock(session).clone())
    }

    /// Whether the connection runs over Streamable HTTP (rather than a stdio child process).
    pub fn is_http(&self) -> bool {
        self.session.is_some()
    }

    /// How many times the server said its tool list changed; a listing taken at an older count is stale.
    pub fn tools_generation(&self) -> u64 {
        self.tools_changed.load(Ordering::SeqCst)
    }

    /// The server's description of itself from the handshake.
    pub fn server_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.peer.peer_info()
    }

    /// A short label (command or redacted URL) for errors and logs.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Whether the connection is over: the transport closed (the process exited, the worker stopped) or
    /// the server said the session expired. Its owner replaces it; nothing is re-sent on the new one.
    pub fn is_closed(&self) -> bool {
        self.expired.load(Ordering::SeqCst) || self.peer.is_transport_closed()
    }

    /// Every tool of the server, following `nextCursor` until the last page. A cursor seen before
    /// ends the walk, so a server that cycles cannot hang us.
    pub async fn list_tools(&self, timeout: Duration) -> Result<Vec<Tool>, McpError> {
        let mut tools = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let span = self.request_span("tools/list", None);
            let mut params = PaginatedRequestParams::default().with_cursor(cursor.take());
            params.meta = trace_meta(&span);
            let page = tokio::time::timeout(timeout, self.peer.list_tools(Some(params)))
                .instrument(span)
                .await
                .map_err(|_| McpError::Protocol {
                    server: self.label.clone(),
                    detail: format!("tools/list did not answer within {}s", timeout.as_secs_f64()),
                })?
                .map_err(|error| self.classify(error, "tools/list"))?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                Some(repeated) => {
                    tracing::warn!(server = %self.label, cursor = %repeated, "tools/list repeated a cursor; stopping");
                    break;
                }
                None => break,
            }
        }
        Ok(tools)
    }

    /// Calls `tool` with `arguments` (a JSON object, or null for none). The call ends after
    /// `timeout` or when `cancel` fires; either way the request future is dropped, which makes rmcp
    /// send `notifications/cancelled` for it, and the connection stays usable.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        match arguments {
            Value::Object(object) => params = params.with_arguments(object),
            Value::Null => params = params.with_arguments(Map::new()),
            other => {
                return Err(McpError::Protocol {
                    server: self.label.clone(),
                    detail: format!("tool arguments must be a JSON object, not {other}"),
                });
            }
        }
        let span = self.request_span("tools/call", Some(tool));
        params.meta = trace_meta(&span);
        let call = tokio::time::timeout(timeout, self.peer.call_tool(params)).instrument(span.clone());
        let outcome = tokio::select! {
            // Biased: a cancelled turn wins over a result arriving in the same instant.
            biased;
            () = cancel.cancelled() => return Err(McpError::Cancelled { tool: tool.to_owned() }),
            outcome = call => outcome,
        };
        match outcome {
            Err(_elapsed) => Err(McpError::CallTimeout {
                tool: tool.to_owned(),
                timeout,
            }),
            Ok(result) => result.map_err(|error| {
                span.record("otel.status_code", "ERROR");
                self.classify(error, "tools/call")
            }),
        }
    }

    /// The client span of one request to the server (OpenTelemetry's MCP conventions); disabled while
    /// traces are not exported.
    fn request_span(&self, method: &'static str, tool: Option<&str>) -> tracing::Span {
        if !trueforge_telemetry::enabled() {
            return tracing::Span::none();
        }
        let name = match tool {
            Some(tool) => format!("{method} {tool}"),
            None => method.to_owned(),
        };
        tracing::info_span!(
            target: "trueforge::mcp",
            "mcp.request",
            otel.name = name,
            otel.kind = "client",
            mcp.method.name = method,
            // The label is the server's URL or command; a query string may hold a key.
            mcp.server = self.label.split('?').next().unwrap_or_default(),
            gen_ai.tool.name = tool,
            otel.status_code = tracing::field::Empty,
        )
    }

    /// Closes the session: for HTTP the session is deleted on the server, a stdio server is told to
    /// exit and then killed. Closing twice is harmless.
    pub async fn close(&self) {
        let taken = self.service.lock().await.take();
        if let Some(mut service) = taken
            && let Err(error) = service.close_with_timeout(Duration::from_secs(5)).await
        {
            tracing::debug!(server = %self.label, %error, "closing the MCP connection failed");
        }
    }

    /// Closes the connection but leaves an HTTP session on the server, for the next process to
    /// [`resume`](Self::resume); a stdio server is stopped as by [`close`](Self::close).
    pub async fn close_keeping_session(&self) {
        if let Some(keep) = &self.keep_session {
            keep.store(true, Ordering::SeqCst);
        }
        self.close().await;
    }

    fn classify(&self, error: ServiceError, operation: &str) -> McpError {
        let server = self.label.clone();
        if error.is_authorization_required() || error.auth_challenge().is_some() {
            return McpError::AuthRequired {
                server,
                www_authenticate: error.auth_challenge().map(str::to_owned),
            };
        }
        match error {
            ServiceError::TransportSend(ref transport) if is_session_expired(transport.error.as_ref()) => {
                self.expired.store(true, Ordering::SeqCst);
                McpError::SessionExpired { server }
            }
            ServiceError::TransportClosed => McpError::Closed { server },
            ServiceError::TransportSend(ref transport) => McpError::Transport {
                server,
                detail: format!("{operation}: {}", describe::transport_error(transport)),
            },
            other => McpError::Protocol {
                server,
                detail: format!("{operation}: {}", describe::service_error(&other)),
            },
        }
    }
}

fn client_config() -> ClientConfig {
    // Pinned: rmcp's default asks for its newest protocol even in the initialize lifecycle, which
    // the servers we target do not speak.
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("trueforge", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

async fn initialize<T, E, A>(
    client: Notifications,
    transport: T,
    label: &str,
    connect_timeout: Duration,
) -> Result<Service, McpError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(connect_timeout, rmcp::serve_client(client, transport)).await {
        Err(_elapsed) => Err(McpError::InitializeFailed {
            server: label.to_owned(),
            detail: format!("no answer within {}s", connect_timeout.as_secs_f64()),
        }),
        Ok(Ok(service)) => Ok(service),
        Ok(Err(error)) => {
            let detail = describe::initialize_error(&error);
            let server = label.to_owned();
            if error.is_authorization_required() || error.auth_challenge().is_some() {
                return Err(McpError::AuthRequired {
                    server,
                    www_authenticate: error.auth_challenge().map(str::to_owned),
                });
            }
            Err(match error {
                // The transport itself failed (unreachable, refused, process gone before answering).
                ClientInitializeError::TransportError { .. } | ClientInitializeError::ConnectionClosed(_) => {
                    McpError::ConnectFailed { server, detail }
                }
                _ => McpError::InitializeFailed { server, detail },
            })
        }
    }
}

/// The variables a stdio server gets from our environment: enough to find programs, a home, a temp
/// directory and the locale.
const INHERITED_VARS: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM",
];

fn inherited_env() -> impl Iterator<Item = (&'static str, std::ffi::OsString)> {
    INHERITED_VARS
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (*name, value)))
}

/// Adds a stdio server's last stderr lines to a connect or initialize failure.
fn with_stderr(error: McpError, tail: Option<&Arc<StdMutex<VecDeque<String>>>>) -> McpError {
    let lines = tail.map(|tail| lines_of(tail)).unwrap_or_default();
    if lines.is_empty() {
        return error;
    }
    match error {
        McpError::ConnectFailed { server, detail } => McpError::ConnectFailed {
            server,
            detail: format!("{detail}; stderr: {lines}"),
        },
        McpError::InitializeFailed { server, detail } => McpError::InitializeFailed {
            server,
            detail: format!("{detail}; stderr: {lines}"),
        },
        other => other,
    }
}

fn is_session_expired(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if matches!(
            error.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
            Some(StreamableHttpError::SessionExpired)
        ) {
            return true;
        }
        current = error.source();
    }
    false
}

/// Reads a stdio server's stderr to the end (a full pipe would block the server), logging each
/// line and keeping the last few.
fn drain_stderr(
    stderr: tokio::process::ChildStderr,
    label: String,
) -> (Arc<StdMutex<VecDeque<String>>>, tokio::task::JoinHandle<()>) {
    let tail = Arc::new(StdMutex::new(VecDeque::with_capacity(STDERR_TAIL_LINES)));
    let sink = tail.clone();
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(server = %label, "stderr: {line}");
            let mut tail = lock(&sink);
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    });
    (tail, reader)
}

fn lines_of(tail: &StdMutex<VecDeque<String>>) -> String {
    let tail = lock(tail);
    tail.iter().cloned().collect::<Vec<_>>().join(" | ")
}

impl McpConnection {
    /// The last lines a stdio server wrote to stderr (empty for HTTP).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr_tail
            .as_ref()
            .map(|tail| lock(tail).iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// The request's `_meta` with the span's W3C trace context (SEP-414), or none when traces are off.
fn trace_meta(span: &tracing::Span) -> Option<rmcp::model::RequestMetaObject> {
    let context = trueforge_telemetry::context_of(span)?;
    let mut meta = rmcp::model::RequestMetaObject::new();
    meta.set_traceparent(&context.traceparent);
    if let Some(state) = &context.tracestate {
        meta.set_tracestate(state);
    }
    Some(meta)
}

/// Aborts a task when its awaiting future is dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
