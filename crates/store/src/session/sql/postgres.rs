//! Postgres's dialect of the session store: `jsonb_set` for a capability key, full-text search over the
//! store's own tokens for recall.

use sqlx::postgres::PgConnection;

use super::SessionSql;

impl SessionSql for PgConnection {
    const LOCK_ROW: &'static str = " FOR UPDATE";

    const SET_CAPABILITY_KEY: &'static str =
        "jsonb_set(COALESCE(capability_state, '{}'::jsonb), CAST($5 AS text[]), $4, true)";

    /// A one-element text array.
    fn capability_key_path(key: &str) -> Option<String> {
        let escaped = key.replace('\\', "\\\\").replace('"', "\\\"");
        Some(format!("{{\"{escaped}\"}}"))
    }

    const TURN_METRICS: &'static str = "state->'metrics'";

    /// Both sides bypass the text-search parser (which drops or splits some tokens, such as `x²`), so they
    /// match exactly the store's words.
    const SEARCH_CONDITION: &'static str =
        "array_to_tsvector(string_to_array(m.index_text, ' ')) @@ CAST($4 AS tsquery)";

    /// Terms are alphanumeric, so quoting them as lexemes needs no escaping; `&` ANDs them.
    fn search_expression(terms: &[String]) -> String {
        terms
            .iter()
            .map(|term| format!("'{term}'"))
            .collect::<Vec<_>>()
            .join(" & ")
    }
}
