//! Wire and domain types of TrueForge.
//!
//! Every type here serializes to exactly the JSON shape of the reference HTTP contract
//! (`shared/reference/openapi.json`): field names, `type` / `status` discriminators, optional
//! fields omitted when absent, nullable fields written as `null`, and the contract's defaults
//! materialised on input. Deserialization checks shape; the value rules a schema also states
//! (ranges, lengths, patterns) are checked by the `validate` methods and reported as
//! [`ProtocolError`]. No I/O.
//!
//! Everything is re-exported at the crate root; the modules only group the definitions. The exception is
//! [`api`], the bodies of the HTTP API (envelopes, pages, sessions, turns), whose names are too generic for
//! the root.

pub mod api;
mod nullable;
pub mod openapi;
mod rules;
pub mod sync;
mod tagged;
pub mod whole_number;

mod error;
mod idempotency_key;
mod ids;

mod agent_spec;
mod mcp_server_ref;
mod response_format;
mod runtime_config;
mod session_agent;

mod turn_input;
mod turn_key;
mod turn_state;

mod context_events;
mod model_message;
mod required_actions;
mod resource_events;
mod session_event;
mod thread_events;
mod tool_response;
mod turn_events;

mod context;
mod thread;

mod mcp_server_manifest;
mod model_pricing;
mod model_provider;
mod sandbox_provider;
mod skill_manifest;

pub use error::ProtocolError;
pub use idempotency_key::{IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_MAX_LEN, IdempotencyKey, IdempotencyKeyError};
pub use ids::{SessionId, TenantId, ThreadId, TurnId};
pub use rules::is_resource_name;
pub use turn_key::TurnKey;

pub use agent_spec::{AgentSpec, InitialUserMessage, ModelParams, ModelRef, SkillRef};
pub use mcp_server_ref::{McpServerRef, TOOLS_ALL, TOOLS_DESTRUCTIVE, TOOLS_READ_ONLY, TOOLS_WRITE};
pub use response_format::{JsonSchemaFormat, ResponseFormat};
pub use runtime_config::{
    AskUserQuestionsConfig, CompactionConfig, ContextManagementConfig, DEFAULT_COMPACTION_THRESHOLD_TOKENS,
    DEFAULT_ITERATION_LIMIT, DynamicSubAgentsConfig, GenerativeUiConfig, LargeToolResponseConfig, MAX_ITERATION_LIMIT,
    RuntimeConfig, SandboxConfig,
};
pub use session_agent::SessionAgent;

pub use turn_input::{
    ApprovalDecision, ApprovalScope, TurnInputItem, UserContentPart, UserMessage, UserMessageContent, UserToolApproval,
    UserToolResponse, validate_turn_input,
};
pub use turn_state::{CancellationReason, TurnMetrics, TurnState};

pub use context_events::{CompactionMethod, ContextCompactedEvent};
pub use model_message::{
    AssistantContent, AssistantContentPart, DeltaToolCall, DeltaToolFunction, FinishReason, InputTokensBreakdown,
    ModelMessageDeltaEvent, ModelMessageEvent, ModelMessageUsage, ToolCall, ToolCallKind, ToolFunction, ToolInfo,
};
pub use required_actions::{
    ActionRequiredEvent, McpAuthRequiredEvent, McpServerAuthInfo, ToolApprovalRequiredEvent, ToolCallRef,
    ToolResponseRequiredEvent,
};
pub use resource_events::{McpInitializeEvent, McpServerInitInfo, McpTransportType, SandboxCreatedEvent};
pub use session_event::{PassthroughEvent, SESSION_EVENT_TYPES, SessionEvent, TurnStreamingEvent};
pub use thread_events::{ThreadCreatedEvent, ThreadDoneEvent, ThreadState};
pub use tool_response::ToolResponseEvent;
pub use turn_events::{TurnCreatedEvent, TurnDoneEvent};

pub use context::{
    ContextAssistantMessage, ContextContentPart, ContextMessage, ContextToolApproval, ContextToolCall, ContextToolInfo,
    ContextToolMessage, ContextUserContent, ContextUserMessage, FileData, ImageUrl, InputAudio, ToolResultImage,
    ToolSource,
};
pub use thread::{
    AgentInfo, AgentParent, AgentThreadSnapshot, CurrentContextUsage, MAIN_THREAD_ID, SubAgentCompletion,
};

pub use mcp_server_manifest::{McpServerAuth, McpServerManifest, McpServerType};
pub use model_pricing::{LongContextPricing, ModelPricing, TokenPrices};
pub use model_provider::{
    CUSTOM_PROVIDER_TYPE, ConfiguredModel, CustomModelProvider, ModelProperties, ModelProviderAuth,
    ModelProviderManifest, ReasoningEffort, WellKnownModelProvider, WellKnownProviderType,
};
pub use sandbox_provider::{DaytonaSandboxProvider, SandboxBuildStatus, SandboxProviderAuth, SandboxProviderManifest};
pub use skill_manifest::{SkillManifest, SkillType};
