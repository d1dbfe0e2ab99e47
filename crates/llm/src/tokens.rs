//! Token estimates for context accounting, before a provider reports real counts. The OpenAI family gets
//! its real tokenizer (o200k), which is cheap; every other family gets one token per four characters,
//! rounded up. Estimates are whole numbers: a fraction of a token is never billed or stored.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use crate::request::{MediaSource, Message, ModelRequest, ReasoningBlock, ToolResultPart, UserPart};

/// Which tokenizer approximates a model's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenizerFamily {
    /// OpenAI models: the o200k BPE.
    OpenAi,
    /// Anything else: characters / 4.
    Other,
}

impl TokenizerFamily {
    /// The family of a provider type string (`openai`, `anthropic`, …). Only `openai` is known to use
    /// o200k; OpenAI-compatible servers host many model families, so they count as `Other`.
    pub fn for_provider_type(provider_type: &str) -> Self {
        if provider_type == "openai" {
            Self::OpenAi
        } else {
            Self::Other
        }
    }
}

/// What one image costs in the estimate. Providers bill images by their pixel size, which this crate does
/// not decode; this is the upper end of what the providers document for a typical image, so the estimate
/// errs towards a fuller context rather than an overflow.
pub const IMAGE_TOKEN_ESTIMATE: u64 = 1_600;

/// Per-message framing (role markers, separators) that every chat format adds around the content.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// The o200k BPE, built once per process: building it parses a large vocabulary. `None` when it cannot
/// be built, in which case estimates fall back to characters / 4 rather than fail.
fn o200k() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref()
}

/// The estimated token count of `text`.
pub fn estimate_tokens(text: &str, family: TokenizerFamily) -> u64 {
    if text.is_empty() {
        return 0;
    }
    let bpe = match family {
        TokenizerFamily::OpenAi => o200k(),
        TokenizerFamily::Other => None,
    };
    match bpe {
        Some(bpe) => bpe.encode_ordinary(text).len() as u64,
        None => chars_per_four(text),
    }
}

fn chars_per_four(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// The estimated prompt size of a whole request: instructions, messages, tool definitions and the
/// response schema.
pub fn estimate_request_tokens(request: &ModelRequest, family: TokenizerFamily) -> u64 {
    let text = |text: &str| estimate_tokens(text, family);
    let mut total = request.instructions.as_deref().map_or(0, text);
    for message in &request.messages {
        total += MESSAGE_OVERHEAD_TOKENS + estimate_message(message, family);
    }
    for tool in &request.tools {
        total += text(&tool.name);
        total += tool.description.as_deref().map_or(0, text);
        total += text(&tool.parameters.to_string());
    }
    if let Some(format) = &request.response_format {
        total += serde_json::to_string(format).map_or(0, |json| text(&json));
    }
    total
}

/// The estimated size of one message as it is replayed.
pub fn estimate_message(message: &Message, family: TokenizerFamily) -> u64 {
    let text = |text: &str| estimate_tokens(text, family);
    match message {
        Message::User { content } => content
            .iter()
            .map(|part| match part {
                UserPart::Text { text: body } => text(body),
                UserPart::Image { .. } => IMAGE_TOKEN_ESTIMATE,
                UserPart::File { source, .. } => file_tokens(source),
            })
            .sum(),
        Message::Assistant(assistant) => {
            let reasoning: u64 = assistant
                .reasoning
                .iter()
                .map(|block| match block {
                    ReasoningBlock::Thinking { text: body, .. } => text(body),
                    ReasoningBlock::Encrypted { summary, .. } => text(summary),
                    // Opaque data the provider decrypts; its size says little about its token count.
                    ReasoningBlock::Redacted { .. } => 0,
                })
                .sum();
            let calls: u64 = assistant
                .tool_calls
                .iter()
                .map(|call| text(&call.name) + text(&call.arguments))
                .sum();
            text(&assistant.text) + reasoning + calls
        }
        Message::Tool(result) => result
            .content
            .iter()
            .map(|part| match part {
                ToolResultPart::Text { text: body } => text(body),
                ToolResultPart::Image { .. } => IMAGE_TOKEN_ESTIMATE,
            })
            .sum(),
    }
}

/// A file counts as its decoded bytes read as text, characters / 4: right for text files and an
/// overestimate for binary documents, whose extracted text is smaller. A file given by URL is unknown
/// until the provider fetches it, so it counts like an image.
fn file_tokens(source: &MediaSource) -> u64 {
    match source {
        MediaSource::Base64 { data, .. } => (data.len() as u64 * 3 / 4).div_ceil(4),
        MediaSource::Url { .. } => IMAGE_TOKEN_ESTIMATE,
    }
}
