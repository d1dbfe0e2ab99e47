#!/usr/bin/env bash
# What exporting traces costs per step: the release server with no OTLP endpoint (no OpenTelemetry layer at
# all) against the same server exporting every span over OTLP/HTTP to the testkit's receiver (a separate
# process), interleaved round by round so drift on the VM hits both alike. Each round starts a fresh server
# and runs bench/load.sh's first two loads (30 sequential 10-step turns: per-step cost; 200 concurrent ones:
# throughput).
# Usage: bench/tracing.sh [ROUNDS]   (default 3; builds what it needs in release mode)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-3}"
cargo build --release -q -p trueforge -p trueforge-testkit --bin trueforge --bin fake-llm --bin otlp-receiver
cargo build --release -q -p trueforge-server --example load
TARGET="${CARGO_TARGET_DIR:-target}"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
FAKE_PORT="$(free_port)"; OTLP_PORT="$(free_port)"
"$TARGET/release/fake-llm" --port "$FAKE_PORT" --without-request-bodies >/dev/null 2>&1 & FAKE=$!
"$TARGET/release/otlp-receiver" --port "$OTLP_PORT" --report-seconds 3600 >/dev/null 2>&1 & RECEIVER=$!
trap 'kill $FAKE $RECEIVER 2>/dev/null || true' EXIT
round() { # $1: off | on
  local dir port server
  dir="$(mktemp -d)"; port="$(free_port)"
  if [ "$1" = on ]; then
    OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$OTLP_PORT" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
      TRUEFORGE_DATA_DIR="$dir" PORT="$port" LOG_LEVEL=warn "$TARGET/release/trueforge" serve >/dev/null 2>&1 &
  else
    TRUEFORGE_DATA_DIR="$dir" PORT="$port" LOG_LEVEL=warn "$TARGET/release/trueforge" serve >/dev/null 2>&1 &
  fi
  server=$!
  until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; do sleep 0.01; done
  local load=("$TARGET/release/examples/load" --server "http://127.0.0.1:$port" --fake "http://127.0.0.1:$FAKE_PORT/v1")
  echo "tracing $1: $("${load[@]}" --concurrency 1 --turns 30 --steps 10 | head -1)"
  echo "tracing $1: $("${load[@]}" --concurrency 200 --turns 200 --steps 10 | head -1)"
  kill -TERM "$server"; wait "$server" || true
  rm -rf "$dir"
}
for _ in $(seq "$ROUNDS"); do
  round off
  round on
done
