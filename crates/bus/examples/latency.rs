//! Cross-replica delivery latency of the Redis Streams bus: two buses with their own connections and stream
//! readers (as two replicas have), one publishing, one subscribed, over many streams at once. Each event
//! carries its publish time; the subscriber's side takes the difference when it gets it.
//!
//! ```sh
//! redis-server --port 6390 --save '' --appendonly no &
//! cargo run --release -p trueforge-bus --example latency -- --redis redis://127.0.0.1:6390 \
//!     --streams 200 --events 50 --interval-ms 20
//! ```
//!
//! Prints the delivery latency (p50 / p99 / max) and the events per second delivered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use trueforge_bus::{BusEvent, EventBus, RedisBus, StreamKey};

struct Args {
    redis: String,
    streams: usize,
    events: u64,
    interval: Duration,
}

fn args() -> Args {
    let mut args = Args {
        redis: "redis://127.0.0.1:6379".to_owned(),
        streams: 200,
        events: 50,
        interval: Duration::from_millis(20),
    };
    let mut iter = std::env::args().skip(1);
    while let Some(flag) = iter.next() {
        let value = iter.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--redis" => args.redis = value,
            "--streams" => args.streams = value.parse().unwrap(),
            "--events" => args.events = value.parse().unwrap(),
            "--interval-ms" => args.interval = Duration::from_millis(value.parse().unwrap()),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

#[tokio::main]
async fn main() {
    let args = args();
    let producer: Arc<dyn EventBus> = Arc::new(RedisBus::connect(&args.redis).await.unwrap());
    let consumer: Arc<dyn EventBus> = Arc::new(RedisBus::connect(&args.redis).await.unwrap());
    let base = Instant::now();
    let life = Duration::from_secs(300);
    let run = ulid::Ulid::new().to_string().to_lowercase();
    let mut readers = tokio::task::JoinSet::new();
    let mut keys = Vec::with_capacity(args.streams);
    for index in 0..args.streams {
        let key = StreamKey::for_turn(&"bench".into(), &run.clone().into(), &format!("{index}.bench").into());
        producer.open(&key, life).await.unwrap();
        let mut subscription = consumer.subscribe(&key, 0, Duration::ZERO).await.unwrap();
        readers.spawn(async move {
            let mut delays = Vec::new();
            while let Some(Ok(event)) = subscription.next().await {
                let sent: u64 = event
                    .json
                    .split("\"t\":")
                    .nth(1)
                    .unwrap()
                    .trim_end_matches('}')
                    .parse()
                    .unwrap();
                let now = u64::try_from(base.elapsed().as_nanos()).unwrap();
                delays.push(Duration::from_nanos(now.saturating_sub(sent)));
            }
            delays
        });
        keys.push(key);
    }
    let started = Instant::now();
    let mut writers = tokio::task::JoinSet::new();
    for (index, key) in keys.into_iter().enumerate() {
        let producer = producer.clone();
        let (events, interval) = (args.events, args.interval);
        writers.spawn(async move {
            // Spread the streams' first events over one interval, as turns started at different times.
            tokio::time::sleep(interval * u32::try_from(index).unwrap() / 200).await;
            let mut tick = tokio::time::interval(interval);
            for seq in 1..=events {
                tick.tick().await;
                let t = base.elapsed().as_nanos();
                let event = BusEvent {
                    seq,
                    json: Arc::from(format!("{{\"type\":\"model.message.delta\",\"t\":{t}}}")),
                    terminal: seq == events,
                };
                producer.publish(&key, event, Duration::from_secs(60)).await.unwrap();
            }
        });
    }
    writers.join_all().await;
    let mut delays: Vec<Duration> = readers.join_all().await.into_iter().flatten().collect();
    let elapsed = started.elapsed();
    delays.sort();
    println!(
        "{} streams x {} events every {:?}: {} delivered across buses in {:.2} s ({:.0} events/s); delivery \
         latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        args.streams,
        args.events,
        args.interval,
        delays.len(),
        elapsed.as_secs_f64(),
        delays.len() as f64 / elapsed.as_secs_f64(),
        percentile(&delays, 0.5).as_secs_f64() * 1e3,
        percentile(&delays, 0.99).as_secs_f64() * 1e3,
        delays.last().unwrap().as_secs_f64() * 1e3,
    );
}
