# Sourced by build.sh and test.sh: the image names, the pinned inputs, and the docker command.
# shellcheck shell=bash

IMAGES_CACHE=${CP_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/content-platform/images}
TOOLS_DIR=${CP_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/content-platform/bin}

# Debian release and mirrors of the base (mmdebstrap --variant=minbase).
DEBIAN_SUITE=bookworm
DEBIAN_MIRRORS=(
  "deb http://deb.debian.org/debian $DEBIAN_SUITE main"
  "deb http://deb.debian.org/debian $DEBIAN_SUITE-updates main"
  "deb http://deb.debian.org/debian-security $DEBIAN_SUITE-security main"
)
# npm, for the build stage of deploy/Dockerfile (pnpm is installed with it), from the npm registry.
NPM_VERSION=10.9.9
NPM_SHA256=c80bd097147cce32e31010b791bab8c71a26a5e10668210ec9d2e7f4c7cea2a1
# The backing servers' versions are deploy/local/backing-servers.sh's; their binaries are its builds.
FERRETDB_VERSION=$(sed -n 's/^FERRETDB_VERSION=//p' deploy/local/backing-servers.sh)
VERSITYGW_VERSION=$(sed -n 's/^VERSITYGW_VERSION=//p' deploy/local/backing-servers.sh)
# Node.js: scripts/bootstrap.sh's pin (version and SHA-256 of the registry's node-linux-<arch>).
NODE_VERSION=$(sed -n 's/^NODE_PINNED=//p' scripts/bootstrap.sh)

DEBIAN_IMAGE=content-platform/debian:$DEBIAN_SUITE
NODE_IMAGE_LOCAL=content-platform/node:$NODE_VERSION-$DEBIAN_SUITE-slim
SERVICES=(gateway content-service auth-service session-service)
BACKING_IMAGES=(
  "versitygw content-platform/versitygw:$VERSITYGW_VERSION"
  "ferretdb content-platform/ferretdb:$FERRETDB_VERSION"
  "redis content-platform/redis:$DEBIAN_SUITE"
)

# The docker command: one that can build with BuildKit (it reads deploy/Dockerfile.dockerignore).
# Docker 23 and later build with the buildx plugin; before, with DOCKER_BUILDKIT=1. A newer client
# without buildx cannot build with BuildKit, so Debian's /usr/bin/docker is taken then.
pick_docker() {
  DOCKER=${DOCKER:-docker}
  if $DOCKER buildx version >/dev/null 2>&1; then return; fi
  local major
  major=$($DOCKER --version 2>/dev/null | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p' || true)
  if [ -n "$major" ] && [ "$major" -ge 23 ] && [ -x /usr/bin/docker ] && [ "$DOCKER" != /usr/bin/docker ]; then
    DOCKER=/usr/bin/docker
  fi
  export DOCKER_BUILDKIT=1
}

# docker compose v2 (plugin or standalone binary): the compose file names the project (`name:`),
# which docker-compose 1.x refuses. deploy/images/compose.sh builds one when none is found.
pick_compose() {
  if [ -n "${COMPOSE:-}" ]; then return; fi
  if $DOCKER compose version >/dev/null 2>&1; then
    COMPOSE="$DOCKER compose"
  elif [ -x "$TOOLS_DIR/docker-compose" ]; then
    COMPOSE="$TOOLS_DIR/docker-compose"
  elif command -v docker-compose >/dev/null 2>&1 && docker-compose version --short 2>/dev/null | grep -q '^2\.'; then
    COMPOSE=docker-compose
  else
    COMPOSE=
  fi
}

log() { printf '%s: %s\n' "${LOG_NAME:-images}" "$*" >&2; }
