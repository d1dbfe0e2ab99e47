//! Serde helpers for the two kinds of "maybe" in the reference contract.
//!
//! The contract distinguishes a field that may be *absent* (`skip_serializing_if`) from a field that
//! must be *present but may be null* (`"type": ["string", "null"]` and listed in `required`), and a
//! few fields are both. Plain `Option<T>` conflates absent and null on input, so these helpers keep
//! the distinction both ways.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// For a required field whose value may be `null`: unlike a bare `Option<T>`, a missing key is an
/// error instead of silently becoming `None`. Use with `deserialize_with`.
pub(crate) fn required<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}

/// For an optional field that may also be `null`: `None` = absent, `Some(None)` = explicit `null`,
/// `Some(Some(v))` = a value. Use with `#[serde(default, skip_serializing_if = "Option::is_none",
/// with = "crate::nullable::optional")]`.
pub(crate) mod optional {
    use super::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<S, T>(value: &Option<Option<T>>, serializer: S) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        T: Serialize,
    {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

/// For an optional field where `null` is not a valid value: serde's `Option<T>` would read `null`
/// as absent and drop it silently; the contract rejects it. Use with `default` and
/// `skip_serializing_if = "Option::is_none"`.
pub(crate) fn non_null<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}
