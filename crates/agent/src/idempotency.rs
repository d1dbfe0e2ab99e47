//! The fingerprint of a turn request, stored with its idempotency key: a retry carries the same key and the
//! same request, so the same fingerprint; the key reused for another request does not.
//!
//! What is hashed is what defines the turn, as the runtime received it: the input, which turn it continues
//! (`auto`, `none` or an id, as asked, not as resolved) and the host's custom data. How the answer is
//! delivered (the HTTP `stream` flag) is not part of it: a retry may ask for the turn either way. The JSON is
//! made canonical (object keys sorted at every depth, no whitespace) before hashing, so two bodies that
//! differ only in key order or spacing are the same request.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::error::InputError;
use crate::runtime::{PreviousTurn, TurnRequest};

/// `sha256:` and the lowercase hex SHA-256 of the request's canonical JSON.
pub(crate) fn request_fingerprint(request: &TurnRequest) -> Result<String, InputError> {
    let previous = match &request.previous_turn_id {
        PreviousTurn::Auto => json!("auto"),
        PreviousTurn::None => json!("none"),
        // An object, so that a turn named `auto` or `none` is not the keyword.
        PreviousTurn::Id(id) => json!({ "id": id }),
    };
    let request = json!({
        "custom": request.custom,
        "input": serde_json::to_value(&request.input).map_err(InputError::NotJson)?,
        "previous_turn_id": previous,
    });
    let canonical = serde_json::to_vec(&sorted(request)).map_err(InputError::NotJson)?;
    let digest = Sha256::digest(&canonical);
    let mut fingerprint = String::with_capacity("sha256:".len() + 2 * digest.len());
    fingerprint.push_str("sha256:");
    for byte in digest {
        fingerprint.push(hex_digit(byte >> 4));
        fingerprint.push(hex_digit(byte & 0x0f));
    }
    Ok(fingerprint)
}

fn hex_digit(nibble: u8) -> char {
    char::from_digit(u32::from(nibble), 16).unwrap_or('0')
}

/// The value with every object's keys in sorted order (maps keep insertion order in this workspace).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.cmp(b));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key, sorted(value)))
                    .collect::<Map<String, Value>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;
    use trueforge_protocol::TurnInputItem;

    use super::*;

    fn request(input: Value, previous: PreviousTurn, custom: Option<Value>) -> TurnRequest {
        TurnRequest {
            tenant_id: "t".into(),
            session_id: "s".into(),
            turn_id: "turn".into(),
            input: serde_json::from_value::<Vec<TurnInputItem>>(input).expect("input"),
            previous_turn_id: previous,
            custom,
            requested_by: None,
            idempotency_key: None,
        }
    }

    fn message(text: &str) -> Value {
        json!([{ "type": "user.message", "content": text }])
    }

    #[test]
    fn the_same_request_has_the_same_fingerprint_whatever_its_turn_id_and_key_order() {
        let first = request(
            message("hi"),
            PreviousTurn::Auto,
            Some(json!({ "a": 1, "b": { "c": 2, "d": 3 } })),
        );
        let mut retry = request(
            message("hi"),
            PreviousTurn::Auto,
            Some(json!({ "b": { "d": 3, "c": 2 }, "a": 1 })),
        );
        retry.turn_id = "another turn".into();
        let fingerprint = request_fingerprint(&first).unwrap();
        assert_eq!(request_fingerprint(&retry).unwrap(), fingerprint);
        assert!(fingerprint.starts_with("sha256:"));
        assert_eq!(fingerprint.len(), "sha256:".len() + 64);
    }

    #[test]
    fn what_defines_the_turn_changes_the_fingerprint() {
        let base = request_fingerprint(&request(message("hi"), PreviousTurn::Auto, None)).unwrap();
        let others = [
            request(message("hello"), PreviousTurn::Auto, None),
            request(message("hi"), PreviousTurn::None, None),
            request(message("hi"), PreviousTurn::Id("auto".into()), None),
            request(message("hi"), PreviousTurn::Auto, Some(json!({}))),
        ];
        for other in others {
            assert_ne!(request_fingerprint(&other).unwrap(), base, "{other:?}");
        }
    }
}
