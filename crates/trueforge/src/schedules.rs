//! `trueforge schedules …`: list a user's schedules and their runs, run one now, pause and resume, over the
//! API of a running server.

use std::process::ExitCode;

use trueforge_client::{Client, Schedule, ScheduleRun, ScheduleRunStatus, ScheduleState};

use crate::terminal;

/// What `trueforge schedules` does.
#[derive(clap::Subcommand)]
pub enum SchedulesCommand {
    /// Lists your schedules: id, state, next run, cron and zone, name.
    List {
        /// Print each schedule as one JSON line instead.
        #[arg(long)]
        json: bool,
    },
    /// Runs a schedule now (paused or not) and prints its run: the session and turn it started.
    Run {
        schedule_id: String,
        /// Print the run as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Lists a schedule's runs, newest first.
    Runs {
        schedule_id: String,
        /// Print each run as one JSON line instead.
        #[arg(long)]
        json: bool,
    },
    /// Pauses a schedule: its occurrences do not run until it is resumed.
    Pause { schedule_id: String },
    /// Resumes a schedule from now (what passed while it was paused does not run).
    Resume { schedule_id: String },
}

pub async fn run(command: SchedulesCommand, server: Option<String>) -> Result<ExitCode, String> {
    let url = terminal::server_url(server);
    let client = terminal::client(&url)?;
    let failed = |error: trueforge_client::ClientError| terminal::describe(&error, &url);
    match command {
        SchedulesCommand::List { json } => {
            let mut page_token: Option<String> = None;
            loop {
                let page = client.list_schedules(page_token.as_deref()).await.map_err(failed)?;
                for schedule in &page.data {
                    print_line(json, serde_json::to_string(schedule), schedule_line(schedule))?;
                }
                match page.pagination.next_page_token {
                    Some(token) => page_token = Some(token),
                    None => break,
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        SchedulesCommand::Run { schedule_id, json } => {
            let run = client.run_schedule(&schedule_id).await.map_err(failed)?;
            print_line(json, serde_json::to_string(&run), run_line(&run))?;
            Ok(if run.status == ScheduleRunStatus::Failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        SchedulesCommand::Runs { schedule_id, json } => {
            let mut page_token: Option<String> = None;
            loop {
                let page = client
                    .list_schedule_runs(&schedule_id, page_token.as_deref())
                    .await
                    .map_err(failed)?;
                for run in &page.data {
                    print_line(json, serde_json::to_string(run), run_line(run))?;
                }
                match page.pagination.next_page_token {
                    Some(token) => page_token = Some(token),
                    None => break,
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        SchedulesCommand::Pause { schedule_id } => state_change(&client, &schedule_id, false).await.map_err(failed),
        SchedulesCommand::Resume { schedule_id } => state_change(&client, &schedule_id, true).await.map_err(failed),
    }
}

async fn state_change(
    client: &Client,
    schedule_id: &str,
    resume: bool,
) -> Result<ExitCode, trueforge_client::ClientError> {
    let schedule = if resume {
        client.resume_schedule(schedule_id).await?
    } else {
        client.pause_schedule(schedule_id).await?
    };
    println!("{}", schedule_line(&schedule));
    Ok(ExitCode::SUCCESS)
}

/// One line: `text`, or `value` as JSON with `--json`.
fn print_line(json: bool, value: Result<String, serde_json::Error>, text: String) -> Result<(), String> {
    if json {
        println!("{}", value.map_err(|error| error.to_string())?);
    } else {
        println!("{text}");
    }
    Ok(())
}

fn schedule_line(schedule: &Schedule) -> String {
    let state = if schedule.state == ScheduleState::Paused {
        "paused"
    } else {
        "active"
    };
    format!(
        "{}  {state}  next {}  {} ({})  {}",
        schedule.id,
        schedule.next_run_at.as_deref().unwrap_or("-"),
        schedule.manifest.cron,
        schedule.manifest.timezone,
        schedule.name
    )
}

fn run_line(run: &ScheduleRun) -> String {
    let what = match (&run.session_id, &run.turn_id, &run.error) {
        (Some(session), Some(turn), _) => format!("session {session} turn {turn}"),
        (_, _, Some(error)) => format!("error: {error}"),
        _ if run.missed_occurrences > 0 => format!("{} occurrence(s) missed", run.missed_occurrences),
        _ => String::new(),
    };
    format!(
        "{}  {}  {}  due {}  {what}",
        run.id,
        run.status.as_str(),
        run.trigger.as_str(),
        run.due_at
    )
}
