//! The bubblewrap command line: what a command sees of the machine and who it is there.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use super::etc::{SANDBOX_GID, SANDBOX_HOSTNAME, SANDBOX_UID};
use super::limits::{LocalLimits, SHM_BYTES, prlimit_args};

pub(super) const BWRAP: &str = "/usr/bin/bwrap";
/// Sets the limits from inside the sandbox, so `RLIMIT_NPROC` counts the sandbox's own user namespace only.
const PRLIMIT: &str = "/usr/bin/prlimit";

/// The variable carrying the command to the trampoline (bubblewrap takes the command from its own argv,
/// fixed when the launcher was spawned ahead of time; see `launcher.rs`).
const COMMAND_VARIABLE: &str = "TRUEFORGE_COMMAND";
/// Run by `/bin/sh` first inside: stdin becomes `/dev/null` (bubblewrap closed the pipe it read its options
/// from), the command leaves the environment, and `bash -c` runs it exactly as given. Without the variable
/// (bubblewrap was never given a command) nothing runs.
const TRAMPOLINE: &str = r#"exec </dev/null
[ "${TRUEFORGE_COMMAND+set}" = set ] || exit 125
tf_command=$TRUEFORGE_COMMAND
unset TRUEFORGE_COMMAND
exec /bin/bash -c -- "$tf_command""#;

/// The longest command: the kernel's limit for one argument or environment string (`MAX_ARG_STRLEN`, 32
/// pages), which the command is on its way in, less the variable's name.
const MAX_COMMAND_BYTES: usize = 32 * 4096 - COMMAND_VARIABLE.len() - 2;

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

/// bubblewrap's command line in two parts: what every command shares (namespaces, identity, the read-only
/// system, the limits; on the launcher's argv, so a launcher that never gets its command still runs inside
/// all of it), and what one command adds (read from a pipe: the workspace, cwd, environment, command).
#[derive(Debug)]
pub(super) struct SandboxArgs {
    /// Options before the per-command ones.
    system: Vec<OsString>,
    /// After `--`: `prlimit` and the trampoline.
    inner: Vec<OsString>,
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
    /// `etc` is the host directory shown (read-only) as `/etc`.
    pub(super) fn new(network: bool, etc: &Path, limits: &LocalLimits, address_space: bool) -> Self {
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
        // All of /proc read-only. A root server's command is the host's uid 0 (without any capability), and
        // the kernel lets uid 0 write many global files there by their mode alone: bubblewrap covers
        // `/proc/sys` only when it finds the directory writable, which it never is, and a command could then
        // set `kernel.core_pattern` and have the kernel run its program as host root (measured). Writing to
        // its own `/proc/self/fd/N` still works (the write lands on the file's own mount); what is lost is
        // writing the own process's knobs (`oom_score_adj`, `comm`), which programs treat as optional.
        args.pair("--remount-ro", "/proc");
        args.pair("--dev", "/dev");
        args.pair("--size", SHM_BYTES.to_string());
        args.pair("--tmpfs", "/dev/shm");
        args.pair("--remount-ro", "/dev");
        args.pair("--size", limits.tmp_bytes.to_string());
        args.pair("--tmpfs", "/tmp");
        args.triple("--symlink", "../tmp", "/var/tmp");
        args.triple("--ro-bind", etc, "/etc");
        let mut inner = Args::default();
        inner.flags(&[PRLIMIT]);
        inner
            .0
            .extend(prlimit_args(limits, address_space).into_iter().map(OsString::from));
        inner.flags(&["--", "/bin/sh", "-c", TRAMPOLINE]);
        Self {
            system: args.0,
            inner: inner.0,
        }
    }

    /// The launcher's argv: the shared options, the per-command ones from fd 0, the inner command.
    pub(super) fn launcher_argv(&self) -> Vec<OsString> {
        let mut argv = self.system.clone();
        argv.extend(["--args", "0", "--"].map(OsString::from));
        argv.extend(self.inner.iter().cloned());
        argv
    }

    /// One command's options, as bubblewrap reads them from fd 0: NUL-terminated. Refused when any holds a
    /// NUL itself, which would split it into options of its own.
    pub(super) fn command_options(&self, spec: &CommandSpec<'_>) -> Result<Vec<u8>, crate::SandboxError> {
        if spec.command.len() > MAX_COMMAND_BYTES {
            return Err(crate::SandboxError::Provider(format!(
                "the command is {} bytes, more than the {MAX_COMMAND_BYTES} a command line may hold: write long \
                 scripts to a file and run the file",
                spec.command.len()
            )));
        }
        let mut args = Args::default();
        args.triple("--bind", spec.workspace, WORKSPACE);
        if let Some(socket) = spec.bridge_socket {
            // The socket file alone, read-write (connecting needs write permission on it).
            args.triple("--bind", socket, BRIDGE_SOCKET);
        }
        // Last of the mounts, after every mount point was made in it: the sandbox's root tmpfs is not for
        // writing.
        args.pair("--remount-ro", "/");
        args.pair("--chdir", spec.cwd);
        args.flags(&["--clearenv"]);
        for (name, value) in BASE_ENV.iter().chain(spec.env) {
            args.triple("--setenv", name, value);
        }
        args.triple("--setenv", COMMAND_VARIABLE, spec.command);
        let mut data = Vec::new();
        for arg in &args.0 {
            let bytes = arg.as_encoded_bytes();
            if bytes.contains(&0) {
                return Err(crate::SandboxError::Provider(format!(
                    "a sandbox argument holds a NUL byte: {}",
                    arg.to_string_lossy()
                )));
            }
            data.extend_from_slice(bytes);
            data.push(0);
        }
        Ok(data)
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

    fn spec<'a>(bridge: Option<&'a Path>, command: &'a str) -> CommandSpec<'a> {
        CommandSpec {
            workspace: Path::new("/data/sandboxes/t.1"),
            bridge_socket: bridge,
            cwd: "/workspace",
            env: &[("FOO", "bar")],
            command,
        }
    }

    fn options(bridge: Option<&Path>) -> Vec<String> {
        let sandbox = SandboxArgs::new(false, Path::new("/etc"), &LocalLimits::default(), false);
        let data = sandbox.command_options(&spec(bridge, "echo hi")).unwrap_or_default();
        let text = String::from_utf8(data).unwrap_or_default();
        text.strip_suffix('\0')
            .unwrap_or_default()
            .split('\0')
            .map(str::to_owned)
            .collect()
    }

    fn launcher(network: bool) -> Vec<String> {
        let sandbox = SandboxArgs::new(network, Path::new("/etc"), &LocalLimits::default(), false);
        sandbox
            .launcher_argv()
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn shares_the_network_only_when_switched_on() {
        assert!(!launcher(false).contains(&"--share-net".to_owned()));
        assert!(launcher(true).contains(&"--share-net".to_owned()));
    }

    #[test]
    fn the_launcher_is_sandboxed_before_it_reads_the_command() {
        let argv = launcher(false);
        let args_at = argv.iter().position(|arg| arg == "--args");
        for option in ["--unshare-all", "--cap-drop", "--die-with-parent", "--disable-userns"] {
            assert!(argv.iter().position(|arg| arg == option) < args_at, "{option}");
        }
        let tail: Vec<&str> = argv.iter().rev().take(3).rev().map(String::as_str).collect();
        assert_eq!(tail, ["/bin/sh", "-c", TRAMPOLINE]);
        assert!(argv.iter().any(|arg| arg == "/usr/bin/prlimit"));
    }

    #[test]
    fn a_commands_options_carry_workspace_environment_and_command() {
        let options = options(None);
        assert_eq!(options[..3], ["--bind", "/data/sandboxes/t.1", "/workspace"]);
        let clearenv = options.iter().position(|arg| arg == "--clearenv");
        let foo = options.iter().position(|arg| arg == "FOO");
        assert!(clearenv < foo, "the request's variables come after --clearenv");
        assert_eq!(options[options.len() - 3..], ["--setenv", COMMAND_VARIABLE, "echo hi"]);
    }

    #[test]
    fn refuses_a_command_longer_than_the_kernel_takes() {
        let sandbox = SandboxArgs::new(false, Path::new("/etc"), &LocalLimits::default(), false);
        let longest = "x".repeat(MAX_COMMAND_BYTES);
        assert!(sandbox.command_options(&spec(None, &longest)).is_ok());
        let too_long = "x".repeat(MAX_COMMAND_BYTES + 1);
        assert!(sandbox.command_options(&spec(None, &too_long)).is_err());
    }

    #[test]
    fn refuses_a_nul_that_would_split_into_options() {
        let sandbox = SandboxArgs::new(false, Path::new("/etc"), &LocalLimits::default(), false);
        assert!(sandbox.command_options(&spec(None, "x\0--bind\0/\0/host")).is_err());
    }

    #[test]
    fn binds_the_bridge_socket_file_only_when_given() {
        assert!(!options(None).contains(&BRIDGE_SOCKET.to_owned()));
        let options = options(Some(Path::new("/run/tf/turn.sock")));
        let at = options.iter().position(|arg| arg == "/run/tf/turn.sock");
        assert!(at.is_some_and(|at| options[at - 1] == "--bind" && options[at + 1] == BRIDGE_SOCKET));
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
