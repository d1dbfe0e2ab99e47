//! What one command may use, and the resource limits (`prlimit`, run first inside the sandbox) that carry it.

use rustix::process::{Resource, getrlimit};

/// What one command (with everything it starts) may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalLimits {
    /// Memory of the whole command, page cache and `/tmp` included (a cgroup's limit); where no memory cgroup
    /// is available, each process's address space instead.
    pub memory_bytes: u64,
    /// Processes (threads count) at once: what stops a fork bomb.
    pub max_processes: u64,
    /// CPU time of each process (`RLIMIT_CPU`): a backstop under the command's own timeout.
    pub cpu_seconds: u64,
    /// The largest file a command may write (`RLIMIT_FSIZE`): one runaway writer cannot fill the disk.
    pub max_file_bytes: u64,
    /// Open files per process (`RLIMIT_NOFILE`).
    pub max_open_files: u64,
    /// The size of the command's `/tmp` (a tmpfs, gone when the command ends).
    pub tmp_bytes: u64,
}

impl Default for LocalLimits {
    /// - 2 GiB of memory: enough for pandas on a mid-sized CSV or a test suite, small next to a server's RAM.
    /// - 256 processes: a parallel build (`make -j`, pytest-xdist) fits; a fork bomb stops there.
    /// - 600 CPU seconds per process: never reached within the default 60 s timeout, it only bounds a
    ///   process when an operator allows long commands.
    /// - 1 GiB per file: larger than any file an agent plausibly writes, small enough that `yes > f` stops
    ///   long before the disk is full.
    /// - 4096 open files: what build tools and language servers ask for.
    /// - 1 GiB of `/tmp`: unpacking a wheel or an archive fits.
    fn default() -> Self {
        Self {
            memory_bytes: 2 << 30,
            max_processes: 256,
            cpu_seconds: 600,
            max_file_bytes: 1 << 30,
            max_open_files: 4096,
            tmp_bytes: 1 << 30,
        }
    }
}

/// `/dev/shm` of a command: semaphores and small shared buffers (Python's multiprocessing), never data.
pub(super) const SHM_BYTES: u64 = 64 << 20;

/// Seconds between `SIGXCPU` (a process may clean up) and `SIGKILL` at the CPU limit.
const CPU_GRACE_SECONDS: u64 = 5;

/// The `prlimit` arguments (before its `--`) for `limits`. `address_space` adds `RLIMIT_AS` where no memory
/// cgroup holds the command. `RLIMIT_NPROC` is always set: it counts the processes of the sandbox's user in
/// the sandbox's own user namespace, so it holds wherever the server is not root (the kernel exempts uid 0).
/// Each value is lowered to the server's own hard limit, which an unprivileged `prlimit` cannot exceed.
pub(super) fn prlimit_args(limits: &LocalLimits, address_space: bool) -> Vec<String> {
    let cpu = capped(Resource::Cpu, limits.cpu_seconds);
    let mut args = vec![
        format!(
            "--cpu={cpu}:{}",
            capped(Resource::Cpu, cpu.saturating_add(CPU_GRACE_SECONDS))
        ),
        format!("--fsize={}", capped(Resource::Fsize, limits.max_file_bytes)),
        format!("--nofile={}", capped(Resource::Nofile, limits.max_open_files)),
        format!("--nproc={}", capped(Resource::Nproc, limits.max_processes)),
        // A crashing process must not write a core file of its whole memory into the workspace.
        "--core=0".to_owned(),
    ];
    if address_space {
        args.push(format!("--as={}", capped(Resource::As, limits.memory_bytes)));
    }
    args
}

/// `wanted`, at most the server's hard limit for `resource`.
fn capped(resource: Resource, wanted: u64) -> u64 {
    getrlimit(resource).maximum.map_or(wanted, |hard| wanted.min(hard))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_become_prlimit_arguments() {
        let limits = LocalLimits {
            memory_bytes: 1000,
            max_processes: 7,
            cpu_seconds: 3,
            max_file_bytes: 500,
            max_open_files: 64,
            tmp_bytes: 1,
        };
        let args = prlimit_args(&limits, false);
        assert_eq!(
            args,
            ["--cpu=3:8", "--fsize=500", "--nofile=64", "--nproc=7", "--core=0"]
        );
        assert_eq!(
            prlimit_args(&limits, true).last().map(String::as_str),
            Some("--as=1000")
        );
    }

    #[test]
    fn values_above_the_servers_hard_limit_are_lowered() {
        let hard = getrlimit(Resource::Nofile).maximum;
        let limits = LocalLimits {
            max_open_files: u64::MAX,
            ..LocalLimits::default()
        };
        let expected = format!("--nofile={}", hard.unwrap_or(u64::MAX));
        assert!(prlimit_args(&limits, false).contains(&expected));
    }
}
