#!/usr/bin/env bash
# The one test command: provisions a throwaway Postgres 15 and Redis 7 (installing them when missing and running
# as root), exports their URLs, runs the whole workspace's tests with nextest, and stops both whatever happens; then
# fuzzes a real server against its own OpenAPI document with schemathesis (see run_schemathesis below) and
# runs the TypeScript SDK's checks and tests (run_sdk_typescript).
#
#   scripts/test.sh [nextest arguments]   everything (with arguments, a filtered nextest run and no fuzzing)
#   scripts/test.sh --schemathesis-only   the fuzzing alone (no Postgres needed)
#   scripts/test.sh --sdk-only            the TypeScript SDK's lint, type checks and tests alone
#   scripts/test.sh --ui-only             the web UI's staleness check, budget, lint, type checks and browser tests
#   (--schemathesis-isolated is the script calling itself inside the fuzzing's network namespace)
#
# TRUEFORGE_TEST_SCHEMATHESIS=0 skips the fuzzing; TRUEFORGE_TEST_SDK=0 skips the TypeScript SDK;
# TRUEFORGE_TEST_UI=0 skips the web UI; TRUEFORGE_TEST_DEPLOY=0 skips the checks of deploy/.
set -euo pipefail
cd "$(dirname "$0")/.."

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Schemathesis (pinned, from PyPI) in a venv of its own, installed once; the stamp names the version, so
# bumping it reinstalls.
SCHEMATHESIS_DIR="${TRUEFORGE_TEST_SCHEMATHESIS_DIR:-$HOME/.cache/trueforge-test-schemathesis}"
SCHEMATHESIS_VERSION=4.32.5
SCHEMATHESIS_STAMP="$SCHEMATHESIS_DIR/.installed-$SCHEMATHESIS_VERSION"
install_schemathesis() {
  [ -f "$SCHEMATHESIS_STAMP" ] && return 0
  command -v python3 >/dev/null 2>&1 || { echo "test.sh: python3 is needed to install schemathesis" >&2; return 1; }
  echo "test.sh: installing schemathesis $SCHEMATHESIS_VERSION into $SCHEMATHESIS_DIR" >&2
  rm -rf "$SCHEMATHESIS_DIR/venv" "$SCHEMATHESIS_DIR"/.installed-*
  mkdir -p "$SCHEMATHESIS_DIR"
  python3 -m venv "$SCHEMATHESIS_DIR/venv"
  "$SCHEMATHESIS_DIR/venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" >&2
  "$SCHEMATHESIS_DIR/venv/bin/st" --version >/dev/null
  touch "$SCHEMATHESIS_STAMP"
}

# Fuzzes a server built from this tree with inputs generated from the OpenAPI document it serves: it fails
# on any 5xx and on any answer outside the document's schema for its status. Bounded (a fixed number of
# examples per operation and a fixed seed) so it takes a minute or two on two cores. The server runs in local
# mode on a temporary data directory, with the fake model server configured as the provider `fake`, so the
# routes that need a configured model have one. Runs after nextest (which builds most of the same code) and
# whatever nextest's outcome, so one run reports both.
#
# Fuzzed settings name arbitrary URLs (MCP servers, model providers) and commands (stdio MCP servers): the
# server, the fake model server and schemathesis run in a network namespace of their own with only loopback,
# so nothing leaves the machine, and stdio MCP servers are turned off, so no fuzzed command is started.
SCHEMATHESIS_EXAMPLES="${TRUEFORGE_TEST_SCHEMATHESIS_EXAMPLES:-25}"
SCHEMATHESIS_SEED="${TRUEFORGE_TEST_SCHEMATHESIS_SEED:-20261201}"
run_schemathesis() (
  set -euo pipefail
  install_schemathesis
  cargo build --quiet -p trueforge --bin trueforge -p trueforge-testkit --bin fake-llm
  local target_dir
  target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  if ! command -v ip >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "test.sh: installing iproute2 (ip) from Debian packages" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null; }
  fi
  local isolate=(unshare --net)
  [ "$(id -u)" -eq 0 ] || isolate=(unshare --user --map-root-user --net)
  if ! "${isolate[@]}" true 2>/dev/null; then
    echo "test.sh: cannot make a network namespace (${isolate[*]}); the fuzzing needs one and is not run" >&2
    return 1
  fi
  "${isolate[@]}" bash "$0" --schemathesis-isolated "$target_dir"
)

# Inside the namespace: loopback up, the two servers started (and always stopped), schemathesis run.
schemathesis_isolated() (
  set -euo pipefail
  local target_dir="$1"
  ip link set lo up
  local work server_pid="" fake_pid=""
  work="$(mktemp -d /tmp/trueforge-schemathesis.XXXXXX)"
  # A subshell of its own, so this trap stops exactly the processes started here, whatever happens.
  stop() {
    for pid in $server_pid $fake_pid; do kill "$pid" 2>/dev/null || true; done
    for pid in $server_pid $fake_pid; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
  }
  trap stop EXIT
  trap 'exit 130' INT TERM

  local fake_port port base
  fake_port="$(free_port)"
  "$target_dir/debug/fake-llm" --port "$fake_port" >"$work/fake-llm.log" 2>&1 &
  fake_pid=$!
  port="$(free_port)"
  base="http://127.0.0.1:$port"
  TRUEFORGE_DATA_DIR="$work/data" TRUEFORGE_MCP_ALLOW_STDIO=false RUST_LOG="${RUST_LOG:-warn}" \
    "$target_dir/debug/trueforge" serve --port "$port" >"$work/server.log" 2>&1 &
  server_pid=$!
  local ready=""
  for _ in $(seq 1 100); do
    # Any HTTP answer from the fake (even a 404) means it is listening.
    if curl -fsS "$base/healthz" >/dev/null 2>&1 && curl -sS -o /dev/null "http://127.0.0.1:$fake_port/" 2>/dev/null; then
      ready=1
      break
    fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$ready" ]; then
    echo "test.sh: the server or the fake model server did not start" >&2
    cat "$work/server.log" "$work/fake-llm.log" >&2
    return 1
  fi
  curl -fsS -X PUT "$base/api/v1/settings/model-providers" -H 'content-type: application/json' -d "{\"manifest\": {
    \"type\": \"custom\", \"name\": \"fake\", \"base_url\": \"http://127.0.0.1:$fake_port/v1\",
    \"auth\": {\"api_key\": \"fake-key\"},
    \"models\": [{\"model_id\": \"fake-model\", \"name\": \"fake-model\", \"properties\": {}}]}}" >/dev/null

  # Listing an MCP server's tools answers 502 when the server cannot be reached, which every fuzzed one
  # cannot (no network here): the documented answer, not a failure of ours. The same for saving a Daytona
  # sandbox provider, whose key is checked with Daytona first.
  cat >"$work/schemathesis.toml" <<'TOML'
[[operations]]
include-operation-id = "list_mcp_server_tools"
checks.not_a_server_error.expected-statuses = ["2XX", "3XX", "4XX", "502"]

[[operations]]
include-operation-id = "put_sandbox_provider"
checks.not_a_server_error.expected-statuses = ["2XX", "3XX", "4XX", "502"]
TOML

  echo "test.sh: schemathesis $SCHEMATHESIS_VERSION against $base ($SCHEMATHESIS_EXAMPLES examples per operation)" >&2
  local status=0
  # `timeout` only guards against a hung run; the example count is what bounds it. The hooks make
  # schemathesis read event streams as the document means them (see the file). Run from the temporary
  # directory, where Hypothesis and schemathesis leave their databases: each run starts afresh from the seed.
  # One worker: with two, Hypothesis parses lambda sources from two threads at once, which trips a CPython
  # 3.11 bug in the `ast` module ("SystemError: AST constructor recursion depth mismatch") now and then and
  # ends the run with a runtime error that says nothing about the server.
  local scripts="$PWD/scripts"
  (cd "$work" && SCHEMATHESIS_HOOKS=schemathesis_hooks PYTHONPATH="$scripts" \
    timeout 900 "$SCHEMATHESIS_DIR/venv/bin/st" --config-file "$work/schemathesis.toml" \
    run "$base/api/v1/openapi.json" --url "$base" \
    --checks not_a_server_error,response_schema_conformance \
    --phases examples,coverage,fuzzing \
    --max-examples "$SCHEMATHESIS_EXAMPLES" --seed "$SCHEMATHESIS_SEED" \
    --workers 1 --request-timeout 30 --no-color) || status=$?
  if [ "$status" -ne 0 ]; then
    echo "test.sh: schemathesis failed; the server's log:" >&2
    tail -n 50 "$work/server.log" >&2
  fi
  return "$status"
)

# The TypeScript SDK (sdk/typescript): lint, type checks and its tests, which run against the release
# `trueforge` binary and the fake model server (no mocked HTTP) and drive Debian's Chromium for the browser
# test. Its npm packages install from the package's lockfile through a cache under ~/.cache.
NPM_CACHE_DIR="${TRUEFORGE_TEST_NPM_CACHE:-$HOME/.cache/trueforge-npm}"
# The browser tests (SDK and UI) drive Debian's Chromium.
ensure_chromium() {
  command -v chromium >/dev/null 2>&1 && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "test.sh: the browser tests need Chromium; install the 'chromium' package (needs root)" >&2
    return 1
  fi
  echo "test.sh: installing chromium from Debian packages" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
}

# The OpenID provider hosted mode's login is tested against (crates/server/tests/suite/oidc.rs and the SDK's and
# the UI's login tests, all started with crates/testkit/oidc/provider.mjs): the certified `oidc-provider` from
# npm, pinned, installed once; exported as TRUEFORGE_TEST_OIDC_DIR.
OIDC_DIR="${TRUEFORGE_TEST_OIDC_DIR:-$HOME/.cache/trueforge-test-oidc}"
OIDC_VERSION=9.13.3
OIDC_STAMP="$OIDC_DIR/.installed-$OIDC_VERSION"
install_oidc_provider() {
  if [ ! -f "$OIDC_STAMP" ]; then
    command -v npm >/dev/null 2>&1 || { echo "test.sh: npm is needed to install oidc-provider" >&2; return 1; }
    echo "test.sh: installing oidc-provider $OIDC_VERSION into $OIDC_DIR" >&2
    mkdir -p "$OIDC_DIR"
    rm -f "$OIDC_DIR"/.installed-*
    npm install --prefix "$OIDC_DIR" --no-audit --no-fund --silent "oidc-provider@$OIDC_VERSION" >&2
    touch "$OIDC_STAMP"
  fi
  export TRUEFORGE_TEST_OIDC_DIR="$OIDC_DIR"
}

# The SDK's and the UI's login tests run the server in hosted mode (login exists only there), on the test
# run's Postgres and Redis (TRUEFORGE_TEST_POSTGRES_URL, TRUEFORGE_TEST_REDIS_URL). The whole run has started
# both before nextest; --sdk-only and --ui-only start a throwaway pair here, stopped when the calling subshell
# (run_sdk_typescript, run_ui) exits.
LOGIN_SERVICES_DIR=""
LOGIN_SERVICES_RUN_AS=()
stop_login_services() {
  [ -n "$LOGIN_SERVICES_DIR" ] || return 0
  "${LOGIN_SERVICES_RUN_AS[@]}" "$LOGIN_PG_BIN/pg_ctl" -D "$LOGIN_SERVICES_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  [ -f "$LOGIN_SERVICES_DIR/redis.pid" ] && kill "$(cat "$LOGIN_SERVICES_DIR/redis.pid")" 2>/dev/null || true
  rm -rf "$LOGIN_SERVICES_DIR"
}
ensure_login_services() {
  if [ -n "${TRUEFORGE_TEST_POSTGRES_URL:-}" ] && [ -n "${TRUEFORGE_TEST_REDIS_URL:-}" ]; then
    return 0
  fi
  LOGIN_PG_BIN=""
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then LOGIN_PG_BIN="$dir"; fi
  done
  if [ -z "$LOGIN_PG_BIN" ] || ! command -v psql >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1; then
    echo "test.sh: the login tests need Postgres (initdb, pg_ctl, psql) and redis-server: install the 'postgresql' and 'redis-server' packages, or run the whole scripts/test.sh, which does" >&2
    return 1
  fi
  LOGIN_SERVICES_DIR="$(mktemp -d /tmp/trueforge-login-services.XXXXXX)"
  trap stop_login_services EXIT
  # initdb refuses to run as root: the server runs as the 'postgres' user then.
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home "$LOGIN_SERVICES_DIR" postgres
    chown postgres "$LOGIN_SERVICES_DIR"
    LOGIN_SERVICES_RUN_AS=(runuser -u postgres --)
  fi
  local pg_port redis_port
  pg_port="$(free_port)"
  redis_port="$(free_port)"
  "${LOGIN_SERVICES_RUN_AS[@]}" "$LOGIN_PG_BIN/initdb" -D "$LOGIN_SERVICES_DIR/data" -U postgres --auth=trust -E UTF8 \
    >"$LOGIN_SERVICES_DIR/initdb.log" 2>&1 || { cat "$LOGIN_SERVICES_DIR/initdb.log" >&2; return 1; }
  "${LOGIN_SERVICES_RUN_AS[@]}" "$LOGIN_PG_BIN/pg_ctl" -D "$LOGIN_SERVICES_DIR/data" -w -l "$LOGIN_SERVICES_DIR/server.log" \
    -o "-p $pg_port -k $LOGIN_SERVICES_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null || { cat "$LOGIN_SERVICES_DIR/server.log" >&2; return 1; }
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$LOGIN_SERVICES_DIR/redis.pid" --logfile "$LOGIN_SERVICES_DIR/redis.log" --dir "$LOGIN_SERVICES_DIR" \
    || { cat "$LOGIN_SERVICES_DIR/redis.log" >&2; return 1; }
  for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  export TRUEFORGE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"
  export TRUEFORGE_TEST_REDIS_URL="redis://127.0.0.1:$redis_port"
  echo "test.sh: a throwaway Postgres (port $pg_port) and Redis (port $redis_port) for the login tests" >&2
}

run_sdk_typescript() (
  set -euo pipefail
  command -v npm >/dev/null 2>&1 || { echo "test.sh: npm is needed for the TypeScript SDK's tests" >&2; return 1; }
  ensure_chromium
  cargo build --quiet --release -p trueforge --bin trueforge -p trueforge-testkit --bin fake-llm --bin oauth-mcp \
    --bin fake-daytona
  local target_dir
  target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  install_oidc_provider
  ensure_login_services
  cd sdk/typescript
  npm ci --cache "$NPM_CACHE_DIR" --prefer-offline --no-audit --no-fund --loglevel=error
  npm run --silent typecheck
  npm run --silent lint
  echo "test.sh: the TypeScript SDK's tests against $target_dir/release/trueforge" >&2
  TRUEFORGE_BIN="$target_dir/release/trueforge" FAKE_LLM_BIN="$target_dir/release/fake-llm" \
    OAUTH_MCP_BIN="$target_dir/release/oauth-mcp" FAKE_DAYTONA_BIN="$target_dir/release/fake-daytona" npm test
)

# The web UI (ui/): rebuilt from source and compared byte for byte with the committed ui/dist, which is what
# the binary embeds (a stale bundle fails here), its first-load budget, type checks, lint, and its tests in
# Chromium against the release binary. The UI imports the SDK's build, so the SDK is built first.
run_ui() (
  set -euo pipefail
  command -v npm >/dev/null 2>&1 || { echo "test.sh: npm is needed for the web UI's tests" >&2; return 1; }
  ensure_chromium
  cargo build --quiet --release -p trueforge --bin trueforge -p trueforge-testkit --bin fake-llm --bin oauth-mcp \
    --bin fake-daytona
  local target_dir
  target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  install_oidc_provider
  ensure_login_services
  (cd sdk/typescript && npm ci --cache "$NPM_CACHE_DIR" --prefer-offline --no-audit --no-fund --loglevel=error \
    && npm run --silent build)
  cd ui
  npm ci --cache "$NPM_CACHE_DIR" --prefer-offline --no-audit --no-fund --loglevel=error
  local fresh
  fresh="$(mktemp -d)"
  npx --no-install tsc -p tsconfig.json --noEmit
  npx --no-install vite build --logLevel error --outDir "$fresh/dist" --emptyOutDir
  if ! diff -r dist "$fresh/dist" >/dev/null; then
    diff -rq dist "$fresh/dist" >&2 || true
    rm -rf "$fresh"
    echo "test.sh: ui/dist is stale (it is not what the sources build): run 'npm run build' in ui/ and commit ui/dist" >&2
    return 1
  fi
  rm -rf "$fresh"
  node scripts/bundle-size.mjs
  npm run --silent typecheck
  npm run --silent lint
  echo "test.sh: the web UI's browser tests against $target_dir/release/trueforge" >&2
  TRUEFORGE_BIN="$target_dir/release/trueforge" FAKE_LLM_BIN="$target_dir/release/fake-llm" \
    OAUTH_MCP_BIN="$target_dir/release/oauth-mcp" FAKE_DAYTONA_BIN="$target_dir/release/fake-daytona" npm test
)

case "${1:-}" in
  --sdk-only)
    run_sdk_typescript
    exit $?
    ;;
  --ui-only)
    run_ui
    exit $?
    ;;
  --schemathesis-only)
    run_schemathesis
    exit $?
    ;;
  --schemathesis-isolated)
    schemathesis_isolated "$2"
    exit $?
    ;;
esac

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

# Hosted mode's event bus and cancel requests run on Redis 7 (Debian's redis-server), started below.
if ! command -v redis-server >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test.sh: redis-server is missing; install the 'redis-server' package (needs root)" >&2
    exit 1
  fi
  echo "test.sh: installing redis-server from Debian packages" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
fi

# The local sandbox runs commands under bubblewrap, with Debian's python3 inside (a pyenv or other
# python3 on the host's PATH is not visible in the sandbox); skills are fetched with git on the host.
if ! command -v bwrap >/dev/null 2>&1 || [ ! -x /usr/bin/python3 ] || ! command -v git >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test.sh: the sandbox tests need bubblewrap, python3 and git; install those packages (needs root)" >&2
    exit 1
  fi
  echo "test.sh: installing bubblewrap, python3 and git from Debian packages" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap python3 git >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap python3 git >/dev/null; }
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

# The official MCP conformance suite (client side, run by crates/mcp/tests/suite/conformance.rs), pinned, with the
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

install_oidc_provider

PG_DIR="$(mktemp -d /tmp/trueforge-pg.XXXXXX)"
PG_PORT="$(free_port)"
# initdb refuses to run as root: run the server as the 'postgres' user when we are root.
RUN_AS=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home "$PG_DIR" postgres
  chown postgres "$PG_DIR"
  RUN_AS=(runuser -u postgres --)
fi

REDIS_PORT="$(free_port)"
stop_services() {
  "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  [ -f "$PG_DIR/redis.pid" ] && kill "$(cat "$PG_DIR/redis.pid")" 2>/dev/null || true
  rm -rf "$PG_DIR"
}
trap stop_services EXIT INT TERM

"${RUN_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 >"$PG_DIR/initdb.log" 2>&1 \
  || { cat "$PG_DIR/initdb.log" >&2; exit 1; }
"${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -w -l "$PG_DIR/server.log" \
  -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
  start >/dev/null || { cat "$PG_DIR/server.log" >&2; exit 1; }

export TRUEFORGE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
echo "test.sh: Postgres $("$PG_BIN/postgres" --version | awk '{print $3}') on port $PG_PORT" >&2

# A throwaway Redis on loopback, in memory only.
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --pidfile "$PG_DIR/redis.pid" --logfile "$PG_DIR/redis.log" --dir "$PG_DIR" \
  || { cat "$PG_DIR/redis.log" >&2; exit 1; }
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$REDIS_PORT" ping >/dev/null || { echo "test.sh: Redis did not start" >&2; cat "$PG_DIR/redis.log" >&2; exit 1; }
export TRUEFORGE_TEST_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
echo "test.sh: Redis $(redis-server --version | awk '{print $3}' | cut -d= -f2) on port $REDIS_PORT" >&2

# nextest's failure must not skip the fuzzing (nor the other way round): both run, the worse outcome wins.
nextest_status=0
cargo nextest run --workspace --no-fail-fast "$@" || nextest_status=$?
if [ "$#" -eq 0 ]; then
  # The runtime's suites again on Postgres, and the server's in hosted mode (Postgres and Redis): a fresh
  # database per test. Left out: the tests of local mode's own files (the data directory's modes, a full
  # SQLite file, a second process on the same data directory).
  echo "test.sh: the runtime's suites on Postgres, the server's in hosted mode" >&2
  TRUEFORGE_TEST_STORE=postgres cargo nextest run -p trueforge-agent --no-fail-fast || nextest_status=$?
  TRUEFORGE_TEST_SERVER_MODE=hosted cargo nextest run -p trueforge-server --no-fail-fast -E \
    'not (test(the_data_directory_and_database_are_private) | test(a_full_store_ends_turns_with_an_error) | test(resumed_by_the_next_server_process))' \
    || nextest_status=$?
fi
if [ "$#" -gt 0 ] || [ "${TRUEFORGE_TEST_SCHEMATHESIS:-1}" = "0" ]; then
  exit "$nextest_status"
fi
# Called as plain commands (not in `||`), so `set -e` holds inside them.
set +e
run_schemathesis
schemathesis_status=$?
sdk_status=0
if [ "${TRUEFORGE_TEST_SDK:-1}" != "0" ]; then
  run_sdk_typescript
  sdk_status=$?
fi
ui_status=0
if [ "${TRUEFORGE_TEST_UI:-1}" != "0" ]; then
  run_ui
  ui_status=$?
fi
# deploy/: the Compose file, the Helm chart's rendered manifests, the Dockerfile and the proxy's
# configuration, checked with the real tools (scripts/check-deploy.sh installs and caches them).
deploy_status=0
if [ "${TRUEFORGE_TEST_DEPLOY:-1}" != "0" ]; then
  bash scripts/check-deploy.sh
  deploy_status=$?
fi
set -e
[ "$nextest_status" -eq 0 ] || exit "$nextest_status"
[ "$schemathesis_status" -eq 0 ] || exit "$schemathesis_status"
[ "$sdk_status" -eq 0 ] || exit "$sdk_status"
[ "$ui_status" -eq 0 ] || exit "$ui_status"
exit "$deploy_status"
