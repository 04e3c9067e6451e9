#!/usr/bin/env bash
# A local trace backend for `scripts/start.sh --traces`: Jaeger v2 (an OpenTelemetry Collector
# distribution) built here from its Go module, keeping traces in memory, with an OTLP receiver and
# its query API and UI on 127.0.0.1.
#
#   deploy/local/trace-backend.sh install   build Jaeger once into the tools cache (keyed by version)
#   deploy/local/trace-backend.sh start     install if needed, start it unless it runs, wait until ready
#   deploy/local/trace-backend.sh stop      stop what start started
#   deploy/local/trace-backend.sh env       the OTEL_* settings that send the services' spans to it
#
# The module as the Go proxy serves it has no UI assets (Jaeger's React UI is a separate project,
# built with its own npm toolchain into cmd/query/app/ui/actual at release time; the module holds
# only a placeholder page there). Jaeger serves the UI from `ui.assets_path` instead:
# deploy/local/trace-view/, a page of this project's own that lists the traces and draws one as a
# waterfall from Jaeger's query API (docs/operations.md#traces).
set -euo pipefail

JAEGER_VERSION=v1.76.0
TOOLS_DIR=${CP_TOOLS_DIR:-$HOME/.cache/content-platform/bin}
STATE_DIR=${CP_STATE_DIR:-${TMPDIR:-/tmp}/content-platform-servers}
UI_PORT=${CP_TRACES_UI_PORT:-16686}
OTLP_HTTP_PORT=${CP_OTLP_HTTP_PORT:-4318}
OTLP_GRPC_PORT=${CP_OTLP_GRPC_PORT:-4317}
HEALTH_PORT=${CP_TRACES_HEALTH_PORT:-13133}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN="$TOOLS_DIR/jaeger-$JAEGER_VERSION"

log() { printf 'trace-backend: %s\n' "$*" >&2; }

need_go() {
  source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/use-go.sh"
  use_go
}

# Through a throwaway module, like deploy/checks/install-tools.sh: go.sum pins every dependency.
# The module asks for Go 1.24.6 or newer; an older go fetches that toolchain from the module proxy.
install() {
  [ -x "$BIN" ] && return
  need_go
  mkdir -p "$TOOLS_DIR"
  local work start; work=$(mktemp -d); start=$(date +%s)
  log "building Jaeger $JAEGER_VERSION (cmd/jaeger, 2,300 packages: 20-40 minutes on two cores, once)"
  if ! (cd "$work" && go mod init local/jaeger-build >/dev/null 2>&1 \
    && GOFLAGS=-mod=mod go get "github.com/jaegertracing/jaeger@$JAEGER_VERSION" >/dev/null 2>&1 \
    && GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 go build -trimpath -o "$BIN.part" github.com/jaegertracing/jaeger/cmd/jaeger); then
    rm -rf "$work" "$BIN.part"; log "the build of Jaeger $JAEGER_VERSION failed"; return 1
  fi
  mv "$BIN.part" "$BIN"
  rm -rf "$work"
  log "built $BIN in $(( $(date +%s) - start )) s"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

config() {
  cat <<YAML
service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    logs: {level: warn}
    metrics: {level: none}
extensions:
  healthcheckv2:
    use_v2: true
    http: {endpoint: 127.0.0.1:$HEALTH_PORT}
  jaeger_query:
    storage: {traces: memstore}
    ui: {assets_path: $ROOT/deploy/local/trace-view}
    http: {endpoint: 127.0.0.1:$UI_PORT}
    grpc: {endpoint: 127.0.0.1:0}
  jaeger_storage:
    backends:
      memstore:
        memory: {max_traces: 10000}
receivers:
  otlp:
    protocols:
      grpc: {endpoint: 127.0.0.1:$OTLP_GRPC_PORT}
      http: {endpoint: 127.0.0.1:$OTLP_HTTP_PORT}
processors:
  batch: {}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
YAML
}

start() {
  install
  mkdir -p "$STATE_DIR"
  if port_open "$UI_PORT" && curl -fsS "http://127.0.0.1:$UI_PORT/api/services" >/dev/null 2>&1; then
    log "a trace backend already answers on 127.0.0.1:$UI_PORT"; return
  fi
  config > "$STATE_DIR/jaeger.yaml"
  nohup "$BIN" --config "$STATE_DIR/jaeger.yaml" >"$STATE_DIR/jaeger.log" 2>&1 &
  echo $! > "$STATE_DIR/jaeger.pid"
  for _ in $(seq 1 300); do
    if curl -fsS "http://127.0.0.1:$UI_PORT/api/services" >/dev/null 2>&1 && port_open "$OTLP_HTTP_PORT"; then
      log "ready: traces at http://127.0.0.1:$UI_PORT, OTLP http://127.0.0.1:$OTLP_HTTP_PORT (log $STATE_DIR/jaeger.log)"
      return
    fi
    kill -0 "$(cat "$STATE_DIR/jaeger.pid")" 2>/dev/null || break
    sleep 0.1
  done
  log "Jaeger did not start; see $STATE_DIR/jaeger.log"; tail -20 "$STATE_DIR/jaeger.log" >&2; return 1
}

stop() {
  local pidfile="$STATE_DIR/jaeger.pid"
  if [ -f "$pidfile" ]; then
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
    log "stopped jaeger"
  fi
}

# Every span sampled, sent within half a second; each service names itself (OTEL_SERVICE_NAME unset).
print_env() {
  cat <<ENV
export OTEL_TRACES_EXPORTER=otlp
export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$OTLP_HTTP_PORT
export OTEL_TRACES_SAMPLER=parentbased_always_on
export OTEL_BSP_SCHEDULE_DELAY=500
ENV
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  env) print_env ;;
  *) echo "usage: $0 install|start|stop|env" >&2; exit 2 ;;
esac
