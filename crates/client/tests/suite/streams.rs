//! Streamed turns: the events in order to `turn.done`, resumed across connections cut by a proxy at
//! many positions, cancelled, and the ways a stream can end for good.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::{Cut, CutProxy, TestServer, assert_complete, fast_resume, streamed_text};
use trueforge_client::protocol::{CancellationReason, TurnState};
use trueforge_client::{ClientError, CreateTurn, StreamedEvent};

fn assert_done_with_text(events: &[StreamedEvent], text: &str) {
    match events.last().unwrap().turn_done() {
        Some(TurnState::Done {
            output: Some(output), ..
        }) => {
            let content = serde_json::to_value(&output.content).unwrap();
            assert_eq!(content, serde_json::json!(text));
        }
        other => panic!("expected a done turn with output, got {other:?}"),
    }
}

#[tokio::test]
async fn a_streamed_turn_reaches_turn_done_with_the_answer_in_order() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let message = "tell me everything #echo #chunks=7";
    let mut stream = server
        .client
        .stream_turn(&session_id, CreateTurn::message(message))
        .await
        .unwrap();
    assert_eq!(stream.turn_id(), None, "unknown until turn.created is read");
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.event_type(), "turn.created");
    let turn_id = stream.turn_id().expect("known from turn.created").to_owned();
    assert!(turn_id.ends_with(".local"), "{turn_id}");
    let mut events = vec![first];
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    assert!(stream.next().await.is_none(), "nothing after turn.done");
    assert_complete(&events);
    assert_eq!(
        events.iter().filter(|event| event.text_delta().is_some()).count(),
        7,
        "one delta per chunk"
    );
    assert_eq!(streamed_text(&events), message);
    assert_done_with_text(&events, message);
    assert_eq!(stream.last_seq(), events.last().unwrap().seq);
    assert_eq!(stream.reconnects(), 0);
    server.stop().await;
}

/// The SSE body bytes of `events` as the server frames them, chunked: where each frame ends in the
/// response body (so cut positions can be chosen relative to frames).
fn frame_ends(events: &[StreamedEvent]) -> Vec<usize> {
    let mut offset = 0;
    events
        .iter()
        .map(|event| {
            let json = serde_json::to_string(&event.event).unwrap();
            let frame = format!("data: {json}\nid: {}\n\n", event.seq).len();
            // `<hex size>\r\n<frame>\r\n`
            offset += format!("{frame:x}").len() + 2 + frame + 2;
            offset
        })
        .collect()
}

/// An uninterrupted run of `message` in a new session, for the shape of such a turn and the byte
/// positions of its frames.
async fn direct_run(server: &TestServer, message: &str) -> Vec<StreamedEvent> {
    let session_id = server.session().await;
    let events = server
        .client
        .stream_turn(&session_id, CreateTurn::message(message))
        .await
        .unwrap()
        .collect_all()
        .await
        .unwrap();
    assert_complete(&events);
    events
}

async fn replay(server: &TestServer, session_id: &str, turn_id: &str) -> Vec<StreamedEvent> {
    server
        .client
        .subscribe(session_id, turn_id, 0)
        .await
        .unwrap()
        .collect_all()
        .await
        .unwrap()
}

#[tokio::test]
async fn resume_after_a_cut_delivers_exactly_the_events_of_a_direct_run() {
    let server = TestServer::start().await;
    let message = "resume me #chunks=5";
    let direct = direct_run(&server, message).await;
    let ends = frame_ends(&direct);
    let total = *ends.last().unwrap();
    let cuts = [
        ends[0] + 1,             // just after turn.created
        ends[0] + 25,            // inside the second frame
        ends[2],                 // at a frame boundary
        (ends[2] + ends[3]) / 2, // inside a delta
        total / 2,               // anywhere
        ends[ends.len() - 2],    // everything but turn.done
        total - 30,              // inside turn.done
    ];
    let shape = |events: &[StreamedEvent]| -> Vec<(u64, String)> {
        events
            .iter()
            .map(|event| (event.seq, event.event_type().to_owned()))
            .collect()
    };
    for cut in cuts {
        let proxy = CutProxy::start(&server.base, vec![Cut::AfterBodyBytes(cut)]).await;
        let client = server.client_via(&proxy, fast_resume());
        let session_id = server.session().await;
        let mut stream = client
            .stream_turn(&session_id, CreateTurn::message(message))
            .await
            .unwrap();
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event.unwrap_or_else(|error| panic!("cut at {cut}: {error:?}")));
        }
        assert!(stream.reconnects() >= 1, "cut at {cut} of {total}: the stream resumed");
        assert!(proxy.connections() >= 2, "cut at {cut}");
        assert_complete(&events);
        assert_eq!(shape(&events), shape(&direct), "cut at {cut} of {total}");
        assert_eq!(streamed_text(&events), streamed_text(&direct));
        // The very same events as an uninterrupted replay of this turn, ids and contents included.
        let replayed = replay(&server, &session_id, stream.turn_id().unwrap()).await;
        assert_eq!(events, replayed, "cut at {cut} of {total}");
    }
    server.stop().await;
}

#[tokio::test]
async fn resume_survives_several_cuts_in_a_row() {
    let server = TestServer::start().await;
    let message = "again and again #chunks=6 #delay=20";
    let ends = frame_ends(&direct_run(&server, message).await);
    // The first connection is cut after turn.created; the next two (resumed subscriptions) are cut
    // early, one before any complete frame.
    let proxy = CutProxy::start(
        &server.base,
        vec![
            Cut::AfterBodyBytes(ends[0] + 5),
            Cut::AfterBodyBytes(10),
            Cut::AfterBodyBytes(ends[1] - ends[0] + 5),
        ],
    )
    .await;
    let client = server.client_via(&proxy, fast_resume());
    let session_id = server.session().await;
    let mut stream = client
        .stream_turn(&session_id, CreateTurn::message(message))
        .await
        .unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    assert_complete(&events);
    assert_eq!(stream.reconnects(), 3);
    assert_eq!(proxy.connections(), 4);
    assert_eq!(events, replay(&server, &session_id, stream.turn_id().unwrap()).await);
    server.stop().await;
}

#[tokio::test]
async fn a_stream_the_server_closes_on_schedule_resumes_to_the_end() {
    // Subscriptions live 300 ms; the turn takes longer, so each ends without turn.done and the client goes
    // on from its last id. (A new turn's own POST stream lives as long as the turn can.)
    let server = TestServer::start_with(|config| config.subscribe_timeout = Duration::from_millis(300)).await;
    let session_id = server.session().await;
    let turn = server
        .client
        .create_turn(&session_id, CreateTurn::message("slowly #chunks=6 #delay=150"))
        .await
        .unwrap();
    let mut stream = server.client.subscribe(&session_id, &turn.id, 0).await.unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    assert_complete(&events);
    assert!(stream.reconnects() >= 2, "reconnected {} times", stream.reconnects());
    assert_eq!(events, replay(&server, &session_id, stream.turn_id().unwrap()).await);
    server.stop().await;
}

#[tokio::test]
async fn cancelling_a_slow_turn_ends_its_stream_with_a_cancelled_turn_done() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let mut stream = server
        .client
        .stream_turn(&session_id, CreateTurn::message("take your time #delay=30000"))
        .await
        .unwrap();
    let created = stream.next().await.unwrap().unwrap();
    assert_eq!(created.event_type(), "turn.created");
    server.client.cancel(&session_id).await.unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(10), stream.collect_all())
        .await
        .expect("the cancelled turn ends promptly")
        .unwrap();
    match rest.last().unwrap().turn_done() {
        Some(TurnState::Cancelled { reason, .. }) => assert_eq!(*reason, CancellationReason::ClientCancelled),
        other => panic!("expected a cancelled turn.done, got {other:?}"),
    }
    // Cancelling again is a no-op.
    server.client.cancel(&session_id).await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn a_cut_before_turn_created_cannot_be_resumed() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let proxy = CutProxy::start(&server.base, vec![Cut::AfterBodyBytes(10)]).await;
    let client = server.client_via(&proxy, fast_resume());
    let mut stream = client
        .stream_turn(&session_id, CreateTurn::message("lost #chunks=2"))
        .await
        .unwrap();
    let error = stream.next().await.unwrap().unwrap_err();
    assert!(
        matches!(
            &error,
            ClientError::StreamEnded {
                turn_id: None,
                last_seq: 0,
                cause: Some(_)
            }
        ),
        "{error:?}"
    );
    assert!(stream.next().await.is_none(), "an error is the last item");
    assert_eq!(proxy.connections(), 1, "no blind reconnection");
    server.stop().await;
}

#[tokio::test]
async fn resuming_gives_up_after_the_retry_budget() {
    let server = TestServer::start().await;
    let message = "doomed #chunks=3 #delay=50";
    let ends = frame_ends(&direct_run(&server, message).await);
    let session_id = server.session().await;
    // The first connection delivers turn.created; every resumed one is cut before its first frame.
    let mut cuts = vec![Cut::AfterBodyBytes(ends[0] + 5)];
    cuts.extend([Cut::AfterBodyBytes(0); 10]);
    let proxy = CutProxy::start(&server.base, cuts).await;
    let mut policy = fast_resume();
    policy.max_attempts = 3;
    let client = server.client_via(&proxy, policy);
    let mut stream = client
        .stream_turn(&session_id, CreateTurn::message(message))
        .await
        .unwrap();
    let mut delivered = Vec::new();
    let error = loop {
        match stream.next().await.expect("an error ends the stream") {
            Ok(event) => delivered.push(event),
            Err(error) => break error,
        }
    };
    let turn_id = stream.turn_id().unwrap().to_owned();
    match &error {
        ClientError::StreamEnded {
            turn_id: Some(id),
            last_seq,
            ..
        } => {
            assert_eq!(id, &turn_id);
            assert_eq!(*last_seq, delivered.last().unwrap().seq);
        }
        other => panic!("expected StreamEnded, got {other:?}"),
    }
    assert_eq!(stream.reconnects(), 3);
    assert_eq!(proxy.connections(), 4);
    // The turn itself was never affected: it finishes, and a fresh subscription sees it all.
    let all = replay(&server, &session_id, &turn_id).await;
    assert_complete(&all);
    assert_eq!(all[..delivered.len()], delivered[..]);
    server.stop().await;
}

#[tokio::test]
async fn a_turn_deleted_while_disconnected_is_gone() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let proxy = CutProxy::start_gated(&server.base, vec![Cut::OnSignal], true).await;
    let client = server.client_via(&proxy, fast_resume());
    let mut stream = client
        .stream_turn(&session_id, CreateTurn::message("forever #delay=30000"))
        .await
        .unwrap();
    let created = stream.next().await.unwrap().unwrap();
    assert_eq!(created.event_type(), "turn.created");
    // Read on until the stream ends: the events before the cut, then the verdict on resuming.
    let rest = tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            if let Err(error) = item {
                return Some(error);
            }
        }
        None
    });
    // Break the connection; the client's reconnection waits at the proxy's gate while the session goes.
    proxy.cut_now();
    tokio::time::timeout(Duration::from_secs(5), async {
        while proxy.connections() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the client reconnects");
    server.client.delete_session(&session_id).await.unwrap();
    proxy.open_gate();
    let error = rest.await.unwrap().expect("the stream ends with an error");
    assert!(matches!(&error, ClientError::Gone { status: 404, .. }), "{error:?}");
    server.stop().await;
}
