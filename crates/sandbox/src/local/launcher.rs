//! Starting bubblewrap for a command, with most of the cost paid ahead of time.
//!
//! A launcher is bubblewrap spawned with the shared options on its argv and `--args 0`: it blocks reading
//! the per-command options from its stdin, before it makes any namespace. While it waits, it is moved into
//! the command's cgroups. Moving a process between cgroups waits for an RCU grace period (measured: up to
//! 20 ms on the project's VM, most of a command's cost), so launchers are kept ready: a command takes one,
//! and a replacement is prepared in the background. Two are kept, so commands in quick succession (or two
//! sessions at once) still find one while the replacement waits for its grace period. Without a ready
//! launcher (the first command, or a burst) one is made on the spot.
//!
//! A launcher that never gets its options (the server died) reads end-of-file and runs the trampoline with
//! every shared option in force and no command, which exits at once: nothing runs unsandboxed.

use std::ffi::OsString;
use std::io;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, Command};

use super::bwrap::BWRAP;
use super::cgroup::{Cgroups, ExecCgroup};
use super::limits::LocalLimits;
use crate::SandboxError;

/// A bubblewrap waiting for its command, with the pipe its output will come through.
pub(super) struct Launched {
    pub child: Child,
    pub output: io::PipeReader,
    pub cgroup: Option<ExecCgroup>,
}

struct Ready {
    launched: Launched,
    options_in: ChildStdin,
}

pub(super) struct Launcher {
    argv: Vec<OsString>,
    cgroups: Arc<Cgroups>,
    limits: LocalLimits,
    spares: Mutex<Vec<Ready>>,
    refilling: AtomicBool,
}

/// Launchers kept ready.
const SPARES: usize = 2;

impl Launcher {
    pub(super) fn new(argv: Vec<OsString>, cgroups: Arc<Cgroups>, limits: LocalLimits) -> Self {
        Self {
            argv,
            cgroups,
            limits,
            spares: Mutex::new(Vec::with_capacity(SPARES)),
            refilling: AtomicBool::new(false),
        }
    }

    /// Starts a command: hands `options` (NUL-terminated bubblewrap options) to a ready launcher.
    pub(super) async fn start(self: &Arc<Self>, options: &[u8]) -> Result<Launched, SandboxError> {
        let spare = self.take_spare();
        self.refill();
        let ready = match spare {
            Some(ready) => ready,
            None => self.prepare().await?,
        };
        match hand_over(ready, options).await {
            Ok(launched) => Ok(launched),
            // The spare died while it waited (killed from outside): one made now.
            Err(_) => hand_over(self.prepare().await?, options)
                .await
                .map_err(|error| SandboxError::Provider(format!("cannot pass the command to bubblewrap: {error}"))),
        }
    }

    fn take_spare(&self) -> Option<Ready> {
        self.spares.lock().ok().and_then(|mut spares| spares.pop())
    }

    fn spares_missing(&self) -> bool {
        self.spares.lock().map(|spares| spares.len() < SPARES).unwrap_or(false)
    }

    /// Prepares launchers in the background until [`SPARES`] are ready, unless that is under way already.
    fn refill(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let refill = Refill(Arc::clone(self));
        runtime.spawn(async move {
            let launcher = &refill.0;
            while launcher.spares_missing() {
                match launcher.prepare().await {
                    Ok(ready) => {
                        if let Ok(mut spares) = launcher.spares.lock() {
                            spares.push(ready);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot prepare a sandbox launcher");
                        return;
                    }
                }
            }
        });
    }

    /// Spawns a launcher and moves it into a new command group.
    async fn prepare(&self) -> Result<Ready, SandboxError> {
        // One pipe for stdout and stderr: the output arrives in the order it was written.
        let (output, writer) = io::pipe().map_err(|error| failure("cannot make the output pipe", &error))?;
        let stderr = writer
            .try_clone()
            .map_err(|error| failure("cannot make the output pipe", &error))?;
        let mut command = Command::new(BWRAP);
        command
            .args(&self.argv)
            .stdin(Stdio::piped())
            .stdout(writer)
            .stderr(stderr)
            // bubblewrap clears the command's environment; bubblewrap itself gets none of the server's either.
            .env_clear()
            // Its own process group: a Ctrl-C at the server's terminal is the server's to handle.
            .process_group(0)
            // Dropped unused or mid-command, it is killed (its death takes the sandbox with it).
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|error| {
            if error.kind() == io::ErrorKind::NotFound {
                SandboxError::Unavailable(format!("cannot start {BWRAP}: {error}"))
            } else {
                failure("cannot start bubblewrap", &error)
            }
        })?;
        // Our copies of the pipe's writing end go, so the pipe ends when the sandbox does.
        drop(command);
        let options_in = child
            .stdin
            .take()
            .ok_or_else(|| SandboxError::Provider("bubblewrap has no stdin".to_owned()))?;
        let cgroup = if self.cgroups.is_empty() {
            None
        } else {
            let group = self.cgroups.create_exec(&self.limits)?;
            let pid = child.id().unwrap_or_default();
            let joined = tokio::task::spawn_blocking(move || group.join(pid).map(|()| group))
                .await
                .map_err(|error| SandboxError::Provider(format!("cannot join the command's cgroup: {error}")))
                .and_then(|joined| joined);
            match joined {
                Ok(group) => Some(group),
                Err(error) => {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    return Err(error);
                }
            }
        };
        Ok(Ready {
            launched: Launched { child, output, cgroup },
            options_in,
        })
    }
}

impl Drop for Launcher {
    /// Kills and reaps the ready launchers before their cgroups go: a killed process that is not reaped yet
    /// still counts as a member of a v1 group, which then cannot be removed. Blocks for the moment a killed
    /// process takes to exit (the provider is going away).
    fn drop(&mut self) {
        let spares = self.spares.get_mut().map(std::mem::take).unwrap_or_default();
        for mut ready in spares {
            let child = &mut ready.launched.child;
            let _ = child.start_kill();
            let deadline = std::time::Instant::now() + REAP_WITHIN;
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }
}

/// How long dropping the launcher waits for a killed spare to exit.
const REAP_WITHIN: std::time::Duration = std::time::Duration::from_millis(200);

/// A refill under way; when it ends (or its task is dropped with a runtime shutting down), the next may start.
struct Refill(Arc<Launcher>);

impl Drop for Refill {
    fn drop(&mut self) {
        self.0.refilling.store(false, Ordering::Release);
    }
}

async fn hand_over(ready: Ready, options: &[u8]) -> io::Result<Launched> {
    let Ready {
        launched,
        mut options_in,
    } = ready;
    options_in.write_all(options).await?;
    // Closing the pipe is what tells bubblewrap the options are complete.
    drop(options_in);
    Ok(launched)
}

fn failure(what: &str, error: &io::Error) -> SandboxError {
    SandboxError::Provider(format!("{what}: {error}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::bwrap::SandboxArgs;
    use super::*;

    /// A launcher whose server died before handing it a command reads end-of-file: it must still run
    /// inside every shared option, and run nothing.
    #[test]
    fn a_launcher_that_never_gets_its_command_runs_nothing() {
        let args = SandboxArgs::new(false, std::path::Path::new("/etc"), &LocalLimits::default(), false);
        let output = std::process::Command::new(BWRAP)
            .args(args.launcher_argv())
            .stdin(Stdio::null())
            .env_clear()
            .output()
            .expect("bubblewrap runs");
        assert_eq!(output.status.code(), Some(125), "{output:?}");
        assert!(output.stdout.is_empty(), "{output:?}");
    }
}
