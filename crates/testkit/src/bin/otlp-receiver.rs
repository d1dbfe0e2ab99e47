//! `otlp-receiver --port N`: the testkit's OTLP trace receiver as a process (HTTP/protobuf and gRPC on one
//! port), for benchmarks that export traces somewhere real. It prints `otlp-receiver listening on URL` once
//! it accepts exports, then the number of spans received every `--report-seconds`, until killed.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use trueforge_testkit::otlp::OtlpReceiver;

#[derive(Parser)]
#[command(name = "otlp-receiver")]
struct Args {
    /// The port to listen on (127.0.0.1); 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// How often the count of received spans is printed.
    #[arg(long, default_value_t = 10)]
    report_seconds: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let receiver = match OtlpReceiver::start_on(SocketAddr::from(([127, 0, 0, 1], args.port))).await {
        Ok(receiver) => receiver,
        Err(error) => {
            eprintln!("otlp-receiver: cannot listen: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("otlp-receiver listening on {}", receiver.endpoint);
    let mut every = tokio::time::interval(Duration::from_secs(args.report_seconds.max(1)));
    loop {
        every.tick().await;
        println!("spans received: {}", receiver.spans().len());
    }
}
