//! Context compaction, as pure functions: the transcript a summariser reads, the prompt it follows, the
//! context that replaces the old one, and the fallback that frees space when summarising fails. The loop
//! does the model call and the store write; the old bodies stay readable through recall.

use trueforge_protocol::{
    ApprovalDecision, AssistantContent, AssistantContentPart, ContextAssistantMessage, ContextContentPart,
    ContextMessage, ContextToolMessage, ContextUserContent,
};

use super::text::{estimate_tokens, truncate_with};

const INTERNAL_OPEN: &str = "<tf-internal>";
const INTERNAL_CLOSE: &str = "</tf-internal>";

/// Characters of one tool result the transcript keeps; the rest is recallable by the call's id.
const TRANSCRIPT_TOOL_RESULT_CHARS: usize = 4_000;

/// The most recent tool rows the fallback leaves intact: the agent is most likely still working with them.
const KEEP_RECENT_TOOL_ROWS: usize = 2;

/// The summariser's instructions; they read the same as a system prompt or as a message after the transcript.
pub const SUMMARY_INSTRUCTIONS: &str = "\
You are given a transcript of the conversation so far between a user and an AI agent, including the tools the \
agent called and what they returned. The transcript is about to be removed from the agent's working memory and \
replaced by your summary. Write that summary so the agent can carry on as if it had never lost the transcript.

Include, in this order:
1. Goal: what the user wants overall and in the latest request, with every requirement, preference and \
constraint they stated. Quote the user's messages word for word when they are short; paraphrase long ones \
closely.
2. Decisions: what was decided or agreed, by whom, and why.
3. Findings: the facts and results obtained so far, with the exact identifiers, numbers, names, dates, \
links and values the agent will need again. Do not round or generalise them.
4. Tool use: the tool calls worth remembering, with their important arguments and what they returned, \
including each call's id so the full output can be read again.
5. Problems: errors and failed attempts, and how each was resolved or why it is still open.
6. Open questions: anything unresolved or waiting on the user.
7. Next: what remains to be done, and the immediate next step the agent was about to take.

Leave out sections that would be empty. Prefer precise detail over brevity where the details matter, and \
drop pleasantries and repetition. If the user said what a summary should keep, follow that as \
well. Write only the summary: no preamble, no closing remarks.";

/// The note after a summary, telling the agent how to treat it.
pub const CONTINUATION_NOTE: &str = "The message above is a summary of the earlier part of this conversation, \
which was condensed to save space. Continue the work from where it left off. Do not redo work the summary \
reports as done; use its results directly. When you need exact details the summary leaves out, the original \
messages and tool outputs are still readable with search_history and read_history.";

/// Marks text as the harness's own, not the user's: clients hide it and transcripts skip it.
pub fn internal(text: &str) -> String {
    format!("{INTERNAL_OPEN}{text}{INTERNAL_CLOSE}")
}

/// Whether `text` was written by the harness (see [`internal`]).
pub fn is_internal(text: &str) -> bool {
    text.trim_start().starts_with(INTERNAL_OPEN)
}

/// The context that replaces a compacted one: the summary, then the continuation note.
pub fn compacted_context(summary: &str) -> Vec<ContextMessage> {
    vec![
        ContextMessage::assistant_text(summary),
        ContextMessage::user_text(internal(CONTINUATION_NOTE)),
    ]
}

/// A readable transcript of `context` for the summariser. Reasoning and harness notes are left out; long
/// tool results are cut, with a pointer to where the full text can be read back.
pub fn build_transcript(context: &[ContextMessage]) -> String {
    let mut blocks: Vec<String> = Vec::new();
    for message in context {
        match message {
            ContextMessage::User(user) => {
                let text = user_text(&user.content);
                if !is_internal(&text) {
                    blocks.push(format!("USER: {text}"));
                }
            }
            ContextMessage::Assistant(assistant) => push_assistant(assistant, &mut blocks),
            ContextMessage::Tool(tool) => blocks.push(tool_result(tool)),
            ContextMessage::ToolApproval(row) => blocks.push(match &row.approval {
                ApprovalDecision::Allow { .. } => format!("APPROVAL [{}]: the user allowed the call", row.tool_call_id),
                ApprovalDecision::Deny { reason: None } => {
                    format!("APPROVAL [{}]: the user denied the call", row.tool_call_id)
                }
                ApprovalDecision::Deny { reason: Some(reason) } => {
                    format!("APPROVAL [{}]: the user denied the call: {reason}", row.tool_call_id)
                }
            }),
        }
    }
    blocks.join("\n\n")
}

fn user_text(content: &ContextUserContent) -> String {
    match content {
        ContextUserContent::Text(text) => text.clone(),
        ContextUserContent::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                ContextContentPart::Text { text } => text.clone(),
                ContextContentPart::ImageUrl { image_url } if !image_url.url.starts_with("data:") => {
                    format!("[attachment: image {}]", image_url.url)
                }
                ContextContentPart::ImageUrl { .. } => "[attachment: image]".to_owned(),
                ContextContentPart::InputAudio { input_audio } => {
                    format!("[attachment: audio ({})]", input_audio.format)
                }
                ContextContentPart::File { file } => match &file.filename {
                    Some(name) => format!("[attachment: file {name}]"),
                    None => "[attachment: file]".to_owned(),
                },
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn push_assistant(message: &ContextAssistantMessage, blocks: &mut Vec<String>) {
    match &message.content {
        Some(Some(AssistantContent::Text(text))) if !text.trim().is_empty() => {
            blocks.push(format!("ASSISTANT: {text}"));
        }
        Some(Some(AssistantContent::Parts(parts))) => {
            for part in parts {
                match part {
                    AssistantContentPart::Text { text } if !text.trim().is_empty() => {
                        blocks.push(format!("ASSISTANT: {text}"));
                    }
                    AssistantContentPart::Refusal { refusal } => {
                        blocks.push(format!("ASSISTANT (refused): {refusal}"));
                    }
                    AssistantContentPart::Text { .. } => {}
                }
            }
        }
        _ => {}
    }
    if let Some(Some(refusal)) = &message.refusal {
        blocks.push(format!("ASSISTANT (refused): {refusal}"));
    }
    for call in message.tool_calls() {
        blocks.push(format!(
            "TOOL CALL [{}]: {}({})",
            call.id, call.function.name, call.function.arguments
        ));
    }
}

fn tool_result(tool: &ContextToolMessage) -> String {
    let marker = format!(
        "\n[… cut here; the full text is recallable with read_history tool_call_id={}]",
        tool.tool_call_id
    );
    let content = truncate_with(&tool.content, TRANSCRIPT_TOOL_RESULT_CHARS, &marker);
    format!("TOOL RESULT [{}]: {content}", tool.tool_call_id)
}

fn removed_note(tool_call_id: &str) -> String {
    format!("[output removed to save context; read it with read_history tool_call_id={tool_call_id}]")
}

/// What [`drop_oldest_tool_outputs`] made of a context.
#[derive(Debug, Clone, PartialEq)]
pub struct CutToolOutputs {
    pub context: Vec<ContextMessage>,
    /// Estimated tokens freed; may fall short of what was asked when there was not enough to remove.
    pub freed: u64,
    /// How many tool rows lost their output.
    pub rows: usize,
}

/// Frees context when summarising is not possible: replaces the content of the oldest tool rows (all but
/// the most recent two) with a note saying how to read them back, oldest first, until at least
/// `tokens_to_free` estimated tokens are freed. The original stays in `full_content`, so recall still has it.
/// `None` when nothing could be freed.
pub fn drop_oldest_tool_outputs(context: &[ContextMessage], tokens_to_free: u64) -> Option<CutToolOutputs> {
    let tool_rows: Vec<usize> = context
        .iter()
        .enumerate()
        .filter(|(_, message)| matches!(message, ContextMessage::Tool(_)))
        .map(|(index, _)| index)
        .collect();
    let eligible = tool_rows.len().saturating_sub(KEEP_RECENT_TOOL_ROWS);
    let mut result = context.to_vec();
    let mut freed = 0_u64;
    let mut rows = 0_usize;
    for &index in &tool_rows[..eligible] {
        if freed >= tokens_to_free {
            break;
        }
        let Some(ContextMessage::Tool(row)) = result.get_mut(index) else {
            continue;
        };
        let note = removed_note(&row.tool_call_id);
        // Old images go with their text: they are the most expensive part of an old result.
        let saving = estimate_tokens(&row.content).saturating_sub(estimate_tokens(&note))
            + row.images.len() as u64 * trueforge_llm::tokens::IMAGE_TOKEN_ESTIMATE;
        if saving == 0 {
            continue;
        }
        let original = std::mem::replace(&mut row.content, note);
        row.full_content.get_or_insert(original);
        row.images.clear();
        freed += saving;
        rows += 1;
    }
    (freed > 0).then_some(CutToolOutputs {
        context: result,
        freed,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use trueforge_protocol::{
        ContextToolApproval, ContextToolCall, ContextUserMessage, FileData, ImageUrl, InputAudio,
    };

    use super::*;

    fn call(id: &str, name: &str, arguments: &str) -> ContextToolCall {
        ContextToolCall::new(id, name, arguments)
    }

    fn tool_row(context: &[ContextMessage], index: usize) -> &ContextToolMessage {
        match &context[index] {
            ContextMessage::Tool(row) => row,
            other => panic!("not a tool row: {other:?}"),
        }
    }

    #[test]
    fn internal_text_is_wrapped_and_recognised() {
        assert_eq!(internal("note"), "<tf-internal>note</tf-internal>");
        assert!(is_internal(&internal("note")));
        assert!(is_internal("  <tf-internal>x"));
        assert!(!is_internal("plain <tf-internal>"));
    }

    #[test]
    fn compacted_context_is_the_summary_then_an_internal_note() {
        let context = compacted_context("We found 3 bugs.");
        assert_eq!(
            context,
            vec![
                ContextMessage::assistant_text("We found 3 bugs."),
                ContextMessage::user_text(format!("<tf-internal>{CONTINUATION_NOTE}</tf-internal>")),
            ]
        );
        assert!(CONTINUATION_NOTE.contains("read_history"));
    }

    #[test]
    fn transcript_renders_every_kind_of_row() {
        let context = vec![
            ContextMessage::user_text("Check the logs of service A."),
            ContextMessage::user_text(internal("harness note")),
            ContextMessage::User(ContextUserMessage {
                content: ContextUserContent::Parts(vec![
                    ContextContentPart::Text {
                        text: "See these:".into(),
                    },
                    ContextContentPart::ImageUrl {
                        image_url: ImageUrl {
                            url: "data:image/png;base64,AAAA".into(),
                            detail: None,
                        },
                    },
                    ContextContentPart::ImageUrl {
                        image_url: ImageUrl {
                            url: "https://example.com/a.png".into(),
                            detail: None,
                        },
                    },
                    ContextContentPart::InputAudio {
                        input_audio: InputAudio {
                            data: "AAAA".into(),
                            format: "wav".into(),
                        },
                    },
                    ContextContentPart::File {
                        file: FileData {
                            filename: Some("report.pdf".into()),
                            ..FileData::default()
                        },
                    },
                ]),
            }),
            ContextMessage::Assistant(ContextAssistantMessage {
                content: Some(Some(AssistantContent::Text("Looking.".into()))),
                reasoning_content: Some("secret thoughts".into()),
                tool_calls: Some(vec![call("call_1", "read_logs", r#"{"service":"A"}"#)]),
                ..ContextAssistantMessage::default()
            }),
            ContextMessage::ToolApproval(ContextToolApproval {
                tool_call_id: "call_1".into(),
                approval: ApprovalDecision::allow(),
            }),
            ContextMessage::tool_result("call_1", "ERROR disk full"),
            ContextMessage::ToolApproval(ContextToolApproval {
                tool_call_id: "call_2".into(),
                approval: ApprovalDecision::Deny {
                    reason: Some("not now".into()),
                },
            }),
            ContextMessage::Assistant(ContextAssistantMessage {
                content: Some(Some(AssistantContent::Parts(vec![
                    AssistantContentPart::Text { text: "Done.".into() },
                    AssistantContentPart::Refusal {
                        refusal: "Will not delete.".into(),
                    },
                ]))),
                ..ContextAssistantMessage::default()
            }),
        ];
        assert_eq!(
            build_transcript(&context),
            "USER: Check the logs of service A.\n\n\
             USER: See these:\n[attachment: image]\n[attachment: image https://example.com/a.png]\n\
             [attachment: audio (wav)]\n[attachment: file report.pdf]\n\n\
             ASSISTANT: Looking.\n\n\
             TOOL CALL [call_1]: read_logs({\"service\":\"A\"})\n\n\
             APPROVAL [call_1]: the user allowed the call\n\n\
             TOOL RESULT [call_1]: ERROR disk full\n\n\
             APPROVAL [call_2]: the user denied the call: not now\n\n\
             ASSISTANT: Done.\n\n\
             ASSISTANT (refused): Will not delete."
        );
    }

    #[test]
    fn transcript_cuts_long_tool_results_on_character_boundaries() {
        let long = "€".repeat(TRANSCRIPT_TOOL_RESULT_CHARS + 10);
        let exact = "x".repeat(TRANSCRIPT_TOOL_RESULT_CHARS);
        let transcript = build_transcript(&[
            ContextMessage::tool_result("call_7", long),
            ContextMessage::tool_result("call_8", exact.clone()),
        ]);
        let (first, second) = transcript.split_once("\n\n").unwrap();
        assert_eq!(
            first,
            format!(
                "TOOL RESULT [call_7]: {}\n[… cut here; the full text is recallable with read_history \
                 tool_call_id=call_7]",
                "€".repeat(TRANSCRIPT_TOOL_RESULT_CHARS)
            )
        );
        assert_eq!(second, format!("TOOL RESULT [call_8]: {exact}"));
    }

    #[test]
    fn summary_instructions_cover_what_the_agent_needs() {
        for needle in [
            "word for word",
            "identifiers",
            "errors",
            "Open questions",
            "immediate next step",
            "no preamble",
        ] {
            assert!(SUMMARY_INSTRUCTIONS.contains(needle), "{needle}");
        }
    }

    #[test]
    fn drops_the_oldest_tool_outputs_first_and_keeps_the_last_two() {
        let big = "a".repeat(4_000); // 1,000 tokens
        let context = vec![
            ContextMessage::user_text("go"),
            ContextMessage::tool_result("c1", big.clone()),
            ContextMessage::tool_result("c2", big.clone()),
            ContextMessage::assistant_text("thinking"),
            ContextMessage::tool_result("c3", big.clone()),
            ContextMessage::tool_result("c4", big.clone()),
        ];
        let note_tokens = estimate_tokens(&removed_note("c1"));

        let cut = drop_oldest_tool_outputs(&context, 500).unwrap();
        assert_eq!(cut.freed, 1_000 - note_tokens);
        assert_eq!(cut.rows, 1);
        assert_eq!(tool_row(&cut.context, 1).content, removed_note("c1"));
        assert_eq!(tool_row(&cut.context, 1).full_content.as_deref(), Some(big.as_str()));
        assert_eq!(&cut.context[2..], &context[2..]);

        // Asking for more than the eligible rows hold frees what it can, never the last two rows.
        let cut = drop_oldest_tool_outputs(&context, 1_000_000).unwrap();
        assert_eq!(cut.freed, 2 * (1_000 - note_tokens));
        assert_eq!(cut.rows, 2);
        assert_eq!(tool_row(&cut.context, 2).content, removed_note("c2"));
        assert_eq!(&cut.context[3..], &context[3..]);
    }

    #[test]
    fn an_existing_full_content_is_kept() {
        let mut shortened = ContextToolMessage {
            tool_call_id: "c1".into(),
            content: "preview ".repeat(100),
            full_content: Some("the complete original".into()),
            images: Vec::new(),
        };
        let context = vec![
            ContextMessage::Tool(shortened.clone()),
            ContextMessage::tool_result("c2", "x"),
            ContextMessage::tool_result("c3", "y"),
        ];
        let cut = drop_oldest_tool_outputs(&context, 1).unwrap();
        shortened.content = removed_note("c1");
        assert_eq!(cut.context[0], ContextMessage::Tool(shortened));
    }

    #[test]
    fn nothing_to_free_gives_none() {
        let context = vec![
            ContextMessage::tool_result("c1", "a".repeat(10_000)),
            ContextMessage::tool_result("c2", "b".repeat(10_000)),
        ];
        assert_eq!(
            drop_oldest_tool_outputs(&context, 100),
            None,
            "only the protected two rows"
        );
        let small = vec![
            ContextMessage::tool_result("c1", "tiny"),
            ContextMessage::tool_result("c2", "x"),
            ContextMessage::tool_result("c3", "y"),
        ];
        assert_eq!(
            drop_oldest_tool_outputs(&small, 100),
            None,
            "removing would not save anything"
        );
        // A row already replaced by its note is not counted again.
        let mixed = [vec![ContextMessage::tool_result("c0", "z".repeat(1_000))], small].concat();
        let once = drop_oldest_tool_outputs(&mixed, 1_000_000).unwrap();
        assert!(once.freed > 0);
        assert_eq!(once.rows, 1);
        assert_eq!(drop_oldest_tool_outputs(&once.context, 1_000_000), None);
        assert_eq!(drop_oldest_tool_outputs(&[], 100), None);
        assert_eq!(drop_oldest_tool_outputs(&context, 0), None);
    }
}
