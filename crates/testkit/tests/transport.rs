//! What every format shares: cut and aborted streams, client disconnects, latency, queues, request
//! recording and refused requests. Each behaviour runs once per wire format.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{ask, body, events, has_end_marker, model, post, post_raw, settled_outcome, url};
use serde_json::{Value, json};
use trueforge_testkit::fake_llm::{Api, FakeLlm, Outcome, RequestLog, ScriptedError, ScriptedStream};

macro_rules! per_format {
    ($check:ident: $($name:ident => $api:expr),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                $check($api).await;
            }
        )+
    };
}

async fn cut_stream_ends_cleanly_without_the_end_marker(api: Api) {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("abcdef").chunks(3).cut_after(1));
    server.push(ScriptedStream::text("abcdef").chunks(3).cut_after(10_000));

    let short = ask(&server, api, "hi").await;
    let long = ask(&server, api, "hi").await;

    assert_eq!(short.status, 200);
    assert_eq!(events(api, &short.body).len(), 1, "{}", short.body);
    assert!(!has_end_marker(api, &short.body));
    assert!(
        !has_end_marker(api, &long.body),
        "a cut never sends the end marker: {}",
        long.body
    );
    assert!(events(api, &long.body).len() > 1, "{}", long.body);
    assert_eq!(settled_outcome(&server, 1).await, Outcome::CutShort);
}

per_format!(cut_stream_ends_cleanly_without_the_end_marker:
    chat_cut_stream_has_no_done_marker => Api::Chat,
    responses_cut_stream_has_no_completed_event => Api::Responses,
    anthropic_cut_stream_has_no_message_stop => Api::Anthropic,
    gemini_cut_stream_has_no_finish_reason => Api::Gemini,
);

async fn abort_drops_the_connection_mid_body(api: Api) {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("abcdef").chunks(3).abort_after(1));

    let response = reqwest::Client::new()
        .post(url(&server, api, model(api)))
        .json(&body(api, "hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let read = response.text().await;

    assert!(read.is_err(), "the body must fail, got {read:?}");
    assert_eq!(settled_outcome(&server, 1).await, Outcome::Aborted);
}

per_format!(abort_drops_the_connection_mid_body:
    chat_abort_fails_the_body_read => Api::Chat,
    responses_abort_fails_the_body_read => Api::Responses,
    anthropic_abort_fails_the_body_read => Api::Anthropic,
    gemini_abort_fails_the_body_read => Api::Gemini,
);

async fn client_going_away_is_recorded(api: Api) {
    let server = FakeLlm::start().await;
    server.push(
        ScriptedStream::text("a slow answer in many chunks")
            .chunks(20)
            .delays(0, 50),
    );

    let mut response = reqwest::Client::new()
        .post(url(&server, api, model(api)))
        .json(&body(api, "hi"))
        .send()
        .await
        .unwrap();
    let first = response.chunk().await.unwrap();
    assert!(first.is_some());
    assert_eq!(server.requests()[0].outcome, Outcome::Streaming);
    drop(response);

    assert_eq!(settled_outcome(&server, 1).await, Outcome::ClientDisconnected);
}

per_format!(client_going_away_is_recorded:
    chat_cancel_mid_stream_is_seen_as_a_disconnect => Api::Chat,
    responses_cancel_mid_stream_is_seen_as_a_disconnect => Api::Responses,
    anthropic_cancel_mid_stream_is_seen_as_a_disconnect => Api::Anthropic,
    gemini_cancel_mid_stream_is_seen_as_a_disconnect => Api::Gemini,
);

#[tokio::test]
async fn anthropic_cancel_before_the_first_byte_is_seen_as_a_disconnect() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("late").delays(5_000, 0));

    let sent = reqwest::Client::new()
        .post(url(&server, Api::Anthropic, "claude-test"))
        .json(&body(Api::Anthropic, "hi"))
        .timeout(Duration::from_millis(200))
        .send()
        .await;

    assert!(sent.is_err());
    assert_eq!(settled_outcome(&server, 1).await, Outcome::ClientDisconnected);
}

async fn latency_delays_the_first_byte_and_every_event(api: Api) {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("abc").chunks(3).delays(150, 40));

    let started = Instant::now();
    let response = reqwest::Client::new()
        .post(url(&server, api, model(api)))
        .json(&body(api, "hi"))
        .send()
        .await
        .unwrap();
    let headers_after = started.elapsed();
    let body = response.text().await.unwrap();
    let body_after = started.elapsed();

    assert!(headers_after >= Duration::from_millis(150), "{headers_after:?}");
    let gaps = events(api, &body).len() as u32 - 1;
    assert!(
        body_after >= Duration::from_millis(150) + Duration::from_millis(40) * gaps,
        "{body_after:?}"
    );
    assert_eq!(server.requests()[0].outcome, Outcome::Completed);
}

per_format!(latency_delays_the_first_byte_and_every_event:
    chat_latency_delays_first_byte_and_chunks => Api::Chat,
    responses_latency_delays_first_byte_and_chunks => Api::Responses,
    anthropic_latency_delays_first_byte_and_chunks => Api::Anthropic,
    gemini_latency_delays_first_byte_and_chunks => Api::Gemini,
);

async fn refuses_non_streaming_and_malformed_requests(api: Api) {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("kept for a valid request"));
    let target = url(&server, api, model(api));

    let not_json = post_raw(&target, "{not json".to_owned()).await;
    let mut missing = body(api, "hi");
    let field = match api {
        Api::Responses => "input",
        Api::Chat | Api::Anthropic => "messages",
        Api::Gemini => "contents",
    };
    missing.as_object_mut().unwrap().remove(field);
    let missing = post(&target, &missing).await;

    assert_eq!(not_json.status, 400);
    assert_eq!(missing.status, 400);
    assert!(
        missing.body.contains(&format!("{field}: field required")),
        "{}",
        missing.body
    );
    if api != Api::Gemini {
        let mut unstreamed = body(api, "hi");
        unstreamed["stream"] = json!(false);
        let unstreamed = post(&target, &unstreamed).await;
        assert_eq!(unstreamed.status, 400);
        assert!(unstreamed.body.contains("streams only"), "{}", unstreamed.body);
    }
    // Refused requests consume nothing and are recorded with the body the client sent.
    assert_eq!(server.pending(), 1);
    assert_eq!(server.requests()[0].body, Value::Null);
    assert_eq!(server.requests()[0].outcome, Outcome::HttpError(400));
}

per_format!(refuses_non_streaming_and_malformed_requests:
    chat_error_400_for_bad_requests => Api::Chat,
    responses_error_400_for_bad_requests => Api::Responses,
    anthropic_error_400_for_bad_requests => Api::Anthropic,
    gemini_error_400_for_bad_requests => Api::Gemini,
);

#[tokio::test]
async fn chat_and_anthropic_queues_per_format_come_before_the_shared_queue() {
    let server = FakeLlm::start().await;
    server.push(ScriptedStream::text("shared one"));
    server.push_for(Api::Chat, ScriptedStream::text("chat only"));
    server.push(ScriptedError::status(503));
    assert_eq!(server.pending(), 3);

    let chat = ask(&server, Api::Chat, "a").await;
    let anthropic = ask(&server, Api::Anthropic, "b").await;
    let chat_again = ask(&server, Api::Chat, "c").await;
    let rules = ask(&server, Api::Chat, "d").await;

    assert!(chat.body.contains("chat only"));
    assert!(anthropic.body.contains("shared one"));
    assert_eq!(chat_again.status, 503);
    assert!(rules.body.contains(trueforge_testkit::fake_llm::DEFAULT_TEXT));
    assert_eq!(server.pending(), 0);
}

#[tokio::test]
async fn chat_log_without_bodies_keeps_the_rest_and_still_counts_retries() {
    let server = FakeLlm::bind_with_log(
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        RequestLog::WithoutBodies,
    )
    .await
    .unwrap();

    let first = ask(&server, Api::Chat, "retry me #error=429*1").await;
    let retried = ask(&server, Api::Chat, "retry me #error=429*1").await;

    // The attempt count reads the body as received, so a retry is still recognised with no body kept.
    assert_eq!((first.status, retried.status), (429, 200));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].outcome, Outcome::HttpError(429));
    assert_eq!(requests[1].outcome, Outcome::Completed);
    assert!(requests.iter().all(|request| request.body == Value::Null));
}

#[tokio::test]
async fn gemini_and_responses_requests_are_recorded_with_path_headers_and_body() {
    let server = FakeLlm::start().await;

    reqwest::Client::new()
        .post(url(&server, Api::Gemini, "gemini-test"))
        .header("x-goog-api-key", "secret-key")
        .json(&body(Api::Gemini, "hi"))
        .send()
        .await
        .unwrap();
    ask(&server, Api::Responses, "hello").await;

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].api, Some(Api::Gemini));
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1beta/models/gemini-test:streamGenerateContent");
    assert_eq!(requests[0].query.as_deref(), Some("alt=sse"));
    assert_eq!(requests[0].header("X-Goog-Api-Key"), Some("secret-key"));
    assert_eq!(requests[0].body, body(Api::Gemini, "hi"));
    assert_eq!(requests[0].outcome, Outcome::Completed);
    assert_eq!(requests[1].api, Some(Api::Responses));
    assert_eq!(requests[1].path, "/v1/responses");
    assert_eq!(requests[1].body["input"][0]["content"][0]["text"], "hello");
}

#[tokio::test]
async fn responses_and_chat_paths_without_the_version_prefix_are_served() {
    let server = FakeLlm::start().await;
    let root = format!("http://{}", server.addr());

    let responses = post(&format!("{root}/responses"), &body(Api::Responses, "hi")).await;
    let chat = post(&format!("{root}/chat/completions"), &body(Api::Chat, "hi")).await;

    assert!(has_end_marker(Api::Responses, &responses.body));
    assert!(has_end_marker(Api::Chat, &chat.body));
    assert_eq!(server.port(), server.addr().port());
}

#[tokio::test]
async fn unknown_paths_and_methods_are_refused_and_recorded() {
    let server = FakeLlm::start().await;
    let root = format!("http://{}", server.addr());

    let unknown = post(&format!("{root}/v1/completions"), &json!({})).await;
    let get = reqwest::get(url(&server, Api::Anthropic, "claude-test")).await.unwrap();

    assert_eq!(unknown.status, 404);
    assert_eq!(get.status().as_u16(), 405);
    let requests = server.requests();
    assert_eq!(requests[0].api, None);
    assert_eq!(requests[0].outcome, Outcome::HttpError(404));
    assert_eq!(requests[1].method, "GET");
    assert_eq!(requests[1].outcome, Outcome::HttpError(405));
}

#[tokio::test]
async fn anthropic_shutdown_stops_the_server() {
    let server = FakeLlm::start().await;
    let target = url(&server, Api::Anthropic, "claude-test");
    assert_eq!(ask(&server, Api::Anthropic, "hi").await.status, 200);

    server.shutdown().await;

    let after = reqwest::Client::new()
        .post(&target)
        .json(&body(Api::Anthropic, "hi"))
        .send()
        .await;
    assert!(after.is_err(), "{after:?}");
}
