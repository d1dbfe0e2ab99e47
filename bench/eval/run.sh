#!/usr/bin/env bash
# The full evaluation: every bundled task (bench/eval/tasks/) under the four configurations, RUNS times each,
# on the scripted model, against a fresh release server on a scratch data directory. Writes the JSON lines to
# OUT and prints the table (the one docs/eval.md keeps). Extra arguments go to trueforge-eval, e.g.
# `--model openai/gpt-5.4-mini --judge openai/gpt-5.4-mini` for a real model (key from the environment).
# Usage: bench/eval/run.sh [RUNS] [OUT] [trueforge-eval arguments…]   (default 5 runs, eval-results.jsonl)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${1:-5}"
OUT="${2:-eval-results.jsonl}"
shift $(( $# > 2 ? 2 : $# ))
cargo build --release -q -p trueforge -p trueforge-eval
TARGET="${CARGO_TARGET_DIR:-target}"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
DATA="$(mktemp -d)"
TRUEFORGE_DATA_DIR="$DATA" PORT="$PORT" LOG_LEVEL=warn "$TARGET/release/trueforge" serve >"$DATA/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -rf "$DATA"' EXIT
until curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null; do
  kill -0 "$SERVER" 2>/dev/null || { cat "$DATA/server.log"; exit 1; }
  sleep 0.05
done
status=0
"$TARGET/release/trueforge-eval" --server "http://127.0.0.1:$PORT" --runs "$RUNS" \
  --configs defaults,no-offload,no-recall,no-sub-agents --table --out "$OUT" "$@" || status=$?
# 1 means some run did not pass, which the comparison expects (some trajectories need the capability a
# configuration turns off); 2 is bad input or a broken server.
[ "$status" -le 1 ] || exit "$status"
