//! Errors: requests the adapter refuses to build, and the classification of HTTP errors.

use std::time::Duration;

use trueforge_llm::{
    ChatCompletions, LlmError, MediaSource, Message, ModelRequest, SamplingParams, UserPart, WireFormat,
};

use super::endpoint;
use crate::wire_support::user_request;

// ---------------------------------------------------------------------------------------------------
// Requests the adapter refuses to build

#[test]
fn chat_request_file_by_url_is_an_invalid_request_error() {
    let request = ModelRequest {
        messages: vec![Message::User {
            content: vec![UserPart::File {
                source: MediaSource::Url {
                    url: "https://example.com/a.pdf".into(),
                },
                filename: None,
            }],
        }],
        ..ModelRequest::default()
    };
    let error = ChatCompletions.build_request(&endpoint(), &request).unwrap_err();
    assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
}

#[test]
fn chat_request_non_finite_temperature_is_an_invalid_request_error() {
    let request = ModelRequest {
        params: SamplingParams {
            temperature: Some(f64::NAN),
            ..SamplingParams::default()
        },
        ..user_request("hi")
    };
    let error = ChatCompletions.build_request(&endpoint(), &request).unwrap_err();
    assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
}

// ---------------------------------------------------------------------------------------------------
// HTTP error classification

fn classify(status: u16, body: &str) -> LlmError {
    ChatCompletions.classify_error(status, None, body)
}

#[test]
fn chat_error_context_window_from_openai_vllm_and_llamacpp() {
    let bodies = [
        (
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        (
            400,
            r#"{"object":"error","message":"This model's maximum context length is 6048 tokens. However, you requested 6616 tokens (568 in the messages, 6048 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
        ),
        (
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}"#,
        ),
        (
            500,
            r#"{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}}"#,
        ),
    ];
    for (status, body) in bodies {
        let error = classify(status, body);
        assert!(
            matches!(error, LlmError::ContextWindowExceeded { .. }),
            "{body} gave {error:?}"
        );
        assert!(!error.is_retryable());
    }
}

#[test]
fn chat_error_bad_request_carries_the_providers_message() {
    let cases = [
        (
            400,
            r#"{"error":{"message":"Invalid value for 'tool_choice': 'maybe'.","type":"invalid_request_error","param":"tool_choice","code":null}}"#,
            "Invalid value for 'tool_choice': 'maybe'.",
        ),
        (
            404,
            r#"{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#,
            "model \"llama9\" not found, try pulling it first",
        ),
        (
            422,
            r#"{"detail":"Field required: messages"}"#,
            "Field required: messages",
        ),
    ];
    for (status, body, message) in cases {
        assert_eq!(
            classify(status, body),
            LlmError::BadRequest {
                status,
                message: message.into()
            }
        );
    }
}

#[test]
fn chat_error_authentication_on_401_and_403() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    for status in [401, 403] {
        let error = classify(status, body);
        assert!(matches!(error, LlmError::Authentication { ref message } if message.starts_with("Incorrect API key")));
    }
}

#[test]
fn chat_error_rate_limited_keeps_retry_after_but_quota_is_not_retryable() {
    let body = r#"{"error":{"message":"Rate limit reached for gpt-4o-mini on tokens per min (TPM): Limit 200000, Used 199000, Requested 1500.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
    let error = ChatCompletions.classify_error(429, Some(Duration::from_secs(7)), body);
    assert!(matches!(error, LlmError::RateLimited { .. }), "{error:?}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
    assert!(error.is_retryable());

    let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let error = classify(429, quota);
    assert!(matches!(error, LlmError::BadRequest { status: 429, .. }), "{error:?}");
    assert!(!error.is_retryable());
}

#[test]
fn chat_error_server_class_is_retryable() {
    let cases = [
        (
            408,
            r#"{"error":{"message":"Request timed out.","type":"timeout","code":null}}"#,
        ),
        (409, r#"{"error":{"message":"Conflict","type":"conflict","code":null}}"#),
        (
            500,
            r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#,
        ),
        (
            503,
            r#"{"error":{"message":"server busy, please try again.  maximum pending requests exceeded","type":"api_error"}}"#,
        ),
        (529, r#"{"error":{"message":"Overloaded","type":"overloaded_error"}}"#),
        (
            400,
            r#"{"error":{"message":"The engine is currently overloaded","type":"overloaded_error"}}"#,
        ),
    ];
    for (status, body) in cases {
        let error = ChatCompletions.classify_error(status, Some(Duration::from_secs(1)), body);
        assert!(
            matches!(error, LlmError::Server { status: s, .. } if s == status),
            "{body} gave {error:?}"
        );
        assert!(error.is_retryable());
        assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
    }
}

#[test]
fn chat_error_non_json_or_empty_body_still_gives_a_message() {
    assert_eq!(
        classify(502, "<html>Bad Gateway</html>"),
        LlmError::Server {
            status: 502,
            message: "<html>Bad Gateway</html>".into(),
            retry_after: None
        }
    );
    let error = classify(400, "");
    assert!(matches!(error, LlmError::BadRequest { status: 400, ref message } if message.contains("400")));
}
