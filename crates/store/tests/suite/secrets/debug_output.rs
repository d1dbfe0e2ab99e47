//! Secrets never appear in `Debug` output, so a log line or a panic message cannot leak one.

use trueforge_store::settings::{McpServerStore, MemorySettingsStore, ModelProviderStore};

use crate::suite::settings_contract::data::*;

const KEY: &str = "sk-live-do-not-print-0123456789";

#[test]
fn debug_of_manifests_masks_api_keys_and_header_values() {
    let model = format!("{:?}", provider("openai", KEY));
    assert!(!model.contains(KEY), "{model}");
    let mcp = format!("{:?}", mcp_header("tools", &[("Authorization", KEY)]));
    assert!(!mcp.contains(KEY), "{mcp}");
    assert!(mcp.contains("Authorization"), "header names stay visible: {mcp}");
}

#[tokio::test]
async fn debug_of_records_and_the_memory_store_masks_secrets() {
    let store = MemorySettingsStore::new();
    let record = store
        .create_model_provider(&A.into(), provider("openai", KEY))
        .await
        .unwrap();
    let server = store
        .create_mcp_server(&A.into(), mcp_header("tools", &[("Authorization", KEY)]))
        .await
        .unwrap();
    for text in [format!("{record:?}"), format!("{server:?}"), format!("{store:?}")] {
        assert!(!text.contains(KEY), "{text}");
    }
}
