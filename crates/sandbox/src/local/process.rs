//! Processes we did not spawn ourselves (a sandbox's init, stragglers in a cgroup), held through pidfds: a
//! signal never reaches a process that merely reused the pid.

use std::fs;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Duration;

use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, pidfd_open, pidfd_send_signal, waitid};

/// How often an exit is looked for; a killed sandbox is gone within a few milliseconds.
const EXIT_POLL: Duration = Duration::from_millis(2);

pub(super) struct ProcessHandle {
    pid: i32,
    pidfd: OwnedFd,
}

impl ProcessHandle {
    /// Opens `pid` and keeps it only when `still_ours` holds after the opening: then the pidfd names the
    /// process `still_ours` vouched for, not one that took the pid over before the pidfd existed.
    pub(super) fn open_confirmed(pid: i32, still_ours: impl Fn() -> bool) -> Option<Self> {
        let pid = Pid::from_raw(pid.max(0))?;
        let pidfd = pidfd_open(pid, PidfdFlags::empty()).ok()?;
        still_ours().then_some(Self {
            pid: pid.as_raw_nonzero().get(),
            pidfd,
        })
    }

    pub(super) fn kill(&self) {
        // It may have exited already: nothing left to do then.
        let _ = pidfd_send_signal(&self.pidfd, Signal::KILL);
    }

    /// Waits until the process has exited, at most `within`; whether it did. For a pid namespace's init,
    /// the exit comes after the kernel has killed and reaped every other process in the namespace.
    pub(super) async fn exited(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while !self.has_exited() {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(EXIT_POLL).await;
        }
        true
    }

    /// Reaps the process when it has become our child: bubblewrap exits before its sandbox's init, which the
    /// kernel then hands to the nearest subreaper or to pid 1, and the server may be either (a container's
    /// entrypoint). Nobody else would reap it, and zombies would pile up. Not our child: nothing happens.
    pub(super) fn reap_if_adopted(&self) {
        let _ = waitid(
            WaitId::PidFd(self.pidfd.as_fd()),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
        );
    }

    /// Dead: a zombie, or reaped (the pidfd then shows no pid). A pid that was reaped and reused meanwhile
    /// is told apart by the pidfd, which keeps naming the process it was opened for.
    fn has_exited(&self) -> bool {
        let fdinfo = fs::read_to_string(format!("/proc/self/fdinfo/{}", self.pidfd.as_raw_fd())).unwrap_or_default();
        let pidfd_pid = fdinfo
            .lines()
            .find_map(|line| line.strip_prefix("Pid:"))
            .and_then(|pid| pid.trim().parse::<i32>().ok());
        if pidfd_pid == Some(-1) {
            return true;
        }
        let Ok(stat) = fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return true;
        };
        // `pid (comm) state ...`, where comm may hold spaces and parentheses.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next());
        matches!(state, Some("Z" | "X") | None)
    }
}

/// The children of `pid` (its main thread's, which for bubblewrap is the only one).
pub(super) fn children_of(pid: u32) -> Vec<i32> {
    fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|children| {
            children
                .split_whitespace()
                .filter_map(|child| child.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}
