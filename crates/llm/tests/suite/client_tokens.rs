#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Token estimates.

use serde_json::json;
use trueforge_llm::tokens::{IMAGE_TOKEN_ESTIMATE, MESSAGE_OVERHEAD_TOKENS, estimate_message};
use trueforge_llm::{
    AssistantMessage, MediaSource, Message, ModelRequest, TokenizerFamily, ToolCall, ToolDefinition, ToolResult,
    ToolResultPart, UserPart, estimate_request_tokens, estimate_tokens,
};

#[test]
fn tokens_openai_family_uses_the_o200k_tokenizer() {
    // o200k splits this into "hello" and " world"; characters / 4 would say 3.
    assert_eq!(estimate_tokens("hello world", TokenizerFamily::OpenAi), 2);
    assert_eq!(estimate_tokens("", TokenizerFamily::OpenAi), 0);
    // A long run of one word is far cheaper than characters / 4 would suggest.
    let repeated = format!("token{}", " token".repeat(999));
    assert_eq!(estimate_tokens(&repeated, TokenizerFamily::OpenAi), 1000);
    assert_eq!(estimate_tokens(&repeated, TokenizerFamily::Other), 1500);
}

#[test]
fn tokens_other_families_count_characters_over_four_rounded_up() {
    let other = TokenizerFamily::Other;
    assert_eq!(estimate_tokens("", other), 0);
    assert_eq!(estimate_tokens("a", other), 1);
    assert_eq!(estimate_tokens("abcd", other), 1);
    assert_eq!(estimate_tokens("abcde", other), 2);
    // Characters, not bytes: five characters in six bytes, and four emoji in sixteen bytes.
    assert_eq!(estimate_tokens("héllo", other), 2);
    assert_eq!(estimate_tokens("🦀🦀🦀🦀", other), 1);
}

#[test]
fn tokens_family_of_provider_types() {
    assert_eq!(TokenizerFamily::for_provider_type("openai"), TokenizerFamily::OpenAi);
    for other in ["anthropic", "google-gemini", "custom", "together", "OpenAI", ""] {
        assert_eq!(
            TokenizerFamily::for_provider_type(other),
            TokenizerFamily::Other,
            "{other}"
        );
    }
}

#[test]
fn tokens_of_a_whole_request_count_every_part() {
    let other = TokenizerFamily::Other;
    let request = ModelRequest {
        instructions: Some("x".repeat(40)), // 10
        messages: vec![
            Message::User {
                content: vec![
                    UserPart::Text { text: "y".repeat(8) }, // 2
                    UserPart::Image {
                        source: MediaSource::Url {
                            url: "https://example.com/a.png".to_owned(),
                        },
                        detail: None,
                    },
                ],
            },
            Message::Assistant(AssistantMessage {
                text: "z".repeat(4), // 1
                tool_calls: vec![ToolCall {
                    id: "call_1".to_owned(),
                    name: "read".to_owned(),                  // 1
                    arguments: "{\"path\":\"a\"}".to_owned(), // 12 characters: 3
                    provider_data: None,
                }],
                ..AssistantMessage::default()
            }),
            Message::Tool(ToolResult {
                call_id: "call_1".to_owned(),
                name: "read".to_owned(),
                content: vec![ToolResultPart::Text { text: "w".repeat(12) }], // 3
                is_error: false,
            }),
        ],
        tools: vec![ToolDefinition {
            name: "read".to_owned(),               // 1
            description: Some("reads".to_owned()), // 2
            parameters: json!({"type": "object"}), // {"type":"object"} = 17 characters: 5
        }],
        ..ModelRequest::default()
    };
    let expected = 10 + 2 + IMAGE_TOKEN_ESTIMATE + 1 + 1 + 3 + 3 + 1 + 2 + 5 + 3 * MESSAGE_OVERHEAD_TOKENS;
    assert_eq!(estimate_request_tokens(&request, other), expected);
    assert_eq!(estimate_request_tokens(&ModelRequest::default(), other), 0);
    assert!(
        estimate_request_tokens(&request, TokenizerFamily::OpenAi) > IMAGE_TOKEN_ESTIMATE,
        "the OpenAI family counts the same parts"
    );
}

#[test]
fn tokens_of_a_base64_file_follow_its_decoded_size() {
    let file = Message::User {
        content: vec![UserPart::File {
            // 400 base64 characters decode to 300 bytes: 75 tokens.
            source: MediaSource::Base64 {
                media_type: "text/plain".to_owned(),
                data: "A".repeat(400),
            },
            filename: Some("notes.txt".to_owned()),
        }],
    };
    assert_eq!(estimate_message(&file, TokenizerFamily::Other), 75);
}
