//! The sandbox a turn runs code in: found through a seam ([`SandboxResolver`]), created on first use and
//! shared by the root and its sub-agents ([`TurnSandbox`]), offered to the model as the `exec` tool, and used
//! for the user's uploaded files and for large tool results.

mod code_mode;
mod exec_tool;
mod offload;
mod prompt;
mod uploads;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use trueforge_protocol::{SandboxCreatedEvent, SessionEvent, TenantId};
use trueforge_sandbox::{
    Bridge, CLIENT_MODULE_NAME, CLIENT_SOURCE, ExecOutput, ExecRequest, GitSkill, SandboxError, SandboxLayout,
    SandboxOwner, SandboxProvider, SandboxRef, SkillSources, install_skills,
};
use trueforge_store::session::SandboxInfo;

use crate::error::AgentError;
use crate::ids::now_iso;
use crate::journal::Journal;

pub use code_mode::{CodeModeTools, code_mode_instructions};
pub use exec_tool::{EXEC_TOOL, SANDBOX_TOOL_SET, SandboxTools};
pub use offload::offload_large_result;
pub use prompt::sandbox_instructions;
pub use uploads::{PendingUpload, stage_uploads};

/// What the host decides about every sandbox.
#[derive(Debug, Clone)]
pub struct SandboxOptions {
    /// How long one command may run.
    pub exec_timeout: Duration,
    /// Bytes of one command's output given back (its beginning and end); a larger output is cut in the
    /// middle, and what is kept may still be offloaded to a file as a large result.
    pub output_limit: usize,
    /// The largest file a user may send into the sandbox with a message.
    pub upload_max_bytes: u64,
    /// Where the host keeps the Code Mode bridges' sockets (a private directory).
    pub bridge_dir: PathBuf,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        Self {
            exec_timeout: trueforge_sandbox::DEFAULT_EXEC_TIMEOUT,
            output_limit: 256 * 1024,
            upload_max_bytes: 20 * 1024 * 1024,
            bridge_dir: std::env::temp_dir(),
        }
    }
}

/// Finds the sandbox provider a tenant's turns use.
#[async_trait]
pub trait SandboxResolver: Send + Sync {
    /// The provider for the tenant's new sandboxes and for reattaching its sandbox of the same kind.
    /// [`SandboxError::Unavailable`] when none can be provided: the turn then fails with that reason,
    /// it never runs anything unsandboxed.
    async fn provider(&self, tenant_id: &TenantId) -> Result<Arc<dyn SandboxProvider>, SandboxError>;

    fn options(&self) -> &SandboxOptions;

    /// The configured skills of these names (the agent spec names them), in that order; an unknown name is
    /// an error.
    async fn skills(&self, tenant_id: &TenantId, names: &[String]) -> Result<Vec<GitSkill>, SandboxError>;

    /// Where and how skills are fetched.
    fn skill_sources(&self) -> &SkillSources;
}

/// How far a turn's sandbox got.
#[derive(Debug, Default)]
struct Ready {
    raw_id: Option<String>,
    prepared: bool,
}

/// A turn's sandbox: made or reattached on first use (one `sandbox.created` when it is made), shared by
/// every thread of the turn.
pub struct TurnSandbox {
    provider: Arc<dyn SandboxProvider>,
    owner: SandboxOwner,
    /// The sandbox the conversation used so far (the turn snapshot's), if any; set before first use.
    known: OnceLock<SandboxRef>,
    options: SandboxOptions,
    /// The sandbox once made or reattached, and whether it is prepared; held while making it, so concurrent
    /// first uses make one.
    ready: Mutex<Ready>,
    /// Where `sandbox.created` goes; attached when the turn starts running.
    journal: OnceLock<Arc<Journal>>,
    /// The agent's tools as code reaches them, when Code Mode is on for this turn.
    code_mode: OnceLock<Arc<CodeModeTools>>,
    /// The turn's Code Mode bridge, started on the first command that can use it, and its directory.
    bridge: Mutex<Option<Bridge>>,
    bridge_dir: OnceLock<PathBuf>,
    /// The agent's skills, installed when the sandbox is prepared, and where they come from.
    skills: Vec<GitSkill>,
    skill_sources: SkillSources,
}

impl TurnSandbox {
    pub fn new(
        provider: Arc<dyn SandboxProvider>,
        owner: SandboxOwner,
        options: SandboxOptions,
        skills: Vec<GitSkill>,
        skill_sources: SkillSources,
    ) -> Self {
        Self {
            provider,
            owner,
            known: OnceLock::new(),
            options,
            ready: Mutex::new(Ready::default()),
            journal: OnceLock::new(),
            code_mode: OnceLock::new(),
            bridge: Mutex::new(None),
            bridge_dir: OnceLock::new(),
            skills,
            skill_sources,
        }
    }

    /// The agent's skills, for the prompt.
    pub fn skills(&self) -> &[GitSkill] {
        &self.skills
    }

    /// Whether this sandbox can carry Code Mode (the provider can reach a bridge on this host).
    pub fn supports_code_mode(&self) -> bool {
        self.provider.code_mode_socket().is_some()
    }

    /// Lets commands call the agent's tools through `tools` (Code Mode).
    pub fn enable_code_mode(&self, tools: CodeModeTools) {
        if self.supports_code_mode() {
            let _ = self.code_mode.set(Arc::new(tools));
        }
    }

    /// Where the Code Mode client module lives inside the sandbox (on `PYTHONPATH`).
    fn client_dir(&self) -> String {
        format!("{}/.trueforge/python", self.layout().workspace.trim_end_matches('/'))
    }

    /// Adds the bridge (started on first use) to a command when Code Mode is on.
    async fn with_code_mode(&self, mut request: ExecRequest) -> Result<ExecRequest, AgentError> {
        let (Some(tools), Some(inside)) = (self.code_mode.get(), self.provider.code_mode_socket()) else {
            return Ok(request);
        };
        let mut bridge = self.bridge.lock().await;
        if bridge.is_none() {
            let dir = self
                .options
                .bridge_dir
                .join(ulid::Ulid::new().to_string().to_lowercase());
            std::fs::create_dir_all(&dir).map_err(|error| {
                SandboxError::Provider(format!("cannot make the Code Mode bridge directory: {error}"))
            })?;
            let _ = self.bridge_dir.set(dir.clone());
            let handler: Arc<dyn trueforge_sandbox::BridgeHandler> = tools.clone();
            *bridge = Some(Bridge::start(&dir, handler).map_err(SandboxError::provider)?);
        }
        if let Some(bridge) = bridge.as_ref() {
            request.bridge_socket = Some(bridge.socket_path().to_path_buf());
            request.env.extend(bridge.env(inside));
            let client_dir = self.client_dir();
            let python_path = match request.env.get("PYTHONPATH") {
                Some(existing) => format!("{client_dir}:{existing}"),
                None => client_dir,
            };
            request.env.insert("PYTHONPATH".to_owned(), python_path);
            // The command's tool calls through the bridge continue the trace of the tool call running it
            // (OpenTelemetry's variables for a process's parent context).
            if let Some(trace) = trueforge_telemetry::current_context() {
                request.env.insert("TRACEPARENT".to_owned(), trace.traceparent);
                if let Some(state) = trace.tracestate {
                    request.env.insert("TRACESTATE".to_owned(), state);
                }
            }
        }
        Ok(request)
    }

    pub fn layout(&self) -> &SandboxLayout {
        self.provider.layout()
    }

    pub fn provider(&self) -> &dyn SandboxProvider {
        self.provider.as_ref()
    }

    pub fn options(&self) -> &SandboxOptions {
        &self.options
    }

    /// The sandbox the conversation used so far, to reattach instead of making a new one. An id that
    /// cannot be read counts as none: the turn makes a fresh sandbox.
    pub fn remember(&self, known: Option<&SandboxInfo>) {
        if let Some(known) = known.and_then(|info| SandboxRef::parse(&info.sandbox_id).ok()) {
            let _ = self.known.set(known);
        }
    }

    /// Gives the sandbox the turn's journal, for `sandbox.created`.
    pub fn attach(&self, journal: Arc<Journal>) {
        // A second attach (never done) would keep the first journal, which is the turn's.
        let _ = self.journal.set(journal);
    }

    /// The raw id of the sandbox, made or reattached (and prepared) on first use. A sandbox made but not
    /// prepared (a skill failed to install) is kept: the next use prepares it again, it makes no other.
    pub async fn raw_id(&self) -> Result<String, AgentError> {
        let mut ready = self.ready.lock().await;
        let raw_id = match &ready.raw_id {
            Some(raw_id) => raw_id.clone(),
            None => {
                let raw_id = self.reattach_or_create().await?;
                ready.raw_id = Some(raw_id.clone());
                raw_id
            }
        };
        if !ready.prepared {
            self.prepare(&raw_id).await?;
            ready.prepared = true;
        }
        Ok(raw_id)
    }

    /// Runs a command; a sandbox found gone is made again once. Counted for the metrics by provider and
    /// outcome.
    pub async fn exec(&self, request: ExecRequest, cancel: &CancellationToken) -> Result<ExecOutput, AgentError> {
        let started = std::time::Instant::now();
        let result = self.exec_uncounted(request, cancel).await;
        let outcome = match &result {
            Ok(output) if output.cancelled => "cancelled",
            Ok(output) if output.timed_out => "timeout",
            Ok(output) if output.exit_code == Some(0) => "ok",
            Ok(_) => "failed",
            Err(_) => "error",
        };
        crate::telemetry::sandbox_exec(self.provider.kind(), outcome, started.elapsed());
        result
    }

    async fn exec_uncounted(&self, request: ExecRequest, cancel: &CancellationToken) -> Result<ExecOutput, AgentError> {
        let raw_id = self.raw_id().await?;
        let request = self.with_code_mode(request).await?;
        match self.provider.exec(&raw_id, request.clone(), cancel).await {
            Err(SandboxError::NotAvailable(_)) => {
                let raw_id = self.remake(&raw_id).await?;
                Ok(self.provider.exec(&raw_id, request, cancel).await?)
            }
            other => Ok(other?),
        }
    }

    /// Writes a file into the sandbox; a sandbox found gone is made again once.
    pub async fn upload(&self, path: &str, content: Bytes) -> Result<(), AgentError> {
        let raw_id = self.raw_id().await?;
        match self.provider.upload(&raw_id, path, content.clone()).await {
            Err(SandboxError::NotAvailable(_)) => {
                let raw_id = self.remake(&raw_id).await?;
                Ok(self.provider.upload(&raw_id, path, content).await?)
            }
            other => Ok(other?),
        }
    }

    /// Makes a new sandbox in place of `gone`, unless another caller already did.
    async fn remake(&self, gone: &str) -> Result<String, AgentError> {
        let mut ready = self.ready.lock().await;
        if let Some(current) = ready.raw_id.as_ref().filter(|current| current.as_str() != gone) {
            return Ok(current.clone());
        }
        let raw_id = self.create().await?;
        *ready = Ready {
            raw_id: Some(raw_id.clone()),
            prepared: false,
        };
        self.prepare(&raw_id).await?;
        ready.prepared = true;
        Ok(raw_id)
    }

    async fn reattach_or_create(&self) -> Result<String, AgentError> {
        if let Some(raw_id) = self
            .known
            .get()
            .and_then(|known| known.raw_id_for(self.provider.kind()))
        {
            match self.provider.reattach(&self.owner, raw_id).await {
                Ok(()) => return Ok(raw_id.to_owned()),
                // Gone (expired, deleted) or not this tenant's: a fresh one, as the reference does once.
                Err(SandboxError::NotAvailable(_) | SandboxError::TenantMismatch | SandboxError::InvalidId(_)) => {}
                Err(other) => return Err(other.into()),
            }
        }
        self.create().await
    }

    /// Makes a sandbox and records it: the turn's snapshot first (so a resumed turn reattaches it), then
    /// `sandbox.created`.
    async fn create(&self) -> Result<String, AgentError> {
        let raw_id = self.provider.create(&self.owner).await?;
        let sandbox_id = SandboxRef::new(self.provider.kind(), raw_id.as_str()).to_string();
        if let Some(journal) = self.journal.get() {
            journal
                .store
                .set_sandbox_info(
                    &journal.key,
                    SandboxInfo {
                        sandbox_id: sandbox_id.clone(),
                    },
                )
                .await?;
            journal
                .persist(SessionEvent::SandboxCreated(SandboxCreatedEvent {
                    id: journal.next_id(),
                    created_at: now_iso(),
                    thread_id: None,
                    sandbox_id,
                }))
                .await?;
        }
        Ok(raw_id)
    }

    /// Installs what the agent needs in the sandbox: its skills, and the Code Mode client. (The directories
    /// of the layout are made by the first file written into each: no command runs just to make them.)
    async fn prepare(&self, raw_id: &str) -> Result<(), AgentError> {
        if !self.skills.is_empty() {
            // Fetched on the host (credentials never enter the sandbox), copied in, unchanged ones skipped.
            install_skills(self.provider.as_ref(), raw_id, &self.skill_sources, &self.skills)
                .await
                .map_err(|error| SandboxError::Provider(format!("installing the skills failed: {error}")))?;
        }
        if self.code_mode.get().is_some() {
            let path = format!("{}/{CLIENT_MODULE_NAME}", self.client_dir());
            self.provider
                .upload(raw_id, &path, Bytes::from_static(CLIENT_SOURCE.as_bytes()))
                .await?;
        }
        Ok(())
    }
}

impl Drop for TurnSandbox {
    /// The turn is over: its bridge stops (dropping it removes the socket) and its directory goes.
    fn drop(&mut self) {
        drop(self.bridge.get_mut().take());
        if let Some(dir) = self.bridge_dir.get()
            && let Err(error) = std::fs::remove_dir_all(dir)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(dir = %dir.display(), %error, "could not remove a Code Mode bridge directory");
        }
    }
}
