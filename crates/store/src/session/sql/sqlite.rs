//! SQLite's dialect of the session store: `json_set` for a capability key, FTS5 for recall.

use rusqlite::Connection;

use super::SessionSql;

impl SessionSql for Connection {
    const SET_CAPABILITY_KEY: &'static str = "json_set(COALESCE(capability_state, '{}'), $5, json($4))";

    /// A JSON path of one key, when the key can be written as one (no quote or backslash).
    fn capability_key_path(key: &str) -> Option<String> {
        (!key.contains(['"', '\\'])).then(|| format!("$.\"{key}\""))
    }

    const SEARCH_CONDITION: &'static str =
        "m.message_id IN (SELECT rowid FROM context_message_fts WHERE context_message_fts MATCH $4)";

    /// Every term quoted (terms are alphanumeric, so quoting is exact): FTS5 ANDs juxtaposed terms.
    fn search_expression(terms: &[String]) -> String {
        terms
            .iter()
            .map(|term| format!("\"{term}\""))
            .collect::<Vec<_>>()
            .join(" ")
    }
}
