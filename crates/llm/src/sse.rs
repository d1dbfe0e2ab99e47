//! Server-sent events from a response body, parsed by `eventsource-stream` and handed to the wire
//! adapters as [`SseEvent`]s.

use std::fmt::Display;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

use crate::error::LlmError;
use crate::wire::SseEvent;

/// The event name the SSE standard gives an event without an `event:` line. Adapters see it as the
/// empty name instead, as [`SseEvent`] promises; no provider names an event `message` on purpose.
const DEFAULT_EVENT_NAME: &str = "message";

/// Parses a stream of body chunks into events. A transport failure becomes [`LlmError::Connect`] (the
/// connection broke); bytes that are not UTF-8 or not SSE become [`LlmError::Protocol`].
pub fn sse_events<S, B, E>(body: S) -> impl Stream<Item = Result<SseEvent, LlmError>> + Send + 'static
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
{
    body.eventsource().map(|item| match item {
        Ok(event) => {
            let name = if event.event == DEFAULT_EVENT_NAME {
                String::new()
            } else {
                event.event
            };
            Ok(SseEvent {
                event: name,
                data: event.data,
            })
        }
        Err(EventStreamError::Transport(error)) => {
            Err(LlmError::Connect(format!("the response stream broke: {error}")))
        }
        Err(EventStreamError::Utf8(error)) => {
            Err(LlmError::Protocol(format!("the event stream is not UTF-8: {error}")))
        }
        Err(EventStreamError::Parser(error)) => Err(LlmError::Protocol(format!("malformed event stream: {error}"))),
    })
}
