//! Helpers the capability tests share: a tool context, and reading outputs.

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use trueforge_store::session::model::TurnKey;

use crate::tools::{ToolContent, ToolContext, ToolOutput, ToolPart, ToolSet};

pub(crate) fn context_with(turn: TurnKey, thread_id: &str) -> ToolContext {
    ToolContext {
        turn,
        thread_id: thread_id.into(),
        is_sub_agent: false,
        cancel: CancellationToken::new(),
    }
}

/// A context of a turn `t1/s1/turn-1`, thread `main`.
pub(crate) fn context() -> ToolContext {
    context_with(TurnKey::new("t1", "s1", "turn-1"), "main")
}

pub(crate) async fn call(set: &dyn ToolSet, tool: &str, arguments: Value) -> ToolOutput {
    call_in(set, tool, arguments, &context()).await
}

pub(crate) async fn call_in(set: &dyn ToolSet, tool: &str, arguments: Value, cx: &ToolContext) -> ToolOutput {
    set.call_tool(tool, arguments, cx).await.unwrap()
}

/// The text parts of a content output, and whether it is an error.
pub(crate) fn text_of(output: &ToolOutput) -> (String, bool) {
    let ToolOutput::Content(ToolContent { parts, is_error, .. }) = output else {
        panic!("expected content, got {output:?}");
    };
    let text = parts
        .iter()
        .map(|part| match part {
            ToolPart::Text(text) => text.as_str(),
            ToolPart::Image { .. } => "[image]",
        })
        .collect::<Vec<_>>()
        .join("\n");
    (text, *is_error)
}

/// The text of an output that must be a success.
pub(crate) fn ok_text(output: &ToolOutput) -> String {
    let (text, is_error) = text_of(output);
    assert!(!is_error, "unexpected error output: {text}");
    text
}

/// The message of an output that must be an error.
pub(crate) fn error_text(output: &ToolOutput) -> String {
    let (text, is_error) = text_of(output);
    assert!(is_error, "expected an error output, got: {text}");
    text
}
