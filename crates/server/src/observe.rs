//! What every HTTP request leaves behind: its metrics, its span (continuing the caller's W3C trace context
//! when tracing is on) and one log line.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument as _;

/// Paths probed by load balancers and scrapers every few seconds: logged at `debug`, so they do not bury the
/// requests people make.
const PROBES: [&str; 3] = ["/healthz", "/readyz", crate::prometheus::METRICS_PATH];

/// The outermost layer: refusals by the layers inside it (host guard, limits, login) are counted, traced
/// and logged too. A streamed answer (SSE) ends here when its headers are sent.
pub async fn observe_http(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    // The route's template, never the ids in the path: bounded labels, and no session ids in metrics.
    let route = match request.extensions().get::<MatchedPath>() {
        Some(path) => path.as_str().to_owned(),
        None if request.uri().path().starts_with("/api/") => "unmatched".to_owned(),
        None => "app".to_owned(),
    };
    // The path without its query: queries carry OAuth codes and states.
    let path = request.uri().path().to_owned();
    let span = if trueforge_telemetry::enabled() {
        let span = tracing::info_span!(
            target: "trueforge::http",
            "http.request",
            otel.name = format!("{method} {route}"),
            otel.kind = "server",
            http.request.method = %method,
            http.route = %route,
            url.path = %path,
            http.response.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let header = |name: &str| request.headers().get(name).and_then(|value| value.to_str().ok());
        trueforge_telemetry::continue_trace(
            &span,
            header(trueforge_telemetry::TRACEPARENT),
            header(trueforge_telemetry::TRACESTATE),
        );
        span
    } else {
        tracing::Span::none()
    };
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    span.record("http.response.status_code", i64::from(status));
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
    crate::prometheus::record_http(method.as_str(), &route, status, elapsed);
    let duration_ms = elapsed.as_secs_f64() * 1000.0;
    if PROBES.contains(&path.as_str()) {
        tracing::debug!(target: "trueforge::http", parent: &span, %method, %route, %path, status, duration_ms, "request");
    } else {
        tracing::info!(target: "trueforge::http", parent: &span, %method, %route, %path, status, duration_ms, "request");
    }
    response
}
