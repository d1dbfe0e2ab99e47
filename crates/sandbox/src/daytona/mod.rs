//! The `daytona` provider: sandboxes on a remote Daytona-compatible API, as the reference's
//! `DaytonaProvider` uses it.
//!
//! - A sandbox is made from the configured snapshot and named `<tenant>.<ulid>`; the name is the raw id (the
//!   API takes a name wherever it takes an id). Its auto-stop/archive/delete intervals come from the settings.
//! - Reattaching gets the sandbox by name and starts it when stopped or archived; 404 (or a destroyed one)
//!   is [`SandboxError::NotAvailable`], so the caller makes a new one.
//! - Commands and files go through the sandbox's toolbox (`toolboxProxyUrl`). When a toolbox call fails the
//!   provider asks the API why: gone is `NotAvailable`; stopped behind its back (auto-stop) is started and
//!   the call made once more, which is safe because a stopped sandbox cannot have run it.
//! - Layout of the reference image: workspace `/home/trueforge`, everything of TrueForge under `/opt/tf`.
//!   The whole VM is the sandbox, so there is no path that leaves it: paths are only checked for form.
//! - No Code Mode: its bridge is a local Unix socket, which does not reach a remote VM.
//! - Every HTTP call has a timeout; errors name the call and Daytona's status and message, never the key.

mod client;
mod command;
mod config;
mod status;
mod wire;

use std::collections::HashMap;
use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trueforge_protocol::DaytonaSandboxProvider;
use trueforge_protocol::sync::lock;

use crate::{
    ByteStream, Download, ExecOutput, ExecRequest, FileStat, SandboxError, SandboxLayout, SandboxOwner,
    SandboxProvider, check_sandbox_path,
};
use client::{ApiError, Client, Executed, Toolbox};

pub use config::{
    DEFAULT_DAYTONA_API_URL, DEFAULT_DAYTONA_REQUEST_TIMEOUT, DEFAULT_DAYTONA_SNAPSHOT, DEFAULT_DAYTONA_START_TIMEOUT,
    DaytonaConfig,
};
pub use status::{DaytonaCheckError, ProviderStatus, REJECTED_REASON, SandboxBuildStatus};

/// How often a starting sandbox is looked at again.
const START_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// A remote Daytona-compatible API as a sandbox provider.
pub struct DaytonaProvider {
    config: DaytonaConfig,
    client: Client,
    layout: SandboxLayout,
    /// Where each sandbox seen (by raw id) has its toolbox, so a command costs one call. Dropped when the
    /// sandbox turns out gone or stopped, and learnt again.
    toolboxes: Mutex<HashMap<String, Toolbox>>,
}

impl std::fmt::Debug for DaytonaProvider {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DaytonaProvider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl DaytonaProvider {
    /// The provider type written in sandbox ids.
    pub const KIND: &'static str = "daytona";

    /// [`SandboxError::Unavailable`] when the settings cannot work (an API URL that is not http(s), a key
    /// no header can carry).
    pub fn new(config: DaytonaConfig) -> Result<Self, SandboxError> {
        let client =
            Client::new(&config.api_url, &config.api_key, config.request_timeout).map_err(SandboxError::Unavailable)?;
        Ok(Self {
            config,
            client,
            layout: SandboxLayout {
                workspace: "/home/trueforge".to_owned(),
                uploads: "/opt/tf/uploads".to_owned(),
                tool_results: "/opt/tf/tool-results".to_owned(),
                skills: "/opt/tf/skills".to_owned(),
            },
            toolboxes: Mutex::new(HashMap::new()),
        })
    }

    /// A provider for a tenant's stored settings (see [`DaytonaConfig::from_manifest`]).
    pub fn from_manifest(manifest: &DaytonaSandboxProvider, api_url: impl Into<String>) -> Result<Self, SandboxError> {
        Self::new(DaytonaConfig::from_manifest(manifest, api_url))
    }

    pub fn config(&self) -> &DaytonaConfig {
        &self.config
    }

    /// The timeout of a command whose caller names none (the settings' `exec_timeout_ms`).
    pub fn exec_timeout(&self) -> Duration {
        self.config.exec_timeout
    }

    /// Whether sandboxes can be made: the snapshot's state (active: ready; error, build_failed: failed;
    /// else pending). A rejected key fails; Daytona not answering (timeout, no connection, 5xx) is pending.
    /// Never errs: the answer is the status.
    pub async fn status(&self) -> ProviderStatus {
        let name = &self.config.snapshot;
        match self.client.get_snapshot(name).await {
            Ok(snapshot) => ProviderStatus::of_snapshot(name, &snapshot),
            Err(error) if error.status() == Some(404) => self.missing_snapshot(),
            Err(error) => ProviderStatus::of_error(&error),
        }
    }

    /// Whether Daytona takes the key (for saving the settings): [`DaytonaCheckError::Rejected`] on 401 or
    /// 403, [`DaytonaCheckError::Unreachable`] when it does not answer.
    pub async fn check_credentials(&self) -> Result<(), DaytonaCheckError> {
        match self.client.get_snapshot(&self.config.snapshot).await {
            Ok(_) => Ok(()),
            Err(error) => DaytonaCheckError::of(&error).map_or(Ok(()), Err),
        }
    }

    /// Makes the snapshot usable, as the reference's image build does: registers it from the configured
    /// image when missing (409: another server is doing so), activates it when inactive (Daytona deactivates
    /// snapshots unused for two weeks), and registers it again when it failed. Answers the resulting status.
    pub async fn ensure_snapshot(&self) -> Result<ProviderStatus, DaytonaCheckError> {
        let name = &self.config.snapshot;
        let outcome = match self.client.get_snapshot(name).await {
            Ok(snapshot) if snapshot.state == "inactive" => self
                .client
                .activate_snapshot(&snapshot.id)
                .await
                .map(|snapshot| ProviderStatus::of_snapshot(name, &snapshot)),
            Ok(snapshot)
                if matches!(snapshot.state.as_str(), "error" | "build_failed") && self.config.image.is_some() =>
            {
                match self.client.delete_snapshot(&snapshot.id).await {
                    Ok(()) => self.register_snapshot().await,
                    Err(error) => Err(error),
                }
            }
            Ok(snapshot) => Ok(ProviderStatus::of_snapshot(name, &snapshot)),
            Err(error) if error.status() == Some(404) => self.register_snapshot().await,
            Err(error) => Err(error),
        };
        outcome.or_else(|error| match DaytonaCheckError::of(&error) {
            Some(check) => Err(check),
            None => Ok(ProviderStatus::failed(error.to_string())),
        })
    }

    async fn register_snapshot(&self) -> Result<ProviderStatus, ApiError> {
        let name = &self.config.snapshot;
        let Some(image) = self.config.image.as_deref() else {
            return Ok(self.missing_snapshot());
        };
        let body = wire::CreateSnapshot {
            name,
            image_name: image,
        };
        match self.client.create_snapshot(&body).await {
            Ok(snapshot) => Ok(ProviderStatus::of_snapshot(name, &snapshot)),
            Err(error) if error.status() == Some(409) => Ok(ProviderStatus::pending(format!(
                "The snapshot {name} is being registered by another server"
            ))),
            Err(error) => Err(error),
        }
    }

    fn missing_snapshot(&self) -> ProviderStatus {
        let name = &self.config.snapshot;
        if self.config.image.is_some() {
            ProviderStatus::pending(format!("The snapshot {name} is not registered yet"))
        } else {
            ProviderStatus::failed(format!(
                "The snapshot {name} does not exist in this Daytona organization"
            ))
        }
    }

    // Sandboxes.

    /// The sandbox by raw id: [`SandboxError::NotAvailable`] when Daytona has none (or a destroyed one).
    async fn look_up(&self, raw_id: &str) -> Result<wire::Sandbox, SandboxError> {
        match self.client.get_sandbox(raw_id).await {
            Ok(sandbox) if is_gone(&sandbox.state) => Err(self.gone(raw_id)),
            Ok(sandbox) => Ok(sandbox),
            Err(error) if error.status() == Some(404) => Err(self.gone(raw_id)),
            Err(error) => Err(failure(&error)),
        }
    }

    /// Waits for the sandbox to run, starting it when stopped or archived.
    async fn run_sandbox(&self, raw_id: &str, mut sandbox: wire::Sandbox) -> Result<wire::Sandbox, SandboxError> {
        let deadline = Instant::now() + self.config.start_timeout;
        let mut start_sent = false;
        loop {
            match sandbox.state.as_str() {
                "started" => return Ok(sandbox),
                "stopped" | "archived" if !start_sent => {
                    self.client
                        .start_sandbox(&sandbox.id)
                        .await
                        .map_err(|error| match error.status() {
                            Some(404) => self.gone(raw_id),
                            _ => failure(&error),
                        })?;
                    start_sent = true;
                    // Daytona answers a start once the sandbox runs (or is restoring): look at once.
                    sandbox = self.look_up(raw_id).await?;
                    continue;
                }
                state if is_gone(state) => return Err(self.gone(raw_id)),
                state @ ("error" | "build_failed") => {
                    let reason = sandbox.error_reason.as_deref().unwrap_or("no reason given");
                    return Err(SandboxError::Provider(format!(
                        "Daytona sandbox {raw_id} is in state {state}: {reason}"
                    )));
                }
                // On its way somewhere (creating, starting, restoring, stopping, archiving…): look again.
                _ => {}
            }
            if Instant::now() >= deadline {
                return Err(SandboxError::Provider(format!(
                    "Daytona sandbox {raw_id} did not start within {}s (it is {})",
                    self.config.start_timeout.as_secs(),
                    sandbox.state
                )));
            }
            tokio::time::sleep(START_POLL_INTERVAL).await;
            sandbox = self.look_up(raw_id).await?;
        }
    }

    fn remember(&self, raw_id: &str, sandbox: &wire::Sandbox) -> Result<Toolbox, SandboxError> {
        let toolbox = self.client.toolbox(sandbox).map_err(|error| failure(&error))?;
        lock(&self.toolboxes).insert(raw_id.to_owned(), toolbox.clone());
        Ok(toolbox)
    }

    fn gone(&self, raw_id: &str) -> SandboxError {
        lock(&self.toolboxes).remove(raw_id);
        SandboxError::NotAvailable(raw_id.to_owned())
    }

    /// The toolbox of a sandbox, learning it (and starting the sandbox) when not known yet.
    async fn toolbox(&self, raw_id: &str) -> Result<Toolbox, SandboxError> {
        if let Some(toolbox) = lock(&self.toolboxes).get(raw_id).cloned() {
            return Ok(toolbox);
        }
        let sandbox = self.look_up(raw_id).await?;
        let sandbox = self.run_sandbox(raw_id, sandbox).await?;
        self.remember(raw_id, &sandbox)
    }

    /// Makes a toolbox call, and when it fails finds out why (see the module documentation). A 404 from a
    /// running sandbox means `missing_file` when the call names one.
    async fn with_toolbox<T, Call>(
        &self,
        raw_id: &str,
        missing_file: Option<&str>,
        call: impl Fn(Toolbox) -> Call,
    ) -> Result<T, SandboxError>
    where
        Call: Future<Output = Result<T, ApiError>>,
    {
        let classify = |error: &ApiError| match (error.status(), missing_file) {
            (Some(404), Some(path)) => SandboxError::FileNotFound(path.to_owned()),
            _ => failure(error),
        };
        let toolbox = self.toolbox(raw_id).await?;
        let error = match call(toolbox).await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        // Nothing to learn from the API when it refuses the key or the sandbox did not answer at all (asking
        // would only add another wait).
        if error.is_rejected_key() || matches!(error.kind, client::ApiErrorKind::Timeout(_)) {
            return Err(classify(&error));
        }
        let sandbox = match self.client.get_sandbox(raw_id).await {
            Ok(sandbox) if is_gone(&sandbox.state) => return Err(self.gone(raw_id)),
            Ok(sandbox) if sandbox.state == "started" => return Err(classify(&error)),
            Ok(sandbox) => sandbox,
            Err(lookup) if lookup.status() == Some(404) => return Err(self.gone(raw_id)),
            Err(_) => return Err(classify(&error)),
        };
        lock(&self.toolboxes).remove(raw_id);
        tracing::info!(
            sandbox = raw_id,
            state = %sandbox.state,
            %error,
            "the Daytona sandbox is not running; starting it and calling again"
        );
        let sandbox = self.run_sandbox(raw_id, sandbox).await?;
        let toolbox = self.remember(raw_id, &sandbox)?;
        call(toolbox).await.map_err(|error| classify(&error))
    }

    /// A command's working directory: the workspace, or `cwd` (absolute, or relative to the workspace).
    fn working_directory(&self, cwd: Option<&str>) -> Result<String, SandboxError> {
        let workspace = &self.layout.workspace;
        let cwd = match cwd {
            None | Some("" | ".") => return Ok(workspace.clone()),
            Some(cwd) if cwd.starts_with('/') => cwd.to_owned(),
            Some(cwd) => format!("{workspace}/{cwd}"),
        };
        check_sandbox_path(&cwd)?;
        Ok(cwd)
    }
}

#[async_trait]
impl SandboxProvider for DaytonaProvider {
    fn kind(&self) -> &str {
        Self::KIND
    }

    fn layout(&self) -> &SandboxLayout {
        &self.layout
    }

    /// The Code Mode bridge is a Unix socket on this host, which a remote VM cannot reach.
    fn code_mode_socket(&self) -> Option<&str> {
        None
    }

    async fn create(&self, owner: &SandboxOwner) -> Result<String, SandboxError> {
        let name = format!("{}.{}", owner.tenant, ulid::Ulid::new().to_string().to_lowercase());
        let body = wire::CreateSandbox {
            name: &name,
            snapshot: &self.config.snapshot,
            auto_stop_interval: minutes(self.config.auto_stop_minutes),
            auto_archive_interval: minutes(self.config.auto_archive_minutes),
            // Our 0 means never; Daytona's 0 deletes a sandbox the moment it stops, a negative value never.
            auto_delete_interval: match self.config.auto_delete_minutes {
                0 => -1,
                minutes_set => minutes(minutes_set),
            },
        };
        let sandbox = self
            .client
            .create_sandbox(&body)
            .await
            .map_err(|error| failure(&error))?;
        let sandbox = self.run_sandbox(&name, sandbox).await?;
        self.remember(&name, &sandbox)?;
        Ok(name)
    }

    async fn reattach(&self, owner: &SandboxOwner, raw_id: &str) -> Result<(), SandboxError> {
        if !owner.owns(raw_id) {
            return Err(SandboxError::TenantMismatch);
        }
        let sandbox = self.look_up(raw_id).await?;
        let sandbox = self.run_sandbox(raw_id, sandbox).await?;
        self.remember(raw_id, &sandbox)?;
        Ok(())
    }

    async fn exec(
        &self,
        raw_id: &str,
        request: ExecRequest,
        cancel: &CancellationToken,
    ) -> Result<ExecOutput, SandboxError> {
        // `request.bridge_socket` stays unused: `code_mode_socket` is `None`, so no turn sets up Code Mode here.
        let command = command::wrap(&request.command, &request.env)?;
        let cwd = self.working_directory(request.cwd.as_deref())?;
        // Daytona takes whole seconds; rounding up never cuts a command short.
        let seconds = request.timeout.as_secs() + u64::from(request.timeout.subsec_nanos() > 0);
        let seconds = seconds.max(1);
        let body = wire::ExecuteRequest {
            command: &command,
            cwd: &cwd,
            timeout: seconds,
        };
        // The daemon answers at the latest when it kills the command; past that plus the usual room for an
        // answer, the sandbox is not answering.
        let answer_within = Duration::from_secs(seconds) + self.config.request_timeout;
        let (client, body) = (&self.client, &body);
        let running = self.with_toolbox(raw_id, None, |toolbox| async move {
            client.execute(&toolbox, body, answer_within).await
        });
        let executed = tokio::select! {
            biased;
            // Dropping the call closes its connection. Daytona's daemon does not stop a command whose
            // client left (it runs it on a background context), so the command goes on in the sandbox
            // until it ends or the timeout sent with it kills its process group.
            () = cancel.cancelled() => return Ok(ExecOutput {
                exit_code: None,
                output: String::new(),
                omitted_bytes: 0,
                timed_out: false,
                cancelled: true,
            }),
            executed = running => executed?,
        };
        Ok(match executed {
            Executed::Done(answer) => {
                let (output, omitted_bytes) = command::keep_head_and_tail(answer.result, request.output_limit);
                ExecOutput {
                    // The daemon sends -1 for a command killed by a signal or that could not start.
                    exit_code: (answer.exit_code >= 0).then_some(answer.exit_code),
                    output,
                    omitted_bytes,
                    timed_out: false,
                    cancelled: false,
                }
            }
            // The daemon keeps no output of a command it killed.
            Executed::TimedOut => ExecOutput {
                exit_code: None,
                output: String::new(),
                omitted_bytes: 0,
                timed_out: true,
                cancelled: false,
            },
        })
    }

    async fn upload(&self, raw_id: &str, path: &str, content: Bytes) -> Result<(), SandboxError> {
        check_sandbox_path(path)?;
        let client = &self.client;
        self.with_toolbox(raw_id, None, |toolbox| {
            let content = content.clone();
            async move { client.upload(&toolbox, path, content).await }
        })
        .await
    }

    async fn stat(&self, raw_id: &str, path: &str) -> Result<FileStat, SandboxError> {
        check_sandbox_path(path)?;
        let client = &self.client;
        let info = self
            .with_toolbox(raw_id, Some(path), |toolbox| async move {
                client.file_info(&toolbox, path).await
            })
            .await?;
        Ok(FileStat {
            size: info.size,
            is_dir: info.is_dir,
        })
    }

    async fn download(&self, raw_id: &str, path: &str, max_bytes: u64) -> Result<Download, SandboxError> {
        let stat = self.stat(raw_id, path).await?;
        if stat.is_dir {
            return Err(SandboxError::PathIsDirectory(path.to_owned()));
        }
        if stat.size > max_bytes {
            return Err(SandboxError::FileTooLarge {
                path: path.to_owned(),
                size: stat.size,
                limit: max_bytes,
            });
        }
        let client = &self.client;
        let response = self
            .with_toolbox(raw_id, Some(path), |toolbox| async move {
                client.download(&toolbox, path).await
            })
            .await?;
        Ok(Download {
            size: stat.size,
            body: body_stream(response, path.to_owned(), max_bytes, self.config.request_timeout),
        })
    }
}

/// The file's bytes as they arrive. Each chunk must come within `idle` (a whole-download timeout would cut
/// large files on slow links); the file may not grow past `limit` between the size check and the download.
fn body_stream(response: reqwest::Response, path: String, limit: u64, idle: Duration) -> ByteStream {
    let chunks = Box::pin(response.bytes_stream());
    let stream = futures::stream::unfold(Some((chunks, 0_u64)), move |state| {
        let path = path.clone();
        async move {
            let (mut chunks, received) = state?;
            let failed = |error: io::Error| Some((Err(error), None));
            match tokio::time::timeout(idle, chunks.next()).await {
                Err(_) => failed(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("Daytona sent nothing more of {path} for {}s", idle.as_secs()),
                )),
                Ok(None) => None,
                Ok(Some(Err(error))) => failed(io::Error::other(format!(
                    "downloading {path} from Daytona failed: {error}"
                ))),
                Ok(Some(Ok(chunk))) => {
                    let received = received + chunk.len() as u64;
                    if received > limit {
                        failed(io::Error::other(format!(
                            "{path} grew past the limit of {limit} bytes while downloading"
                        )))
                    } else {
                        Some((Ok(chunk), Some((chunks, received))))
                    }
                }
            }
        }
    });
    Box::pin(stream)
}

/// A sandbox Daytona has deleted or is deleting.
fn is_gone(state: &str) -> bool {
    matches!(state, "destroyed" | "destroying")
}

/// An API failure as a sandbox error: a refused key means no sandbox can be had with these settings.
fn failure(error: &ApiError) -> SandboxError {
    if error.is_rejected_key() {
        SandboxError::Unavailable(format!(
            "Daytona rejected the API key — check the credentials ({error})"
        ))
    } else {
        SandboxError::Provider(error.to_string())
    }
}

/// Minutes as Daytona's signed interval; no configured value comes near the limit.
fn minutes(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
