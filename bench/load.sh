#!/usr/bin/env bash
# Turn throughput and per-step cost over HTTP: the release server and fake model as separate processes,
# then the load generator (crates/server/examples/load.rs). Prints the server's peak RSS at the end.
# Usage: bench/load.sh   (builds what it needs in release mode)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p trueforge -p trueforge-testkit --bin trueforge --bin fake-llm
cargo build --release -q -p trueforge-server --example load
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
SERVER_PORT="$(free_port)"; FAKE_PORT="$(free_port)"
DIR="$(mktemp -d)"
# No bodies in the fake model's request log: thousands of them would only grow its process.
target/release/fake-llm --port "$FAKE_PORT" --without-request-bodies >/dev/null 2>&1 & FAKE=$!
TRUEFORGE_DATA_DIR="$DIR" PORT="$SERVER_PORT" LOG_LEVEL=warn /usr/bin/time -v target/release/trueforge serve \
  >/dev/null 2>"$DIR/time.log" & SERVER=$!
until curl -sf "http://127.0.0.1:$SERVER_PORT/healthz" >/dev/null; do sleep 0.01; done
LOAD=(target/release/examples/load --server "http://127.0.0.1:$SERVER_PORT" --fake "http://127.0.0.1:$FAKE_PORT/v1")
"${LOAD[@]}" --concurrency 1 --turns 30 --steps 10
"${LOAD[@]}" --concurrency 200 --turns 200 --steps 10
"${LOAD[@]}" --concurrency 200 --turns 1000 --steps 10
# $SERVER is /usr/bin/time; the server is its child.
pkill -TERM -P "$SERVER"; wait "$SERVER" || true; kill "$FAKE" || true
grep -E "Maximum resident" "$DIR/time.log"
rm -rf "$DIR"
