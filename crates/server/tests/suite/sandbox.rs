//! The sandbox end to end over a real socket, with the fake model calling `exec` on the local provider
//! (bubblewrap, installed by `scripts/test.sh`): a script written and run, a file sent with the message, an
//! artifact downloaded (and every refused download), a skill from a local git repository, Code Mode chaining
//! two tools of a real server-everything, a cancelled turn killing its command, a sub-agent in the same
//! sandbox, and a server whose sandbox is off.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use trueforge_testkit::fake_llm::{ScriptedResponse, ScriptedStream, ScriptedToolCall};

use crate::support::{Everything, MODEL, TestServer, first_event, types};

fn exec_call(command: &str) -> ScriptedStream {
    tool_call("exec", json!({"intent": "run it", "command": command}))
}

fn tool_call(name: &str, arguments: Value) -> ScriptedStream {
    ScriptedStream {
        tool_calls: vec![ScriptedToolCall {
            id: None,
            name: name.to_owned(),
            arguments,
        }],
        ..ScriptedStream::default()
    }
}

async fn sandbox_session(server: &TestServer, extra: Value) -> String {
    let mut spec = json!({"model": {"name": MODEL}, "config": {"sandbox": {"enabled": true}}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        for (key, value) in extra {
            spec.insert(key.clone(), value.clone());
        }
    }
    let (status, body) = server.post("/api/v1/sessions", json!({"agent": {"spec": spec}})).await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

fn user(text: &str) -> Value {
    json!({"input": [{"type": "user.message", "content": text}]})
}

/// The `exec` results of a turn, parsed.
fn exec_results(frames: &[(u64, Value)]) -> Vec<Value> {
    frames
        .iter()
        .filter(|(_, event)| event["type"] == "tool.response")
        .map(|(_, event)| serde_json::from_str(event["content"].as_str().unwrap()).unwrap())
        .collect()
}

fn turn_id(frames: &[(u64, Value)]) -> String {
    first_event(frames, "turn.created")["turn_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Runs one turn in which the model calls `exec` once with `command`; returns its frames.
async fn run_command(server: &TestServer, session: &str, command: &str) -> Vec<(u64, Value)> {
    server.fake.push(exec_call(command));
    server.fake.push(ScriptedResponse::text("done"));
    let frames = server.stream_turn(session, user("go")).await;
    assert_eq!(
        frames.last().unwrap().1["state"]["status"],
        "done",
        "{:?}",
        types(&frames)
    );
    frames
}

#[tokio::test]
async fn the_agent_writes_and_runs_a_python_script_in_a_sandbox_that_persists() {
    let server = TestServer::start().await;
    let session = sandbox_session(&server, json!({})).await;
    let frames = run_command(
        &server,
        &session,
        "cat > hello.py <<'EOF'\nprint(6 * 7)\nEOF\npython3 hello.py",
    )
    .await;
    let created: Vec<&Value> = frames
        .iter()
        .map(|(_, event)| event)
        .filter(|event| event["type"] == "sandbox.created")
        .collect();
    assert_eq!(created.len(), 1, "{:?}", types(&frames));
    let sandbox_id = created[0]["sandbox_id"].as_str().unwrap().to_owned();
    assert!(sandbox_id.starts_with("v1:local:default."), "{sandbox_id}");
    assert_eq!(
        exec_results(&frames),
        vec![json!({"success": true, "response": {"exitCode": 0, "result": "42\n"}})]
    );

    // The next turn reattaches the same sandbox: the file is there, and nothing new is created.
    let frames = run_command(&server, &session, "cat hello.py && echo exit-$?").await;
    assert!(!types(&frames).contains(&"sandbox.created".to_owned()));
    let result = &exec_results(&frames)[0];
    assert!(
        result["response"]["result"].as_str().unwrap().contains("print(6 * 7)"),
        "{result}"
    );

    // A new conversation in the same session works in the same workspace.
    server.fake.push(exec_call("cat hello.py"));
    server.fake.push(ScriptedResponse::text("done"));
    let frames = server
        .stream_turn(
            &session,
            json!({"input": [{"type": "user.message", "content": "again"}], "previous_turn_id": "none"}),
        )
        .await;
    assert!(
        !types(&frames).contains(&"sandbox.created".to_owned()),
        "{:?}",
        types(&frames)
    );
    assert!(
        exec_results(&frames)[0]["response"]["result"]
            .as_str()
            .unwrap()
            .contains("print(6 * 7)")
    );

    // The model was told about its sandbox, and a failing command is a result, not an error.
    let request = server.fake.requests().last().unwrap().body.to_string();
    assert!(
        request.contains("/workspace/uploads"),
        "the sandbox section is in the prompt"
    );
    let frames = run_command(&server, &session, "exit 3").await;
    assert_eq!(
        exec_results(&frames),
        vec![json!({"success": true, "response": {"exitCode": 3, "result": ""}})]
    );
}

#[tokio::test]
async fn files_sent_with_a_message_are_uploaded_byte_for_byte() {
    let server = TestServer::start().await;
    let session = sandbox_session(&server, json!({})).await;
    let csv = base64::engine::general_purpose::STANDARD.encode("a,b\n1,2\n");
    server
        .fake
        .push(exec_call("cat uploads/data.csv && od -An -tx1 uploads/blob.bin"));
    server.fake.push(ScriptedResponse::text("done"));
    let frames = server
        .stream_turn(
            &session,
            json!({"input": [{"type": "user.message", "content": [
                {"type": "text", "text": "what is in these?"},
                {"type": "file", "name": "data.csv", "data": format!("data:text/csv;base64,{csv}")},
                {"type": "file", "name": "/blob.bin", "data": "data:application/octet-stream;base64,AP8A/w=="}
            ]}]}),
        )
        .await;
    let result = &exec_results(&frames)[0];
    assert_eq!(result["response"]["result"], "a,b\n1,2\n 00 ff 00 ff\n", "{result}");
    // The model read where they are (the reference's announcement) instead of their bytes.
    let first_request = server.fake.requests()[0].body.to_string();
    assert!(
        first_request.contains("Uploaded files (2)") && first_request.contains("/workspace/uploads/blob.bin"),
        "{first_request}"
    );
    assert!(
        !first_request.contains(&csv),
        "the file's bytes are not sent to the model"
    );
    // The turn keeps the input as it was sent.
    let (_, turn) = server
        .get(&format!("/api/v1/sessions/{session}/turns/{}", turn_id(&frames)))
        .await;
    assert!(turn.to_string().contains(&csv), "{turn}");
    let (_, session_body) = server.get(&format!("/api/v1/sessions/{session}")).await;
    assert_eq!(
        session_body["data"]["title"], "what is in these?",
        "the title is the user's text"
    );

    // A name that would leave the uploads directory, and a file for an agent without a sandbox: refused.
    let bad_name = json!({"input": [{"type": "user.message", "content": [
        {"type": "file", "name": "../escape.csv", "data": format!("data:text/csv;base64,{csv}")}
    ]}]});
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{session}/turns"), bad_name.clone())
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("plain file name"),
        "{body}"
    );
    let plain = server.session().await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{plain}/turns"),
            json!({"input": [{"type": "user.message", "content": [
                {"type": "file", "name": "data.csv", "data": format!("data:text/csv;base64,{csv}")}
            ]}]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("needs a sandbox"),
        "{body}"
    );
}

#[tokio::test]
async fn an_upload_over_the_limit_is_refused() {
    let server = TestServer::start_with(|config| config.sandbox.file_max_bytes = 8).await;
    let session = sandbox_session(&server, json!({})).await;
    let data = base64::engine::general_purpose::STANDARD.encode("0123456789abcdef");
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session}/turns"),
            json!({"input": [{"type": "user.message", "content": [
                {"type": "file", "name": "big.txt", "data": format!("data:text/plain;base64,{data}")}
            ]}]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("too large"),
        "{body}"
    );
}

async fn download(
    server: &TestServer,
    session: &str,
    turn: &str,
    path: &str,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let response = server
        .http
        .get(server.url(&format!(
            "/api/v1/sessions/{session}/turns/{turn}/download-sandbox-file?path={}",
            query_encoded(path)
        )))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.unwrap().to_vec())
}

fn query_encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => (byte as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

fn message_of(bytes: &[u8]) -> String {
    let body: Value = serde_json::from_slice(bytes).unwrap();
    body["error"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn artifacts_download_and_bad_downloads_get_the_reference_statuses() {
    let server = TestServer::start_with(|config| config.sandbox.file_max_bytes = 1024).await;
    let session = sandbox_session(&server, json!({})).await;
    let frames = run_command(
        &server,
        &session,
        "mkdir -p out && printf 'a,b\\n1,2\\n' > out/report.csv && head -c 2048 /dev/zero > big.bin \
         && ln -s /etc/passwd leak && ln -s /root rootdir",
    )
    .await;
    let turn = turn_id(&frames);

    let (status, headers, bytes) = download(&server, &session, &turn, "/workspace/out/report.csv").await;
    assert_eq!(status, 200);
    assert_eq!(bytes, b"a,b\n1,2\n");
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .contains("filename=\"report.csv\""),
        "{headers:?}"
    );

    for (path, expected) in [
        ("/workspace/out", 400),
        ("/workspace/missing.txt", 404),
        ("/workspace/../etc/passwd", 400),
        ("workspace/out/report.csv", 400),
        ("/workspace/big.bin", 413),
        ("/workspace/leak", 400),
        ("/workspace/rootdir/.bashrc", 400),
        ("/etc/passwd", 400),
    ] {
        let (status, _, bytes) = download(&server, &session, &turn, path).await;
        assert_eq!(status, expected, "{path}: {}", String::from_utf8_lossy(&bytes));
        assert!(!message_of(&bytes).is_empty());
    }

    // A turn without a sandbox, and a turn of another session.
    let plain = server.session().await;
    server.fake.push(ScriptedResponse::text("hi"));
    let plain_frames = server.stream_turn(&plain, user("hi")).await;
    let (status, _, bytes) = download(&server, &plain, &turn_id(&plain_frames), "/workspace/x").await;
    assert_eq!(status, 412, "{}", String::from_utf8_lossy(&bytes));
    let (status, _, _) = download(&server, &plain, &turn, "/workspace/out/report.csv").await;
    assert_eq!(status, 404);

    // The workspace removed on the host (an operator cleaning up): the sandbox is gone.
    let workspaces = server.dir.path().join("sandboxes");
    let removed = std::fs::read_dir(&workspaces).unwrap().count();
    assert!(removed > 0, "no workspace under {}", workspaces.display());
    std::fs::remove_dir_all(&workspaces).unwrap();
    let (status, _, bytes) = download(&server, &session, &turn, "/workspace/out/report.csv").await;
    assert_eq!(status, 410, "{}", String::from_utf8_lossy(&bytes));
    assert!(!message_of(&bytes).is_empty());
}

/// A git repository with a skill in `skills/greeting` (and another directory that must not be copied).
fn skill_repository(dir: &std::path::Path) -> String {
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.org")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.org")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    std::fs::create_dir_all(dir.join("skills/greeting")).unwrap();
    std::fs::create_dir_all(dir.join("other")).unwrap();
    std::fs::write(
        dir.join("skills/greeting/SKILL.md"),
        "# Greeting\nGreet people with the word WOMBAT.\n",
    )
    .unwrap();
    std::fs::write(dir.join("other/secret.txt"), "not part of the skill").unwrap();
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "skill"]);
    format!("file://{}", dir.display())
}

async fn configure_skill(server: &TestServer, name: &str, url: &str, git_ref: &str) {
    let (status, body) = server
        .post(
            "/api/v1/settings/skills",
            json!({"manifest": {"type": "git", "name": name, "url": url, "path": "skills/greeting",
                "ref": git_ref, "description": "How to greet people."}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn a_skill_from_a_local_repository_is_installed_advertised_and_read() {
    let repo = tempfile::tempdir().unwrap();
    let url = skill_repository(repo.path());
    let server = TestServer::start_with(|config| config.sandbox.skills_allow_file_urls = true).await;
    configure_skill(&server, "greeting", &url, "main").await;
    configure_skill(&server, "no-such-ref", &url, "v9").await;
    let session = sandbox_session(&server, json!({"skills": [{"name": "greeting"}]})).await;
    let frames = run_command(
        &server,
        &session,
        "cat skills/greeting/SKILL.md; ls skills/greeting; ls other",
    )
    .await;
    let output = exec_results(&frames)[0]["response"]["result"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(output.contains("WOMBAT"), "{output}");
    assert!(
        !output.contains("secret.txt"),
        "only the skill's directory is copied: {output}"
    );
    let prompt = server.fake.requests()[0].body.to_string();
    assert!(
        prompt.contains("greeting")
            && prompt.contains("How to greet people.")
            && prompt.contains("/workspace/skills/greeting"),
        "{prompt}"
    );
    assert!(!prompt.contains("WOMBAT"), "the skill's content is not preloaded");

    // A ref that does not exist: the command fails with the reason, the session stays usable.
    let broken = sandbox_session(&server, json!({"skills": [{"name": "no-such-ref"}]})).await;
    server.fake.push(exec_call("echo hi"));
    server.fake.push(ScriptedResponse::text("done"));
    let frames = server.stream_turn(&broken, user("go")).await;
    let result = &exec_results(&frames)[0];
    assert_eq!(result["success"], false, "{result}");
    assert!(
        result["error"].as_str().unwrap().contains("\"v9\" not found"),
        "{result}"
    );
    // Two commands in one turn with the failing skill: the sandbox made for the first is kept (its
    // preparation is tried again), never a second one made.
    let broken_again = sandbox_session(&server, json!({"skills": [{"name": "no-such-ref"}]})).await;
    server.fake.push(exec_call("echo one"));
    server.fake.push(exec_call("echo two"));
    server.fake.push(ScriptedResponse::text("done"));
    let frames = server.stream_turn(&broken_again, user("go")).await;
    assert_eq!(exec_results(&frames).len(), 2, "{:?}", types(&frames));
    let created = types(&frames).iter().filter(|kind| *kind == "sandbox.created").count();
    assert_eq!(created, 1, "{:?}", types(&frames));

    // A URL that is not a git repository: a valid file URL, so it is configured; the turn says why it fails.
    let empty = tempfile::tempdir().unwrap();
    configure_skill(
        &server,
        "not-a-repo",
        &format!("file://{}", empty.path().display()),
        "main",
    )
    .await;
    let session = sandbox_session(&server, json!({"skills": [{"name": "not-a-repo"}]})).await;
    server.fake.push(exec_call("echo hi"));
    server.fake.push(ScriptedResponse::text("done"));
    let frames = server.stream_turn(&session, user("go")).await;
    assert_eq!(exec_results(&frames)[0]["success"], false);
    // Without the operator's switch, file:// URLs are refused outright.
    let strict = TestServer::start().await;
    let (status, body) = strict
        .post(
            "/api/v1/settings/skills",
            json!({"manifest": {"type": "git", "name": "greeting", "url": url, "ref": "main",
                "description": "d"}}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn code_mode_chains_two_tools_and_refuses_one_that_needs_approval() {
    let everything = Everything::start().await;
    let server = TestServer::start().await;
    everything.configure_on(&server).await;
    let session = sandbox_session(&server, json!({"mcp_servers": [{"name": "everything"}]})).await;
    let script = "cat > chain.py <<'EOF'\n\
        import re\n\
        from trueforge_tools import call_tool\n\
        total = call_tool('everything', 'get-sum', {'a': 19, 'b': 23})\n\
        number = re.search(r'\\d+\\.?\\d*$', str(total).rstrip('.')).group(0)\n\
        echoed = call_tool('everything', 'echo', {'message': 'sum=' + number})\n\
        print(echoed)\n\
        try:\n    call_tool('everything', 'toggle-simulated-logging', {})\nexcept Exception as error:\n    print('refused:', error)\n\
        EOF\n\
        python3 chain.py";
    let frames = run_command(&server, &session, script).await;
    let output = exec_results(&frames)[0]["response"]["result"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(output.contains("sum=42"), "{output}");
    assert!(
        output.contains("refused:") && output.contains("approval"),
        "a tool needing approval is refused from code: {output}"
    );
    let prompt = server.fake.requests()[0].body.to_string();
    assert!(
        prompt.contains("trueforge_tools"),
        "the Code Mode section is in the prompt"
    );

    // The bridge refuses a request without the turn's secret.
    let frames = run_command(
        &server,
        &session,
        "TRUEFORGE_BRIDGE_TOKEN=wrong python3 -m trueforge_tools call-tool everything echo '{\"message\":\"x\"}'; echo exit=$?",
    )
    .await;
    let output = exec_results(&frames)[0]["response"]["result"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(output.contains("exit=1") && output.contains("unauthorized"), "{output}");

    // Each turn's bridge is gone with the turn: no socket or directory is left behind.
    let bridges = server.dir.path().join("run/bridges");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::fs::read_dir(&bridges).unwrap().count() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "bridge directories left in {}",
            bridges.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn cancelling_a_turn_kills_its_running_command() {
    let server = TestServer::start().await;
    let session = sandbox_session(&server, json!({})).await;
    server.fake.push(exec_call("sleep 30; touch marker"));
    let started = std::time::Instant::now();
    let turn = tokio::spawn({
        let http = server.http.clone();
        let url = server.url(&format!("/api/v1/sessions/{session}/turns"));
        async move {
            http.post(url)
                .json(&user("go"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    });
    // Wait until the model asked for the command, then give it time to start, then cancel.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while server.fake.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the model was never called");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{session}/cancel"), json!({}))
        .await;
    assert!(status < 300, "{body}");
    let text = tokio::time::timeout(Duration::from_secs(15), turn)
        .await
        .unwrap()
        .unwrap();
    assert!(text.contains("cancelled"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the command was not left to run 30 s"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let frames = run_command(&server, &session, "test -e marker && echo still-ran || echo killed").await;
    // The new turn first closes the call the cancel interrupted, then runs its own.
    let results = exec_results(&frames);
    assert!(
        results[0]["error"].as_str().unwrap().contains("interrupted"),
        "{results:?}"
    );
    assert_eq!(results[1]["response"]["result"], "killed\n", "{results:?}");
}

#[tokio::test]
async fn a_sub_agent_works_in_the_same_sandbox() {
    let server = TestServer::start().await;
    let session = sandbox_session(&server, json!({})).await;
    server.fake.push(exec_call("echo from-root > shared.txt"));
    server.fake.push(tool_call(
        "create_sub_agent",
        json!({"name": "reader", "input": "Read shared.txt in the sandbox."}),
    ));
    server.fake.push(exec_call("cat shared.txt"));
    server.fake.push(ScriptedResponse::text("it says from-root"));
    server.fake.push(ScriptedResponse::text("done"));
    let frames = server.stream_turn(&session, user("go")).await;
    assert_eq!(
        frames.last().unwrap().1["state"]["status"],
        "done",
        "{:?}",
        types(&frames)
    );
    let sub_agent_read = frames.iter().any(|(_, event)| {
        event["type"] == "tool.response"
            && event["thread_id"] != "main"
            && event["content"].as_str().unwrap().contains("from-root")
    });
    assert!(
        sub_agent_read,
        "{:?}",
        frames.iter().map(|(_, e)| e.to_string()).collect::<Vec<_>>()
    );
    let created = types(&frames).iter().filter(|kind| *kind == "sandbox.created").count();
    assert_eq!(created, 1, "one sandbox for the root and its sub-agent");
}

#[tokio::test]
async fn without_a_sandbox_an_agent_that_needs_one_is_refused_with_the_reason() {
    let server = TestServer::start_with(|config| config.sandbox.local = false).await;
    let (status, body) = server.get("/api/v1/capabilities").await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["sandbox"]["enabled"], false, "{body}");
    assert!(
        body["data"]["sandbox"]["reason"]
            .as_str()
            .unwrap()
            .contains("TRUEFORGE_SANDBOX=off")
    );
    assert_eq!(body["data"]["skill"]["enabled"], false);
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL}, "config": {"sandbox": {"enabled": true}}}}}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no sandbox provider is configured"),
        "{body}"
    );

    let on = TestServer::start().await;
    let (_, body) = on.get("/api/v1/capabilities").await;
    assert_eq!(body["data"]["sandbox"], json!({"enabled": true}), "{body}");
    assert_eq!(body["data"]["skill"], json!({"enabled": true}));
    assert_eq!(body["data"]["limits"]["max_sandbox_file_bytes"], 20 * 1024 * 1024);
}

#[tokio::test]
async fn a_daytona_provider_is_configured_checked_and_used_end_to_end() {
    use trueforge_testkit::fake_daytona::{FAKE_DAYTONA_API_KEY, FakeDaytona};
    let daytona = FakeDaytona::start().await;
    let api_url = daytona.api_url();
    let server = TestServer::start_with(|config| {
        config.sandbox.local = false;
        config.sandbox.daytona_api_url = api_url;
    })
    .await;
    let (_, body) = server.get("/api/v1/capabilities").await;
    assert_eq!(body["data"]["sandbox"]["enabled"], false, "{body}");
    let manifest = |key: &str| {
        json!({"manifest": {"type": "daytona", "auth": {"api_key": key}, "exec_timeout_ms": 60000,
            "auto_stop_interval_in_minutes": 15, "auto_archive_interval_in_minutes": 0,
            "auto_delete_interval_in_minutes": 0}})
    };
    let (status, body) = server
        .send(
            reqwest::Method::PUT,
            "/api/v1/settings/sandbox-providers",
            Some(manifest("wrong")),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["error"]["message"],
        "Daytona rejected the API key — check the credentials"
    );
    let (status, body) = server
        .send(
            reqwest::Method::PUT,
            "/api/v1/settings/sandbox-providers",
            Some(manifest(FAKE_DAYTONA_API_KEY)),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["status"], "ready", "{body}");
    assert_ne!(
        body["data"]["manifest"]["auth"]["api_key"], FAKE_DAYTONA_API_KEY,
        "the key is redacted"
    );
    let (_, body) = server.get("/api/v1/capabilities").await;
    assert_eq!(body["data"]["sandbox"]["enabled"], true, "{body}");

    let session = sandbox_session(&server, json!({})).await;
    let frames = run_command(&server, &session, "printf remote > note.txt && cat note.txt").await;
    let sandbox_id = first_event(&frames, "sandbox.created")["sandbox_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(sandbox_id.starts_with("v1:daytona:default."), "{sandbox_id}");
    assert_eq!(exec_results(&frames)[0]["response"]["result"], "remote");
    let (status, _, bytes) = download(&server, &session, &turn_id(&frames), "/home/trueforge/note.txt").await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    assert_eq!(bytes, b"remote");

    // Daytona failing: the command's result says so, and the session goes on.
    daytona.fail_next(1);
    let frames = run_command(&server, &session, "echo again").await;
    let result = &exec_results(&frames)[0];
    assert_eq!(result["success"], false, "{result}");
    assert!(result["error"].as_str().unwrap().contains("500"), "{result}");
    let frames = run_command(&server, &session, "echo again").await;
    assert_eq!(
        exec_results(&frames)[0]["response"]["result"],
        "again\n",
        "{:?}",
        exec_results(&frames)
    );

    // The sandbox deleted behind our back: the next turn makes a new one.
    daytona.delete_sandbox(sandbox_id.trim_start_matches("v1:daytona:"));
    let frames = run_command(&server, &session, "test -e note.txt && echo old || echo fresh").await;
    assert_eq!(exec_results(&frames)[0]["response"]["result"], "fresh\n");
    assert!(types(&frames).contains(&"sandbox.created".to_owned()));
}

#[tokio::test]
async fn commands_cannot_reach_the_server_its_files_or_its_environment_and_it_stays_healthy() {
    let server = TestServer::start().await;
    let port = server.base.rsplit(':').next().unwrap().to_owned();
    let data_dir = server.dir.path().display().to_string();
    let session = sandbox_session(&server, json!({})).await;
    let probe = format!(
        "cat {data_dir}/secret.key 2>&1 | head -c 200; echo; \
         ls {data_dir} 2>&1 | head -c 200; echo; \
         ls /root 2>&1 | head -c 200; echo; \
         python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\" 2>&1 | tail -1; \
         env | sort; \
         ls /proc | grep -c '^[0-9]'; \
         touch /usr/pwned 2>&1; touch /etc/pwned 2>&1; echo done"
    );
    let frames = run_command(&server, &session, &probe).await;
    let output = exec_results(&frames)[0]["response"]["result"]
        .as_str()
        .unwrap()
        .to_owned();
    let key = std::fs::read(server.dir.path().join("secret.key")).unwrap();
    let key_text = String::from_utf8_lossy(&key);
    assert!(!output.contains(key_text.trim()), "the secret key leaked: {output}");
    assert!(
        output.contains("No such file or directory"),
        "the data directory is not there: {output}"
    );
    assert!(
        output.contains("Network is unreachable") || output.contains("Connection refused") || output.contains("Errno"),
        "the server's port is unreachable: {output}"
    );
    assert!(!output.contains("TRUEFORGE"), "no server variables: {output}");
    assert!(!output.contains("CARGO"), "no host variables: {output}");
    assert!(output.contains("Read-only file system"), "{output}");
    let pids: usize = output.lines().rev().find_map(|line| line.trim().parse().ok()).unwrap();
    assert!(pids < 10, "only the sandbox's own processes are visible: {output}");
    assert!(!std::path::Path::new("/usr/pwned").exists() && !std::path::Path::new("/etc/pwned").exists());

    // A fork bomb and an output without end are contained; the server goes on answering.
    let raw_result = |frames: &[(u64, Value)]| {
        frames
            .iter()
            .find(|(_, event)| event["type"] == "tool.response")
            .map(|(_, event)| event["content"].as_str().unwrap().to_owned())
            .unwrap()
    };
    let frames = run_command(
        &server,
        &session,
        "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived",
    )
    .await;
    assert!(!raw_result(&frames).is_empty());
    let frames = run_command(&server, &session, "yes").await;
    let text = raw_result(&frames);
    assert!(text.len() < 100_000, "the output is bounded: {} bytes", text.len());
    let (status, _) = server.get("/healthz").await;
    assert_eq!(status, 200);
    let frames = run_command(&server, &session, "echo still-here").await;
    assert_eq!(exec_results(&frames)[0]["response"]["result"], "still-here\n");
}

#[tokio::test]
async fn a_large_result_is_saved_in_the_sandbox_and_stays_recallable() {
    let server = TestServer::start().await;
    let session = sandbox_session(&server, json!({})).await;
    let frames = run_command(&server, &session, "python3 -c \"print('row,' * 30000)\"").await;
    let content = frames
        .iter()
        .find(|(_, event)| event["type"] == "tool.response")
        .map(|(_, event)| event["content"].as_str().unwrap().to_owned())
        .unwrap();
    assert!(
        content.len() < 20_000,
        "the model gets a preview, not 180 kB: {}",
        content.len()
    );
    let path = content
        .split("saved in the sandbox at ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no path in {content}"))
        .to_owned();
    assert!(path.starts_with("/workspace/tool-results/exec_"), "{path}");
    // The file holds the complete result, as the tool returned it.
    let frames = run_command(&server, &session, &format!("grep -o 'row,' {path} | wc -l")).await;
    assert_eq!(exec_results(&frames)[0]["response"]["result"], "30000\n");
}
