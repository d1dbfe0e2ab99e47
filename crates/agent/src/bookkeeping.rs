//! The runtime's own records in a thread's capability state, typed: which calls began executing, which
//! an MCP server refused for want of authorization, and which tools the user allowed for the whole
//! session. The capability state is a JSON object on the wire (the reference's capabilities keep their data
//! there too), so each record has a key of its own, written and read only here.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value, json};
use trueforge_store::session::model::CapabilityStatePatch;

/// Calls whose execution began, or was about to: when none of a model answer's calls waits for the user,
/// they are listed with the answer itself, in its commit. A call listed here but without a result after a
/// crash may have run: it is closed as interrupted, never run again (at most once).
const STARTED_TOOL_CALLS: &str = "tf.started_tool_calls";
/// Calls an MCP server refused for want of the user's authorization. They stay open, so the turn that
/// continues the conversation once the user authorized (an empty input) runs them again; a new user
/// message closes them as not executed instead.
const AUTH_INTERRUPTED_TOOL_CALLS: &str = "tf.auth_interrupted_tool_calls";
/// (Root thread.) Tools the user allowed for the whole session, as `[mcp_server_id, tool]` pairs.
const SESSION_APPROVALS: &str = "tf.session_approvals";

/// A tool by its MCP server id and its name on that server.
pub type ToolRef = (String, String);

/// The records, read from a thread's capability state. A record that is missing or not of its shape
/// reads as empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadRecords {
    pub started_tool_calls: Vec<String>,
    pub auth_interrupted_tool_calls: Vec<String>,
    pub session_approvals: BTreeSet<ToolRef>,
}

impl ThreadRecords {
    pub fn read(state: Option<&Map<String, Value>>) -> Self {
        let ids = |key: &str| -> Vec<String> {
            state
                .and_then(|state| state.get(key))
                .and_then(Value::as_array)
                .map(|ids| ids.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let session_approvals = state
            .and_then(|state| state.get(SESSION_APPROVALS))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|pair| {
                let pair = pair.as_array()?;
                Some((pair.first()?.as_str()?.to_owned(), pair.get(1)?.as_str()?.to_owned()))
            })
            .collect();
        Self {
            started_tool_calls: ids(STARTED_TOOL_CALLS),
            auth_interrupted_tool_calls: ids(AUTH_INTERRUPTED_TOOL_CALLS),
            session_approvals,
        }
    }

    /// Whether the call began executing (it may have taken effect).
    pub fn was_started(&self, call_id: &str) -> bool {
        self.started_tool_calls.iter().any(|id| id == call_id)
    }

    pub fn session_approvals(&self) -> HashSet<ToolRef> {
        self.session_approvals.iter().cloned().collect()
    }
}

/// One record to write: into the thread's capability state and, through the store's per-key patch, into
/// the stored snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    StartedToolCalls(Vec<String>),
    AuthInterruptedToolCalls(Vec<String>),
    SessionApprovals(BTreeSet<ToolRef>),
}

impl Record {
    pub fn key(&self) -> &'static str {
        match self {
            Self::StartedToolCalls(_) => STARTED_TOOL_CALLS,
            Self::AuthInterruptedToolCalls(_) => AUTH_INTERRUPTED_TOOL_CALLS,
            Self::SessionApprovals(_) => SESSION_APPROVALS,
        }
    }

    pub fn value(&self) -> Value {
        match self {
            Self::StartedToolCalls(ids) | Self::AuthInterruptedToolCalls(ids) => json!(ids),
            Self::SessionApprovals(tools) => {
                Value::Array(tools.iter().map(|(server, tool)| json!([server, tool])).collect())
            }
        }
    }

    /// The record as a store patch of its key.
    pub fn patch(&self) -> CapabilityStatePatch {
        CapabilityStatePatch {
            key: self.key().to_owned(),
            value: self.value(),
        }
    }

    pub fn write_into(&self, state: &mut Map<String, Value>) {
        state.insert(self.key().to_owned(), self.value());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_the_capability_state() {
        let mut state = Map::new();
        state.insert("compaction".to_owned(), json!({"kept": true}));
        Record::StartedToolCalls(vec!["a".into(), "b".into()]).write_into(&mut state);
        Record::AuthInterruptedToolCalls(vec!["b".into()]).write_into(&mut state);
        Record::SessionApprovals(BTreeSet::from([("srv".to_owned(), "read".to_owned())])).write_into(&mut state);
        let records = ThreadRecords::read(Some(&state));
        assert!(records.was_started("a") && !records.was_started("c"));
        assert_eq!(records.auth_interrupted_tool_calls, vec!["b".to_owned()]);
        assert_eq!(
            records.session_approvals(),
            HashSet::from([("srv".to_owned(), "read".to_owned())])
        );
        // Other capabilities' data is left alone, and the wire keys stay what stored snapshots hold.
        assert_eq!(state["compaction"], json!({"kept": true}));
        assert_eq!(state["tf.session_approvals"], json!([["srv", "read"]]));
    }

    #[test]
    fn missing_or_misshapen_records_read_as_empty() {
        assert_eq!(ThreadRecords::read(None), ThreadRecords::default());
        let mut state = Map::new();
        state.insert("tf.started_tool_calls".to_owned(), json!("not a list"));
        state.insert("tf.session_approvals".to_owned(), json!([["only-one"], 7]));
        assert_eq!(ThreadRecords::read(Some(&state)), ThreadRecords::default());
    }
}
