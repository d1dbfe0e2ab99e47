//! One task run through a server's public HTTP API: a new session, one streamed turn, read to `turn.done`,
//! measured and graded.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::task::{Answers, Task};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("could not talk to the server: {0}")]
    Http(#[from] reqwest::Error),
    #[error("the server answered {status}: {body}")]
    Status { status: u16, body: String },
    #[error("the turn's stream ended without turn.done")]
    NoEnd,
}

/// One JSON line of results.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub task: String,
    pub config: String,
    pub run: usize,
    /// `pass`, `fail`, `paused` (the turn waits for an approval or an answer) or `error`.
    pub outcome: String,
    pub missing_facts: Vec<String>,
    /// Scripted runs: evidence the model was never sent.
    pub missing_evidence: Vec<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub reasoning_tokens: u64,
    pub cost_usd: Option<f64>,
    pub wall_ms: f64,
    pub first_token_ms: Option<f64>,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub compactions: u64,
    /// Tool results the harness shortened and kept whole elsewhere (a sandbox file, recall).
    pub offloads: u64,
    pub sub_agents: u64,
    /// Scripted runs: time the fake model was answering, and the fake MCP servers were running tools
    /// (overlapping calls, such as parallel sub-agents', counted once).
    pub model_ms: Option<f64>,
    pub tool_ms: Option<f64>,
    /// Scripted runs: the harness's own time, the wall time minus the time the model or a tool was busy.
    pub overhead_ms: Option<f64>,
    /// Scripted runs: the fixed part of the run's first model call, in characters: the system prompt and
    /// the tool definitions (as JSON; the task's MCP tools included).
    pub system_prompt_chars: Option<usize>,
    pub tool_definitions_chars: Option<usize>,
    /// With `--judge` and a task `judge` rubric: the model judge's verdict (a failing one fails the run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<crate::judge::Verdict>,
    pub session_id: String,
    /// The root agent's final answer (the judge reads it; kept for reading failures).
    pub answer: String,
}

/// Where the turn is sent, and the agent it runs.
pub struct Target<'a> {
    pub http: &'a reqwest::Client,
    pub server: &'a str,
    pub spec: &'a Value,
}

async fn post(target: &Target<'_>, path: &str, body: Value) -> Result<reqwest::Response, RunError> {
    let response = target
        .http
        .post(format!("{}{path}", target.server))
        .json(&body)
        .send()
        .await?;
    if !response.status().is_success() {
        let status = response.status().as_u16();
        return Err(RunError::Status {
            status,
            body: response.text().await.unwrap_or_default(),
        });
    }
    Ok(response)
}

/// The events of one streamed turn, in order, with when the first text arrived.
struct Streamed {
    events: Vec<Value>,
    first_token: Option<Duration>,
}

async fn read_stream(mut response: reqwest::Response, started: Instant) -> Result<Streamed, RunError> {
    let mut events = Vec::new();
    let mut first_token = None;
    let mut buffer = String::new();
    while let Some(chunk) = response.chunk().await? {
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let Some(data) = block.lines().find_map(|line| line.strip_prefix("data: ")) else {
                continue;
            };
            let Ok(event) = serde_json::from_str::<Value>(data) else {
                continue;
            };
            if first_token.is_none() && event["type"] == "model.message.delta" {
                first_token = Some(started.elapsed());
            }
            let done = event["type"] == "turn.done";
            events.push(event);
            if done {
                return Ok(Streamed { events, first_token });
            }
        }
    }
    Err(RunError::NoEnd)
}

/// The root agent's last answer: the text of its last message, from the complete `model.message` when the
/// stream carries one, else from that message's `model.message.delta` chunks (live streams carry deltas).
fn final_answer(events: &[Value]) -> String {
    let root = |event: &&Value| event["thread_id"] == "main";
    let Some(last) = events
        .iter()
        .filter(root)
        .rev()
        .find(|event| event["type"] == "model.message" || event["type"] == "model.message.delta")
    else {
        return String::new();
    };
    if last["type"] == "model.message" {
        return match &last["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
    }
    events
        .iter()
        .filter(root)
        .filter(|event| event["type"] == "model.message.delta" && event["id"] == last["id"])
        .filter_map(|event| event["content"].as_str())
        .collect()
}

/// How many messages the root and its sub-agents received from the model (each complete message, or each
/// distinct message id among the deltas of a live stream).
fn model_messages(events: &[Value]) -> u64 {
    let ids: std::collections::HashSet<&str> = events
        .iter()
        .filter(|event| event["type"] == "model.message" || event["type"] == "model.message.delta")
        .filter_map(|event| event["id"].as_str())
        .collect();
    u64::try_from(ids.len()).unwrap_or(u64::MAX)
}

/// Markers of a shortened tool result: ours (kept in recall, or saved to a sandbox file) and the
/// reference's, so runs against either server count offloads.
const OFFLOAD_MARKERS: [&str; 4] = [
    "is too large to show in full",
    "The complete output is saved in the sandbox at",
    "Content too big",
    "Content too large",
];

/// How many tool results, of the root and its sub-agents, the harness shortened.
fn offloads(events: &[Value]) -> u64 {
    let shortened = events
        .iter()
        .filter(|event| event["type"] == "tool.response")
        .filter(|event| {
            let content = match &event["content"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            let head: String = content.chars().take(300).collect();
            OFFLOAD_MARKERS.iter().any(|marker| head.contains(marker))
        })
        .count();
    u64::try_from(shortened).unwrap_or(u64::MAX)
}

/// Runs `text` as the first turn of a new session with `spec` and returns the final answer (the judge's
/// way of asking a model through the server).
pub async fn ask_once(target: &Target<'_>, spec: &Value, text: &str) -> Result<String, RunError> {
    let session: Value = post(target, "/api/v1/sessions", json!({"agent": {"spec": spec}}))
        .await?
        .json()
        .await?;
    let session_id = session["data"]["id"].as_str().unwrap_or_default();
    let response = post(
        target,
        &format!("/api/v1/sessions/{session_id}/turns"),
        json!({"input": [{"type": "user.message", "content": text}], "stream": true}),
    )
    .await?;
    let streamed = read_stream(response, Instant::now()).await?;
    Ok(final_answer(&streamed.events))
}

/// Most turns one task runs: its first, then one per answered pause.
const MAX_TURNS: usize = 5;

/// The input that answers a paused turn's required actions, or `None` when the task has no answer for one
/// of them (a question without `answers.yaml`, an OAuth authorization).
fn answer_actions(state: &Value, answers: &Answers) -> Option<Vec<Value>> {
    let mut input = Vec::new();
    for action in state["required_actions"].as_array()? {
        let thread_id = action["thread_id"].clone();
        let calls = action["tool_calls"].as_array()?;
        for call in calls {
            let tool_call_id = call["id"].clone();
            match action["type"].as_str()? {
                "tool.approval_required" => {
                    let approval = if answers.approve {
                        json!({"status": "allow"})
                    } else {
                        json!({"status": "deny", "reason": answers.deny_reason})
                    };
                    input.push(json!({"type": "user.tool_approval", "thread_id": thread_id,
                        "tool_call_id": tool_call_id, "approval": approval}));
                }
                "tool.response_required" => {
                    input.push(json!({"type": "user.tool_response", "thread_id": thread_id,
                        "tool_call_id": tool_call_id, "content": answers.question.as_ref()?}));
                }
                _ => return None,
            }
        }
    }
    Some(input)
}

pub async fn run_task(target: &Target<'_>, task: &Task, config: &str, run: usize) -> Result<RunResult, RunError> {
    let mut spec = target.spec.clone();
    if let Some(overrides) = &task.spec {
        merge(&mut spec, &Value::Object(overrides.clone()));
    }
    let session: Value = post(target, "/api/v1/sessions", json!({"agent": {"spec": spec}}))
        .await?
        .json()
        .await?;
    let session_id = session["data"]["id"].as_str().unwrap_or_default().to_owned();
    let started = Instant::now();
    let mut input = vec![json!({"type": "user.message", "content": task.prompt})];
    let mut events = Vec::new();
    let mut first_token = None;
    let mut totals = Totals::default();
    let mut outcome = "error";
    for _ in 0..MAX_TURNS {
        let response = post(
            target,
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": input, "stream": true}),
        )
        .await?;
        let streamed = read_stream(response, started).await?;
        first_token = first_token.or(streamed.first_token);
        let state = streamed
            .events
            .last()
            .map(|done| done["state"].clone())
            .unwrap_or(Value::Null);
        totals.add(&state["metrics"]);
        events.extend(streamed.events);
        let paused = state["required_actions"]
            .as_array()
            .is_some_and(|actions| !actions.is_empty());
        match state["status"].as_str() {
            Some("done") if paused => match answer_actions(&state, &task.answers) {
                Some(answers) => {
                    input = answers;
                    outcome = "paused";
                    continue;
                }
                None => {
                    outcome = "paused";
                    break;
                }
            },
            Some("done") => outcome = "done",
            _ => outcome = "error",
        }
        break;
    }
    let wall = started.elapsed();
    let answer = final_answer(&events);
    let grade = task.criteria.grade(&answer);
    let outcome = match outcome {
        "done" if grade.passed => "pass",
        "done" => "fail",
        other => other,
    };
    Ok(RunResult {
        task: task.name.clone(),
        config: config.to_owned(),
        run,
        outcome: outcome.to_owned(),
        missing_facts: grade.missing,
        missing_evidence: Vec::new(),
        input_tokens: totals.input,
        output_tokens: totals.output,
        cached_tokens: totals.cached,
        reasoning_tokens: totals.reasoning,
        cost_usd: totals.cost,
        wall_ms: wall.as_secs_f64() * 1000.0,
        first_token_ms: first_token.map(|at| at.as_secs_f64() * 1000.0),
        model_calls: model_messages(&events),
        tool_calls: totals.tool_calls,
        compactions: totals.compactions,
        offloads: offloads(&events),
        sub_agents: totals.sub_agents,
        model_ms: None,
        tool_ms: None,
        overhead_ms: None,
        system_prompt_chars: None,
        tool_definitions_chars: None,
        judge: None,
        session_id,
        answer,
    })
}

/// The metrics of a task's turns, summed; the cost is unknown once one turn's is.
#[derive(Default)]
struct Totals {
    input: u64,
    output: u64,
    cached: u64,
    reasoning: u64,
    tool_calls: u64,
    compactions: u64,
    sub_agents: u64,
    cost: Option<f64>,
    cost_unknown: bool,
}

impl Totals {
    fn add(&mut self, metrics: &Value) {
        let number = |key: &str| metrics[key].as_u64().unwrap_or(0);
        self.input += number("total_input_tokens");
        self.output += number("total_output_tokens");
        self.cached += number("total_cache_read_tokens");
        self.reasoning += number("total_reasoning_tokens");
        self.tool_calls += number("total_tool_calls");
        self.compactions += number("total_summarizations");
        self.sub_agents += number("total_sub_agents");
        match metrics["total_cost_in_usd"].as_f64() {
            Some(cost) if !self.cost_unknown => self.cost = Some(self.cost.unwrap_or(0.0) + cost),
            _ => {
                self.cost_unknown = true;
                self.cost = None;
            }
        }
    }
}

impl RunResult {
    /// Records the fakes' busy time over the run (scripted runs): `busy` is the time the model or a tool was
    /// busy, overlaps counted once.
    pub fn set_busy(&mut self, model: Duration, tools: Duration, busy: Duration) {
        let ms = |duration: Duration| duration.as_secs_f64() * 1000.0;
        self.model_ms = Some(ms(model));
        self.tool_ms = Some(ms(tools));
        self.overhead_ms = Some((self.wall_ms - ms(busy)).max(0.0));
    }

    /// Measures the fixed prompt of a Chat Completions request body (the scripted model's wire format): the
    /// leading system message's text and the `tools` array as JSON.
    pub fn measure_fixed_prompt(&mut self, body: &Value) {
        let first = &body["messages"][0];
        if first["role"] == "system" {
            self.system_prompt_chars = match &first["content"] {
                Value::String(text) => Some(text.chars().count()),
                Value::Array(parts) => Some(
                    parts
                        .iter()
                        .filter_map(|part| part["text"].as_str())
                        .map(|text| text.chars().count())
                        .sum(),
                ),
                _ => None,
            };
        }
        self.tool_definitions_chars = body.get("tools").map(|tools| tools.to_string().chars().count());
    }

    /// Applies a judge's verdict: a failing one fails a run that passed the fact check.
    pub fn set_verdict(&mut self, verdict: crate::judge::Verdict) {
        if !verdict.passed && self.outcome == "pass" {
            "fail".clone_into(&mut self.outcome);
        }
        self.judge = Some(verdict);
    }

    /// Fails a run that sent more input tokens than `budget` × (1 + `margin`).
    pub fn check_budget(&mut self, budget: u64, margin: f64) {
        let allowed = budget as f64 * (1.0 + margin);
        if self.input_tokens as f64 > allowed {
            "over_budget".clone_into(&mut self.outcome);
        }
    }

    /// Fails a passing run whose evidence never reached the scripted model: `last_request` is the body of the
    /// last request the model received.
    pub fn check_evidence(&mut self, evidence: &[String], last_request: &str) {
        self.missing_evidence = evidence
            .iter()
            .filter(|fact| !last_request.contains(fact.as_str()))
            .cloned()
            .collect();
        if !self.missing_evidence.is_empty() && self.outcome == "pass" {
            "fail".clone_into(&mut self.outcome);
        }
    }
}

/// Merges `patch` into `target`: objects key by key, anything else replaced.
pub fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_fields_merge_object_by_object() {
        let mut spec = json!({"model": {"name": "a"}, "config": {"sandbox": {"enabled": false}, "x": 1}});
        merge(
            &mut spec,
            &json!({"config": {"sandbox": {"enabled": true}}, "mcp_servers": []}),
        );
        assert_eq!(
            spec,
            json!({"model": {"name": "a"}, "config": {"sandbox": {"enabled": true}, "x": 1}, "mcp_servers": []})
        );
    }
}
