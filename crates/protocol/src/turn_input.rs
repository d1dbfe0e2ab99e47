//! Turn input: what a client sends to start a turn (`TurnInputItem`) and its parts.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::ProtocolError;
use crate::rules::{self, Checked};
use crate::tagged::{dispatch_tag, tagged_struct, unknown_tag};

/// Schema `TurnInputItem`, discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum TurnInputItem {
    UserMessage(UserMessage),
    ToolApproval(UserToolApproval),
    ToolResponse(UserToolResponse),
}

impl<'de> Deserialize<'de> for TurnInputItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        dispatch_tag(deserializer, "type", |tag, value| match tag {
            UserMessage::TAG => serde_json::from_value(value).map(Self::UserMessage),
            UserToolApproval::TAG => serde_json::from_value(value).map(Self::ToolApproval),
            UserToolResponse::TAG => serde_json::from_value(value).map(Self::ToolResponse),
            other => Err(unknown_tag(
                "type",
                other,
                &[UserMessage::TAG, UserToolApproval::TAG, UserToolResponse::TAG],
            )),
        })
    }
}

impl TurnInputItem {
    /// The `type` discriminator.
    pub fn item_type(&self) -> &'static str {
        match self {
            Self::UserMessage(_) => UserMessage::TAG,
            Self::ToolApproval(_) => UserToolApproval::TAG,
            Self::ToolResponse(_) => UserToolResponse::TAG,
        }
    }

    /// Length rules of the schema (`thread_id`, `tool_call_id` and tool-response `content` must be
    /// non-empty). Whether a user message is blank is a runtime rule, not a schema one.
    pub fn validate(&self, path: &str) -> Result<(), ProtocolError> {
        match self {
            Self::UserMessage(_) => Ok(()),
            Self::ToolApproval(item) => {
                rules::non_empty(&format!("{path}.thread_id"), &item.thread_id)?;
                rules::non_empty(&format!("{path}.tool_call_id"), &item.tool_call_id)
            }
            Self::ToolResponse(item) => {
                rules::non_empty(&format!("{path}.thread_id"), &item.thread_id)?;
                rules::non_empty(&format!("{path}.tool_call_id"), &item.tool_call_id)?;
                rules::non_empty(&format!("{path}.content"), &item.content)
            }
        }
    }
}

/// Checks every item of a turn's `input` with [`TurnInputItem::validate`], then the contract's
/// batch rule: user messages may not be mixed with approvals or tool responses in one turn.
pub fn validate_turn_input(items: &[TurnInputItem]) -> Checked {
    for (index, item) in items.iter().enumerate() {
        item.validate(&format!("input[{index}]"))?;
    }
    let messages = items
        .iter()
        .filter(|item| matches!(item, TurnInputItem::UserMessage(_)))
        .count();
    if messages != 0 && messages != items.len() {
        return Err(ProtocolError::invalid(
            "input",
            "user messages cannot be mixed with tool approvals or tool responses",
        ));
    }
    Ok(())
}

/// Schema `UserMessage`: `{"type": "user.message", "content": ...}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct UserMessage {
    pub content: UserMessageContent,
}

tagged_struct!(UserMessage, type = "user.message");

/// A plain string, or text and file parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum UserMessageContent {
    Text(String),
    Parts(Vec<UserContentPart>),
}

// By hand rather than `untagged` so that a bad part reports what is wrong with it instead of
// "did not match any variant".
impl<'de> Deserialize<'de> for UserMessageContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(Self::Text(text)),
            parts @ Value::Array(_) => serde_json::from_value(parts).map(Self::Parts).map_err(D::Error::custom),
            _ => Err(D::Error::custom(
                "user message content must be a string or an array of content parts",
            )),
        }
    }
}

impl UserMessageContent {
    /// The text the user typed: the string, or the text parts joined by newlines.
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Parts(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    UserContentPart::Text { text } => Some(text.as_str()),
                    UserContentPart::File { .. } => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// Schema `UserMessageContentItem` (`TextContent` | `FileContent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type")]
#[schema(as = UserMessageContentItem)]
pub enum UserContentPart {
    #[serde(rename = "text")]
    Text { text: String },
    /// `data` is a data URI (`data:<mime>;base64,<payload>`); `name` is shown to the agent.
    #[serde(rename = "file")]
    File { name: String, data: String },
}

/// Schema `UserToolApprovalEvent`: the user's decision on a call that paused for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
#[schema(as = UserToolApprovalEvent)]
pub struct UserToolApproval {
    #[schema(min_length = 1)]
    pub thread_id: String,
    #[schema(min_length = 1)]
    pub tool_call_id: String,
    pub approval: ApprovalDecision,
}

tagged_struct!(UserToolApproval, type = "user.tool_approval");

/// Schema `UserToolResponseEvent`: the client's result for a client-side tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
#[schema(as = UserToolResponseEvent)]
pub struct UserToolResponse {
    #[schema(min_length = 1)]
    pub thread_id: String,
    #[schema(min_length = 1)]
    pub tool_call_id: String,
    #[schema(min_length = 1)]
    pub content: String,
}

tagged_struct!(UserToolResponse, type = "user.tool_response");

/// Schema `ApprovalDecision`, discriminated by `status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "status")]
pub enum ApprovalDecision {
    /// `scope` is our addition: `session` also allows later calls of the same tool in this session,
    /// `agent` in every session of the same saved agent until revoked.
    #[serde(rename = "allow")]
    Allow {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        scope: Option<ApprovalScope>,
    },
    /// `reason` is shown to the agent.
    #[serde(rename = "deny")]
    Deny {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        reason: Option<String>,
    },
}

impl ApprovalDecision {
    /// Allows this call only.
    pub fn allow() -> Self {
        Self::Allow { scope: None }
    }

    /// Allows this call and every later call of the same tool in the session.
    pub fn allow_for_session() -> Self {
        Self::Allow {
            scope: Some(ApprovalScope::Session),
        }
    }

    /// Allows this call and every later call of the same tool by any session of the same saved agent.
    pub fn allow_for_agent() -> Self {
        Self::Allow {
            scope: Some(ApprovalScope::Agent),
        }
    }

    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allow { .. })
    }

    /// How far an allow reaches (no scope is `once`); `None` for a denial.
    pub fn allowed_scope(&self) -> Option<ApprovalScope> {
        match self {
            Self::Allow { scope } => Some(scope.unwrap_or(ApprovalScope::Once)),
            Self::Deny { .. } => None,
        }
    }
}

/// How far an allow decision reaches. The variants are declared narrowest first, so the derived order
/// compares reach (an operator's maximum is checked with `<=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// This call only (the reference's behaviour, and the default).
    Once,
    /// This call and later calls of the same tool in the same session.
    Session,
    /// This call and later calls of the same tool by every session of the same saved agent (same tenant),
    /// until revoked. Refused for a session whose agent is given inline: there is no agent to remember it for.
    Agent,
}

impl ApprovalScope {
    /// Every scope, narrowest first.
    pub const ALL: [Self; 3] = [Self::Once, Self::Session, Self::Agent];

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Session => "session",
            Self::Agent => "agent",
        }
    }

    /// The scope of a wire value, if it is one.
    pub fn from_wire(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|scope| scope.as_str() == value)
    }
}

impl std::fmt::Display for ApprovalScope {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}
