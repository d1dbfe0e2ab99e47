#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The provider factory: provider types to wire formats and endpoints.

use trueforge_llm::{LlmError, ProviderType, WireApi};

#[test]
fn providers_map_every_type_to_its_wire_api_and_default_url() {
    let expected = [
        ("openai", WireApi::OpenAiResponses, Some("https://api.openai.com/v1")),
        ("anthropic", WireApi::Anthropic, Some("https://api.anthropic.com/v1")),
        (
            "google-gemini",
            WireApi::Gemini,
            Some("https://generativelanguage.googleapis.com/v1beta"),
        ),
        (
            "fireworks",
            WireApi::ChatCompletions,
            Some("https://api.fireworks.ai/inference/v1"),
        ),
        (
            "together",
            WireApi::ChatCompletions,
            Some("https://api.together.xyz/v1"),
        ),
        ("zai", WireApi::ChatCompletions, Some("https://api.z.ai/api/paas/v4")),
        ("moonshot", WireApi::ChatCompletions, Some("https://api.moonshot.ai/v1")),
        (
            "alibaba",
            WireApi::ChatCompletions,
            Some("https://dashscope-intl.aliyuncs.com/compatible-mode/v1"),
        ),
        ("custom", WireApi::ChatCompletions, None),
    ];
    for (name, api, url) in expected {
        let provider = ProviderType::parse(name).unwrap();
        assert_eq!(provider.as_str(), name);
        assert_eq!(provider.wire_api(), api, "{name}");
        assert_eq!(provider.default_base_url(), url, "{name}");
    }
}

#[test]
fn providers_reject_unknown_types() {
    for bad in ["", "OpenAI", "gemini", "azure", " openai"] {
        assert!(
            matches!(ProviderType::parse(bad), Err(LlmError::InvalidRequest(_))),
            "{bad:?} was accepted"
        );
    }
}

#[test]
fn providers_endpoint_uses_the_given_or_default_base_url() {
    let openai = ProviderType::parse("openai").unwrap();
    let endpoint = openai.endpoint(None, Some("sk-1"), "gpt-5.5").unwrap();
    assert_eq!(endpoint.base_url, "https://api.openai.com/v1");
    assert_eq!(endpoint.api_key.as_deref(), Some("sk-1"));
    assert_eq!(endpoint.model, "gpt-5.5");

    let proxied = openai
        .endpoint(Some("https://proxy.example/v1//"), Some("sk-1"), "gpt-5.5")
        .unwrap();
    assert_eq!(proxied.base_url, "https://proxy.example/v1", "trailing slashes removed");

    let custom = ProviderType::parse("custom").unwrap();
    let local = custom
        .endpoint(Some("http://localhost:11434/v1"), Some(""), "llama")
        .unwrap();
    assert_eq!(local.api_key, None, "an empty key means no key");
    assert!(matches!(
        custom.endpoint(None, None, "llama"),
        Err(LlmError::InvalidRequest(_))
    ));
    assert!(matches!(
        custom.endpoint(Some("  "), None, "llama"),
        Err(LlmError::InvalidRequest(_))
    ));
}

#[test]
fn providers_wire_format_is_the_adapter_of_the_mapped_api() {
    for name in ["openai", "anthropic", "google-gemini", "fireworks", "custom"] {
        let provider = ProviderType::parse(name).unwrap();
        assert_eq!(provider.wire_format().api(), provider.wire_api(), "{name}");
    }
    for api in [
        WireApi::OpenAiResponses,
        WireApi::ChatCompletions,
        WireApi::Anthropic,
        WireApi::Gemini,
    ] {
        assert_eq!(trueforge_llm::wire_format(api).api(), api);
    }
}
