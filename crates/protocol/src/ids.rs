//! The ids that address what the harness stores: tenant, session, turn and thread.
//!
//! Each is its own type so that a session id cannot be passed where a turn id is wanted; on the wire and in
//! the database each is the plain string it wraps (`#[serde(transparent)]`; the store binds `as_str()`).
//! They are opaque: no format is checked here (the server and the store check what they accept).

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Defines one id type over `String` with the conversions every id shares.
macro_rules! string_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        // Consistent with `Hash`, `Eq` and `Ord` (all the wrapped string's), so maps keyed by the id can be
        // read with a `&str`.
        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }

        impl From<&String> for $name {
            fn from(id: &String) -> Self {
                Self(id.clone())
            }
        }

        impl From<&$name> for $name {
            fn from(id: &$name) -> Self {
                id.clone()
            }
        }

        // Into the wire types, whose id fields stay strings.
        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl From<&$name> for String {
            fn from(id: &$name) -> Self {
                id.0.clone()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

string_id! {
    /// The tenant every session, turn and setting belongs to.
    TenantId
}

string_id! {
    /// A session: unique across tenants.
    SessionId
}

string_id! {
    /// A turn of a session.
    TurnId
}

string_id! {
    /// A thread of a turn: the root (`main`, [`MAIN_THREAD_ID`](crate::MAIN_THREAD_ID)) or a sub-agent's.
    ThreadId
}

impl ThreadId {
    /// The root thread of every turn.
    pub fn main() -> Self {
        Self::from(crate::MAIN_THREAD_ID)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn serializes_as_the_string_it_wraps() {
        let id = TurnId::from("t1");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"t1\"");
        assert_eq!(serde_json::from_str::<TurnId>("\"t1\"").unwrap(), id);
        assert_eq!(id.to_string(), "t1");
    }

    #[test]
    fn maps_keyed_by_an_id_are_read_with_a_str() {
        let main = ThreadId::from("main");
        let map = BTreeMap::from([(main.clone(), 1)]);
        assert_eq!(map.get("main"), Some(&1));
        assert_eq!(main, "main");
    }
}
