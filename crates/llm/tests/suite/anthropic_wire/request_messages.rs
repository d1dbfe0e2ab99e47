//! Request bodies: URL and headers, the system prompt, user parts, assistant replay, tool results.

use super::*;

#[test]
fn anthropic_request_url_and_auth_headers() {
    let wire = AnthropicWire::new();
    let mut endpoint = endpoint();
    endpoint.base_url = "https://gateway.example/anthropic/v1/".to_owned();
    endpoint.headers = vec![("anthropic-beta".to_owned(), "context-1m-2025-08-07".to_owned())];
    let request = wire.build_request(&endpoint, &user_request("hi")).unwrap();
    assert_eq!(wire.api(), WireApi::Anthropic);
    assert_eq!(request.url, "https://gateway.example/anthropic/v1/messages");
    assert_eq!(
        request.headers,
        vec![
            ("x-api-key".to_owned(), "sk-ant-test".to_owned()),
            ("anthropic-version".to_owned(), "2023-06-01".to_owned()),
            ("anthropic-beta".to_owned(), "context-1m-2025-08-07".to_owned()),
        ]
    );
    assert_eq!(API_VERSION, "2023-06-01");

    // The provider type's default base URL (owned by the protocol crate) gives the documented URL.
    endpoint.base_url = WellKnownProviderType::Anthropic.default_base_url().to_owned();
    let default = wire.build_request(&endpoint, &user_request("hi")).unwrap();
    assert_eq!(default.url, "https://api.anthropic.com/v1/messages");
}

#[test]
fn anthropic_request_endpoint_headers_replace_defaults_and_no_key_sends_no_auth() {
    let mut endpoint = endpoint();
    endpoint.api_key = None;
    endpoint.headers = vec![
        ("Anthropic-Version".to_owned(), "2024-01-01".to_owned()),
        ("authorization".to_owned(), "Bearer proxy".to_owned()),
    ];
    let request = AnthropicWire::new()
        .build_request(&endpoint, &user_request("hi"))
        .unwrap();
    assert_eq!(
        request.headers,
        vec![
            ("Anthropic-Version".to_owned(), "2024-01-01".to_owned()),
            ("authorization".to_owned(), "Bearer proxy".to_owned()),
        ]
    );
}

#[test]
fn anthropic_request_text_with_instructions_defaults_and_stream() {
    let request = ModelRequest {
        instructions: Some("You are terse.".to_owned()),
        ..user_request("Say hi")
    };
    let body = body(&request);
    // The snapshot holds the default as a number; this says which number it is.
    assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    insta::assert_json_snapshot!(body);
}

#[test]
fn anthropic_request_user_image_and_file_parts() {
    let pdf = MediaSource::Base64 {
        media_type: "application/pdf".to_owned(),
        data: "JVBERi0xLjQK".to_owned(),
    };
    let request = ModelRequest {
        messages: vec![Message::User {
            content: vec![
                UserPart::Text { text: String::new() },
                UserPart::Text {
                    text: "Compare these".to_owned(),
                },
                UserPart::Image {
                    source: MediaSource::Base64 {
                        media_type: "image/png".to_owned(),
                        data: "iVBORw0KGgo=".to_owned(),
                    },
                    detail: Some("high".to_owned()),
                },
                UserPart::Image {
                    source: MediaSource::Url {
                        url: "https://example.com/cat.jpg".to_owned(),
                    },
                    detail: None,
                },
                UserPart::File {
                    source: pdf,
                    filename: Some("report.pdf".to_owned()),
                },
                UserPart::File {
                    source: MediaSource::Url {
                        url: "https://example.com/paper.pdf".to_owned(),
                    },
                    filename: None,
                },
                UserPart::File {
                    source: MediaSource::Base64 {
                        media_type: "text/plain".to_owned(),
                        data: "bm90ZXMgw6AgbGlyZQ==".to_owned(),
                    },
                    filename: Some("notes.txt".to_owned()),
                },
                UserPart::File {
                    source: MediaSource::Base64 {
                        media_type: "image/jpeg".to_owned(),
                        data: "/9j/4AAQ".to_owned(),
                    },
                    filename: Some("photo.jpg".to_owned()),
                },
            ],
        }],
        ..ModelRequest::default()
    };
    let body = without_caching(&request);
    insta::assert_json_snapshot!(body["messages"]);
}

#[test]
fn anthropic_request_file_of_unsupported_type_or_bad_base64_is_an_error() {
    for (media_type, data) in [
        ("application/zip", "UEsDBA=="),
        ("text/plain", "not base64!"),
        ("text/csv", "//79"),
    ] {
        let request = ModelRequest {
            messages: vec![Message::User {
                content: vec![UserPart::File {
                    source: MediaSource::Base64 {
                        media_type: media_type.to_owned(),
                        data: data.to_owned(),
                    },
                    filename: None,
                }],
            }],
            ..ModelRequest::default()
        };
        let error = AnthropicWire::new().build_request(&endpoint(), &request).unwrap_err();
        assert!(matches!(error, LlmError::InvalidRequest(_)), "{media_type}: {error:?}");
    }
}

fn tool_result(call_id: &str, text: &str, is_error: bool) -> Message {
    Message::Tool(ToolResult {
        call_id: call_id.to_owned(),
        name: "get_weather".to_owned(),
        content: vec![ToolResultPart::Text { text: text.to_owned() }],
        is_error,
    })
}

#[test]
fn anthropic_request_assistant_tool_calls_and_same_origin_reasoning_replayed() {
    let request = ModelRequest {
        messages: vec![
            Message::user_text("Weather?"),
            Message::Assistant(assistant_turn(anthropic_origin())),
        ],
        ..ModelRequest::default()
    };
    let body = without_caching(&request);
    insta::assert_json_snapshot!(body["messages"][1]);
}

#[test]
fn anthropic_request_reasoning_from_other_origin_dropped() {
    let other = Some(Origin {
        provider: WireApi::OpenAiResponses,
        model: "gpt-5".to_owned(),
    });
    for origin in [other, None] {
        let request = ModelRequest {
            messages: vec![
                Message::user_text("Weather?"),
                Message::Assistant(assistant_turn(origin)),
            ],
            ..ModelRequest::default()
        };
        let content = without_caching(&request)["messages"][1]["content"].clone();
        let kinds: Vec<&str> = content
            .as_array()
            .unwrap()
            .iter()
            .map(|block| block["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["text", "tool_use", "tool_use"]);
    }
}

#[test]
fn anthropic_request_tool_results_merged_into_one_user_message_first() {
    let mut first = assistant_turn(anthropic_origin());
    first.reasoning.clear();
    let request = ModelRequest {
        messages: vec![
            Message::user_text("Weather and time?"),
            Message::Assistant(first),
            tool_result("toolu_01", "18°C, sunny", false),
            Message::user_text("Also: be brief."),
            tool_result("call.2:x", "bad arguments", true),
            Message::Tool(ToolResult {
                call_id: "toolu_03".to_owned(),
                name: "snapshot".to_owned(),
                content: vec![
                    ToolResultPart::Text { text: String::new() },
                    ToolResultPart::Image {
                        source: MediaSource::Base64 {
                            media_type: "image/png".to_owned(),
                            data: "iVBORw0KGgo=".to_owned(),
                        },
                    },
                ],
                is_error: false,
            }),
        ],
        ..ModelRequest::default()
    };
    let body = without_caching(&request);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    insta::assert_json_snapshot!(messages[2]);
}

#[test]
fn anthropic_request_empty_messages_dropped_and_neighbours_merged() {
    let request = ModelRequest {
        messages: vec![
            Message::user_text("one"),
            Message::Assistant(AssistantMessage::default()),
            Message::user_text("two"),
        ],
        ..ModelRequest::default()
    };
    assert_eq!(
        without_caching(&request)["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}])
    );
}
