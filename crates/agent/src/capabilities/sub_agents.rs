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

const DESCRIPTION: &str = "Start a sub-agent on one well-defined part of the work; its final answer is \
     the result. Calls in one step run in parallel.";

/// The `sub_agents` set with its thread-creating tool, `create_sub_agent`. `models` lists the models the
/// agent may choose from; when empty, sub-agents use the agent's own model and no choice is offered.
pub fn sub_agent_tools(models: &[SubAgentModel]) -> LocalToolSet {
    let mut properties = json!({
        "name": {
            "type": "string",
            "minLength": 1,
            "description": "A few words naming its task."
        },
        "input": {
            "type": "string",
            "minLength": 1,
            "description": "A self-contained brief: goal, facts, constraints, form of the result."
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
    "`create_sub_agent` hands a task to a sub-agent and returns its final answer. Use it for independent \
     parts (one per part, in one step: they run in parallel) and for reading a lot to extract a little \
     (large tool outputs included); do simple or tightly coupled work yourself. A sub-agent sees none of \
     this conversation and cannot ask: its `input` must carry the goal, every fact and identifier it needs \
     and the form of the answer (with sources, when they matter). Check what it returns."
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
            "extract",
            "large tool outputs",
            "sees none of this conversation",
            "sources",
        ] {
            assert!(section.contains(needle), "{needle}");
        }
    }
}
