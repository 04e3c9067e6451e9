#!/usr/bin/env bash
# Builds Docker Compose v2 from its Go module into ~/.cache/content-platform/bin/docker-compose
# (the Go module proxy is reachable where no binary release is): compose.yaml needs v2 (its
# `name:`; compose.local.yaml's !reset and !override), Debian 12 ships 1.29. About 5 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
COMPOSE_VERSION=v2.40.3
TOOLS_DIR=${CP_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/content-platform/bin}
[ -x "$TOOLS_DIR/docker-compose" ] && exit 0
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/use-go.sh"
use_go
echo "compose: building Docker Compose $COMPOSE_VERSION (about 5 minutes)" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Built in its own source tree, so its go.mod (replace directives included) and go.sum pin everything.
(cd "$work" && go mod init local/compose-build >/dev/null 2>&1)
src=$(cd "$work" && go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" | sed -n 's/.*"Dir": "\(.*\)",$/\1/p')
cp -r "$src" "$work/src" && chmod -R u+w "$work/src"
mkdir -p "$TOOLS_DIR"
(cd "$work/src" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath \
  -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" -o "$TOOLS_DIR/docker-compose.part" ./cmd)
mv "$TOOLS_DIR/docker-compose.part" "$TOOLS_DIR/docker-compose"
"$TOOLS_DIR/docker-compose" version >&2
