//! Running one started command: collect its output, and on timeout, cancel or an output without end kill
//! the whole sandbox and wait until nothing of it is left.
//!
//! Killing: bubblewrap's child is the init of the sandbox's pid namespace; when it dies the kernel kills
//! every process in the namespace (daemons that double-forked, processes ignoring SIGTERM) before its exit
//! completes. We SIGKILL that init through a pidfd (and bubblewrap itself, whose `--die-with-parent` would
//! do the same) and wait for the init's exit: when `exec` returns, the tree is gone. A command that ends on
//! its own is waited for the same way: bubblewrap reports the exit status as soon as the command ends, while
//! its init may still be killing what the command left behind.

use std::io;
use std::os::fd::OwnedFd;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::Child;
use tokio_util::sync::CancellationToken;

use super::launcher::Launched;
use super::output::{OutputCapture, output_ceiling};
use super::process::{ProcessHandle, children_of};
use crate::{ExecOutput, SandboxError};

/// How long the kernel gets to tear a killed sandbox down before we stop waiting (it takes milliseconds).
const TEARDOWN_WITHIN: Duration = Duration::from_secs(5);
/// How long bubblewrap may take to start the sandbox's init (it takes a few milliseconds).
const INIT_WITHIN: Duration = Duration::from_secs(5);
const INIT_POLL: Duration = Duration::from_millis(1);
/// How long output still arriving after a kill is read.
const DRAIN_WITHIN: Duration = Duration::from_millis(200);
const READ_CHUNK: usize = 64 * 1024;

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

/// Collects the output of a started command until it ends, is cancelled, runs out of time or writes past
/// the output ceiling.
pub(super) async fn run(
    launched: Launched,
    timeout: Duration,
    output_limit: usize,
    cancel: &CancellationToken,
) -> Result<ExecOutput, SandboxError> {
    let Launched {
        mut child,
        output,
        cgroup,
    } = launched;
    let pid = child.id().unwrap_or_default();
    let mut output = pipe::Receiver::from_owned_fd(OwnedFd::from(output))
        .map_err(|error| failure("cannot read the output pipe", &error))?;
    let mut capture = OutputCapture::new(output_limit);
    let ceiling = output_ceiling(output_limit);

    // Held from the start: once bubblewrap exits, its init can no longer be found.
    let init = tokio::select! {
        init = sandbox_init(pid) => init,
        () = cancel.cancelled() => None,
        () = tokio::time::sleep(timeout) => None,
    };
    let ending = tokio::select! {
        biased;
        () = cancel.cancelled() => Ending::Cancelled,
        () = tokio::time::sleep(timeout) => Ending::TimedOut,
        ending = run_to_end(&mut child, &mut output, &mut capture, ceiling) => ending,
    };
    let exit_code = match &ending {
        Ending::Exited(status) => {
            if let Some(init) = init {
                wait_for_teardown(init, pid).await;
            }
            status.code()
        }
        Ending::OutputCeiling | Ending::WaitFailed(_) => {
            kill_sandbox(&mut child, init, pid).await;
            None
        }
        Ending::TimedOut | Ending::Cancelled => {
            kill_sandbox(&mut child, init, pid).await;
            // What the command wrote before it was killed is still in the pipe.
            let _ = tokio::time::timeout(DRAIN_WITHIN, read_to_end(&mut output, &mut capture, ceiling)).await;
            None
        }
    };
    // Nothing of the sandbox is left (bubblewrap's init exited, or was killed and waited for): its cgroups
    // are removed in the background, since removing one waits for an RCU grace period (milliseconds).
    drop(cgroup);
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

/// The init of bubblewrap `pid`'s sandbox, once bubblewrap has started it; `None` when bubblewrap ends (or
/// takes [`INIT_WITHIN`]) without one.
async fn sandbox_init(pid: u32) -> Option<ProcessHandle> {
    let deadline = tokio::time::Instant::now() + INIT_WITHIN;
    loop {
        if let Some(&init) = children_of(pid).first() {
            return ProcessHandle::open_confirmed(init, || children_of(pid).contains(&init));
        }
        if !is_running(pid) || tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(INIT_POLL).await;
    }
}

/// Kills the sandbox of bubblewrap `pid` and returns when all of it is gone.
async fn kill_sandbox(child: &mut Child, init: Option<ProcessHandle>, pid: u32) {
    if let Some(init) = &init {
        init.kill();
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
    if let Some(init) = init {
        wait_for_teardown(init, pid).await;
    }
}

/// Returns once the sandbox's init has exited, which the kernel lets it do only after every other process
/// of the namespace is gone (or after [`TEARDOWN_WITHIN`], which it never takes).
async fn wait_for_teardown(init: ProcessHandle, pid: u32) {
    if init.exited(TEARDOWN_WITHIN).await {
        init.reap_if_adopted();
    } else {
        tracing::warn!(pid, "a sandbox's init did not exit in time");
    }
}

/// Whether `pid` (our child, not reaped before we wait for it) still runs.
fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        !matches!(state, Some("Z" | "X") | None)
    })
}

fn failure(what: &str, error: &io::Error) -> SandboxError {
    SandboxError::Provider(format!("{what}: {error}"))
}
