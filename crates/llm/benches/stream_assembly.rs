//! Parse-and-assemble throughput of a streamed answer of about 1 MB per wire format: body chunks →
//! `eventsource-stream` → the adapter's decoder → `Assembler`, as the client runs them, without the
//! network.
//!
//! The SSE bodies are produced once, before measuring, by the testkit's fake model server (whose framing
//! follows the providers' documented streams byte for byte): a text answer in many small deltas, as a
//! model streams tokens, with usage at the end. The body is then fed to the pipeline in 16 KiB reads.
//!
//! Run: `cargo bench -p trueforge-llm --bench stream_assembly`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use trueforge_llm::sse::sse_events;
use trueforge_llm::{Assembler, Endpoint, Message, ModelRequest, ModelResponse, WireApi, WireFormat, wire_format};
use trueforge_testkit::fake_llm::{Api, FakeLlm, ScriptedStream, ScriptedUsage};

const TARGET_BODY_BYTES: usize = 1 << 20;
const READ_BYTES: usize = 16 * 1024;
/// About one token of English per delta.
const DELTA: &str = "word";

fn wire_api(api: Api) -> WireApi {
    match api {
        Api::Responses => WireApi::OpenAiResponses,
        Api::Chat => WireApi::ChatCompletions,
        Api::Anthropic => WireApi::Anthropic,
        Api::Gemini => WireApi::Gemini,
    }
}

/// The raw SSE body the fake server sends for a text of `deltas` deltas.
async fn fetch_body(fake: &FakeLlm, api: Api, wire: &dyn WireFormat, deltas: usize) -> Bytes {
    fake.push(
        ScriptedStream::text(DELTA.repeat(deltas))
            .chunks(deltas)
            .usage(ScriptedUsage {
                input_tokens: 1000,
                output_tokens: deltas as u64,
                ..ScriptedUsage::default()
            }),
    );
    let endpoint = Endpoint {
        base_url: fake.base_url(api),
        api_key: Some("bench".to_owned()),
        model: "bench-model".to_owned(),
        headers: Vec::new(),
    };
    let request = ModelRequest {
        messages: vec![Message::user_text("write a long answer")],
        ..ModelRequest::default()
    };
    let http = wire.build_request(&endpoint, &request).unwrap();
    let mut builder = reqwest::Client::new()
        .post(&http.url)
        .header("content-type", "application/json")
        .body(http.body);
    for (name, value) in &http.headers {
        builder = builder.header(name, value);
    }
    let response = builder.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response.bytes().await.unwrap()
}

/// A body of about 1 MB: measure the bytes per delta on a small answer, then scale.
async fn one_megabyte_body(fake: &FakeLlm, api: Api, wire: &dyn WireFormat) -> Bytes {
    let probe = 1000;
    let probe_len = fetch_body(fake, api, wire, probe).await.len();
    let deltas = TARGET_BODY_BYTES * probe / probe_len;
    let body = fetch_body(fake, api, wire, deltas).await;
    eprintln!("{api:?}: {} body bytes, {deltas} text deltas", body.len());
    body
}

async fn assemble(wire: &dyn WireFormat, reads: &[Bytes]) -> ModelResponse {
    // The client's SSE stream owns its body; cloning `Bytes` only bumps reference counts.
    let owned: Vec<Bytes> = reads.to_vec();
    let body = futures::stream::iter(owned.into_iter().map(Ok::<_, Infallible>));
    let mut events = std::pin::pin!(sse_events(body));
    let mut decoder = wire.decoder();
    let mut assembler = Assembler::new();
    while let Some(event) = events.next().await {
        for stream_event in decoder.decode(&event.unwrap()).unwrap() {
            assembler.push(&stream_event).unwrap();
        }
    }
    for stream_event in decoder.finish().unwrap() {
        assembler.push(&stream_event).unwrap();
    }
    assembler.finish().unwrap()
}

fn stream_assembly(criterion: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let fake = runtime.block_on(FakeLlm::start());
    let mut group = criterion.benchmark_group("stream_assembly");
    for api in [Api::Responses, Api::Chat, Api::Anthropic, Api::Gemini] {
        let wire = wire_format(wire_api(api));
        let body = runtime.block_on(one_megabyte_body(&fake, api, wire.as_ref()));
        let reads: Vec<Bytes> = body.chunks(READ_BYTES).map(Bytes::copy_from_slice).collect();
        let check = runtime.block_on(assemble(wire.as_ref(), &reads));
        assert!(
            check.message.text.len() > TARGET_BODY_BYTES / 100,
            "the answer was not assembled"
        );
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(format!("{api:?}").to_lowercase(), |bencher| {
            bencher.iter(|| runtime.block_on(assemble(wire.as_ref(), &reads)));
        });
    }
    group.finish();
}

criterion_group!(benches, stream_assembly);
criterion_main!(benches);
