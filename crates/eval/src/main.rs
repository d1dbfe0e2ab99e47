//! `trueforge-eval --server URL [--tasks DIR] [--runs N] [--out FILE]`: runs every task of a directory as a
//! session through the HTTP API of a running TrueForge-compatible server, with the fake enterprise MCP servers
//! (a project tracker, a CRM, a file server) it runs in its own process, on the scripted model (default) or a
//! real one (`--model PROVIDER/MODEL`), and writes one JSON line per task and run: outcome, tokens, cost, wall
//! time, time to first token, calls, and for scripted runs the harness's own time.
//!
//! The server must be reachable from this process's loopback addresses (the fake model and MCP servers
//! listen on 127.0.0.1). The runner configures them on the server as the provider `eval` and the MCP
//! servers `tracker`, `crm` and `files` (replacing settings of those names); a real model's provider is
//! configured with the runner's key when it has one.

mod fakes;
mod judge;
mod model;
mod run;
mod table;
mod task;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use serde_json::{Value, json};

use model::{ModelChoice, RealModel};
use run::{Target, run_task};
use task::Task;
use trueforge_testkit::fake_llm::FakeLlm;

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
    /// `scripted` (the fake model plays each task's `script.json`; deterministic, offline) or
    /// PROVIDER/MODEL (such as `openai/gpt-5.4-mini`, or `custom/NAME` with `--model-base-url`). A real
    /// provider is configured on the server with the key in `TRUEFORGE_EVAL_API_KEY` or the provider's usual
    /// variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, …); without one, the server's own
    /// setting for that provider is used.
    #[arg(long, default_value = "scripted")]
    model: String,
    /// The endpoint of a real model's provider (required for `custom`).
    #[arg(long)]
    model_base_url: Option<String>,
    /// A model (PROVIDER/MODEL) that also grades each answer against its task's `judge` rubric; a FAIL fails
    /// the run. The fact check stays in force.
    #[arg(long)]
    judge: Option<String>,
    /// The endpoint of the judge's provider (required for `custom`).
    #[arg(long)]
    judge_base_url: Option<String>,
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

/// The HTTP client; with an API key (`TRUEFORGE_API_KEY`, as the CLI reads it) every request carries it as
/// its bearer token, so the runner reaches a hosted server with login.
fn client(api_key: Option<&str>) -> Result<reqwest::Client, String> {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(key) = api_key.filter(|key| !key.is_empty()) {
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {key}"))
            .map_err(|_| "TRUEFORGE_API_KEY is not a valid header value".to_owned())?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .map_err(|error| format!("cannot make the HTTP client: {error}"))
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
    let env = |name: &str| std::env::var(name).ok();
    let model = ModelChoice::parse(&args.model, args.model_base_url.as_deref(), env)?;
    let judge = args
        .judge
        .as_deref()
        .map(|judge| RealModel::parse(judge, args.judge_base_url.as_deref(), "eval-judge", env))
        .transpose()?;
    let mut real: Vec<&RealModel> = judge.iter().collect();
    if let ModelChoice::Real(model) = &model {
        real.push(model);
    }
    let http = client(env("TRUEFORGE_API_KEY").as_deref())?;
    let server = args.server.trim_end_matches('/');
    let fakes = fakes::set_up(&http, server, &real, matches!(model, ModelChoice::Scripted)).await?;
    let model_name = match &model {
        ModelChoice::Scripted => fakes::SCRIPTED_MODEL.to_owned(),
        ModelChoice::Real(model) => model.spec_name(),
    };
    let base = json!({"model": {"name": model_name},
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
                if let Some(scripted) = &fakes.model {
                    let Some(script) = task.script.clone() else {
                        return Err(format!("task {} has no script.json for the scripted model", task.name));
                    };
                    // A run that ended early (a tool refused under this configuration) leaves responses behind.
                    scripted.clear();
                    scripted.load(script);
                }
                let before = fakes.busy();
                let requests_before = fakes.model.as_ref().map_or(0, FakeLlm::request_count);
                let mut result = run_task(&target, task, config, run)
                    .await
                    .map_err(|error| format!("task {} run {run}: {error}", task.name))?;
                if let Some(scripted) = &fakes.model {
                    let busy = fakes.busy().since(before);
                    result.set_busy(busy.model, busy.tools, busy.either);
                    let requests = scripted.requests_since(requests_before);
                    if let Some(first) = requests.first() {
                        result.measure_fixed_prompt(&first.body);
                    }
                    let last_request = requests
                        .last()
                        .map(|request| request.body.to_string())
                        .unwrap_or_default();
                    result.check_evidence(&task.criteria.evidence, &last_request);
                    // Budgets are the scripted model's token counts; a real model's tokenizer differs.
                    if let Some(budget) = budgets.get(&task.name) {
                        result.check_budget(*budget, args.margin);
                    }
                }
                if let (Some(judge), Some(rubric)) = (&judge, &task.criteria.judge) {
                    let verdict = judge::judge(&target, &judge.spec_name(), &task.prompt, rubric, &result.answer)
                        .await
                        .map_err(|error| format!("task {} run {run}: the judge: {error}", task.name))?;
                    result.set_verdict(verdict);
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
