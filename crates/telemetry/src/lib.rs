//! W3C trace context where a TrueForge trace crosses a process: in from an HTTP request's `traceparent`,
//! out to MCP servers (the request's `_meta` and its HTTP headers) and into Code Mode scripts (the
//! `TRACEPARENT` environment variable, OpenTelemetry's convention for processes).
//!
//! Everything here is a no-op until the binary has installed an exporter and called [`mark_enabled`]: with
//! tracing off, the check is one relaxed atomic load and no header is parsed or written.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The header and `_meta` key of W3C Trace Context.
pub const TRACEPARENT: &str = "traceparent";
/// Vendor state that travels with `traceparent`.
pub const TRACESTATE: &str = "tracestate";

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Called once by the binary after it installed the OpenTelemetry layer and the W3C propagator.
pub fn mark_enabled() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether spans are exported (an OTLP endpoint is configured).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The trace context of a span, as the two W3C fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

/// The W3C trace context of `span`, to hand to the next process; `None` with tracing off or when the span
/// is not part of a valid trace.
pub fn context_of(span: &tracing::Span) -> Option<TraceContext> {
    if !enabled() {
        return None;
    }
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut fields: HashMap<String, String> = HashMap::new();
    opentelemetry::global::get_text_map_propagator(|propagator| propagator.inject_context(&cx, &mut fields));
    let traceparent = fields.remove(TRACEPARENT)?;
    Some(TraceContext {
        traceparent,
        tracestate: fields.remove(TRACESTATE).filter(|state| !state.is_empty()),
    })
}

/// [`context_of`] the current span.
pub fn current_context() -> Option<TraceContext> {
    if !enabled() {
        return None;
    }
    context_of(&tracing::Span::current())
}

/// Makes `span` continue the trace a caller sent (read from HTTP headers, an MCP request's `_meta`, …). A
/// missing or malformed `traceparent` leaves the span a root of its own trace.
pub fn continue_trace(span: &tracing::Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    if !enabled() {
        return;
    }
    let Some(traceparent) = traceparent else {
        return;
    };
    let carrier = Carrier {
        traceparent,
        tracestate,
    };
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&carrier));
    if parent.span().span_context().is_valid() {
        // Fails only when the span was already started (its parent fixed); callers pass one just made.
        let _ = span.set_parent(parent);
    }
}

/// The two W3C fields as the propagator reads them.
struct Carrier<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            TRACEPARENT => Some(self.traceparent),
            TRACESTATE => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT, TRACESTATE]
    }
}

/// Makes `span`, made without a tracing parent, an OpenTelemetry child of the current span. For work that
/// outlives the current span (a turn outlives the request that started it): a tracing parent stays open
/// until its last child closes, so the request's span would end, and be exported, only with the turn.
pub fn adopt_under_current(span: &tracing::Span) {
    if !enabled() {
        return;
    }
    let parent = tracing::Span::current().context();
    if parent.span().span_context().is_valid() {
        // Fails only when the span was already started; callers pass one just made.
        let _ = span.set_parent(parent);
    }
}

/// Sets a list of strings as an attribute of `span`'s OpenTelemetry span (a `tracing` field holds only a
/// scalar, and the GenAI conventions' `gen_ai.response.finish_reasons` is a list). Nothing with tracing off.
pub fn set_string_list(span: &tracing::Span, key: &'static str, values: &[&str]) {
    if !enabled() {
        return;
    }
    let values: Vec<opentelemetry::StringValue> = values.iter().map(|value| (*value).to_owned().into()).collect();
    span.set_attribute(key, opentelemetry::Value::Array(opentelemetry::Array::String(values)));
}

/// The trace id of `span` in hex, for log lines; `None` with tracing off.
pub fn trace_id_of(span: &tracing::Span) -> Option<String> {
    if !enabled() {
        return None;
    }
    let cx = span.context();
    let span_context = cx.span().span_context().clone();
    span_context.is_valid().then(|| span_context.trace_id().to_string())
}
