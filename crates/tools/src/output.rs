//! What a tool call returns, and the text the model is given for it.

use serde_json::{Value, json};
use trueforge_protocol::AgentInfo;

/// The outcome of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A result to append for the call.
    Content(ToolContent),
    /// The call spawns a sub-agent; its result arrives when the sub-agent finishes.
    CreateSubAgent(AgentInfo),
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Content(ToolContent::text(text))
    }

    pub fn error(message: impl Into<String>) -> Self {
        Self::Content(ToolContent::error(message))
    }

    pub fn json(value: &Value) -> Self {
        Self::Content(ToolContent::text(value.to_string()))
    }
}

/// One piece of a tool's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPart {
    Text(String),
    /// Base64 image data with its media type.
    Image {
        media_type: String,
        data: String,
    },
}

/// A tool's result: content parts, optionally structured content, and whether it is an error.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolContent {
    pub parts: Vec<ToolPart>,
    pub structured: Option<Value>,
    pub is_error: bool,
}

impl ToolContent {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            parts: vec![ToolPart::Text(text.into())],
            structured: None,
            is_error: false,
        }
    }

    pub fn error(message: impl Into<String>) -> Self {
        Self {
            parts: vec![ToolPart::Text(message.into())],
            structured: None,
            is_error: true,
        }
    }

    /// The text the model is given: structured content as JSON when present, else the text parts joined
    /// by newlines (an image becomes a short marker). An error is `{"error": …}`, encoded once: a text that
    /// already is such an object is kept as it is.
    pub fn to_model_text(&self) -> String {
        if self.is_error {
            let text = self.joined_text();
            let already_encoded = serde_json::from_str::<Value>(&text)
                .ok()
                .is_some_and(|value| value.get("error").is_some());
            return if already_encoded { text } else { error_json(&text) };
        }
        if let Some(structured) = &self.structured {
            return structured.to_string();
        }
        self.joined_text()
    }

    fn joined_text(&self) -> String {
        self.parts
            .iter()
            .map(|part| match part {
                ToolPart::Text(text) => text.clone(),
                ToolPart::Image { media_type, .. } => format!("[image: {media_type}]"),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `{"error": message}` as JSON text: how every failure reads to the model.
pub fn error_json(message: &str) -> String {
    json!({ "error": message }).to_string()
}
