//! Script files: the JSON format, loading it into a running server, and the `fake-llm` binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::{answer, ask, body, post, url};
use serde_json::json;
use trueforge_testkit::fake_llm::{
    Api, DEFAULT_TEXT, FakeLlm, Script, ScriptError, ScriptedError, ScriptedResponse, ScriptedStream, ScriptedToolCall,
};

const SCRIPT: &str = r#"{
  "shared": [
    {"stream": {"text": "Hello there", "chunks": 3}},
    {"stream": {"reasoning": "Let me look.", "tool_calls": [
      {"name": "read_file", "arguments": {"path": "a.txt"}},
      {"id": "call_custom", "name": "read_file", "arguments": "{\"path\": \"b.txt\"}"}
    ]}},
    {"error": {"status": 429, "retry_after": 2}}
  ],
  "gemini": [{"stream": {"text": "gemini first", "usage": {"input_tokens": 3, "output_tokens": 2}}}]
}"#;

#[test]
fn chat_script_json_parses_into_typed_responses() {
    let script = Script::from_json(SCRIPT).unwrap();

    assert_eq!(script.shared.len(), 3);
    assert_eq!(
        script.shared[0],
        ScriptedResponse::from(ScriptedStream::text("Hello there").chunks(3))
    );
    let expected_calls = ScriptedStream::default()
        .reasoning("Let me look.")
        .tool_call(ScriptedToolCall::new("read_file", json!({"path": "a.txt"})))
        .tool_call(ScriptedToolCall::new("read_file", json!("{\"path\": \"b.txt\"}")).with_id("call_custom"));
    assert_eq!(script.shared[1], ScriptedResponse::from(expected_calls));
    assert_eq!(
        script.shared[2],
        ScriptedResponse::from(ScriptedError::status(429).retry_after(2))
    );
    assert_eq!(script.gemini.len(), 1);
    assert!(script.chat.is_empty());
}

#[test]
fn chat_script_error_for_unknown_fields_and_missing_files() {
    let typo = Script::from_json(r#"{"shared": [{"stream": {"txt": "oops"}}]}"#);
    let bad_kind = Script::from_json(r#"{"shared": [{"reply": {}}]}"#);
    let missing = Script::load(std::path::Path::new("/nonexistent/fake-llm-script.json"));

    assert!(matches!(typo, Err(ScriptError::Parse(_))), "{typo:?}");
    assert!(matches!(bad_kind, Err(ScriptError::Parse(_))), "{bad_kind:?}");
    assert!(matches!(missing, Err(ScriptError::Read { .. })), "{missing:?}");
}

#[tokio::test]
async fn gemini_and_anthropic_loaded_script_is_consumed_in_order() {
    let server = FakeLlm::start().await;
    server.load(Script::from_json(SCRIPT).unwrap());
    assert_eq!(server.pending(), 4);

    let gemini = ask(&server, Api::Gemini, "hi").await;
    let text = ask(&server, Api::Anthropic, "hi").await;
    let calls = ask(&server, Api::Anthropic, "hi").await;
    let limited = ask(&server, Api::Anthropic, "hi").await;

    assert_eq!(answer(Api::Gemini, &gemini.body).text, "gemini first");
    assert_eq!(answer(Api::Anthropic, &text.body).text, "Hello there");
    let calls = answer(Api::Anthropic, &calls.body);
    assert_eq!(calls.reasoning, "Let me look.");
    assert_eq!(
        calls.calls,
        [
            ("read_file".to_owned(), json!({"path": "a.txt"})),
            ("read_file".to_owned(), json!({"path": "b.txt"}))
        ]
    );
    assert_eq!(limited.status, 429);
    assert_eq!(server.pending(), 0);
}

/// Kills the child when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_fake_llm(args: &[&str]) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-llm"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (Running(child), line)
}

#[tokio::test]
async fn chat_fake_llm_binary_prints_its_port_and_serves_the_script() {
    let dir = std::env::temp_dir().join(format!("fake-llm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("script.json");
    std::fs::write(&path, r#"{"chat": [{"stream": {"text": "from the script"}}]}"#).unwrap();

    let (_child, line) = spawn_fake_llm(&["--port", "0", "--script", path.to_str().unwrap()]);

    let address = line.trim().strip_prefix("fake-llm listening on http://").expect(&line);
    let port: u16 = address.rsplit(':').next().unwrap().parse().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let scripted = post(&format!("{base}/v1/chat/completions"), &body(Api::Chat, "hi")).await;
    let ruled = post(&format!("{base}/v1/chat/completions"), &body(Api::Chat, "again #echo")).await;
    assert_eq!(answer(Api::Chat, &scripted.body).text, "from the script");
    assert_eq!(answer(Api::Chat, &ruled.body).text, "again #echo");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn chat_fake_llm_binary_error_for_a_bad_script() {
    let output = Command::new(env!("CARGO_BIN_EXE_fake-llm"))
        .args(["--port", "0", "--script", "/nonexistent/script.json"])
        .output()
        .unwrap();

    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("cannot read the script"), "{stderr}");
}

#[tokio::test]
async fn responses_base_url_points_at_the_served_paths() {
    let server = FakeLlm::start().await;

    assert_eq!(
        server.base_url(Api::Responses),
        format!("http://127.0.0.1:{}/v1", server.port())
    );
    assert_eq!(
        server.base_url(Api::Gemini),
        format!("http://127.0.0.1:{}/v1beta", server.port())
    );
    let reply = post(&url(&server, Api::Responses, "gpt-test"), &body(Api::Responses, "hi")).await;
    assert_eq!(reply.status, 200);
}

#[tokio::test]
async fn chat_matching_rules_answer_by_content_without_shifting_the_queue() {
    let server = FakeLlm::start().await;
    server.load(
        Script::from_json(
            r#"{
              "matching": [
                {"request_contains": "summarise this", "response": {"stream": {"text": "a summary"}}},
                {"request_contains": "title please", "times": 1, "response": {"stream": {"text": "a title"}}}
              ],
              "shared": [{"stream": {"text": "first"}}, {"stream": {"text": "second"}}]
            }"#,
        )
        .unwrap(),
    );
    assert_eq!(server.pending(), 2, "rules are not queued responses");

    let mut texts = Vec::new();
    for prompt in [
        "hello",
        "please summarise this",
        "title please",
        "again",
        "summarise this too",
        "title please",
    ] {
        let reply = ask(&server, Api::Chat, prompt).await;
        texts.push(answer(Api::Chat, &reply.body).text);
    }

    assert_eq!(
        texts,
        [
            "first",
            "a summary",
            "a title",
            "second",
            "a summary",
            // The one-time rule is spent and the queue is empty: the default rules answer.
            DEFAULT_TEXT,
        ]
    );
    assert_eq!(server.pending(), 0);
}

#[tokio::test]
async fn chat_the_clock_is_busy_while_answers_stream_and_counts_overlaps_once() {
    let server = FakeLlm::start().await;
    let delayed = || ScriptedResponse::from(ScriptedStream::text("slow").delays(150, 0));
    server.push(delayed());
    server.push(delayed());

    let (first, second) = tokio::join!(ask(&server, Api::Chat, "a"), ask(&server, Api::Chat, "b"));
    assert_eq!(first.status, 200);
    assert_eq!(second.status, 200);

    let summed = server.busy();
    let clock = server.clock().busy();
    assert!(summed >= std::time::Duration::from_millis(300), "{summed:?}");
    assert!(clock >= std::time::Duration::from_millis(150), "{clock:?}");
    assert!(
        clock < summed,
        "overlapping answers counted twice: {clock:?} of {summed:?}"
    );
}
