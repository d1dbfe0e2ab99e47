//! The HTTP API over a real socket: turns streamed and resumed, the reference benchmark driver's flow,
//! cancel, shutdown, concurrency, and bad input on every body.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{TestServer, parse_frames, types};
use serde_json::{Value, json};

fn user(text: &str) -> Value {
    json!([{"type": "user.message", "content": text}])
}

#[tokio::test]
async fn benchmark_driver_flow_streams_a_turn_and_reads_it_back() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": user("hello #chunks=3"), "previous_turn_id": "none", "stream": true}),
        )
        .await;
    let kinds = types(&frames);
    assert_eq!(kinds.first().map(String::as_str), Some("turn.created"));
    assert_eq!(kinds.last().map(String::as_str), Some("turn.done"));
    assert_eq!(kinds.iter().filter(|kind| *kind == "turn.done").count(), 1);
    assert!(kinds.iter().any(|kind| kind == "model.message.delta"), "{kinds:?}");
    // Ids are 1-based and dense; sequence numbers never appear in the JSON.
    let ids: Vec<u64> = frames.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, (1..=frames.len() as u64).collect::<Vec<_>>());
    assert!(frames.iter().all(|(_, event)| event.get("sequence_number").is_none()));

    let done = &frames.last().unwrap().1;
    assert_eq!(done["state"]["status"], "done");
    assert!(done["state"]["output"]["content"].is_string(), "{done}");
    assert!(
        done["state"]["metrics"]["total_input_tokens"].as_u64().is_some(),
        "{done}"
    );
    let turn_id = frames[0].1["turn_id"].as_str().unwrap().to_owned();
    // The suffix names the executor: `local`, or a hosted replica's id.
    assert!(
        turn_id.ends_with(&format!(".{}", server.state.executor_id)),
        "{turn_id}"
    );

    let (status, turns) = server.get(&format!("/api/v1/sessions/{session_id}/turns")).await;
    assert_eq!(status, 200);
    assert_eq!(turns["data"][0]["id"], turn_id.as_str());
    assert_eq!(turns["pagination"]["limit"], 25);
    let (status, turn) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(turn["data"]["state"]["status"], "done");
    assert_eq!(turn["data"]["input"], user("hello #chunks=3"));

    // The persisted events are the streamed ones without the deltas.
    let (status, events) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}/events"))
        .await;
    assert_eq!(status, 200);
    let stored: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    let streamed: Vec<&str> = kinds
        .iter()
        .map(String::as_str)
        .filter(|kind| *kind != "model.message.delta")
        .collect();
    assert_eq!(stored.first(), Some(&"turn.created"));
    assert_eq!(stored.last(), Some(&"turn.done"));
    // The stream carries a placeholder model.message and the deltas; the store the complete message.
    assert_eq!(stored, streamed);
    server.stop().await;
}

#[tokio::test]
async fn a_non_streamed_turn_answers_running_and_subscribe_follows_it() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("hi #delay=200"), "stream": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["state"]["status"], "running");
    let turn_id = body["data"]["id"].as_str().unwrap();
    let text = server
        .http
        .get(server.url(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let frames = parse_frames(&text);
    assert_eq!(types(&frames).first().map(String::as_str), Some("turn.created"));
    assert_eq!(types(&frames).last().map(String::as_str), Some("turn.done"));
    server.stop().await;
}

#[tokio::test]
async fn resume_after_every_position_returns_exactly_the_remaining_events() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let frames = server
        .stream_turn(&session_id, json!({"input": user("resume me #chunks=4")}))
        .await;
    let turn_id = frames[0].1["turn_id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe");
    for (position, (seq, _)) in frames.iter().enumerate() {
        let expected: Vec<(u64, Value)> = frames[position + 1..].to_vec();
        // By header (the SSE reconnect path) …
        let by_header = server
            .http
            .get(server.url(&format!("{path}?after_sequence_number=0")))
            .header("Last-Event-ID", seq.to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(parse_frames(&by_header), expected, "after id {seq} (header)");
        // … and by query.
        let by_query = server
            .http
            .get(server.url(&format!("{path}?after_sequence_number={seq}")))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(parse_frames(&by_query), expected, "after id {seq} (query)");
    }
    server.stop().await;
}

#[tokio::test]
async fn cancel_ends_the_stream_with_turn_done_cancelled() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("slow #delay=30000"), "stream": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let turn_id = body["data"]["id"].as_str().unwrap().to_owned();
    let subscriber = server.spawn_subscriber(&session_id, &turn_id);
    let (status, body) = server
        .post(&format!("/api/v1/sessions/{session_id}/cancel"), json!({}))
        .await;
    assert_eq!((status, body), (200, json!({})));
    let frames = parse_frames(&subscriber.await.unwrap());
    let done = &frames.last().unwrap().1;
    assert_eq!(done["type"], "turn.done");
    assert_eq!(done["state"]["status"], "cancelled");
    assert_eq!(done["state"]["reason"], "client-cancelled");
    let (_, turn) = server
        .get(&format!("/api/v1/sessions/{session_id}/turns/{turn_id}"))
        .await;
    assert_eq!(turn["data"]["state"]["status"], "cancelled");
    // A second cancel is a no-op.
    let (status, _) = server
        .post(&format!("/api/v1/sessions/{session_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    server.stop().await;
}

#[tokio::test]
async fn shutdown_ends_running_turns_with_turn_done_abandoned() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("slow #delay=30000"), "stream": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let turn_id = body["data"]["id"].as_str().unwrap().to_owned();
    let subscriber = server.spawn_subscriber(&session_id, &turn_id);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    server.stop().await;
    let frames = parse_frames(&subscriber.await.unwrap());
    let done = &frames.last().unwrap().1;
    assert_eq!(done["type"], "turn.done");
    assert_eq!(done["state"]["reason"], "abandoned");
}

#[tokio::test]
async fn fifty_concurrent_streamed_turns_all_finish() {
    let server = TestServer::start().await;
    let mut sessions = Vec::new();
    for _ in 0..50 {
        sessions.push(server.session().await);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for session_id in sessions {
        let http = server.http.clone();
        let url = server.url(&format!("/api/v1/sessions/{session_id}/turns"));
        tasks.spawn(async move {
            let text = http
                .post(url)
                .json(&json!({"input": [{"type": "user.message", "content": "go #chunks=5"}]}))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            parse_frames(&text)
        });
    }
    let mut finished = 0;
    while let Some(frames) = tasks.join_next().await {
        let frames = frames.unwrap();
        assert_eq!(frames.last().unwrap().1["state"]["status"], "done");
        finished += 1;
    }
    assert_eq!(finished, 50);
    server.stop().await;
}

#[tokio::test]
async fn resume_after_the_live_stream_is_gone_reads_the_store() {
    let server = TestServer::start_with(|config| {
        config.stream_ttl_after_end = std::time::Duration::from_millis(200);
    })
    .await;
    let session_id = server.session().await;
    // A little slow: the turn must still run when the response's stream subscribes, or (its stream ending
    // within 200 ms) the response itself would read the store and get no deltas.
    let frames = server
        .stream_turn(&session_id, json!({"input": user("gone #chunks=4 #delay=30")}))
        .await;
    let turn_id = frames[0].1["turn_id"].as_str().unwrap().to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let text = server
        .http
        .get(server.url(&format!(
            "/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe?after_sequence_number=1"
        )))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let replay = parse_frames(&text);
    // No deltas any more: the stored events after the cursor, the complete message included, then turn.done.
    assert_eq!(types(&replay), ["model.message", "turn.done"]);
    assert_eq!(replay[0].1["content"], "This is a fake answer.");
    // The stored message has the number of its last delta, so the ids stay those of the live stream.
    let last_delta = frames
        .iter()
        .rev()
        .find(|(_, event)| event["type"] == "model.message.delta")
        .unwrap()
        .0;
    assert_eq!(replay[0].0, last_delta);
    assert_eq!(replay[1].0, frames.last().unwrap().0);
    server.stop().await;
}

#[tokio::test]
async fn a_client_disconnect_does_not_cancel_the_turn() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let mut response = server
        .http
        .post(server.url(&format!("/api/v1/sessions/{session_id}/turns")))
        .json(&json!({"input": user("slow #delay=150")}))
        .send()
        .await
        .unwrap();
    // Read the first frame (turn.created), then hang up.
    let first = response.chunk().await.unwrap().unwrap();
    let frames = parse_frames(std::str::from_utf8(&first).unwrap());
    let turn_id = frames[0].1["turn_id"].as_str().unwrap().to_owned();
    drop(response);
    let path = format!("/api/v1/sessions/{session_id}/turns/{turn_id}");
    let started = std::time::Instant::now();
    loop {
        let (_, turn) = server.get(&path).await;
        if turn["data"]["state"]["status"] != "running" {
            assert_eq!(turn["data"]["state"]["status"], "done");
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the turn never ended"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn an_idle_stream_carries_ping_comments() {
    let server = TestServer::start_with(|config| config.heartbeat = std::time::Duration::from_millis(200)).await;
    let session_id = server.session().await;
    let text = server
        .http
        .post(server.url(&format!("/api/v1/sessions/{session_id}/turns")))
        .json(&json!({"input": user("slow #delay=400")}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("\n: ping\n\n") || text.starts_with(": ping\n\n"),
        "{text}"
    );
    // The pings are comments: the frames parse as before and end with turn.done.
    assert_eq!(
        types(&parse_frames(&text)).last().map(String::as_str),
        Some("turn.done")
    );
    server.stop().await;
}

#[tokio::test]
async fn a_provider_key_in_the_environment_configures_that_provider() {
    let server = TestServer::start_with(|config| {
        config.provider_keys.anthropic = Some("sk-ant-test-1234567890".to_owned());
    })
    .await;
    let (status, models) = server.get("/api/v1/models").await;
    assert_eq!(status, 200);
    let names: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|model| model["name"].as_str().unwrap())
        .collect();
    assert!(names.iter().any(|name| name.starts_with("anthropic/")), "{names:?}");
    let (_, providers) = server.get("/api/v1/settings/model-providers").await;
    let anthropic = providers["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|provider| provider["name"] == "anthropic")
        .unwrap();
    assert_eq!(anthropic["manifest"]["auth"]["api_key"], "***REDACTED***-7890");
    server.stop().await;
}

#[tokio::test]
async fn a_turn_frozen_by_the_next_turn_ends_its_stream_after_its_deltas() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user("slow #chunks=8 #delay=250"), "stream": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let first_turn = body["data"]["id"].as_str().unwrap().to_owned();
    let subscriber = server.spawn_subscriber(&session_id, &first_turn);
    // Let a few deltas stream (numbers above the stored events), then start the next turn.
    tokio::time::sleep(std::time::Duration::from_millis(900)).await;
    let frames = server.stream_turn(&session_id, json!({"input": user("next")})).await;
    assert_eq!(types(&frames).last().map(String::as_str), Some("turn.done"));
    let text = tokio::time::timeout(std::time::Duration::from_secs(10), subscriber)
        .await
        .expect("the frozen turn's stream ends")
        .unwrap();
    let first = parse_frames(&text);
    assert!(types(&first).iter().any(|kind| kind == "model.message.delta"), "{text}");
    let done = &first.last().unwrap();
    assert_eq!(done.1["type"], "turn.done", "{text}");
    assert_eq!(done.1["state"]["reason"], "cancelled-for-next-turn");
    let ids: Vec<u64> = first.iter().map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_new_turns_stream_outlives_the_subscribe_timeout() {
    // Reference clients do not reconnect the POST stream, so it must last as long as the turn.
    let server =
        TestServer::start_with(|config| config.subscribe_timeout = std::time::Duration::from_millis(300)).await;
    let session_id = server.session().await;
    let frames = server
        .stream_turn(&session_id, json!({"input": user("slowly #chunks=6 #delay=150")}))
        .await;
    assert_eq!(types(&frames).last().map(String::as_str), Some("turn.done"));
    server.stop().await;
}
