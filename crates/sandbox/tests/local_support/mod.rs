//! What the local provider's tests share: a provider on a throwaway data directory, requests, and a look at
//! the host's processes. Every test fails (never skips) when bubblewrap is missing: the provider refuses
//! to start.

#![allow(dead_code)] // Each test binary uses its own part.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use trueforge_sandbox::{ExecOutput, ExecRequest, LocalConfig, LocalProvider, SandboxOwner, SandboxProvider};

pub struct Fixture {
    /// Stands for the server's data directory: the sandboxes live in `sandboxes/` under it.
    pub data: TempDir,
    pub provider: LocalProvider,
    pub owner: SandboxOwner,
}

impl Fixture {
    pub fn root(&self) -> PathBuf {
        self.data.path().join("sandboxes")
    }

    pub async fn create(&self) -> String {
        self.provider.create(&self.owner).await.expect("create a sandbox")
    }

    pub async fn run(&self, raw_id: &str, command: &str) -> ExecOutput {
        self.run_request(raw_id, request(command)).await
    }

    pub async fn run_request(&self, raw_id: &str, request: ExecRequest) -> ExecOutput {
        self.provider
            .exec(raw_id, request, &CancellationToken::new())
            .await
            .expect("the sandbox runs the command")
    }

    /// A normal command still runs: whatever the previous command did, the provider is intact.
    pub async fn assert_still_works(&self, raw_id: &str) {
        let output = self.run(raw_id, "echo still-works").await;
        assert_eq!(output.exit_code, Some(0), "{output:?}");
        assert_eq!(output.output, "still-works\n");
    }
}

pub fn fixture() -> Fixture {
    fixture_with(|_| {})
}

pub fn fixture_with(configure: impl FnOnce(&mut LocalConfig)) -> Fixture {
    let data = tempfile::tempdir().expect("a temporary data directory");
    let mut config = LocalConfig::new(data.path().join("sandboxes"));
    configure(&mut config);
    let provider = LocalProvider::new(config).expect("the local sandbox is available (is bubblewrap installed?)");
    Fixture {
        data,
        provider,
        owner: owner("acme"),
    }
}

pub fn owner(tenant: &str) -> SandboxOwner {
    SandboxOwner {
        tenant: tenant.to_owned(),
        session: "session-1".to_owned(),
    }
}

pub fn request(command: &str) -> ExecRequest {
    ExecRequest {
        command: command.to_owned(),
        cwd: None,
        env: BTreeMap::new(),
        timeout: Duration::from_secs(20),
        output_limit: 64 * 1024,
        bridge_socket: None,
    }
}

/// A string no other process on the machine has in its command line.
pub fn marker() -> String {
    format!("tfmark{}", ulid::Ulid::new().to_string().to_lowercase())
}

/// Host processes whose command line contains `needle` (other than ourselves).
pub fn host_processes_with(needle: &str) -> Vec<String> {
    let own = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.bytes().all(|byte| byte.is_ascii_digit()))
        })
        .filter(|entry| entry.file_name() != own.as_str())
        .filter_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            cmdline
                .contains(needle)
                .then(|| format!("{}: {cmdline}", entry.file_name().to_string_lossy()))
        })
        .collect()
}
