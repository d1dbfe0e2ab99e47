//! Classifying Gemini HTTP errors from the error bodies Google's APIs return.

use std::time::Duration;

use trueforge_llm::{GeminiWire, LlmError, WireFormat};

fn classify(status: u16, body: &str) -> LlmError {
    GeminiWire.classify_error(status, None, body)
}

fn google_error(code: u16, status: &str, message: &str) -> String {
    serde_json::json!({"error": {"code": code, "message": message, "status": status}}).to_string()
}

#[test]
fn gemini_error_context_window_exceeded() {
    let body = google_error(
        400,
        "INVALID_ARGUMENT",
        "The input token count (1148576) exceeds the maximum number of tokens allowed (1048576).",
    );
    assert_eq!(
        classify(400, &body),
        LlmError::ContextWindowExceeded {
            message: "The input token count (1148576) exceeds the maximum number of tokens allowed (1048576).".into()
        }
    );
}

#[test]
fn gemini_error_bad_request_keeps_gemini_message() {
    let output_range = google_error(
        400,
        "INVALID_ARGUMENT",
        "Unable to submit request because it has a maxOutputTokens value of 200000 but the supported range is \
         from 1 (inclusive) to 65537 (exclusive). Update the value and try again.",
    );
    assert!(matches!(
        classify(400, &output_range),
        LlmError::BadRequest { status: 400, message } if message.starts_with("Unable to submit request")
    ));
    let unknown_model = google_error(
        404,
        "NOT_FOUND",
        "models/gemini-9-ultra is not found for API version v1beta, or is not supported for generateContent.",
    );
    assert!(matches!(
        classify(404, &unknown_model),
        LlmError::BadRequest { status: 404, message } if message.contains("gemini-9-ultra")
    ));
    let location = google_error(
        400,
        "FAILED_PRECONDITION",
        "User location is not supported for the API use.",
    );
    assert_eq!(
        classify(400, &location),
        LlmError::BadRequest {
            status: 400,
            message: "User location is not supported for the API use.".into()
        }
    );
    assert!(matches!(classify(422, "{}"), LlmError::BadRequest { status: 422, .. }));
}

#[test]
fn gemini_error_authentication() {
    let bad_key = r#"{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID", "domain": "googleapis.com",
        "metadata": {"service": "generativelanguage.googleapis.com"}}]}}"#;
    assert_eq!(
        classify(400, bad_key),
        LlmError::Authentication {
            message: "API key not valid. Please pass a valid API key.".into()
        }
    );
    let denied = google_error(
        403,
        "PERMISSION_DENIED",
        "Method doesn't allow unregistered callers (callers without established identity).",
    );
    assert!(matches!(classify(403, &denied), LlmError::Authentication { .. }));
    let unauthenticated = google_error(
        401,
        "UNAUTHENTICATED",
        "Request had invalid authentication credentials.",
    );
    assert!(matches!(
        classify(401, &unauthenticated),
        LlmError::Authentication { .. }
    ));
}

#[test]
fn gemini_error_rate_limited_with_retry_after() {
    let body = google_error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
    );
    let error = GeminiWire.classify_error(429, Some(Duration::from_secs(7)), &body);
    assert!(matches!(&error, LlmError::RateLimited { message, .. } if message.starts_with("You exceeded")));
    assert!(error.is_retryable());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
}

#[test]
fn gemini_error_rate_limited_uses_retry_info_when_no_retry_after() {
    let body = r#"[{"error": {"code": 429, "message": "Quota exceeded for metric: generate_content_free_tier_requests",
        "status": "RESOURCE_EXHAUSTED", "details": [
          {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "x"}]},
          {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17.5s"}]}}]"#;
    let error = classify(429, body);
    assert!(matches!(error, LlmError::RateLimited { .. }));
    assert_eq!(error.retry_after(), Some(Duration::from_millis(17_500)));
}

#[test]
fn gemini_error_server_and_overloaded_are_retryable() {
    let overloaded = google_error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.");
    let internal = google_error(
        500,
        "INTERNAL",
        "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    );
    let deadline = google_error(
        504,
        "DEADLINE_EXCEEDED",
        "Deadline expired before operation could complete.",
    );
    for (status, body) in [
        (503, overloaded.as_str()),
        (500, internal.as_str()),
        (504, deadline.as_str()),
        (408, ""),
        (409, "{}"),
        (502, "<html><body>Bad Gateway</body></html>"),
    ] {
        let error = GeminiWire.classify_error(status, Some(Duration::from_secs(2)), body);
        assert!(
            matches!(&error, LlmError::Server { status: got, retry_after: Some(_), .. } if *got == status),
            "{status}: {error:?}"
        );
        assert!(error.is_retryable());
    }
}

#[test]
fn gemini_error_bodies_that_are_not_gemini_json() {
    assert_eq!(
        classify(502, "<html><body>Bad Gateway</body></html>"),
        LlmError::Server {
            status: 502,
            message: "<html><body>Bad Gateway</body></html>".into(),
            retry_after: None
        }
    );
    assert_eq!(
        classify(400, "   "),
        LlmError::BadRequest {
            status: 400,
            message: "HTTP 400 with an empty body".into()
        }
    );
    let long = "x".repeat(2000);
    let LlmError::BadRequest { message, .. } = classify(400, &long) else {
        panic!("expected a bad request");
    };
    assert!(message.chars().count() < 600);
}
