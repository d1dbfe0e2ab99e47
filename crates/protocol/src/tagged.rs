//! Structs that carry their own discriminator (`"type": "turn.done"`, `"role": "tool"`).
//!
//! Events appear both inside unions (`SessionEvent`) and on their own (`TurnState::Done.output` is a
//! bare `model.message`), so the discriminator must belong to the struct, not to the union around
//! it. Serde's struct-level `tag` attribute writes the tag but ignores it on input, which would let a
//! `tool.response` parse as a `model.message`. Instead, a struct derives its body with
//! `#[serde(remote = "Self")]` and [`tagged_struct!`] wraps that body with a checked tag; unions then
//! serialize their variant untouched and deserialize by dispatching on the tag (see
//! [`dispatch_tag`]).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// The tag-less body of a self-tagged struct: what `#[serde(remote = "Self")]` derives.
pub(crate) trait TaggedBody: Sized {
    fn serialize_body<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
    fn deserialize_body(value: Value) -> Result<Self, serde_json::Error>;
}

/// Adapts a body so it can be flattened next to the tag.
struct Body<'a, T>(&'a T);

impl<T: TaggedBody> Serialize for Body<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_body(serializer)
    }
}

// Two wrappers because serde needs the key as a literal; the contract only uses these two keys.
#[derive(Serialize)]
#[serde(bound = "")]
struct TypeTagged<'a, T: TaggedBody> {
    #[serde(rename = "type")]
    tag: &'static str,
    #[serde(flatten)]
    body: Body<'a, T>,
}

#[derive(Serialize)]
#[serde(bound = "")]
struct RoleTagged<'a, T: TaggedBody> {
    #[serde(rename = "role")]
    tag: &'static str,
    #[serde(flatten)]
    body: Body<'a, T>,
}

/// Which key holds a struct's discriminator.
#[derive(Clone, Copy)]
pub(crate) enum TagKey {
    Type,
    Role,
}

impl TagKey {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Type => "type",
            Self::Role => "role",
        }
    }
}

pub(crate) fn serialize_tagged<S, T>(
    serializer: S,
    key: TagKey,
    tag: &'static str,
    value: &T,
) -> Result<S::Ok, S::Error>
where
    S: Serializer,
    T: TaggedBody,
{
    let body = Body(value);
    match key {
        TagKey::Type => TypeTagged { tag, body }.serialize(serializer),
        TagKey::Role => RoleTagged { tag, body }.serialize(serializer),
    }
}

pub(crate) fn deserialize_tagged<'de, D, T>(deserializer: D, key: TagKey, tag: &'static str) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TaggedBody,
{
    let mut map = Map::deserialize(deserializer)?;
    match map.remove(key.as_str()) {
        Some(Value::String(found)) if found == tag => {}
        Some(Value::String(found)) => {
            return Err(D::Error::custom(format!(
                "expected `{}` to be \"{tag}\", found \"{found}\"",
                key.as_str()
            )));
        }
        Some(_) => {
            return Err(D::Error::custom(format!("`{}` must be a string", key.as_str())));
        }
        None => return Err(D::Error::missing_field(key.as_str())),
    }
    T::deserialize_body(Value::Object(map)).map_err(D::Error::custom)
}

/// Reads a JSON object and hands it, with the string value of its discriminator, to `pick`, which
/// deserializes the matching variant. Used by the unions of self-tagged structs.
pub(crate) fn dispatch_tag<'de, D, T>(
    deserializer: D,
    key: &'static str,
    pick: impl FnOnce(&str, Value) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let map = Map::deserialize(deserializer)?;
    let tag = match map.get(key) {
        Some(Value::String(tag)) => tag.clone(),
        Some(_) => return Err(D::Error::custom(format!("`{key}` must be a string"))),
        None => return Err(D::Error::missing_field(key)),
    };
    pick(&tag, Value::Object(map)).map_err(D::Error::custom)
}

/// The error for a discriminator no variant claims.
pub(crate) fn unknown_tag(key: &str, found: &str, expected: &[&str]) -> serde_json::Error {
    serde_json::Error::custom(format!(
        "unknown `{key}` \"{found}\", expected one of: {}",
        expected.join(", ")
    ))
}

/// Makes a struct that derives `Serialize`/`Deserialize` with `#[serde(remote = "Self")]` carry its
/// own discriminator: `tagged_struct!(TurnDoneEvent, type = "turn.done");`.
macro_rules! tagged_struct {
    ($ty:ident, type = $tag:literal) => {
        $crate::tagged::tagged_struct!(@impl $ty, Type, $tag);
    };
    ($ty:ident, role = $tag:literal) => {
        $crate::tagged::tagged_struct!(@impl $ty, Role, $tag);
    };
    (@impl $ty:ident, $key:ident, $tag:literal) => {
        impl $ty {
            /// The discriminator value this struct is written with.
            pub const TAG: &'static str = $tag;
        }

        impl $crate::openapi::SelfTagged for $ty {
            const KEY: &'static str = $crate::tagged::TagKey::$key.as_str();
            const TAG: &'static str = $tag;
        }

        impl $crate::tagged::TaggedBody for $ty {
            fn serialize_body<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $ty::serialize(self, serializer)
            }

            fn deserialize_body(value: ::serde_json::Value) -> Result<Self, ::serde_json::Error> {
                $ty::deserialize(value)
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $crate::tagged::serialize_tagged(serializer, $crate::tagged::TagKey::$key, $tag, self)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::tagged::deserialize_tagged(deserializer, $crate::tagged::TagKey::$key, $tag)
            }
        }
    };
}

pub(crate) use tagged_struct;
