#!/usr/bin/env bash
# Makes a fresh machine able to build and run the project: Node.js ≥ 20.19, pnpm, the workspace's
# packages and its build output. Sourced by start.sh and test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v node >/dev/null 2>&1 || ! node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=19)?0:1)'; then
  echo "bootstrap: Node.js 20.19 or newer is needed (found: $(node --version 2>/dev/null || echo none))." >&2
  echo "bootstrap: trying Debian's nodejs package; if it is older, install a current Node.js and run again." >&2
  as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null
  node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=19)?0:1)' || { echo "bootstrap: $(node --version) is too old" >&2; exit 1; }
fi
if ! command -v pnpm >/dev/null 2>&1; then
  echo "bootstrap: installing pnpm" >&2
  npm install -g pnpm@10 >/dev/null 2>&1 || as_root npm install -g pnpm@10 >/dev/null
fi
pnpm install --frozen-lockfile --reporter=silent
pnpm --silent build
