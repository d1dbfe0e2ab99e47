//! A tool call's round-trip overhead through our layer against a direct rmcp call.
//!
//! Each benchmark calls server-everything's `echo` tool (`{"message": "ping"}`) on a warm connection
//! to its own server process (the npm server `scripts/test.sh` installs, found through
//! `TRUEFORGE_TEST_MCP_DIR`), over stdio and over Streamable HTTP:
//!
//! - `direct_rmcp`: `Peer::call_tool` on a connection opened with rmcp alone, with the same client
//!   settings our layer uses (protocol 2025-11-25, no capabilities, no session re-initialisation).
//! - `mcp_connection`: `McpConnection::call_tool` (timeout and cancellation around the same call).
//! - `mcp_toolset`: `ToolSet::call_tool` on an `McpToolSet`, as the agent calls it (name resolution,
//!   the allow check, the result mapped to `ToolContent`), the tool list already fetched.
//!
//! Every iteration is one `block_on` of one call on a multi-thread runtime, the same for all three, so
//! the differences are our layer's work. Criterion's medians are in
//! `target/criterion/tool_call_<transport>/<variant>/new/estimates.json`. After each transport's
//! group, a plain loop calls the three variants in turn (3,000 rounds on stdio, 400 over HTTP) and
//! prints their medians and the overhead over `direct_rmcp`: the comparison to quote, because the
//! VM's speed drifts between criterion's back-to-back measurements by more than the overhead.
//!
//! Run: `TRUEFORGE_TEST_MCP_DIR=~/.cache/trueforge-test-mcp cargo bench -p trueforge-mcp --bench tool_call`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Setup failures end the bench, as in tests.

#[path = "../tests/common/mod.rs"]
mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation, ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Map, Value, json};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;
use trueforge_mcp::{McpConnection, McpServerConfig, McpToolSet};
use trueforge_protocol::McpServerRef;
use trueforge_tools::{ToolContext, ToolOutput, ToolSet};

const TOOL: &str = "echo";
const MESSAGE: &str = "ping";
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// The settings `McpConnection` uses, so the direct connection negotiates the same session.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("trueforge-bench", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

fn arguments() -> Map<String, Value> {
    let mut arguments = Map::new();
    arguments.insert("message".to_owned(), json!(MESSAGE));
    arguments
}

async fn direct(config: &McpServerConfig) -> RunningService<RoleClient, ClientConfig> {
    match config {
        McpServerConfig::Stdio { command, args, .. } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args);
            let (transport, _) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::null())
                .spawn()
                .expect("server-everything starts");
            rmcp::serve_client(client_config(), transport)
                .await
                .expect("initialises")
        }
        McpServerConfig::StreamableHttp { url, .. } => {
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).reinit_on_expired_session(false),
            );
            rmcp::serve_client(client_config(), transport)
                .await
                .expect("initialises")
        }
    }
}

async fn direct_call(service: &RunningService<RoleClient, ClientConfig>) {
    let params = CallToolRequestParams::new(TOOL).with_arguments(arguments());
    let result = service.peer().call_tool(params).await.expect("echo answers");
    let echoed = result
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::Text(text) if text.text.contains(MESSAGE)));
    assert!(echoed, "{result:?}");
}

async fn connection_call(connection: &McpConnection, cancel: &CancellationToken) {
    let result = connection
        .call_tool(TOOL, Value::Object(arguments()), CALL_TIMEOUT, cancel)
        .await
        .expect("echo answers");
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

async fn toolset_call(set: &McpToolSet, cx: &ToolContext) {
    match set.call_tool(TOOL, Value::Object(arguments()), cx).await {
        Ok(ToolOutput::Content(content)) if !content.is_error => {}
        other => panic!("echo failed: {other:?}"),
    }
}

/// The three variants over one transport; `config` is called once per variant so each gets its own
/// server process.
fn bench_transport(
    criterion: &mut Criterion,
    runtime: &Runtime,
    transport: &str,
    rounds: usize,
    config: impl Fn() -> McpServerConfig,
) {
    let direct_service = runtime.block_on(direct(&config()));
    let connection = runtime.block_on(common::connect(&config()));
    let set = common::tool_set(
        runtime.block_on(common::connect(&config())),
        McpServerRef::named("everything"),
    );
    let cancel = CancellationToken::new();
    let cx = common::context();
    // Warm every path once (the tool set fetches its tool list here) and check it answers right.
    runtime.block_on(async {
        direct_call(&direct_service).await;
        connection_call(&connection, &cancel).await;
        toolset_call(&set, &cx).await;
    });

    let mut group = criterion.benchmark_group(format!("tool_call_{transport}"));
    group.sample_size(50);
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(6));
    group.bench_function("direct_rmcp", |b| {
        b.iter(|| runtime.block_on(direct_call(&direct_service)))
    });
    group.bench_function("mcp_connection", |b| {
        b.iter(|| runtime.block_on(connection_call(&connection, &cancel)))
    });
    group.bench_function("mcp_toolset", |b| b.iter(|| runtime.block_on(toolset_call(&set, &cx))));
    group.finish();

    // Criterion measures the variants one after the other, minutes apart, and this VM's speed drifts
    // more than our layer costs; interleaving them call by call compares them under the same conditions.
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for round in 0..rounds {
        for variant in 0..3 {
            // Rotated, so no variant always runs right after another.
            let variant = (variant + round) % 3;
            let started = Instant::now();
            runtime.block_on(async {
                match variant {
                    0 => direct_call(&direct_service).await,
                    1 => connection_call(&connection, &cancel).await,
                    _ => toolset_call(&set, &cx).await,
                }
            });
            samples[variant].push(started.elapsed());
        }
    }
    let [direct_median, connection_median, toolset_median] = samples.map(median_micros);
    println!(
        "tool_call_{transport} interleaved medians over {rounds} rounds: direct_rmcp {direct_median:.1} µs, \
         mcp_connection {connection_median:.1} µs ({:+.1}), mcp_toolset {toolset_median:.1} µs ({:+.1})",
        connection_median - direct_median,
        toolset_median - direct_median,
    );

    runtime.block_on(async {
        connection.close().await;
        set.connection().close().await;
        let _ = direct_service.cancel().await;
    });
}

fn median_micros(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}

fn tool_call(criterion: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    bench_transport(criterion, &runtime, "stdio", 3000, common::everything_stdio);
    // Three HTTP servers, one per variant, kept alive until the group is done.
    let http = runtime.block_on(async {
        [
            common::HttpEverything::start().await,
            common::HttpEverything::start().await,
            common::HttpEverything::start().await,
        ]
    });
    let next = std::cell::Cell::new(0);
    bench_transport(criterion, &runtime, "http", 400, || {
        let index = next.get();
        next.set(index + 1);
        http[index].config()
    });
}

criterion_group!(benches, tool_call);
criterion_main!(benches);
