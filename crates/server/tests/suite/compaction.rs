//! A compaction over HTTP: the `context.compacted` event on the turn's stream and in the stored events of
//! the turn and of the session, as the document describes it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{MODEL, TestServer, first_event};
use serde_json::{Value, json};

use super::openapi::{our_document, validate};

fn user(text: &str) -> Value {
    json!({"input": [{"type": "user.message", "content": text}]})
}

fn compactions(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|event| event["type"] == "context.compacted")
        .collect()
}

#[tokio::test]
async fn a_compaction_is_streamed_and_listed_with_the_turns_events() {
    let server = TestServer::start().await;
    // A threshold every context reaches: the second turn's model call finds three messages to compact.
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL},
                "config": {"context_management": {"compaction": {"compaction_threshold_tokens": 1}}}}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let session_id = body["data"]["id"].as_str().unwrap().to_owned();
    let first = server.stream_turn(&session_id, user("Say hello.")).await;
    assert!(first.iter().all(|(_, event)| event["type"] != "context.compacted"));

    let frames = server.stream_turn(&session_id, user("Say it again.")).await;
    let compacted = first_event(&frames, "context.compacted").clone();
    assert_eq!(compacted["thread_id"], "main", "{compacted}");
    assert_eq!(compacted["method"], "summary", "{compacted}");
    assert_eq!(compacted["replaced_messages"], 3, "{compacted}");
    let summary = compacted["summary"].as_str().unwrap();
    assert!(!summary.is_empty());
    assert!(
        compacted["tokens_after"].as_u64().unwrap() < compacted["tokens_before"].as_u64().unwrap(),
        "{compacted}"
    );
    let (done_at, done) = frames.last().unwrap();
    assert_eq!(done["state"]["status"], "done", "{done}");
    assert_eq!(done["state"]["metrics"]["total_summarizations"], 1, "{done}");
    let turn_id = first_event(&frames, "turn.created")["turn_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let stream_seq = frames
        .iter()
        .find(|(_, event)| event["type"] == "context.compacted")
        .map(|(seq, _)| *seq)
        .unwrap();
    assert!(stream_seq < *done_at);

    let document = our_document();
    let schema = json!({"$ref": "#/components/schemas/ContextCompactedEvent"});
    assert_eq!(validate(&document, &schema, &compacted, "$"), Vec::<String>::new());

    // Stored as streamed, in the turn's events and in the session's.
    let (status, listed) = server
        .get(&format!(
            "/api/v1/sessions/{session_id}/turns/{turn_id}/events?limit=100"
        ))
        .await;
    assert_eq!(status, 200, "{listed}");
    let events: Vec<Value> = listed["data"].as_array().unwrap().clone();
    assert_eq!(compactions(&events), vec![&compacted]);
    let (status, history) = server
        .get(&format!("/api/v1/sessions/{session_id}/events?limit=100"))
        .await;
    assert_eq!(status, 200, "{history}");
    let items: Vec<Value> = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["event"].clone())
        .collect();
    assert_eq!(compactions(&items), vec![&compacted]);
    for (path, body) in [
        ("/api/v1/sessions/{session_id}/turns/{turn_id}/events", &listed),
        ("/api/v1/sessions/{session_id}/events", &history),
    ] {
        let schema = &document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
        assert!(!schema.is_null(), "{path}");
        assert_eq!(validate(&document, schema, body, "$"), Vec::<String>::new(), "{path}");
    }
    server.stop().await;
}
