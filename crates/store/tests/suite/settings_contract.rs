//! The settings-store contract suite, run against every backend: memory, SQLite and Postgres. Each case
//! is a function taking a fresh fixture; the macros below instantiate it per backend, so a case reads as
//! `settings_contract::<backend>::<case>`. Cases about what is at rest (encryption, keys, tampering) need
//! raw SQL and run on the SQL backends only. Redaction and key loading do not depend on a backend: they
//! are in `suite/secrets.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_keys;
mod approvals;
// Also the test data of `suite/secrets.rs`.
pub(crate) mod data;
mod fixture;
mod mcp;
mod mcp_sessions;
mod named;
mod oauth;
mod sandbox;
mod schedules;
mod secrets;

/// One `#[tokio::test]` per `module::case`, on a fresh fixture from `$fixture`.
macro_rules! cases {
    ($fixture:path => $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let fixture = $fixture().await;
                super::$module::$case(&fixture).await;
            }
        )*
    };
}

/// The cases every backend must pass.
macro_rules! contract {
    ($fixture:path) => {
        cases!($fixture =>
            named::agents_create_get_list_order,
            named::agents_create_conflict,
            named::agents_update,
            named::agents_delete,
            named::agents_tenant_isolation,
            named::agents_keep_json_key_order,
            approvals::agent_tool_approvals_add_is_idempotent_and_ordered,
            approvals::agent_tool_approvals_need_an_agent,
            approvals::agent_tool_approvals_revoke_one_and_all,
            approvals::agent_tool_approvals_go_with_their_agent,
            approvals::agent_tool_approvals_tenant_isolation,
            named::model_providers_crud_and_order,
            named::model_providers_create_conflict,
            named::model_providers_upsert_keeps_identity,
            named::model_providers_upsert_with_keeps_stored_secret,
            named::model_providers_upsert_with_is_atomic,
            named::model_providers_delete_and_tenant_isolation,
            named::skills_crud_filter_and_order,
            named::skills_upsert_delete_and_tenant_isolation,
            mcp::mcp_servers_crud_filter_and_order,
            mcp::mcp_servers_create_conflict,
            mcp::mcp_servers_upsert_keeps_id_and_client,
            mcp::mcp_servers_upsert_with_keeps_header_by_name,
            mcp::mcp_oauth_client_roundtrip,
            mcp::mcp_oauth_client_is_tenant_scoped,
            mcp::mcp_server_delete_cascades,
            mcp::mcp_servers_tenant_isolation,
            mcp_sessions::mcp_session_save_get_replace,
            mcp_sessions::mcp_session_per_user_and_server,
            mcp_sessions::mcp_session_tenant_isolation,
            mcp_sessions::mcp_session_needs_a_server,
            mcp_sessions::mcp_session_delete_is_idempotent,
            mcp_sessions::mcp_session_goes_with_its_server,
            api_keys::api_keys_create_find_list_in_order,
            api_keys::api_keys_are_their_owners_only,
            api_keys::api_keys_ids_and_hashes_are_unique,
            oauth::oauth_tokens_upsert_per_user,
            oauth::oauth_tokens_tenant_isolation,
            oauth::pending_authorization_single_use,
            oauth::pending_authorization_expires_after_ttl,
            oauth::pending_authorization_sweep,
            sandbox::sandbox_provider_singleton,
            sandbox::sandbox_status_update,
            sandbox::sandbox_upsert_with_and_delete,
            schedules::schedules_crud_per_owner_and_tenant,
            schedules::schedules_due_are_active_and_at_or_before_now,
            schedules::schedule_claim_is_a_compare_and_set,
            schedules::schedule_claim_has_one_winner_among_concurrent_claimers,
            schedules::schedule_runs_settle_once_and_list_newest_first,
            schedules::schedule_run_expired_lease_is_taken_over_once,
        );
    };
}

/// The cases about what SQL backends keep at rest.
macro_rules! at_rest {
    ($fixture:path) => {
        cases!($fixture =>
            secrets::secrets_encrypted_at_rest,
            secrets::wrong_key_fails_at_open,
            secrets::wrong_key_on_a_value_is_a_clear_error,
            secrets::ciphertext_moved_to_another_row_fails,
        );
    };
}

mod memory {
    contract!(super::fixture::memory);
}

mod sqlite {
    contract!(super::fixture::sqlite);
    at_rest!(super::fixture::sqlite);
}

mod postgres {
    contract!(super::fixture::postgres);
    at_rest!(super::fixture::postgres);
}
