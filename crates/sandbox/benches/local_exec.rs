//! What the local sandbox costs a trivial command, against running the command directly.
//!
//! - `direct_true`: `std::process::Command::new("true").status()`.
//! - `local_exec_true`: `LocalProvider::exec` of `true` in a sandbox made once (bubblewrap, the namespaces,
//!   the mounts, `prlimit`, the `/bin/sh` trampoline, `bash -c`, and the per-command cgroup where the
//!   provider uses one).
//! - `local_create`: `LocalProvider::create` (the sandbox's directory and its three subdirectories).
//!
//! Every iteration is one `block_on` on a multi-thread runtime, as in the server: the provider prepares the
//! next command's launcher in the background between iterations. After criterion's groups a plain loop runs
//! `direct_true` and `local_exec_true` in turn (300 rounds) and prints both medians and the overhead: the
//! figure to quote, since the VM's speed drifts between criterion's back-to-back measurements.
//!
//! Run: `cargo bench -p trueforge-sandbox --bench local_exec`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Setup failures end the bench, as in tests.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;
use trueforge_sandbox::{ExecRequest, LocalConfig, LocalProvider, SandboxOwner, SandboxProvider};

struct Bench {
    provider: LocalProvider,
    runtime: Runtime,
    owner: SandboxOwner,
    raw_id: String,
    _data: tempfile::TempDir,
}

impl Bench {
    /// Drops the provider on its runtime and gives its ready launchers the moment they take to be killed,
    /// reaped and have their cgroups removed (in the background, on that runtime).
    fn finish(self) {
        let Self { provider, runtime, .. } = self;
        runtime.block_on(async move {
            drop(provider);
            tokio::time::sleep(Duration::from_millis(500)).await;
        });
    }
}

fn setup() -> Bench {
    let data = tempfile::tempdir().unwrap();
    let provider = LocalProvider::new(LocalConfig::new(data.path().join("sandboxes"))).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let owner = SandboxOwner {
        tenant: "bench".to_owned(),
        session: "s".to_owned(),
    };
    let raw_id = runtime.block_on(provider.create(&owner)).unwrap();
    Bench {
        provider,
        runtime,
        owner,
        raw_id,
        _data: data,
    }
}

fn true_request() -> ExecRequest {
    ExecRequest {
        command: "true".to_owned(),
        cwd: None,
        env: BTreeMap::new(),
        timeout: Duration::from_secs(10),
        output_limit: 16 * 1024,
        bridge_socket: None,
    }
}

fn direct_true() {
    assert!(std::process::Command::new("true").status().unwrap().success());
}

fn local_exec_true(bench: &Bench) {
    let output = bench
        .runtime
        .block_on(
            bench
                .provider
                .exec(&bench.raw_id, true_request(), &CancellationToken::new()),
        )
        .unwrap();
    assert_eq!(output.exit_code, Some(0));
}

fn benchmarks(criterion: &mut Criterion) {
    let bench = setup();
    eprintln!(
        "limits: processes by {}, memory by {}",
        bench.provider.process_limit(),
        bench.provider.memory_limit()
    );
    let mut group = criterion.benchmark_group("local_exec");
    group.bench_function("direct_true", |bencher| bencher.iter(direct_true));
    group.bench_function("local_exec_true", |bencher| bencher.iter(|| local_exec_true(&bench)));
    group.bench_function("local_create", |bencher| {
        bencher.iter(|| bench.runtime.block_on(bench.provider.create(&bench.owner)).unwrap())
    });
    group.finish();
    interleaved(&bench);
    bench.finish();
}

/// Both variants in turn, so drift hits them alike.
fn interleaved(bench: &Bench) {
    const ROUNDS: usize = 300;
    let mut direct = Vec::with_capacity(ROUNDS);
    let mut sandboxed = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        direct_true();
        direct.push(started.elapsed());
        let started = Instant::now();
        local_exec_true(bench);
        sandboxed.push(started.elapsed());
    }
    let direct = median(&mut direct);
    let sandboxed = median(&mut sandboxed);
    eprintln!(
        "interleaved medians over {ROUNDS} rounds: direct_true {direct:?}, local_exec_true {sandboxed:?}, \
         overhead {:?}",
        sandboxed.saturating_sub(direct)
    );
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

criterion_group!(local_exec, benchmarks);
criterion_main!(local_exec);
