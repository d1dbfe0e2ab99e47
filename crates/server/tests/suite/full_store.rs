//! A full disk over a real socket: a turn whose answer cannot be stored ends with a `turn.done` error, a
//! store that cannot write answers `/readyz` with 503 and the reason, and once space is back (no restart)
//! health is 200 again and a new turn runs. The disk is made "full" with SQLite's `max_page_count` on the
//! server's own database.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::{TestServer, types};
use serde_json::{Value, json};
use trueforge_testkit::fake_llm::ScriptedStream;

fn user(text: &str) -> Value {
    json!([{"type": "user.message", "content": text}])
}

/// `bytes` of text that does not repeat a word, so storing it really takes that many bytes.
fn filler(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 16);
    let mut word: u64 = 7;
    while text.len() < bytes {
        text.push_str(&format!("w{word:x} "));
        word = word.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) >> 7;
    }
    text
}

/// Streams a turn, failing the test instead of hanging when its stream does not end.
async fn stream_turn_to_end(server: &TestServer, session_id: &str, input: Value) -> Vec<(u64, Value)> {
    tokio::time::timeout(
        Duration::from_secs(60),
        server.stream_turn(session_id, json!({"input": input})),
    )
    .await
    .expect("the turn's stream ends")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_store_ends_turns_with_an_error_fails_health_and_recovers_without_a_restart() {
    let server = TestServer::start().await;
    let db = server
        .state
        .database
        .sqlite()
        .expect("local mode runs on SQLite")
        .clone();
    let session_id = server.session().await;
    let frames = stream_turn_to_end(&server, &session_id, user("hello")).await;
    assert_eq!(
        frames.last().unwrap().1["state"]["status"],
        "done",
        "{:?}",
        types(&frames)
    );

    // Room for a turn to start, none for its long answer: the turn ends with an error saying why.
    let pages = server_pages(&db).await;
    db.set_max_page_count(pages + 32).await.unwrap();
    server.fake.push(ScriptedStream::text(filler(512 * 1024)).chunks(64));
    let frames = stream_turn_to_end(&server, &session_id, user("write a lot")).await;
    let (_, done) = frames.last().unwrap();
    assert_eq!(done["type"], "turn.done", "{:?}", types(&frames));
    assert_eq!(done["state"]["status"], "error", "{done}");
    let message = done["state"]["message"].as_str().unwrap();
    assert!(
        message.contains("could not be stored") && message.contains("full"),
        "{message}"
    );
    let failed_turn = frames.first().unwrap().1["turn_id"].as_str().unwrap().to_owned();

    // No page left at all: a write that needs one fails, and health reports the store cannot write.
    db.set_max_page_count(1).await.unwrap();
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": user(&filler(64 * 1024)), "stream": false}),
        )
        .await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("cannot store data"),
        "{body}"
    );
    let (status, health) = server.get("/readyz").await;
    assert_eq!(status, 503, "{health}");
    assert_eq!(health["database"]["status"], "unavailable", "{health}");
    assert!(
        health["database"]["reason"].as_str().unwrap().contains("full"),
        "{health}"
    );

    // Space is back: the same server is healthy again and runs turns.
    db.set_max_page_count(1 << 30).await.unwrap();
    let (status, health) = server.get("/readyz").await;
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["database"]["status"], "ok", "{health}");
    let frames = stream_turn_to_end(&server, &session_id, user("hello again")).await;
    assert_eq!(
        frames.last().unwrap().1["state"]["status"],
        "done",
        "{:?}",
        types(&frames)
    );

    // The failed turn's end is in the store as it was streamed (stored at once, or once the store wrote
    // again).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, turn) = server
            .get(&format!("/api/v1/sessions/{session_id}/turns/{failed_turn}"))
            .await;
        assert_eq!(status, 200, "{turn}");
        if turn["data"]["state"]["status"] == "error" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the failed turn's end was never stored: {turn}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.stop().await;
}

/// The database's size in pages: capping it at 1 page caps it at its current size and says what that is.
async fn server_pages(db: &trueforge_store::db::SqliteDb) -> u64 {
    let pages = db.set_max_page_count(1).await.unwrap();
    assert!(pages > 1, "{pages}");
    pages
}
