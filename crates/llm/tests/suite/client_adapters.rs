#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The model client with each real adapter against the fake model server: retries, cuts, cancellation,
//! idle timeouts and cost, per wire format.

use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trueforge_llm::{
    ClientOptions, Endpoint, EventStream, LlmError, Message, ModelClient, ModelPricing, ModelRequest, RetryPolicy,
    StreamEvent, WireApi, wire_format,
};
use trueforge_testkit::fake_llm::{Api, FakeLlm, Outcome, ScriptedError, ScriptedStream, ScriptedUsage};

fn wire_api(api: Api) -> WireApi {
    match api {
        Api::Responses => WireApi::OpenAiResponses,
        Api::Chat => WireApi::ChatCompletions,
        Api::Anthropic => WireApi::Anthropic,
        Api::Gemini => WireApi::Gemini,
    }
}

fn options() -> ClientOptions {
    ClientOptions {
        retry: RetryPolicy {
            backoff_base: Duration::from_millis(20),
            backoff_max: Duration::from_millis(100),
            jitter: false,
            ..RetryPolicy::default()
        },
        idle_timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    }
}

fn client(fake: &FakeLlm, api: Api, options: ClientOptions) -> ModelClient {
    let endpoint = Endpoint {
        base_url: fake.base_url(api),
        api_key: Some("fake-key".to_owned()),
        model: "fake-model".to_owned(),
        headers: Vec::new(),
    };
    ModelClient::new(wire_format(wire_api(api)), endpoint, options).unwrap()
}

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user_text("hello")],
        ..ModelRequest::default()
    }
}

async fn drain(mut stream: EventStream) -> Vec<Result<StreamEvent, LlmError>> {
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        items.push(item);
    }
    items
}

async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(5), future)
        .await
        .expect("timed out after 5 s")
}

/// Waits until the fake server saw the client go away from request `index`.
async fn wait_disconnected(fake: &FakeLlm, index: usize) {
    within(async {
        while fake.requests()[index].outcome != Outcome::ClientDisconnected {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

async fn retry_after_429_then_text(api: Api) {
    let fake = FakeLlm::start().await;
    fake.push(ScriptedError::status(429).retry_after(1));
    fake.push(ScriptedStream::text("after the wait"));
    let started = Instant::now();
    let response = client(&fake, api, options())
        .complete(&request(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text, "after the wait");
    assert_eq!(fake.requests().len(), 2);
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After ignored");
}

async fn retry_after_server_errors_then_gives_up(api: Api) {
    let fake = FakeLlm::start().await;
    fake.push(ScriptedError::status(500));
    fake.push(ScriptedError::status(503));
    fake.push(ScriptedError::status(502));
    fake.push(ScriptedStream::text("too late"));
    let error = client(&fake, api, options())
        .complete(&request(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Server { status: 502, .. }), "{error:?}");
    assert_eq!(fake.requests().len(), 3);
}

async fn no_retry_for_401(api: Api) {
    let fake = FakeLlm::start().await;
    fake.push(ScriptedError::status(401));
    fake.push(ScriptedStream::text("never"));
    let error = client(&fake, api, options())
        .complete(&request(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Authentication { .. }), "{error:?}");
    assert_eq!(fake.requests().len(), 1);
}

/// A text long enough that the first text delta comes well before the cut.
fn long_text() -> ScriptedStream {
    ScriptedStream::text("one two three four five six seven eight nine ten eleven twelve").chunks(12)
}

async fn no_retry_after_cut_mid_stream(api: Api) {
    let fake = FakeLlm::start().await;
    fake.push(long_text().cut_after(8));
    fake.push(ScriptedStream::text("never"));
    let stream = client(&fake, api, options())
        .stream(&request(), CancellationToken::new())
        .await
        .unwrap();
    let items = drain(stream).await;
    assert!(
        items
            .iter()
            .any(|item| matches!(item, Ok(StreamEvent::TextDelta { .. }))),
        "{items:?}"
    );
    assert_eq!(items.last(), Some(&Err(LlmError::StreamCutShort)));
    assert_eq!(fake.requests().len(), 1);
}

async fn no_retry_after_connection_abort_mid_stream(api: Api) {
    let fake = FakeLlm::start().await;
    fake.push(long_text().abort_after(8));
    fake.push(ScriptedStream::text("never"));
    let stream = client(&fake, api, options())
        .stream(&request(), CancellationToken::new())
        .await
        .unwrap();
    let items = drain(stream).await;
    assert!(
        items
            .iter()
            .any(|item| matches!(item, Ok(StreamEvent::TextDelta { .. }))),
        "{items:?}"
    );
    assert!(
        matches!(items.last(), Some(Err(LlmError::Connect(_) | LlmError::StreamCutShort))),
        "{items:?}"
    );
    assert_eq!(fake.requests().len(), 1);
}

async fn retry_after_cut_before_any_output(api: Api) {
    let fake = FakeLlm::start().await;
    fake.push(long_text().cut_after(0));
    fake.push(ScriptedStream::text("second try"));
    let response = client(&fake, api, options())
        .complete(&request(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text, "second try");
    assert_eq!(fake.requests().len(), 2);
}

async fn cancel_mid_stream(api: Api) {
    let fake = FakeLlm::start().await;
    fake.push(long_text().delays(0, 200));
    let cancel = CancellationToken::new();
    let mut stream = client(&fake, api, options())
        .stream(&request(), cancel.clone())
        .await
        .unwrap();
    loop {
        if let StreamEvent::TextDelta { .. } = within(stream.next()).await.unwrap().unwrap() {
            break;
        }
    }
    cancel.cancel();
    assert_eq!(within(stream.next()).await, Some(Err(LlmError::Cancelled)));
    assert_eq!(stream.next().await, None);
    wait_disconnected(&fake, 0).await;
}

async fn timeout_before_first_byte(api: Api) {
    let fake = FakeLlm::start().await;
    fake.push(ScriptedStream::text("slow").delays(3_000, 0));
    let idle = Duration::from_millis(300);
    let options = ClientOptions {
        idle_timeout: idle,
        ..options()
    };
    let result = within(client(&fake, api, options).complete(&request(), CancellationToken::new())).await;
    assert_eq!(result.unwrap_err(), LlmError::IdleTimeout(idle));
    assert_eq!(fake.requests().len(), 1);
}

async fn usage_cost_and_origin(api: Api) {
    let fake = FakeLlm::start().await;
    let usage = ScriptedUsage {
        input_tokens: 2_000_000,
        output_tokens: 500_000,
        cache_read_tokens: 1_000_000,
        ..ScriptedUsage::default()
    };
    fake.push(ScriptedStream::text("counted").usage(usage));
    let pricing = ModelPricing {
        input_per_mtok: Some(2.0),
        output_per_mtok: Some(8.0),
        cache_read_per_mtok: Some(0.5),
        ..ModelPricing::default()
    };
    let options = ClientOptions {
        pricing: Some(pricing),
        ..options()
    };
    let response = client(&fake, api, options)
        .complete(&request(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.usage.input_tokens, 2_000_000);
    assert_eq!(response.usage.cache_read_tokens, 1_000_000);
    let cost = response.usage.cost_usd.expect("a cost");
    assert!((cost - (2.0 + 4.0 + 0.5)).abs() < 1e-9, "cost {cost}");
    let origin = response.message.origin.expect("an origin");
    assert_eq!(origin.provider, wire_api(api));
    assert_eq!(origin.model, "fake-model");
}

/// The provider fails in-stream before any answer (Anthropic sends `message_start` with usage first, then
/// an `overloaded_error`): nothing was streamed, so the client retries.
async fn retry_after_in_stream_overload_before_any_output(api: Api) {
    let fake = FakeLlm::start().await;
    let overloaded = if matches!(api, Api::Anthropic) { 529 } else { 503 };
    let mut failing = ScriptedStream::text("");
    failing.stream_error = Some(ScriptedError::status(overloaded));
    fake.push(failing);
    fake.push(ScriptedStream::text("second try"));
    let response = client(&fake, api, options())
        .complete(&request(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text, "second try");
    assert_eq!(fake.requests().len(), 2);
}

macro_rules! adapter_tests {
    ($adapter:ident, $api:expr) => {
        mod $adapter {
            use super::*;

            #[tokio::test]
            async fn retry_after_429_honours_retry_after() {
                retry_after_429_then_text($api).await;
            }

            #[tokio::test]
            async fn retry_after_5xx_until_max_attempts() {
                retry_after_server_errors_then_gives_up($api).await;
            }

            #[tokio::test]
            async fn retry_after_an_in_stream_overload_before_any_output() {
                retry_after_in_stream_overload_before_any_output($api).await;
            }

            #[tokio::test]
            async fn retry_not_for_401() {
                no_retry_for_401($api).await;
            }

            #[tokio::test]
            async fn retry_not_after_a_cut_mid_stream() {
                no_retry_after_cut_mid_stream($api).await;
            }

            #[tokio::test]
            async fn retry_not_after_a_connection_abort_mid_stream() {
                no_retry_after_connection_abort_mid_stream($api).await;
            }

            #[tokio::test]
            async fn retry_after_a_cut_before_any_output() {
                retry_after_cut_before_any_output($api).await;
            }

            #[tokio::test]
            async fn cancel_mid_stream_closes_the_connection() {
                cancel_mid_stream($api).await;
            }

            #[tokio::test]
            async fn timeout_before_the_first_byte() {
                timeout_before_first_byte($api).await;
            }

            #[tokio::test]
            async fn usage_cost_and_origin_on_complete() {
                usage_cost_and_origin($api).await;
            }
        }
    };
}

adapter_tests!(responses, Api::Responses);
adapter_tests!(chat, Api::Chat);
adapter_tests!(anthropic, Api::Anthropic);
adapter_tests!(gemini, Api::Gemini);
