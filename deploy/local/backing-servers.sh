#!/usr/bin/env bash
# Local backing servers on 127.0.0.1: an S3 server (versitygw, posix backend), a MongoDB-compatible
# server (FerretDB v1 with SQLite) and Redis. Data lives in a temp dir.
#
#   deploy/local/backing-servers.sh install   build/install what is missing (pinned versions)
#   deploy/local/backing-servers.sh start     install if needed, start what is not running, wait until ready
#   deploy/local/backing-servers.sh stop      stop what start started
#   deploy/local/backing-servers.sh env       print the connection settings as shell exports
set -euo pipefail

FERRETDB_VERSION=v1.24.2
VERSITYGW_VERSION=v1.7.0

TOOLS_DIR=${CP_TOOLS_DIR:-$HOME/.cache/content-platform/bin}
STATE_DIR=${CP_STATE_DIR:-${TMPDIR:-/tmp}/content-platform-servers}
S3_PORT=${CP_S3_PORT:-9000}
MONGO_PORT=${CP_MONGO_PORT:-27017}
REDIS_PORT=${CP_REDIS_PORT:-6379}
S3_ACCESS_KEY=${CP_S3_ACCESS_KEY:-localdev}
S3_SECRET_KEY=${CP_S3_SECRET_KEY:-localdev-secret}

log() { printf 'backing-servers: %s\n' "$*" >&2; }

need_go() {
  source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/use-go.sh"
  use_go
}
# Every Go build of the project (these servers, the deploy-check tools, the cluster's binaries) is
# static and -trimpath: one build configuration, so that Go's build cache compiles the standard
# library and any dependency at a version two of them share once, not once per configuration.

source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/apt-install.sh"

# What the FerretDB build changes in its source (the stamp names it, so that a binary built before
# is built again). With SQLite, FerretDB v1 finds a lone `_id` (find, update, delete) with the
# expression `_ferretdb_sjson->'$._id'`, while the unique index it keeps on every collection is on
# `_ferretdb_sjson->"_id"`: the same value, but SQLite uses an expression index only for the same
# expression, so every lookup by `_id` scanned the whole collection (FerretDB #4646). The lookup is
# made with the index's expression; nothing else changes.
FERRETDB_BUILD="$FERRETDB_VERSION +id-lookup-uses-index"

ferretdb_built() { [ -x "$TOOLS_DIR/ferretdb" ] && [ "$(cat "$TOOLS_DIR/ferretdb.build" 2>/dev/null)" = "$FERRETDB_BUILD" ]; }
versitygw_built() { [ -x "$TOOLS_DIR/versitygw" ]; }

install_ferretdb() {
  ferretdb_built && return
  need_go
  log "building FerretDB $FERRETDB_BUILD (about a minute)"
  local work; work=$(mktemp -d)
  # The module is built from its own source tree so that its go.sum pins every dependency;
  # FerretDB refuses to start without build/version/version.txt, which `go install` leaves out.
  (cd "$work" && go mod init local/ferretdb-build >/dev/null 2>&1 && GOFLAGS=-mod=mod go get "github.com/FerretDB/FerretDB/cmd/ferretdb@$FERRETDB_VERSION" >/dev/null 2>&1)
  local src; src=$(cd "$work" && go list -m -f '{{.Dir}}' github.com/FerretDB/FerretDB)
  cp -r "$src" "$work/src" && chmod -R u+w "$work/src"
  echo "$FERRETDB_VERSION" > "$work/src/build/version/version.txt"
  local meta="$work/src/internal/backends/sqlite/metadata/metadata.go"
  sed -i "s|IDColumn = DefaultColumn + \"->'\\\$._id'\"|IDColumn = DefaultColumn + \"->'_id'\"|" "$meta"
  grep -q "IDColumn = DefaultColumn + \"->'_id'\"" "$meta" || { log "FerretDB: the _id lookup was not found to change in $meta"; exit 1; }
  mkdir -p "$TOOLS_DIR"
  (cd "$work/src" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -o "$TOOLS_DIR/ferretdb" ./cmd/ferretdb)
  echo "$FERRETDB_BUILD" >"$TOOLS_DIR/ferretdb.build"
  rm -rf "$work"
}

install_versitygw() {
  versitygw_built && return
  need_go
  log "building versitygw $VERSITYGW_VERSION (about two minutes)"
  mkdir -p "$TOOLS_DIR"
  CGO_ENABLED=0 GOBIN="$TOOLS_DIR" GOFLAGS=-buildvcs=false go install -trimpath "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
}

install_redis() {
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && return
  log "installing redis-server"
  apt_install redis-server
}

install() {
  install_redis
  # The two Go builds side by side: each spends much of its time fetching modules, which the other's
  # compilation can use. Go is looked for (or fetched) once, before either starts.
  ferretdb_built && versitygw_built || need_go
  install_ferretdb &
  local ferretdb=$!
  install_versitygw
  wait "$ferretdb"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  local name=$1 port=$2
  for _ in $(seq 1 100); do port_open "$port" && return 0; sleep 0.1; done
  log "$name did not open 127.0.0.1:$port; see $STATE_DIR/$name.log"; return 1
}

start() {
  install
  mkdir -p "$STATE_DIR"
  if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping >/dev/null 2>&1; then
    log "redis already answers on 127.0.0.1:$REDIS_PORT"
  else
    mkdir -p "$STATE_DIR/redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly yes \
      --dir "$STATE_DIR/redis" --logfile "$STATE_DIR/redis.log" --pidfile "$STATE_DIR/redis.pid"
    wait_port redis "$REDIS_PORT"
  fi
  if port_open "$MONGO_PORT"; then
    log "something already listens on 127.0.0.1:$MONGO_PORT; using it as MongoDB"
  else
    mkdir -p "$STATE_DIR/ferretdb"
    # SQLite in WAL mode with synchronous=NORMAL: a commit is written to the log without an fsync
    # of its own (the log is synced at checkpoints). FerretDB's default, FULL, syncs every commit
    # while holding the write lock, and the writers waiting for it sleep in SQLite's busy handler:
    # refreshes had a p99 of 1.0-1.4 s for a p50 of 0.13 s, and some hit the 2 s timeout. What a
    # commit wrote survives a kill -9 of FerretDB (it is in the OS's page cache); a power loss or an
    # OS crash may take back the last commits, never corrupting the database (docs/operations.md).
    nohup "$TOOLS_DIR/ferretdb" --handler=sqlite --sqlite-url="file:$STATE_DIR/ferretdb/?_pragma=synchronous(normal)" \
      --listen-addr="127.0.0.1:$MONGO_PORT" --state-dir=- --debug-addr=- --telemetry=disable --log-level=warn \
      >"$STATE_DIR/ferretdb.log" 2>&1 &
    echo $! > "$STATE_DIR/ferretdb.pid"
    wait_port ferretdb "$MONGO_PORT"
  fi
  if port_open "$S3_PORT"; then
    log "something already listens on 127.0.0.1:$S3_PORT; using it as S3"
  else
    mkdir -p "$STATE_DIR/s3"
    ROOT_ACCESS_KEY="$S3_ACCESS_KEY" ROOT_SECRET_KEY="$S3_SECRET_KEY" nohup "$TOOLS_DIR/versitygw" \
      --port "127.0.0.1:$S3_PORT" --quiet --keep-alive posix "$STATE_DIR/s3" >"$STATE_DIR/versitygw.log" 2>&1 &
    echo $! > "$STATE_DIR/versitygw.pid"
    wait_port versitygw "$S3_PORT"
  fi
  log "ready: S3 http://127.0.0.1:$S3_PORT, MongoDB mongodb://127.0.0.1:$MONGO_PORT, Redis redis://127.0.0.1:$REDIS_PORT (data in $STATE_DIR)"
}

stop() {
  for name in versitygw ferretdb redis; do
    local pidfile="$STATE_DIR/$name.pid"
    if [ -f "$pidfile" ]; then
      kill "$(cat "$pidfile")" 2>/dev/null || true
      rm -f "$pidfile"
      log "stopped $name"
    fi
  done
}

print_env() {
  cat <<ENV
export S3_ENDPOINT=http://127.0.0.1:$S3_PORT
export S3_ACCESS_KEY_ID=$S3_ACCESS_KEY
export S3_SECRET_ACCESS_KEY=$S3_SECRET_KEY
export MONGODB_URL=mongodb://127.0.0.1:$MONGO_PORT/
export REDIS_URL=redis://127.0.0.1:$REDIS_PORT
ENV
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  env) print_env ;;
  *) echo "usage: $0 install|start|stop|env" >&2; exit 2 ;;
esac
