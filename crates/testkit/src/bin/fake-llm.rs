//! `fake-llm --port N [--script FILE] [--without-request-bodies]`: the fake model server as a process. It prints
//! `fake-llm listening on http://127.0.0.1:PORT` once it accepts connections, then serves until killed.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use trueforge_testkit::fake_llm::{FakeLlm, RequestLog, Script};

/// A fake model server speaking the OpenAI Responses, Chat Completions, Anthropic and Gemini wire formats.
#[derive(Parser)]
#[command(name = "fake-llm")]
struct Args {
    /// The port to listen on (127.0.0.1); 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// A JSON script of queued responses (format: see the crate's README).
    #[arg(long)]
    script: Option<PathBuf>,
    /// Keep no request bodies in the request log (for load runs: a long run's bodies would grow the
    /// process without bound).
    #[arg(long)]
    without_request_bodies: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let script = match args.script.as_deref().map(Script::load).transpose() {
        Ok(script) => script,
        Err(error) => {
            eprintln!("fake-llm: {error}");
            return ExitCode::FAILURE;
        }
    };
    let log = if args.without_request_bodies {
        RequestLog::WithoutBodies
    } else {
        RequestLog::Full
    };
    let server = match FakeLlm::bind_with_log(SocketAddr::from(([127, 0, 0, 1], args.port)), log).await {
        Ok(server) => server,
        Err(error) => {
            eprintln!("fake-llm: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(script) = script {
        server.load(script);
    }
    let mut stdout = std::io::stdout();
    // Whoever started us reads the port from this line; if nobody reads stdout, serving is still useful.
    let _ = writeln!(stdout, "fake-llm listening on http://{}", server.addr());
    let _ = stdout.flush();
    std::future::pending::<()>().await;
    ExitCode::SUCCESS
}
