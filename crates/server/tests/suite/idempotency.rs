//! `Idempotency-Key` on `POST /api/v1/sessions/{id}/turns`, over the socket: a retry starts nothing and gets
//! the turn the key created (its stream from the start or `Last-Event-ID`, or the turn as JSON), a retry
//! while the turn runs leaves it running, concurrent retries start one turn, the key with another body is a
//! 422 and a malformed key a 400.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::{TestServer, parse_frames, types};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

const KEY: &str = "6f1c2e0a-3b7d-4c9e-8a51-0d2f4b6e8c13";

fn user(text: &str) -> Value {
    json!([{"type": "user.message", "content": text}])
}

fn with_key(key: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("idempotency-key", HeaderValue::from_str(key).unwrap());
    headers
}

/// Posts a turn with extra headers; returns the status, the content type and the body text.
async fn post_turn(server: &TestServer, session_id: &str, headers: HeaderMap, body: &Value) -> (u16, String, String) {
    let response = server
        .http
        .post(server.url(&format!("/api/v1/sessions/{session_id}/turns")))
        .headers(headers)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, content_type, response.text().await.unwrap())
}

/// The frames of a streamed answer, which must be a 200 event stream.
fn frames_of((status, content_type, text): (u16, String, String)) -> Vec<(u64, Value)> {
    assert_eq!(status, 200, "{text}");
    assert_eq!(content_type, "text/event-stream", "{text}");
    parse_frames(&text)
}

fn json_of((status, _, text): (u16, String, String)) -> (u16, Value) {
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn turn_id(frames: &[(u64, Value)]) -> String {
    assert_eq!(frames[0].1["type"], "turn.created", "{frames:?}");
    frames[0].1["turn_id"].as_str().unwrap().to_owned()
}

fn ids_and_types(frames: &[(u64, Value)]) -> Vec<(u64, String)> {
    frames.iter().map(|(id, _)| *id).zip(types(frames)).collect()
}

async fn turn_ids(server: &TestServer, session_id: &str) -> Vec<String> {
    let (status, turns) = server.get(&format!("/api/v1/sessions/{session_id}/turns")).await;
    assert_eq!(status, 200, "{turns}");
    turns["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| turn["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn subscribe(server: &TestServer, session_id: &str, turn_id: &str) -> Vec<(u64, Value)> {
    let text = server
        .http
        .get(server.url(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    parse_frames(&text)
}

#[tokio::test]
async fn a_retried_post_streams_the_turn_it_created_and_starts_nothing() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let body = json!({"input": user("hello #chunks=3")});
    let first = frames_of(post_turn(&server, &session_id, with_key(KEY), &body).await);
    let turn = turn_id(&first);
    assert_eq!(types(&first).last().map(String::as_str), Some("turn.done"));
    let model_requests = server.fake.requests().len();

    let retry = frames_of(post_turn(&server, &session_id, with_key(KEY), &body).await);
    assert_eq!(turn_id(&retry), turn, "the retry streams the same turn");
    assert_eq!(
        ids_and_types(&retry),
        ids_and_types(&first),
        "from its start, deltas included"
    );
    assert_eq!(
        ids_and_types(&retry),
        ids_and_types(&subscribe(&server, &session_id, &turn).await),
        "what subscribing gives"
    );

    // A reconnecting client's cursor is honoured.
    let mut resumed = with_key(KEY);
    resumed.insert("last-event-id", HeaderValue::from_static("2"));
    let rest = frames_of(post_turn(&server, &session_id, resumed, &body).await);
    assert_eq!(ids_and_types(&rest), ids_and_types(&first)[2..].to_vec());

    // `stream` is not part of the request's identity: the retry may ask for the turn as JSON.
    let (status, answer) = json_of(
        post_turn(
            &server,
            &session_id,
            with_key(KEY),
            &json!({"input": user("hello #chunks=3"), "stream": false}),
        )
        .await,
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["id"], turn.as_str());
    assert_eq!(answer["data"]["state"]["status"], "done");

    assert_eq!(turn_ids(&server, &session_id).await, [turn]);
    assert_eq!(
        server.fake.requests().len(),
        model_requests,
        "the model saw one turn only"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_retry_while_the_turn_runs_does_not_cancel_it() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let body = json!({"input": user("slow #chunks=4 #delay=200"), "stream": false});
    let (status, first) = json_of(post_turn(&server, &session_id, with_key(KEY), &body).await);
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["data"]["state"]["status"], "running");
    let turn = first["data"]["id"].as_str().unwrap().to_owned();

    // The same answer as the first: the turn as it now is, still running.
    let (status, retry) = json_of(post_turn(&server, &session_id, with_key(KEY), &body).await);
    assert_eq!(status, 200, "{retry}");
    assert_eq!(retry["data"]["id"], turn.as_str());
    assert_eq!(retry["data"]["state"]["status"], "running");

    // A streamed retry follows it live to its own end.
    let streamed = frames_of(
        post_turn(
            &server,
            &session_id,
            with_key(KEY),
            &json!({"input": user("slow #chunks=4 #delay=200")}),
        )
        .await,
    );
    assert_eq!(turn_id(&streamed), turn);
    let done = &streamed.last().unwrap().1;
    assert_eq!(done["type"], "turn.done");
    assert_eq!(done["state"]["status"], "done", "not cancelled for a next turn: {done}");
    assert_eq!(turn_ids(&server, &session_id).await, [turn]);
    let requests = server.fake.requests();
    assert!(
        requests
            .iter()
            .all(|request| request.body.to_string().contains("slow #chunks=4")),
        "the model saw this turn only"
    );
    assert_eq!(requests.len(), 1, "one answer, asked once");
    server.stop().await;
}

#[tokio::test]
async fn concurrent_posts_with_one_key_start_one_turn() {
    const POSTS: usize = 4;
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let body = json!({"input": user("hello #chunks=3 #delay=50")});
    let answers = futures::future::join_all((0..POSTS).map(|_| {
        tokio::time::timeout(
            Duration::from_secs(30),
            post_turn(&server, &session_id, with_key(KEY), &body),
        )
    }))
    .await;
    let streams: Vec<Vec<(u64, Value)>> = answers
        .into_iter()
        .map(|answer| frames_of(answer.expect("every answer ends")))
        .collect();
    let turn = turn_id(&streams[0]);
    for frames in &streams {
        assert_eq!(turn_id(frames), turn, "every answer is the one turn");
        assert_eq!(frames.last().unwrap().1["type"], "turn.done");
        assert_eq!(frames.last().unwrap().1["state"]["status"], "done");
    }
    assert_eq!(turn_ids(&server, &session_id).await, [turn]);
    assert_eq!(server.fake.requests().len(), 1, "the model was asked once");
    server.stop().await;
}

#[tokio::test]
async fn the_key_with_another_body_is_refused_and_other_sessions_are_independent() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let first = frames_of(post_turn(&server, &session_id, with_key(KEY), &json!({"input": user("hello")})).await);
    let turn = turn_id(&first);
    for other in [
        json!({"input": user("goodbye")}),
        json!({"input": user("hello"), "previous_turn_id": "none"}),
    ] {
        let (status, body) = json_of(post_turn(&server, &session_id, with_key(KEY), &other).await);
        assert_eq!(status, 422, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("Idempotency-Key"), "{message}");
        assert!(message.contains("different request"), "{message}");
    }
    assert_eq!(turn_ids(&server, &session_id).await, std::slice::from_ref(&turn));

    let other_session = server.session().await;
    let there = frames_of(
        post_turn(
            &server,
            &other_session,
            with_key(KEY),
            &json!({"input": user("goodbye")}),
        )
        .await,
    );
    assert_ne!(turn_id(&there), turn);
    assert_eq!(turn_ids(&server, &other_session).await.len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_malformed_key_is_a_bad_request_and_starts_nothing() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let body = json!({"input": user("hello")});
    let mut malformed: Vec<HeaderMap> = ["", "has space", &"k".repeat(256)]
        .into_iter()
        .map(|key| {
            let mut headers = HeaderMap::new();
            headers.insert("idempotency-key", HeaderValue::from_str(key).unwrap());
            headers
        })
        .collect();
    let mut not_ascii = HeaderMap::new();
    not_ascii.insert("idempotency-key", HeaderValue::from_bytes("clé".as_bytes()).unwrap());
    malformed.push(not_ascii);
    let mut twice = with_key("one");
    twice.append("idempotency-key", HeaderValue::from_static("two"));
    malformed.push(twice);
    // A retry's cursor is checked with the key, before anything runs.
    let mut bad_cursor = with_key(KEY);
    bad_cursor.insert("last-event-id", HeaderValue::from_static("three"));
    malformed.push(bad_cursor);
    for headers in malformed {
        let (status, answer) = json_of(post_turn(&server, &session_id, headers.clone(), &body).await);
        assert_eq!(status, 400, "{headers:?}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("Idempotency-Key") || message.contains("Last-Event-Id"),
            "{message}"
        );
    }
    assert!(turn_ids(&server, &session_id).await.is_empty());
    // The longest key is fine.
    let longest = frames_of(post_turn(&server, &session_id, with_key(&"k".repeat(255)), &body).await);
    assert_eq!(types(&longest).last().map(String::as_str), Some("turn.done"));
    server.stop().await;
}
