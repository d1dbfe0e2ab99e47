#!/usr/bin/env bash
# A trivial turn's harness time as the conversation grows (issue 13): the release server as its own process,
# the load generator's `--conversation` mode (crates/server/examples/load.rs) with its fake model in-process,
# one session of ROUNDS rounds (a 20-step tool turn, then 5 timed trivial turns). Prints round 1 against the
# last round and their ratio.
# Usage: bench/conversation.sh [ROUNDS]   (default 40; SERVER_BIN=path runs another server binary)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-40}"
if [[ -z "${SERVER_BIN:-}" ]]; then
  cargo build --release -q -p trueforge --bin trueforge
  SERVER_BIN=target/release/trueforge
fi
cargo build --release -q -p trueforge-server --example load
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
SERVER_PORT="$(free_port)"
DIR="$(mktemp -d)"
TRUEFORGE_DATA_DIR="$DIR" PORT="$SERVER_PORT" LOG_LEVEL=warn "$SERVER_BIN" serve >/dev/null 2>&1 & SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$DIR"' EXIT
until curl -sf "http://127.0.0.1:$SERVER_PORT/healthz" >/dev/null; do sleep 0.01; done
target/release/examples/load --server "http://127.0.0.1:$SERVER_PORT" --conversation "$ROUNDS" --steps 20 --trivial 5
