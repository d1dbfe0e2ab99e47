//! Recall: reading back the thread's full history. Compaction and large-output shortening only change what
//! the model is sent; the store keeps every body, and these tools let the agent search and read them.

use std::sync::Arc;

use serde_json::{Value, json};
use trueforge_protocol::ContextMessage;
use trueforge_store::SessionStore;
use trueforge_store::session::model::HistoryEntry;

use super::args::{object, optional_integer, optional_text, required_text};
use super::text::char_range;
use crate::tools::{LocalTool, LocalToolSet, ToolContext, ToolOutput, ToolSpec};

const DEFAULT_SEARCH_LIMIT: u64 = 10;
const MAX_SEARCH_LIMIT: u64 = 50;
/// Characters of context shown around a search hit.
const SNIPPET_CHARS: usize = 300;
/// How far before the first match a snippet starts, so the hit is read in its sentence.
const SNIPPET_LEAD_CHARS: usize = 100;
const DEFAULT_READ_CHARS: u64 = 20_000;
const MAX_READ_CHARS: u64 = 50_000;

/// The name (and id) of the recall tool set.
pub const RECALL_SET: &str = "recall";

/// The `recall` set: `search_history` and `read_history` over the current thread, read from `store`.
pub fn recall_tools(store: Arc<dyn SessionStore>) -> LocalToolSet {
    let search_store = store.clone();
    let search = ToolSpec::new(
        "search_history",
        "Search this conversation, summarised and shortened parts included, for entries with every word of \
         `query` (case-insensitive). Returns message_ids with snippets.",
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_LIMIT,
                    "description": "Default 10."
                }
            },
            "required": ["query"],
            "additionalProperties": false
        }),
    );
    let read = ToolSpec::new(
        "read_history",
        "Read an earlier entry in full, by message_id or, for a tool result, tool_call_id. Long texts come in \
         parts: pass `offset` to continue.",
        json!({
            "type": "object",
            "properties": {
                "message_id": {"type": "integer"},
                "tool_call_id": {"type": "string"},
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "In characters, default 0."
                },
                "max_chars": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_READ_CHARS,
                    "description": "Default 20000."
                }
            },
            "additionalProperties": false
        }),
    );
    LocalToolSet::system(
        RECALL_SET,
        vec![
            LocalTool::new(search, move |arguments, cx| {
                let store = search_store.clone();
                async move {
                    Ok(search_history(store.as_ref(), &arguments, &cx)
                        .await
                        .unwrap_or_else(ToolOutput::error))
                }
            }),
            LocalTool::new(read, move |arguments, cx| {
                let store = store.clone();
                async move {
                    Ok(read_history(store.as_ref(), &arguments, &cx)
                        .await
                        .unwrap_or_else(ToolOutput::error))
                }
            }),
        ],
    )
}

/// The instruction section telling the agent that nothing it saw is lost.
pub fn recall_instructions() -> String {
    "Older parts of this conversation may be summarised and large tool outputs shortened, but nothing is \
     lost: `search_history` finds the original text and `read_history` reads it. Check there before relying \
     on details a summary or shortened output does not show."
        .to_owned()
}

async fn search_history(store: &dyn SessionStore, arguments: &Value, cx: &ToolContext) -> Result<ToolOutput, String> {
    let args = object(arguments)?;
    let query = required_text(args, "query")?;
    let limit = optional_integer(args, "limit", 1, MAX_SEARCH_LIMIT)?.unwrap_or(DEFAULT_SEARCH_LIMIT);
    let limit = u32::try_from(limit).unwrap_or(u32::MAX);
    let hits = store
        .search_thread_history(&cx.turn, &cx.thread_id, query, limit)
        .await
        .map_err(|error| format!("Searching the conversation history failed: {error}"))?;
    if hits.is_empty() {
        return Ok(ToolOutput::text(format!(
            "No earlier message contains all the words of \"{query}\"."
        )));
    }
    let listed: Vec<String> = hits.iter().map(|entry| describe_hit(entry, query)).collect();
    Ok(ToolOutput::text(format!(
        "{} matching entries, oldest first. Read one in full with read_history message_id=<id>.\n\n{}",
        hits.len(),
        listed.join("\n\n")
    )))
}

fn describe_hit(entry: &HistoryEntry, query: &str) -> String {
    let mut header = format!("message_id={} | {}", entry.message_id, kind(&entry.message));
    if let ContextMessage::Tool(row) = &entry.message {
        header.push_str(&format!(" | tool_call_id={}", row.tool_call_id));
        if row.full_content.is_some() {
            header.push_str(" | shortened in context, full text readable");
        }
    }
    header.push_str(if entry.active {
        " | in the current context"
    } else {
        " | no longer in the context"
    });
    format!("{header}\n{}", snippet(&full_text(&entry.message), query))
}

fn kind(message: &ContextMessage) -> &'static str {
    match message {
        ContextMessage::User(_) => "user message",
        ContextMessage::Assistant(_) => "assistant message",
        ContextMessage::Tool(_) => "tool result",
        ContextMessage::ToolApproval(_) => "approval decision",
    }
}

/// The text recall shows for an entry: a tool row's complete output, any other row's searchable text.
fn full_text(message: &ContextMessage) -> String {
    match message {
        ContextMessage::Tool(row) => row.full_content.clone().unwrap_or_else(|| row.content.clone()),
        other => other.search_text(),
    }
}

/// Up to [`SNIPPET_CHARS`] characters around the first occurrence of any word of `query`.
fn snippet(text: &str, query: &str) -> String {
    // Compare characters one to one (first lowercase form), so a character position in the folded text is
    // the same position in the original.
    let fold = |text: &str| -> Vec<char> { text.chars().map(|c| c.to_lowercase().next().unwrap_or(c)).collect() };
    let haystack = fold(text);
    // Words as the store tokenises them: runs of letters and digits.
    let first_match = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .filter_map(|word| {
            let needle = fold(word);
            haystack
                .windows(needle.len())
                .position(|window| window == needle.as_slice())
        })
        .min()
        .unwrap_or(0);
    let start = first_match.saturating_sub(SNIPPET_LEAD_CHARS);
    let piece = char_range(text, start, SNIPPET_CHARS);
    let before = if start > 0 { "…" } else { "" };
    let after = if start + SNIPPET_CHARS < haystack.len() {
        "…"
    } else {
        ""
    };
    format!(
        "{before}{}{after}",
        piece.split_whitespace().collect::<Vec<_>>().join(" ")
    )
}

async fn read_history(store: &dyn SessionStore, arguments: &Value, cx: &ToolContext) -> Result<ToolOutput, String> {
    let args = object(arguments)?;
    let message_id = match args.get("message_id") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_i64().ok_or("`message_id` must be a whole number.")?),
    };
    let tool_call_id = optional_text(args, "tool_call_id")?;
    if message_id.is_none() && tool_call_id.is_none() {
        return Err("Give `message_id` (from search_history) or `tool_call_id` (of a tool result).".to_owned());
    }
    let offset = optional_integer(args, "offset", 0, u64::MAX)?.unwrap_or(0);
    let max_chars = optional_integer(args, "max_chars", 1, MAX_READ_CHARS)?.unwrap_or(DEFAULT_READ_CHARS);

    let history = store
        .thread_history(&cx.turn, &cx.thread_id)
        .await
        .map_err(|error| format!("Reading the conversation history failed: {error}"))?;
    // The latest match wins: when a tool row was rewritten (its output removed to save space), the newest body
    // is the one that carries the complete output in `full_content`.
    let entry = history
        .iter()
        .rev()
        .find(|entry| {
            message_id.is_none_or(|id| entry.message_id == id)
                && tool_call_id
                    .is_none_or(|id| matches!(&entry.message, ContextMessage::Tool(row) if row.tool_call_id == id))
        })
        .ok_or_else(|| not_found(message_id, tool_call_id))?;
    slice_entry(entry, offset, max_chars)
}

fn not_found(message_id: Option<i64>, tool_call_id: Option<&str>) -> String {
    match (message_id, tool_call_id) {
        (Some(id), Some(call)) => format!("No entry has message_id={id} and tool_call_id={call}."),
        (Some(id), None) => format!("No entry has message_id={id}."),
        (None, Some(call)) => format!("No tool result has tool_call_id={call}."),
        (None, None) => "No entry was named.".to_owned(),
    }
}

fn slice_entry(entry: &HistoryEntry, offset: u64, max_chars: u64) -> Result<ToolOutput, String> {
    let text = full_text(&entry.message);
    let total = text.chars().count();
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    if start > total || (start == total && total > 0) {
        return Err(format!(
            "`offset` {offset} is past the end: the text has {total} characters."
        ));
    }
    let len = usize::try_from(max_chars).unwrap_or(usize::MAX);
    let part = char_range(&text, start, len);
    let end = start + part.chars().count();
    let mut label = format!("message_id={}, {}", entry.message_id, kind(&entry.message));
    if let ContextMessage::Tool(row) = &entry.message {
        label.push_str(&format!(", tool_call_id={}", row.tool_call_id));
    }
    let next = if end < total {
        format!(
            "More follows: read it with read_history message_id={} offset={end}.",
            entry.message_id
        )
    } else {
        "This is the end of the text.".to_owned()
    };
    Ok(ToolOutput::text(format!(
        "[{label}: {total} characters in total; characters {start}..{end} below. {next}]\n\n{part}"
    )))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use trueforge_protocol::{
        ContextAssistantMessage, ContextToolCall, ContextToolMessage, CurrentContextUsage, SessionAgent,
    };
    use trueforge_store::session::model::{ContextAppend, NewSession, NewThread, NewTurn, TurnKey};
    use trueforge_store::{MemorySessionStore, SessionStore};

    use super::*;
    use crate::capabilities::test_support::{call_in, context_with, error_text, ok_text};

    const THREAD: &str = "main";

    fn tool_call(id: &str, name: &str, arguments: &str) -> ContextMessage {
        ContextMessage::Assistant(ContextAssistantMessage {
            tool_calls: Some(vec![ContextToolCall::new(id, name, arguments)]),
            ..ContextAssistantMessage::default()
        })
    }

    /// A long tool output: 2,000 lines of mixed-width characters and a marker word in the middle.
    fn weather_report() -> String {
        let mut lines: Vec<String> = (0..2000).map(|n| format!("line {n:04} température 20°C ☀")).collect();
        lines[1000].push_str(" anticyclone");
        lines.join("\n")
    }

    /// The store the recall tools read and the context of their calls.
    struct Fixture {
        store: Arc<dyn SessionStore>,
        tool: ToolContext,
    }

    /// A running turn whose `main` thread holds a question, a tool call and its long result, and an answer;
    /// then compacts the thread to a summary, keeping a shortened copy of the tool row.
    async fn compacted_thread() -> Fixture {
        let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
        let agent: SessionAgent = serde_json::from_value(json!({
            "type": "inline",
            "spec": {"model": {"name": "test-provider/test-model"}, "instructions": "be helpful"}
        }))
        .unwrap();
        store
            .create_session(NewSession {
                tenant_id: "t1".into(),
                session_id: "s1".into(),
                agent,
                created_by: "user-1".into(),
                custom: None,
            })
            .await
            .unwrap();
        store
            .create_turn(NewTurn {
                tenant_id: "t1".into(),
                session_id: "s1".into(),
                turn_id: "turn-1".into(),
                previous_turn_id: None,
                input: Vec::new(),
                custom: None,
                new_threads: vec![NewThread {
                    thread_id: THREAD.into(),
                    parent: None,
                    agent_info: None,
                }],
                context_appends: vec![ContextAppend {
                    thread_id: THREAD.into(),
                    messages: vec![
                        ContextMessage::user_text("What is the weather in Paris?"),
                        tool_call("call_1", "get_weather", r#"{"city":"Paris"}"#),
                        ContextMessage::tool_result("call_1", weather_report()),
                        ContextMessage::assistant_text("Sunny in Paris, thanks to an anticyclone."),
                    ],
                    current_context_usage: None,
                }],
                capability_states: vec![(THREAD.into(), None)],
                title_if_unset: None,
                lease: None,
                events: Vec::new(),
                idempotency: None,
            })
            .await
            .unwrap();
        let turn = TurnKey::new("t1", "s1", "turn-1");
        store
            .overwrite_thread_context(
                &turn,
                &THREAD.into(),
                Vec::new(),
                vec![
                    ContextMessage::assistant_text("Summary: the user asked about Paris weather; it is sunny."),
                    ContextMessage::Tool(ContextToolMessage {
                        tool_call_id: "call_1".into(),
                        content: "[output removed]".into(),
                        full_content: Some(weather_report()),
                        images: Vec::new(),
                    }),
                ],
                CurrentContextUsage {
                    prompt_tokens: 10,
                    completion_tokens: 0,
                },
            )
            .await
            .unwrap();
        Fixture {
            store,
            tool: context_with(turn, THREAD),
        }
    }

    async fn search(cx: &Fixture, arguments: Value) -> ToolOutput {
        call_in(&recall_tools(cx.store.clone()), "search_history", arguments, &cx.tool).await
    }

    async fn read(cx: &Fixture, arguments: Value) -> ToolOutput {
        call_in(&recall_tools(cx.store.clone()), "read_history", arguments, &cx.tool).await
    }

    #[tokio::test]
    async fn search_lists_hits_with_ids_kinds_and_snippets() {
        let cx = compacted_thread().await;
        let text = ok_text(&search(&cx, json!({"query": "Paris"})).await);
        assert!(text.starts_with("4 matching entries, oldest first."), "{text}");
        assert!(text.contains("message_id=1 | user message | no longer in the context\nWhat is the weather in Paris?"));
        assert!(text.contains("assistant message | no longer in the context\nget_weather {\"city\":\"Paris\"}"));
        assert!(text.contains("assistant message | in the current context\nSummary: the user asked about Paris"));

        let text = ok_text(&search(&cx, json!({"query": "anticyclone"})).await);
        assert!(text.contains("tool result | tool_call_id=call_1 | no longer in the context\n…"));
        assert!(text.contains(
            "tool result | tool_call_id=call_1 | shortened in context, full text readable | in the current context\n…"
        ));
        assert!(text.contains("line 1000 température 20°C ☀ anticyclone"));
        // Every snippet stays within its bound (plus the ellipses).
        for snippet in text
            .split("\n\n")
            .skip(1)
            .map(|hit| hit.lines().skip(1).collect::<String>())
        {
            assert!(snippet.chars().count() <= SNIPPET_CHARS + 2, "{snippet}");
        }
    }

    #[tokio::test]
    async fn search_respects_the_limit_and_reports_no_hits() {
        let cx = compacted_thread().await;
        let text = ok_text(&search(&cx, json!({"query": "Paris", "limit": 1})).await);
        assert!(text.starts_with("1 matching entries"), "{text}");
        let text = ok_text(&search(&cx, json!({"query": "snow"})).await);
        assert_eq!(text, "No earlier message contains all the words of \"snow\".");

        for limit in [json!(0), json!(51), json!("5")] {
            let output = search(&cx, json!({"query": "Paris", "limit": limit})).await;
            assert_eq!(error_text(&output), "`limit` must be a whole number from 1 to 50.");
        }
        assert_eq!(error_text(&search(&cx, json!({})).await), "`query` is required.");
        // A query with no words is refused by the store; the failure reaches the model.
        let output = search(&cx, json!({"query": "?!"})).await;
        assert!(error_text(&output).starts_with("Searching the conversation history failed"));
    }

    #[tokio::test]
    async fn reads_an_entry_by_message_id() {
        let cx = compacted_thread().await;
        let text = ok_text(&read(&cx, json!({"message_id": 1})).await);
        assert_eq!(
            text,
            "[message_id=1, user message: 29 characters in total; characters 0..29 below. This is the end of \
             the text.]\n\nWhat is the weather in Paris?"
        );
    }

    #[tokio::test]
    async fn reads_the_latest_tool_row_in_parts() {
        let cx = compacted_thread().await;
        let report = weather_report();
        let total = report.chars().count();
        let history = cx.store.thread_history(&cx.tool.turn, &THREAD.into()).await.unwrap();
        let latest = history
            .iter()
            .rev()
            .find(|entry| matches!(entry.message, ContextMessage::Tool(_)))
            .unwrap()
            .message_id;

        let text = ok_text(&read(&cx, json!({"tool_call_id": "call_1", "max_chars": 1000})).await);
        let (header, body) = text.split_once("\n\n").unwrap();
        assert_eq!(
            header,
            format!(
                "[message_id={latest}, tool result, tool_call_id=call_1: {total} characters in total; characters \
                 0..1000 below. More follows: read it with read_history message_id={latest} offset=1000.]"
            )
        );
        assert_eq!(body, report.chars().take(1000).collect::<String>());

        // The next part starts exactly where the previous ended, across multibyte characters.
        let text = ok_text(&read(&cx, json!({"message_id": latest, "offset": 1000, "max_chars": 7})).await);
        let body = text.split_once("\n\n").unwrap().1;
        assert_eq!(body, report.chars().skip(1000).take(7).collect::<String>());

        let last = total - 5;
        let text = ok_text(&read(&cx, json!({"tool_call_id": "call_1", "offset": last})).await);
        assert!(text.contains(&format!(
            "characters {last}..{total} below. This is the end of the text.]"
        )));
        assert!(text.ends_with(&report.chars().skip(last).collect::<String>()));

        // max_chars above the cap is refused rather than silently flooding the context.
        let output = read(&cx, json!({"tool_call_id": "call_1", "max_chars": 50_001})).await;
        assert_eq!(
            error_text(&output),
            "`max_chars` must be a whole number from 1 to 50000."
        );
        let text = ok_text(&read(&cx, json!({"tool_call_id": "call_1"})).await);
        assert!(text.contains("characters 0..20000 below"));
    }

    #[tokio::test]
    async fn read_errors_are_error_outputs() {
        let cx = compacted_thread().await;
        let cases = [
            (
                json!({}),
                "Give `message_id` (from search_history) or `tool_call_id` (of a tool result).",
            ),
            (
                json!({"offset": 3}),
                "Give `message_id` (from search_history) or `tool_call_id` (of a tool result).",
            ),
            (json!({"message_id": 999}), "No entry has message_id=999."),
            (
                json!({"tool_call_id": "call_9"}),
                "No tool result has tool_call_id=call_9.",
            ),
            (
                json!({"message_id": 1, "tool_call_id": "call_1"}),
                "No entry has message_id=1 and tool_call_id=call_1.",
            ),
            (json!({"message_id": "1"}), "`message_id` must be a whole number."),
            (
                json!({"message_id": 1, "offset": 30}),
                "`offset` 30 is past the end: the text has 29 characters.",
            ),
            (
                json!({"message_id": 1, "offset": -1}),
                "`offset` must be a whole number of at least 0.",
            ),
        ];
        for (arguments, message) in cases {
            assert_eq!(error_text(&read(&cx, arguments.clone()).await), message, "{arguments}");
        }
        let missing_turn = Fixture {
            store: cx.store.clone(),
            tool: context_with(TurnKey::new("t1", "s1", "nope"), THREAD),
        };
        let output = read(&missing_turn, json!({"message_id": 1})).await;
        assert!(error_text(&output).starts_with("Reading the conversation history failed:"));
    }

    #[test]
    fn snippets_centre_on_the_first_match_without_splitting_characters() {
        let text = format!("{}Wörter {}", "é".repeat(500), "ü".repeat(500));
        let snippet = snippet(&text, "wörter");
        assert!(snippet.starts_with('…') && snippet.ends_with('…'));
        assert_eq!(snippet.chars().count(), SNIPPET_CHARS + 2);
        assert!(snippet.starts_with(&format!("…{}Wörter", "é".repeat(SNIPPET_LEAD_CHARS))));
        assert_eq!(self::snippet("short text", "absent"), "short text");
    }

    #[test]
    fn instructions_name_both_tools() {
        let section = recall_instructions();
        assert!(section.contains("search_history") && section.contains("read_history"));
        assert!(section.contains("summary"));
    }
}
