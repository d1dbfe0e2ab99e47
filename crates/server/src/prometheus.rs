//! `/metrics`: what this process counted (HTTP requests, turns, model and tool calls, sandbox commands,
//! store operations, leases, SSE connections, event delivery), in Prometheus's text format. The crates
//! count through the `metrics` facade; this module installs the one Prometheus recorder of the process,
//! describes every metric, counts HTTP requests, and renders the page. In hosted mode with login the page
//! needs an admin (see `auth::identify`), as the settings do.

use std::sync::OnceLock;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::error::ApiError;

/// Where the page is served.
pub const METRICS_PATH: &str = "/metrics";

/// Bucket bounds of every `*_seconds` histogram: from a millisecond (a store read) to an hour (a long turn).
const SECONDS_BUCKETS: [f64; 20] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
    1800.0, 3600.0,
];

/// How often histograms are compacted (the exporter needs it done now and then).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process's recorder, installed by the first server of the process (`None` when some other recorder
/// was installed first: a host embedding the server with its own metrics).
pub fn recorder() -> Option<&'static PrometheusHandle> {
    RECORDER
        .get_or_init(|| {
            let installed = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), &SECONDS_BUCKETS)
                .and_then(PrometheusBuilder::install_recorder);
            match installed {
                Ok(handle) => {
                    describe();
                    spawn_upkeep(handle.clone());
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "/metrics is off: the process has another metrics recorder");
                    None
                }
            }
        })
        .as_ref()
}

fn spawn_upkeep(handle: PrometheusHandle) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(UPKEEP_EVERY);
            loop {
                tick.tick().await;
                handle.run_upkeep();
            }
        });
    }
}

/// `GET /metrics`.
pub async fn metrics() -> Response {
    match recorder() {
        Some(handle) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            )],
            handle.render(),
        )
            .into_response(),
        None => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Metrics are unavailable: the process has another metrics recorder",
        )
        .into_response(),
    }
}

/// Counts one answered HTTP request (see [`crate::observe::observe_http`]).
pub(crate) fn record_http(method: &str, route: &str, status: u16, elapsed: Duration) {
    counter!("trueforge_http_requests_total", "method" => method.to_owned(), "route" => route.to_owned(), "status" => status.to_string())
        .increment(1);
    histogram!("trueforge_http_request_duration_seconds", "method" => method.to_owned(), "route" => route.to_owned())
        .record(elapsed.as_secs_f64());
}

/// HELP lines of every metric the crates count.
fn describe() {
    describe_counter!(
        "trueforge_http_requests_total",
        "HTTP requests, by method, route and status."
    );
    describe_histogram!(
        "trueforge_http_request_duration_seconds",
        Unit::Seconds,
        "Time to answer an HTTP request (to the headers, for streams), by method and route."
    );
    describe_gauge!("trueforge_sse_connections", "Event streams (SSE) open now.");
    describe_histogram!(
        "trueforge_event_delivery_lag_seconds",
        Unit::Seconds,
        "From an event's creation to its write on a live event stream (store, bus and wake-up)."
    );
    describe_gauge!("trueforge_turns_running", "Turns running in this process now.");
    describe_counter!("trueforge_turns_total", "Turns ended in this process, by final state.");
    describe_histogram!(
        "trueforge_turn_duration_seconds",
        Unit::Seconds,
        "How long turns ran here, by final state."
    );
    describe_counter!("trueforge_model_calls_total", "Model calls, by provider and model.");
    describe_histogram!(
        "trueforge_model_call_duration_seconds",
        Unit::Seconds,
        "Model call latency to the last streamed event, by provider, model and outcome."
    );
    describe_counter!(
        "trueforge_model_tokens_total",
        "Tokens of model calls, by provider, model and kind (input, cache_read, cache_write, output, reasoning)."
    );
    describe_counter!(
        "trueforge_tool_calls_total",
        "Tool calls, by tool set (MCP server id) and outcome."
    );
    describe_histogram!(
        "trueforge_tool_call_duration_seconds",
        Unit::Seconds,
        "Tool call latency, by tool set and outcome."
    );
    describe_counter!(
        "trueforge_sandbox_execs_total",
        "Sandbox commands, by provider and outcome."
    );
    describe_histogram!(
        "trueforge_sandbox_exec_duration_seconds",
        Unit::Seconds,
        "Sandbox command latency, by provider and outcome."
    );
    describe_histogram!(
        "trueforge_store_operation_duration_seconds",
        Unit::Seconds,
        "Store operations (one transaction each), by backend, access and outcome."
    );
    describe_counter!(
        "trueforge_lease_claims_total",
        "Leases of turns whose executor was gone, claimed by this process."
    );
    describe_counter!(
        "trueforge_turn_recoveries_total",
        "Turns taken over by this process, by outcome (resumed, failed)."
    );
}
