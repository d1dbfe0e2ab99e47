#!/usr/bin/env python3
"""Sandbox throughput: N sessions, each running turns whose model calls `exec` in its own local sandbox.

Starts the release `trueforge` and `fake-llm` binaries (build them first:
`cargo build --release -p trueforge --bin trueforge -p trueforge-testkit --bin fake-llm`) on a temporary data
directory, configures the fake model, then runs SESSIONS sessions concurrently, TURNS turns each. Every turn is
one model call asking for `exec` (a small Python command), the command, and one model call answering. Prints
the latency of the first turn of each session (it makes the sandbox), of the later turns, the throughput of
commands, and the server's peak memory (VmHWM) and its memory at the end (VmRSS).

Usage: scripts/bench-sandbox.py [SESSIONS] [TURNS]   (defaults 20 and 5)
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def target_dir():
    out = subprocess.check_output(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT
    )
    return json.loads(out)["target_directory"]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(port, deadline=20.0):
    end = time.time() + deadline
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def request(base, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req, timeout=120) as response:
        return response.read()


def memory_kib(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main():
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    turns = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    release = os.path.join(target_dir(), "release")
    data = tempfile.mkdtemp(prefix="trueforge-bench-sandbox.")
    fake_port, port = free_port(), free_port()
    fake = subprocess.Popen(
        [os.path.join(release, "fake-llm"), "--port", str(fake_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env = dict(os.environ, TRUEFORGE_DATA_DIR=data, PORT=str(port), LOG_LEVEL="warn")
    server = subprocess.Popen(
        [os.path.join(release, "trueforge"), "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(fake_port)
        wait_for(port)
        base = f"http://127.0.0.1:{port}"
        request(
            base,
            "PUT",
            "/api/v1/settings/model-providers",
            {
                "manifest": {
                    "type": "custom",
                    "name": "fake",
                    "base_url": f"http://127.0.0.1:{fake_port}/v1",
                    "auth": {"api_key": "fake-key-123456"},
                    "models": [
                        {"model_id": "fake-model", "name": "fake-model", "properties": {"context_length": 100000}}
                    ],
                }
            },
        )
        capabilities = json.loads(request(base, "GET", "/api/v1/capabilities"))
        if not capabilities["data"]["sandbox"]["enabled"]:
            raise SystemExit(f"the sandbox is off here: {capabilities}")
        spec = {"model": {"name": "fake/fake-model"}, "config": {"sandbox": {"enabled": True}}}
        ids = [
            json.loads(request(base, "POST", "/api/v1/sessions", {"agent": {"spec": spec}}))["data"]["id"]
            for _ in range(sessions)
        ]
        # The fake model's directives: one exec call, then an answer. No literal spaces in #args.
        arguments = json.dumps(
            {"intent": "bench", "command": "python3 -c 'print(sum(range(1000)))'"}, separators=(",", ":")
        ).replace(" ", "\\u0020")
        message = f"#steps=1 #tool=exec #args={arguments}"
        first, later = [], []
        failures = []

        def run(session_id):
            for index in range(turns):
                started = time.perf_counter()
                body = request(
                    base,
                    "POST",
                    f"/api/v1/sessions/{session_id}/turns",
                    {"input": [{"type": "user.message", "content": message}]},
                ).decode()
                elapsed = (time.perf_counter() - started) * 1000
                if '"exitCode":0' not in body.replace("\\", "") or "499500" not in body:
                    failures.append(body[-400:])
                (first if index == 0 else later).append(elapsed)

        threads = [threading.Thread(target=run, args=(session_id,)) for session_id in ids]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        result = {
            "sessions": sessions,
            "turns_per_session": turns,
            "failed_turns": len(failures),
            "first_turn_ms_p50": round(statistics.median(first), 1),
            "first_turn_ms_p95": round(percentile(first, 0.95), 1),
            "later_turn_ms_p50": round(statistics.median(later), 1) if later else None,
            "later_turn_ms_p95": round(percentile(later, 0.95), 1) if later else None,
            "commands_per_second": round(sessions * turns / wall, 1),
            "wall_s": round(wall, 2),
            "server_peak_rss_mib": round(memory_kib(server.pid, "VmHWM") / 1024, 1),
            "server_rss_mib_at_end": round(memory_kib(server.pid, "VmRSS") / 1024, 1),
        }
        print(json.dumps(result, indent=2))
        if failures:
            print("first failure:", failures[0], file=sys.stderr)
            raise SystemExit(1)
    finally:
        server.terminate()
        fake.terminate()
        server.wait(timeout=30)
        fake.wait(timeout=10)
        subprocess.run(["rm", "-rf", data], check=False)


if __name__ == "__main__":
    main()
