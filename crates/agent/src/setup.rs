//! What a turn's threads run with: the agent spec resolved into models, tool sets, capabilities and
//! system prompts, for the root and for every sub-agent it starts.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use trueforge_llm::Message;
use trueforge_protocol::{AgentInfo, AgentSpec, InputTokensBreakdown, McpServerAuthInfo, McpServerInitInfo, TenantId};
use trueforge_store::SessionStore;

use crate::capabilities::{
    DeferredTools, SUB_AGENT_IDENTITY, SubAgentModel, ask_user_question_tools, current_datetime_tools,
    deferred_instructions, openui_instructions, openui_tools, recall_instructions, recall_tools, sub_agent_tools,
    sub_agents_instructions,
};
use crate::context::estimate_text_tokens;
use crate::error::AgentError;
use crate::model::{ModelResolver, ResolvedModel, request_params};
use crate::orchestrator::ChildFactory;
use crate::prompt::{ROOT_IDENTITY, SystemPrompt};
use trueforge_sandbox::skills_prompt_section;

use crate::sandbox::{PendingUpload, SandboxTools, TurnSandbox, code_mode_instructions, sandbox_instructions};
use crate::thread::ThreadSetup;
use crate::tools::{ToolContext, ToolRegistry, ToolSet};

/// The share of the model's context window at which compaction starts, when the spec gives no threshold.
pub const COMPACTION_WINDOW_FRACTION: f64 = 0.8;

/// The threshold when neither the spec nor the model's context window gives one.
pub const FALLBACK_COMPACTION_THRESHOLD: u64 = trueforge_protocol::DEFAULT_COMPACTION_THRESHOLD_TOKENS;

/// The resolved resources of one turn.
pub struct TurnResources {
    pub tenant_id: TenantId,
    pub spec: AgentSpec,
    pub models: Arc<dyn ModelResolver>,
    pub root_model: ResolvedModel,
    /// The agent's own tool sets (in-process sets, MCP servers), shared by the root and its sub-agents.
    pub user_sets: Vec<Arc<dyn ToolSet>>,
    pub sub_agent_models: Vec<SubAgentModel>,
    /// The context tool listing runs with.
    pub tool_cx: ToolContext,
    /// The session store, for the tools that read the conversation (recall).
    pub store: Arc<dyn SessionStore>,
    /// MCP servers the session's user must authorize before the turn can use them: the turn then ends
    /// waiting for that (`mcp.auth_required`) without calling the model.
    pub auth_required: Vec<McpServerAuthInfo>,
    /// The MCP sessions the conversation ran on so far (the turn snapshot's), by server id.
    pub known_mcp_sessions: BTreeMap<String, McpServerInitInfo>,
    /// The turn's sandbox when the agent has one, shared by the root and its sub-agents.
    pub sandbox: Option<Arc<TurnSandbox>>,
    /// Files the user sent that go into the sandbox before the first model call.
    pub uploads: Vec<PendingUpload>,
}

impl TurnResources {
    /// The input as the model reads it, and the files it sends into the sandbox (refused when the agent
    /// has none).
    pub fn stage_uploads(
        &self,
        input: &[trueforge_protocol::TurnInputItem],
    ) -> Result<(Vec<trueforge_protocol::TurnInputItem>, Vec<PendingUpload>), crate::error::InputError> {
        let (uploads_dir, max_bytes) = match &self.sandbox {
            Some(sandbox) => (
                Some(sandbox.layout().uploads.as_str()),
                sandbox.options().upload_max_bytes,
            ),
            None => (None, 0),
        };
        crate::sandbox::stage_uploads(input, uploads_dir, max_bytes)
    }

    pub async fn root_setup(&self) -> Result<Arc<ThreadSetup>, AgentError> {
        self.setup(&self.root_model, None).await
    }

    pub async fn sub_agent_setup(&self, info: &AgentInfo) -> Result<Arc<ThreadSetup>, AgentError> {
        match &info.model {
            Some(name) if name != &self.root_model.name => {
                let model = self.models.resolve(&self.tenant_id, name).await?;
                self.setup(&model, Some(info)).await
            }
            _ => self.setup(&self.root_model, Some(info)).await,
        }
    }

    async fn setup(
        &self,
        model: &ResolvedModel,
        sub_agent: Option<&AgentInfo>,
    ) -> Result<Arc<ThreadSetup>, AgentError> {
        let config = &self.spec.config;
        let is_root = sub_agent.is_none();
        let compaction = &config.context_management.compaction;
        let large_responses = config.context_management.large_tool_response.enabled;
        let sub_agents = is_root && config.dynamic_sub_agents.enabled;
        let recall = compaction.enabled || large_responses;

        let mut system_sets: Vec<Arc<dyn ToolSet>> = vec![Arc::new(current_datetime_tools())];
        let mut sections: Vec<(&'static str, String)> = Vec::new();
        let any_deferred = self.user_sets.iter().any(|set| !set.preload());
        let deferred = any_deferred.then(|| Arc::new(DeferredTools::new(self.user_sets.clone())));
        if let Some(deferred) = &deferred {
            system_sets.push(deferred.clone());
            if let Some(text) = deferred_instructions(&self.user_sets) {
                sections.push(("deferred-tools", text));
            }
        }
        if is_root && config.ask_user_questions.enabled {
            system_sets.push(Arc::new(ask_user_question_tools()));
        }
        if sub_agents {
            system_sets.push(Arc::new(sub_agent_tools(&self.sub_agent_models)));
            sections.push(("sub-agents", sub_agents_instructions()));
        }
        if recall {
            system_sets.push(Arc::new(recall_tools(self.store.clone())));
            sections.push(("recall", recall_instructions()));
        }
        if let Some(sandbox) = &self.sandbox {
            system_sets.push(Arc::new(SandboxTools::tool_set(sandbox.clone())));
            sections.push((
                "sandbox",
                sandbox_instructions(
                    sandbox.layout(),
                    config.sandbox.file_downloads,
                    sandbox.provider().instructions(),
                ),
            ));
            if !sandbox.skills().is_empty() {
                sections.push(("skills", skills_prompt_section(sandbox.layout(), sandbox.skills())));
            }
            let code_mode_servers: Vec<&str> = self
                .user_sets
                .iter()
                .filter(|set| set.source() == trueforge_protocol::ToolSource::Mcp)
                .map(|set| set.name())
                .collect();
            if sandbox.supports_code_mode() && !code_mode_servers.is_empty() {
                sections.push(("code-mode", code_mode_instructions(&code_mode_servers)));
            }
        }
        if is_root && config.generative_ui.enabled {
            system_sets.push(Arc::new(openui_tools()));
            sections.push(("openui", openui_instructions()));
        }

        let registry = ToolRegistry::build(system_sets, self.user_sets.clone(), &self.tool_cx).await?;
        let prompt = SystemPrompt {
            identity: if is_root { ROOT_IDENTITY } else { SUB_AGENT_IDENTITY }.to_owned(),
            capabilities: sections,
            user_instructions: if is_root { self.spec.instructions.clone() } else { None },
        }
        .render();
        let seed = match sub_agent {
            Some(info) => vec![Message::user_text(info.input.clone())],
            None => self
                .spec
                .messages
                .iter()
                .flatten()
                .map(|message| Message::user_text(message.content.clone()))
                .collect(),
        };
        let (sampling, extras) = request_params(model.default_params.as_ref(), self.spec.model.params.as_ref());
        let threshold = compaction.compaction_threshold_tokens.unwrap_or_else(|| {
            model.context_window.map_or(FALLBACK_COMPACTION_THRESHOLD, |window| {
                (window as f64 * COMPACTION_WINDOW_FRACTION) as u64
            })
        });
        let breakdown = breakdown(
            &prompt,
            is_root.then_some(self.spec.instructions.as_deref()).flatten(),
            &registry,
        );
        Ok(Arc::new(ThreadSetup {
            model: model.clone(),
            system_prompt: prompt,
            seed,
            sampling,
            extras,
            response_format: if is_root {
                self.spec.response_format.clone()
            } else {
                None
            },
            iteration_limit: config.iteration_limit,
            registry,
            deferred,
            compaction_threshold: compaction.enabled.then_some(threshold),
            large_responses,
            sandbox: self.sandbox.clone(),
            sub_agents_available: sub_agents,
            breakdown,
        }))
    }
}

/// Estimates of the fixed parts of every call's input: the author's instructions, the agent's own tools,
/// and everything the harness adds (its prompt sections and built-in tools).
fn breakdown(prompt: &str, instructions: Option<&str>, registry: &ToolRegistry) -> InputTokensBreakdown {
    let instructions = instructions.map_or(0, |text| estimate_text_tokens(text.trim()));
    let mut user_tools = 0;
    let mut system_tools = 0;
    for (tool, definition) in registry.tools().iter().zip(registry.definitions()) {
        let size = estimate_text_tokens(&serde_json::to_string(&definition.parameters).unwrap_or_default())
            + definition.description.as_deref().map_or(0, estimate_text_tokens);
        match tool.set.source() {
            trueforge_protocol::ToolSource::Mcp => user_tools += size,
            trueforge_protocol::ToolSource::System => system_tools += size,
        }
    }
    InputTokensBreakdown {
        harness: estimate_text_tokens(prompt).saturating_sub(instructions) + system_tools,
        skills: 0,
        instructions,
        tool_definitions: user_tools,
        messages: 0,
    }
}

#[async_trait]
impl ChildFactory for TurnResources {
    async fn child_setup(&self, info: &AgentInfo) -> Result<Arc<ThreadSetup>, String> {
        self.sub_agent_setup(info).await.map_err(|error| error.to_string())
    }
}
