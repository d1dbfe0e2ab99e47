//! Running one sandboxed command: spawn bubblewrap (inside the command's cgroup when there is one), collect
//! its output, and on timeout, cancel or an output without end kill the whole sandbox and wait until
//! nothing of it is left.
//!
//! Killing: bubblewrap's child is the init of the sandbox's pid namespace; when it dies the kernel kills
//! every process in the namespace (daemons that double-forked, processes ignoring SIGTERM) before its exit
//! completes. We SIGKILL that init through a pidfd (and bubblewrap itself, whose `--die-with-parent` would
//! do the same) and wait for the init's exit on the pidfd: when `exec` returns, the tree is gone.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::bwrap::BWRAP;
use super::cgroup::ExecCgroup;
use super::output::{OutputCapture, output_ceiling};
use super::process::{ProcessHandle, children_of};
use crate::{ExecOutput, SandboxError};

/// In cgroup mode the launcher is this shell: it waits for a line on stdin (sent once the server has moved
/// it into the command's cgroup), then becomes bubblewrap, so nothing of the sandbox ever runs outside the
/// cgroup. `$0` is bubblewrap, `$@` its arguments.
const JOIN_THEN_EXEC: &str = r#"read -r joined && exec "$0" "$@""#;
const LAUNCHER_SHELL: &str = "/bin/sh";

/// How long the kernel gets to tear a killed sandbox down before we stop waiting (it takes milliseconds).
const TEARDOWN_WITHIN: Duration = Duration::from_secs(5);
/// How long output still arriving after a kill is read.
const DRAIN_WITHIN: Duration = Duration::from_millis(200);
const READ_CHUNK: usize = 64 * 1024;

/// A command ready to start.
pub(super) struct Launch {
    pub bwrap_args: Vec<OsString>,
    pub cgroup: Option<ExecCgroup>,
    pub timeout: Duration,
    pub output_limit: usize,
}

enum Ending {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    OutputCeiling,
    WaitFailed(io::Error),
}

enum Reading {
    End,
    Ceiling,
}

pub(super) async fn run(launch: Launch, cancel: &CancellationToken) -> Result<ExecOutput, SandboxError> {
    let Launch {
        bwrap_args,
        cgroup,
        timeout,
        output_limit,
    } = launch;
    // One pipe for stdout and stderr: the output arrives in the order it was written.
    let (reader, writer) = io::pipe().map_err(|error| failure("cannot make the output pipe", &error))?;
    let stderr = writer
        .try_clone()
        .map_err(|error| failure("cannot make the output pipe", &error))?;
    let mut command = match cgroup {
        Some(_) => {
            let mut command = Command::new(LAUNCHER_SHELL);
            command.arg("-c").arg(JOIN_THEN_EXEC).arg(BWRAP).args(&bwrap_args);
            command.stdin(Stdio::piped());
            command
        }
        None => {
            let mut command = Command::new(BWRAP);
            command.args(&bwrap_args).stdin(Stdio::null());
            command
        }
    };
    command
        .stdout(writer)
        .stderr(stderr)
        // bubblewrap clears the command's environment; the launcher gets none of the server's either.
        .env_clear()
        // Its own process group: a Ctrl-C at the server's terminal is the server's to handle, not the sandbox's.
        .process_group(0)
        // A caller that drops the future still kills the sandbox (bubblewrap's death takes the namespace).
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|error| {
        if error.kind() == io::ErrorKind::NotFound {
            SandboxError::Unavailable(format!("cannot start {BWRAP} or {LAUNCHER_SHELL}: {error}"))
        } else {
            failure("cannot start bubblewrap", &error)
        }
    })?;
    // Our copies of the pipe's writing end go with the command, so the pipe ends when the sandbox does.
    drop(command);
    let pid = child.id().unwrap_or_default();

    if let Some(cgroup) = &cgroup
        && let Err(error) = join_cgroup(&mut child, cgroup, pid).await
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
        return Err(error);
    }

    let mut output = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|error| failure("cannot read the output pipe", &error))?;
    let mut capture = OutputCapture::new(output_limit);
    let ceiling = output_ceiling(output_limit);

    let ending = tokio::select! {
        biased;
        () = cancel.cancelled() => Ending::Cancelled,
        () = tokio::time::sleep(timeout) => Ending::TimedOut,
        ending = run_to_end(&mut child, &mut output, &mut capture, ceiling) => ending,
    };
    let exit_code = match &ending {
        Ending::Exited(status) => status.code(),
        Ending::OutputCeiling | Ending::WaitFailed(_) => {
            kill_sandbox(&mut child, pid).await;
            None
        }
        Ending::TimedOut | Ending::Cancelled => {
            kill_sandbox(&mut child, pid).await;
            // What the command wrote before it was killed is still in the pipe.
            let _ = tokio::time::timeout(DRAIN_WITHIN, read_to_end(&mut output, &mut capture, ceiling)).await;
            None
        }
    };
    if let Some(cgroup) = cgroup {
        cgroup.remove().await;
    }
    if let Ending::WaitFailed(error) = ending {
        return Err(failure("cannot wait for bubblewrap", &error));
    }
    let note = matches!(ending, Ending::OutputCeiling).then(|| {
        format!(
            "\n[output stopped after {} bytes: the command was killed]\n",
            capture.total()
        )
    });
    let (output, omitted_bytes) = capture.finish(note.as_deref());
    Ok(ExecOutput {
        exit_code,
        output,
        omitted_bytes,
        timed_out: matches!(ending, Ending::TimedOut),
        cancelled: matches!(ending, Ending::Cancelled),
    })
}

/// Moves the launcher into the command's cgroup, then lets it become bubblewrap.
async fn join_cgroup(child: &mut Child, cgroup: &ExecCgroup, pid: u32) -> Result<(), SandboxError> {
    cgroup.join(pid)?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| SandboxError::Provider("the launcher has no stdin".to_owned()))?;
    stdin
        .write_all(b"\n")
        .await
        .map_err(|error| failure("cannot start the command in its cgroup", &error))?;
    // Dropping stdin closes it: the command reads end-of-file there, as from /dev/null.
    Ok(())
}

async fn run_to_end(
    child: &mut Child,
    output: &mut pipe::Receiver,
    capture: &mut OutputCapture,
    ceiling: u64,
) -> Ending {
    if let Reading::Ceiling = read_to_end(output, capture, ceiling).await {
        return Ending::OutputCeiling;
    }
    // The pipe ends when the last process of the sandbox is gone, which is when bubblewrap exits.
    match child.wait().await {
        Ok(status) => Ending::Exited(status),
        Err(error) => Ending::WaitFailed(error),
    }
}

async fn read_to_end(output: &mut pipe::Receiver, capture: &mut OutputCapture, ceiling: u64) -> Reading {
    let mut buffer = vec![0_u8; READ_CHUNK];
    loop {
        match output.read(&mut buffer).await {
            Ok(0) => return Reading::End,
            Ok(read) => {
                capture.push(&buffer[..read]);
                if capture.total() > ceiling {
                    return Reading::Ceiling;
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Reading::End,
        }
    }
}

/// Kills the sandbox of bubblewrap `pid` and returns when all of it is gone (or the kernel took
/// [`TEARDOWN_WITHIN`], which it never should).
async fn kill_sandbox(child: &mut Child, pid: u32) {
    // Found while bubblewrap still lives: afterwards the init is no longer its child.
    let init = children_of(pid)
        .first()
        .copied()
        .and_then(|init| ProcessHandle::open_confirmed(init, || children_of(pid).contains(&init)));
    if let Some(init) = &init {
        init.kill();
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
    if let Some(init) = init
        && !init.exited(TEARDOWN_WITHIN).await
    {
        tracing::warn!(pid, "a killed sandbox's init did not exit in time");
    }
}

fn failure(what: &str, error: &io::Error) -> SandboxError {
    SandboxError::Provider(format!("{what}: {error}"))
}
