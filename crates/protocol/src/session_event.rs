//! `SessionEvent`: every persisted turn event, plus registered custom events passed through, and
//! `TurnStreamingEvent`, which adds the stream-only deltas.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::tagged::dispatch_tag;
use crate::{
    ActionRequiredEvent, ContextCompactedEvent, McpAuthRequiredEvent, McpInitializeEvent, ModelMessageDeltaEvent,
    ModelMessageEvent, SandboxCreatedEvent, ThreadCreatedEvent, ThreadDoneEvent, ToolApprovalRequiredEvent,
    ToolResponseEvent, ToolResponseRequiredEvent, TurnCreatedEvent, TurnDoneEvent,
};

/// The `type`s `SessionEvent` reads as its own variants: the contract's eleven, then ours.
pub const SESSION_EVENT_TYPES: [&str; 12] = [
    TurnCreatedEvent::TAG,
    TurnDoneEvent::TAG,
    ModelMessageEvent::TAG,
    ToolResponseEvent::TAG,
    ThreadCreatedEvent::TAG,
    ThreadDoneEvent::TAG,
    McpAuthRequiredEvent::TAG,
    McpInitializeEvent::TAG,
    SandboxCreatedEvent::TAG,
    ToolApprovalRequiredEvent::TAG,
    ToolResponseRequiredEvent::TAG,
    ContextCompactedEvent::TAG,
];

/// A persisted turn event: one of the contract's event types, one of ours (`context.compacted`, which
/// reference clients receive as a custom event), or a custom event some capability registered, carried
/// through verbatim.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SessionEvent {
    TurnCreated(TurnCreatedEvent),
    TurnDone(TurnDoneEvent),
    ModelMessage(ModelMessageEvent),
    ToolResponse(ToolResponseEvent),
    ThreadCreated(ThreadCreatedEvent),
    ThreadDone(ThreadDoneEvent),
    McpAuthRequired(McpAuthRequiredEvent),
    McpInitialize(McpInitializeEvent),
    SandboxCreated(SandboxCreatedEvent),
    ToolApprovalRequired(ToolApprovalRequiredEvent),
    ToolResponseRequired(ToolResponseRequiredEvent),
    ContextCompacted(ContextCompactedEvent),
    Passthrough(PassthroughEvent),
}

impl<'de> Deserialize<'de> for SessionEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        dispatch_tag(deserializer, "type", session_event_from_value)
    }
}

fn session_event_from_value(tag: &str, value: Value) -> Result<SessionEvent, serde_json::Error> {
    use serde_json::from_value;
    match tag {
        TurnCreatedEvent::TAG => from_value(value).map(SessionEvent::TurnCreated),
        TurnDoneEvent::TAG => from_value(value).map(SessionEvent::TurnDone),
        ModelMessageEvent::TAG => from_value(value).map(SessionEvent::ModelMessage),
        ToolResponseEvent::TAG => from_value(value).map(SessionEvent::ToolResponse),
        ThreadCreatedEvent::TAG => from_value(value).map(SessionEvent::ThreadCreated),
        ThreadDoneEvent::TAG => from_value(value).map(SessionEvent::ThreadDone),
        McpAuthRequiredEvent::TAG => from_value(value).map(SessionEvent::McpAuthRequired),
        McpInitializeEvent::TAG => from_value(value).map(SessionEvent::McpInitialize),
        SandboxCreatedEvent::TAG => from_value(value).map(SessionEvent::SandboxCreated),
        ToolApprovalRequiredEvent::TAG => from_value(value).map(SessionEvent::ToolApprovalRequired),
        ToolResponseRequiredEvent::TAG => from_value(value).map(SessionEvent::ToolResponseRequired),
        ContextCompactedEvent::TAG => from_value(value).map(SessionEvent::ContextCompacted),
        _ => from_value(value).map(SessionEvent::Passthrough),
    }
}

macro_rules! each_variant {
    ($self:expr, $event:ident => $body:expr) => {
        match $self {
            SessionEvent::TurnCreated($event) => $body,
            SessionEvent::TurnDone($event) => $body,
            SessionEvent::ModelMessage($event) => $body,
            SessionEvent::ToolResponse($event) => $body,
            SessionEvent::ThreadCreated($event) => $body,
            SessionEvent::ThreadDone($event) => $body,
            SessionEvent::McpAuthRequired($event) => $body,
            SessionEvent::McpInitialize($event) => $body,
            SessionEvent::SandboxCreated($event) => $body,
            SessionEvent::ToolApprovalRequired($event) => $body,
            SessionEvent::ToolResponseRequired($event) => $body,
            SessionEvent::ContextCompacted($event) => $body,
            SessionEvent::Passthrough($event) => $body,
        }
    };
}

impl SessionEvent {
    /// The event id: a lowercase monotonic ULID, the order key within a turn.
    pub fn id(&self) -> &str {
        each_variant!(self, event => &event.id)
    }

    pub fn created_at(&self) -> &str {
        each_variant!(self, event => &event.created_at)
    }

    /// The `type` discriminator.
    pub fn event_type(&self) -> &str {
        match self {
            Self::TurnCreated(_) => TurnCreatedEvent::TAG,
            Self::TurnDone(_) => TurnDoneEvent::TAG,
            Self::ModelMessage(_) => ModelMessageEvent::TAG,
            Self::ToolResponse(_) => ToolResponseEvent::TAG,
            Self::ThreadCreated(_) => ThreadCreatedEvent::TAG,
            Self::ThreadDone(_) => ThreadDoneEvent::TAG,
            Self::McpAuthRequired(_) => McpAuthRequiredEvent::TAG,
            Self::McpInitialize(_) => McpInitializeEvent::TAG,
            Self::SandboxCreated(_) => SandboxCreatedEvent::TAG,
            Self::ToolApprovalRequired(_) => ToolApprovalRequiredEvent::TAG,
            Self::ToolResponseRequired(_) => ToolResponseRequiredEvent::TAG,
            Self::ContextCompacted(_) => ContextCompactedEvent::TAG,
            Self::Passthrough(event) => &event.event_type,
        }
    }

    /// The owning thread; `None` for run-level events (turn lifecycle, sandbox, OAuth) and for
    /// custom events without a string `thread_id`.
    pub fn thread_id(&self) -> Option<&str> {
        match self {
            Self::TurnCreated(event) => event.thread_id.as_deref(),
            Self::TurnDone(event) => event.thread_id.as_deref(),
            Self::McpAuthRequired(event) => event.thread_id.as_deref(),
            Self::SandboxCreated(event) => event.thread_id.as_deref(),
            Self::ModelMessage(event) => Some(&event.thread_id),
            Self::ToolResponse(event) => Some(&event.thread_id),
            Self::ThreadCreated(event) => Some(&event.thread_id),
            Self::ThreadDone(event) => Some(&event.thread_id),
            Self::McpInitialize(event) => Some(&event.thread_id),
            Self::ToolApprovalRequired(event) => Some(&event.thread_id),
            Self::ToolResponseRequired(event) => Some(&event.thread_id),
            Self::ContextCompacted(event) => Some(&event.thread_id),
            Self::Passthrough(event) => event.fields.get("thread_id").and_then(Value::as_str),
        }
    }
}

macro_rules! from_event {
    ($($ty:ident => $variant:ident),* $(,)?) => {
        $(impl From<$ty> for SessionEvent {
            fn from(event: $ty) -> Self {
                Self::$variant(event)
            }
        })*
    };
}

from_event!(
    TurnCreatedEvent => TurnCreated,
    TurnDoneEvent => TurnDone,
    ModelMessageEvent => ModelMessage,
    ToolResponseEvent => ToolResponse,
    ThreadCreatedEvent => ThreadCreated,
    ThreadDoneEvent => ThreadDone,
    McpAuthRequiredEvent => McpAuthRequired,
    McpInitializeEvent => McpInitialize,
    SandboxCreatedEvent => SandboxCreated,
    ToolApprovalRequiredEvent => ToolApprovalRequired,
    ToolResponseRequiredEvent => ToolResponseRequired,
    ContextCompactedEvent => ContextCompacted,
    PassthroughEvent => Passthrough,
);

impl From<ActionRequiredEvent> for SessionEvent {
    fn from(event: ActionRequiredEvent) -> Self {
        match event {
            ActionRequiredEvent::ToolApprovalRequired(event) => Self::ToolApprovalRequired(event),
            ActionRequiredEvent::ToolResponseRequired(event) => Self::ToolResponseRequired(event),
            ActionRequiredEvent::McpAuthRequired(event) => Self::McpAuthRequired(event),
        }
    }
}

/// A custom event registered by a capability: its own `type`, the common `id` and `created_at`,
/// and any other fields, which are stored and streamed exactly as given.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct PassthroughEvent {
    /// Any type but those of the known events (and the stream-only delta).
    #[serde(rename = "type")]
    pub event_type: String,
    pub id: String,
    pub created_at: String,
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// Types a passthrough event may not claim: the known events (which must parse as themselves) and the
/// stream-only delta, which is never persisted.
fn is_reserved_event_type(event_type: &str) -> bool {
    SESSION_EVENT_TYPES.contains(&event_type) || event_type == ModelMessageDeltaEvent::TAG
}

impl<'de> Deserialize<'de> for PassthroughEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut fields = Map::deserialize(deserializer)?;
        let mut take_string = |key: &'static str| match fields.remove(key) {
            Some(Value::String(value)) => Ok(value),
            Some(_) => Err(D::Error::custom(format!("`{key}` must be a string"))),
            None => Err(D::Error::missing_field(key)),
        };
        let event_type = take_string("type")?;
        let id = take_string("id")?;
        let created_at = take_string("created_at")?;
        if event_type.is_empty() || is_reserved_event_type(&event_type) {
            return Err(D::Error::custom(format!(
                "\"{event_type}\" cannot be used as a custom event type"
            )));
        }
        Ok(Self {
            event_type,
            id,
            created_at,
            fields,
        })
    }
}

/// Schema `TurnStreamingEvent`: what a turn's event stream carries — every persisted event (custom
/// ones included) and the deltas of model messages.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[expect(
    clippy::large_enum_variant,
    reason = "events are written once and moved; boxing would only complicate matching"
)]
pub enum TurnStreamingEvent {
    ModelMessageDelta(ModelMessageDeltaEvent),
    Event(SessionEvent),
}

impl<'de> Deserialize<'de> for TurnStreamingEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        dispatch_tag(deserializer, "type", |tag, value| {
            if tag == ModelMessageDeltaEvent::TAG {
                serde_json::from_value(value).map(Self::ModelMessageDelta)
            } else {
                session_event_from_value(tag, value).map(Self::Event)
            }
        })
    }
}

impl From<SessionEvent> for TurnStreamingEvent {
    fn from(event: SessionEvent) -> Self {
        Self::Event(event)
    }
}

impl From<ModelMessageDeltaEvent> for TurnStreamingEvent {
    fn from(event: ModelMessageDeltaEvent) -> Self {
        Self::ModelMessageDelta(event)
    }
}
