#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Retries of the model client: what is retried, how long it waits, and that nothing is retried once the
//! caller has seen output.

use std::time::{Duration, Instant, SystemTime};

use crate::client_support::*;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;
use trueforge_llm::retry::{is_retryable, parse_retry_after, retry_after_value};
use trueforge_llm::{ClientOptions, LlmError, RetryPolicy, StreamEvent};

async fn complete_text(server: &ScriptedServer, options: ClientOptions) -> Result<String, LlmError> {
    let client = server.client(options);
    client
        .complete(&hello_request(), CancellationToken::new())
        .await
        .map(|response| response.message.text)
}

#[tokio::test]
async fn retry_after_429_waits_for_retry_after_seconds() {
    let server = ScriptedServer::start(vec![Reply::status_with(429, "retry-after", "1"), Reply::text(&["hi"])]).await;
    let started = Instant::now();
    let text = complete_text(&server, quick_options()).await.unwrap();
    assert_eq!(text, "hi");
    assert_eq!(server.request_count(), 2);
    // The backoff alone would have waited 20 ms; the provider asked for a second.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited only {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn retry_after_500_then_succeeds() {
    let server = ScriptedServer::start(vec![Reply::status(500, "boom"), Reply::text(&["ok"])]).await;
    assert_eq!(complete_text(&server, quick_options()).await.unwrap(), "ok");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn retry_on_408_and_409_even_when_classified_as_bad_request() {
    let server = ScriptedServer::start(vec![
        Reply::status(408, "timeout"),
        Reply::status(409, "conflict"),
        Reply::text(&["ok"]),
    ])
    .await;
    assert_eq!(complete_text(&server, quick_options()).await.unwrap(), "ok");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn retry_gives_up_after_max_attempts() {
    let server = ScriptedServer::start(vec![Reply::status(503, "unavailable")]).await;
    let error = complete_text(&server, quick_options()).await.unwrap_err();
    assert!(matches!(error, LlmError::Server { status: 503, ref message, .. } if message == "unavailable"));
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn retry_max_attempts_is_configurable() {
    let server = ScriptedServer::start(vec![Reply::status(502, "bad gateway")]).await;
    let mut options = quick_options();
    options.retry.max_attempts = 1;
    let error = complete_text(&server, options).await.unwrap_err();
    assert!(matches!(error, LlmError::Server { status: 502, .. }));
    assert_eq!(server.request_count(), 1);

    let server = ScriptedServer::start(vec![Reply::status(502, "bad gateway")]).await;
    let mut options = quick_options();
    options.retry.max_attempts = 5;
    complete_text(&server, options).await.unwrap_err();
    assert_eq!(server.request_count(), 5);
}

#[tokio::test]
async fn retry_no_retry_for_400_and_401() {
    let server = ScriptedServer::start(vec![Reply::status(400, "bad field"), Reply::text(&["never"])]).await;
    let error = complete_text(&server, quick_options()).await.unwrap_err();
    assert_eq!(
        error,
        LlmError::BadRequest {
            status: 400,
            message: "bad field".to_owned()
        }
    );
    assert_eq!(server.request_count(), 1);

    let server = ScriptedServer::start(vec![Reply::status(401, "bad key"), Reply::text(&["never"])]).await;
    let error = complete_text(&server, quick_options()).await.unwrap_err();
    assert_eq!(
        error,
        LlmError::Authentication {
            message: "bad key".to_owned()
        }
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn retry_after_connect_error_when_port_closed() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let client = client_for(&base_url, quick_options());
    let started = Instant::now();
    let error = client
        .complete(&hello_request(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Connect(_)), "{error:?}");
    // Three attempts: two backoffs without jitter, 20 ms then 40 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(60),
        "gave up after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn retry_reaches_a_server_that_comes_up_after_a_connect_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut options = quick_options();
    options.retry.backoff_base = Duration::from_millis(400);
    options.retry.backoff_max = Duration::from_millis(400);
    let client = client_for(&format!("http://{addr}"), options);
    let starter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        ScriptedServer::serve(listener, vec![Reply::text(&["up"])])
    });
    let response = client
        .complete(&hello_request(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text, "up");
    assert_eq!(starter.await.unwrap().request_count(), 1);
}

#[tokio::test]
async fn retry_never_once_an_event_was_yielded() {
    // The first answer breaks after one event, without its end marker; the second would succeed.
    let server = ScriptedServer::start(vec![
        Reply::frames(vec![text_frame("partial")]),
        Reply::text(&["whole"]),
    ])
    .await;
    let client = server.client(quick_options());
    let stream = client.stream(&hello_request(), CancellationToken::new()).await.unwrap();
    let items = drain(stream).await;
    assert_eq!(
        items,
        vec![
            Ok(StreamEvent::TextDelta {
                text: "partial".to_owned()
            }),
            Err(LlmError::StreamCutShort),
        ]
    );
    assert_eq!(server.request_count(), 1);

    let error = client.complete(&hello_request(), CancellationToken::new()).await;
    assert_eq!(error.unwrap().message.text, "whole", "a new call is a new attempt");
}

#[tokio::test]
async fn retry_when_the_stream_breaks_before_its_first_event() {
    let ping = "data: {\"ping\":true}\n\n".to_owned();
    let server = ScriptedServer::start(vec![Reply::frames(vec![ping]), Reply::text(&["second"])]).await;
    assert_eq!(complete_text(&server, quick_options()).await.unwrap(), "second");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn retry_on_in_stream_overloaded_error_before_first_event() {
    let overloaded = "data: {\"error\":\"overloaded\"}\n\n".to_owned();
    let server = ScriptedServer::start(vec![Reply::frames(vec![overloaded]), Reply::text(&["calm"])]).await;
    assert_eq!(complete_text(&server, quick_options()).await.unwrap(), "calm");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn retry_not_for_in_stream_error_after_output() {
    let overloaded = "data: {\"error\":\"overloaded\"}\n\n".to_owned();
    let server = ScriptedServer::start(vec![
        Reply::frames(vec![text_frame("a"), overloaded]),
        Reply::text(&["b"]),
    ])
    .await;
    let error = complete_text(&server, quick_options()).await.unwrap_err();
    assert!(matches!(error, LlmError::Server { status: 529, .. }));
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn retry_after_longer_than_the_cap_fails_at_once() {
    let server = ScriptedServer::start(vec![
        Reply::status_with(429, "retry-after", "3600"),
        Reply::text(&["never"]),
    ])
    .await;
    let started = Instant::now();
    let error = complete_text(&server, quick_options()).await.unwrap_err();
    assert!(matches!(
        error,
        LlmError::RateLimited { retry_after: Some(wait), .. } if wait == Duration::from_secs(3600)
    ));
    assert_eq!(server.request_count(), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn retry_after_ms_header_is_honoured() {
    let server = ScriptedServer::start(vec![
        Reply::status_with(429, "retry-after-ms", "300"),
        Reply::text(&["ok"]),
    ])
    .await;
    let started = Instant::now();
    assert_eq!(complete_text(&server, quick_options()).await.unwrap(), "ok");
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[test]
fn retry_after_parses_seconds_and_http_dates() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470); // Wed, 21 Oct 2015 07:27:50 GMT
    assert_eq!(retry_after_value("120", now), Some(Duration::from_secs(120)));
    assert_eq!(retry_after_value(" 0 ", now), Some(Duration::ZERO));
    assert_eq!(
        retry_after_value("Wed, 21 Oct 2015 07:28:00 GMT", now),
        Some(Duration::from_secs(10))
    );
    assert_eq!(
        retry_after_value("Wed, 21 Oct 2015 07:00:00 GMT", now),
        Some(Duration::ZERO),
        "a date in the past means now"
    );
    assert_eq!(retry_after_value("soon", now), None);
    assert_eq!(retry_after_value("-5", now), None);
    assert_eq!(retry_after_value("", now), None);
}

#[test]
fn retry_after_header_prefers_milliseconds() {
    let now = SystemTime::now();
    let mut headers = HeaderMap::new();
    assert_eq!(parse_retry_after(&headers, now), None);
    headers.insert("retry-after", HeaderValue::from_static("7"));
    assert_eq!(parse_retry_after(&headers, now), Some(Duration::from_secs(7)));
    headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
    assert_eq!(parse_retry_after(&headers, now), Some(Duration::from_millis(1500)));
    headers.insert("retry-after-ms", HeaderValue::from_static("garbage"));
    assert_eq!(parse_retry_after(&headers, now), Some(Duration::from_secs(7)));
}

#[test]
fn retry_backoff_doubles_up_to_its_ceiling_and_jitter_stays_below_it() {
    let policy = RetryPolicy {
        backoff_base: Duration::from_millis(100),
        backoff_max: Duration::from_millis(1000),
        jitter: false,
        ..RetryPolicy::default()
    };
    assert_eq!(policy.backoff(1), Duration::from_millis(100));
    assert_eq!(policy.backoff(2), Duration::from_millis(200));
    assert_eq!(policy.backoff(4), Duration::from_millis(800));
    assert_eq!(policy.backoff(5), Duration::from_millis(1000));
    assert_eq!(policy.backoff(u32::MAX), Duration::from_millis(1000));

    let jittered = RetryPolicy { jitter: true, ..policy };
    let waits: Vec<Duration> = (0..200).map(|_| jittered.backoff(3)).collect();
    assert!(waits.iter().all(|wait| *wait <= Duration::from_millis(400)));
    assert!(
        waits.iter().any(|wait| *wait != waits[0]),
        "full jitter varies the wait"
    );
}

#[test]
fn retry_decisions_by_error_and_status() {
    let policy = RetryPolicy::default();
    let server = LlmError::Server {
        status: 500,
        message: String::new(),
        retry_after: None,
    };
    assert!(policy.delay(1, &server, Some(500)).is_some());
    assert!(
        policy.delay(3, &server, Some(500)).is_none(),
        "the third attempt was the last"
    );
    let bad = LlmError::BadRequest {
        status: 400,
        message: String::new(),
    };
    assert!(!is_retryable(&bad, Some(400)));
    assert!(is_retryable(&bad, Some(409)));
    assert!(is_retryable(&LlmError::Connect("refused".to_owned()), None));
    assert!(!is_retryable(&LlmError::Cancelled, Some(503)));
    assert!(!is_retryable(&LlmError::IdleTimeout(Duration::from_secs(1)), Some(503)));
    assert!(!is_retryable(
        &LlmError::ContextWindowExceeded { message: String::new() },
        None
    ));
    // The adapter's classification wins over the status: a quota 429 and a llama.cpp context-size 500 fail
    // again whatever the wait.
    let quota = LlmError::BadRequest {
        status: 429,
        message: "insufficient_quota".into(),
    };
    assert!(!is_retryable(&quota, Some(429)));
    let overflow = LlmError::ContextWindowExceeded {
        message: "exceeds the available context size".into(),
    };
    assert!(!is_retryable(&overflow, Some(500)));
}

#[test]
fn retry_after_huge_millisecond_header_does_not_panic() {
    let mut headers = HeaderMap::new();
    headers.insert("retry-after-ms", HeaderValue::from_static("1e30"));
    let wait = parse_retry_after(&headers, SystemTime::now()).unwrap();
    assert!(wait > Duration::from_secs(3600), "{wait:?}");
}
