//! The `EventBus` contract (documented in `src/lib.rs`), as generic cases over `Arc<dyn EventBus>` that
//! every backend runs: add a backend by adding a module with `contract_suite!(<expression building it>)` at
//! the bottom (the expression may `.await`). Timing cases use real, short durations.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use trueforge_bus::{BusError, BusEvent, EventBus, StreamKey, Subscription};

/// Longest wait for anything that should happen promptly.
const WAIT: Duration = Duration::from_secs(5);
/// A life no case outlives.
const LONG: Duration = Duration::from_secs(120);

/// A key no other case (or test process sharing a backend) uses.
fn fresh_key() -> StreamKey {
    let session = ulid::Ulid::new().to_string().to_lowercase();
    let turn = format!("{}.contract", ulid::Ulid::new().to_string().to_lowercase());
    StreamKey::for_turn(&"contract".into(), &session.into(), &turn.into())
}

fn event(seq: u64) -> BusEvent {
    BusEvent {
        seq,
        json: Arc::from(format!(
            "{{\"type\":\"model.message.delta\",\"seq\":{seq},\"content\":\"h\\u00e9llo \\\"{seq}\\\"\\n\"}}"
        )),
        terminal: false,
    }
}

fn terminal(seq: u64) -> BusEvent {
    BusEvent {
        seq,
        json: Arc::from(format!("{{\"type\":\"turn.done\",\"seq\":{seq}}}")),
        terminal: true,
    }
}

/// Events `first..=last`, the last one terminal.
fn run_of(first: u64, last: u64) -> Vec<BusEvent> {
    (first..=last)
        .map(|seq| if seq == last { terminal(seq) } else { event(seq) })
        .collect()
}

async fn publish_all(bus: &Arc<dyn EventBus>, key: &StreamKey, events: &[BusEvent]) {
    for event in events {
        bus.publish(key, event.clone(), LONG).await.unwrap();
    }
}

async fn subscribe(bus: &Arc<dyn EventBus>, key: &StreamKey, after: u64) -> Subscription {
    bus.subscribe(key, after, Duration::ZERO).await.unwrap()
}

/// The next item, which must come within `WAIT`.
async fn next(subscription: &mut Subscription) -> Option<Result<BusEvent, BusError>> {
    tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("the subscription yields or ends in time")
}

async fn next_event(subscription: &mut Subscription) -> BusEvent {
    match next(subscription).await {
        Some(Ok(event)) => event,
        other => panic!("expected an event, got {other:?}"),
    }
}

/// Every event to the end of the subscription (which must end in time, without an error).
async fn collect(mut subscription: Subscription) -> Vec<BusEvent> {
    let mut events = Vec::new();
    while let Some(item) = next(&mut subscription).await {
        events.push(item.unwrap());
    }
    events
}

/// Nothing arrives within `quiet`.
async fn assert_quiet(subscription: &mut Subscription, quiet: Duration) {
    if let Ok(item) = tokio::time::timeout(quiet, subscription.next()).await {
        panic!("expected nothing yet, got {item:?}");
    }
}

fn assert_gone<T: std::fmt::Debug>(result: Result<T, BusError>, key: &StreamKey) {
    match result {
        Err(BusError::Gone(gone)) => assert_eq!(&gone, key),
        other => panic!("expected Gone({key}), got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------------------------

pub async fn publish_then_subscribe_replays_every_event_in_order(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    let events = run_of(1, 6);
    publish_all(&bus, &key, &events).await;
    assert_eq!(collect(subscribe(&bus, &key, 0).await).await, events);
}

pub async fn subscribe_after_a_cursor_is_exclusive(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    let events = run_of(1, 5);
    publish_all(&bus, &key, &events).await;
    for after in 0..=5 {
        let expected = events[usize::try_from(after).unwrap()..].to_vec();
        assert_eq!(
            collect(subscribe(&bus, &key, after).await).await,
            expected,
            "after {after}"
        );
    }
    // Past the end of an ended stream: nothing, and the subscription ends.
    assert!(collect(subscribe(&bus, &key, 9).await).await.is_empty());
}

/// A cursor past the stream's last event skips every later event up to it: only `seq > after` is
/// delivered, live events included.
pub async fn a_cursor_past_the_end_skips_later_events_up_to_it(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    publish_all(&bus, &key, &[event(1), event(2)]).await;
    let mut subscription = subscribe(&bus, &key, 4).await;
    assert_quiet(&mut subscription, Duration::from_millis(50)).await;
    publish_all(&bus, &key, &[event(3), event(4), event(5), terminal(6)]).await;
    assert_eq!(collect(subscription).await, vec![event(5), terminal(6)]);
}

pub async fn subscribe_tails_events_published_later(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    bus.publish(&key, event(1), LONG).await.unwrap();
    let mut subscription = subscribe(&bus, &key, 0).await;
    assert_eq!(next_event(&mut subscription).await, event(1));
    assert_quiet(&mut subscription, Duration::from_millis(100)).await;
    let publisher = {
        let bus = bus.clone();
        let key = key.clone();
        tokio::spawn(async move {
            for event in run_of(2, 4) {
                tokio::time::sleep(Duration::from_millis(20)).await;
                bus.publish(&key, event, LONG).await.unwrap();
            }
        })
    };
    assert_eq!(collect(subscription).await, run_of(2, 4));
    publisher.await.unwrap();
}

pub async fn a_subscription_before_any_event_gets_them_all(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    let subscription = subscribe(&bus, &key, 0).await;
    publish_all(&bus, &key, &run_of(1, 3)).await;
    assert_eq!(collect(subscription).await, run_of(1, 3));
}

pub async fn the_terminal_event_ends_every_subscription(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    bus.publish(&key, event(1), LONG).await.unwrap();
    let mut waiting = Vec::new();
    for after in [0, 1, 1] {
        let mut subscription = subscribe(&bus, &key, after).await;
        if after == 0 {
            assert_eq!(next_event(&mut subscription).await, event(1));
        }
        waiting.push(subscription);
    }
    bus.publish(&key, terminal(2), LONG).await.unwrap();
    for mut subscription in waiting {
        assert_eq!(next_event(&mut subscription).await, terminal(2));
        assert!(
            next(&mut subscription).await.is_none(),
            "ends right after the terminal event"
        );
    }
    // A subscription opened after the end replays and ends too.
    assert_eq!(
        collect(subscribe(&bus, &key, 0).await).await,
        vec![event(1), terminal(2)]
    );
    assert!(collect(subscribe(&bus, &key, 2).await).await.is_empty());
}

pub async fn many_subscribers_each_get_everything(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    let events = run_of(1, 60);
    let spawn_reader = |subscription: Subscription| tokio::spawn(collect(subscription));
    let mut readers = Vec::new();
    for _ in 0..8 {
        readers.push(spawn_reader(subscribe(&bus, &key, 0).await));
    }
    for (index, event) in events.iter().enumerate() {
        bus.publish(&key, event.clone(), LONG).await.unwrap();
        if index == 30 {
            // Late joiners replay what they missed, then follow live.
            for _ in 0..4 {
                readers.push(spawn_reader(subscribe(&bus, &key, 0).await));
            }
        }
        if index % 10 == 0 {
            tokio::task::yield_now().await;
        }
    }
    for reader in readers {
        assert_eq!(reader.await.unwrap(), events);
    }
}

pub async fn streams_are_independent(bus: Arc<dyn EventBus>) {
    let (first, second) = (fresh_key(), fresh_key());
    bus.open(&first, LONG).await.unwrap();
    bus.open(&second, LONG).await.unwrap();
    let mut on_second = subscribe(&bus, &second, 0).await;
    publish_all(&bus, &first, &run_of(1, 3)).await;
    assert_quiet(&mut on_second, Duration::from_millis(100)).await;
    // The first stream's terminal event neither ends the second nor blocks its numbering.
    bus.publish(&second, event(1), LONG).await.unwrap();
    bus.publish(&second, terminal(2), LONG).await.unwrap();
    assert_eq!(collect(on_second).await, vec![event(1), terminal(2)]);
    assert_eq!(collect(subscribe(&bus, &first, 0).await).await, run_of(1, 3));
}

pub async fn a_missing_stream_is_gone(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    assert!(!bus.exists(&key).await.unwrap());
    assert_gone(bus.subscribe(&key, 0, Duration::ZERO).await.map(|_| ()), &key);
    assert_gone(bus.publish(&key, event(1), LONG).await, &key);
    // Nothing was created by trying.
    assert!(!bus.exists(&key).await.unwrap());
}

pub async fn an_expired_stream_is_gone_for_new_and_waiting_subscribers(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    let opened = Instant::now();
    bus.open(&key, Duration::from_millis(300)).await.unwrap();
    bus.publish(&key, event(1), LONG).await.unwrap();
    let mut waiting = subscribe(&bus, &key, 0).await;
    assert_eq!(next_event(&mut waiting).await, event(1));
    // The waiting subscriber learns of the expiry: one `Err(Gone)`, then the end.
    match next(&mut waiting).await {
        Some(Err(BusError::Gone(gone))) => assert_eq!(gone, key),
        other => panic!("expected Err(Gone), got {other:?}"),
    }
    assert!(opened.elapsed() >= Duration::from_millis(250), "not before its ttl");
    assert!(next(&mut waiting).await.is_none());
    assert!(!bus.exists(&key).await.unwrap());
    assert_gone(bus.subscribe(&key, 0, Duration::ZERO).await.map(|_| ()), &key);
    assert_gone(bus.publish(&key, event(2), LONG).await, &key);
}

pub async fn an_ended_stream_lives_for_ttl_after_end(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    bus.publish(&key, event(1), LONG).await.unwrap();
    bus.publish(&key, terminal(2), Duration::from_millis(300))
        .await
        .unwrap();
    assert!(bus.exists(&key).await.unwrap());
    assert_eq!(
        collect(subscribe(&bus, &key, 0).await).await,
        vec![event(1), terminal(2)]
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(!bus.exists(&key).await.unwrap());
    assert_gone(bus.subscribe(&key, 0, Duration::ZERO).await.map(|_| ()), &key);
}

pub async fn min_remaining_refuses_a_stream_about_to_expire(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, Duration::from_secs(3)).await.unwrap();
    bus.publish(&key, event(1), LONG).await.unwrap();
    assert_gone(bus.subscribe(&key, 0, Duration::from_secs(30)).await.map(|_| ()), &key);
    // The stream itself is untouched by the refusal.
    assert!(bus.exists(&key).await.unwrap());
    let mut admitted = bus.subscribe(&key, 0, Duration::from_millis(100)).await.unwrap();
    assert_eq!(next_event(&mut admitted).await, event(1));
    // After the end, the remaining life is `ttl_after_end`.
    bus.publish(&key, terminal(2), Duration::from_secs(2)).await.unwrap();
    assert_gone(bus.subscribe(&key, 0, Duration::from_secs(10)).await.map(|_| ()), &key);
    let late = bus.subscribe(&key, 0, Duration::from_millis(100)).await.unwrap();
    assert_eq!(collect(late).await, vec![event(1), terminal(2)]);
}

pub async fn an_event_not_after_the_last_is_out_of_order(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    publish_all(&bus, &key, &[event(1), event(2)]).await;
    for seq in [2, 1] {
        match bus.publish(&key, event(seq), LONG).await {
            Err(BusError::OutOfOrder {
                key: refused,
                seq: got,
                last,
            }) => {
                assert_eq!((refused, got, last), (key.clone(), seq, 2));
            }
            other => panic!("expected OutOfOrder for {seq}, got {other:?}"),
        }
    }
    // A terminal event out of order is refused too, and does not end the stream.
    assert!(matches!(
        bus.publish(&key, terminal(2), LONG).await,
        Err(BusError::OutOfOrder { .. })
    ));
    bus.publish(&key, terminal(3), LONG).await.unwrap();
    assert_eq!(
        collect(subscribe(&bus, &key, 0).await).await,
        vec![event(1), event(2), terminal(3)]
    );
}

pub async fn publishing_after_the_terminal_event_is_ended(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    bus.publish(&key, terminal(1), LONG).await.unwrap();
    for late in [event(2), terminal(2)] {
        match bus.publish(&key, late, LONG).await {
            Err(BusError::Ended(ended)) => assert_eq!(ended, key),
            other => panic!("expected Ended, got {other:?}"),
        }
    }
    // Reopening a live, ended stream only extends its life: it stays ended.
    bus.open(&key, LONG).await.unwrap();
    assert!(matches!(
        bus.publish(&key, event(3), LONG).await,
        Err(BusError::Ended(_))
    ));
    assert_eq!(collect(subscribe(&bus, &key, 0).await).await, vec![terminal(1)]);
}

pub async fn reopening_a_stream_extends_its_life_and_keeps_its_events(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, Duration::from_millis(400)).await.unwrap();
    bus.publish(&key, event(1), LONG).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    bus.open(&key, Duration::from_millis(1500)).await.unwrap();
    // Past the first ttl, within the second.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(bus.exists(&key).await.unwrap());
    let mut subscription = subscribe(&bus, &key, 0).await;
    assert_eq!(next_event(&mut subscription).await, event(1));
    bus.publish(&key, terminal(2), LONG).await.unwrap();
    assert_eq!(next_event(&mut subscription).await, terminal(2));
}

pub async fn reopening_with_a_shorter_ttl_does_not_shorten_a_life(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    bus.open(&key, Duration::from_millis(20)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(bus.exists(&key).await.unwrap());
    bus.publish(&key, event(1), LONG).await.unwrap();
}

pub async fn reopening_an_expired_stream_starts_it_afresh(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, Duration::from_millis(100)).await.unwrap();
    bus.publish(&key, terminal(1), Duration::from_millis(100))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!bus.exists(&key).await.unwrap());
    bus.open(&key, LONG).await.unwrap();
    assert!(bus.exists(&key).await.unwrap());
    assert_eq!(bus.last_seq(&key).await.unwrap(), None);
    // Neither the old events nor the old end remain.
    bus.publish(&key, event(1), LONG).await.unwrap();
    bus.publish(&key, terminal(2), LONG).await.unwrap();
    assert_eq!(
        collect(subscribe(&bus, &key, 0).await).await,
        vec![event(1), terminal(2)]
    );
}

pub async fn last_seq_is_the_last_event_of_the_stream(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    assert!(matches!(bus.last_seq(&key).await, Err(BusError::Gone(_))));
    bus.open(&key, LONG).await.unwrap();
    assert_eq!(bus.last_seq(&key).await.unwrap(), None);
    // A stream reopened for a resumed turn starts after the run before it.
    bus.publish(&key, event(7), LONG).await.unwrap();
    assert_eq!(bus.last_seq(&key).await.unwrap(), Some(7));
    bus.publish(&key, event(8), LONG).await.unwrap();
    bus.publish(&key, terminal(9), LONG).await.unwrap();
    assert_eq!(bus.last_seq(&key).await.unwrap(), Some(9));
    assert_eq!(
        collect(subscribe(&bus, &key, 0).await).await,
        vec![event(7), event(8), terminal(9)]
    );
    assert_eq!(
        collect(subscribe(&bus, &key, 7).await).await,
        vec![event(8), terminal(9)]
    );
}

/// A batch is published as its events one by one would be: in order, ending the stream at its terminal
/// event, and stopping at the first refused one, the ones before it kept.
pub async fn a_batch_is_published_as_its_events_one_by_one(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    bus.open(&key, LONG).await.unwrap();
    let mut subscription = subscribe(&bus, &key, 0).await;
    bus.publish_all(&key, run_of(1, 3)[..2].to_vec(), LONG).await.unwrap();
    assert_eq!(next_event(&mut subscription).await, event(1));
    assert_eq!(next_event(&mut subscription).await, event(2));
    match bus
        .publish_all(&key, vec![event(3), event(4), event(4), event(5)], LONG)
        .await
    {
        Err(BusError::OutOfOrder { seq: 4, last: 4, .. }) => {}
        other => panic!("expected the second 4 refused, got {other:?}"),
    }
    assert_eq!(bus.last_seq(&key).await.unwrap(), Some(4));
    bus.publish_all(&key, vec![event(5), terminal(6)], LONG).await.unwrap();
    assert_eq!(
        collect(subscription).await,
        vec![event(3), event(4), event(5), terminal(6)]
    );
    assert!(matches!(
        bus.publish_all(&key, vec![event(7)], LONG).await,
        Err(BusError::Ended(_))
    ));
    bus.publish_all(&key, Vec::new(), LONG).await.unwrap();
    let missing = fresh_key();
    assert_gone(bus.publish_all(&missing, vec![event(1)], LONG).await, &missing);
}

pub async fn exists_follows_the_life_of_the_stream(bus: Arc<dyn EventBus>) {
    let key = fresh_key();
    assert!(!bus.exists(&key).await.unwrap());
    bus.open(&key, Duration::from_millis(300)).await.unwrap();
    assert!(bus.exists(&key).await.unwrap());
    // Existing does not need an event.
    assert_eq!(bus.last_seq(&key).await.unwrap(), None);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(!bus.exists(&key).await.unwrap());
}

// ---------------------------------------------------------------------------------------------------------
// Every case on every backend
// ---------------------------------------------------------------------------------------------------------

/// One `#[tokio::test]` per case, each on a bus built by `$make` (which may `.await`).
macro_rules! contract_cases {
    ($make:expr => $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let bus: std::sync::Arc<dyn trueforge_bus::EventBus> = $make;
                super::$case(bus).await;
            }
        )*
    };
}

/// The whole contract for one backend.
macro_rules! contract_suite {
    ($make:expr) => {
        contract_cases!($make =>
            publish_then_subscribe_replays_every_event_in_order,
            subscribe_after_a_cursor_is_exclusive,
            a_cursor_past_the_end_skips_later_events_up_to_it,
            subscribe_tails_events_published_later,
            a_subscription_before_any_event_gets_them_all,
            the_terminal_event_ends_every_subscription,
            many_subscribers_each_get_everything,
            streams_are_independent,
            a_missing_stream_is_gone,
            an_expired_stream_is_gone_for_new_and_waiting_subscribers,
            an_ended_stream_lives_for_ttl_after_end,
            min_remaining_refuses_a_stream_about_to_expire,
            an_event_not_after_the_last_is_out_of_order,
            publishing_after_the_terminal_event_is_ended,
            reopening_a_stream_extends_its_life_and_keeps_its_events,
            reopening_with_a_shorter_ttl_does_not_shorten_a_life,
            reopening_an_expired_stream_starts_it_afresh,
            last_seq_is_the_last_event_of_the_stream,
            exists_follows_the_life_of_the_stream,
            a_batch_is_published_as_its_events_one_by_one,
        );
    };
}

/// The in-process backend (local mode).
mod memory {
    contract_suite!(std::sync::Arc::new(trueforge_bus::MemoryBus::new()));
}

/// The Redis URL of the test run (`scripts/test.sh` starts a throwaway Redis 7); the tests fail, never skip,
/// without one.
fn redis_url() -> String {
    std::env::var("TRUEFORGE_TEST_REDIS_URL")
        .expect("TRUEFORGE_TEST_REDIS_URL is not set: run the tests through scripts/test.sh, which starts Redis")
}

async fn redis_bus() -> trueforge_bus::RedisBus {
    trueforge_bus::RedisBus::connect(&redis_url()).await.unwrap()
}

/// The Redis Streams backend (hosted mode), each case on its own connections.
mod redis {
    contract_suite!(std::sync::Arc::new(super::redis_bus().await));

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use trueforge_bus::{CancelRelay, EventBus, RedisCancelRelay};
    use trueforge_protocol::{CancellationReason, TurnKey};

    use super::{LONG, WAIT, collect, event, fresh_key, next_event, redis_bus, redis_url, run_of, terminal};

    /// Two processes' buses (separate connections and stream readers): what one publishes, a subscriber
    /// of the other sees live, without polling delays.
    #[tokio::test]
    async fn a_subscriber_on_another_replica_sees_events_live() {
        let (producer, consumer): (Arc<dyn EventBus>, Arc<dyn EventBus>) =
            (Arc::new(redis_bus().await), Arc::new(redis_bus().await));
        let key = fresh_key();
        producer.open(&key, LONG).await.unwrap();
        let mut subscription = consumer.subscribe(&key, 0, Duration::ZERO).await.unwrap();
        let mut slowest = Duration::ZERO;
        for seq in 1..=20 {
            let sent = Instant::now();
            producer.publish(&key, event(seq), LONG).await.unwrap();
            assert_eq!(next_event(&mut subscription).await, event(seq));
            slowest = slowest.max(sent.elapsed());
        }
        producer.publish(&key, terminal(21), LONG).await.unwrap();
        assert_eq!(next_event(&mut subscription).await, terminal(21));
        // A blocking read wakes at once; a 1 s poll (the reference's) would not.
        assert!(slowest < Duration::from_millis(500), "slowest delivery {slowest:?}");
    }

    /// Many streams waited on at once through one reader, each subscriber woken for its own stream only.
    #[tokio::test]
    async fn one_reader_serves_many_streams_at_once() {
        let (producer, consumer): (Arc<dyn EventBus>, Arc<dyn EventBus>) =
            (Arc::new(redis_bus().await), Arc::new(redis_bus().await));
        let keys: Vec<_> = (0..40).map(|_| fresh_key()).collect();
        let mut readers = Vec::new();
        for key in &keys {
            producer.open(key, LONG).await.unwrap();
            let subscription = consumer.subscribe(key, 0, Duration::ZERO).await.unwrap();
            readers.push(tokio::spawn(collect(subscription)));
        }
        for (index, key) in keys.iter().enumerate().rev() {
            let last = 2 + u64::try_from(index % 3).unwrap();
            for event in run_of(1, last) {
                producer.publish(key, event, LONG).await.unwrap();
            }
        }
        for (index, reader) in readers.into_iter().enumerate() {
            let last = 2 + u64::try_from(index % 3).unwrap();
            assert_eq!(reader.await.unwrap(), run_of(1, last), "stream {index}");
        }
    }

    fn counting_cancel(runs: &'static str, calls: Arc<AtomicUsize>) -> trueforge_bus::LocalCancel {
        Arc::new(move |key: &TurnKey, reason| {
            calls.fetch_add(1, Ordering::SeqCst);
            key.turn_id.as_str() == runs && reason == CancellationReason::ClientCancelled
        })
    }

    async fn relay(replica: &str) -> RedisCancelRelay {
        RedisCancelRelay::connect(&redis_url(), replica, WAIT).await.unwrap()
    }

    /// A cancel asked on one replica reaches the one running the turn, and the asker learns it did.
    #[tokio::test]
    async fn a_cancel_reaches_the_replica_running_the_turn() {
        let running_turn = format!("{}.runner", ulid::Ulid::new());
        let runs: &'static str = Box::leak(running_turn.clone().into_boxed_str());
        let asker = relay(&format!("asker-{}", ulid::Ulid::new())).await;
        let runner = relay(&format!("runner-{}", ulid::Ulid::new())).await;
        let runner_calls = Arc::new(AtomicUsize::new(0));
        runner.serve(counting_cancel(runs, runner_calls.clone()));
        asker.serve(counting_cancel("nothing-runs-here", Arc::new(AtomicUsize::new(0))));
        let key = TurnKey::new("contract", "session", running_turn.as_str());
        let started = Instant::now();
        assert!(
            asker
                .cancel_elsewhere(&key, CancellationReason::ClientCancelled)
                .await
                .unwrap()
        );
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(runner_calls.load(Ordering::SeqCst), 1);
    }

    /// A turn no replica runs (its executor died): every listening replica answers no, so the asker knows
    /// within a round trip, without waiting for its timeout.
    #[tokio::test]
    async fn a_cancel_of_a_turn_run_nowhere_is_answered_at_once() {
        let asker = RedisCancelRelay::connect(
            &redis_url(),
            &format!("asker-{}", ulid::Ulid::new()),
            Duration::from_secs(30),
        )
        .await
        .unwrap();
        let other = relay(&format!("other-{}", ulid::Ulid::new())).await;
        other.serve(counting_cancel("another-turn", Arc::new(AtomicUsize::new(0))));
        let key = TurnKey::new("contract", "session", format!("{}.gone", ulid::Ulid::new()).as_str());
        let started = Instant::now();
        assert!(
            !asker
                .cancel_elsewhere(&key, CancellationReason::ClientCancelled)
                .await
                .unwrap()
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
    }

    /// Redis that is not there: connecting fails with the cause, in seconds.
    #[tokio::test]
    async fn an_unreachable_redis_fails_to_connect() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = format!("redis://127.0.0.1:{port}");
        let error = trueforge_bus::RedisBus::connect(&url)
            .await
            .err()
            .expect("no Redis there");
        assert!(matches!(error, trueforge_bus::BusError::Backend(_)), "{error:?}");
        assert!(RedisCancelRelay::connect(&url, "x", WAIT).await.is_err());
    }
}
