#!/usr/bin/env bash
# Runs every test: unit, integration and end-to-end (against real S3, MongoDB-compatible and
# Redis servers started on 127.0.0.1 by deploy/local/backing-servers.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/bootstrap.sh
bash deploy/local/backing-servers.sh start
# Debian's Prometheus, which test-e2e/prometheus.e2e.test.ts runs against the stack (when missing).
bash deploy/checks/install-tools.sh prometheus
eval "$(bash deploy/local/backing-servers.sh env)"
exec pnpm exec jest --ci "$@"
