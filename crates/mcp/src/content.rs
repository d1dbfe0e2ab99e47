//! An MCP `CallToolResult` as our `ToolContent`.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use trueforge_tools::{ToolContent, ToolPart};

/// Maps a call result: text stays text, images stay images (for providers that take them), audio
/// and binary resources become a short marker, embedded text resources and resource links become
/// text naming their URI. Structured content becomes JSON text when the server sent no text (a
/// server that sends both is expected to mirror one in the other). `isError` makes the whole result
/// an error the model sees.
pub fn map_call_result(result: CallToolResult) -> ToolContent {
    let mut parts: Vec<ToolPart> = result.content.into_iter().map(map_block).collect();
    let has_text = parts.iter().any(|part| matches!(part, ToolPart::Text(_)));
    if !has_text && let Some(structured) = result.structured_content {
        parts.push(ToolPart::Text(structured.to_string()));
    }
    ToolContent {
        parts,
        structured: None,
        is_error: result.is_error.unwrap_or(false),
    }
}

fn map_block(block: ContentBlock) -> ToolPart {
    match block {
        ContentBlock::Text(text) => ToolPart::Text(text.text),
        ContentBlock::Image(image) => ToolPart::Image {
            media_type: image.mime_type,
            data: image.data,
        },
        ContentBlock::Audio(audio) => ToolPart::Text(format!(
            "[audio: {}, {} bytes of base64 not shown]",
            audio.mime_type,
            audio.data.len()
        )),
        ContentBlock::Resource(embedded) => ToolPart::Text(match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => format!("[resource {uri}]\n{text}"),
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => format!(
                "[resource {uri}: {}, {} bytes of base64 not shown]",
                mime_type.as_deref().unwrap_or("binary"),
                blob.len()
            ),
            // rmcp marks the enum open for future content kinds.
            other => format!("[resource: {}]", serde_json::to_string(&other).unwrap_or_default()),
        }),
        ContentBlock::ResourceLink(link) => ToolPart::Text(match link.description {
            Some(description) => format!("[resource link {}: {}] {description}", link.name, link.uri),
            None => format!("[resource link {}: {}]", link.name, link.uri),
        }),
        other => ToolPart::Text(format!(
            "[content: {}]",
            serde_json::to_string(&other).unwrap_or_default()
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn structured_content_becomes_text_only_when_there_is_no_text() {
        let only = map_call_result(result(json!({"content": [], "structuredContent": {"t": 1}})));
        assert_eq!(only.parts, [ToolPart::Text(r#"{"t":1}"#.to_owned())]);
        let both = map_call_result(result(json!({
            "content": [{"type": "text", "text": "t is 1"}], "structuredContent": {"t": 1}
        })));
        assert_eq!(both.parts, [ToolPart::Text("t is 1".to_owned())]);
    }

    #[test]
    fn blobs_and_audio_become_markers_and_errors_stay_errors() {
        let mapped = map_call_result(result(json!({
            "content": [
                {"type": "resource", "resource": {"uri": "file:///a.bin", "mimeType": "application/zip", "blob": "AAAA"}},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
            ],
            "isError": true
        })));
        assert!(mapped.is_error);
        assert_eq!(
            mapped.parts,
            [
                ToolPart::Text("[resource file:///a.bin: application/zip, 4 bytes of base64 not shown]".to_owned()),
                ToolPart::Text("[audio: audio/wav, 4 bytes of base64 not shown]".to_owned()),
            ]
        );
    }
}
