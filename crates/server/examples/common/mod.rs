//! Helpers the load examples share (`load`, `schedule_latency`).
#![allow(dead_code)]

use serde_json::Value;

/// Sends `body` (none when `Null`) and returns the JSON answer; panics on a failed status, which ends a
/// benchmark run that would otherwise measure errors.
pub async fn send(http: &reqwest::Client, method: reqwest::Method, url: String, body: Value) -> Value {
    let mut request = http.request(method, url);
    if !body.is_null() {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "{status}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// The command line's `--flag value` pairs, in order; panics on a flag without a value.
pub fn flag_pairs() -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut iter = std::env::args().skip(1);
    while let Some(flag) = iter.next() {
        let value = iter.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        pairs.push((flag, value));
    }
    pairs
}
