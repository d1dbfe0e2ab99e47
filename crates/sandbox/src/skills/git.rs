//! Running git on the host: a scrubbed environment, a fixed set of allowed transports, credentials only
//! from the operator's file, and a time limit after which git and everything it started are killed.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use super::SkillSources;
use super::check::is_commit_id;

/// Host variables a git call keeps: what it needs to find programs and reach the network through the
/// operator's proxy and certificates. Nothing else of the server's environment (no `GIT_*`, no tokens).
const KEPT_ENV: &[&str] = &[
    "PATH",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// How a git call failed.
#[derive(Debug)]
pub(crate) enum GitFailure {
    /// git could not be started.
    Spawn(std::io::Error),
    /// Killed after the time limit.
    Timeout,
    /// It ran and exited non-zero (or by a signal); the first lines of what it said.
    Failed(String),
}

/// The `-c` settings every call gets, before the subcommand.
fn config_args(sources: &SkillSources) -> Vec<OsString> {
    let mut settings: Vec<OsString> = vec![
        // Only the transports we chose: https, and file when the operator turned it on. `ext::`, ssh,
        // git:// and http are refused by git itself too, not only by our URL check.
        "protocol.allow=never".into(),
        "protocol.https.allow=always".into(),
        "protocol.ext.allow=never".into(),
        if sources.allow_file_urls {
            "protocol.file.allow=always".into()
        } else {
            "protocol.file.allow=never".into()
        },
        // No hooks, no fsmonitor, no background maintenance, no submodules: a checkout runs nothing.
        "core.hooksPath=/dev/null".into(),
        "core.fsmonitor=false".into(),
        "core.symlinks=true".into(),
        "submodule.recurse=false".into(),
        "gc.auto=0".into(),
        "maintenance.auto=false".into(),
        "advice.detachedHead=false".into(),
        "init.defaultBranch=main".into(),
        // An empty value clears any helper list, so only the operator's file below is ever asked.
        "credential.helper=".into(),
    ];
    if let Some(file) = &sources.git_credentials {
        // git runs the helper string through the shell: the path is quoted.
        let mut helper = OsString::from("credential.helper=store --file=");
        helper.push(shell_quote_os(file.as_os_str()));
        settings.push(helper);
    }
    settings
        .into_iter()
        .flat_map(|setting| [OsString::from("-c"), setting])
        .collect()
}

/// Single-quotes a value for `sh` (`'` becomes `'\''`).
fn shell_quote_os(value: &std::ffi::OsStr) -> OsString {
    let text = value.to_string_lossy();
    OsString::from(format!("'{}'", text.replace('\'', r"'\''")))
}

/// Runs `git <config> <args>` in `cwd` and returns its standard output.
pub(crate) async fn run_git(sources: &SkillSources, cwd: &Path, args: &[OsString]) -> Result<String, GitFailure> {
    let mut command = Command::new("git");
    command
        .args(config_args(sources))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(
            KEPT_ENV
                .iter()
                .filter_map(|key| std::env::var_os(key).map(|value| (key, value))),
        )
        // No system or user config, no prompts of any kind: a missing credential fails at once ("terminal
        // prompts disabled"), never waits. No askpass program is set (the environment is cleared), so git
        // says that rather than trying an empty password.
        .env("HOME", &sources.cache_dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GCM_INTERACTIVE", "never")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills the helpers git started (remote-https,
        // upload-pack, index-pack) and not only git itself.
        .process_group(0)
        .kill_on_drop(true);
    let child = command.spawn().map_err(GitFailure::Spawn)?;
    let pid = child.id();
    match tokio::time::timeout(sources.timeout, child.wait_with_output()).await {
        Ok(Ok(output)) if output.status.success() => Ok(String::from_utf8_lossy(&output.stdout).into_owned()),
        Ok(Ok(output)) => Err(GitFailure::Failed(summarize(&output.stderr))),
        Ok(Err(error)) => Err(GitFailure::Failed(error.to_string())),
        Err(_elapsed) => {
            // The dropped future already killed git itself; its helpers share the group.
            if let Some(pid) = pid {
                kill_group(pid).await;
            }
            Err(GitFailure::Timeout)
        }
    }
}

/// Sends SIGKILL to a process group through `kill(1)`: the crate allows no unsafe code for `killpg`.
async fn kill_group(pgid: u32) {
    let result = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .status();
    // Best effort: the group may already be gone; bound the wait so a stuck `kill` cannot hang a turn.
    let _ = tokio::time::timeout(Duration::from_secs(5), result).await;
}

/// The first lines of git's complaint, without git's generic advice, short enough for a message.
fn summarize(stderr: &[u8]) -> String {
    const MAX_CHARS: usize = 400;
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| {
            !line.is_empty()
                && !line.starts_with("Please make sure you have the correct access rights")
                && !line.starts_with("and the repository exists")
                && !line.starts_with("warning: filtering not recognized")
        })
        .take(3)
        .collect();
    let joined = lines.join("; ");
    if joined.is_empty() {
        return "git gave no reason".to_owned();
    }
    if joined.chars().count() > MAX_CHARS {
        let cut: String = joined.chars().take(MAX_CHARS).collect();
        return format!("{cut}…");
    }
    joined
}

/// The lines of `git ls-remote`: object id and ref name. Lines whose id is not a full hex object id
/// are dropped: the id goes into a cache path and git's argv, so only what cannot be misread is kept.
pub(crate) fn parse_ls_remote(stdout: &str) -> Vec<(&str, &str)> {
    stdout
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(oid, name)| (oid.trim(), name.trim()))
        .filter(|(oid, _)| is_commit_id(oid))
        .collect()
}

/// The commit a ref names among `ls-remote` lines, in git's own order of precedence (the exact name,
/// `refs/<ref>`, a tag, a branch); an annotated tag gives the commit it points to (`^{}`).
pub(crate) fn pick_commit(lines: &[(&str, &str)], git_ref: &str) -> Option<String> {
    let candidates = [
        git_ref.to_owned(),
        format!("refs/{git_ref}"),
        format!("refs/tags/{git_ref}"),
        format!("refs/heads/{git_ref}"),
    ];
    let find = |name: &str| {
        lines
            .iter()
            .find(|(_, line_name)| *line_name == name)
            .map(|(oid, _)| (*oid).to_owned())
    };
    candidates
        .iter()
        .find_map(|name| find(&format!("{name}^{{}}")).or_else(|| find(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_tags_peeled_and_exact_names_only() {
        let id = |c: char| c.to_string().repeat(40);
        let out = [
            (id('a'), "HEAD"),
            (id('b'), "refs/heads/main"),
            (id('c'), "refs/heads/x/main"),
            (id('d'), "refs/tags/v1"),
            (id('e'), "refs/tags/v1^{}"),
            (id('f'), "refs/tags/v0"),
            ("../x".to_owned(), "refs/heads/bad"),
        ]
        .iter()
        .map(|(oid, name)| format!("{oid}\t{name}\n"))
        .collect::<String>();
        let lines = parse_ls_remote(&out);
        assert_eq!(lines.len(), 6, "a line without a hex id was kept: {lines:?}");
        assert_eq!(pick_commit(&lines, "main"), Some(id('b')));
        assert_eq!(pick_commit(&lines, "v1"), Some(id('e')));
        assert_eq!(pick_commit(&lines, "v0"), Some(id('f')));
        assert_eq!(pick_commit(&lines, "HEAD"), Some(id('a')));
        assert_eq!(pick_commit(&lines, "refs/heads/x/main"), Some(id('c')));
        assert_eq!(pick_commit(&lines, "heads/main"), Some(id('b')));
        assert_eq!(pick_commit(&lines, "bad"), None);
        assert_eq!(pick_commit(&lines, "ain"), None);
        assert_eq!(pick_commit(&lines, "x"), None);
    }

    fn sources(cache: &Path) -> SkillSources {
        SkillSources {
            cache_dir: cache.to_path_buf(),
            allow_file_urls: false,
            git_credentials: None,
            timeout: Duration::from_secs(30),
            max_bytes: 1024,
        }
    }

    #[test]
    fn credentials_come_only_from_the_operator_file() {
        let cache = tempfile::tempdir().unwrap();
        let mut sources = sources(cache.path());
        let args: Vec<String> = config_args(&sources)
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        assert!(args.contains(&"credential.helper=".to_owned()));
        assert!(args.contains(&"protocol.file.allow=never".to_owned()));
        assert!(!args.iter().any(|arg| arg.starts_with("credential.helper=store")));

        sources.git_credentials = Some("/srv/it's here/creds".into());
        sources.allow_file_urls = true;
        let args: Vec<String> = config_args(&sources)
            .iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        let cleared = args.iter().position(|arg| arg == "credential.helper=").unwrap();
        let store = args
            .iter()
            .position(|arg| arg == r"credential.helper=store --file='/srv/it'\''s here/creds'")
            .unwrap();
        assert!(cleared < store, "the helper list must be cleared first");
        assert!(args.contains(&"protocol.file.allow=always".to_owned()));
    }

    /// Even a URL that got past the checks cannot make git run a command or use a refused transport.
    #[tokio::test]
    async fn git_itself_refuses_ext_and_file_when_off() {
        let cache = tempfile::tempdir().unwrap();
        let marker = cache.path().join("touched");
        let sources = sources(cache.path());
        let ext = format!("ext::sh -c touch% {}", marker.display());
        let result = run_git(&sources, cache.path(), &["ls-remote".into(), "--".into(), ext.into()]).await;
        assert!(matches!(result, Err(GitFailure::Failed(_))), "{result:?}");
        assert!(!marker.exists(), "ext:: ran a command");

        let repo = cache.path().join("repo");
        let init: Vec<OsString> = vec!["init".into(), "-q".into(), "--".into(), repo.as_os_str().into()];
        run_git(&sources, cache.path(), &init).await.unwrap();
        let url = format!("file://{}", repo.display());
        let result = run_git(&sources, cache.path(), &["ls-remote".into(), "--".into(), url.into()]).await;
        let Err(GitFailure::Failed(detail)) = result else {
            panic!("file:// was allowed: {result:?}");
        };
        assert!(detail.contains("not allowed"), "{detail}");
    }

    #[test]
    fn summary_drops_advice() {
        let stderr = b"fatal: '/x' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n";
        assert_eq!(
            summarize(stderr),
            "fatal: '/x' does not appear to be a git repository; fatal: Could not read from remote repository."
        );
    }
}
