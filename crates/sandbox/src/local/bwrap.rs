//! The bubblewrap command line: what a command sees of the machine and who it is there.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use super::etc::{EtcMount, SANDBOX_GID, SANDBOX_HOSTNAME, SANDBOX_UID};
use super::limits::{LocalLimits, SHM_BYTES, prlimit_args};

pub(super) const BWRAP: &str = "/usr/bin/bwrap";
/// Sets the limits from inside the sandbox, so `RLIMIT_NPROC` counts the sandbox's own user namespace only.
const PRLIMIT: &str = "/usr/bin/prlimit";
const SHELL: &str = "/bin/bash";

pub(super) const WORKSPACE: &str = "/workspace";
pub(super) const BRIDGE_SOCKET: &str = "/run/trueforge/bridge.sock";

/// The environment every command starts from (after `--clearenv`: nothing of the server's).
const BASE_ENV: [(&str, &str); 4] = [
    ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    ("HOME", WORKSPACE),
    ("LANG", "C.UTF-8"),
    ("TERM", "dumb"),
];

/// The top-level directories that are `/usr` on a merged-/usr system (symlinks there, directories on an
/// older one).
const USR_ALIASES: [&str; 6] = ["/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"];

/// What a command line needs besides the command: computed once per provider.
#[derive(Debug)]
pub(super) struct SandboxArgs {
    /// Namespaces, identity and the read-only system, up to the workspace.
    system: Vec<OsString>,
    /// `prlimit`'s arguments before its `--`.
    prlimit: Vec<String>,
}

/// One command to wrap.
pub(super) struct CommandSpec<'a> {
    pub workspace: &'a Path,
    pub bridge_socket: Option<&'a Path>,
    pub cwd: &'a str,
    pub env: &'a [(&'a str, &'a str)],
    pub command: &'a str,
}

impl SandboxArgs {
    pub(super) fn new(network: bool, etc: &[EtcMount], limits: &LocalLimits, address_space: bool) -> Self {
        let mut args = Args::default();
        // Every namespace; the user namespace named explicitly because `--disable-userns` requires it.
        args.flags(&["--unshare-all", "--unshare-user"]);
        if network {
            args.flags(&["--share-net"]);
        }
        args.flags(&[
            // No nested user namespaces: they would give a command capabilities over new namespaces of its
            // own, the kernel surface most container escapes go through.
            "--disable-userns",
            // Without this, a command started by root keeps every capability inside its user namespace and
            // can simply remount `/usr` read-write (measured: it can).
            "--cap-drop",
            "ALL",
            // The whole sandbox dies with bubblewrap, and bubblewrap with the server.
            "--die-with-parent",
            // No controlling terminal: a command cannot push keystrokes into the server's (TIOCSTI).
            "--new-session",
        ]);
        args.pair("--uid", SANDBOX_UID.to_string());
        args.pair("--gid", SANDBOX_GID.to_string());
        args.pair("--hostname", SANDBOX_HOSTNAME);
        args.triple("--ro-bind", "/usr", "/usr");
        for alias in USR_ALIASES {
            match fs::symlink_metadata(alias) {
                Ok(metadata) if metadata.is_symlink() => {
                    if let Ok(target) = fs::read_link(alias) {
                        args.triple("--symlink", target, alias);
                    }
                }
                Ok(metadata) if metadata.is_dir() => args.triple("--ro-bind", alias, alias),
                _ => {}
            }
        }
        args.pair("--proc", "/proc");
        // bubblewrap covers `/proc/sys` only when it finds the directory writable, which it never is, while the
        // files in it are writable by the host's uid 0, which a command of a root server is (without any
        // capability): it could set `kernel.core_pattern` and have the kernel run its program as host root
        // (measured). Read-only, the values stay readable and per-namespace.
        args.triple("--ro-bind", "/proc/sys", "/proc/sys");
        args.pair("--dev", "/dev");
        args.pair("--size", SHM_BYTES.to_string());
        args.pair("--tmpfs", "/dev/shm");
        args.pair("--remount-ro", "/dev");
        args.pair("--size", limits.tmp_bytes.to_string());
        args.pair("--tmpfs", "/tmp");
        args.triple("--symlink", "../tmp", "/var/tmp");
        for mount in etc {
            args.triple("--ro-bind", &mount.host, &mount.sandbox);
        }
        Self {
            system: args.0,
            prlimit: prlimit_args(limits, address_space),
        }
    }

    /// bubblewrap's arguments for one command.
    pub(super) fn for_command(&self, spec: &CommandSpec<'_>) -> Vec<OsString> {
        let mut args = Args(self.system.clone());
        args.triple("--bind", spec.workspace, WORKSPACE);
        if let Some(socket) = spec.bridge_socket {
            // The socket file alone, read-write (connecting needs write permission on it).
            args.triple("--bind", socket, BRIDGE_SOCKET);
        }
        // Last, after every mount point was made in it: the sandbox's root tmpfs is not for writing.
        args.pair("--remount-ro", "/");
        args.pair("--chdir", spec.cwd);
        args.flags(&["--clearenv"]);
        for (name, value) in BASE_ENV.iter().chain(spec.env) {
            args.triple("--setenv", name, value);
        }
        args.flags(&["--", PRLIMIT]);
        args.0.extend(self.prlimit.iter().map(OsString::from));
        args.flags(&["--", SHELL, "-c", spec.command]);
        args.0
    }
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.0.extend(flags.iter().map(OsString::from));
    }

    fn pair(&mut self, flag: &str, value: impl Into<OsString>) {
        self.0.push(flag.into());
        self.0.push(value.into());
    }

    fn triple(&mut self, flag: &str, first: impl AsRef<std::ffi::OsStr>, second: impl AsRef<std::ffi::OsStr>) {
        self.0.push(flag.into());
        self.0.push(first.as_ref().to_owned());
        self.0.push(second.as_ref().to_owned());
    }
}

/// The sandbox path a command starts in: the workspace, or `cwd` (absolute, or relative to the workspace),
/// checked like every path.
pub(super) fn resolve_cwd(cwd: Option<&str>) -> Result<String, crate::SandboxError> {
    let cwd = match cwd {
        None | Some("") => return Ok(WORKSPACE.to_owned()),
        Some(absolute) if absolute.starts_with('/') => absolute.to_owned(),
        Some(relative) => format!("{WORKSPACE}/{relative}"),
    };
    crate::check_sandbox_path(&cwd)?;
    Ok(cwd)
}

/// The host path of the workspace file a sandbox path names, for paths under the workspace.
pub(super) fn workspace_relative(path: &str) -> Option<PathBuf> {
    let rest = path.strip_prefix(WORKSPACE)?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    Some(PathBuf::from(rest.trim_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args_for(network: bool, bridge: Option<&Path>) -> Vec<String> {
        let sandbox = SandboxArgs::new(network, &[], &LocalLimits::default(), false);
        sandbox
            .for_command(&CommandSpec {
                workspace: Path::new("/data/sandboxes/t.1"),
                bridge_socket: bridge,
                cwd: "/workspace",
                env: &[("FOO", "bar")],
                command: "echo hi",
            })
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn shares_the_network_only_when_switched_on() {
        assert!(!args_for(false, None).contains(&"--share-net".to_owned()));
        assert!(args_for(true, None).contains(&"--share-net".to_owned()));
    }

    #[test]
    fn ends_with_the_limits_and_the_shell() {
        let args = args_for(false, None);
        let tail: Vec<&str> = args.iter().rev().take(4).rev().map(String::as_str).collect();
        assert_eq!(tail, ["--", "/bin/bash", "-c", "echo hi"]);
        assert!(args.iter().any(|arg| arg == "/usr/bin/prlimit"));
        let clearenv = args.iter().position(|arg| arg == "--clearenv");
        let foo = args.iter().position(|arg| arg == "FOO");
        assert!(clearenv < foo, "the request's variables come after --clearenv");
    }

    #[test]
    fn binds_the_bridge_socket_file_only_when_given() {
        assert!(!args_for(false, None).contains(&BRIDGE_SOCKET.to_owned()));
        let args = args_for(false, Some(Path::new("/run/tf/turn.sock")));
        let at = args.iter().position(|arg| arg == "/run/tf/turn.sock");
        assert!(at.is_some_and(|at| args[at - 1] == "--bind" && args[at + 1] == BRIDGE_SOCKET));
    }

    #[test]
    fn resolves_the_working_directory_inside_the_sandbox() {
        assert_eq!(resolve_cwd(None).as_deref(), Ok("/workspace"));
        assert_eq!(resolve_cwd(Some("src/app")).as_deref(), Ok("/workspace/src/app"));
        assert_eq!(resolve_cwd(Some("/tmp")).as_deref(), Ok("/tmp"));
        assert!(resolve_cwd(Some("../etc")).is_err());
        assert!(resolve_cwd(Some("/workspace/../etc")).is_err());
    }

    #[test]
    fn maps_only_workspace_paths() {
        assert_eq!(workspace_relative("/workspace"), Some(PathBuf::new()));
        assert_eq!(workspace_relative("/workspace/"), Some(PathBuf::new()));
        assert_eq!(workspace_relative("/workspace/a/b.txt"), Some(PathBuf::from("a/b.txt")));
        assert_eq!(workspace_relative("/workspacex/a"), None);
        assert_eq!(workspace_relative("/etc/passwd"), None);
    }
}
