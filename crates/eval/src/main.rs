//! `trueforge-eval --server URL [--tasks DIR] [--runs N] [--out FILE]`: runs every task of a directory as a
//! session through the HTTP API of a running TrueForge-compatible server, against the scripted model and the
//! fake enterprise MCP servers (a project tracker, a CRM, a file server) it runs in its own process, and
//! writes one JSON line per task and run: outcome, tokens, cost, wall time, time to first token, calls.
//!
//! The server must be reachable from this process's loopback addresses (the fake model and MCP servers
//! listen on 127.0.0.1). The runner configures them on the server as the provider `eval` and the MCP
//! servers `tracker`, `crm` and `files` (replacing settings of those names).

mod run;
mod table;
mod task;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use serde_json::{Value, json};
use trueforge_testkit::enterprise_mcp::{Crm, EnterpriseMcpServer, FileServer, Tracker};
use trueforge_testkit::fake_llm::{Api, FakeLlm};

use run::{RunError, Target, run_task};
use task::Task;

#[derive(Parser)]
#[command(
    name = "trueforge-eval",
    about = "Runs evaluation tasks through a TrueForge server's HTTP API"
)]
struct Args {
    /// The server's base URL.
    #[arg(long)]
    server: String,
    /// The directory of tasks (`<task>/prompt.txt`, `criteria.yaml`, `script.json`).
    #[arg(long, default_value = "bench/eval/tasks")]
    tasks: PathBuf,
    /// Runs of each task.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Where the JSON lines go (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The configurations to compare, comma-separated: defaults, no-offload (large tool results kept
    /// whole), no-recall (no compaction and no offload, hence no recall tools), no-sub-agents.
    #[arg(long, default_value = "defaults", value_delimiter = ',')]
    configs: Vec<String>,
    /// A JSON object of input-token budgets by task (`bench/eval/budgets.json`): a run over its task's
    /// budget by more than `--margin` fails as `over_budget`, so a change that makes the harness send more
    /// fails the run that gates it.
    #[arg(long)]
    budgets: Option<PathBuf>,
    /// How far over its budget a run may go (0.10: ten percent).
    #[arg(long, default_value_t = 0.10)]
    margin: f64,
    /// Also print a Markdown table (per task and configuration: pass rate, input tokens, wall time p50 / p90)
    /// on stderr.
    #[arg(long)]
    table: bool,
}

/// The agent spec fields a configuration changes.
fn configuration(name: &str) -> Result<Value, String> {
    Ok(match name {
        "defaults" => json!({}),
        "no-offload" => json!({"config": {"context_management": {"large_tool_response": {"enabled": false}}}}),
        "no-recall" => json!({"config": {"context_management": {
            "large_tool_response": {"enabled": false}, "compaction": {"enabled": false}}}}),
        "no-sub-agents" => json!({"config": {"dynamic_sub_agents": {"enabled": false}}}),
        other => {
            return Err(format!(
                "unknown configuration {other}: expected defaults, no-offload, no-recall or no-sub-agents"
            ));
        }
    })
}

/// The fake model and enterprise servers, alive while the runner runs.
struct Fakes {
    model: FakeLlm,
    _servers: Vec<EnterpriseMcpServer>,
}

async fn put(http: &reqwest::Client, server: &str, path: &str, body: Value) -> Result<(), RunError> {
    let response = http.put(format!("{server}{path}")).json(&body).send().await?;
    if !response.status().is_success() {
        return Err(RunError::Status {
            status: response.status().as_u16(),
            body: response.text().await.unwrap_or_default(),
        });
    }
    Ok(())
}

/// Starts the fakes and configures them on the server.
async fn set_up(http: &reqwest::Client, server: &str) -> Result<Fakes, String> {
    let model = FakeLlm::start().await;
    let mut servers = Vec::new();
    let configured = [
        (
            "tracker",
            Arc::new(Tracker::seeded()) as Arc<dyn trueforge_testkit::mcp_http::ToolServer>,
        ),
        ("crm", Arc::new(Crm::seeded())),
        ("files", Arc::new(FileServer::seeded())),
    ];
    for (name, tools) in configured {
        let started = EnterpriseMcpServer::start(tools)
            .await
            .map_err(|error| format!("cannot start the {name} server: {error}"))?;
        put(
            http,
            server,
            "/api/v1/settings/mcp-servers",
            json!({"manifest": {"type": "remote", "name": name, "url": started.url,
                "description": format!("The evaluation's fake {name}.")}}),
        )
        .await
        .map_err(|error| format!("cannot configure the MCP server {name}: {error}"))?;
        servers.push(started);
    }
    put(
        http,
        server,
        "/api/v1/settings/model-providers",
        json!({"manifest": {"type": "custom", "name": "eval", "base_url": model.base_url(Api::Chat),
            "auth": {"api_key": "eval-scripted"},
            "models": [{"model_id": "scripted", "name": "scripted", "properties": {"context_length": 128000}}]}}),
    )
    .await
    .map_err(|error| format!("cannot configure the scripted model: {error}"))?;
    Ok(Fakes {
        model,
        _servers: servers,
    })
}

async fn evaluate(args: Args) -> Result<bool, String> {
    let tasks = Task::load_all(&args.tasks).map_err(|error| error.to_string())?;
    let budgets: std::collections::BTreeMap<String, u64> = match &args.budgets {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
            serde_json::from_str(&text).map_err(|error| {
                format!(
                    "{} is not a JSON object of token counts by task: {error}",
                    path.display()
                )
            })?
        }
        None => std::collections::BTreeMap::new(),
    };
    if !(0.0..=10.0).contains(&args.margin) {
        return Err(format!("--margin must be from 0 to 10, not {}", args.margin));
    }
    if tasks.is_empty() {
        return Err(format!("no task in {}", args.tasks.display()));
    }
    let http = reqwest::Client::new();
    let server = args.server.trim_end_matches('/');
    let fakes = set_up(&http, server).await?;
    let base = json!({"model": {"name": "eval/scripted"},
        "mcp_servers": [{"name": "tracker", "preload": true}, {"name": "crm", "preload": true},
            {"name": "files", "preload": true}]});
    let configs = args
        .configs
        .iter()
        .map(|name| configuration(name).map(|patch| (name.clone(), patch)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out: Box<dyn Write> = match &args.out {
        Some(path) => {
            Box::new(std::fs::File::create(path).map_err(|error| format!("cannot write {}: {error}", path.display()))?)
        }
        None => Box::new(std::io::stdout()),
    };
    let mut all_passed = true;
    let mut results = Vec::new();
    for (config, patch) in &configs {
        let mut spec = base.clone();
        run::merge(&mut spec, patch);
        let target = Target {
            http: &http,
            server,
            spec: &spec,
        };
        for task in &tasks {
            for run in 1..=args.runs {
                let Some(script) = task.script.clone() else {
                    return Err(format!("task {} has no script.json for the scripted model", task.name));
                };
                // A run that ended early (a tool refused under this configuration) leaves responses behind.
                fakes.model.clear();
                fakes.model.load(script);
                let mut result = run_task(&target, task, config, run)
                    .await
                    .map_err(|error| format!("task {} run {run}: {error}", task.name))?;
                let last_request = fakes
                    .model
                    .requests()
                    .last()
                    .map(|request| request.body.to_string())
                    .unwrap_or_default();
                result.check_evidence(&task.criteria.evidence, &last_request);
                if let Some(budget) = budgets.get(&task.name) {
                    result.check_budget(*budget, args.margin);
                }
                all_passed &= result.outcome == "pass";
                let line = serde_json::to_string(&result).map_err(|error| error.to_string())?;
                writeln!(out, "{line}").map_err(|error| error.to_string())?;
                results.push(result);
            }
        }
    }
    if args.table {
        eprint!("{}", table::markdown(&results));
    }
    Ok(all_passed)
}

#[tokio::main]
async fn main() -> ExitCode {
    match evaluate(Args::parse()).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            eprintln!("trueforge-eval: {message}");
            ExitCode::from(2)
        }
    }
}
