//! `trueforge chat`: a terminal conversation with an agent over the API. Text streams as it comes; tool
//! calls and results show as short lines; approvals and questions are asked inline; Ctrl-C cancels the
//! running turn; an empty line or end of input leaves.

use std::io::Write;

use tokio::sync::mpsc;
use trueforge_client::{Client, CreateTurn};
use trueforge_protocol::{
    ApprovalDecision, SessionAgent, TurnInputItem, TurnState, UserToolApproval, UserToolResponse,
};

use crate::run::AgentChoice;
use crate::terminal::{self, Output, PendingCall};

pub struct ChatArgs {
    pub session: Option<String>,
    pub agent: Option<AgentChoice>,
    pub server: Option<String>,
}

/// Lines of standard input, read on their own thread so a turn can stream meanwhile; Ctrl-C at a prompt
/// ends the input like end of file.
struct Lines {
    lines: mpsc::UnboundedReceiver<String>,
    interrupts: terminal::Interrupts,
}

impl Lines {
    fn start(interrupts: terminal::Interrupts) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut line = String::new();
            while matches!(stdin.read_line(&mut line), Ok(read) if read > 0) {
                if sender.send(line.trim_end_matches(['\r', '\n']).to_owned()).is_err() {
                    break;
                }
                line.clear();
            }
        });
        Self {
            lines: receiver,
            interrupts,
        }
    }

    /// The next line after a prompt; `None` at the end of input.
    async fn ask(&mut self, prompt: &str) -> Option<String> {
        eprint!("{prompt}");
        let _ = std::io::stderr().flush();
        self.interrupts.clear();
        tokio::select! {
            line = self.lines.recv() => line,
            () = self.interrupts.next() => {
                eprintln!();
                None
            }
        }
    }
}

pub async fn chat(args: ChatArgs) -> Result<(), String> {
    let url = terminal::server_url(args.server);
    let client = terminal::client(&url)?;
    let session = match (&args.session, &args.agent) {
        (Some(session_id), _) => client
            .get_session(session_id)
            .await
            .map_err(|error| terminal::describe(&error, &url))?,
        (None, Some(agent)) => client
            .create_session(agent.session_agent())
            .await
            .map_err(|error| terminal::describe(&error, &url))?,
        (None, None) => {
            return Err(
                "say which agent to talk to: --agent NAME or --model PROVIDER/MODEL (or --session ID)".to_owned(),
            );
        }
    };
    let session_id = session.id;
    // Only a saved agent can remember an approval for all of its sessions.
    let approvals = ApprovalChoices {
        for_agent: matches!(session.agent, SessionAgent::Reference { .. }),
    };
    eprintln!(
        "session {session_id} on {url}. Empty line, Ctrl-D or Ctrl-C at the prompt to leave; Ctrl-C cancels a running turn."
    );
    let mut lines = Lines::start(terminal::Interrupts::listen());
    let mut next_input: Option<Vec<TurnInputItem>> = None;
    loop {
        let input = match next_input.take() {
            Some(input) => input,
            None => match lines.ask("> ").await {
                None => return Ok(()),
                Some(line) if line.trim().is_empty() => return Ok(()),
                Some(line) => CreateTurn::message(line).input,
            },
        };
        let stream = match client.stream_turn(&session_id, CreateTurn::new(input)).await {
            Ok(stream) => stream,
            Err(error) => {
                eprintln!("[{}]", terminal::describe(&error, &url));
                continue;
            }
        };
        let ended = match terminal::follow(&client, &session_id, stream, Output::Text, &mut lines.interrupts).await {
            Ok(ended) => ended,
            Err(error) => {
                eprintln!("[{error}]");
                continue;
            }
        };
        match ended.state {
            Some(TurnState::Done {
                output,
                required_actions,
                ..
            }) => {
                if !ended.printed_text
                    && let Some(output) = &output
                {
                    let text = terminal::message_text(output);
                    if !text.is_empty() {
                        println!("{text}");
                    }
                }
                if required_actions.is_empty() {
                    continue;
                }
                let Some(turn_id) = ended.turn_id else { continue };
                next_input =
                    answer_required(&client, &mut lines, &session_id, &turn_id, &required_actions, approvals).await?;
            }
            Some(TurnState::Error { message, .. }) => eprintln!("[the turn failed: {message}]"),
            Some(TurnState::Cancelled { .. }) => eprintln!("[cancelled]"),
            Some(TurnState::Running) | None => eprintln!("[the stream ended before the turn did]"),
        }
    }
}

/// Asks the person for what a paused turn needs; the answers are the next turn's input (`None`: back to
/// the prompt).
async fn answer_required(
    client: &Client,
    lines: &mut Lines,
    session_id: &str,
    turn_id: &str,
    actions: &[trueforge_protocol::ActionRequiredEvent],
    choices: ApprovalChoices,
) -> Result<Option<Vec<TurnInputItem>>, String> {
    let authorisations = terminal::auth_requests(actions);
    if !authorisations.is_empty() {
        // An authorised MCP server lets the turn go on with an empty input.
        for request in &authorisations {
            eprintln!("[authorise {request}]");
        }
        if lines.ask("press Enter once authorised: ").await.is_none() {
            return Ok(None);
        }
        return Ok(Some(Vec::new()));
    }
    let (approvals, questions) = terminal::pending_calls(client, session_id, turn_id, actions)
        .await
        .map_err(|error| error.to_string())?;
    let mut input = Vec::new();
    for pending in approvals {
        let Some(decision) = ask_approval(lines, &pending, choices).await else {
            return Ok(None);
        };
        input.push(TurnInputItem::ToolApproval(UserToolApproval {
            thread_id: pending.thread_id,
            tool_call_id: pending.call.id,
            approval: decision,
        }));
    }
    for pending in questions {
        let Some(answer) = ask_question(lines, &pending).await else {
            return Ok(None);
        };
        input.push(TurnInputItem::ToolResponse(UserToolResponse {
            thread_id: pending.thread_id,
            tool_call_id: pending.call.id,
            content: answer,
        }));
    }
    Ok((!input.is_empty()).then_some(input))
}

/// Which approval scopes the person is offered beyond this call and this session.
#[derive(Debug, Clone, Copy)]
struct ApprovalChoices {
    /// `[a]gent`: the session belongs to a saved agent.
    for_agent: bool,
}

async fn ask_approval(lines: &mut Lines, pending: &PendingCall, choices: ApprovalChoices) -> Option<ApprovalDecision> {
    let arguments = terminal::preview(&pending.call.function.arguments, 200);
    let agent_choice = if choices.for_agent {
        " / [a]gent (always, for every session of this agent)"
    } else {
        ""
    };
    loop {
        let answer = lines
            .ask(&format!(
                "allow {}({arguments})? [y]es / [s]ession (allow for the rest of this session){agent_choice} / [n]o: ",
                pending.call.function.name
            ))
            .await?;
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return Some(ApprovalDecision::allow()),
            "s" | "session" => return Some(ApprovalDecision::allow_for_session()),
            "a" | "agent" if choices.for_agent => return Some(ApprovalDecision::allow_for_agent()),
            "n" | "no" => {
                let reason = lines.ask("reason (optional): ").await?;
                let reason = reason.trim();
                return Some(ApprovalDecision::Deny {
                    reason: (!reason.is_empty()).then(|| reason.to_owned()),
                });
            }
            _ if choices.for_agent => eprintln!("answer y, s, a or n"),
            _ => eprintln!("answer y, s or n"),
        }
    }
}

/// A question of `ask_user_question` (or another client-side tool): its options are numbered, and a number
/// picks one; anything else is the answer as typed.
async fn ask_question(lines: &mut Lines, pending: &PendingCall) -> Option<String> {
    let question = pending.arguments["question"].as_str().map_or_else(
        || format!("{} {}", pending.call.function.name, pending.call.function.arguments),
        str::to_owned,
    );
    let options: Vec<String> = pending.arguments["options"]
        .as_array()
        .map(|options| {
            options
                .iter()
                .filter_map(|option| option.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    eprintln!("? {question}");
    for (number, option) in options.iter().enumerate() {
        eprintln!("  {}. {option}", number + 1);
    }
    loop {
        let answer = lines.ask("answer: ").await?;
        let answer = answer.trim();
        if let Some(option) = answer
            .parse::<usize>()
            .ok()
            .and_then(|number| number.checked_sub(1))
            .and_then(|index| options.get(index))
        {
            return Some(option.clone());
        }
        if !answer.is_empty() {
            return Some(answer.to_owned());
        }
    }
}
