//! HTTP error classification from realistic OpenAI error bodies.

use std::time::Duration;

use serde_json::json;
use trueforge_llm::{LlmError, OpenAiResponses, WireFormat};

fn openai_error(message: &str, kind: &str, code: Option<&str>) -> String {
    json!({ "error": { "message": message, "type": kind, "param": null, "code": code } }).to_string()
}

#[test]
fn responses_error_context_window_exceeded() {
    let body = openai_error(
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "invalid_request_error",
        Some("context_length_exceeded"),
    );
    let error = OpenAiResponses.classify_error(400, None, &body);
    assert!(matches!(error, LlmError::ContextWindowExceeded { ref message } if message.starts_with("Your input")));
}

#[test]
fn responses_error_bad_request_with_provider_message() {
    let cases = [
        (
            400,
            "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'.",
            Some("invalid_value"),
        ),
        (
            404,
            "The model `gpt-9` does not exist or you do not have access to it.",
            Some("model_not_found"),
        ),
        (422, "Unprocessable request.", None),
    ];
    for (status, message, code) in cases {
        let error = OpenAiResponses.classify_error(status, None, &openai_error(message, "invalid_request_error", code));
        assert_eq!(
            error,
            LlmError::BadRequest {
                status,
                message: message.into()
            }
        );
        assert!(!error.is_retryable());
    }
}

#[test]
fn responses_error_authentication() {
    let invalid_key = openai_error(
        "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        Some("invalid_api_key"),
    );
    let region = openai_error(
        "Country, region, or territory not supported",
        "request_forbidden",
        Some("unsupported_country_region_territory"),
    );
    for (status, body) in [(401, invalid_key), (403, region)] {
        let error = OpenAiResponses.classify_error(status, None, &body);
        assert!(
            matches!(error, LlmError::Authentication { ref message } if !message.is_empty()),
            "{error:?}"
        );
    }
}

#[test]
fn responses_error_rate_limited_retry_after_and_quota() {
    let body = openai_error(
        "Rate limit reached for gpt-5.5 in organization org-tf on requests per min (RPM): Limit 500, Used 500, Requested 1.",
        "requests",
        Some("rate_limit_exceeded"),
    );
    let error = OpenAiResponses.classify_error(429, Some(Duration::from_secs(2)), &body);
    assert!(matches!(error, LlmError::RateLimited { ref message, .. } if message.starts_with("Rate limit reached")));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
    assert!(error.is_retryable());

    let quota = openai_error(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        Some("insufficient_quota"),
    );
    let error = OpenAiResponses.classify_error(429, None, &quota);
    assert!(matches!(error, LlmError::BadRequest { status: 429, .. }), "{error:?}");
    assert!(!error.is_retryable());
}

#[test]
fn responses_error_server_retryable() {
    let overloaded = openai_error("The server is overloaded or not ready yet.", "server_error", None);
    let html = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>cloudflare</body>\r\n</html>";
    let cases = [
        (408, openai_error("Request timed out.", "timeout", None)),
        (409, openai_error("Another request is in progress.", "conflict", None)),
        (
            500,
            openai_error(
                "The server had an error while processing your request.",
                "server_error",
                None,
            ),
        ),
        (502, html.to_owned()),
        (503, overloaded),
        (500, String::new()),
    ];
    for (status, body) in cases {
        let error = OpenAiResponses.classify_error(status, Some(Duration::from_secs(5)), &body);
        match &error {
            LlmError::Server {
                status: got,
                message,
                retry_after,
            } => {
                assert_eq!(*got, status);
                assert!(!message.is_empty());
                assert_eq!(*retry_after, Some(Duration::from_secs(5)));
            }
            other => panic!("{status}: expected a server error, got {other:?}"),
        }
        assert!(error.is_retryable());
    }
    let error = OpenAiResponses.classify_error(502, None, html);
    assert!(matches!(error, LlmError::Server { ref message, .. } if message.contains("502 Bad Gateway")));
}

#[test]
fn responses_error_unexpected_status_is_protocol() {
    let error = OpenAiResponses.classify_error(302, None, "moved");
    assert!(
        matches!(error, LlmError::Protocol(ref message) if message.contains("302")),
        "{error:?}"
    );
}
