//! The `trueforge` command: `serve` (the default) runs the HTTP API locally on SQLite; `migrate` brings
//! the database up to date and exits.

mod doctor;

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
    /// Runs the HTTP API (the default). Configured by environment variables (see the README).
    Serve {
        /// Port to listen on (overrides PORT).
        #[arg(long)]
        port: Option<u16>,
    },
    /// Applies pending database migrations and exits.
    Migrate,
    /// Checks the configuration, the database, the model providers and the sandbox prerequisites.
    Doctor,
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
            Command::Serve { port } => serve(port).await,
            Command::Migrate => migrate().await,
            Command::Doctor => doctor::run().await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("trueforge: {message}");
            ExitCode::FAILURE
        }
    }
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

fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(format!("{level},sqlx=warn,hyper=warn"))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .init();
}

async fn serve(port: Option<u16>) -> Result<(), String> {
    let config = config(port)?;
    init_logging(&config.log_level);
    let address = std::net::SocketAddr::new(config.host, config.port);
    let data_dir = config.data_dir.clone();
    let state = trueforge_server::local_state(config)
        .await
        .map_err(|error| error.to_string())?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("cannot listen on {address}: {error}"))?;
    println!("TrueForge {} (local mode)", env!("CARGO_PKG_VERSION"));
    println!("  API      http://{address}/api/v1  (docs at /api/v1/docs)");
    println!("  health   http://{address}/healthz");
    println!("  data     {}", data_dir.display());
    println!("  Local mode has no login: anyone who can reach this port is the admin.");
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
    trueforge_server::app::open_database(&config.sqlite_path)
        .await
        .map_err(|error| error.to_string())?;
    println!("database {} is up to date", config.sqlite_path.display());
    Ok(())
}
