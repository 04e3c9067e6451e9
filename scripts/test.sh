#!/usr/bin/env bash
# Runs every test: unit, integration and end-to-end (against real S3, MongoDB-compatible and
# Redis servers started on 127.0.0.1 by deploy/local/backing-servers.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# What a fresh machine lacks is made side by side from the first second: the backing servers (Go
# builds of FerretDB and versitygw, Redis from Debian), Debian's Prometheus and Chromium (which test
# files run), and Node.js, the npm packages and the build (bootstrap). Once made, each is a check.
bash deploy/local/backing-servers.sh install &
servers=$!
bash deploy/checks/install-tools.sh test-packages &
packages=$!
source scripts/bootstrap.sh
wait "$servers"
wait "$packages"
bash deploy/local/backing-servers.sh start
eval "$(bash deploy/local/backing-servers.sh env)"
echo "test: servers, packages and build ready after $SECONDS s" >&2
# The tests' temporary files (test CAs, downloads, proxies' state) go to a directory of this run,
# removed when every test passed and kept for a look otherwise; jest's transform cache stays
# where it was, so a run is not cold for that.
tmp=${TMPDIR:-/tmp}
scratch=$(mktemp -d "$tmp/cp-tests.XXXXXX")
status=0
jest() { TMPDIR=$scratch pnpm exec jest --ci --cacheDirectory "$tmp/jest_content-platform" "$@"; }
if [ $# -gt 0 ]; then
  jest "$@" || status=$?
else
  # Everything, then the fault cases (outages of the backing servers under traffic, with 5 s
  # bounds) on their own, so that no other test file competes with them for the cores.
  jest --selectProjects unit system || status=$?
  jest --selectProjects faults --maxWorkers 1 || status=$?
fi
if [ "$status" -eq 0 ]; then rm -rf "$scratch"; else echo "test: temporary files kept in $scratch" >&2; fi
echo "test: $SECONDS s in all" >&2
exit "$status"
