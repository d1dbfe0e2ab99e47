//! What the runtime counts, through the `metrics` facade: turns (running, ended by state, how long), model
//! calls (by model, outcome, latency, tokens), tool calls (by tool set, outcome, latency), sandbox commands
//! (by provider, outcome, latency) and leases (claimed from a gone executor, resumed). The server installs a recorder and serves them at `/metrics`;
//! without one (a library user, the runtime's tests) each call is a no-op.
//!
//! Labels stay few and bounded: model names and tool-set ids come from the tenant's configuration, states
//! and outcomes from fixed lists; never a session, turn or user id.

use std::time::Duration;

use metrics::{counter, gauge, histogram};
use trueforge_llm::Usage;

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
