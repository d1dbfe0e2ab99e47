//! A small OpenTelemetry collector for tests: it accepts OTLP trace exports over HTTP/protobuf
//! (`POST /v1/traces`) and gRPC (`TraceService/Export`, HTTP/2 without TLS) on one port, and keeps every
//! span it received, flattened to what tests assert on.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message as _;
use serde_json::Value;

/// One received span.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub trace_id: String,
    pub span_id: String,
    /// `None` for a root span.
    pub parent_span_id: Option<String>,
    pub name: String,
    /// OTLP's `SpanKind`: 1 internal, 2 server, 3 client.
    pub kind: i32,
    pub attributes: BTreeMap<String, Value>,
    /// OTLP's status code: 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    /// The exporting resource's `service.name`.
    pub service_name: Option<String>,
    /// `http` or `grpc`: how the span arrived.
    pub transport: &'static str,
    pub start_unix_nanos: u64,
    pub end_unix_nanos: u64,
}

impl ReceivedSpan {
    pub fn attribute(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key)
    }

    pub fn str_attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    pub fn int_attribute(&self, key: &str) -> Option<i64> {
        self.attributes.get(key).and_then(Value::as_i64)
    }
}

#[derive(Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
}

impl Received {
    fn add(&self, request: ExportTraceServiceRequest, transport: &'static str) {
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        for resource_spans in request.resource_spans {
            let service_name = resource_spans.resource.as_ref().and_then(|resource| {
                resource
                    .attributes
                    .iter()
                    .find(|attribute| attribute.key == "service.name")
                    .and_then(|attribute| attribute.value.as_ref())
                    .and_then(|value| match &value.value {
                        Some(any_value::Value::StringValue(name)) => Some(name.clone()),
                        _ => None,
                    })
            });
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    spans.push(ReceivedSpan {
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: (!span.parent_span_id.is_empty()).then(|| hex(&span.parent_span_id)),
                        name: span.name,
                        kind: span.kind,
                        attributes: attributes(&span.attributes),
                        status_code: span.status.map_or(0, |status| status.code),
                        service_name: service_name.clone(),
                        transport,
                        start_unix_nanos: span.start_time_unix_nano,
                        end_unix_nanos: span.end_time_unix_nano,
                    });
                }
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn attributes(pairs: &[KeyValue]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|pair| {
            (
                pair.key.clone(),
                pair.value.as_ref().map_or(Value::Null, any_value_json),
            )
        })
        .collect()
}

fn any_value_json(value: &AnyValue) -> Value {
    match &value.value {
        None => Value::Null,
        Some(any_value::Value::StringValue(text)) => Value::String(text.clone()),
        Some(any_value::Value::BoolValue(flag)) => Value::Bool(*flag),
        Some(any_value::Value::IntValue(number)) => Value::from(*number),
        Some(any_value::Value::DoubleValue(number)) => Value::from(*number),
        Some(any_value::Value::ArrayValue(array)) => Value::Array(array.values.iter().map(any_value_json).collect()),
        Some(any_value::Value::KvlistValue(list)) => Value::Object(attributes(&list.values).into_iter().collect()),
        Some(any_value::Value::BytesValue(bytes)) => Value::String(hex(bytes)),
        Some(_) => Value::Null,
    }
}

/// The receiver; it stops when dropped.
pub struct OtlpReceiver {
    /// `http://127.0.0.1:<port>`: the value of `OTEL_EXPORTER_OTLP_ENDPOINT` for either protocol.
    pub endpoint: String,
    received: Received,
    server: tokio::task::JoinHandle<()>,
}

impl OtlpReceiver {
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    pub async fn start_on(address: SocketAddr) -> std::io::Result<Self> {
        let received = Received::default();
        let grpc = TraceServiceServer::new(GrpcReceiver(received.clone()));
        let app = Router::new()
            .route("/v1/traces", post(export_http))
            .route_service("/opentelemetry.proto.collector.trace.v1.TraceService/Export", grpc)
            .with_state(received.clone());
        let listener = tokio::net::TcpListener::bind(address).await?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            endpoint,
            received,
            server,
        })
    }

    /// Every span received so far, in arrival order.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.received
            .spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until `done` holds for the spans received (checked every 50 ms), up to `timeout`; returns them
    /// either way, so the caller's assertion shows what did arrive.
    pub async fn wait_for(&self, timeout: Duration, done: impl Fn(&[ReceivedSpan]) -> bool) -> Vec<ReceivedSpan> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let spans = self.spans();
            if done(&spans) || tokio::time::Instant::now() >= deadline {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn export_http(State(received): State<Received>, headers: HeaderMap, body: Bytes) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if content_type != "application/x-protobuf" {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "this receiver takes OTLP/HTTP protobuf only",
        )
            .into_response();
    }
    match ExportTraceServiceRequest::decode(body) {
        Ok(request) => {
            received.add(request, "http");
            (
                [(header::CONTENT_TYPE, "application/x-protobuf")],
                ExportTraceServiceResponse::default().encode_to_vec(),
            )
                .into_response()
        }
        Err(error) => (StatusCode::BAD_REQUEST, format!("not an OTLP trace export: {error}")).into_response(),
    }
}

struct GrpcReceiver(Received);

#[tonic::async_trait]
impl TraceService for GrpcReceiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.add(request.into_inner(), "grpc");
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}
