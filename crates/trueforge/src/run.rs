//! `trueforge run "<prompt>"`: one turn in a new session, headless. Prints the answer (or every event as a
//! JSON line with `--json`). Exit status: 0 when the turn ended done, 1 on an error or a cancel, 3 when it
//! paused for something only a person can give (an approval, an answer, an authorisation).

use std::process::ExitCode;

use trueforge_client::{CreateTurn, PreviousTurn, SessionAgentChoice};
use trueforge_protocol::TurnState;

use crate::terminal::{self, Output};

pub struct RunArgs {
    pub prompt: String,
    pub agent: AgentChoice,
    pub json: bool,
    pub server: Option<String>,
}

/// Which agent a new session runs.
pub enum AgentChoice {
    Named(String),
    Model(String),
}

impl AgentChoice {
    pub fn session_agent(&self) -> SessionAgentChoice {
        match self {
            Self::Named(name) => SessionAgentChoice::named(name.clone()),
            Self::Model(model) => SessionAgentChoice::model(model.clone()),
        }
    }
}

pub async fn run(args: RunArgs) -> Result<ExitCode, String> {
    let url = terminal::server_url(args.server);
    let client = terminal::client(&url)?;
    let session = client
        .create_session(args.agent.session_agent())
        .await
        .map_err(|error| terminal::describe(&error, &url))?;
    let stream = client
        .stream_turn(
            &session.id,
            CreateTurn::message(args.prompt).with_previous_turn(PreviousTurn::None),
        )
        .await
        .map_err(|error| terminal::describe(&error, &url))?;
    let output = if args.json { Output::JsonLines } else { Output::Text };
    let mut interrupts = terminal::Interrupts::listen();
    let ended = terminal::follow(&client, &session.id, stream, output, &mut interrupts).await?;
    match ended.state {
        Some(TurnState::Done {
            output: answer,
            required_actions,
            ..
        }) => {
            if output == Output::Text
                && !ended.printed_text
                && let Some(answer) = &answer
            {
                println!("{}", terminal::message_text(answer));
            }
            if required_actions.is_empty() {
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!(
                    "the turn paused for {} required action(s) (approvals, answers or authorisations); continue it \
                     with `trueforge chat --session {}`",
                    required_actions.len(),
                    session.id
                );
                Ok(ExitCode::from(3))
            }
        }
        Some(TurnState::Error { message, .. }) => {
            eprintln!("the turn failed: {message}");
            Ok(ExitCode::FAILURE)
        }
        Some(TurnState::Cancelled { reason, .. }) => {
            eprintln!(
                "the turn was cancelled ({})",
                serde_json::to_string(&reason).unwrap_or_default()
            );
            Ok(ExitCode::FAILURE)
        }
        Some(TurnState::Running) | None => Err("the stream ended before the turn did".to_owned()),
    }
}
