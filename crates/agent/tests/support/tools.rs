//! In-process tools for runtime tests, counting every execution.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use trueforge_agent::tools::{LocalTool, LocalToolSet, ToolAnnotations, ToolOutput, ToolSpec};

/// Every executed call: `(tool, arguments)`.
pub type Executions = Arc<Mutex<Vec<(String, Value)>>>;

fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// `workbench`: `add {a, b}`, `echo {text}`, `big {chars}` (a long output), `slow` (waits for cancel),
/// `delete_file {path}` (needs approval).
pub fn workbench(executions: Executions) -> LocalToolSet {
    let record = |executions: Executions, name: &'static str| {
        move |arguments: &Value| {
            executions
                .lock()
                .expect("executions lock")
                .push((name.to_owned(), arguments.clone()));
        }
    };
    let add_record = record(executions.clone(), "add");
    let echo_record = record(executions.clone(), "echo");
    let big_record = record(executions.clone(), "big");
    let slow_record = record(executions.clone(), "slow");
    let delete_record = record(executions, "delete_file");
    LocalToolSet::server(
        "workbench-id",
        "workbench",
        vec![
            LocalTool::new(
                ToolSpec::new(
                    "add",
                    "Adds two numbers.",
                    object_schema(json!({"a": {"type": "number"}, "b": {"type": "number"}}), &["a", "b"]),
                )
                .with_annotations(ToolAnnotations {
                    read_only: Some(true),
                    destructive: None,
                }),
                move |arguments, _cx| {
                    add_record(&arguments);
                    async move {
                        let sum = arguments["a"].as_f64().unwrap_or(0.0) + arguments["b"].as_f64().unwrap_or(0.0);
                        Ok(ToolOutput::text(sum.to_string()))
                    }
                },
            ),
            LocalTool::new(
                ToolSpec::new(
                    "echo",
                    "Repeats text.",
                    object_schema(json!({"text": {"type": "string"}}), &["text"]),
                ),
                move |arguments, _cx| {
                    echo_record(&arguments);
                    async move {
                        Ok(ToolOutput::text(
                            arguments["text"].as_str().unwrap_or_default().to_owned(),
                        ))
                    }
                },
            ),
            LocalTool::new(
                ToolSpec::new(
                    "big",
                    "Returns a long text.",
                    object_schema(json!({"chars": {"type": "integer"}}), &["chars"]),
                ),
                move |arguments, _cx| {
                    big_record(&arguments);
                    async move {
                        let chars = arguments["chars"].as_u64().unwrap_or(0) as usize;
                        let body: String = (0..chars)
                            .map(|i| {
                                if i % 50 == 49 {
                                    '\n'
                                } else {
                                    (b'a' + (i % 26) as u8) as char
                                }
                            })
                            .collect();
                        Ok(ToolOutput::text(format!("BEGIN{body}END")))
                    }
                },
            ),
            LocalTool::new(
                ToolSpec::new("slow", "Takes its time.", object_schema(json!({}), &[])),
                move |arguments, cx| {
                    slow_record(&arguments);
                    async move {
                        tokio::select! {
                            () = cx.cancel.cancelled() => Ok(ToolOutput::error("cancelled")),
                            () = tokio::time::sleep(Duration::from_secs(30)) => Ok(ToolOutput::text("slow done")),
                        }
                    }
                },
            ),
            LocalTool::new(
                ToolSpec::new(
                    "delete_file",
                    "Deletes a file.",
                    object_schema(json!({"path": {"type": "string"}}), &["path"]),
                )
                .with_annotations(ToolAnnotations {
                    read_only: Some(false),
                    destructive: Some(true),
                }),
                move |arguments, _cx| {
                    delete_record(&arguments);
                    async move {
                        Ok(ToolOutput::text(format!(
                            "deleted {}",
                            arguments["path"].as_str().unwrap_or_default()
                        )))
                    }
                },
            ),
        ],
    )
    .with_approval_required(["delete_file"])
}

pub fn executed(executions: &Executions) -> Vec<String> {
    executions
        .lock()
        .expect("executions lock")
        .iter()
        .map(|(name, _)| name.clone())
        .collect()
}
