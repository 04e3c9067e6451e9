#!/usr/bin/env bash
# Runs every test: unit, integration and end-to-end (against real S3, MongoDB-compatible and
# Redis servers started on 127.0.0.1 by deploy/local/backing-servers.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/bootstrap.sh
bash deploy/local/backing-servers.sh start
eval "$(bash deploy/local/backing-servers.sh env)"
exec pnpm exec jest --ci "$@"
