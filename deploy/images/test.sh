#!/usr/bin/env bash
# The container suite in one command: builds every image (build.sh), starts the platform with
# compose from them (deploy/compose.yaml + deploy/compose.local.yaml, host networking, every port on
# 127.0.0.1), runs deploy/images/suite.js through the gateway's port, and stops it all.
#   bash deploy/images/test.sh          the whole run; exits non-zero if a check fails
#   bash deploy/images/test.sh --up     build and start compose, and leave it running (no suite)
#   bash deploy/images/test.sh --down   compose down -v, and stop the daemon dockerd.sh started
# Uses the Docker daemon at DOCKER_HOST if one answers, else starts one (deploy/images/dockerd.sh)
# and stops it at the end. Compose v2 is needed (compose.yaml names its project); compose.sh builds
# it from its Go module when the machine has none. GATEWAY_PORT (18080) is the API's port.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
mode=${1:-test}
LOG_NAME=containers
# Node.js 22 and the workspace's build (the suite mints tokens with @cp/credentials).
# shellcheck source=scripts/bootstrap.sh
source scripts/bootstrap.sh
# shellcheck source=deploy/images/common.sh
source deploy/images/common.sh
pick_docker
export GATEWAY_PORT=${GATEWAY_PORT:-18080}
t_start=$SECONDS

started_dockerd=
if ! $DOCKER version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  [ "$mode" = --down ] && exit 0
  DOCKER_HOST=$(bash deploy/images/dockerd.sh start)
  export DOCKER_HOST
  started_dockerd=1
elif [ "${DOCKER_HOST:-}" = "$(bash deploy/images/dockerd.sh env | sed 's/^export DOCKER_HOST=//')" ]; then
  started_dockerd=${CP_STOP_DOCKERD:-}
fi
pick_compose
if [ -z "$COMPOSE" ]; then
  bash deploy/images/compose.sh
  pick_compose
fi
export DOCKER COMPOSE
files=(-f deploy/compose.yaml -f deploy/compose.local.yaml)
# shellcheck disable=SC2086 # COMPOSE may be two words (docker compose)
compose() { $COMPOSE "${files[@]}" "$@"; }

stop_all() {
  compose down -v --remove-orphans >/dev/null 2>&1 || true
  if [ -n "$started_dockerd" ]; then bash deploy/images/dockerd.sh stop; fi
}

if [ "$mode" = --down ]; then
  started_dockerd=1
  stop_all
  exit 0
fi

t=$SECONDS
bash deploy/images/build.sh
t_build=$((SECONDS - t))

# What compose mounts from .local: the dev key's JWKS (tokens from `pnpm token` are trusted) and a
# receipt signing key with its certificate, readable by uid 1000.
node -e "new (require('@cp/credentials').DevKeys)('.local/dev-keys').ensure()"
mkdir -p .local/compose
if [ ! -f .local/compose/receipt-signer.pem ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1095 -sha256 \
    -subj "/CN=Content Platform receipts (local compose)" -addext keyUsage=critical,digitalSignature \
    -keyout .local/compose/receipt-signer.key -out .local/compose/receipt-signer.pem 2>/dev/null
fi
if [ "$(id -u)" = 0 ]; then chown 1000:1000 .local/compose/receipt-signer.key; else chmod 0644 .local/compose/receipt-signer.key; fi

# Every port of deploy/compose.local.yaml must be free on 127.0.0.1.
compose down -v --remove-orphans >/dev/null 2>&1 || true
for port in "$GATEWAY_PORT" 18081 18082 18083 18090 18091 18092 18093 19500 19501 19502 19503; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    log "127.0.0.1:$port is taken by another process: compose.local.yaml's ports must be free"
    stop_all
    exit 1
  fi
done

if [ "$mode" = --up ]; then
  compose up -d --no-build --wait
  compose ps
  log "the API: http://127.0.0.1:$GATEWAY_PORT; stop with: bash deploy/images/test.sh --down"
  exit 0
fi

trap stop_all EXIT
t=$SECONDS
rc=0
node deploy/images/suite.js || rc=$?
t_suite=$((SECONDS - t))
if [ "$rc" != 0 ]; then
  log "failed; the containers' last log lines:"
  compose logs --tail 30 >&2 || true
fi
log "build ${t_build} s, suite ${t_suite} s, all $((SECONDS - t_start)) s"
exit "$rc"
