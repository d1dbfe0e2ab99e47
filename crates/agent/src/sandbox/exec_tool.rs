//! The `exec` tool: one shell command in the turn's sandbox, with its intent, working directory and
//! environment. Its result is the reference's JSON (`{"success", "response": {"exitCode", "result"}}`), so
//! clients that render exec cards read the same shape.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use trueforge_sandbox::{ExecOutput, ExecRequest, check_sandbox_path};

use super::TurnSandbox;
use crate::capabilities::args::{Arguments, object, optional_text, required_text};
use crate::tools::{LocalTool, LocalToolSet, ToolContent, ToolContext, ToolOutput, ToolSpec};

/// The tool set's name, as the reference names it.
pub const SANDBOX_TOOL_SET: &str = "sandbox";
pub const EXEC_TOOL: &str = "exec";

const DESCRIPTION: &str = "Runs a shell command (bash) in your sandbox: a persistent Linux workspace that \
     keeps its files between commands and turns. Use it to run code (write a script to a file, then run \
     it), inspect and transform files, and check your work. State the purpose in `intent` (shown to the \
     user). Output over the limit is cut in the middle. Never print or reveal environment variables or \
     credentials.";

/// Environment names a command may not set: they would change how the sandbox itself starts programs.
const RESERVED_ENV: &[&str] = &["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"];

/// The `sandbox` set with its one tool, `exec`.
pub struct SandboxTools;

impl SandboxTools {
    pub fn tool_set(sandbox: Arc<TurnSandbox>) -> LocalToolSet {
        let spec = ToolSpec::new(EXEC_TOOL, DESCRIPTION, schema());
        let tool = LocalTool::new(spec, move |arguments, cx| {
            let sandbox = sandbox.clone();
            async move { Ok(run(&sandbox, &arguments, &cx).await) }
        });
        LocalToolSet::system(SANDBOX_TOOL_SET, vec![tool])
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "intent": {"type": "string", "description": "What the command is for, in a few words for the user."},
            "command": {"type": "string", "description": "The command line, run with bash."},
            "cwd": {"type": "string", "description": "Working directory: absolute, or relative to the workspace. Defaults to the workspace."},
            "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra environment variables for this command."}
        },
        "required": ["intent", "command"],
        "additionalProperties": false
    })
}

async fn run(sandbox: &TurnSandbox, arguments: &Value, cx: &ToolContext) -> ToolOutput {
    let request = match request(sandbox, arguments) {
        Ok(request) => request,
        Err(message) => return failure(&message),
    };
    let timeout = request.timeout;
    match sandbox.exec(request, &cx.cancel).await {
        Ok(output) => result(&output, timeout),
        Err(error) => failure(&error.to_string()),
    }
}

fn request(sandbox: &TurnSandbox, arguments: &Value) -> Result<ExecRequest, String> {
    let args = object(arguments)?;
    // Required by the schema; only its presence matters here (clients show it).
    required_text(args, "intent")?;
    let command = required_text(args, "command")?.to_owned();
    let cwd = optional_text(args, "cwd")?
        .map(|cwd| resolve_cwd(sandbox, cwd))
        .transpose()?;
    Ok(ExecRequest {
        command,
        cwd,
        env: environment(args)?,
        timeout: sandbox.options().exec_timeout,
        output_limit: sandbox.options().output_limit,
        bridge_socket: None,
    })
}

fn resolve_cwd(sandbox: &TurnSandbox, cwd: &str) -> Result<String, String> {
    let absolute = if cwd.starts_with('/') {
        cwd.to_owned()
    } else {
        format!(
            "{}/{}",
            sandbox.layout().workspace.trim_end_matches('/'),
            cwd.trim_end_matches('/')
        )
    };
    check_sandbox_path(&absolute).map_err(|error| format!("`cwd`: {error}"))?;
    Ok(absolute)
}

fn environment(args: &Arguments) -> Result<BTreeMap<String, String>, String> {
    let Some(env) = args.get("env").filter(|value| !value.is_null()) else {
        return Ok(BTreeMap::new());
    };
    let env = env.as_object().ok_or("`env` must be an object of strings.")?;
    let mut variables = BTreeMap::new();
    for (name, value) in env {
        let valid_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name {
            return Err(format!("`env`: '{name}' is not a valid variable name."));
        }
        if RESERVED_ENV.contains(&name.as_str()) {
            return Err(format!("`env`: '{name}' cannot be set."));
        }
        let value = value
            .as_str()
            .ok_or_else(|| format!("`env`: the value of '{name}' must be a string."))?;
        if value.contains('\0') {
            return Err(format!("`env`: the value of '{name}' must not contain NUL."));
        }
        variables.insert(name.clone(), value.to_owned());
    }
    Ok(variables)
}

/// The reference's result shape. A command that ran and exited is a success whatever its exit code (the
/// model reads the code); one that was stopped is an error saying why, with what it printed.
fn result(output: &ExecOutput, timeout: std::time::Duration) -> ToolOutput {
    let mut text = output.output.clone();
    if output.omitted_bytes > 0 {
        text.push_str(&format!(
            "\n[{} bytes of output were left out of the middle; redirect the output to a file and read it in parts]",
            output.omitted_bytes
        ));
    }
    let stopped = if output.cancelled {
        Some("The command was stopped because the turn was cancelled.".to_owned())
    } else if output.timed_out {
        Some(format!(
            "The command ran longer than {} s and was stopped with everything it started.",
            timeout.as_secs()
        ))
    } else {
        None
    };
    match (stopped, output.exit_code) {
        (None, Some(exit_code)) => ToolOutput::Content(ToolContent::text(
            json!({"success": true, "response": {"exitCode": exit_code, "result": text}}).to_string(),
        )),
        (stopped, _) => {
            let reason = stopped.unwrap_or_else(|| "The command was killed by a signal.".to_owned());
            let message = if text.is_empty() {
                reason
            } else {
                format!("{reason} Output so far:\n{text}")
            };
            failure(&message)
        }
    }
}

fn failure(message: &str) -> ToolOutput {
    ToolOutput::Content(ToolContent {
        parts: vec![crate::tools::ToolPart::Text(
            json!({"success": false, "error": message}).to_string(),
        )],
        structured: None,
        is_error: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(exit_code: Option<i32>, text: &str) -> ExecOutput {
        ExecOutput {
            exit_code,
            output: text.to_owned(),
            omitted_bytes: 0,
            timed_out: false,
            cancelled: false,
        }
    }

    fn text(output: &ToolOutput) -> (Value, bool) {
        let ToolOutput::Content(content) = output else {
            panic!("not content")
        };
        let crate::tools::ToolPart::Text(text) = &content.parts[0] else {
            panic!("not text")
        };
        (serde_json::from_str(text).unwrap(), content.is_error)
    }

    #[test]
    fn an_exit_code_is_a_result_and_a_stop_is_an_error() {
        let seconds = std::time::Duration::from_secs(5);
        assert_eq!(
            text(&result(&output(Some(2), "nope"), seconds)),
            (
                json!({"success": true, "response": {"exitCode": 2, "result": "nope"}}),
                false
            )
        );
        let mut timed_out = output(None, "partial");
        timed_out.timed_out = true;
        let (value, is_error) = text(&result(&timed_out, seconds));
        assert!(is_error);
        assert_eq!(value["success"], false);
        let message = value["error"].as_str().unwrap();
        assert!(
            message.contains("longer than 5 s") && message.ends_with("partial"),
            "{message}"
        );
        let mut cut = output(Some(0), "head…tail");
        cut.omitted_bytes = 10;
        let (value, _) = text(&result(&cut, seconds));
        assert!(
            value["response"]["result"]
                .as_str()
                .unwrap()
                .contains("10 bytes of output were left out")
        );
    }

    #[test]
    fn refuses_bad_environments() {
        let args = |env: Value| object(&json!({"env": env})).cloned().unwrap();
        assert_eq!(
            environment(&args(json!({"A_1": "x"}))).unwrap(),
            BTreeMap::from([("A_1".to_owned(), "x".to_owned())])
        );
        for bad in [
            json!({"1A": "x"}),
            json!({"A-B": "x"}),
            json!({"LD_PRELOAD": "x"}),
            json!({"A": 1}),
            json!("x"),
        ] {
            assert!(environment(&args(bad.clone())).is_err(), "{bad} passed");
        }
    }
}
