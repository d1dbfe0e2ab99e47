//! The typed calls against a real server: sessions, turns, events, models, health, and API errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{MODEL, TestServer, assert_complete, streamed_text};
use trueforge_client::protocol::{SessionAgent, SessionEvent, TurnState};
use trueforge_client::{Client, ClientError, CreateTurn, ListSessions, ListTurnEvents, ListTurns, SessionAgentChoice};
use trueforge_testkit::fake_llm::DEFAULT_TEXT;

#[tokio::test]
async fn health_and_models_describe_the_server() {
    let server = TestServer::start().await;
    let health = server.client.health().await.unwrap();
    assert!(health.is_ok(), "{health:?}");
    assert!(health.version.is_some());
    assert!(health.database.is_none(), "liveness checks nothing behind the process");
    let readiness = server.client.readiness().await.unwrap();
    assert!(readiness.is_ok(), "{readiness:?}");
    assert_eq!(
        readiness.database.map(|database| database.status).as_deref(),
        Some("ok")
    );
    let models = server.client.list_models().await.unwrap();
    let fake = models
        .iter()
        .find(|model| model.name == MODEL)
        .expect("the fake model is listed");
    assert_eq!(fake.model_id, "fake-model");
    assert_eq!(fake.provider.name, "fake");
    assert_eq!(fake.properties.context_length, Some(100_000));
    server.stop().await;
}

#[tokio::test]
async fn sessions_are_created_read_and_listed() {
    let server = TestServer::start().await;
    let client = &server.client;
    let session = client.create_session(SessionAgentChoice::model(MODEL)).await.unwrap();
    match &session.agent {
        SessionAgent::Inline { spec } => assert_eq!(spec.model.name, MODEL),
        other => panic!("expected an inline agent, got {other:?}"),
    }
    assert_eq!(client.get_session(&session.id).await.unwrap(), session);
    let other = server.session().await;
    let mut first_page = ListSessions::default();
    first_page.limit = Some(1);
    let page = client.list_sessions(&first_page).await.unwrap();
    assert_eq!(page.data.len(), 1);
    assert_eq!(page.pagination.limit, 1);
    let next = page.pagination.next_page_token.clone().expect("a second page");
    let mut second_page = first_page.clone();
    second_page.page_token = Some(next);
    let second = client.list_sessions(&second_page).await.unwrap();
    let mut ids = vec![page.data[0].id.clone(), second.data[0].id.clone()];
    ids.sort();
    let mut expected = vec![session.id.clone(), other];
    expected.sort();
    assert_eq!(ids, expected);
    client.delete_session(&session.id).await.unwrap();
    let error = client.get_session(&session.id).await.unwrap_err();
    assert_eq!(error.status(), Some(404));
    server.stop().await;
}

#[tokio::test]
async fn a_non_streamed_turn_then_subscribe_delivers_the_whole_turn() {
    let server = TestServer::start().await;
    let client = &server.client;
    let session_id = server.session().await;
    let turn = client
        .create_turn(&session_id, CreateTurn::message("hi #delay=100 #chunks=3"))
        .await
        .unwrap();
    assert_eq!(turn.state, TurnState::Running);
    assert_eq!(turn.session_id, session_id);
    let mut stream = client.subscribe(&session_id, &turn.id, 0).await.unwrap();
    assert_eq!(stream.turn_id(), Some(turn.id.as_str()));
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    assert!(stream.is_finished());
    assert_complete(&events);
    assert_eq!(streamed_text(&events), DEFAULT_TEXT);
    assert_eq!(stream.reconnects(), 0);

    // Read back: the turn, the session's turn list, and the stored events (no deltas).
    let done = client.get_turn(&session_id, &turn.id).await.unwrap();
    assert_eq!(Some(&done.state), events.last().unwrap().turn_done());
    let turns = client.list_turns(&session_id, &ListTurns::default()).await.unwrap();
    assert_eq!(turns.data.len(), 1);
    assert_eq!(turns.data[0].id, turn.id);
    let stored = client
        .turn_events(&session_id, &turn.id, &ListTurnEvents::default())
        .await
        .unwrap();
    let stored_types: Vec<&str> = stored.data.iter().map(SessionEvent::event_type).collect();
    let streamed_types: Vec<&str> = events
        .iter()
        .map(trueforge_client::StreamedEvent::event_type)
        .filter(|kind| *kind != "model.message.delta")
        .collect();
    assert_eq!(stored_types, streamed_types);

    // Subscribing after the middle gives exactly the rest.
    let middle = events[events.len() / 2].seq;
    let rest = client
        .subscribe(&session_id, &turn.id, middle)
        .await
        .unwrap()
        .collect_all()
        .await
        .unwrap();
    assert_eq!(rest, events[events.len() / 2 + 1..].to_vec());
    server.stop().await;
}

#[tokio::test]
async fn api_errors_carry_the_server_status_and_message() {
    let server = TestServer::start().await;
    let client = &server.client;

    let error = client.get_session("nope").await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Api { status: 404, message } if message == "Session not found: nope"),
        "{error:?}"
    );

    let error = client
        .create_session(SessionAgentChoice::model("fake/missing-model"))
        .await
        .unwrap_err();
    match &error {
        ClientError::Api { status: 422, message } => assert!(message.contains("fake/missing-model"), "{message}"),
        other => panic!("expected a 422, got {other:?}"),
    }

    let error = client
        .create_session(SessionAgentChoice::named("nobody"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::Api { status: 404, message } if message == "Agent not found: nobody"),
        "{error:?}"
    );

    // Errors raised before a turn starts come from the call, not from the stream.
    let error = client.stream_turn("nope", CreateTurn::message("hi")).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Api { status: 404, message } if message == "Session not found: nope"),
        "{error:?}"
    );
    let session_id = server.session().await;
    let error = client.subscribe(&session_id, "missing.local", 0).await.unwrap_err();
    assert!(
        matches!(&error, ClientError::Api { status: 404, message } if message == "Turn not found: missing.local"),
        "{error:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = Client::new(&format!("http://127.0.0.1:{port}")).unwrap();
    let error = client.health().await.unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error:?}");
}

#[test]
fn a_base_url_must_be_http() {
    for url in [
        "not a url",
        "ftp://example.com",
        "mailto:someone@example.com",
        "http://h/?q=1",
    ] {
        let error = Client::new(url).unwrap_err();
        assert!(matches!(error, ClientError::InvalidBaseUrl { .. }), "{url}: {error:?}");
    }
    assert!(Client::new("https://example.com/prefix/").is_ok());
}
