#!/usr/bin/env bash
# Installs what is missing, starts the backing servers and the whole system locally.
# The gateway listens on http://127.0.0.1:${PORT:-8080}. Ctrl-C stops the services.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/bootstrap.sh
bash deploy/local/backing-servers.sh start
eval "$(bash deploy/local/backing-servers.sh env)"
exec node tools/devstack/stack.js
