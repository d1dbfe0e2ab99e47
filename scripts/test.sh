#!/usr/bin/env bash
# The one test command: provisions a throwaway Postgres 15 (installing it when missing and running as root),
# exports its URL, runs the whole workspace's tests with nextest, and stops Postgres whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BIN=""
find_pg_bin() {
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then PG_BIN="$dir"; fi
  done
}

find_pg_bin
if [ -z "$PG_BIN" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test.sh: Postgres server binaries are missing; install the 'postgresql' package (needs root)" >&2
    exit 1
  fi
  echo "test.sh: installing postgresql from Debian packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
  find_pg_bin
  [ -n "$PG_BIN" ] || { echo "test.sh: postgresql installed but initdb not found" >&2; exit 1; }
fi

if ! command -v cargo-nextest >/dev/null 2>&1; then
  echo "test.sh: installing cargo-nextest" >&2
  cargo install --locked cargo-nextest
fi

# The MCP servers the trueforge-mcp tests run against (real servers from npm, pinned), installed once.
MCP_TEST_DIR="${TRUEFORGE_TEST_MCP_DIR:-$HOME/.cache/trueforge-test-mcp}"
MCP_TEST_VERSION=2026.8.31
MCP_TEST_PACKAGES=("@modelcontextprotocol/server-everything@$MCP_TEST_VERSION" "@modelcontextprotocol/server-filesystem@$MCP_TEST_VERSION")
# Named after the pinned version, so bumping it reinstalls.
MCP_TEST_STAMP="$MCP_TEST_DIR/.installed-$MCP_TEST_VERSION"
if [ ! -f "$MCP_TEST_STAMP" ]; then
  command -v npm >/dev/null 2>&1 || { echo "test.sh: npm is needed to install the MCP test servers" >&2; exit 1; }
  echo "test.sh: installing the MCP test servers into $MCP_TEST_DIR" >&2
  mkdir -p "$MCP_TEST_DIR"
  npm install --prefix "$MCP_TEST_DIR" --no-audit --no-fund --silent "${MCP_TEST_PACKAGES[@]}" >&2
  touch "$MCP_TEST_STAMP"
fi
export TRUEFORGE_TEST_MCP_DIR="$MCP_TEST_DIR"

# The official MCP conformance suite (client side, run by crates/mcp/tests/conformance.rs), pinned, with the
# Node 22 it needs (it fails to load on Node 20) installed from npm next to it rather than relying on the
# machine's Node. Installed once; the stamp names both versions, so bumping either reinstalls.
CONFORMANCE_DIR="${TRUEFORGE_TEST_CONFORMANCE_DIR:-$HOME/.cache/trueforge-test-conformance}"
CONFORMANCE_VERSION=0.2.0-alpha.12
CONFORMANCE_NODE_VERSION=22.23.3
CONFORMANCE_STAMP="$CONFORMANCE_DIR/.installed-$CONFORMANCE_VERSION-node-$CONFORMANCE_NODE_VERSION"
if [ ! -f "$CONFORMANCE_STAMP" ]; then
  command -v npm >/dev/null 2>&1 || { echo "test.sh: npm is needed to install the MCP conformance suite" >&2; exit 1; }
  echo "test.sh: installing the MCP conformance suite and Node $CONFORMANCE_NODE_VERSION into $CONFORMANCE_DIR" >&2
  mkdir -p "$CONFORMANCE_DIR"
  rm -f "$CONFORMANCE_DIR"/.installed-*
  npm install --prefix "$CONFORMANCE_DIR" --no-audit --no-fund --silent \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "node@$CONFORMANCE_NODE_VERSION" >&2
  "$CONFORMANCE_DIR/node_modules/.bin/node" --version >/dev/null \
    || { echo "test.sh: Node $CONFORMANCE_NODE_VERSION did not install into $CONFORMANCE_DIR" >&2; exit 1; }
  touch "$CONFORMANCE_STAMP"
fi
export TRUEFORGE_TEST_CONFORMANCE_DIR="$CONFORMANCE_DIR"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

PG_DIR="$(mktemp -d /tmp/trueforge-pg.XXXXXX)"
PG_PORT="$(free_port)"
# initdb refuses to run as root: run the server as the 'postgres' user when we are root.
RUN_AS=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home "$PG_DIR" postgres
  chown postgres "$PG_DIR"
  RUN_AS=(runuser -u postgres --)
fi

stop_postgres() {
  "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}
trap stop_postgres EXIT INT TERM

"${RUN_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 >"$PG_DIR/initdb.log" 2>&1 \
  || { cat "$PG_DIR/initdb.log" >&2; exit 1; }
"${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -w -l "$PG_DIR/server.log" \
  -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
  start >/dev/null || { cat "$PG_DIR/server.log" >&2; exit 1; }

export TRUEFORGE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
echo "test.sh: Postgres $("$PG_BIN/postgres" --version | awk '{print $3}') on port $PG_PORT" >&2

cargo nextest run --workspace --no-fail-fast "$@"
