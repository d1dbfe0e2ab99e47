//! Admitting a turn's input into the conversation, before anything is written: check it against what the
//! threads wait for, close calls a crash or cancel left open, and work out every context append. A
//! rejected input writes nothing.
//!
//! A new user message while sub-agents are still unfinished stops them: each of their calls is answered
//! with a note that the user moved on, and the message goes to the root at once. (The reference rejects
//! the message and makes the client send an empty turn first.)

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value};
use trueforge_protocol::{
    AgentThreadSnapshot, ApprovalScope, ContextMessage, ContextToolApproval, ContextToolMessage, ContextUserContent,
    ContextUserMessage, MAIN_THREAD_ID, ThreadId, TurnInputItem, UserContentPart, UserMessageContent,
};

use crate::bookkeeping::{Record, ThreadRecords, ToolRef};
use crate::context::{approval_decisions, awaits_user, open_calls};
use crate::error::{AgentError, InputError};
use crate::tools::error_json;

/// How many characters of the first message become the session title.
pub const TITLE_CHARS: usize = 50;

/// The result of admitting an input.
#[derive(Debug, Default)]
pub struct Admission {
    /// Rows to append, by thread.
    pub appends: BTreeMap<ThreadId, Vec<ContextMessage>>,
    /// Sub-agent threads stopped by a new user message.
    pub stopped_threads: Vec<ThreadId>,
    /// Calls the harness closed (interrupted, never run, or their sub-agent stopped): `(thread, call, result)`.
    /// Each gets a `tool.response` when the turn starts, so clients see every call end.
    pub closed_calls: Vec<(ThreadId, String, String)>,
    /// The capability state of every thread after admission.
    pub capability_states: BTreeMap<ThreadId, Map<String, Value>>,
    pub title: Option<String>,
    /// Tools the input allowed for every session of the agent (scope `agent`), as
    /// `(mcp_server_id, original_tool_name)`. Kept out of the capability state: the agent's store holds
    /// them, so revoking them there reaches this session too.
    pub agent_approvals: Vec<(String, String)>,
}

/// What a call that waited for an approval or an answer gets when the wait timed out and the user moved on.
pub const UNANSWERED_RESULT: &str =
    "The user did not answer in time and sent a new message instead; this call was not executed.";

/// Admits `input` into `threads` (the previous turn's threads, or just an empty root).
pub fn admit(
    threads: &BTreeMap<ThreadId, AgentThreadSnapshot>,
    input: &[TurnInputItem],
) -> Result<Admission, AgentError> {
    admit_with(threads, input, false)
}

/// [`admit`], where `unanswered_expired` says the approvals and questions the conversation waits for have
/// timed out: a user message is then accepted and closes them as not executed.
pub fn admit_with(
    threads: &BTreeMap<ThreadId, AgentThreadSnapshot>,
    input: &[TurnInputItem],
    unanswered_expired: bool,
) -> Result<Admission, AgentError> {
    let mut admission = Admission {
        capability_states: threads
            .iter()
            .map(|(id, thread)| (id.clone(), thread.capability_state.clone().unwrap_or_default()))
            .collect(),
        ..Admission::default()
    };
    let messages: Vec<&UserMessageContent> = input
        .iter()
        .filter_map(|item| match item {
            TurnInputItem::UserMessage(message) => Some(&message.content),
            _ => None,
        })
        .collect();
    if !messages.is_empty() {
        admit_messages(threads, &messages, unanswered_expired, &mut admission)?;
    } else {
        admit_answers(threads, input, &mut admission)?;
    }
    Ok(admission)
}

fn admit_messages(
    threads: &BTreeMap<ThreadId, AgentThreadSnapshot>,
    messages: &[&UserMessageContent],
    unanswered_expired: bool,
    admission: &mut Admission,
) -> Result<(), AgentError> {
    for content in messages {
        if is_blank(content) {
            return Err(InputError::EmptyUserMessage.into());
        }
    }
    let root = threads.get(MAIN_THREAD_ID).ok_or(InputError::NoRootThread)?;
    for thread in threads.values() {
        let decisions = approval_decisions(&thread.context);
        if !unanswered_expired
            && open_calls(&thread.context)
                .iter()
                .any(|call| awaits_user(call, &decisions))
        {
            return Err(InputError::MessageWhilePending.into());
        }
    }
    let children: HashMap<&str, &AgentThreadSnapshot> = threads
        .values()
        .filter_map(|thread| {
            thread
                .parent
                .as_ref()
                .map(|parent| (parent.tool_call_id.as_str(), thread))
        })
        .collect();
    let root_decisions = approval_decisions(&root.context);
    let mut rows = Vec::new();
    for call in open_calls(&root.context) {
        let content = match children.get(call.id.as_str()) {
            None if awaits_user(call, &root_decisions) => UNANSWERED_RESULT.to_owned(),
            Some(child) => {
                admission.stopped_threads.push(child.thread_id.clone());
                error_json(&format!(
                    "The sub-agent '{}' was stopped before it finished because the user sent a new message.",
                    child
                        .agent_info
                        .as_ref()
                        .map_or(child.thread_id.as_str(), |info| info.name.as_str())
                ))
            }
            None => unfinished_call_result(&ThreadRecords::read(root.capability_state.as_ref()), &call.id),
        };
        admission
            .closed_calls
            .push((ThreadId::main(), call.id.clone(), content.clone()));
        rows.push(ContextMessage::Tool(ContextToolMessage {
            tool_call_id: call.id.clone(),
            content,
            full_content: None,
            images: Vec::new(),
        }));
    }
    for content in messages {
        rows.push(ContextMessage::User(ContextUserMessage {
            content: user_content(content),
        }));
    }
    admission.title = messages.first().and_then(|content| title_of(content));
    admission.appends.insert(ThreadId::main(), rows);
    for stopped in &admission.stopped_threads {
        admission.capability_states.remove(stopped);
    }
    Ok(())
}

/// Approvals and client-side results (or an empty input), checked call by call; every call that waits for
/// the user must be resolved by this one input.
fn admit_answers(
    threads: &BTreeMap<ThreadId, AgentThreadSnapshot>,
    input: &[TurnInputItem],
    admission: &mut Admission,
) -> Result<(), AgentError> {
    let mut answered: BTreeSet<(ThreadId, String)> = BTreeSet::new();
    let mut new_session_approvals: Vec<ToolRef> = Vec::new();
    for item in input {
        let (thread_id, call_id) = match item {
            TurnInputItem::ToolApproval(approval) => (&approval.thread_id, &approval.tool_call_id),
            TurnInputItem::ToolResponse(response) => (&response.thread_id, &response.tool_call_id),
            TurnInputItem::UserMessage(_) => continue,
        };
        let thread = threads
            .get(thread_id.as_str())
            .ok_or_else(|| InputError::UnknownThread(ThreadId::from(thread_id)))?;
        let decisions = approval_decisions(&thread.context);
        let open = open_calls(&thread.context);
        let call = open.iter().find(|call| &call.id == call_id);
        if !answered.insert((ThreadId::from(thread_id), call_id.clone())) {
            return Err(InputError::AnsweredTwice(call_id.clone()).into());
        }
        let row = match item {
            TurnInputItem::ToolApproval(approval) => {
                let pending =
                    call.is_some_and(|call| call.is_approval_required() && !decisions.contains_key(call.id.as_str()));
                if !pending {
                    return Err(InputError::NoPendingApproval(call_id.clone()).into());
                }
                if let Some(info) = call.and_then(|call| call.tool_info.as_ref()) {
                    let tool = (info.mcp_server_id.clone(), info.original_tool_name.clone());
                    match approval.approval.allowed_scope() {
                        Some(ApprovalScope::Session) => new_session_approvals.push(tool),
                        Some(ApprovalScope::Agent) if !admission.agent_approvals.contains(&tool) => {
                            admission.agent_approvals.push(tool);
                        }
                        _ => {}
                    }
                }
                ContextMessage::ToolApproval(ContextToolApproval {
                    tool_call_id: call_id.clone(),
                    approval: approval.approval.clone(),
                })
            }
            TurnInputItem::ToolResponse(response) => {
                if !call.is_some_and(|call| call.is_client_side()) {
                    return Err(InputError::NoPendingQuestion(call_id.clone()).into());
                }
                ContextMessage::tool_result(call_id.clone(), response.content.clone())
            }
            TurnInputItem::UserMessage(_) => continue,
        };
        admission
            .appends
            .entry(ThreadId::from(thread_id))
            .or_default()
            .push(row);
    }
    let mut missing = Vec::new();
    for (thread_id, thread) in threads {
        let decisions = approval_decisions(&thread.context);
        for call in open_calls(&thread.context) {
            if awaits_user(call, &decisions) && !answered.contains(&(thread_id.clone(), call.id.clone())) {
                missing.push(call.id.clone());
            }
        }
    }
    if !missing.is_empty() {
        return Err(InputError::UnresolvedCalls(missing).into());
    }
    for (thread_id, thread) in threads {
        if answered.iter().any(|(answered_thread, _)| answered_thread == thread_id) {
            continue;
        }
        // An empty input is how a conversation continues once the user authorized an MCP server: the
        // calls that server refused stay open and run now.
        let closed = close_interrupted(thread, input.is_empty());
        if !closed.is_empty() {
            let rows = closed
                .iter()
                .map(|(call_id, content)| ContextMessage::tool_result(call_id.clone(), content.clone()))
                .collect();
            admission.appends.insert(thread_id.clone(), rows);
            admission.closed_calls.extend(
                closed
                    .into_iter()
                    .map(|(call_id, content)| (thread_id.clone(), call_id, content)),
            );
        }
    }
    if !new_session_approvals.is_empty() {
        let state = admission.capability_states.entry(ThreadId::main()).or_default();
        let mut approvals = ThreadRecords::read(Some(state)).session_approvals;
        approvals.extend(new_session_approvals);
        Record::SessionApprovals(approvals).write_into(state);
    }
    Ok(())
}

/// Result rows for the open calls of a batch that was interrupted (nothing in it waits for the user and
/// no sub-agent is working on it): such calls are never run again.
fn close_interrupted(thread: &AgentThreadSnapshot, keep_auth_interrupted: bool) -> Vec<(String, String)> {
    let decisions = approval_decisions(&thread.context);
    let open = open_calls(&thread.context);
    if open.iter().any(|call| awaits_user(call, &decisions)) {
        return Vec::new();
    }
    let records = ThreadRecords::read(thread.capability_state.as_ref());
    let kept: &[String] = if keep_auth_interrupted {
        &records.auth_interrupted_tool_calls
    } else {
        &[]
    };
    open.iter()
        .filter(|call| !call.is_thread_creation() && !kept.contains(&call.id))
        .map(|call| (call.id.clone(), unfinished_call_result(&records, &call.id)))
        .collect()
}

/// What the model reads for a call that never finished: whether it may have started matters.
pub fn unfinished_call_result(records: &ThreadRecords, call_id: &str) -> String {
    if records.was_started(call_id) {
        error_json(
            "The tool call was interrupted before it finished; it may have partly taken effect. Check before retrying.",
        )
    } else {
        error_json("The tool call was not executed. Retry it if it is still needed.")
    }
}

fn is_blank(content: &UserMessageContent) -> bool {
    match content {
        UserMessageContent::Text(text) => text.trim().is_empty(),
        UserMessageContent::Parts(parts) => parts.is_empty(),
    }
}

fn user_content(content: &UserMessageContent) -> ContextUserContent {
    match content {
        UserMessageContent::Text(text) => ContextUserContent::Text(text.clone()),
        UserMessageContent::Parts(parts) => ContextUserContent::Parts(
            parts
                .iter()
                .map(|part| match part {
                    UserContentPart::Text { text } => {
                        trueforge_protocol::ContextContentPart::Text { text: text.clone() }
                    }
                    UserContentPart::File { name, data } => file_part(name, data),
                })
                .collect(),
        ),
    }
}

/// Images become image parts, anything else an inline file (uploads into a sandbox come with the sandbox).
fn file_part(name: &str, data: &str) -> trueforge_protocol::ContextContentPart {
    use trueforge_protocol::{ContextContentPart, FileData, ImageUrl};
    if data.starts_with("data:image/") {
        ContextContentPart::ImageUrl {
            image_url: ImageUrl {
                url: data.to_owned(),
                detail: None,
            },
        }
    } else {
        ContextContentPart::File {
            file: FileData {
                file_data: Some(data.to_owned()),
                file_id: None,
                filename: Some(name.trim_start_matches('/').to_owned()),
            },
        }
    }
}

/// The session title the first user message of `input` gives: its text, never what the harness put in the
/// model's copy of it (an upload announcement).
pub(crate) fn input_title(input: &[TurnInputItem]) -> Option<String> {
    input.iter().find_map(|item| match item {
        TurnInputItem::UserMessage(message) => Some(title_of(&message.content)),
        _ => None,
    })?
}

fn title_of(content: &UserMessageContent) -> Option<String> {
    let text = content.text();
    let text = text.trim();
    (!text.is_empty()).then(|| text.chars().take(TITLE_CHARS).collect())
}

/// Adds `approvals` to the session-wide approvals recorded in a root's capability state.
pub fn add_session_approvals(state: &mut Map<String, Value>, approvals: &std::collections::HashSet<ToolRef>) {
    if approvals.is_empty() {
        return;
    }
    let mut merged = ThreadRecords::read(Some(state)).session_approvals;
    merged.extend(approvals.iter().cloned());
    Record::SessionApprovals(merged).write_into(state);
}

/// The session-wide approvals recorded in the root's capability state.
pub fn session_approvals(root_state: Option<&Map<String, Value>>) -> std::collections::HashSet<ToolRef> {
    ThreadRecords::read(root_state).session_approvals()
}
