#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Cancellation of the model client: the call ends at once with `Cancelled` and the connection is
//! closed, wherever the call was.

use std::time::Duration;

use crate::client_support::*;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trueforge_llm::{LlmError, StreamEvent};

#[tokio::test]
async fn cancel_mid_stream_ends_the_stream_and_closes_the_connection() {
    let server = ScriptedServer::start(vec![Reply::hanging(vec![text_frame("first"), text_frame("second")])]).await;
    let client = server.client(quick_options());
    let cancel = CancellationToken::new();
    let mut stream = client.stream(&hello_request(), cancel.clone()).await.unwrap();
    let first = within(stream.next()).await.unwrap().unwrap();
    assert_eq!(
        first,
        StreamEvent::TextDelta {
            text: "first".to_owned()
        }
    );

    cancel.cancel();
    // Even an event that may already be buffered is not delivered after the cancellation.
    assert_eq!(within(stream.next()).await, Some(Err(LlmError::Cancelled)));
    assert_eq!(within(stream.next()).await, None);
    server.wait_closed().await;
}

#[tokio::test]
async fn cancel_while_waiting_for_the_next_event() {
    let server = ScriptedServer::start(vec![Reply::hanging(vec![text_frame("only")])]).await;
    let client = server.client(quick_options());
    let cancel = CancellationToken::new();
    let mut stream = client.stream(&hello_request(), cancel.clone()).await.unwrap();
    within(stream.next()).await.unwrap().unwrap();

    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    // The stream is waiting on a silent connection when the token fires.
    assert_eq!(within(stream.next()).await, Some(Err(LlmError::Cancelled)));
    server.wait_closed().await;
}

#[tokio::test]
async fn cancel_during_retry_backoff() {
    let server = ScriptedServer::start(vec![Reply::status_with(429, "retry-after", "30")]).await;
    let client = server.client(quick_options());
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel();
    });
    let result = within(client.stream(&hello_request(), cancel)).await;
    assert!(matches!(result, Err(LlmError::Cancelled)));
    assert_eq!(server.request_count(), 1, "no attempt after the cancellation");
}

#[tokio::test]
async fn cancel_before_the_response_headers() {
    let server = ScriptedServer::start(vec![Reply::HangBeforeHeaders]).await;
    let client = server.client(quick_options());
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let result = within(client.complete(&hello_request(), cancel)).await;
    assert_eq!(result.unwrap_err(), LlmError::Cancelled);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn cancel_before_the_call_sends_nothing() {
    let server = ScriptedServer::start(vec![Reply::text(&["never"])]).await;
    let client = server.client(quick_options());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = client.stream(&hello_request(), cancel).await;
    assert!(matches!(result, Err(LlmError::Cancelled)));
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn cancel_by_dropping_the_stream_closes_the_connection() {
    let server = ScriptedServer::start(vec![Reply::hanging(vec![text_frame("first")])]).await;
    let client = server.client(quick_options());
    let mut stream = client.stream(&hello_request(), CancellationToken::new()).await.unwrap();
    within(stream.next()).await.unwrap().unwrap();
    drop(stream);
    server.wait_closed().await;
}
