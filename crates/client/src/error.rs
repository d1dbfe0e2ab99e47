//! Everything a call or a turn stream can fail with.

/// An error of the client: the server said no, could not be reached, or answered something unreadable;
/// or a turn stream broke for good.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The base URL cannot carry API paths.
    #[error("invalid base URL {url:?}: {reason}")]
    InvalidBaseUrl { url: String, reason: String },

    /// The server answered with an error status; `message` is its `{"error":{"message"}}` text (or the
    /// body itself when it is not that shape, so nothing the server said is lost).
    #[error("the server answered {status}: {message}")]
    Api { status: u16, message: String },

    /// The request did not get an answer: connection refused or reset, TLS, timeout.
    #[error("could not talk to the server: {0}")]
    Transport(#[from] reqwest::Error),

    /// A body that is not the JSON the contract describes.
    #[error("unreadable {what} from the server: {source}")]
    Decode {
        what: String,
        #[source]
        source: serde_json::Error,
    },

    /// An answer of the wrong kind: an event stream without ids, JSON where a stream was asked for.
    #[error("unexpected answer from the server: {0}")]
    UnexpectedResponse(String),

    /// An event stream carried nothing, not even a heartbeat, for this long; only ever the cause of a
    /// [`ClientError::StreamEnded`].
    #[error("the event stream was silent for {idle:?}")]
    IdleTimeout { idle: std::time::Duration },

    /// The turn's event stream stopped before `turn.done` and could not be resumed within the retry
    /// budget. The turn itself may well still be running: it does not depend on anyone listening.
    /// `turn_id` is `None` when the connection broke before `turn.created` told us which turn it was.
    #[error(
        "the event stream of turn {} ended before turn.done (last event {last_seq}) and could not be resumed",
        turn_id.as_deref().unwrap_or("(unknown)")
    )]
    StreamEnded {
        turn_id: Option<String>,
        last_seq: u64,
        /// What broke the last attempt, when something did (a clean end of the body has no cause).
        #[source]
        cause: Option<Box<ClientError>>,
    },

    /// The server no longer has the turn's stream (the turn or its session was deleted, or the stream
    /// expired): resuming cannot work, but the turn's stored events may still be listed.
    #[error("turn {turn_id} can no longer be streamed ({status}: {message})")]
    Gone {
        turn_id: String,
        status: u16,
        message: String,
    },
}

impl ClientError {
    /// The HTTP status of an [`ClientError::Api`] or [`ClientError::Gone`] answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Api { status, .. } | Self::Gone { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub(crate) fn decode(what: impl Into<String>, source: serde_json::Error) -> Self {
        Self::Decode {
            what: what.into(),
            source,
        }
    }
}
