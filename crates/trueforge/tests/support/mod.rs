//! What the process tests share: ports, waiting for a server, JSON requests, SSE frames.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::Value;

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub async fn wait_healthy(http: &reqwest::Client, base: &str) {
    let started = Instant::now();
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "the server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn send(http: &reqwest::Client, method: reqwest::Method, url: String, body: Value) -> Value {
    let response = http.request(method, url).json(&body).send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "{status}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// One SSE frame: its `id` (the event's sequence number) and its event.
#[derive(Debug, Clone)]
pub struct Frame {
    pub seq: u64,
    pub event: Value,
    /// When it arrived.
    pub at: Instant,
}

/// Reads SSE frames from `response` until `enough` says stop or the stream ends.
pub async fn read_frames(mut response: reqwest::Response, mut enough: impl FnMut(&[Frame]) -> bool) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut buffer = String::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let at = Instant::now();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let seq = block.lines().find_map(|line| line.strip_prefix("id: "));
            let data = block.lines().find_map(|line| line.strip_prefix("data: "));
            if let (Some(seq), Some(data)) = (seq, data) {
                frames.push(Frame {
                    seq: seq.trim().parse().unwrap(),
                    event: serde_json::from_str(data).unwrap(),
                    at,
                });
            }
            if enough(&frames) {
                return frames;
            }
        }
    }
    frames
}
