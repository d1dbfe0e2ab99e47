//! What `run` and `chat` share: reaching the server, streaming a turn to the terminal (text as it comes,
//! tool calls and results as short lines), cancelling it on Ctrl-C, and reading what a paused turn needs.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::Value;
use trueforge_client::{Client, ClientError, ListTurnEvents, StreamedEvent, TurnStream};
use trueforge_protocol::{
    ActionRequiredEvent, AssistantContent, AssistantContentPart, ModelMessageEvent, SessionEvent, ToolCall, TurnState,
    TurnStreamingEvent,
};

/// Where the server is: `--server`, else `TRUEFORGE_URL`, else local mode's default address.
pub fn server_url(flag: Option<String>) -> String {
    flag.or_else(|| std::env::var("TRUEFORGE_URL").ok().filter(|url| !url.trim().is_empty()))
        .unwrap_or_else(|| "http://127.0.0.1:8790".to_owned())
}

/// A client for `url`, sending `TRUEFORGE_API_KEY` (when set) as its bearer token: a hosted server with login
/// takes an API key (`tfk_…`) or an ID token there.
pub fn client(url: &str) -> Result<Client, String> {
    let client = Client::new(url).map_err(|error| error.to_string())?;
    Ok(match std::env::var("TRUEFORGE_API_KEY") {
        Ok(key) if !key.trim().is_empty() => client.with_token(key.trim()),
        _ => client,
    })
}

/// A client error as one line, with a hint when nothing answers.
pub fn describe(error: &ClientError, url: &str) -> String {
    match error {
        ClientError::Transport(_) => {
            format!("cannot reach the server at {url} ({error}); start it with `trueforge serve`")
        }
        other => other.to_string(),
    }
}

/// How a turn's events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The root agent's text as it streams, tool calls and results as short lines on stderr.
    Text,
    /// Every event as one JSON line on stdout.
    JsonLines,
}

/// The end of a streamed turn.
pub struct Ended {
    pub turn_id: Option<String>,
    pub state: Option<TurnState>,
    /// Whether any answer text was printed while streaming.
    pub printed_text: bool,
}

/// Ctrl-C presses, from one listener for the whole process (a listener installed per turn would leave
/// presses between turns unheard, and once installed, Ctrl-C no longer ends the process by itself).
pub struct Interrupts(tokio::sync::mpsc::UnboundedReceiver<()>);

impl Interrupts {
    pub fn listen() -> Self {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if sender.send(()).is_err() {
                    break;
                }
            }
        });
        Self(receiver)
    }

    /// The next press (never, once the listener is gone).
    pub async fn next(&mut self) {
        if self.0.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }

    /// Forgets presses made while nothing listened for them.
    pub fn clear(&mut self) {
        while self.0.try_recv().is_ok() {}
    }
}

/// Streams a turn to the terminal until `turn.done`. The first Ctrl-C cancels the turn (its stream still
/// ends with `turn.done`); a second one stops waiting.
pub async fn follow(
    client: &Client,
    session_id: &str,
    mut stream: TurnStream,
    output: Output,
    interrupts: &mut Interrupts,
) -> Result<Ended, String> {
    interrupts.clear();
    let mut printed_text = false;
    let mut at_line_start = true;
    let mut cancelled = false;
    let mut announced_calls: BTreeMap<(String, u32), ()> = BTreeMap::new();
    loop {
        let next = tokio::select! {
            next = stream.next() => next,
            () = interrupts.next() => {
                if cancelled {
                    return Err("interrupted".to_owned());
                }
                cancelled = true;
                eprintln!("\n[cancelling the turn; Ctrl-C again to stop waiting]");
                if let Err(error) = client.cancel(session_id).await {
                    eprintln!("[cancel failed: {error}]");
                }
                continue;
            }
        };
        let Some(item) = next else {
            return Ok(Ended {
                turn_id: stream.turn_id().map(str::to_owned),
                state: None,
                printed_text,
            });
        };
        let item = item.map_err(|error| error.to_string())?;
        match output {
            Output::JsonLines => {
                let line = serde_json::to_string(&item.event).map_err(|error| error.to_string())?;
                println!("{line}");
            }
            Output::Text => show(&item, &mut printed_text, &mut at_line_start, &mut announced_calls),
        }
        if let Some(state) = item.turn_done() {
            if output == Output::Text && !at_line_start {
                println!();
            }
            return Ok(Ended {
                turn_id: stream.turn_id().map(str::to_owned),
                state: Some(state.clone()),
                printed_text,
            });
        }
    }
}

fn show(
    item: &StreamedEvent,
    printed_text: &mut bool,
    at_line_start: &mut bool,
    announced_calls: &mut BTreeMap<(String, u32), ()>,
) {
    match &item.event {
        TurnStreamingEvent::ModelMessageDelta(delta) => {
            if delta.thread_id == trueforge_protocol::MAIN_THREAD_ID
                && let Some(Some(text)) = &delta.content
            {
                print!("{text}");
                let _ = std::io::stdout().flush();
                *printed_text = true;
                *at_line_start = text.ends_with('\n');
            }
            for call in delta.tool_calls.iter().flatten() {
                let name = call.function.as_ref().and_then(|function| function.name.as_deref());
                if let Some(name) = name
                    && announced_calls.insert((delta.id.clone(), call.index), ()).is_none()
                {
                    end_line(at_line_start);
                    eprintln!("→ {name}{}", thread_suffix(&delta.thread_id));
                }
            }
        }
        TurnStreamingEvent::Event(SessionEvent::ToolResponse(response)) => {
            end_line(at_line_start);
            eprintln!(
                "← {}{}",
                preview(&response.content, 160),
                thread_suffix(&response.thread_id)
            );
        }
        TurnStreamingEvent::Event(SessionEvent::ThreadCreated(created)) => {
            end_line(at_line_start);
            eprintln!("[sub-agent {} started]", created.title);
        }
        TurnStreamingEvent::Event(SessionEvent::ThreadDone(done)) => {
            end_line(at_line_start);
            eprintln!("[sub-agent {} finished]", done.title);
        }
        _ => {}
    }
}

fn end_line(at_line_start: &mut bool) {
    if !*at_line_start {
        println!();
        *at_line_start = true;
    }
}

fn thread_suffix(thread_id: &str) -> String {
    if thread_id == trueforge_protocol::MAIN_THREAD_ID {
        String::new()
    } else {
        format!("  [{thread_id}]")
    }
}

/// The first line of a text, cut to `limit` characters.
pub fn preview(text: &str, limit: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut cut: String = line.chars().take(limit).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// The text of an assistant message.
pub fn message_text(message: &ModelMessageEvent) -> String {
    match &message.content {
        Some(Some(AssistantContent::Text(text))) => text.clone(),
        Some(Some(AssistantContent::Parts(parts))) => parts
            .iter()
            .map(|part| match part {
                AssistantContentPart::Text { text } => text.as_str(),
                AssistantContentPart::Refusal { refusal } => refusal.as_str(),
            })
            .collect(),
        _ => String::new(),
    }
}

/// A call a paused turn waits on, with what the model asked.
pub struct PendingCall {
    pub thread_id: String,
    pub call: ToolCall,
    pub arguments: Value,
}

/// The calls behind a paused turn's required actions (looked up in the turn's stored events).
pub async fn pending_calls(
    client: &Client,
    session_id: &str,
    turn_id: &str,
    actions: &[ActionRequiredEvent],
) -> Result<(Vec<PendingCall>, Vec<PendingCall>), ClientError> {
    let mut messages: BTreeMap<String, ModelMessageEvent> = BTreeMap::new();
    let mut query = ListTurnEvents::default();
    loop {
        let page = client.turn_events(session_id, turn_id, &query).await?;
        for event in page.data {
            if let SessionEvent::ModelMessage(message) = event {
                messages.insert(message.id.clone(), message);
            }
        }
        match page.pagination.next_page_token {
            Some(token) => query.page_token = Some(token),
            None => break,
        }
    }
    let find = |thread_id: &str, call_id: &str, source: &str| -> Option<PendingCall> {
        let call = messages
            .get(source)?
            .tool_calls
            .iter()
            .flatten()
            .find(|call| call.id == call_id)?
            .clone();
        let arguments = serde_json::from_str(&call.function.arguments).unwrap_or(Value::Null);
        Some(PendingCall {
            thread_id: thread_id.to_owned(),
            call,
            arguments,
        })
    };
    let mut approvals = Vec::new();
    let mut answers = Vec::new();
    for action in actions {
        match action {
            ActionRequiredEvent::ToolApprovalRequired(event) => {
                approvals.extend(
                    event
                        .tool_calls
                        .iter()
                        .filter_map(|call| find(&event.thread_id, &call.id, &call.source_event_id)),
                );
            }
            ActionRequiredEvent::ToolResponseRequired(event) => {
                answers.extend(
                    event
                        .tool_calls
                        .iter()
                        .filter_map(|call| find(&event.thread_id, &call.id, &call.source_event_id)),
                );
            }
            ActionRequiredEvent::McpAuthRequired(_) => {}
        }
    }
    Ok((approvals, answers))
}

/// The MCP servers a paused turn needs authorised, as `name: url` lines.
pub fn auth_requests(actions: &[ActionRequiredEvent]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|action| match action {
            ActionRequiredEvent::McpAuthRequired(event) => Some(
                event
                    .mcp_servers
                    .iter()
                    .map(|server| format!("{}: {}", server.name, server.auth_url))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect()
}
