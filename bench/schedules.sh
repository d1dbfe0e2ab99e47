#!/usr/bin/env bash
# Schedule dispatch latency: one local release server (SQLite) and the fake model server, 1,000 schedules all
# due at the same second; prints due time -> run claimed and due time -> turn started, p50 / p90 / p99 / max
# (crates/server/examples/schedule_latency.rs).
# Usage: bench/schedules.sh [SCHEDULES]   (default 1000)
#   TRUEFORGE_BENCH_POSTGRES_URL=postgres://user@host:port/db bench/schedules.sh   two hosted replicas on a
#   database created there (and dropped after) and a Redis started here, instead of one local server
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT="${1:-1000}"
cargo build --release -q -p trueforge -p trueforge-testkit --bin trueforge --bin fake-llm
cargo build --release -q -p trueforge-server --example schedule_latency
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
DIR="$(mktemp -d)"
FAKE_PORT="$(free_port)"; A_PORT="$(free_port)"; B_PORT="$(free_port)"
target/release/fake-llm --port "$FAKE_PORT" --without-request-bodies >/dev/null 2>&1 & FAKE=$!
PG="${TRUEFORGE_BENCH_POSTGRES_URL:-}"
DB="bench_$(date +%s)_$$"
cleanup() {
  kill "${A:-}" "${B:-}" "$FAKE" "${REDIS:-}" 2>/dev/null || true
  wait 2>/dev/null || true
  [ -n "$PG" ] && psql "$PG" -Xqc "DROP DATABASE IF EXISTS $DB" || true
  rm -rf "$DIR"
}
trap cleanup EXIT
SERVERS=("$A_PORT")
if [ -z "$PG" ]; then
  echo "== one local server (SQLite)"
  TRUEFORGE_DATA_DIR="$DIR/a" PORT="$A_PORT" LOG_LEVEL=warn TRUEFORGE_UI=off \
    target/release/trueforge serve >"$DIR/a.log" 2>&1 & A=$!
else
  echo "== two hosted replicas (Postgres + Redis)"
  psql "$PG" -Xqc "CREATE DATABASE $DB"
  REDIS_PORT="$(free_port)"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" >/dev/null & REDIS=$!
  until redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; do sleep 0.05; done
  KEY="$(head -c 32 /dev/urandom | base64)"
  replica() {
    STANDALONE=false DATABASE_URL="${PG%/*}/$DB" REDIS_URL="redis://127.0.0.1:$REDIS_PORT" DATABASE_POOL_MAX=20 \
      TRUEFORGE_SECRET_KEY="$KEY" TRUEFORGE_DATA_DIR="$DIR/$1" PORT="$2" \
      LOG_LEVEL=warn TRUEFORGE_UI=off exec target/release/trueforge serve >"$DIR/$1.log" 2>&1
  }
  replica a "$A_PORT" & A=$!
  replica b "$B_PORT" & B=$!
  SERVERS+=("$B_PORT")
fi
for port in "${SERVERS[@]}"; do
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.05; done
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { echo "the server did not start" >&2; exit 1; }
done
target/release/examples/schedule_latency --server "http://127.0.0.1:$A_PORT" \
  --fake "http://127.0.0.1:$FAKE_PORT/v1" --schedules "$COUNT" --lead 30
