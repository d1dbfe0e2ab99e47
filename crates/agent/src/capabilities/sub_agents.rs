//! Delegating a task to a sub-agent. `create_sub_agent` does not do the work itself: it tells the loop to
//! start a child thread, and the call stays open until the child returns its result.

use std::sync::Arc;

use serde_json::{Value, json};
use trueforge_protocol::AgentInfo;

use super::args::{object, optional_text, required_text};
use crate::tools::{LocalTool, LocalToolSet, ToolKind, ToolOutput, ToolSpec};

/// A model the agent may pick for a sub-agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubAgentModel {
    /// `provider/model`.
    pub name: String,
    /// When this model is the better choice, in a sentence.
    pub description: String,
}

/// The identity paragraph of every sub-agent's system prompt.
pub const SUB_AGENT_IDENTITY: &str = "You are a sub-agent. Another agent delegated one task to you; its \
     message is your only instruction and you cannot see the conversation it came from. You cannot ask the \
     user or the delegating agent anything, so resolve ambiguity with reasonable assumptions and state them. \
     Use your tools to do the work, then end with one final answer that is complete on its own and concise: \
     the result the task asks for, the key facts behind it, and any sources you relied on. Your final answer \
     is all the delegating agent receives.";

const DESCRIPTION: &str = "Start a sub-agent that carries out one well-defined task and returns its result \
     to you. Delegate a piece of the work, not the whole request. The sub-agent has your tools but none of \
     this conversation: `input` must contain everything it needs (goal, relevant facts, constraints, the \
     form the answer should take). Several calls in one step run in parallel.";

/// The `sub_agents` set with its thread-creating tool, `create_sub_agent`. `models` lists the models the
/// agent may choose from; when empty, sub-agents use the agent's own model and no choice is offered.
pub fn sub_agent_tools(models: &[SubAgentModel]) -> LocalToolSet {
    let mut properties = json!({
        "name": {
            "type": "string",
            "minLength": 1,
            "description": "A short display name for the sub-agent, a few words describing its task."
        },
        "input": {
            "type": "string",
            "minLength": 1,
            "description": "The complete, self-contained task: what to do, all the context needed, and \
                            what to return."
        }
    });
    if !models.is_empty() {
        properties["model"] = model_property(models);
    }
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": ["name", "input"],
        "additionalProperties": false
    });
    let spec = ToolSpec::new("create_sub_agent", DESCRIPTION, schema).with_kind(ToolKind::ThreadCreation);
    let names: Arc<[String]> = models.iter().map(|model| model.name.clone()).collect();
    let tool = LocalTool::new(spec, move |arguments, _cx| {
        let request = parse_request(&arguments, &names);
        async move {
            Ok(match request {
                Ok(info) => ToolOutput::CreateSubAgent(info),
                Err(message) => ToolOutput::error(message),
            })
        }
    });
    LocalToolSet::system("sub_agents", vec![tool])
}

fn model_property(models: &[SubAgentModel]) -> Value {
    let choices: Vec<String> = models
        .iter()
        .map(|model| format!("- {}: {}", model.name, model.description))
        .collect();
    json!({
        "type": "string",
        "enum": models.iter().map(|model| model.name.as_str()).collect::<Vec<_>>(),
        "description": format!(
            "Optional. The model the sub-agent runs on; omit to use your own. Choose the one that fits the \
             task:\n{}",
            choices.join("\n")
        )
    })
}

fn parse_request(arguments: &Value, models: &[String]) -> Result<AgentInfo, String> {
    let args = object(arguments)?;
    let name = required_text(args, "name")?.trim().to_owned();
    let input = required_text(args, "input")?.to_owned();
    let model = match optional_text(args, "model")? {
        None => None,
        Some(model) if models.iter().any(|known| known == model) => Some(model.to_owned()),
        Some(model) if models.is_empty() => {
            return Err(format!(
                "`model` '{model}' cannot be used: no model choices are configured; omit `model`."
            ));
        }
        Some(model) => {
            return Err(format!(
                "`model` '{model}' is not one of the available models: {}.",
                models.join(", ")
            ));
        }
    };
    Ok(AgentInfo { name, input, model })
}

/// The instruction section explaining when and how to delegate.
pub fn sub_agents_instructions() -> String {
    "You can hand a task to a sub-agent with `create_sub_agent`; its final answer comes back as the tool \
     result. Delegating pays off when:\n\
     - the work splits into independent parts: start one sub-agent per part in the same step and they run in \
     parallel;\n\
     - a part would fill your context with material you do not need to keep, such as reading many documents \
     or pages to extract a few facts;\n\
     - a tool returns output too large to handle here: a sub-agent can call the tool itself, process the \
     output and return only what matters.\n\
     Do simple or tightly coupled work yourself; a sub-agent costs a full agent run.\n\
     A sub-agent sees none of this conversation and cannot ask questions. Write `input` as a complete brief: \
     the goal, every fact, name, identifier and constraint it needs, and the exact form of the result you \
     want back. When the result will be used as evidence, ask it to cite its sources (links, documents, tool \
     results). Check what sub-agents return before relying on it."
        .to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capabilities::test_support::{call, context, error_text};
    use crate::tools::{ToolSet, ToolSpec};

    fn models() -> Vec<SubAgentModel> {
        vec![
            SubAgentModel {
                name: "openai/gpt-small".into(),
                description: "fast and cheap, for simple lookups".into(),
            },
            SubAgentModel {
                name: "anthropic/deep".into(),
                description: "slow, for hard reasoning".into(),
            },
        ]
    }

    async fn spec_of(set: &LocalToolSet) -> ToolSpec {
        let mut specs = set.list_tools(&context()).await.unwrap();
        assert_eq!(specs.len(), 1);
        specs.remove(0)
    }

    #[tokio::test]
    async fn without_models_no_choice_is_offered() {
        let set = sub_agent_tools(&[]);
        assert_eq!(set.name(), "sub_agents");
        let spec = spec_of(&set).await;
        assert_eq!(spec.name, "create_sub_agent");
        assert_eq!(spec.kind, ToolKind::ThreadCreation);
        assert!(spec.input_schema["properties"].get("model").is_none());
        assert_eq!(spec.input_schema["required"], json!(["name", "input"]));

        let output = call(
            &set,
            "create_sub_agent",
            json!({"name": " Research ", "input": "Find X."}),
        )
        .await;
        assert_eq!(
            output,
            ToolOutput::CreateSubAgent(AgentInfo {
                name: "Research".into(),
                input: "Find X.".into(),
                model: None
            })
        );
        let output = call(
            &set,
            "create_sub_agent",
            json!({"name": "R", "input": "x", "model": "a/b"}),
        )
        .await;
        assert!(error_text(&output).contains("no model choices"));
    }

    #[tokio::test]
    async fn models_are_offered_as_an_enum_with_their_descriptions() {
        let set = sub_agent_tools(&models());
        let spec = spec_of(&set).await;
        let model = &spec.input_schema["properties"]["model"];
        assert_eq!(model["enum"], json!(["openai/gpt-small", "anthropic/deep"]));
        let description = model["description"].as_str().unwrap();
        assert!(description.contains("- openai/gpt-small: fast and cheap, for simple lookups"));
        assert!(description.contains("- anthropic/deep: slow, for hard reasoning"));
        assert_eq!(spec.input_schema["required"], json!(["name", "input"]));

        let output = call(
            &set,
            "create_sub_agent",
            json!({"name": "Deep", "input": "Prove it.", "model": "anthropic/deep"}),
        )
        .await;
        assert_eq!(
            output,
            ToolOutput::CreateSubAgent(AgentInfo {
                name: "Deep".into(),
                input: "Prove it.".into(),
                model: Some("anthropic/deep".into())
            })
        );
    }

    #[tokio::test]
    async fn bad_requests_are_returned_to_the_model() {
        let set = sub_agent_tools(&models());
        let cases = [
            (json!({"input": "x"}), "`name` is required."),
            (json!({"name": "", "input": "x"}), "`name` must not be empty."),
            (json!({"name": "n"}), "`input` is required."),
            (json!({"name": "n", "input": "  "}), "`input` must not be empty."),
            (json!({"name": "n", "input": 3}), "`input` must be a string."),
            (
                json!({"name": "n", "input": "x", "model": "nope/model"}),
                "`model` 'nope/model' is not one of the available models: openai/gpt-small, anthropic/deep.",
            ),
            (json!("just text"), "The arguments must be a JSON object."),
        ];
        for (arguments, message) in cases {
            let output = call(&set, "create_sub_agent", arguments.clone()).await;
            assert_eq!(error_text(&output), message, "{arguments}");
        }
    }

    #[test]
    fn prompts_cover_the_essentials() {
        let identity = SUB_AGENT_IDENTITY.to_lowercase();
        for needle in ["delegated", "cannot ask", "concise", "complete"] {
            assert!(identity.contains(needle), "{needle}");
        }
        let section = sub_agents_instructions();
        for needle in [
            "parallel",
            "context",
            "too large",
            "sees none of this conversation",
            "cite",
        ] {
            assert!(section.contains(needle), "{needle}");
        }
    }
}
