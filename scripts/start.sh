#!/usr/bin/env bash
# Installs what is missing, starts the backing servers and the whole system locally.
# The gateway listens on http://127.0.0.1:${PORT:-8080}. Ctrl-C stops the services.
#   --traces   also a trace backend (Jaeger, built here once: deploy/local/trace-backend.sh) whose
#              UI is http://127.0.0.1:${CP_TRACES_UI_PORT:-16686}, and every service sends it
#              every request's spans (OTEL_* settings; docs/operations.md#traces)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
traces=false
for arg in "$@"; do
  case "$arg" in
    --traces) traces=true ;;
    *) echo "usage: $0 [--traces]" >&2; exit 2 ;;
  esac
done
source scripts/bootstrap.sh
bash deploy/local/backing-servers.sh start
eval "$(bash deploy/local/backing-servers.sh env)"
if [ "$traces" = true ]; then
  bash deploy/local/trace-backend.sh start
  eval "$(bash deploy/local/trace-backend.sh env)"
fi
exec node tools/devstack/stack.js
