//! Escape probes: from inside `exec`, try to read or write the host, reach the network, see the server's
//! environment or processes, exhaust the machine, or lead the server's file operations out through planted
//! symlinks and forged ids. Each is blocked or contained, and the provider still works afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod local_support;

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use local_support::{Fixture, fixture, fixture_with, host_processes_with, marker, request};
use tokio_util::sync::CancellationToken;
use trueforge_sandbox::{SandboxError, SandboxProvider};

/// A data directory with a secret next to the sandboxes, and a second session with a secret of its own.
struct Neighbours {
    data_secret: String,
    data_secret_path: String,
    other_id: String,
    other_secret: String,
    other_dir: String,
}

async fn neighbours(fixture: &Fixture) -> Neighbours {
    let data_secret = marker();
    let data_secret_path = fixture.data.path().join("secret.key");
    std::fs::write(&data_secret_path, &data_secret).unwrap();
    let other_id = fixture.create().await;
    let other_secret = marker();
    fixture
        .provider
        .upload(&other_id, "/workspace/secret.txt", Bytes::from(other_secret.clone()))
        .await
        .unwrap();
    let other_dir = fixture.root().join(&other_id);
    // The probes below must be able to fail: what they look for is really there on the host.
    assert_eq!(std::fs::read_to_string(&data_secret_path).unwrap(), data_secret);
    assert!(other_dir.join("secret.txt").is_file());
    Neighbours {
        data_secret,
        data_secret_path: data_secret_path.display().to_string(),
        other_id,
        other_secret,
        other_dir: other_dir.display().to_string(),
    }
}

#[tokio::test]
async fn host_files_outside_the_workspace_cannot_be_read() {
    let fixture = fixture();
    let id = fixture.create().await;
    let neighbours = neighbours(&fixture).await;
    assert!(Path::new("/etc/shadow").exists() && Path::new("/root").is_dir());
    let Neighbours {
        data_secret_path,
        other_dir,
        other_id,
        ..
    } = &neighbours;
    let command = format!(
        "cat {data_secret_path}; cat {other_dir}/secret.txt; cat /workspace/../{other_id}/secret.txt; \
         cat /etc/shadow; cat /etc/ssl/private/*; ls -A /root; ls -A /home; cat /proc/1/root/etc/shadow; \
         ls -A /; find / -maxdepth 3 -not -path '/proc/*' -not -path '/usr/*' 2>/dev/null; \
         grep -rs -e {} -e {} /etc /run /tmp /var /workspace 2>/dev/null; true",
        neighbours.data_secret, neighbours.other_secret
    );
    let output = fixture.run(&id, &command).await;
    assert!(!output.output.contains(&neighbours.data_secret), "{}", output.output);
    assert!(!output.output.contains(&neighbours.other_secret), "{}", output.output);
    assert!(output.output.contains("/etc/shadow: No such file"), "{}", output.output);
    assert!(output.output.contains("cannot access '/root'"), "{}", output.output);
    // The top level holds only what the sandbox mounts.
    let top = fixture.run(&id, "ls -A /").await.output;
    assert_eq!(top, "bin\ndev\netc\nlib\nlib64\nproc\nsbin\ntmp\nusr\nvar\nworkspace\n");
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn nothing_outside_the_workspace_can_be_written() {
    let fixture = fixture();
    let id = fixture.create().await;
    let neighbours = neighbours(&fixture).await;
    let mark = marker();
    let targets = [
        format!("/usr/{mark}"),
        format!("/usr/local/{mark}"),
        format!("/etc/{mark}"),
        format!("/root/{mark}"),
        format!("/{mark}"),
        format!("/var/{mark}"),
        format!("/dev/{mark}"),
        format!("{}/{mark}", neighbours.other_dir),
        format!("/workspace/../{}/{mark}", neighbours.other_id),
    ];
    let mut command: String = targets.iter().map(|target| format!("touch {target}; ")).collect();
    // With every capability dropped, remounting cannot make the system writable either.
    command.push_str(&format!(
        "mount -o remount,rw,bind /usr; mount -o remount,rw /; touch /usr/{mark}-remount; true"
    ));
    let output = fixture.run(&id, &command).await;
    assert!(output.output.contains("Read-only file system"), "{}", output.output);
    for host in [
        format!("/usr/{mark}"),
        format!("/usr/local/{mark}"),
        format!("/usr/{mark}-remount"),
        format!("/etc/{mark}"),
        format!("/root/{mark}"),
        format!("/{mark}"),
        format!("/var/{mark}"),
        format!("/dev/{mark}"),
        format!("{}/{mark}", neighbours.other_dir),
        format!("{}/{mark}", fixture.root().display()),
    ] {
        assert!(!Path::new(&host).exists(), "{host} was written");
    }
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn no_privileges_and_no_nested_namespaces() {
    let fixture = fixture();
    let id = fixture.create().await;
    let core_pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap();
    let output = fixture
        .run(
            &id,
            "grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status; \
             unshare --user --map-root-user true && echo NESTED-USERNS; \
             unshare --mount true && echo NESTED-MOUNTNS; \
             mount -t tmpfs none /tmp && echo MOUNTED; \
             cat /proc/sys/kernel/core_pattern > /tmp/same; \
             cat /tmp/same > /proc/sys/kernel/core_pattern && echo SYSCTL-WRITTEN; \
             test -w /proc/sysrq-trigger && echo SYSRQ; \
             hostname; true",
        )
        .await;
    let text = &output.output;
    assert!(text.contains("CapEff:\t0000000000000000"), "{text}");
    assert!(text.contains("CapBnd:\t0000000000000000"), "{text}");
    for escaped in ["NESTED-USERNS", "NESTED-MOUNTNS", "MOUNTED", "SYSCTL-WRITTEN", "SYSRQ"] {
        assert!(!text.contains(escaped), "{escaped}: {text}");
    }
    assert!(text.ends_with("sandbox\n"), "{text}");
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap(),
        core_pattern
    );
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn the_network_is_unreachable_unless_switched_on() {
    let fixture = fixture();
    let id = fixture.create().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let output = fixture
        .run(
            &id,
            &format!(
                "exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED; \
                 python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=2); print('INTERNET')\"; \
                 ip -o link 2>/dev/null || cat /proc/net/dev; true"
            ),
        )
        .await;
    assert!(!output.output.contains("CONNECTED"), "{}", output.output);
    assert!(!output.output.contains("INTERNET"), "{}", output.output);
    assert!(
        listener
            .accept()
            .is_err_and(|error| error.kind() == std::io::ErrorKind::WouldBlock),
        "the host listener was reached"
    );
    // Only the sandbox's own loopback exists.
    let interfaces = fixture
        .run(&id, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
        .await;
    assert_eq!(interfaces.output, "lo\n");
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn the_servers_environment_does_not_reach_commands() {
    let fixture = fixture();
    let id = fixture.create().await;
    let output = fixture.run(&id, "env -0").await;
    let inside: Vec<(String, String)> = output
        .output
        .split('\0')
        .filter(|entry| !entry.is_empty())
        .filter_map(|entry| entry.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect();
    let names: Vec<&str> = inside.iter().map(|(name, _)| name.as_str()).collect();
    for name in &names {
        assert!(
            ["PATH", "HOME", "LANG", "TERM", "PWD", "SHLVL", "_", "OLDPWD"].contains(name),
            "{name} reached the command: {names:?}"
        );
    }
    // Ours have our values, so none of the test process's (cargo's, the harness's) came through.
    let expected = [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", "/workspace"),
        ("LANG", "C.UTF-8"),
        ("TERM", "dumb"),
    ];
    for (name, value) in expected {
        assert!(
            inside.contains(&(name.to_owned(), value.to_owned())),
            "{name}: {inside:?}"
        );
    }
    let server_env: Vec<(String, String)> = std::env::vars().collect();
    assert!(server_env.iter().any(|(name, _)| !names.contains(&name.as_str())));
    fixture.assert_still_works(&id).await;
}

/// Set in the environment of a copy of this test binary, which plays the server (`std::env::set_var` needs
/// `unsafe`, which the workspace forbids).
const SECRET_VARIABLE: &str = "TRUEFORGE_TEST_SERVER_SECRET";

/// The "server" half of the next test: runs `env` in a sandbox and prints it between markers. Run on its
/// own (without the secret) it checks the same and prints for nobody.
#[tokio::test]
async fn environment_probe_server() {
    let fixture = fixture();
    let id = fixture.create().await;
    let output = fixture.run(&id, "env").await;
    assert_eq!(output.exit_code, Some(0));
    println!("ENV-BEGIN\n{}ENV-END", output.output);
    if let Ok(secret) = std::env::var(SECRET_VARIABLE) {
        assert!(!output.output.contains(&secret), "{}", output.output);
    }
}

#[test]
fn a_secret_in_the_servers_environment_does_not_reach_commands() {
    let secret = marker();
    let server = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "environment_probe_server", "--nocapture", "--test-threads=1"])
        .env(SECRET_VARIABLE, &secret)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&server.stdout);
    assert!(
        server.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&server.stderr)
    );
    // The server ran the probe (the secret was in its environment) and the sandbox's `env` lacks it.
    let env = stdout
        .split_once("ENV-BEGIN\n")
        .and_then(|(_, rest)| rest.split_once("ENV-END"))
        .map(|(env, _)| env)
        .expect("the probe ran");
    assert!(env.contains("HOME=/workspace"), "{env}");
    assert!(!env.contains(&secret), "{env}");
    assert!(!env.contains(SECRET_VARIABLE), "{env}");
}

#[tokio::test]
async fn the_servers_processes_are_invisible() {
    let fixture = fixture();
    let id = fixture.create().await;
    let own = std::process::id();
    let output = fixture
        .run(
            &id,
            &format!("test -e /proc/{own} && echo VISIBLE; ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '"),
        )
        .await;
    assert!(!output.output.contains("VISIBLE"), "{}", output.output);
    let pids: Vec<u32> = output
        .output
        .split_whitespace()
        .map(|pid| pid.parse().unwrap())
        .collect();
    // bubblewrap's init, the shell, ls: the sandbox's own namespace starts at 1.
    assert!(pids.len() < 8 && pids.iter().all(|pid| *pid < 16), "{pids:?}");
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn a_fork_bomb_is_contained() {
    let fixture = fixture_with(|config| config.limits.max_processes = 64);
    let id = fixture.create().await;
    let mark = marker();
    // The bomb runs in the background while the command waits, so only the limit stops it.
    let mut bomb = request(&format!("exec -a {mark} bash -c ':(){{ :|:& }};:; sleep 60'"));
    bomb.timeout = Duration::from_secs(3);
    let started = Instant::now();
    let cancel = CancellationToken::new();
    let running = fixture.provider.exec(&id, bomb, &cancel);
    let watch = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        host_processes_with(&mark).len()
    };
    let (output, peak) = tokio::join!(running, watch);
    let output = output.unwrap();
    assert!(peak <= 64, "{peak} processes of the bomb at once");
    assert!(output.timed_out, "{output:?}");
    assert!(output.output.contains("Resource temporarily unavailable"), "{output:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(host_processes_with(&mark), Vec::<String>::new());
    // The host still spawns processes, and so does the sandbox.
    assert!(std::process::Command::new("true").status().unwrap().success());
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn a_memory_hog_is_stopped() {
    let fixture = fixture_with(|config| config.limits.memory_bytes = 256 << 20);
    let id = fixture.create().await;
    let output = fixture
        .run(
            &id,
            "python3 -c \"b = bytearray(1 << 30); b[::4096] = b'x' * (len(b) // 4096); print('ALLOCATED')\"",
        )
        .await;
    assert!(!output.output.contains("ALLOCATED"), "{output:?}");
    assert_ne!(output.exit_code, Some(0), "{output:?}");
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn cpu_time_is_limited() {
    let fixture = fixture_with(|config| config.limits.cpu_seconds = 1);
    let id = fixture.create().await;
    let started = Instant::now();
    let mut spin = request("while :; do :; done");
    spin.timeout = Duration::from_secs(15);
    let output = fixture.run_request(&id, spin).await;
    assert!(!output.timed_out, "{output:?}");
    assert_ne!(output.exit_code, Some(0));
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn file_size_is_limited() {
    let fixture = fixture_with(|config| config.limits.max_file_bytes = 1 << 20);
    let id = fixture.create().await;
    let output = fixture.run(&id, "head -c 5000000 /dev/zero > big; echo $?").await;
    assert_ne!(output.output.trim_end().rsplit('\n').next(), Some("0"), "{output:?}");
    let size = std::fs::metadata(fixture.root().join(&id).join("big")).unwrap().len();
    assert!(size <= 1 << 20, "{size}");
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn planted_symlinks_do_not_lead_file_operations_out() {
    let fixture = fixture();
    let id = fixture.create().await;
    let neighbours = neighbours(&fixture).await;
    let setup = format!(
        "ln -s /etc etc-link; ln -s /root/.bashrc bashrc; ln -s ../.. up; ln -s {} secret; \
         ln -s ../{} sibling; mkdir -p inner; echo inside > inner/a.txt; ln -s inner/a.txt good; \
         ln -s /workspace/inner/a.txt absolute; mkfifo fifo",
        neighbours.data_secret_path, neighbours.other_id
    );
    assert_eq!(fixture.run(&id, &setup).await.exit_code, Some(0));
    let provider = &fixture.provider;
    let leaving = [
        "/workspace/etc-link/passwd".to_owned(),
        "/workspace/etc-link".to_owned(),
        "/workspace/bashrc".to_owned(),
        "/workspace/up".to_owned(),
        format!("/workspace/up/sandboxes/{}/secret.txt", neighbours.other_id),
        "/workspace/secret".to_owned(),
        "/workspace/sibling/secret.txt".to_owned(),
        "/workspace/absolute".to_owned(),
    ];
    for path in &leaving {
        let refused = |result: Result<(), SandboxError>| {
            assert!(
                matches!(
                    result,
                    Err(SandboxError::InvalidPath {
                        reason: "leaves the sandbox",
                        ..
                    })
                ),
                "{path}: {result:?}"
            );
        };
        refused(provider.download(&id, path, u64::MAX).await.map(|_| ()));
        refused(provider.stat(&id, path).await.map(|_| ()));
    }
    let mark = marker();
    for path in [
        format!("/workspace/etc-link/{mark}"),
        format!("/workspace/up/{mark}"),
        format!("/workspace/sibling/{mark}"),
    ] {
        let result = provider.upload(&id, &path, Bytes::from_static(b"evil")).await;
        assert!(
            matches!(result, Err(SandboxError::InvalidPath { .. })),
            "{path}: {result:?}"
        );
    }
    assert!(!Path::new(&format!("/etc/{mark}")).exists());
    assert!(!Path::new(&format!("{}/{mark}", neighbours.other_dir)).exists());
    // Uploading onto a planted symlink replaces the link, never the file it points to.
    provider
        .upload(&id, "/workspace/secret", Bytes::from_static(b"replaced"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&neighbours.data_secret_path).unwrap(),
        neighbours.data_secret
    );
    assert!(
        std::fs::symlink_metadata(fixture.root().join(&id).join("secret"))
            .unwrap()
            .is_file()
    );
    // A relative link that stays inside works as the agent expects.
    let download = provider.download(&id, "/workspace/good", 100).await.unwrap();
    assert_eq!(download.size, 7);
    // A FIFO cannot hang the server.
    let fifo = tokio::time::timeout(Duration::from_secs(2), provider.download(&id, "/workspace/fifo", 100))
        .await
        .expect("opening a FIFO returned");
    assert!(matches!(fifo, Err(SandboxError::InvalidPath { .. })), "{fifo:?}");
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn forged_raw_ids_are_refused_everywhere() {
    let fixture = fixture();
    let id = fixture.create().await;
    let provider = &fixture.provider;
    for forged in [
        "../etc",
        "acme.x/../../etc",
        "..",
        "acme./..",
        "/etc",
        ".etc",
        "acme.01 x",
        "",
        &format!("{id}/.."),
        &format!("../sandboxes/{id}"),
    ] {
        let invalid = |result: Result<(), SandboxError>| {
            assert!(
                matches!(result, Err(SandboxError::InvalidId(_))),
                "{forged:?}: {result:?}"
            );
        };
        invalid(provider.reattach(&fixture.owner, forged).await);
        invalid(
            provider
                .exec(forged, request("true"), &CancellationToken::new())
                .await
                .map(|_| ()),
        );
        invalid(provider.upload(forged, "/workspace/x", Bytes::new()).await);
        invalid(provider.stat(forged, "/workspace").await.map(|_| ()));
        invalid(provider.download(forged, "/workspace/x", 1).await.map(|_| ()));
    }
    fixture.assert_still_works(&id).await;
}
