#!/usr/bin/env bash
# Hosted mode under load: the Redis bus's cross-replica delivery latency (crates/bus/examples/latency.rs),
# then two release replicas on one Postgres database and one Redis, driven by the load generator with every
# turn followed by a subscriber on the other replica (crates/server/examples/load.rs). Compare with
# bench/load.sh (one local replica on SQLite).
# Usage: TRUEFORGE_BENCH_POSTGRES_URL=postgres://user@host:port/db bench/hosted.sh
#   (a database is created on that server for the run and dropped after it; Redis is started here)
set -euo pipefail
cd "$(dirname "$0")/.."
PG="${TRUEFORGE_BENCH_POSTGRES_URL:?set TRUEFORGE_BENCH_POSTGRES_URL to a Postgres server (a database is created there)}"
cargo build --release -q -p trueforge -p trueforge-testkit --bin trueforge --bin fake-llm
cargo build --release -q -p trueforge-server --example load
cargo build --release -q -p trueforge-bus --example latency
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
DIR="$(mktemp -d)"
DB="bench_$(date +%s)_$$"
psql "$PG" -Xqc "CREATE DATABASE $DB"
DATABASE_URL="${PG%/*}/$DB"
REDIS_PORT="$(free_port)"; FAKE_PORT="$(free_port)"; A_PORT="$(free_port)"; B_PORT="$(free_port)"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" >/dev/null & REDIS=$!
target/release/fake-llm --port "$FAKE_PORT" --without-request-bodies >/dev/null 2>&1 & FAKE=$!
cleanup() {
  kill "${A:-}" "${B:-}" "$FAKE" "$REDIS" 2>/dev/null || true
  wait 2>/dev/null || true
  psql "$PG" -Xqc "DROP DATABASE IF EXISTS $DB" || true
  rm -rf "$DIR"
}
trap cleanup EXIT
until redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; do sleep 0.05; done
REDIS_URL="redis://127.0.0.1:$REDIS_PORT"

echo "== the bus alone: one process publishing, another's bus subscribed"
target/release/examples/latency --redis "$REDIS_URL" --streams 200 --events 50 --interval-ms 20
target/release/examples/latency --redis "$REDIS_URL" --streams 200 --events 50 --interval-ms 5

echo "== two replicas, each turn followed on the other one"
KEY="$(head -c 32 /dev/urandom | base64)"
replica() {
  STANDALONE=false DATABASE_URL="$DATABASE_URL" REDIS_URL="$REDIS_URL" DATABASE_POOL_MAX=20 \
    TRUEFORGE_SECRET_KEY="$KEY" TRUEFORGE_DATA_DIR="$DIR/$1" PORT="$2" \
    LOG_LEVEL=warn TRUEFORGE_UI=off exec target/release/trueforge serve >"$DIR/$1.log" 2>&1
}
replica a "$A_PORT" & A=$!
replica b "$B_PORT" & B=$!
for port in "$A_PORT" "$B_PORT"; do
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.05; done
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { echo "a replica did not start" >&2; exit 1; }
done
LOAD=(target/release/examples/load --server "http://127.0.0.1:$A_PORT,http://127.0.0.1:$B_PORT"
  --fake "http://127.0.0.1:$FAKE_PORT/v1")
"${LOAD[@]}" --concurrency 1 --turns 30 --steps 10
"${LOAD[@]}" --concurrency 200 --turns 200 --steps 10
"${LOAD[@]}" --concurrency 200 --turns 1000 --steps 10
