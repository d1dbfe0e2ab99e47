//! Shared by the test files: hand-written examples of every modelled schema, and round-trip
//! helpers.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod examples;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses `json` as `T`, serializes it back and asserts nothing changed; returns the parsed value.
pub fn roundtrip<T: DeserializeOwned + Serialize>(json: &Value) -> T {
    let parsed: T =
        serde_json::from_value(json.clone()).unwrap_or_else(|error| panic!("failed to parse {json}: {error}"));
    let back = serde_json::to_value(&parsed).expect("serializes");
    assert_eq!(&back, json, "round trip changed the JSON");
    // Also through text, which is how values travel.
    let text = serde_json::to_string(&parsed).expect("serializes to text");
    let reparsed: Value = serde_json::from_str(&text).expect("valid JSON text");
    assert_eq!(&reparsed, json);
    parsed
}

/// Parses `json` as `T` and returns the serialized form (for default materialisation checks).
pub fn normalise<T: DeserializeOwned + Serialize>(json: &Value) -> Value {
    let parsed: T =
        serde_json::from_value(json.clone()).unwrap_or_else(|error| panic!("failed to parse {json}: {error}"));
    serde_json::to_value(&parsed).expect("serializes")
}

/// Asserts `json` does not parse as `T`, and that the error mentions `needle`.
pub fn rejects<T: DeserializeOwned + std::fmt::Debug>(json: &Value, needle: &str) {
    match serde_json::from_value::<T>(json.clone()) {
        Ok(parsed) => panic!("expected {json} to be rejected, got {parsed:?}"),
        Err(error) => assert!(
            error.to_string().contains(needle),
            "error for {json} was `{error}`, expected it to mention `{needle}`"
        ),
    }
}

/// `json` with `key` removed from the top-level object.
pub fn without(json: &Value, key: &str) -> Value {
    let mut json = json.clone();
    json.as_object_mut().expect("an object").remove(key);
    json
}

/// `json` with `key` set to `value` in the top-level object.
pub fn with(json: &Value, key: &str, value: Value) -> Value {
    let mut json = json.clone();
    json.as_object_mut().expect("an object").insert(key.to_owned(), value);
    json
}
