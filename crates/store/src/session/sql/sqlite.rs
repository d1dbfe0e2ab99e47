//! SQLite's dialect of the session store: `json_set` for a capability key, FTS5 for recall.

use rusqlite::Connection;
use serde_json::Value;

use super::SessionSql;

impl SessionSql for Connection {
    /// A write transaction holds the whole database (`BEGIN IMMEDIATE`): no row lock to take.
    const LOCK_ROW: &'static str = "";

    const SET_CAPABILITY_KEY: &'static str = "json_set(COALESCE(capability_state, '{}'), $5, json($4))";

    /// A JSON path of one key, when the key can be written as one (no quote or backslash).
    fn capability_key_path(key: &str) -> Option<String> {
        (!key.contains(['"', '\\'])).then(|| format!("$.\"{key}\""))
    }

    /// An object comes out as JSON text.
    const TURN_METRICS: &'static str = "json_extract(state, '$.metrics')";

    /// The rows the index holds that match, plus the rows written since its last batch (the tail above
    /// `context_message_fts_mark`, at most 512 rows: migration 11) that hold every term. Of the tail only
    /// the searched session's rows (`$2`) are tested: the caller keeps no others, and the tail is shared by
    /// every running turn. The tail is matched with the index's own rule: a term is a whole token of
    /// `index_text`, whose tokens are separated by single spaces and, like the terms, already lowercased
    /// (so the `ascii` tokenizer's ASCII case folding changes nothing, and an exact `instr` is the same
    /// test). Every term quoted for FTS5 (terms are alphanumeric, so quoting is exact): it ANDs juxtaposed
    /// terms.
    const SEARCH_CONDITION: &'static str = "m.message_id IN ( \
             SELECT rowid FROM context_message_fts WHERE context_message_fts MATCH \
                 (SELECT group_concat('\"' || value || '\"', ' ') FROM json_each($4)) \
           UNION ALL \
             SELECT t.message_id FROM context_message t \
             WHERE t.message_id > (SELECT indexed_through FROM context_message_fts_mark) AND t.session_id = $2 \
               AND NOT EXISTS (SELECT 1 FROM json_each($4) AS term \
                               WHERE instr(' ' || t.index_text || ' ', ' ' || term.value || ' ') = 0))";

    /// The terms as a JSON array: the condition builds the FTS5 query and the tail's test from it.
    fn search_expression(terms: &[String]) -> String {
        Value::from(terms.to_vec()).to_string()
    }
}
