//! The runner as a process against a real server on a socket: the bundled tasks run through the HTTP API
//! with the scripted model and the fake enterprise servers, and each writes a graded JSON line with its
//! figures. Bad input (no task directory, a task without facts) stops the runner with a clear message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use serde_json::{Value, json};
use trueforge_server::ServerConfig;

async fn start_server() -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = ServerConfig::for_data_dir(dir.path()).unwrap();
    let state = trueforge_server::state_for(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(trueforge_server::serve(listener, state, std::future::pending::<()>()));
    (base, dir)
}

/// Runs the runner against `server` with `args` (paths as given), off the async runtime.
async fn eval(server: &str, args: Vec<std::ffi::OsString>) -> std::process::Output {
    let server = server.to_owned();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_trueforge-eval"))
            .arg("--server")
            .arg(server)
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn tasks_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/eval/tasks")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundled_tasks_pass_with_the_scripted_model_and_report_their_figures() {
    let (server, _dir) = start_server().await;
    let output = eval(
        &server,
        vec![
            "--runs".into(),
            "2".into(),
            "--budgets".into(),
            tasks_dir().join("../budgets.json").into(),
            "--tasks".into(),
            tasks_dir().into(),
        ],
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let lookup: Vec<&Value> = lines.iter().filter(|line| line["task"] == "lookup").collect();
    assert_eq!(lookup.len(), 2, "two runs: {stdout}");
    for line in lookup {
        assert_eq!(line["outcome"], "pass", "{line}");
        assert_eq!(line["tool_calls"], 1, "get_issue ran: {line}");
        assert_eq!(line["model_calls"], 2, "{line}");
        assert!(line["input_tokens"].as_u64().unwrap() > 0, "{line}");
        assert!(line["output_tokens"].as_u64().unwrap() > 0, "{line}");
        assert!(line["wall_ms"].as_f64().unwrap() > 0.0, "{line}");
        assert!(line["first_token_ms"].as_f64().is_some(), "{line}");
        assert!(line["session_id"].as_str().is_some_and(|id| !id.is_empty()));
    }
    // The large report: read (and shortened by the harness), searched, read back in part.
    let report = lines.iter().find(|line| line["task"] == "large-report").unwrap();
    assert_eq!(report["outcome"], "pass", "{report}");
    assert_eq!(report["tool_calls"], 3, "{report}");
    assert_eq!(report["model_calls"], 4, "{report}");
    // Two pages of a list: both calls ran and the second page reached the model.
    let pages = lines.iter().find(|line| line["task"] == "multi-page").unwrap();
    assert_eq!(pages["outcome"], "pass", "{pages}");
    assert_eq!(pages["tool_calls"], 2, "{pages}");
    // Three sub-agents in one step, their answers back to the root.
    let parallel = lines.iter().find(|line| line["task"] == "parallel-sub-agents").unwrap();
    assert_eq!(parallel["outcome"], "pass", "{parallel}");
    assert_eq!(parallel["sub_agents"], 3, "{parallel}");
    // Paused turns answered by the runner (a question, an approval, a denial), a Code Mode script, two
    // servers in one step, a search then a read, and an account with its deals.
    for task in [
        "question",
        "approval",
        "denial",
        "code-mode",
        "two-servers",
        "search-then-read",
        "account-deals",
    ] {
        let line = lines.iter().find(|line| line["task"] == task).unwrap();
        assert_eq!(line["outcome"], "pass", "{line}");
    }
    // The large results were shortened (and the export saved for the script that counts it); the long task
    // compacted once and recalled what the summary left out.
    let shortened = |task: &str| {
        let line = lines.iter().find(|line| line["task"] == task).unwrap();
        assert_eq!(line["outcome"], "pass", "{line}");
        line["offloads"].as_u64().unwrap()
    };
    assert_eq!(shortened("large-report"), 1);
    assert_eq!(shortened("large-export"), 1);
    assert_eq!(shortened("lookup"), 0);
    let recall = lines.iter().find(|line| line["task"] == "compaction-recall").unwrap();
    assert_eq!(recall["outcome"], "pass", "{recall}");
    assert_eq!(recall["compactions"], 1, "{recall}");
    // Scripted runs split the wall time into the model's, the tools' and the harness's own.
    for line in &lines {
        let wall = line["wall_ms"].as_f64().unwrap();
        let overhead = line["overhead_ms"].as_f64().unwrap();
        let model = line["model_ms"].as_f64().unwrap();
        assert!(model > 0.0 && overhead > 0.0 && overhead <= wall, "{line}");
        assert!(line["tool_ms"].as_f64().is_some(), "{line}");
        // The fixed prompt of the run's first call is measured on every task.
        assert!(line["system_prompt_chars"].as_u64().unwrap() > 0, "{line}");
        assert!(line["tool_definitions_chars"].as_u64().unwrap() > 0, "{line}");
    }
    // Without a sandbox the default agent's system prompt is the budgeted one (prompt_budget.rs).
    let lookup_prompt = lines.iter().find(|line| line["task"] == "lookup").unwrap()["system_prompt_chars"].clone();
    assert!(lookup_prompt.as_u64().unwrap() <= 1_751, "{lookup_prompt}");
    let tools: f64 = lines.iter().map(|line| line["tool_ms"].as_f64().unwrap()).sum();
    assert!(tools > 0.0, "the fake servers' tool time is measured");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_task_directories_stop_the_runner_with_a_message() {
    let (server, _dir) = start_server().await;
    let empty = tempfile::tempdir().unwrap();
    let factless = tempfile::tempdir().unwrap();
    let task = factless.path().join("vague");
    std::fs::create_dir(&task).unwrap();
    std::fs::write(task.join("prompt.txt"), "Say something.").unwrap();
    std::fs::write(task.join("criteria.yaml"), "required: []\n").unwrap();
    for (dir, says) in [
        (empty.path().to_owned(), "no task in"),
        (factless.path().to_owned(), "lists no fact"),
        (empty.path().join("missing"), "cannot read"),
    ] {
        let output = eval(&server, vec!["--tasks".into(), dir.into()]).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configurations_are_compared_and_offloading_saves_tokens() {
    let (server, _dir) = start_server().await;
    let args = [
        "--configs",
        "defaults,no-offload,no-recall,no-sub-agents",
        "--table",
        "--tasks",
    ];
    let mut args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    args.push(tasks_dir().into());
    let output = eval(&server, args).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<Value> = stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let find = |task: &str, config: &str| {
        lines
            .iter()
            .find(|line| line["task"] == task && line["config"] == config)
            .unwrap_or_else(|| panic!("no {task} line for {config}: {stdout}\n{stderr}"))
            .clone()
    };
    // The report kept whole in context still answers, at several times the tokens.
    let (offloaded, whole) = (find("large-report", "defaults"), find("large-report", "no-offload"));
    assert_eq!(
        (&offloaded["outcome"], &whole["outcome"]),
        (&json!("pass"), &json!("pass"))
    );
    assert!(
        whole["input_tokens"].as_u64().unwrap() > 3 * offloaded["input_tokens"].as_u64().unwrap(),
        "the whole report in context costs far more: {whole} vs {offloaded}"
    );
    // Compaction with recall answers from a fraction of the context the whole conversation would take.
    let (compacted, kept) = (
        find("compaction-recall", "defaults"),
        find("compaction-recall", "no-recall"),
    );
    assert_eq!(
        (&compacted["outcome"], &kept["outcome"]),
        (&json!("pass"), &json!("pass"))
    );
    assert_eq!(
        (&compacted["compactions"], &kept["compactions"]),
        (&json!(1), &json!(0))
    );
    assert!(
        kept["input_tokens"].as_u64().unwrap() > compacted["input_tokens"].as_u64().unwrap() * 3 / 2,
        "{kept} vs {compacted}"
    );
    // The export kept whole is never saved, so the script that counts it finds no file: the scripted
    // trajectory depends on the offload.
    assert_eq!(find("large-export", "no-offload")["outcome"], "fail");
    // Without sub-agents the parallel task cannot be done: it fails, and so does the run.
    let alone = find("parallel-sub-agents", "no-sub-agents");
    assert_eq!(alone["outcome"], "fail", "{alone}");
    assert_eq!(output.status.code(), Some(1), "a run failed: {stderr}");
    assert!(stderr.contains("| task | configuration | pass |"), "{stderr}");
    assert!(
        stderr.contains("| parallel-sub-agents | no-sub-agents | 0/1 |"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_its_token_budget_fails_the_gate() {
    let (server, _dir) = start_server().await;
    let budgets = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(budgets.path(), r#"{"lookup": 1000}"#).unwrap();
    let args = vec![
        "--margin".into(),
        "0.1".into(),
        "--budgets".into(),
        budgets.path().into(),
        "--tasks".into(),
        tasks_dir().into(),
    ];
    let output = eval(&server, args).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lookup: Value = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["task"] == "lookup")
        .unwrap();
    assert_eq!(lookup["outcome"], "over_budget", "{lookup}");
    assert_eq!(output.status.code(), Some(1));
    let multi_page: Value = stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["task"] == "multi-page")
        .unwrap();
    assert_eq!(
        multi_page["outcome"], "pass",
        "tasks without a budget are not held to one: {multi_page}"
    );
}

/// A task for real-model mode: no script, a fact and a rubric.
fn real_task() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("real-lookup");
    std::fs::create_dir(&task).unwrap();
    std::fs::write(task.join("prompt.txt"), "Who is ISS-0042 assigned to?").unwrap();
    std::fs::write(
        task.join("criteria.yaml"),
        "required: [Ines Costa]\njudge: Names the assignee and says where it was found.\n",
    )
    .unwrap();
    dir
}

/// Real-model mode, offline: a fake model stands in for the provider's endpoint (a `custom` provider the
/// runner configures with the key from its environment), and for the judge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_runs_tasks_without_scripts_and_a_judge_grades_them() {
    use trueforge_testkit::fake_llm::{Api, FakeLlm, ScriptedStream, ScriptedToolCall};

    let (server, _dir) = start_server().await;
    let provider = FakeLlm::start().await;
    let tasks = real_task();
    let run = |judge_says: &'static str| {
        provider
            .push(ScriptedStream::default().tool_call(ScriptedToolCall::new("get_issue", json!({"id": "ISS-0042"}))));
        provider.push(ScriptedStream::text(
            "ISS-0042 is assigned to Ines Costa, per the tracker.",
        ));
        provider.push(ScriptedStream::text(judge_says));
        let server = server.clone();
        let base_url = provider.base_url(Api::Chat);
        let tasks = tasks.path().to_owned();
        tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_trueforge-eval"))
                .env("TRUEFORGE_EVAL_API_KEY", "real-key")
                .args([
                    "--server",
                    &server,
                    "--model",
                    "custom/real-model",
                    "--model-base-url",
                    &base_url,
                ])
                .args([
                    "--judge",
                    "custom/judge-model",
                    "--judge-base-url",
                    &base_url,
                    "--tasks",
                ])
                .arg(tasks)
                .output()
                .unwrap()
        })
    };

    let passed = run("PASS - it names Ines Costa and the tracker.").await.unwrap();
    let stdout = String::from_utf8_lossy(&passed.stdout);
    assert!(
        passed.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&passed.stderr)
    );
    let line: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(line["outcome"], "pass", "{line}");
    assert_eq!(
        line["judge"],
        json!({"passed": true, "reason": "it names Ines Costa and the tracker."})
    );
    assert_eq!(line["tool_calls"], 1, "the real model's tool call ran: {line}");
    assert_eq!(
        line["overhead_ms"],
        Value::Null,
        "a real model's time is not known to the runner"
    );

    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer real-key"),
            "the runner's key configured"
        );
    }
    assert_eq!(requests[0].body["model"], "real-model");
    assert!(
        requests[0].body.to_string().contains("get_issue"),
        "the agent had the tracker's tools"
    );
    let judged = &requests[2].body;
    assert_eq!(judged["model"], "judge-model");
    let judged_text = judged.to_string();
    assert!(
        judged_text.contains("Names the assignee and says where it was found."),
        "{judged_text}"
    );
    assert!(judged_text.contains("ISS-0042 is assigned to Ines Costa, per the tracker."));
    assert!(
        !judged_text.contains("get_issue"),
        "the judge has no tools: {judged_text}"
    );

    // A failing verdict fails a run whose facts were all there.
    let failed = run("FAIL: it does not say where the fact came from.").await.unwrap();
    let line: Value = serde_json::from_str(String::from_utf8_lossy(&failed.stdout).trim()).unwrap();
    assert_eq!(line["outcome"], "fail", "{line}");
    assert_eq!(line["missing_facts"], json!([]));
    assert_eq!(failed.status.code(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_mode_bad_input_is_refused_with_a_message() {
    let (server, _dir) = start_server().await;
    let tasks = real_task();
    for (args, says) in [
        (vec!["--model", "gpt-5"], "--model must be"),
        (vec!["--model", "nosuch/model"], "unknown provider"),
        (vec!["--model", "custom/x"], "--model-base-url"),
        (vec!["--judge", "custom/x"], "--judge-base-url"),
    ] {
        let mut all: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        all.push("--tasks".into());
        all.push(tasks.path().into());
        let output = eval(&server, all).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{says}: {stderr}");
    }
    // The scripted model cannot run a task without a script.
    let output = eval(&server, vec!["--tasks".into(), tasks.path().into()]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr.contains("has no script.json"), "{stderr}");
}

/// With `TRUEFORGE_API_KEY` set, the runner's requests carry it as their bearer token (a hosted server with
/// login needs it); a listener that reads the first request and hangs up sees the header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_goes_with_every_request() {
    use tokio::io::AsyncReadExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = format!("http://{}", listener.local_addr().unwrap());
    let tasks = real_task();
    let tasks_path = tasks.path().to_owned();
    let runner = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_trueforge-eval"))
            .env("TRUEFORGE_API_KEY", "tfk_runner_key")
            .args(["--server", &server, "--tasks"])
            .arg(tasks_path)
            .output()
            .unwrap()
    });
    let (mut socket, _) = listener.accept().await.unwrap();
    let mut head = Vec::new();
    let mut buffer = [0_u8; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = socket.read(&mut buffer).await.unwrap();
        assert!(read > 0, "the runner closed before sending a request");
        head.extend_from_slice(&buffer[..read]);
    }
    drop(socket);
    drop(listener);
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    assert!(head.contains("authorization: bearer tfk_runner_key"), "{head}");
    let output = runner.await.unwrap();
    assert_eq!(output.status.code(), Some(2), "a server that hangs up is an error");
}

/// A well-known provider the server already has is the operator's: with a key of its own in the environment,
/// the runner still uses the server's setting as it is and says so, instead of replacing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_providers_existing_setting_is_used_not_replaced() {
    use trueforge_testkit::fake_llm::{Api, FakeLlm, ScriptedStream, ScriptedToolCall};

    let (server, _dir) = start_server().await;
    let provider = FakeLlm::start().await;
    let operators = json!({"manifest": {"type": "openai", "auth": {"api_key": "operator-key"},
        "base_url": provider.base_url(Api::Responses),
        "models": [{"model_id": "gpt-x", "name": "gpt-x", "properties": {}},
            {"model_id": "gpt-y", "name": "gpt-y", "properties": {}}]}});
    let put = reqwest::Client::new()
        .put(format!("{server}/api/v1/settings/model-providers"))
        .json(&operators)
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{}", put.text().await.unwrap());
    provider.push(ScriptedStream::default().tool_call(ScriptedToolCall::new("get_issue", json!({"id": "ISS-0042"}))));
    provider.push(ScriptedStream::text("Ines Costa has it."));
    let tasks = real_task();
    let tasks_path = tasks.path().to_owned();
    let server_url = server.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_trueforge-eval"))
            .env("OPENAI_API_KEY", "runner-key")
            .env_remove("TRUEFORGE_EVAL_API_KEY")
            .args(["--server", &server_url, "--model", "openai/gpt-x", "--tasks"])
            .arg(tasks_path)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("using the server's own openai provider"), "{stderr}");
    for request in provider.requests() {
        assert_eq!(request.header("authorization"), Some("Bearer operator-key"));
    }
    let listed: Value = reqwest::get(format!("{server}/api/v1/settings/model-providers"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let openai = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|provider| provider["name"] == "openai")
        .unwrap();
    assert_eq!(openai["manifest"]["models"].as_array().unwrap().len(), 2, "{openai}");
}
