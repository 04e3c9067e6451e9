#!/usr/bin/env bash
# Makes a fresh machine able to build and run the project: Node.js ≥ 22, pnpm, the workspace's
# packages and its build output. Sourced by start.sh, test.sh and .ci/run, so that the Node.js and
# pnpm it finds or installs are first on PATH for what follows.
#
# When the machine has no Node.js 22 or newer, a pinned Node.js 22 (LTS) is fetched once from the
# npm registry (package node-linux-<arch>, checked against its SHA-256) into
# ~/.cache/content-platform/node-v<version>; likewise pnpm when it is missing. Nothing is installed
# system-wide. (Node.js 24 was measured here too and streams slower: docs/design.md.)
#
# Sourced, it changes nothing in the calling shell but PATH: the work runs in a bash of its own
# (strict mode, the repository as its working directory), which prints what to put first on PATH.

if [ -z "${CP_BOOTSTRAP_WORKER:-}" ]; then
  if cp_bootstrap_path=$(CP_BOOTSTRAP_WORKER=1 bash "${BASH_SOURCE[0]}"); then
    export PATH="$cp_bootstrap_path$PATH"
    unset cp_bootstrap_path
    return 0 2>/dev/null || exit 0
  fi
  unset cp_bootstrap_path
  echo "bootstrap: failed (see above)" >&2
  return 1 2>/dev/null || exit 1
fi

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# What the calling shell puts first on PATH.
path_prefix=

CP_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/content-platform
NODE_PINNED=22.23.3
PNPM_PINNED=10.34.9

# fetch <url> <sha256> <file>
fetch_checked() {
  curl -fsSL --retry 3 "$1" -o "$3"
  echo "$2  $3" | sha256sum -c --quiet - || { echo "bootstrap: $1 does not have the expected SHA-256" >&2; return 1; }
}

node_ok() { command -v node >/dev/null 2>&1 && node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' 2>/dev/null; }

if ! node_ok; then
  node_home="$CP_CACHE/node-v$NODE_PINNED"
  if [ ! -x "$node_home/bin/node" ]; then
    case "$(uname -m)" in
      x86_64 | amd64) arch=x64 sum=00b5c43d88958dbbf45339c4d5e9a76289c7e25876fd08270b379e485e151fc5 ;;
      aarch64 | arm64) arch=arm64 sum=894b9938b215d40b3a38db094ef436d02b3bc7dd16f04fca145a4735cd9e9035 ;;
      *) echo "bootstrap: no pinned Node.js for $(uname -m); install Node.js 22 or newer and run again" >&2; exit 1 ;;
    esac
    echo "bootstrap: Node.js 22 or newer is needed (found: $(node --version 2>/dev/null || echo none)); fetching Node.js $NODE_PINNED into $node_home" >&2
    tmp=$(mktemp -d)
    fetch_checked "https://registry.npmjs.org/node-linux-$arch/-/node-linux-$arch-$NODE_PINNED.tgz" "$sum" "$tmp/node.tgz"
    mkdir -p "$tmp/node" && tar xzf "$tmp/node.tgz" -C "$tmp/node" --strip-components=1 package/bin/node package/LICENSE
    mkdir -p "$CP_CACHE" && rm -rf "$node_home" && mv "$tmp/node" "$node_home"
    rm -rf "$tmp"
  fi
  export PATH="$node_home/bin:$PATH"
  path_prefix="$node_home/bin:$path_prefix"
  node_ok || { echo "bootstrap: $node_home/bin/node does not run here" >&2; exit 1; }
fi

if ! command -v pnpm >/dev/null 2>&1; then
  pnpm_home="$CP_CACHE/pnpm-$PNPM_PINNED"
  if [ ! -x "$pnpm_home/bin/pnpm" ]; then
    echo "bootstrap: installing pnpm $PNPM_PINNED into $pnpm_home" >&2
    tmp=$(mktemp -d)
    fetch_checked "https://registry.npmjs.org/pnpm/-/pnpm-$PNPM_PINNED.tgz" 7e8a946108e7baab119e51d27c24d6178b46545422643dbc91e34e2f1ee32e0f "$tmp/pnpm.tgz"
    mkdir -p "$tmp/pnpm" && tar xzf "$tmp/pnpm.tgz" -C "$tmp/pnpm" --strip-components=1
    mkdir -p "$tmp/pnpm/shim" && printf '#!/bin/sh\nexec node "%s/lib/bin/pnpm.cjs" "$@"\n' "$pnpm_home" > "$tmp/pnpm/shim/pnpm" && chmod +x "$tmp/pnpm/shim/pnpm"
    mkdir -p "$pnpm_home" && rm -rf "$pnpm_home/lib" "$pnpm_home/bin"
    mv "$tmp/pnpm/shim" "$pnpm_home/bin" && rm -rf "$tmp/pnpm/shim" && mv "$tmp/pnpm" "$pnpm_home/lib"
    rm -rf "$tmp"
  fi
  export PATH="$pnpm_home/bin:$PATH"
  path_prefix="$pnpm_home/bin:$path_prefix"
fi

# stdout carries only the PATH prefix.
# Bounded: with a registry it cannot reach over TLS (a proxy whose CA Node.js is not given in
# NODE_EXTRA_CA_CERTS, say), pnpm 10 printed its errors and then waited without end.
if ! timeout 1200 pnpm install --frozen-lockfile --reporter=silent >&2; then
  echo "bootstrap: pnpm install failed or took over 20 minutes (is https://registry.npmjs.org reachable, and its certificate chain trusted?)" >&2
  exit 1
fi
pnpm --silent build >&2
printf '%s' "$path_prefix"
