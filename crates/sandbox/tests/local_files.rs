//! Workspace files from the server's side: upload (directories made, atomic replacement), stat, and
//! streamed downloads, with the errors the download route maps to statuses.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod local_support;

use bytes::Bytes;
use futures::StreamExt;
use local_support::fixture;
use trueforge_sandbox::{FileStat, SandboxError, SandboxProvider};

async fn download_all(fixture: &local_support::Fixture, id: &str, path: &str) -> Vec<u8> {
    let download = fixture.provider.download(id, path, u64::MAX).await.unwrap();
    let mut body = download.body;
    let mut content = Vec::new();
    while let Some(chunk) = body.next().await {
        content.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(content.len() as u64, download.size);
    content
}

#[tokio::test]
async fn uploads_make_directories_and_commands_can_use_the_files() {
    let fixture = fixture();
    let id = fixture.create().await;
    let provider = &fixture.provider;
    provider
        .upload(
            &id,
            "/workspace/uploads/data/report.csv",
            Bytes::from_static(b"a,b\n1,2\n"),
        )
        .await
        .unwrap();
    let output = fixture
        .run(
            &id,
            "cat uploads/data/report.csv && echo 3,4 >> uploads/data/report.csv && echo appended",
        )
        .await;
    assert_eq!(output.output, "a,b\n1,2\nappended\n", "{output:?}");
    assert_eq!(
        download_all(&fixture, &id, "/workspace/uploads/data/report.csv").await,
        b"a,b\n1,2\n3,4\n"
    );
    // Replacing leaves no temporary file behind.
    provider
        .upload(&id, "/workspace/uploads/data/report.csv", Bytes::from_static(b"new"))
        .await
        .unwrap();
    assert_eq!(
        download_all(&fixture, &id, "/workspace/uploads/data/report.csv").await,
        b"new"
    );
    let listing = fixture.run(&id, "ls -A uploads/data").await;
    assert_eq!(listing.output, "report.csv\n");
}

#[tokio::test]
async fn files_made_by_commands_are_readable_and_writable_by_the_server() {
    let fixture = fixture();
    let id = fixture.create().await;
    let output = fixture
        .run(
            &id,
            "mkdir -p out && printf 'result' > out/r.txt && chmod 600 out/r.txt && chmod 700 out",
        )
        .await;
    assert_eq!(output.exit_code, Some(0), "{output:?}");
    assert_eq!(download_all(&fixture, &id, "/workspace/out/r.txt").await, b"result");
    fixture
        .provider
        .upload(&id, "/workspace/out/r.txt", Bytes::from_static(b"by the server"))
        .await
        .unwrap();
    assert_eq!(fixture.run(&id, "cat out/r.txt").await.output, "by the server");
}

#[tokio::test]
async fn stat_tells_files_from_directories() {
    let fixture = fixture();
    let id = fixture.create().await;
    let provider = &fixture.provider;
    provider
        .upload(&id, "/workspace/a.txt", Bytes::from_static(b"12345"))
        .await
        .unwrap();
    assert_eq!(
        provider.stat(&id, "/workspace/a.txt").await,
        Ok(FileStat { size: 5, is_dir: false })
    );
    assert!(provider.stat(&id, "/workspace").await.unwrap().is_dir);
    assert!(provider.stat(&id, "/workspace/uploads/").await.unwrap().is_dir);
    assert!(matches!(
        provider.stat(&id, "/workspace/missing").await,
        Err(SandboxError::FileNotFound(_))
    ));
    assert!(matches!(
        provider.stat(&id, "/workspace/a.txt/below").await,
        Err(SandboxError::FileNotFound(_))
    ));
}

#[tokio::test]
async fn downloads_stream_and_refuse_what_they_cannot_serve() {
    let fixture = fixture();
    let id = fixture.create().await;
    let provider = &fixture.provider;
    let large: Vec<u8> = (0..5_000_000_u32).map(|index| (index % 251) as u8).collect();
    provider
        .upload(&id, "/workspace/large.bin", Bytes::from(large.clone()))
        .await
        .unwrap();
    assert_eq!(download_all(&fixture, &id, "/workspace/large.bin").await, large);

    let status = |error: SandboxError| error.http_status();
    let too_large = provider.download(&id, "/workspace/large.bin", 1000).await.unwrap_err();
    assert!(matches!(
        too_large,
        SandboxError::FileTooLarge {
            size: 5_000_000,
            limit: 1000,
            ..
        }
    ));
    assert_eq!(status(too_large), Some(413));
    let directory = provider.download(&id, "/workspace/uploads", 1000).await.unwrap_err();
    assert!(matches!(directory, SandboxError::PathIsDirectory(_)));
    let missing = provider.download(&id, "/workspace/nothing", 1000).await.unwrap_err();
    assert_eq!(status(missing), Some(404));
    for (path, reason) in [
        ("/etc/passwd", "is outside the workspace"),
        ("/workspacex/a", "is outside the workspace"),
        ("/workspace/../etc/passwd", "must not contain traversal"),
        ("workspace/large.bin", "must be absolute"),
    ] {
        let error = provider.download(&id, path, 1000).await.unwrap_err();
        assert!(
            matches!(error, SandboxError::InvalidPath { reason: got, .. } if got == reason),
            "{path}: {error:?}"
        );
    }
}

#[tokio::test]
async fn uploads_refuse_directories_and_paths_through_files() {
    let fixture = fixture();
    let id = fixture.create().await;
    let provider = &fixture.provider;
    assert!(matches!(
        provider.upload(&id, "/workspace", Bytes::new()).await,
        Err(SandboxError::PathIsDirectory(_))
    ));
    assert!(matches!(
        provider.upload(&id, "/workspace/uploads", Bytes::new()).await,
        Err(SandboxError::PathIsDirectory(_))
    ));
    provider.upload(&id, "/workspace/file", Bytes::new()).await.unwrap();
    assert!(matches!(
        provider.upload(&id, "/workspace/file/inner.txt", Bytes::new()).await,
        Err(SandboxError::InvalidPath { .. })
    ));
    assert!(matches!(
        provider.upload(&id, "/tmp/x", Bytes::new()).await,
        Err(SandboxError::InvalidPath {
            reason: "is outside the workspace",
            ..
        })
    ));
    let missing_sandbox = provider.upload("acme.gone", "/workspace/x", Bytes::new()).await;
    assert!(
        matches!(missing_sandbox, Err(SandboxError::NotAvailable(_))),
        "{missing_sandbox:?}"
    );
}
