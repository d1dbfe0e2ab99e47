//! Logs and traces of `trueforge serve`: log lines on stdout (text, or JSON objects carrying the trace id),
//! and, when an OTLP endpoint is configured by the standard `OTEL_EXPORTER_OTLP_*` variables, every span of
//! TrueForge's own crates exported to it over HTTP/protobuf or gRPC.
//!
//! Without an endpoint no OpenTelemetry layer is installed at all: spans cost what the log layer costs, and
//! the W3C trace context helpers of `trueforge-telemetry` stay switched off.

use std::fmt;

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::fmt::format::{Format, Json, JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use trueforge_server::LogFormat;

/// Keeps the exporter alive; [`Telemetry::shutdown`] sends the spans still queued.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(error) = provider.shutdown()
        {
            eprintln!("trueforge: the trace exporter did not shut down cleanly: {error}");
        }
    }
}

/// How traces leave the process, from `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OtlpProtocol {
    HttpProtobuf,
    Grpc,
}

/// The exporter the environment asks for: `None` when no endpoint is set, `OTEL_SDK_DISABLED=true` or
/// `OTEL_TRACES_EXPORTER=none`.
fn otlp_protocol(var: impl Fn(&str) -> Option<String>) -> Result<Option<OtlpProtocol>, String> {
    let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
    if set("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    match set("OTEL_TRACES_EXPORTER")
        .map(|value| value.to_ascii_lowercase())
        .as_deref()
    {
        None | Some("otlp") => {}
        Some("none") => return Ok(None),
        Some(other) => {
            return Err(format!(
                "OTEL_TRACES_EXPORTER={other} is not supported: TrueForge exports traces over OTLP only (or none)"
            ));
        }
    }
    if set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none() && set("OTEL_EXPORTER_OTLP_ENDPOINT").is_none() {
        return Ok(None);
    }
    let (name, protocol) = match set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") {
        Some(protocol) => ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", Some(protocol)),
        None => ("OTEL_EXPORTER_OTLP_PROTOCOL", set("OTEL_EXPORTER_OTLP_PROTOCOL")),
    };
    match protocol.as_deref() {
        None | Some("http/protobuf") => Ok(Some(OtlpProtocol::HttpProtobuf)),
        Some("grpc") => Ok(Some(OtlpProtocol::Grpc)),
        Some(other) => Err(format!(
            "{name}={other} is not supported: expected http/protobuf or grpc"
        )),
    }
}

fn tracer_provider(protocol: OtlpProtocol) -> Result<SdkTracerProvider, String> {
    let exporter = match protocol {
        OtlpProtocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .build(),
        OtlpProtocol::Grpc => opentelemetry_otlp::SpanExporter::builder().with_tonic().build(),
    }
    .map_err(|error| format!("cannot set up the OTLP trace exporter: {error}"))?;
    let resource = Resource::builder();
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win; otherwise the service is called what it is.
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|name| !name.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|attributes| attributes.contains("service.name="));
    let resource = if named {
        resource
    } else {
        resource.with_service_name("trueforge")
    };
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

/// Installs the log layer and, when configured, the trace exporter. `level` is `LOG_LEVEL`'s.
pub fn init(level: &str, format: LogFormat) -> Result<Telemetry, String> {
    let protocol = otlp_protocol(|name| std::env::var(name).ok())?;
    let filter = EnvFilter::try_new(format!("{level},sqlx=warn,hyper=warn,h2=warn,tonic=warn,tower=warn"))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let log_layer = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_target(false).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .event_format(JsonWithTrace(
                tracing_subscriber::fmt::format()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(true),
            ))
            .fmt_fields(JsonFields::new())
            .boxed(),
    }
    .with_filter(filter);
    let Some(protocol) = protocol else {
        tracing_subscriber::registry()
            .with(log_layer)
            .try_init()
            .map_err(|error| format!("cannot install the logger: {error}"))?;
        return Ok(Telemetry { provider: None });
    };
    let provider = tracer_provider(protocol)?;
    // Only TrueForge's spans: the libraries' (hyper, tonic, reqwest), at any level, would also trace the
    // exporter's own requests.
    let spans = Targets::new().with_target("trueforge", tracing::Level::INFO);
    let otel_layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("trueforge"))
        .with_location(false)
        .with_threads(false)
        .with_filter(spans);
    tracing_subscriber::registry()
        .with(log_layer)
        .with(otel_layer)
        .try_init()
        .map_err(|error| format!("cannot install the logger: {error}"))?;
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    trueforge_telemetry::mark_enabled();
    tracing::info!(protocol = ?protocol, "exporting traces over OTLP");
    Ok(Telemetry {
        provider: Some(provider),
    })
}

/// tracing-subscriber's JSON lines with the OpenTelemetry trace and span ids of the event's span added at
/// the top level, where log collectors look for them to link a line to its trace.
struct JsonWithTrace(Format<Json>);

impl<S, N> FormatEvent<S, N> for JsonWithTrace
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        let ids = trace_ids(ctx);
        match (ids, line.trim_end().strip_suffix('}')) {
            (Some((trace_id, span_id)), Some(open)) => {
                writeln!(writer, "{open},\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\"}}")
            }
            _ => writer.write_str(&line),
        }
    }
}

/// The trace and span ids of the event's innermost span, when it belongs to an exported trace.
fn trace_ids<S, N>(ctx: &FmtContext<'_, S, N>) -> Option<(String, String)>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    if !trueforge_telemetry::enabled() {
        return None;
    }
    let span = ctx.event_scope()?.next()?;
    let id = span.id();
    drop(span);
    let cx = tracing::dispatcher::get_default(|dispatch| tracing_opentelemetry::get_otel_context(&id, dispatch))?;
    let span_context = cx.span().span_context().clone();
    span_context
        .is_valid()
        .then(|| (span_context.trace_id().to_string(), span_context.span_id().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protocol(vars: &[(&str, &str)]) -> Result<Option<OtlpProtocol>, String> {
        otlp_protocol(|name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    #[test]
    fn off_without_an_endpoint_or_when_disabled() {
        assert_eq!(protocol(&[]), Ok(None));
        assert_eq!(protocol(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]), Ok(None));
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        assert_eq!(protocol(&[endpoint, ("OTEL_SDK_DISABLED", "true")]), Ok(None));
        assert_eq!(protocol(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")]), Ok(None));
    }

    #[test]
    fn the_protocol_follows_the_standard_variables() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        assert_eq!(protocol(&[endpoint]), Ok(Some(OtlpProtocol::HttpProtobuf)));
        assert_eq!(
            protocol(&[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4317"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
            ]),
            Ok(Some(OtlpProtocol::Grpc))
        );
        assert_eq!(
            protocol(&[
                endpoint,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
            ]),
            Ok(Some(OtlpProtocol::HttpProtobuf))
        );
    }

    #[test]
    fn unsupported_choices_are_named() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        let error = protocol(&[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).unwrap_err();
        assert!(error.contains("OTEL_EXPORTER_OTLP_PROTOCOL=http/json"), "{error}");
        let error = protocol(&[endpoint, ("OTEL_TRACES_EXPORTER", "zipkin")]).unwrap_err();
        assert!(error.contains("zipkin"), "{error}");
    }
}
