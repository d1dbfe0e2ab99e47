#!/usr/bin/env bash
# Cold start to healthy and idle memory of the release `trueforge` binary on a fresh data directory.
# Usage: bench/startup.sh [runs]   (build first: cargo build --release -p trueforge)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/trueforge
RUNS="${1:-5}"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
for run in $(seq 1 "$RUNS"); do
  DIR="$(mktemp -d)"
  start=$(date +%s%N)
  TRUEFORGE_DATA_DIR="$DIR" PORT="$PORT" LOG_LEVEL=warn "$BIN" serve >/dev/null 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null; do sleep 0.005; done
  healthy=$(( ($(date +%s%N) - start) / 1000000 ))
  sleep 2
  rss_kb=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  echo "run $run: healthy after ${healthy} ms (fresh database: created and migrated), idle RSS $(( rss_kb / 1024 )) MB"
  kill -TERM "$pid"; wait "$pid" || true
  rm -rf "$DIR"
done
