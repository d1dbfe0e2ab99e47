//! Running a command as the Daytona daemon's `process/execute` does: the command line split into words
//! (no shell), run in `cwd`, stdout and stderr into one buffer, the process group killed at the timeout.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use trueforge_protocol::sync::lock;

/// The process groups of running commands with their sandbox's id. Stopping or deleting a sandbox, or
/// dropping the fake, kills its commands as stopping a VM would, rather than leaving them on the host.
#[derive(Default)]
pub(crate) struct Processes(Mutex<HashMap<u32, String>>);

impl Processes {
    pub fn kill_sandbox(&self, sandbox_id: &str) {
        lock(&self.0)
            .iter()
            .filter(|(_, owner)| owner.as_str() == sandbox_id)
            .for_each(|(group, _)| kill_group(*group));
    }

    pub fn kill_all(&self) {
        lock(&self.0).keys().copied().for_each(kill_group);
    }
}

/// How a command ended.
pub(crate) enum Ran {
    /// Exit code, or -1 when it died by a signal or did not start (the daemon's -1).
    Exited {
        code: i32,
        output: Vec<u8>,
    },
    TimedOut,
}

/// Splits a command line as the daemon does: words at spaces, single or double quotes group (and are
/// dropped), a quote of the other kind inside quotes is kept, no escapes.
pub(crate) fn split_command(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for character in command.chars() {
        match (character, quote) {
            ('"' | '\'', None) => quote = Some(character),
            ('"' | '\'', Some(open)) if open == character => quote = None,
            (' ', None) => {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(character),
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Where and how long a command runs.
pub(crate) struct Run<'a> {
    pub sandbox_id: &'a str,
    pub cwd: &'a Path,
    pub home: &'a Path,
    pub timeout: Option<Duration>,
}

/// Runs `words` in `cwd` with a minimal environment (`PATH`, `HOME`).
pub(crate) async fn run(words: Vec<String>, at: Run<'_>, processes: &Processes) -> Ran {
    let Some((program, args)) = words.split_first() else {
        return Ran::Exited {
            code: -1,
            output: b"empty command".to_vec(),
        };
    };
    let (reader, writer) = match std::io::pipe() {
        Ok(pipe) => pipe,
        Err(error) => return start_failed(&error),
    };
    let writer_for_stderr = match writer.try_clone() {
        Ok(writer) => writer,
        Err(error) => return start_failed(&error),
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(at.cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", at.home)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_for_stderr)
        // Its own process group, so a timeout kills what it started too.
        .process_group(0);
    let spawned = command.spawn();
    // The command holds our copies of the pipe's write end: without dropping it the reader never ends.
    drop(command);
    let child = match spawned {
        Ok(child) => child,
        // The daemon answers a command that cannot start with exit code -1 and the error as output.
        Err(error) => return start_failed(&error),
    };
    let group = child.id();
    if let Some(group) = group {
        lock(&processes.0).insert(group, at.sandbox_id.to_owned());
    }
    let ran = finish(child, reader, at.timeout).await;
    if let Some(group) = group {
        lock(&processes.0).remove(&group);
    }
    ran
}

async fn finish(mut child: tokio::process::Child, mut reader: std::io::PipeReader, timeout: Option<Duration>) -> Ran {
    let reading = tokio::task::spawn_blocking(move || {
        let mut output = Vec::new();
        let _ = reader.read_to_end(&mut output);
        output
    });
    let status = match timeout {
        Some(timeout) => match tokio::time::timeout(timeout, child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                if let Some(group) = child.id() {
                    kill_group(group);
                }
                let _ = child.wait().await;
                let _ = reading.await;
                return Ran::TimedOut;
            }
        },
        None => child.wait().await,
    };
    let output = reading.await.unwrap_or_default();
    let code = status.ok().and_then(|status| status.code()).unwrap_or(-1);
    Ran::Exited { code, output }
}

fn start_failed(error: &std::io::Error) -> Ran {
    Ran::Exited {
        code: -1,
        output: error.to_string().into_bytes(),
    }
}

/// Kills a process group through `kill(1)`, which needs no unsafe code here.
fn kill_group(group: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{group}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_as_the_daemon_does() {
        assert_eq!(split_command("  ls  -la "), ["ls", "-la"]);
        assert_eq!(
            split_command(r#"sh -c 'echo "a b"; x=1' tail"#),
            ["sh", "-c", r#"echo "a b"; x=1"#, "tail"]
        );
        assert_eq!(split_command(r#"a"b c"d"#), ["ab cd"]);
        assert!(split_command("   ").is_empty());
    }
}
