//! `oauth-mcp --port N [--user NAME] [--deny-consent]`: the OAuth-protected MCP server (its own
//! authorisation server, tools `whoami` and `echo`) as a process. It prints
//! `oauth-mcp listening on http://127.0.0.1:PORT (MCP endpoint http://127.0.0.1:PORT/mcp)` once it
//! accepts connections, then serves until killed.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use trueforge_testkit::oauth_mcp::{OAuthMcpOptions, OAuthMcpServer};

/// An OAuth-protected MCP server that is also its own authorisation server: metadata, dynamic client
/// registration, an auto-approving authorisation endpoint and a token endpoint checking PKCE.
#[derive(Parser)]
#[command(name = "oauth-mcp")]
struct Args {
    /// The port to listen on (127.0.0.1); 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The user every authorisation approves as; the `whoami` tool answers it.
    #[arg(long, default_value = "alice")]
    user: String,
    /// Refuse every authorisation (`error=access_denied`) instead of approving it.
    #[arg(long)]
    deny_consent: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.user.trim().is_empty() {
        eprintln!("oauth-mcp: --user must not be empty");
        return ExitCode::FAILURE;
    }
    let options = OAuthMcpOptions {
        user: args.user,
        deny: args.deny_consent,
        ..OAuthMcpOptions::default()
    };
    let server = match OAuthMcpServer::bind(SocketAddr::from(([127, 0, 0, 1], args.port)), options).await {
        Ok(server) => server,
        Err(error) => {
            eprintln!("oauth-mcp: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout();
    // Whoever started us reads the URLs from this line; if nobody reads stdout, serving is still useful.
    let _ = writeln!(
        stdout,
        "oauth-mcp listening on {} (MCP endpoint {})",
        server.issuer(),
        server.mcp_url()
    );
    let _ = stdout.flush();
    std::future::pending::<()>().await;
    ExitCode::SUCCESS
}
