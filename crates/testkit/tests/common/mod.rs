//! Helpers shared by the fake-llm tests: minimal valid requests per wire format and a raw HTTP client.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use trueforge_testkit::fake_llm::{Api, FakeLlm, Outcome};

/// A reply read whole.
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

/// The URL of a streamed request of `api` for `model`.
pub fn url(server: &FakeLlm, api: Api, model: &str) -> String {
    let base = server.base_url(api);
    match api {
        Api::Responses => format!("{base}/responses"),
        Api::Chat => format!("{base}/chat/completions"),
        Api::Anthropic => format!("{base}/messages"),
        Api::Gemini => format!("{base}/models/{model}:streamGenerateContent?alt=sse"),
    }
}

/// The smallest valid streamed request of `api` with one user message.
pub fn body(api: Api, user_text: &str) -> Value {
    match api {
        Api::Responses => json!({
            "model": "gpt-test", "stream": true, "store": false,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": user_text}]}]
        }),
        Api::Chat => json!({
            "model": "gpt-test", "stream": true, "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": user_text}]
        }),
        Api::Anthropic => json!({
            "model": "claude-test", "stream": true, "max_tokens": 1024,
            "messages": [{"role": "user", "content": user_text}]
        }),
        Api::Gemini => json!({"contents": [{"role": "user", "parts": [{"text": user_text}]}]}),
    }
}

pub fn model(api: Api) -> &'static str {
    match api {
        Api::Responses | Api::Chat => "gpt-test",
        Api::Anthropic => "claude-test",
        Api::Gemini => "gemini-test",
    }
}

/// Offers tools named `names` in a request body of `api`.
pub fn with_tools(api: Api, mut body: Value, names: &[&str]) -> Value {
    let schema = json!({"type": "object", "properties": {}});
    let tools: Vec<Value> = names
        .iter()
        .map(|name| match api {
            Api::Responses => json!({"type": "function", "name": name, "parameters": schema}),
            Api::Chat => json!({"type": "function", "function": {"name": name, "parameters": schema}}),
            Api::Anthropic => json!({"name": name, "input_schema": schema}),
            Api::Gemini => json!({"name": name, "parameters": schema}),
        })
        .collect();
    body["tools"] = match api {
        Api::Gemini => json!([{"functionDeclarations": tools}]),
        _ => Value::Array(tools),
    };
    body
}

/// Appends one assistant tool call and its result to the conversation of a request body of `api`.
pub fn with_tool_round(api: Api, mut body: Value, round: usize) -> Value {
    let id = format!("call_{round}");
    match api {
        Api::Responses => {
            let input = body["input"].as_array_mut().unwrap();
            input.push(json!({"type": "function_call", "call_id": id, "name": "lookup", "arguments": "{}"}));
            input.push(json!({"type": "function_call_output", "call_id": id, "output": "ok"}));
        }
        Api::Chat => {
            let messages = body["messages"].as_array_mut().unwrap();
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": "ok"}));
        }
        Api::Anthropic => {
            let messages = body["messages"].as_array_mut().unwrap();
            messages.push(json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": "lookup", "input": {}}]}));
            messages.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": "ok"}]}));
        }
        Api::Gemini => {
            let contents = body["contents"].as_array_mut().unwrap();
            contents.push(json!({"role": "model", "parts": [{"functionCall": {"name": "lookup", "args": {}}}]}));
            contents.push(json!({"role": "user", "parts": [
                {"functionResponse": {"name": "lookup", "response": {"result": "ok"}}}]}));
        }
    }
    body
}

pub async fn post(url: &str, body: &Value) -> Reply {
    post_raw(url, body.to_string()).await
}

pub async fn post_raw(url: &str, body: String) -> Reply {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("the fake server answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.text().await.expect("a complete body");
    Reply { status, headers, body }
}

/// Posts the minimal request of `api` with `user_text`.
pub async fn ask(server: &FakeLlm, api: Api, user_text: &str) -> Reply {
    post(&url(server, api, model(api)), &body(api, user_text)).await
}

/// The SSE events of a body, split on the format's blank-line separator.
pub fn events(api: Api, body: &str) -> Vec<String> {
    let separator = if api == Api::Gemini { "\r\n\r\n" } else { "\n\n" };
    body.split_terminator(separator).map(str::to_owned).collect()
}

/// The JSON payload of every `data:` line (skipping `[DONE]`).
pub fn payloads(api: Api, body: &str) -> Vec<Value> {
    events(api, body)
        .iter()
        .filter_map(|event| event.lines().find_map(|line| line.strip_prefix("data: ")))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).expect("JSON data"))
        .collect()
}

/// Waits until the server has settled the outcome of its `seq`-th request.
pub async fn settled_outcome(server: &FakeLlm, seq: usize) -> Outcome {
    for _ in 0..200 {
        let outcome = server.requests()[seq - 1].outcome;
        if outcome != Outcome::Streaming {
            return outcome;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Outcome::Streaming
}

/// The content of a streamed answer, read back from any format (a minimal decoder for assertions).
#[derive(Debug, Default, PartialEq)]
pub struct Answer {
    pub text: String,
    pub reasoning: String,
    pub calls: Vec<(String, Value)>,
}

pub fn answer(api: Api, body: &str) -> Answer {
    let mut answer = Answer::default();
    let mut partial: Vec<(String, String)> = Vec::new();
    for event in payloads(api, body) {
        match api {
            Api::Chat => {
                let delta = &event["choices"][0]["delta"];
                push_text(&mut answer.text, &delta["content"]);
                push_text(&mut answer.reasoning, &delta["reasoning_content"]);
                for call in delta["tool_calls"].as_array().into_iter().flatten() {
                    let index = call["index"].as_u64().unwrap() as usize;
                    if let Some(name) = call["function"]["name"].as_str() {
                        partial.insert(index, (name.to_owned(), String::new()));
                    }
                    partial[index]
                        .1
                        .push_str(call["function"]["arguments"].as_str().unwrap_or_default());
                }
            }
            Api::Responses => match event["type"].as_str().unwrap() {
                "response.output_text.delta" => push_text(&mut answer.text, &event["delta"]),
                "response.reasoning_summary_text.delta" => push_text(&mut answer.reasoning, &event["delta"]),
                "response.output_item.done" if event["item"]["type"] == "function_call" => partial.push((
                    event["item"]["name"].as_str().unwrap().to_owned(),
                    event["item"]["arguments"].as_str().unwrap().to_owned(),
                )),
                _ => {}
            },
            Api::Anthropic => match event["type"].as_str().unwrap() {
                "content_block_start" if event["content_block"]["type"] == "tool_use" => {
                    partial.push((
                        event["content_block"]["name"].as_str().unwrap().to_owned(),
                        String::new(),
                    ));
                }
                "content_block_delta" => {
                    let delta = &event["delta"];
                    push_text(&mut answer.text, &delta["text"]);
                    push_text(&mut answer.reasoning, &delta["thinking"]);
                    if let Some(json) = delta["partial_json"].as_str() {
                        partial.last_mut().unwrap().1.push_str(json);
                    }
                }
                _ => {}
            },
            Api::Gemini => {
                for part in event["candidates"][0]["content"]["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if part["thought"] == true {
                        push_text(&mut answer.reasoning, &part["text"]);
                    } else {
                        push_text(&mut answer.text, &part["text"]);
                    }
                    if let Some(call) = part.get("functionCall") {
                        partial.push((call["name"].as_str().unwrap().to_owned(), call["args"].to_string()));
                    }
                }
            }
        }
    }
    answer.calls = partial
        .into_iter()
        .map(|(name, arguments)| (name, serde_json::from_str(&arguments).expect("JSON arguments")))
        .collect();
    answer
}

fn push_text(target: &mut String, value: &Value) {
    target.push_str(value.as_str().unwrap_or_default());
}

/// Whether a body ends with its format's end marker.
pub fn has_end_marker(api: Api, body: &str) -> bool {
    let last = events(api, body).pop().unwrap_or_default();
    match api {
        Api::Chat => last == "data: [DONE]",
        Api::Responses => last.starts_with("event: response.completed\n"),
        Api::Anthropic => last.starts_with("event: message_stop\n"),
        Api::Gemini => last.contains("\"finishReason\": "),
    }
}
