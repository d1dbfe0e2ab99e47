//! Reading tool arguments, with messages the model can act on when they are wrong. `null` counts as absent:
//! models often send it for optional fields.

use serde_json::{Map, Value, json};

pub(crate) type Arguments = Map<String, Value>;

/// The input schema of a tool that takes nothing; strict so a model cannot invent arguments.
pub(crate) fn no_arguments_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

pub(crate) fn object(arguments: &Value) -> Result<&Arguments, String> {
    arguments
        .as_object()
        .ok_or_else(|| "The arguments must be a JSON object.".to_owned())
}

fn present<'a>(args: &'a Arguments, key: &str) -> Option<&'a Value> {
    args.get(key).filter(|value| !value.is_null())
}

/// A string that must be given and must not be blank.
pub(crate) fn required_text<'a>(args: &'a Arguments, key: &str) -> Result<&'a str, String> {
    optional_text(args, key)?.ok_or_else(|| format!("`{key}` is required."))
}

/// A string that may be absent, but must not be blank when given.
pub(crate) fn optional_text<'a>(args: &'a Arguments, key: &str) -> Result<Option<&'a str>, String> {
    match present(args, key) {
        None => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Err(format!("`{key}` must not be empty.")),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(format!("`{key}` must be a string.")),
    }
}

/// A whole number in `min..=max`, or absent.
pub(crate) fn optional_integer(args: &Arguments, key: &str, min: u64, max: u64) -> Result<Option<u64>, String> {
    let Some(value) = present(args, key) else {
        return Ok(None);
    };
    match value.as_u64() {
        Some(number) if (min..=max).contains(&number) => Ok(Some(number)),
        _ if max == u64::MAX => Err(format!("`{key}` must be a whole number of at least {min}.")),
        _ => Err(format!("`{key}` must be a whole number from {min} to {max}.")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: Value) -> Arguments {
        object(&value).cloned().unwrap()
    }

    #[test]
    fn non_objects_are_rejected() {
        assert!(object(&json!("text")).is_err());
        assert!(object(&json!([1])).is_err());
        assert!(object(&json!({})).is_ok());
    }

    #[test]
    fn text_arguments() {
        let given = args(json!({"a": "x", "blank": "  ", "number": 3, "nothing": null}));
        assert_eq!(required_text(&given, "a"), Ok("x"));
        assert_eq!(
            required_text(&given, "missing"),
            Err("`missing` is required.".to_owned())
        );
        assert_eq!(
            required_text(&given, "nothing"),
            Err("`nothing` is required.".to_owned())
        );
        assert_eq!(optional_text(&given, "nothing"), Ok(None));
        assert_eq!(
            optional_text(&given, "blank"),
            Err("`blank` must not be empty.".to_owned())
        );
        assert_eq!(
            optional_text(&given, "number"),
            Err("`number` must be a string.".to_owned())
        );
    }

    #[test]
    fn integer_arguments() {
        let given = args(json!({"ok": 5, "low": 0, "high": 51, "negative": -1, "fraction": 2.5, "text": "5"}));
        assert_eq!(optional_integer(&given, "ok", 1, 50), Ok(Some(5)));
        assert_eq!(optional_integer(&given, "absent", 1, 50), Ok(None));
        for key in ["low", "high", "negative", "fraction", "text"] {
            assert_eq!(
                optional_integer(&given, key, 1, 50),
                Err(format!("`{key}` must be a whole number from 1 to 50."))
            );
        }
        assert_eq!(
            optional_integer(&given, "negative", 0, u64::MAX),
            Err("`negative` must be a whole number of at least 0.".to_owned())
        );
    }
}
