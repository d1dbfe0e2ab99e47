//! The Daytona provider against the fake Daytona API (`trueforge_testkit::fake_daytona`), over real sockets:
//! sandboxes made, reattached and restarted, commands run, files moved, and Daytona failing in the ways it
//! does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trueforge_sandbox::{
    DaytonaCheckError, DaytonaConfig, DaytonaProvider, Download, ExecOutput, ExecRequest, REJECTED_REASON,
    SandboxBuildStatus, SandboxError, SandboxOwner, SandboxProvider,
};
use trueforge_testkit::fake_daytona::FAKE_DAYTONA_SNAPSHOT;
use trueforge_testkit::{FakeDaytona, FakeDaytonaOptions};

fn owner(tenant: &str) -> SandboxOwner {
    SandboxOwner {
        tenant: tenant.to_owned(),
        session: "session-1".to_owned(),
    }
}

fn config(fake: &FakeDaytona) -> DaytonaConfig {
    DaytonaConfig {
        api_url: fake.api_url(),
        request_timeout: Duration::from_secs(5),
        start_timeout: Duration::from_secs(5),
        ..DaytonaConfig::new(fake.api_key())
    }
}

fn provider(fake: &FakeDaytona) -> DaytonaProvider {
    DaytonaProvider::new(config(fake)).unwrap()
}

fn command(line: &str) -> ExecRequest {
    ExecRequest {
        command: line.to_owned(),
        cwd: None,
        env: BTreeMap::new(),
        timeout: Duration::from_secs(20),
        output_limit: 64 * 1024,
        bridge_socket: None,
    }
}

async fn run(provider: &DaytonaProvider, raw_id: &str, request: ExecRequest) -> ExecOutput {
    provider.exec(raw_id, request, &CancellationToken::new()).await.unwrap()
}

async fn read_all(download: Download) -> Vec<u8> {
    let mut body = download.body;
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        bytes.extend_from_slice(&chunk.unwrap());
    }
    bytes
}

#[tokio::test]
async fn creates_a_sandbox_from_the_snapshot_with_the_settings_intervals() {
    let fake = FakeDaytona::start().await;
    let provider = DaytonaProvider::new(DaytonaConfig {
        auto_stop_minutes: 30,
        auto_archive_minutes: 60,
        auto_delete_minutes: 0,
        ..config(&fake)
    })
    .unwrap();
    assert_eq!(provider.kind(), "daytona");
    assert_eq!(provider.layout().workspace, "/home/trueforge");
    assert_eq!(provider.layout().uploads, "/opt/tf/uploads");
    assert_eq!(provider.code_mode_socket(), None);

    let raw_id = provider.create(&owner("acme")).await.unwrap();
    assert!(raw_id.starts_with("acme."), "{raw_id}");
    assert!(owner("acme").owns(&raw_id));
    let sandbox = fake.sandbox(&raw_id).expect("made in Daytona under its raw id");
    assert_eq!(sandbox.name, raw_id);
    assert_eq!(sandbox.state, "started");
    assert_eq!(sandbox.snapshot.as_deref(), Some(FAKE_DAYTONA_SNAPSHOT));
    // An interval of 0 disables auto-delete, which Daytona spells as a negative one.
    assert_eq!(
        (
            sandbox.auto_stop_interval,
            sandbox.auto_archive_interval,
            sandbox.auto_delete_interval
        ),
        (Some(30), Some(60), Some(-1))
    );
    let other = provider.create(&owner("acme")).await.unwrap();
    assert_ne!(other, raw_id);
}

#[tokio::test]
async fn runs_commands_with_exit_code_output_cwd_and_env() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();

    let output = run(&provider, &raw_id, command("echo out; echo err >&2; exit 3")).await;
    assert_eq!(output.exit_code, Some(3));
    assert_eq!(output.output, "out\nerr\n");
    assert_eq!(output.omitted_bytes, 0);
    assert!(!output.timed_out && !output.cancelled);

    // The workspace by default; a relative cwd is under it.
    let output = run(&provider, &raw_id, command("pwd && mkdir -p sub/dir")).await;
    assert!(
        output.output.trim_end().ends_with("/home/trueforge"),
        "{}",
        output.output
    );
    let mut request = command("pwd");
    request.cwd = Some("sub/dir".to_owned());
    let output = run(&provider, &raw_id, request).await;
    assert!(
        output.output.trim_end().ends_with("/home/trueforge/sub/dir"),
        "{}",
        output.output
    );
    let mut request = command("pwd");
    request.cwd = Some("/".to_owned());
    let output = run(&provider, &raw_id, request).await;
    assert!(!output.output.contains("/home/trueforge"), "{}", output.output);
    let mut request = command("pwd");
    request.cwd = Some("/home/../etc".to_owned());
    let refused = provider.exec(&raw_id, request, &CancellationToken::new()).await;
    assert!(matches!(refused, Err(SandboxError::InvalidPath { .. })), "{refused:?}");

    // Values arrive byte for byte, whatever quotes, newlines or `$` they hold; the command line too.
    let mut request = command(r#"printf '[%s][%s]' "$GREETING" "$EMPTY"; echo " it's" 'done'"#);
    request.env = BTreeMap::from([
        ("GREETING".to_owned(), "it's \"quoted\" $HOME\n\n".to_owned()),
        ("EMPTY".to_owned(), String::new()),
    ]);
    let output = run(&provider, &raw_id, request).await;
    assert_eq!(output.exit_code, Some(0));
    assert_eq!(output.output, "[it's \"quoted\" $HOME\n\n][] it's done\n");

    let mut request = command("true");
    request.env = BTreeMap::from([("NOT-A-NAME".to_owned(), "x".to_owned())]);
    let refused = provider.exec(&raw_id, request, &CancellationToken::new()).await;
    assert!(matches!(refused, Err(SandboxError::Provider(message)) if message.contains("NOT-A-NAME")));

    // A command killed by a signal has no exit code.
    let output = run(&provider, &raw_id, command("kill -9 $$")).await;
    assert_eq!(output.exit_code, None);
}

#[tokio::test]
async fn keeps_the_head_and_tail_of_long_output() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();
    let mut request = command("seq 1 20000");
    request.output_limit = 100;
    let output = run(&provider, &raw_id, request).await;
    let full: String = (1..=20000).map(|n| format!("{n}\n")).collect();
    assert_eq!(output.output.len(), 100);
    assert!(output.output.starts_with("1\n2\n3\n"));
    assert!(output.output.ends_with("19999\n20000\n"));
    assert_eq!(output.omitted_bytes, (full.len() - 100) as u64);
    assert_eq!(output.exit_code, Some(0));
}

#[tokio::test]
async fn a_command_past_its_timeout_is_timed_out_and_a_cancelled_one_returns_at_once() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();

    let mut request = command("sleep 30");
    request.timeout = Duration::from_secs(1);
    let started = Instant::now();
    let output = run(&provider, &raw_id, request).await;
    assert!(output.timed_out);
    assert_eq!(output.exit_code, None);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let output = provider.exec(&raw_id, command("sleep 30"), &cancel).await.unwrap();
    assert!(output.cancelled);
    assert_eq!(output.exit_code, None);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[tokio::test]
async fn uploads_stats_and_streams_files_the_commands_see() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();

    let content: Vec<u8> = (0..300_000_u32).map(|n| (n % 251) as u8).collect();
    provider
        .upload(&raw_id, "/opt/tf/uploads/data.bin", Bytes::from(content.clone()))
        .await
        .unwrap();
    let stat = provider.stat(&raw_id, "/opt/tf/uploads/data.bin").await.unwrap();
    assert_eq!((stat.size, stat.is_dir), (300_000, false));
    assert!(provider.stat(&raw_id, "/opt/tf/uploads").await.unwrap().is_dir);

    let download = provider
        .download(&raw_id, "/opt/tf/uploads/data.bin", 1_000_000)
        .await
        .unwrap();
    assert_eq!(download.size, 300_000);
    assert_eq!(read_all(download).await, content);

    // Upload replaces; what a command writes can be downloaded.
    provider
        .upload(&raw_id, "/home/trueforge/note.txt", Bytes::from_static(b"first"))
        .await
        .unwrap();
    provider
        .upload(&raw_id, "/home/trueforge/note.txt", Bytes::from_static(b"second"))
        .await
        .unwrap();
    let output = run(&provider, &raw_id, command("cat note.txt; printf made > out.txt")).await;
    assert_eq!(output.output, "second");
    let download = provider
        .download(&raw_id, "/home/trueforge/out.txt", 100)
        .await
        .unwrap();
    assert_eq!(read_all(download).await, b"made");

    let refused = provider.upload(&raw_id, "relative.txt", Bytes::new()).await;
    assert!(matches!(refused, Err(SandboxError::InvalidPath { .. })));
}

#[tokio::test]
async fn download_refuses_directories_large_and_missing_files() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();
    provider
        .upload(&raw_id, "/home/trueforge/big.txt", Bytes::from(vec![b'x'; 2048]))
        .await
        .unwrap();

    let directory = provider.download(&raw_id, "/home/trueforge", 1_000).await;
    assert_eq!(
        directory.unwrap_err(),
        SandboxError::PathIsDirectory("/home/trueforge".to_owned())
    );
    let large = provider.download(&raw_id, "/home/trueforge/big.txt", 1_000).await;
    assert_eq!(
        large.unwrap_err(),
        SandboxError::FileTooLarge {
            path: "/home/trueforge/big.txt".to_owned(),
            size: 2048,
            limit: 1_000,
        }
    );
    let missing = provider.download(&raw_id, "/home/trueforge/none.txt", 1_000).await;
    assert_eq!(
        missing.unwrap_err(),
        SandboxError::FileNotFound("/home/trueforge/none.txt".to_owned())
    );
    let missing = provider.stat(&raw_id, "/nowhere/x").await;
    assert_eq!(
        missing.unwrap_err(),
        SandboxError::FileNotFound("/nowhere/x".to_owned())
    );
}

#[tokio::test]
async fn reattach_starts_a_stopped_or_archived_sandbox_with_its_files() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();
    provider
        .upload(&raw_id, "/home/trueforge/kept.txt", Bytes::from_static(b"kept"))
        .await
        .unwrap();

    assert!(fake.stop_sandbox(&raw_id));
    // Another server (no cache) picks the sandbox up by its stored id.
    let other = DaytonaProvider::new(config(&fake)).unwrap();
    other.reattach(&owner("acme"), &raw_id).await.unwrap();
    assert_eq!(fake.sandbox(&raw_id).unwrap().state, "started");
    let sandbox_id = fake.sandbox(&raw_id).unwrap().id;
    let starts = |fake: &FakeDaytona| {
        fake.requests()
            .iter()
            .filter(|line| **line == format!("POST /api/sandbox/{sandbox_id}/start"))
            .count()
    };
    assert_eq!(starts(&fake), 1);
    let output = run(&other, &raw_id, command("cat kept.txt")).await;
    assert_eq!(output.output, "kept");

    assert!(fake.archive_sandbox(&raw_id));
    other.reattach(&owner("acme"), &raw_id).await.unwrap();
    assert_eq!(fake.sandbox(&raw_id).unwrap().state, "started");
    assert_eq!(starts(&fake), 2);

    // Reattaching a running sandbox starts nothing.
    other.reattach(&owner("acme"), &raw_id).await.unwrap();
    assert_eq!(starts(&fake), 2);
}

#[tokio::test]
async fn a_sandbox_stopped_behind_our_back_is_started_and_the_call_made_again() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();
    assert!(fake.stop_sandbox(&raw_id));
    let output = run(&provider, &raw_id, command("echo again")).await;
    assert_eq!(output.output, "again\n");
    assert_eq!(fake.sandbox(&raw_id).unwrap().state, "started");

    assert!(fake.archive_sandbox(&raw_id));
    provider
        .upload(&raw_id, "/home/trueforge/x", Bytes::from_static(b"x"))
        .await
        .unwrap();
    assert_eq!(fake.sandbox(&raw_id).unwrap().state, "started");
}

#[tokio::test]
async fn a_deleted_sandbox_is_not_available() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();
    assert!(fake.delete_sandbox(&raw_id));

    let not_available = SandboxError::NotAvailable(raw_id.clone());
    let exec = provider.exec(&raw_id, command("true"), &CancellationToken::new()).await;
    assert_eq!(exec.unwrap_err(), not_available);
    // A 404 from the toolbox is a missing sandbox here, not a missing file.
    assert_eq!(
        provider.stat(&raw_id, "/home/trueforge").await.unwrap_err(),
        not_available
    );
    assert_eq!(
        provider.download(&raw_id, "/home/trueforge/x", 10).await.unwrap_err(),
        not_available
    );
    assert_eq!(
        provider.reattach(&owner("acme"), &raw_id).await.unwrap_err(),
        not_available
    );
    assert_eq!(not_available.http_status(), Some(410));
    let unknown = "acme.never-made";
    assert_eq!(
        provider.reattach(&owner("acme"), unknown).await.unwrap_err(),
        SandboxError::NotAvailable(unknown.to_owned())
    );
}

#[tokio::test]
async fn another_tenants_sandbox_is_refused_without_asking_daytona() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();
    let asked = fake.requests().len();
    for tenant in ["globex", "acm", "acme.x"] {
        let refused = provider.reattach(&owner(tenant), &raw_id).await;
        assert_eq!(refused.unwrap_err(), SandboxError::TenantMismatch, "{tenant}");
    }
    assert_eq!(fake.requests().len(), asked);
}

#[tokio::test]
async fn a_daytona_500_is_a_clear_error_and_the_next_call_works() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);

    fake.fail_next(1);
    let error = provider.create(&owner("acme")).await.unwrap_err();
    let SandboxError::Provider(message) = error else {
        panic!("{error:?}")
    };
    assert!(
        message.contains("500") && message.contains("create sandbox"),
        "{message}"
    );
    assert!(message.contains("Internal server error"), "{message}");

    let raw_id = provider.create(&owner("acme")).await.unwrap();
    fake.fail_next(1);
    let error = provider
        .exec(&raw_id, command("echo hi"), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SandboxError::Provider(message) if message.contains("500") && message.contains("execute")),
        "{error:?}"
    );
    assert_eq!(run(&provider, &raw_id, command("echo hi")).await.output, "hi\n");

    fake.fail_next(1);
    let error = provider.reattach(&owner("acme"), &raw_id).await.unwrap_err();
    assert!(
        matches!(&error, SandboxError::Provider(message) if message.contains("500 to get sandbox")),
        "{error:?}"
    );
    provider.reattach(&owner("acme"), &raw_id).await.unwrap();
}

#[tokio::test]
async fn daytona_not_answering_is_an_error_within_the_timeout() {
    let fake = FakeDaytona::start().await;
    let provider = DaytonaProvider::new(DaytonaConfig {
        request_timeout: Duration::from_secs(1),
        ..config(&fake)
    })
    .unwrap();
    let raw_id = provider.create(&owner("acme")).await.unwrap();

    fake.delay_next(1, Duration::from_secs(20));
    let started = Instant::now();
    let error = provider.reattach(&owner("acme"), &raw_id).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert!(
        matches!(&error, SandboxError::Provider(message) if message.contains("did not answer get sandbox")),
        "{error:?}"
    );

    // A command may take its own timeout plus the request timeout, not longer.
    fake.delay_next(1, Duration::from_secs(20));
    let mut request = command("true");
    request.timeout = Duration::from_secs(1);
    let started = Instant::now();
    let error = provider
        .exec(&raw_id, request, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(
        matches!(&error, SandboxError::Provider(message) if message.contains("did not answer execute")),
        "{error:?}"
    );

    fake.delay_next(1, Duration::from_secs(20));
    let started = Instant::now();
    let error = provider.stat(&raw_id, "/home/trueforge").await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert!(matches!(error, SandboxError::Provider(_)), "{error:?}");

    // Answering again, it works.
    assert!(provider.stat(&raw_id, "/home/trueforge").await.unwrap().is_dir);
}

#[tokio::test]
async fn no_daytona_at_the_address_is_a_provider_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let provider = DaytonaProvider::new(DaytonaConfig {
        api_url: format!("http://127.0.0.1:{port}/api"),
        request_timeout: Duration::from_secs(2),
        ..DaytonaConfig::new("key")
    })
    .unwrap();
    let error = provider.create(&owner("acme")).await.unwrap_err();
    assert!(
        matches!(&error, SandboxError::Provider(message) if message.contains("cannot reach Daytona")),
        "{error:?}"
    );
    let status = provider.status().await;
    assert_eq!(status.state, SandboxBuildStatus::Pending);
    assert!(status.reason.unwrap().contains("Daytona did not answer"));
    assert!(matches!(
        provider.check_credentials().await,
        Err(DaytonaCheckError::Unreachable(_))
    ));
}

#[tokio::test]
async fn a_bad_api_key_is_rejected_and_never_shown() {
    let fake = FakeDaytona::start().await;
    let secret = "dtn_wrong_secret_key";
    let provider = DaytonaProvider::new(DaytonaConfig {
        api_key: secret.to_owned(),
        ..config(&fake)
    })
    .unwrap();

    let status = provider.status().await;
    assert_eq!(status.state, SandboxBuildStatus::Failed);
    assert_eq!(status.reason.as_deref(), Some(REJECTED_REASON));
    let check = provider.check_credentials().await.unwrap_err();
    assert_eq!(check, DaytonaCheckError::Rejected);
    assert_eq!(
        check.to_string(),
        "Daytona rejected the API key — check the credentials"
    );
    assert_eq!(
        provider.ensure_snapshot().await.unwrap_err(),
        DaytonaCheckError::Rejected
    );

    let error = provider.create(&owner("acme")).await.unwrap_err();
    assert!(matches!(error, SandboxError::Unavailable(_)), "{error:?}");
    assert!(!error.to_string().contains(secret));
    assert!(!format!("{provider:?}").contains(secret));

    // The right key works.
    let good = self::provider(&fake);
    good.check_credentials().await.unwrap();
    assert_eq!(good.status().await.state, SandboxBuildStatus::Ready);
}

#[tokio::test]
async fn the_snapshot_state_is_the_provider_status() {
    let fake = FakeDaytona::start().await;
    let provider = provider(&fake);
    assert_eq!(provider.status().await.state, SandboxBuildStatus::Ready);
    assert_eq!(provider.status().await.reason, None);

    for state in ["pending", "pulling", "building", "validating", "inactive"] {
        fake.set_snapshot(FAKE_DAYTONA_SNAPSHOT, state, None);
        let status = provider.status().await;
        assert_eq!(status.state, SandboxBuildStatus::Pending, "{state}");
        assert!(status.reason.unwrap().contains(state));
    }
    for state in ["error", "build_failed"] {
        fake.set_snapshot(FAKE_DAYTONA_SNAPSHOT, state, Some("image not found"));
        let status = provider.status().await;
        assert_eq!(status.state, SandboxBuildStatus::Failed, "{state}");
        assert!(status.reason.unwrap().contains("image not found"));
    }
    // A sandbox cannot be made from a snapshot that is not active.
    let error = provider.create(&owner("acme")).await.unwrap_err();
    assert!(matches!(error, SandboxError::Provider(_)), "{error:?}");

    fake.set_snapshot(FAKE_DAYTONA_SNAPSHOT, "active", None);
    fake.fail_next(1);
    let status = provider.status().await;
    assert_eq!(status.state, SandboxBuildStatus::Pending);
    assert!(status.reason.unwrap().starts_with("Daytona did not answer"));
    assert_eq!(provider.status().await.state, SandboxBuildStatus::Ready);

    // A snapshot Daytona does not have: failed without an image to register it from, pending with one.
    let missing = DaytonaProvider::new(DaytonaConfig {
        snapshot: "other".to_owned(),
        ..config(&fake)
    })
    .unwrap();
    assert_eq!(missing.status().await.state, SandboxBuildStatus::Failed);
    missing.check_credentials().await.unwrap();
    let registrable = DaytonaProvider::new(DaytonaConfig {
        snapshot: "other".to_owned(),
        image: Some("registry.test/trueforge-sandbox:1".to_owned()),
        ..config(&fake)
    })
    .unwrap();
    assert_eq!(registrable.status().await.state, SandboxBuildStatus::Pending);
}

#[tokio::test]
async fn ensure_snapshot_registers_activates_and_replaces_a_failed_one() {
    let fake = FakeDaytona::start().await;
    let provider = DaytonaProvider::new(DaytonaConfig {
        snapshot: "trueforge-build-1".to_owned(),
        image: Some("registry.test/trueforge-sandbox:1".to_owned()),
        ..config(&fake)
    })
    .unwrap();

    let status = provider.ensure_snapshot().await.unwrap();
    assert_eq!(status.state, SandboxBuildStatus::Pending);
    assert_eq!(fake.snapshot_state("trueforge-build-1").as_deref(), Some("pending"));
    // Registered already: pending until Daytona has pulled it.
    assert_eq!(
        provider.ensure_snapshot().await.unwrap().state,
        SandboxBuildStatus::Pending
    );

    fake.set_snapshot("trueforge-build-1", "active", None);
    assert_eq!(
        provider.ensure_snapshot().await.unwrap(),
        trueforge_sandbox::ProviderStatus::ready()
    );

    fake.set_snapshot("trueforge-build-1", "inactive", None);
    assert_eq!(
        provider.ensure_snapshot().await.unwrap().state,
        SandboxBuildStatus::Ready
    );
    assert_eq!(fake.snapshot_state("trueforge-build-1").as_deref(), Some("active"));

    fake.set_snapshot("trueforge-build-1", "build_failed", Some("pull failed"));
    assert_eq!(
        provider.ensure_snapshot().await.unwrap().state,
        SandboxBuildStatus::Pending
    );
    assert_eq!(fake.snapshot_state("trueforge-build-1").as_deref(), Some("pending"));

    fake.fail_next(1);
    assert!(matches!(
        provider.ensure_snapshot().await,
        Err(DaytonaCheckError::Unreachable(message)) if message.contains("500")
    ));
}

#[tokio::test]
async fn older_daytona_without_a_toolbox_proxy_url_is_reached_through_the_api() {
    let fake = FakeDaytona::start_with(FakeDaytonaOptions {
        omit_toolbox_proxy_url: true,
        ..FakeDaytonaOptions::default()
    })
    .await;
    let provider = provider(&fake);
    let raw_id = provider.create(&owner("acme")).await.unwrap();
    assert_eq!(
        run(&provider, &raw_id, command("echo via api")).await.output,
        "via api\n"
    );
    let id = fake.sandbox(&raw_id).unwrap().id;
    assert!(
        fake.requests()
            .contains(&format!("POST /api/toolbox/{id}/toolbox/process/execute")),
        "{:?}",
        fake.requests()
    );
}

#[tokio::test]
async fn a_sandbox_that_does_not_come_up_is_an_error_within_the_start_timeout() {
    let fake = FakeDaytona::start().await;
    let provider = DaytonaProvider::new(DaytonaConfig {
        start_timeout: Duration::from_secs(1),
        ..config(&fake)
    })
    .unwrap();
    let raw_id = provider.create(&owner("acme")).await.unwrap();

    assert!(fake.set_sandbox_state(&raw_id, "starting"));
    let started = Instant::now();
    let error = provider.reattach(&owner("acme"), &raw_id).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert!(
        matches!(&error, SandboxError::Provider(message) if message.contains("did not start within 1s (it is starting)")),
        "{error:?}"
    );

    assert!(fake.set_sandbox_state(&raw_id, "error"));
    let error = provider.reattach(&owner("acme"), &raw_id).await.unwrap_err();
    assert!(
        matches!(&error, SandboxError::Provider(message) if message.contains("is in state error")),
        "{error:?}"
    );

    // Daytona may still list a deleted sandbox for a while, as destroyed.
    assert!(fake.set_sandbox_state(&raw_id, "destroyed"));
    assert_eq!(
        provider.reattach(&owner("acme"), &raw_id).await.unwrap_err(),
        SandboxError::NotAvailable(raw_id.clone())
    );
}
