//! Classification of HTTP errors from realistic Anthropic error bodies.

use super::*;

fn classify(status: u16, body: &str) -> LlmError {
    AnthropicWire::new().classify_error(status, Some(Duration::from_secs(7)), body)
}

fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
        .to_string()
}

#[test]
fn anthropic_error_context_window_exceeded() {
    for message in [
        "prompt is too long: 208310 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 197779 + 21333 > 200000, decrease input length or `max_tokens` and try again",
    ] {
        assert_eq!(
            classify(400, &error_body("invalid_request_error", message)),
            LlmError::ContextWindowExceeded {
                message: message.to_owned()
            }
        );
    }
}

#[test]
fn anthropic_error_bad_request_carries_the_provider_message() {
    let cases = [
        (
            400,
            "invalid_request_error",
            "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
        ),
        (404, "not_found_error", "model: claude-nonexistent"),
        (
            413,
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
        ),
        (422, "invalid_request_error", "max_tokens: Field required"),
        (
            402,
            "billing_error",
            "Your credit balance is too low to access the Anthropic API.",
        ),
    ];
    for (status, kind, message) in cases {
        assert_eq!(
            classify(status, &error_body(kind, message)),
            LlmError::BadRequest {
                status,
                message: message.to_owned()
            }
        );
    }
}

#[test]
fn anthropic_error_authentication() {
    for (status, kind, message) in [
        (401, "authentication_error", "invalid x-api-key"),
        (
            403,
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
    ] {
        let error = classify(status, &error_body(kind, message));
        assert_eq!(
            error,
            LlmError::Authentication {
                message: message.to_owned()
            }
        );
        assert!(!error.is_retryable());
    }
}

#[test]
fn anthropic_error_rate_limited_with_retry_after() {
    let message = "Number of request tokens has exceeded your per-minute rate limit";
    let error = classify(429, &error_body("rate_limit_error", message));
    assert_eq!(
        error,
        LlmError::RateLimited {
            message: message.to_owned(),
            retry_after: Some(Duration::from_secs(7))
        }
    );
    assert!(error.is_retryable());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
}

#[test]
fn anthropic_error_server_classes_are_retryable() {
    let cases = [
        (408, "timeout_error", "Request timed out"),
        (409, "api_error", "Conflict"),
        (500, "api_error", "Internal server error"),
        (503, "api_error", "Service unavailable"),
        (529, "overloaded_error", "Overloaded"),
    ];
    for (status, kind, message) in cases {
        let error = classify(status, &error_body(kind, message));
        assert_eq!(
            error,
            LlmError::Server {
                status,
                message: message.to_owned(),
                retry_after: Some(Duration::from_secs(7))
            }
        );
        assert!(error.is_retryable(), "{status}");
    }
}

#[test]
fn anthropic_error_body_that_is_not_json_still_says_something() {
    let html = "<html><body><h1>502 Bad Gateway</h1></body></html>";
    assert!(matches!(classify(502, html), LlmError::Server { status: 502, message, .. } if message == html));
    assert!(matches!(classify(400, "  "), LlmError::BadRequest { status: 400, message } if message.contains("400")));
    let long = "x".repeat(5_000);
    assert!(matches!(classify(500, &long), LlmError::Server { message, .. } if message.chars().count() < 600));
    // A 400 whose raw body mentions the context limit is still recognised.
    assert!(matches!(
        classify(400, "prompt is too long"),
        LlmError::ContextWindowExceeded { .. }
    ));
}
