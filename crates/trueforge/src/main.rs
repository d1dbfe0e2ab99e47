//! The `trueforge` command: `serve` (the default) runs the HTTP API and the web UI locally on SQLite;
//! `migrate` brings the database up to date; `doctor` checks the setup; `chat` and `run` talk to a running
//! server.

mod chat;
mod doctor;
mod run;
mod schedules;
mod telemetry;
mod terminal;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use trueforge_server::ServerConfig;

#[derive(Parser)]
#[command(name = "trueforge", version, about = "TrueForge, an open agent harness")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the HTTP API and the web UI (the default). Configured by environment variables (see the README).
    Serve {
        /// Port to listen on (overrides PORT).
        #[arg(long)]
        port: Option<u16>,
    },
    /// Applies pending database migrations and exits.
    Migrate,
    /// Checks the configuration, the database, the model providers and the sandbox prerequisites.
    Doctor,
    /// Prints the HTTP API's OpenAPI document (the one `GET /api/v1/openapi.json` serves), pretty-printed.
    Openapi,
    /// Chats with an agent in the terminal, over the API of a running server.
    Chat {
        /// Continue this session instead of starting one.
        #[arg(long)]
        session: Option<String>,
        #[command(flatten)]
        agent: AgentArgs,
        /// The server (default: TRUEFORGE_URL, else http://127.0.0.1:8790).
        #[arg(long)]
        server: Option<String>,
    },
    /// Runs one prompt in a new session and prints the answer (or every event as JSON lines).
    Run {
        prompt: String,
        #[command(flatten)]
        agent: AgentArgs,
        /// Print every event as one JSON line instead of the answer.
        #[arg(long)]
        json: bool,
        /// The server (default: TRUEFORGE_URL, else http://127.0.0.1:8790).
        #[arg(long)]
        server: Option<String>,
    },
    /// Lists your scheduled agent runs and their runs, runs one now, pauses and resumes them.
    Schedules {
        #[command(subcommand)]
        command: schedules::SchedulesCommand,
        /// The server (default: TRUEFORGE_URL, else http://127.0.0.1:8790).
        #[arg(long, global = true)]
        server: Option<String>,
    },
}

#[derive(clap::Args)]
#[group(multiple = false)]
struct AgentArgs {
    /// A saved agent, by name.
    #[arg(long)]
    agent: Option<String>,
    /// A model, as PROVIDER/MODEL (an inline agent with the default configuration).
    #[arg(long)]
    model: Option<String>,
}

impl AgentArgs {
    fn choice(self) -> Option<run::AgentChoice> {
        match (self.agent, self.model) {
            (Some(name), _) => Some(run::AgentChoice::Named(name)),
            (None, Some(model)) => Some(run::AgentChoice::Model(model)),
            (None, None) => None,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("trueforge: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command.unwrap_or(Command::Serve { port: None }) {
            Command::Serve { port } => serve(port).await.map(|()| ExitCode::SUCCESS),
            Command::Migrate => migrate().await.map(|()| ExitCode::SUCCESS),
            Command::Doctor => doctor::run().await.map(|()| ExitCode::SUCCESS),
            Command::Openapi => print_openapi().map(|()| ExitCode::SUCCESS),
            Command::Chat { session, agent, server } => chat::chat(chat::ChatArgs {
                session,
                agent: agent.choice(),
                server,
            })
            .await
            .map(|()| ExitCode::SUCCESS),
            Command::Schedules { command, server } => schedules::run(command, server).await,
            Command::Run {
                prompt,
                agent,
                json,
                server,
            } => match agent.choice() {
                Some(agent) => {
                    run::run(run::RunArgs {
                        prompt,
                        agent,
                        json,
                        server,
                    })
                    .await
                }
                None => Err("say which agent runs the prompt: --agent NAME or --model PROVIDER/MODEL".to_owned()),
            },
        }
    });
    // The stdin reader of `chat` may still block on a read; do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("trueforge: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The document as the SDK generators read it: pretty JSON and a final newline, so a committed copy diffs
/// line by line.
fn print_openapi() -> Result<(), String> {
    let json = serde_json::to_string_pretty(&trueforge_server::openapi::document())
        .map_err(|error| format!("cannot serialise the OpenAPI document: {error}"))?;
    println!("{json}");
    Ok(())
}

fn config(port: Option<u16>) -> Result<ServerConfig, String> {
    let mut config = ServerConfig::from_env().map_err(|error| error.to_string())?;
    if let Some(port) = port {
        if port == 0 {
            return Err("--port must be from 1 to 65535".to_owned());
        }
        config.port = port;
    }
    Ok(config)
}

async fn serve(port: Option<u16>) -> Result<(), String> {
    let config = config(port)?;
    let telemetry = telemetry::init(&config.log_level, config.log_format)?;
    let served = serve_with(config).await;
    // Spans still queued (the last requests', the shutdown's) leave before the process does.
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await.ok();
    served
}

async fn serve_with(config: ServerConfig) -> Result<(), String> {
    let address = std::net::SocketAddr::new(config.host, config.port);
    let data_dir = config.data_dir.clone();
    let serve_ui = config.serve_ui;
    let hosted = config.hosted.is_some();
    let login = config.hosted.as_ref().is_some_and(|hosted| hosted.oidc.is_some());
    let state = trueforge_server::state_for(config)
        .await
        .map_err(|error| error.to_string())?;
    let executor = state.executor_id.clone();
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("cannot listen on {address}: {error}"))?;
    if hosted {
        println!(
            "TrueForge {} (hosted mode, executor {executor})",
            env!("CARGO_PKG_VERSION")
        );
    } else {
        println!("TrueForge {} (local mode)", env!("CARGO_PKG_VERSION"));
    }
    if serve_ui {
        println!("  UI       http://{address}/");
    }
    println!("  API      http://{address}/api/v1  (docs at /api/v1/docs)");
    println!("  health   http://{address}/healthz (ready: /readyz)");
    if hosted {
        println!("  Postgres and Redis shared with the other replicas");
        if login {
            println!("  Login through the OpenID provider (OIDC_*); API keys for programs");
        } else {
            println!("  No login configured (OIDC_*): anyone who can reach this port is the admin.");
        }
    } else {
        println!("  data     {}", data_dir.display());
        println!("  Local mode has no login: anyone who can reach this port is the admin.");
    }
    trueforge_server::serve(listener, state, shutdown_signal())
        .await
        .map_err(|error| format!("server error: {error}"))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down: ending running turns");
}

async fn migrate() -> Result<(), String> {
    let config = config(None)?;
    trueforge_server::app::open_database(&config.sqlite_path, config.database_dir_ownership())
        .await
        .map_err(|error| error.to_string())?;
    println!("database {} is up to date", config.sqlite_path.display());
    Ok(())
}
