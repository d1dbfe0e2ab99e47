//! The `local` provider: sandboxes on this machine under bubblewrap.
//!
//! A sandbox is a directory `<root>/<raw id>`, mounted read-write at `/workspace` in a fresh set of
//! namespaces for each command (user, pid, mount, ipc, uts, cgroup, and network unless the operator
//! switched it on), over a read-only `/usr` and an allow-listed `/etc`. Nothing runs between commands:
//! each command's processes are all killed when it ends, so the directory is the sandbox's whole state.
//!
//! Limits per command (see [`LocalLimits`]): a cgroup with `pids` and `memory` where the server can make
//! one, resource limits (`prlimit`) always. A server running as root without a usable `pids` cgroup is
//! refused: the kernel does not apply `RLIMIT_NPROC` to uid 0, so nothing would stop a fork bomb.

mod bwrap;
mod cgroup;
mod etc;
mod files;
mod launcher;
mod limits;
mod output;
mod probe;
mod process;
mod raw_id;
mod run;

use std::collections::BTreeMap;
use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tokio_util::io::ReaderStream;
use tokio_util::sync::CancellationToken;

use crate::{Download, ExecOutput, ExecRequest, FileStat, SandboxError, SandboxLayout, SandboxOwner, SandboxProvider};
use bwrap::{BRIDGE_SOCKET, BWRAP, CommandSpec, SandboxArgs, WORKSPACE, resolve_cwd};
use cgroup::Cgroups;
use etc::EtcSnapshot;
use files::Workspace;
use launcher::Launcher;
use raw_id::{check_raw_id, new_raw_id};

pub use cgroup::CgroupVersion;
pub use limits::LocalLimits;
pub use probe::LocalProbe;

/// The directories every sandbox starts with (under the workspace).
const UPLOADS: &str = "uploads";
const TOOL_RESULTS: &str = "tool-results";
const SKILLS: &str = "skills";

/// How the local provider is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalConfig {
    /// The sandboxes directory (`<data dir>/sandboxes`): one directory per sandbox, made mode 0700.
    pub root: PathBuf,
    /// Whether commands reach the network (the host's network namespace). Off unless the operator says so.
    pub network: bool,
    pub limits: LocalLimits,
}

impl LocalConfig {
    /// Sandboxes under `root`, no network, the default limits.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            network: false,
            limits: LocalLimits::default(),
        }
    }
}

/// What holds one of the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitEnforcement {
    /// The command's own cgroup.
    Cgroup(CgroupVersion),
    /// A resource limit on each process (`RLIMIT_NPROC` for processes, `RLIMIT_AS` for memory).
    Rlimit,
}

impl std::fmt::Display for LimitEnforcement {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Cgroup(version) => write!(formatter, "{version}"),
            Self::Rlimit => formatter.write_str("rlimit"),
        }
    }
}

/// Sandboxes on this machine under bubblewrap.
pub struct LocalProvider {
    root: PathBuf,
    limits: LocalLimits,
    layout: SandboxLayout,
    instructions: String,
    args: SandboxArgs,
    cgroups: Arc<Cgroups>,
    launcher: Arc<Launcher>,
    /// Shown as `/etc`; removed with the provider.
    _etc: EtcSnapshot,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LocalProvider")
            .field("root", &self.root)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl LocalProvider {
    /// Sets the provider up: the root directory, the sandbox's `/etc`, the cgroups. Runs nothing;
    /// [`Self::probe`] checks that a sandbox actually starts.
    pub fn new(config: LocalConfig) -> Result<Self, SandboxError> {
        let LocalConfig { root, network, limits } = config;
        if !Path::new(BWRAP).exists() {
            return Err(SandboxError::Unavailable(format!(
                "bubblewrap is not installed ({BWRAP} is missing); install the bubblewrap package"
            )));
        }
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&root)
            .map_err(|error| SandboxError::Unavailable(format!("cannot make {}: {error}", root.display())))?;
        let root_user = rustix::process::geteuid().is_root();
        let cgroups = Arc::new(Cgroups::detect());
        if root_user && cgroups.holds_processes().is_none() {
            return Err(SandboxError::Unavailable(
                "the server runs as root, where the kernel does not limit processes per user, and cannot make \
                 cgroups with the pids controller (a writable /sys/fs/cgroup/pids, or a cgroup v2 subtree it \
                 may delegate): nothing would contain a fork bomb. Run the server as a regular user, or give \
                 it a writable cgroup"
                    .to_owned(),
            ));
        }
        let etc = EtcSnapshot::build(&root, network)?;
        let address_space_limit = cgroups.holds_memory().is_none();
        let args = SandboxArgs::new(network, etc.path(), &limits, address_space_limit);
        let instructions = instructions(network, &limits);
        let launcher = Arc::new(Launcher::new(
            args.launcher_argv(),
            Arc::clone(&cgroups),
            limits.clone(),
        ));
        Ok(Self {
            root,
            limits,
            layout: SandboxLayout {
                workspace: WORKSPACE.to_owned(),
                uploads: format!("{WORKSPACE}/{UPLOADS}"),
                tool_results: format!("{WORKSPACE}/{TOOL_RESULTS}"),
                skills: format!("{WORKSPACE}/{SKILLS}"),
            },
            instructions,
            args,
            cgroups,
            launcher,
            _etc: etc,
        })
    }

    /// Checks that the local sandbox works here with exactly the flags commands get: sets a provider up,
    /// runs one command in a throwaway sandbox (which also finds `python3` inside) and asks bubblewrap
    /// its version. The error says what is wrong in words an operator can act on. Blocks for about as long
    /// as one command takes (milliseconds); callable from inside or outside an async runtime.
    pub fn probe(config: &LocalConfig) -> Result<LocalProbe, String> {
        let config = config.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|error| format!("cannot start the probe's runtime: {error}"))?;
            runtime.block_on(probe::probe(config))
        })
        .join()
        .unwrap_or_else(|_| Err("the sandbox probe panicked".to_owned()))
    }

    /// What holds a command's process count.
    pub fn process_limit(&self) -> LimitEnforcement {
        self.cgroups
            .holds_processes()
            .map_or(LimitEnforcement::Rlimit, LimitEnforcement::Cgroup)
    }

    /// What holds a command's memory.
    pub fn memory_limit(&self) -> LimitEnforcement {
        self.cgroups
            .holds_memory()
            .map_or(LimitEnforcement::Rlimit, LimitEnforcement::Cgroup)
    }

    /// The host directory of a sandbox, after checking its raw id.
    fn sandbox_dir(&self, raw_id: &str) -> Result<PathBuf, SandboxError> {
        check_raw_id(raw_id)?;
        Ok(self.root.join(raw_id))
    }

    fn existing_sandbox_dir(&self, raw_id: &str) -> Result<PathBuf, SandboxError> {
        let dir = self.sandbox_dir(raw_id)?;
        match std::fs::symlink_metadata(&dir) {
            Ok(metadata) if metadata.is_dir() => Ok(dir),
            Ok(_) => Err(SandboxError::NotAvailable(raw_id.to_owned())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Err(SandboxError::NotAvailable(raw_id.to_owned()))
            }
            Err(error) => Err(SandboxError::provider(error)),
        }
    }

    /// Runs `request` with `workspace` (a host directory) as `/workspace`.
    async fn run_in(
        &self,
        workspace: &Path,
        request: ExecRequest,
        cancel: &CancellationToken,
    ) -> Result<ExecOutput, SandboxError> {
        let cwd = resolve_cwd(request.cwd.as_deref())?;
        let env = checked_env(&request.env)?;
        if let Some(socket) = &request.bridge_socket {
            let is_socket = std::fs::metadata(socket).is_ok_and(|metadata| metadata.file_type().is_socket());
            if !is_socket {
                return Err(SandboxError::Provider(format!(
                    "the Code Mode bridge socket {} does not exist",
                    socket.display()
                )));
            }
        }
        if cancel.is_cancelled() {
            return Ok(ExecOutput {
                exit_code: None,
                output: String::new(),
                omitted_bytes: 0,
                timed_out: false,
                cancelled: true,
            });
        }
        let options = self.args.command_options(&CommandSpec {
            workspace,
            bridge_socket: request.bridge_socket.as_deref(),
            cwd: &cwd,
            env: &env,
            command: &request.command,
        })?;
        let launched = self.launcher.start(&options).await?;
        run::run(launched, request.timeout, request.output_limit, cancel).await
    }
}

#[async_trait]
impl SandboxProvider for LocalProvider {
    fn kind(&self) -> &str {
        "local"
    }

    fn layout(&self) -> &SandboxLayout {
        &self.layout
    }

    fn instructions(&self) -> Option<&str> {
        Some(&self.instructions)
    }

    fn code_mode_socket(&self) -> Option<&str> {
        Some(BRIDGE_SOCKET)
    }

    async fn create(&self, owner: &SandboxOwner) -> Result<String, SandboxError> {
        let raw_id = new_raw_id(&owner.tenant)?;
        let dir = self.sandbox_dir(&raw_id)?;
        let created = DirBuilder::new().mode(0o700).create(&dir).and_then(|()| {
            [UPLOADS, TOOL_RESULTS, SKILLS]
                .iter()
                .try_for_each(|name| DirBuilder::new().mode(0o755).create(dir.join(name)))
        });
        if let Err(error) = created {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(SandboxError::Provider(format!(
                "cannot make {}: {error}",
                dir.display()
            )));
        }
        Ok(raw_id)
    }

    async fn reattach(&self, owner: &SandboxOwner, raw_id: &str) -> Result<(), SandboxError> {
        check_raw_id(raw_id)?;
        if !owner.owns(raw_id) {
            return Err(SandboxError::TenantMismatch);
        }
        self.existing_sandbox_dir(raw_id).map(|_| ())
    }

    async fn exec(
        &self,
        raw_id: &str,
        request: ExecRequest,
        cancel: &CancellationToken,
    ) -> Result<ExecOutput, SandboxError> {
        let dir = self.existing_sandbox_dir(raw_id)?;
        self.run_in(&dir, request, cancel).await
    }

    async fn upload(&self, raw_id: &str, path: &str, content: Bytes) -> Result<(), SandboxError> {
        let dir = self.sandbox_dir(raw_id)?;
        let (raw_id, path) = (raw_id.to_owned(), path.to_owned());
        blocking(move || Workspace::open(&dir, &raw_id)?.write_file(&path, &content)).await
    }

    async fn stat(&self, raw_id: &str, path: &str) -> Result<FileStat, SandboxError> {
        let dir = self.sandbox_dir(raw_id)?;
        let (raw_id, path) = (raw_id.to_owned(), path.to_owned());
        blocking(move || Workspace::open(&dir, &raw_id)?.stat(&path)).await
    }

    async fn download(&self, raw_id: &str, path: &str, max_bytes: u64) -> Result<Download, SandboxError> {
        let dir = self.sandbox_dir(raw_id)?;
        let (raw_id, path) = (raw_id.to_owned(), path.to_owned());
        let (file, size) = blocking(move || Workspace::open(&dir, &raw_id)?.open_file(&path, max_bytes)).await?;
        // Never more than the size announced, even if the file grows meanwhile.
        let body = ReaderStream::new(tokio::fs::File::from_std(file).take(size));
        Ok(Download {
            size,
            body: Box::pin(body),
        })
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, SandboxError> + Send + 'static,
) -> Result<T, SandboxError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| SandboxError::Provider(format!("a file operation failed: {error}")))?
}

/// The request's variables, refusing names a shell could not take (`FOO=1 BAR`, `1X`, empty) and NUL bytes.
fn checked_env(env: &BTreeMap<String, String>) -> Result<Vec<(&str, &str)>, SandboxError> {
    env.iter()
        .map(|(name, value)| {
            let mut bytes = name.bytes();
            let valid_name = bytes
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
                && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_');
            if !valid_name || value.contains('\0') {
                return Err(SandboxError::Provider(format!(
                    "invalid environment variable {name:?}: names are letters, digits and _, not starting with \
                     a digit, and values hold no NUL"
                )));
            }
            Ok((name.as_str(), value.as_str()))
        })
        .collect()
}

fn instructions(network: bool, limits: &LocalLimits) -> String {
    let network = if network {
        "Network access is available."
    } else {
        "There is no network access (installing packages from the internet fails)."
    };
    format!(
        "Commands run in a Linux sandbox (bubblewrap) as user `sandbox`. {WORKSPACE} is your home and the \
         working directory; it is kept between commands. Everything else is read-only, except /tmp, which is \
         empty at the start of every command. Background processes are stopped when the command that started \
         them ends. {network} python3 is /usr/bin/python3. Each command may use {} MiB of memory and {} \
         processes; a single file may hold {} MiB.",
        limits.memory_bytes >> 20,
        limits.max_processes,
        limits.max_file_bytes >> 20,
    )
}
