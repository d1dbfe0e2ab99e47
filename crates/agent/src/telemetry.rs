//! What the runtime counts, through the `metrics` facade: turns (running, ended by state, how long), model
//! calls (by model, outcome, latency, tokens), tool calls (by tool set, outcome, latency), sandbox commands
//! (by provider, outcome, latency) and leases (claimed from a gone executor, resumed). The server installs a recorder and serves them at `/metrics`;
//! without one (a library user, the runtime's tests) each call is a no-op.
//!
//! Labels stay few and bounded: model names and tool-set ids come from the tenant's configuration, states
//! and outcomes from fixed lists; never a session, turn or user id.
//!
//! It also makes the spans of turns, model calls and tool calls, named and attributed after OpenTelemetry's
//! GenAI conventions. They exist only while traces are exported (`trueforge_telemetry::enabled`): otherwise
//! each helper hands back a disabled span and nothing is formatted. No span carries a message, a tool's
//! arguments or its result.

use std::time::Duration;

use metrics::{counter, gauge, histogram};
use tracing::Span;
use trueforge_llm::{FinishReason, Usage};

pub(crate) fn turn_started() {
    gauge!("trueforge_turns_running").increment(1.0);
}

/// A turn's stream ended here; `state` is its final status (`done`, `cancelled`, `error`), or `unsettled`
/// when this run did not store one (its task died, or the store refused the end).
pub(crate) fn turn_ended(state: &'static str, elapsed: Duration) {
    gauge!("trueforge_turns_running").decrement(1.0);
    counter!("trueforge_turns_total", "state" => state).increment(1);
    histogram!("trueforge_turn_duration_seconds", "state" => state).record(elapsed.as_secs_f64());
}

/// One model call: `model` is `provider/model`; `outcome` `ok`, `cancelled` or `error`; `usage` when the
/// call answered.
pub(crate) fn model_call(model: &str, outcome: &'static str, elapsed: Duration, usage: Option<&Usage>) {
    let provider = model.split_once('/').map_or(model, |(provider, _)| provider).to_owned();
    let labels = [("provider", provider), ("model", model.to_owned())];
    counter!("trueforge_model_calls_total", &labels).increment(1);
    let with_outcome = [
        ("provider", labels[0].1.clone()),
        ("model", labels[1].1.clone()),
        ("outcome", outcome.to_owned()),
    ];
    histogram!("trueforge_model_call_duration_seconds", &with_outcome).record(elapsed.as_secs_f64());
    let Some(usage) = usage else { return };
    // Input tokens that neither hit nor filled a cache, as providers bill them.
    let uncached = usage
        .input_tokens
        .saturating_sub(usage.cache_read_tokens + usage.cache_write_tokens);
    for (kind, tokens) in [
        ("input", uncached),
        ("cache_read", usage.cache_read_tokens),
        ("cache_write", usage.cache_write_tokens),
        ("output", usage.output_tokens),
        ("reasoning", usage.reasoning_tokens),
    ] {
        if tokens > 0 {
            let labels = [
                ("provider", labels[0].1.clone()),
                ("model", labels[1].1.clone()),
                ("kind", kind.to_owned()),
            ];
            counter!("trueforge_model_tokens_total", &labels).increment(tokens);
        }
    }
}

/// One tool call: `tool_set` is the MCP server's (or built-in set's) id, `unavailable` for a tool the agent
/// does not have; `outcome` `ok`, `error` (the tool's own or a timeout), `cancelled` or `auth_required`.
pub(crate) fn tool_call(tool_set: &str, outcome: &'static str, elapsed: Duration) {
    let labels = [("tool_set", tool_set.to_owned()), ("outcome", outcome.to_owned())];
    counter!("trueforge_tool_calls_total", &labels).increment(1);
    histogram!("trueforge_tool_call_duration_seconds", &labels).record(elapsed.as_secs_f64());
}

/// This process took over the lease of a turn whose executor was gone.
pub(crate) fn lease_claimed() {
    counter!("trueforge_lease_claims_total").increment(1);
}

/// A turn taken over was resumed (`resumed`) or could not be and was ended (`failed`).
pub(crate) fn turn_recovered(outcome: &'static str) {
    counter!("trueforge_turn_recoveries_total", "outcome" => outcome).increment(1);
}

/// One sandbox command: `provider` is the sandbox provider's kind (`local`, `daytona`); `outcome` `ok` (exit
/// code 0), `failed` (another exit code or a signal), `timeout`, `cancelled` or `error` (the sandbox failed).
pub(crate) fn sandbox_exec(provider: &str, outcome: &'static str, elapsed: Duration) {
    let labels = [("provider", provider.to_owned()), ("outcome", outcome.to_owned())];
    counter!("trueforge_sandbox_execs_total", &labels).increment(1);
    histogram!("trueforge_sandbox_exec_duration_seconds", &labels).record(elapsed.as_secs_f64());
}

/// The span of one turn: in the trace of the current span (the request that started it, when there is one)
/// but not its tracing child, so the request's span ends with the response, not with the turn.
pub(crate) fn turn_span(session_id: &str, turn_id: &str) -> Span {
    if !trueforge_telemetry::enabled() {
        return Span::none();
    }
    let span = tracing::info_span!(
        target: "trueforge::turn",
        parent: None,
        "turn",
        otel.name = "invoke_agent",
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.conversation.id = session_id,
        trueforge.turn.id = turn_id,
        trueforge.turn.status = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    trueforge_telemetry::adopt_under_current(&span);
    span
}

/// The span of one run of a sub-agent's thread, under the current span (the turn's, or its parent agent's).
pub(crate) fn sub_agent_span(name: &str, thread_id: &str) -> Span {
    if !trueforge_telemetry::enabled() {
        return Span::none();
    }
    tracing::info_span!(
        target: "trueforge::turn",
        "sub_agent",
        otel.name = format!("invoke_agent {name}"),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = name,
        trueforge.thread.id = thread_id,
    )
}

/// A turn's span learns how the turn ended.
pub(crate) fn turn_span_ended(span: &Span, state: &str) {
    span.record("trueforge.turn.status", state);
    if state != "done" {
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of one model call; `model` is `provider/model`.
pub(crate) fn model_span(model: &str) -> Span {
    if !trueforge_telemetry::enabled() {
        return Span::none();
    }
    let (provider, model_id) = model.split_once('/').unwrap_or(("", model));
    tracing::info_span!(
        target: "trueforge::model",
        "model.call",
        otel.name = format!("chat {model_id}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model_id,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        gen_ai.usage.cache_read.input_tokens = tracing::field::Empty,
        gen_ai.usage.cache_creation.input_tokens = tracing::field::Empty,
        gen_ai.usage.reasoning.output_tokens = tracing::field::Empty,
        trueforge.cost_usd = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// A model call's span learns what the call used and why the answer ended, or that it failed.
pub(crate) fn model_span_answered(span: &Span, answer: Result<(&Usage, &FinishReason), &'static str>) {
    if span.is_disabled() {
        return;
    }
    let (usage, finish) = match answer {
        Ok(answer) => answer,
        Err(outcome) => {
            span.record("error.type", outcome);
            span.record("otel.status_code", "ERROR");
            return;
        }
    };
    span.record("gen_ai.usage.input_tokens", as_i64(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", as_i64(usage.output_tokens));
    span.record("gen_ai.usage.cache_read.input_tokens", as_i64(usage.cache_read_tokens));
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        as_i64(usage.cache_write_tokens),
    );
    span.record("gen_ai.usage.reasoning.output_tokens", as_i64(usage.reasoning_tokens));
    if let Some(cost) = usage.cost_usd {
        span.record("trueforge.cost_usd", cost);
    }
    let reason = match finish {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Error(_) => "error",
        FinishReason::Other(other) => other.as_str(),
    };
    // The convention's value is a list, which a tracing field cannot hold: set on the OpenTelemetry side.
    trueforge_telemetry::set_string_list(span, "gen_ai.response.finish_reasons", &[reason]);
}

/// OpenTelemetry attributes are signed: tracing's unsigned fields would reach the exporter as text.
fn as_i64(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The span of one tool call the model asked for.
pub(crate) fn tool_span(tool: &str, call_id: &str) -> Span {
    if !trueforge_telemetry::enabled() {
        return Span::none();
    }
    tracing::info_span!(
        target: "trueforge::tool",
        "tool.call",
        otel.name = format!("execute_tool {tool}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        trueforge.tool_set = tracing::field::Empty,
        trueforge.tool.outcome = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// A tool call's span learns its tool set and outcome.
pub(crate) fn tool_span_ended(span: &Span, tool_set: &str, outcome: &str) {
    span.record("trueforge.tool_set", tool_set);
    span.record("trueforge.tool.outcome", outcome);
    if outcome != "ok" {
        span.record("otel.status_code", "ERROR");
    }
}
