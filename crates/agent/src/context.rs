//! Reading a thread's context: which tool calls are open, what the thread needs next, and the messages a
//! model is sent.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use trueforge_llm::{
    AssistantMessage, BodyCache, MediaSource, Message, Origin, ReasoningBlock, ToolCall, ToolResult, ToolResultPart,
    UserPart,
};
use trueforge_protocol::{
    ApprovalDecision, AssistantContent, ContextAssistantMessage, ContextContentPart, ContextMessage, ContextToolCall,
    ContextUserContent,
};

/// What a thread needs next, derived from its context alone (which is what makes a turn resumable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadNeed {
    /// No tool call is open: the model speaks next.
    Model,
    /// Open calls the harness can run (or sub-agents to spawn).
    Tools,
    /// An open call waits for the user's approval or for a client-side result.
    User,
    /// Only sub-agent calls are open and every one has its sub-agent running.
    Children,
}

/// The index of the last assistant row.
pub fn last_assistant(context: &[ContextMessage]) -> Option<(usize, &ContextAssistantMessage)> {
    context
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, message)| match message {
            ContextMessage::Assistant(assistant) => Some((index, assistant)),
            _ => None,
        })
}

/// The calls of the last assistant row that have no result row after it, in the row's order.
pub fn open_calls(context: &[ContextMessage]) -> Vec<&ContextToolCall> {
    let Some((index, assistant)) = last_assistant(context) else {
        return Vec::new();
    };
    let answered: HashSet<&str> = context[index + 1..]
        .iter()
        .filter_map(|message| match message {
            ContextMessage::Tool(tool) => Some(tool.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assistant
        .tool_calls()
        .iter()
        .filter(|call| !answered.contains(call.id.as_str()))
        .collect()
}

/// The user's approval decisions recorded after the last assistant row, by call id.
pub fn approval_decisions(context: &[ContextMessage]) -> HashMap<&str, &ApprovalDecision> {
    let start = last_assistant(context).map_or(0, |(index, _)| index + 1);
    context[start..]
        .iter()
        .filter_map(|message| match message {
            ContextMessage::ToolApproval(row) => Some((row.tool_call_id.as_str(), &row.approval)),
            _ => None,
        })
        .collect()
}

/// Whether an open call waits for the user: a client-side call, or a gated call without a decision.
pub fn awaits_user(call: &ContextToolCall, decisions: &HashMap<&str, &ApprovalDecision>) -> bool {
    call.is_client_side() || (call.is_approval_required() && !decisions.contains_key(call.id.as_str()))
}

/// What the thread needs next. `spawned` holds the calls whose sub-agent is running.
pub fn thread_need(context: &[ContextMessage], spawned: &HashSet<String>) -> ThreadNeed {
    let open = open_calls(context);
    if open.is_empty() {
        return ThreadNeed::Model;
    }
    let decisions = approval_decisions(context);
    if open.iter().any(|call| awaits_user(call, &decisions)) {
        return ThreadNeed::User;
    }
    if open
        .iter()
        .all(|call| call.is_thread_creation() && spawned.contains(&call.id))
    {
        return ThreadNeed::Children;
    }
    ThreadNeed::Tools
}

/// A token estimate of text for budgeting: a quarter of its characters, rounded up.
pub fn estimate_text_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// A token estimate of context rows (what they add to the next prompt).
pub fn estimate_rows(rows: &[ContextMessage]) -> u64 {
    rows.iter()
        .map(|row| match row {
            ContextMessage::Tool(tool) => {
                estimate_text_tokens(&tool.content)
                    + tool.images.len() as u64 * trueforge_llm::tokens::IMAGE_TOKEN_ESTIMATE
            }
            ContextMessage::ToolApproval(_) => 0,
            other => estimate_text_tokens(&other.search_text()),
        })
        .sum()
}

/// The rows a model is sent, in the provider-neutral request shape. Approval rows are dropped; reasoning
/// and provider data are replayed only to the model (`source`) that produced them.
pub fn to_model_messages(context: &[ContextMessage], source: &str, origin: &Origin) -> Vec<Message> {
    let mut converted = ModelMessages::default();
    converted.update(context, source, origin);
    converted.messages
}

/// A thread's context converted into model messages, kept from one model call to the next (and from a
/// turn to the next, with the kept contexts): converting every row on every call, and dropping the copy
/// after it, cost time in proportion to the conversation. A row's message depends only on the row, the
/// names of the calls before it and the model it is sent to, and a context only grows at its end (a
/// compaction, which replaces it, calls [`reset`](Self::reset)), so only the rows added since the last
/// call are converted.
#[derive(Debug, Default)]
pub struct ModelMessages {
    /// The model the messages were converted for.
    target: Option<(String, Origin)>,
    /// How many context rows the messages hold.
    rows: usize,
    messages: Vec<Message>,
    /// Tool names by call id, for the result rows to come.
    call_names: HashMap<String, String>,
    /// The messages are out in a request; `Some(count)` of them.
    lent: Option<usize>,
    /// The seed messages the last request started with, and the adapter's serialised copy of the
    /// messages lent so far: the lent messages only grow at the end while the seed, the target and the
    /// context stay, which is the promise a [`BodyCache`] needs; anything else takes a new cache.
    seed: Vec<Message>,
    body_cache: BodyCache,
}

impl ModelMessages {
    /// Forgets everything converted (the context was replaced).
    pub fn reset(&mut self) {
        *self = Self {
            body_cache: BodyCache::new(),
            ..Self::default()
        };
    }

    /// The serialised-messages cache the requests of these messages share.
    pub fn body_cache(&self) -> BodyCache {
        self.body_cache.clone()
    }

    /// Brings the messages up to `context`, as sent to `source`.
    pub fn update(&mut self, context: &[ContextMessage], source: &str, origin: &Origin) {
        let same_target = self
            .target
            .as_ref()
            .is_some_and(|(name, converted_for)| name == source && converted_for == origin);
        if !same_target || self.lent.is_some() || self.rows > context.len() {
            self.reset();
            self.target = Some((source.to_owned(), origin.clone()));
        }
        for row in &context[self.rows..] {
            self.convert(row, source, origin);
        }
        self.rows = context.len();
    }

    /// Lends the messages out for a request, after `seed` (the messages every request of the thread
    /// starts with). Give them back with [`give_back`](Self::give_back), or the next update converts
    /// every row again.
    pub fn lend(&mut self, seed: &[Message]) -> Vec<Message> {
        if self.seed != seed {
            self.seed = seed.to_vec();
            self.body_cache = BodyCache::new();
        }
        let mut messages = std::mem::take(&mut self.messages);
        self.lent = Some(messages.len());
        messages.splice(0..0, seed.iter().cloned());
        messages
    }

    /// Takes back the messages lent with `seed_len` seed messages in front.
    pub fn give_back(&mut self, mut messages: Vec<Message>, seed_len: usize) {
        if self.lent.take() == Some(messages.len().saturating_sub(seed_len)) && messages.len() >= seed_len {
            messages.drain(..seed_len);
            self.messages = messages;
        } else {
            self.reset();
        }
    }

    fn convert(&mut self, row: &ContextMessage, source: &str, origin: &Origin) {
        match row {
            ContextMessage::User(user) => self.messages.push(Message::User {
                content: user_parts(&user.content),
            }),
            ContextMessage::Assistant(assistant) => {
                for call in assistant.tool_calls() {
                    self.call_names.insert(call.id.clone(), call.function.name.clone());
                }
                self.messages
                    .push(Message::Assistant(assistant_message(assistant, source, origin)));
            }
            ContextMessage::Tool(tool) => self.messages.push(Message::Tool(ToolResult {
                call_id: tool.tool_call_id.clone(),
                name: self
                    .call_names
                    .get(tool.tool_call_id.as_str())
                    .cloned()
                    .unwrap_or_default(),
                // The text first (it names each image with a marker), then the images: adapters of
                // providers that take no images in tool results pass them the way the provider can.
                content: std::iter::once(ToolResultPart::Text {
                    text: tool.content.clone(),
                })
                .chain(tool.images.iter().map(|image| ToolResultPart::Image {
                    source: MediaSource::Base64 {
                        media_type: image.media_type.clone(),
                        data: image.data.clone(),
                    },
                }))
                .collect(),
                is_error: false,
            })),
            ContextMessage::ToolApproval(_) => {}
        }
    }
}

fn user_parts(content: &ContextUserContent) -> Vec<UserPart> {
    match content {
        ContextUserContent::Text(text) => vec![UserPart::Text { text: text.clone() }],
        ContextUserContent::Parts(parts) => parts
            .iter()
            .filter_map(|part| match part {
                ContextContentPart::Text { text } => Some(UserPart::Text { text: text.clone() }),
                ContextContentPart::ImageUrl { image_url } => Some(UserPart::Image {
                    source: media_source(&image_url.url),
                    detail: image_url.detail.clone(),
                }),
                ContextContentPart::File { file } => file.file_data.as_ref().map(|data| UserPart::File {
                    source: media_source(data),
                    filename: file.filename.clone(),
                }),
                // No adapter takes audio input yet; it is kept in the context, not sent.
                ContextContentPart::InputAudio { .. } => None,
            })
            .collect(),
    }
}

/// A `data:<type>;base64,<payload>` URI as inline data, anything else as a URL.
fn media_source(uri: &str) -> MediaSource {
    if let Some(rest) = uri.strip_prefix("data:")
        && let Some((media_type, data)) = rest.split_once(";base64,")
    {
        return MediaSource::Base64 {
            media_type: media_type.to_owned(),
            data: data.to_owned(),
        };
    }
    MediaSource::Url { url: uri.to_owned() }
}

fn assistant_message(assistant: &ContextAssistantMessage, source: &str, origin: &Origin) -> AssistantMessage {
    let same_source = assistant.source.as_deref() == Some(source);
    let text = match &assistant.content {
        Some(Some(AssistantContent::Text(text))) => text.clone(),
        Some(Some(content)) => content.text(),
        _ => String::new(),
    };
    let reasoning = if same_source {
        assistant
            .thinking_blocks
            .iter()
            .flatten()
            .filter_map(|block| serde_json::from_value::<ReasoningBlock>(block.clone()).ok())
            .collect()
    } else {
        Vec::new()
    };
    AssistantMessage {
        text,
        reasoning,
        tool_calls: assistant
            .tool_calls()
            .iter()
            .map(|call| ToolCall {
                id: call.id.clone(),
                name: call.function.name.clone(),
                arguments: call.function.arguments.clone(),
                provider_data: call.provider_specific_fields.clone().map(Value::Object),
            })
            .collect(),
        origin: same_source.then(|| origin.clone()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use trueforge_llm::WireApi;

    use super::*;

    fn origin(model: &str) -> Origin {
        Origin {
            provider: WireApi::ChatCompletions,
            model: model.to_owned(),
        }
    }

    fn conversation(turns: usize) -> Vec<ContextMessage> {
        (0..turns)
            .flat_map(|n| {
                [
                    ContextMessage::user_text(format!("question {n}")),
                    ContextMessage::assistant_text(format!("answer {n}")),
                    ContextMessage::tool_result(format!("call-{n}"), format!("result {n}")),
                ]
            })
            .collect()
    }

    #[test]
    fn kept_conversions_follow_a_growing_context_and_start_over_when_it_is_replaced() {
        let target = origin("m");
        let mut context = conversation(2);
        let mut kept = ModelMessages::default();
        kept.update(&context, "m", &target);
        let seed = [Message::user_text("seed")];
        let lent = kept.lend(&seed);
        assert_eq!(lent.len(), 7);
        assert_eq!(lent[0], seed[0]);
        assert_eq!(lent[1..], to_model_messages(&context, "m", &target)[..]);
        kept.give_back(lent, seed.len());

        context.extend(conversation(1));
        kept.update(&context, "m", &target);
        assert_eq!(kept.lend(&[]), to_model_messages(&context, "m", &target));
        // Not given back: the next update converts everything again.
        context.push(ContextMessage::user_text("more"));
        kept.update(&context, "m", &target);
        let lent = kept.lend(&[]);
        assert_eq!(lent, to_model_messages(&context, "m", &target));
        // Given back with the wrong count of seed messages: forgotten, not misaligned.
        kept.give_back(lent, 1);
        kept.update(&context, "m", &target);
        assert_eq!(kept.lend(&[]), to_model_messages(&context, "m", &target));

        // Another model, or a shorter (replaced) context: converted anew.
        let other = origin("other");
        kept.update(&context, "other", &other);
        let lent = kept.lend(&[]);
        assert_eq!(lent, to_model_messages(&context, "other", &other));
        kept.give_back(lent, 0);
        let replaced = vec![ContextMessage::user_text("summary")];
        kept.update(&replaced, "other", &other);
        assert_eq!(kept.lend(&[]), to_model_messages(&replaced, "other", &other));
    }
}
