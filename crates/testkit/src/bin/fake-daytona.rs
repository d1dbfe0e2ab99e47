//! `fake-daytona --port N [--api-key KEY] [--snapshot NAME]…`: the fake Daytona API as a process. It prints
//! `fake-daytona listening on http://127.0.0.1:PORT/api` once it accepts connections, then serves until
//! killed. Its sandboxes are temp directories on this host, removed when it exits cleanly.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use trueforge_testkit::fake_daytona::{FAKE_DAYTONA_API_KEY, FAKE_DAYTONA_SNAPSHOT, FakeDaytona, FakeDaytonaOptions};

/// A fake Daytona API (sandboxes, snapshots, toolbox) for end-to-end tests of the remote sandbox provider.
#[derive(Parser)]
#[command(name = "fake-daytona")]
struct Args {
    /// The port to listen on (127.0.0.1); 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The key every request must bear (`Authorization: Bearer KEY`).
    #[arg(long, default_value = FAKE_DAYTONA_API_KEY)]
    api_key: String,
    /// Snapshots registered as active from the start (repeatable).
    #[arg(long = "snapshot", default_values_t = [FAKE_DAYTONA_SNAPSHOT.to_owned()])]
    snapshots: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.api_key.is_empty() {
        eprintln!("fake-daytona: --api-key must not be empty");
        return ExitCode::FAILURE;
    }
    let options = FakeDaytonaOptions {
        api_key: args.api_key,
        snapshots: args.snapshots,
        ..FakeDaytonaOptions::default()
    };
    let server = match FakeDaytona::bind(SocketAddr::from(([127, 0, 0, 1], args.port)), options).await {
        Ok(server) => server,
        Err(error) => {
            eprintln!("fake-daytona: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout();
    // Whoever started us reads the URL from this line; if nobody reads stdout, serving is still useful.
    let _ = writeln!(stdout, "fake-daytona listening on {}", server.api_url());
    let _ = stdout.flush();
    // Until interrupted or terminated, which end cleanly so the sandboxes' directories are removed.
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
    drop(server);
    ExitCode::SUCCESS
}
