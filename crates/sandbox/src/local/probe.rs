//! `trueforge doctor` and the server's start ask whether the local sandbox works here, and why not.

use std::collections::BTreeMap;
use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::bwrap::BWRAP;
use super::{LimitEnforcement, LocalConfig, LocalProvider};
use crate::{ExecRequest, SandboxError};

/// What [`LocalProvider::probe`] found: the local sandbox works here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalProbe {
    /// `bubblewrap 0.8.0`.
    pub bwrap_version: String,
    /// Where commands find Python (`/usr/bin/python3`).
    pub python3: String,
    pub processes: LimitEnforcement,
    pub memory: LimitEnforcement,
    pub network: bool,
}

/// The probe itself, on its own runtime.
pub(super) async fn probe(config: LocalConfig) -> Result<LocalProbe, String> {
    let network = config.network;
    let provider = LocalProvider::new(config).map_err(|error| match error {
        SandboxError::Unavailable(reason) => reason,
        error => error.to_string(),
    })?;
    let bwrap_version = tokio::process::Command::new(BWRAP)
        .arg("--version")
        .env_clear()
        .output()
        .await
        .map_err(|error| format!("cannot run {BWRAP}: {error}"))?;
    let bwrap_version = String::from_utf8_lossy(&bwrap_version.stdout).trim().to_owned();
    // A workspace of its own, named with a leading dot so no raw id can ever name it.
    let workspace = provider.root.join(format!(".probe-{}", ulid::Ulid::new()));
    DirBuilder::new()
        .mode(0o700)
        .create(&workspace)
        .map_err(|error| format!("cannot make {}: {error}", workspace.display()))?;
    let request = ExecRequest {
        command: "command -v python3 || exit 3".to_owned(),
        cwd: None,
        env: BTreeMap::new(),
        timeout: Duration::from_secs(20),
        output_limit: 4096,
        bridge_socket: None,
    };
    let result = provider.run_in(&workspace, request, &CancellationToken::new()).await;
    let _ = std::fs::remove_dir_all(&workspace);
    let output = result.map_err(|error| format!("cannot start a sandbox: {error}"))?;
    match output.exit_code {
        Some(0) => Ok(LocalProbe {
            bwrap_version,
            python3: output.output.trim().to_owned(),
            processes: provider.process_limit(),
            memory: provider.memory_limit(),
            network,
        }),
        Some(3) => Err(
            "python3 is not installed where sandboxed commands can run it (/usr/bin): install the python3 package"
                .to_owned(),
        ),
        _ if output.timed_out => Err("starting a sandbox took longer than 20 seconds".to_owned()),
        code => Err(format!(
            "bubblewrap cannot start a sandbox with the flags TrueForge uses (exit code {code:?}): {}. Unprivileged \
             user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone or \
             user.max_user_namespaces), or a seccomp or AppArmor policy forbids them",
            output.output.trim()
        )),
    }
}
