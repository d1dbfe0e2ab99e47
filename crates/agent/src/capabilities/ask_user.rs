//! Asking the user a question mid-turn. The call is answered by the client, not the harness: the loop
//! pauses the turn on it and the user's reply becomes the tool result.

use serde_json::{Value, json};

use super::args::{object, required_text};
use crate::tools::{LocalTool, LocalToolSet, ToolKind, ToolOutput, ToolSpec};

/// The most options a question may offer; more stops being a quick choice.
const MAX_OPTIONS: usize = 5;

const DESCRIPTION: &str = "Ask the user one question and wait for the reply. Only when the answer \
     changes what you do next and you cannot find it out; otherwise assume, say so, and go on. Options: \
     at most 5, mutually exclusive, recommended first with \" (Recommended)\", no \"Other\" (the user can \
     always type an answer).";

/// The `ask-user-question` set with its client-side tool, `ask_user_question`.
pub fn ask_user_question_tools() -> LocalToolSet {
    let schema = json!({
        "type": "object",
        "properties": {
            "question": {
                "type": "string",
                "minLength": 1,
                "description": "Short and specific."
            },
            "options": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "maxItems": MAX_OPTIONS,
                "description": "Omit for an open question."
            }
        },
        "required": ["question"],
        "additionalProperties": false
    });
    let spec = ToolSpec::new("ask_user_question", DESCRIPTION, schema).with_kind(ToolKind::ClientSide);
    // The loop pauses on client-side calls, so this body only runs if something routes the call wrongly.
    let tool = LocalTool::new(spec, |_arguments, _cx| async {
        Ok(ToolOutput::error(
            "ask_user_question is answered by the user through the client; the harness cannot run it.",
        ))
    });
    LocalToolSet::system("ask-user-question", vec![tool])
}

/// Checks a call's arguments before the turn pauses on it, so a malformed question is returned to the model
/// instead of being shown to the user.
pub fn validate_question_arguments(arguments: &Value) -> Result<(), String> {
    let args = object(arguments)?;
    required_text(args, "question")?;
    let options = match args.get("options") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(options)) => options,
        Some(_) => return Err("`options` must be an array of strings.".to_owned()),
    };
    if options.len() > MAX_OPTIONS {
        return Err(format!(
            "`options` has {} entries; offer at most {MAX_OPTIONS}.",
            options.len()
        ));
    }
    for (index, option) in options.iter().enumerate() {
        match option.as_str() {
            Some(text) if !text.trim().is_empty() => {}
            Some(_) => return Err(format!("`options[{index}]` must not be empty.")),
            None => return Err(format!("`options[{index}]` must be a string.")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capabilities::test_support::{call, context, error_text};
    use crate::tools::ToolSet;

    #[tokio::test]
    async fn the_tool_is_client_side_and_refuses_to_run_in_the_harness() {
        let set = ask_user_question_tools();
        assert_eq!(set.name(), "ask-user-question");
        let specs = set.list_tools(&context()).await.unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].name, "ask_user_question");
        assert_eq!(specs[0].kind, ToolKind::ClientSide);
        assert_eq!(specs[0].input_schema["properties"]["options"]["maxItems"], json!(5));
        assert_eq!(specs[0].input_schema["required"], json!(["question"]));

        let output = call(&set, "ask_user_question", json!({"question": "Which?"})).await;
        assert!(error_text(&output).contains("client"));
    }

    #[test]
    fn accepts_questions_with_and_without_options() {
        assert_eq!(validate_question_arguments(&json!({"question": "Proceed?"})), Ok(()));
        assert_eq!(
            validate_question_arguments(&json!({"question": "Proceed?", "options": null})),
            Ok(())
        );
        assert_eq!(
            validate_question_arguments(&json!({"question": "Proceed?", "options": []})),
            Ok(())
        );
        assert_eq!(
            validate_question_arguments(
                &json!({"question": "Which?", "options": ["a (Recommended)", "b", "c", "d", "e"]})
            ),
            Ok(())
        );
    }

    #[test]
    fn rejects_malformed_questions() {
        let cases = [
            (json!("Proceed?"), "The arguments must be a JSON object."),
            (json!({}), "`question` is required."),
            (json!({"question": "  "}), "`question` must not be empty."),
            (json!({"question": 7}), "`question` must be a string."),
            (
                json!({"question": "Which?", "options": "a"}),
                "`options` must be an array of strings.",
            ),
            (
                json!({"question": "Which?", "options": ["a", "b", "c", "d", "e", "f"]}),
                "`options` has 6 entries; offer at most 5.",
            ),
            (
                json!({"question": "Which?", "options": ["a", ""]}),
                "`options[1]` must not be empty.",
            ),
            (
                json!({"question": "Which?", "options": [1]}),
                "`options[0]` must be a string.",
            ),
        ];
        for (arguments, message) in cases {
            assert_eq!(
                validate_question_arguments(&arguments),
                Err(message.to_owned()),
                "{arguments}"
            );
        }
    }
}
