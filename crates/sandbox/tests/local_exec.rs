//! The local provider runs commands: Python, the workspace kept across commands and providers, output in
//! order and bounded, timeouts and cancellation that leave nothing running, the Code Mode socket.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod local_support;

use std::time::{Duration, Instant};

use local_support::{fixture, fixture_with, host_processes_with, marker, owner, request};
use tokio_util::sync::CancellationToken;
use trueforge_sandbox::{LimitEnforcement, LocalConfig, LocalProvider, SandboxError, SandboxOwner, SandboxProvider};

#[tokio::test]
async fn probe_finds_bubblewrap_and_python() {
    let data = tempfile::tempdir().unwrap();
    let probe = LocalProvider::probe(&LocalConfig::new(data.path().join("sandboxes"))).expect("the probe passes");
    assert!(probe.bwrap_version.starts_with("bubblewrap "), "{probe:?}");
    assert_eq!(probe.python3, "/usr/bin/python3");
    assert!(!probe.network);
    // The probe's throwaway workspace is gone.
    let left: Vec<_> = std::fs::read_dir(data.path().join("sandboxes"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".probe"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn as_root_the_limits_are_held_by_cgroups() {
    let fixture = fixture();
    if rustix::process::geteuid().is_root() {
        assert!(
            matches!(fixture.provider.process_limit(), LimitEnforcement::Cgroup(_)),
            "root needs a pids cgroup: RLIMIT_NPROC does not bind uid 0"
        );
    }
    let output = fixture.run(&fixture.create().await, "echo ok").await;
    assert_eq!(output.output, "ok\n");
}

#[tokio::test]
async fn describes_itself() {
    let fixture = fixture();
    let provider = &fixture.provider;
    assert_eq!(provider.kind(), "local");
    assert_eq!(provider.code_mode_socket(), Some("/run/trueforge/bridge.sock"));
    let layout = provider.layout();
    assert_eq!(layout.workspace, "/workspace");
    assert_eq!(layout.uploads, "/workspace/uploads");
    assert_eq!(layout.tool_results, "/workspace/tool-results");
    assert_eq!(layout.skills, "/workspace/skills");
    assert!(provider.instructions().is_some_and(|text| text.contains("/workspace")));
}

#[tokio::test]
async fn python_runs_inside_as_the_sandbox_user_in_the_workspace() {
    let fixture = fixture();
    let id = fixture.create().await;
    let output = fixture
        .run(
            &id,
            "python3 -c 'import os, sys; print(6 * 7, os.getcwd(), sys.executable)'; id -un; echo $HOME",
        )
        .await;
    assert_eq!(output.exit_code, Some(0), "{output:?}");
    assert_eq!(output.output, "42 /workspace /usr/bin/python3\nsandbox\n/workspace\n");
    let layout = fixture.run(&id, "ls /workspace").await;
    assert_eq!(layout.output, "skills\ntool-results\nuploads\n");
}

#[tokio::test]
async fn the_workspace_persists_across_commands_and_providers() {
    let fixture = fixture();
    let id = fixture.create().await;
    assert_eq!(fixture.run(&id, "echo kept > note.txt").await.exit_code, Some(0));
    assert_eq!(fixture.run(&id, "cat note.txt").await.output, "kept\n");

    // A second provider on the same root (a restarted server) reattaches and sees the same files.
    let second = LocalProvider::new(LocalConfig::new(fixture.root())).unwrap();
    second.reattach(&fixture.owner, &id).await.unwrap();
    let output = second
        .exec(&id, request("cat /workspace/note.txt"), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(output.output, "kept\n");
    let stat = second.stat(&id, "/workspace/note.txt").await.unwrap();
    assert_eq!(stat.size, 5);
}

#[tokio::test]
async fn reattach_checks_the_tenant_and_that_the_sandbox_exists() {
    let fixture = fixture();
    let id = fixture.create().await;
    assert!(id.starts_with("acme."), "{id}");
    fixture.provider.reattach(&fixture.owner, &id).await.unwrap();
    assert_eq!(
        fixture.provider.reattach(&owner("other"), &id).await,
        Err(SandboxError::TenantMismatch)
    );
    std::fs::remove_dir_all(fixture.root().join(&id)).unwrap();
    assert!(matches!(
        fixture.provider.reattach(&fixture.owner, &id).await,
        Err(SandboxError::NotAvailable(_))
    ));
    assert!(matches!(
        fixture
            .provider
            .exec(&id, request("true"), &CancellationToken::new())
            .await,
        Err(SandboxError::NotAvailable(_))
    ));
    let bad_tenant = SandboxOwner {
        tenant: "../x".to_owned(),
        session: "s".to_owned(),
    };
    assert!(matches!(
        fixture.provider.create(&bad_tenant).await,
        Err(SandboxError::InvalidId(_))
    ));
}

#[tokio::test]
async fn sandboxes_are_private_directories() {
    use std::os::unix::fs::PermissionsExt;
    let fixture = fixture();
    let id = fixture.create().await;
    let mode = std::fs::metadata(fixture.root().join(&id))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    let root_mode = std::fs::metadata(fixture.root()).unwrap().permissions().mode();
    assert_eq!(root_mode & 0o777, 0o700);
}

#[tokio::test]
async fn cwd_and_environment_are_the_requests() {
    let fixture = fixture();
    let id = fixture.create().await;
    let mut with_cwd = request("pwd");
    with_cwd.cwd = Some("uploads".to_owned());
    assert_eq!(fixture.run_request(&id, with_cwd).await.output, "/workspace/uploads\n");
    let mut absolute = request("pwd");
    absolute.cwd = Some("/tmp".to_owned());
    assert_eq!(fixture.run_request(&id, absolute).await.output, "/tmp\n");
    let mut escaping = request("pwd");
    escaping.cwd = Some("../etc".to_owned());
    assert!(matches!(
        fixture.provider.exec(&id, escaping, &CancellationToken::new()).await,
        Err(SandboxError::InvalidPath { .. })
    ));

    let mut with_env = request("echo \"$GREETING|$LANG|$TERM|$PATH\"");
    with_env.env.insert("GREETING".to_owned(), "hello world".to_owned());
    assert_eq!(
        fixture.run_request(&id, with_env).await.output,
        "hello world|C.UTF-8|dumb|/usr/local/bin:/usr/bin:/bin\n"
    );
    for bad in ["1X", "A B", "A=B", ""] {
        let mut invalid = request("true");
        invalid.env.insert(bad.to_owned(), "x".to_owned());
        assert!(
            fixture
                .provider
                .exec(&id, invalid, &CancellationToken::new())
                .await
                .is_err(),
            "{bad:?} passed"
        );
    }
}

#[tokio::test]
async fn stdout_and_stderr_arrive_interleaved_in_order() {
    let fixture = fixture();
    let id = fixture.create().await;
    let output = fixture
        .run(&id, "echo one; echo two >&2; echo three; echo four >&2; exit 7")
        .await;
    assert_eq!(output.output, "one\ntwo\nthree\nfour\n");
    assert_eq!(output.exit_code, Some(7));
    assert!(!output.timed_out && !output.cancelled);
}

#[tokio::test]
async fn a_gigabyte_of_output_keeps_head_and_tail_in_bounded_memory() {
    let fixture = fixture();
    let id = fixture.create().await;
    let mut big = request("echo start; head -c 1000000000 /dev/zero | tr '\\0' x; echo; echo end");
    big.output_limit = 1000;
    let started = Instant::now();
    let output = fixture.run_request(&id, big).await;
    assert!(output.output.len() <= 1000, "{}", output.output.len());
    assert!(output.output.starts_with("start\nxxx"), "{:?}", &output.output[..20]);
    // 1 GB is past the output ceiling (64 × the limit, at least 16 MiB): killed, and it says so.
    assert_eq!(output.exit_code, None);
    assert!(output.output.contains("output stopped after"), "{:?}", output.output);
    assert!(
        output.omitted_bytes + output.output.len() as u64 > 16 << 20,
        "{}",
        output.omitted_bytes
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(peak_memory_bytes() < 256 << 20, "peak {}", peak_memory_bytes());
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn a_large_output_below_the_ceiling_is_counted_whole() {
    let fixture = fixture();
    let id = fixture.create().await;
    let mut large = request("echo start; head -c 5000000 /dev/zero | tr '\\0' x; echo; echo end");
    large.output_limit = 100;
    let output = fixture.run_request(&id, large).await;
    assert_eq!(output.exit_code, Some(0), "{output:?}");
    assert!(output.output.starts_with("start\n"), "{output:?}");
    assert!(output.output.ends_with("x\nend\n"), "{output:?}");
    assert_eq!(output.output.len() as u64 + output.omitted_bytes, 6 + 5_000_000 + 1 + 4);
}

#[tokio::test]
async fn an_output_without_end_is_stopped() {
    let fixture = fixture();
    let id = fixture.create().await;
    let mut endless = request("yes");
    endless.output_limit = 200;
    let started = Instant::now();
    let output = fixture.run_request(&id, endless).await;
    assert_eq!(output.exit_code, None);
    assert!(!output.timed_out);
    assert!(output.output.starts_with("y\ny\n"));
    assert!(
        output.output.ends_with("the command was killed]\n"),
        "{:?}",
        output.output
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_command_that_never_ends_times_out() {
    let fixture = fixture();
    let id = fixture.create().await;
    let mut forever = request("echo started; sleep 1000");
    forever.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let output = fixture.run_request(&id, forever).await;
    assert!(output.timed_out, "{output:?}");
    assert!(!output.cancelled);
    assert_eq!(output.exit_code, None);
    assert_eq!(output.output, "started\n");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[tokio::test]
async fn timeout_kills_the_whole_tree_daemons_and_term_ignorers_included() {
    let fixture = fixture();
    let id = fixture.create().await;
    let mark = marker();
    // A double-forked daemon in its own session, a process ignoring SIGTERM, and a plain child.
    let command = format!(
        "setsid bash -c '(exec -a {mark}-daemon sleep 1000) &'; \
         (trap '' TERM; exec -a {mark}-stubborn sleep 1000) & \
         bash -c 'exec -a {mark}-child sleep 1000' & \
         sleep 0.2; echo ready; wait"
    );
    let mut long = request(&command);
    long.timeout = Duration::from_millis(1500);
    let output = fixture.run_request(&id, long).await;
    assert!(output.timed_out, "{output:?}");
    assert_eq!(output.output, "ready\n");
    assert_eq!(host_processes_with(&mark), Vec::<String>::new());
    fixture.assert_still_works(&id).await;
}

#[tokio::test]
async fn a_finished_command_leaves_no_daemon_behind() {
    let fixture = fixture();
    let id = fixture.create().await;
    let mark = marker();
    let started = Instant::now();
    let output = fixture
        .run(
            &id,
            &format!("setsid bash -c '(exec -a {mark} sleep 1000) &' >/dev/null 2>&1; echo done"),
        )
        .await;
    assert_eq!(output.exit_code, Some(0));
    assert_eq!(output.output, "done\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(host_processes_with(&mark), Vec::<String>::new());
}

#[tokio::test]
async fn cancel_kills_a_running_tree() {
    let fixture = fixture();
    let id = fixture.create().await;
    let mark = marker();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let command = format!("(trap '' TERM; exec -a {mark} sleep 1000) & echo running; wait");
    let output = fixture.provider.exec(&id, request(&command), &cancel).await.unwrap();
    assert!(output.cancelled, "{output:?}");
    assert!(!output.timed_out);
    assert_eq!(output.exit_code, None);
    assert_eq!(output.output, "running\n");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(host_processes_with(&mark), Vec::<String>::new());

    // Cancelled before it starts: nothing runs.
    let output = fixture.provider.exec(&id, request("touch ran"), &cancel).await.unwrap();
    assert!(output.cancelled);
    assert!(!fixture.root().join(&id).join("ran").exists());
}

#[tokio::test]
async fn dropping_the_exec_kills_the_sandbox() {
    let fixture = fixture();
    let id = fixture.create().await;
    let mark = marker();
    let command = format!("exec -a {mark} sleep 1000");
    let dropped = tokio::time::timeout(
        Duration::from_millis(500),
        fixture.provider.exec(&id, request(&command), &CancellationToken::new()),
    )
    .await;
    assert!(dropped.is_err(), "the command ended on its own");
    let deadline = Instant::now() + Duration::from_secs(3);
    while !host_processes_with(&mark).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(host_processes_with(&mark), Vec::<String>::new());
}

#[tokio::test]
async fn the_code_mode_bridge_socket_is_reachable_inside() {
    let fixture = fixture();
    let id = fixture.create().await;
    let socket_dir = tempfile::tempdir().unwrap();
    let socket = socket_dir.path().join("bridge.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut received = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut received)
            .await
            .unwrap();
        received
    });
    let mut with_socket = request(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); \
         s.connect('/run/trueforge/bridge.sock'); s.sendall(b'ping'); s.close()\"",
    );
    with_socket.bridge_socket = Some(socket.clone());
    let output = fixture.run_request(&id, with_socket).await;
    assert_eq!(output.exit_code, Some(0), "{output:?}");
    assert_eq!(server.await.unwrap(), "ping");
    // Without a socket in the request there is none inside.
    let output = fixture.run(&id, "test -e /run/trueforge/bridge.sock").await;
    assert_eq!(output.exit_code, Some(1));
    // A socket that is not there is the server's mistake, not a command's failure.
    let mut missing = request("true");
    missing.bridge_socket = Some(socket_dir.path().join("missing.sock"));
    assert!(
        fixture
            .provider
            .exec(&id, missing, &CancellationToken::new())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn tmp_is_fresh_for_every_command() {
    let fixture = fixture();
    let id = fixture.create().await;
    assert_eq!(fixture.run(&id, "echo x > /tmp/t && cat /tmp/t").await.output, "x\n");
    assert_eq!(fixture.run(&id, "ls -A /tmp").await.output, "");
}

#[tokio::test]
async fn concurrent_commands_in_one_sandbox_do_not_disturb_each_other() {
    let fixture = fixture();
    let id = fixture.create().await;
    let commands: Vec<String> = (0..4).map(|index| format!("sleep 0.2; echo {index}")).collect();
    let outputs = futures::future::join_all(commands.iter().map(|command| fixture.run(&id, command))).await;
    for (index, output) in outputs.iter().enumerate() {
        assert_eq!(output.output, format!("{index}\n"));
    }
}

#[tokio::test]
async fn the_network_switch_shares_the_hosts_network() {
    let fixture = fixture_with(|config| config.network = true);
    let id = fixture.create().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let output = fixture
        .run(&id, &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"))
        .await;
    assert_eq!(output.output, "connected\n", "{output:?}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_ok(), "the listener saw no connection");
}

fn peak_memory_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

#[tokio::test]
async fn the_longest_command_line_runs() {
    let fixture = fixture();
    let id = fixture.create().await;
    // A heredoc as agents write files with: just under the kernel's 128 KiB for one argument.
    let body = "y".repeat(130_000);
    let output = fixture
        .run(&id, &format!("cat > long.txt <<'EOF'\n{body}\nEOF\nwc -c < long.txt"))
        .await;
    assert_eq!(output.output, "130001\n", "{output:?}");
    let too_long = "z".repeat(140_000);
    let result = fixture
        .provider
        .exec(&id, request(&format!("echo {too_long}")), &CancellationToken::new())
        .await;
    assert!(matches!(result, Err(SandboxError::Provider(_))), "{result:?}");
}

/// bubblewrap exits before its sandbox's init, which the kernel then hands to the nearest subreaper: a
/// server that is one (or is pid 1 in a container) must not collect zombies.
#[tokio::test]
async fn a_server_that_adopts_orphans_is_left_no_zombies() {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).unwrap();
    let fixture = fixture();
    let id = fixture.create().await;
    for command in ["true", "sleep 0.1 & echo started", "setsid bash -c 'sleep 5 &'"] {
        fixture.run(&id, command).await;
    }
    let mut quick = request("sleep 10");
    quick.timeout = Duration::from_millis(200);
    assert!(fixture.run_request(&id, quick).await.timed_out);
    let own = std::process::id().to_string();
    let zombies: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("status")).ok())
        .filter(|status| {
            status
                .lines()
                .any(|line| line.split_whitespace().eq(["PPid:", own.as_str()]))
                && status.lines().any(|line| line.starts_with("State:\tZ"))
        })
        .collect();
    assert!(zombies.is_empty(), "{zombies:?}");
}
