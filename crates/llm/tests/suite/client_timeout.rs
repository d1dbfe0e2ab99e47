#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The idle timeout of the model client: a silent provider fails the call, a slow but steady one does
//! not.

use std::time::Duration;

use crate::client_support::*;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trueforge_llm::{ClientOptions, LlmError, StreamEvent};

fn idle_options(idle: Duration) -> ClientOptions {
    ClientOptions {
        idle_timeout: idle,
        ..quick_options()
    }
}

#[tokio::test]
async fn timeout_when_the_stream_goes_idle_between_events() {
    let idle = Duration::from_millis(300);
    let server = ScriptedServer::start(vec![Reply::hanging(vec![text_frame("first")])]).await;
    let client = server.client(idle_options(idle));
    let mut stream = client.stream(&hello_request(), CancellationToken::new()).await.unwrap();
    assert_eq!(
        within(stream.next()).await.unwrap().unwrap(),
        StreamEvent::TextDelta {
            text: "first".to_owned()
        }
    );
    assert_eq!(within(stream.next()).await, Some(Err(LlmError::IdleTimeout(idle))));
    assert_eq!(within(stream.next()).await, None);
    server.wait_closed().await;
    assert_eq!(server.request_count(), 1, "output was seen: no retry");
}

#[tokio::test]
async fn timeout_when_the_response_headers_never_come() {
    let idle = Duration::from_millis(300);
    let server = ScriptedServer::start(vec![Reply::HangBeforeHeaders]).await;
    let client = server.client(idle_options(idle));
    let result = within(client.complete(&hello_request(), CancellationToken::new())).await;
    assert_eq!(result.unwrap_err(), LlmError::IdleTimeout(idle));
    assert_eq!(server.request_count(), 1, "an idle timeout is not retried");
}

#[tokio::test]
async fn timeout_when_an_open_stream_sends_no_event_at_all() {
    let idle = Duration::from_millis(300);
    let server = ScriptedServer::start(vec![Reply::hanging(Vec::new())]).await;
    let client = server.client(idle_options(idle));
    let result = within(client.stream(&hello_request(), CancellationToken::new())).await;
    assert!(matches!(result, Err(LlmError::IdleTimeout(wait)) if wait == idle));
}

#[tokio::test]
async fn timeout_is_per_event_not_for_the_whole_stream() {
    let frames = vec![
        text_frame("a"),
        text_frame("b"),
        text_frame("c"),
        text_frame("d"),
        done_frame(),
    ];
    let server = ScriptedServer::start(vec![Reply::Stream {
        frames,
        delay: Duration::from_millis(150),
        hang: false,
    }])
    .await;
    // Five events 150 ms apart take 750 ms, longer than the 500 ms idle limit, and never idle that long.
    let client = server.client(idle_options(Duration::from_millis(500)));
    let response = within(client.complete(&hello_request(), CancellationToken::new()))
        .await
        .unwrap();
    assert_eq!(response.message.text, "abcd");
}
