#!/usr/bin/env bash
# Builds every image of the platform on this machine, with nothing from an image registry:
#   1. a Debian base (mmdebstrap --variant=minbase, from the Debian mirrors) imported as
#      content-platform/debian:bookworm; its root filesystem is kept in the cache and imported once;
#   2. content-platform/node:<pinned>-bookworm-slim: that base with the Node.js of
#      scripts/bootstrap.sh's pin and npm, both SHA-256 checked (node.Dockerfile);
#   3. the four services from deploy/Dockerfile with NODE_IMAGE set to it (content-platform/<service>:dev);
#   4. versitygw and FerretDB (the pinned builds of deploy/local/backing-servers.sh) and Redis
#      (Debian's redis-server) for compose (backing.Dockerfile).
# Usage: bash deploy/images/build.sh   (DOCKER_HOST: the daemon to build in; deploy/images/test.sh
# starts one with deploy/images/dockerd.sh). CP_IMAGES_REFRESH=1 makes the Debian base anew (security
# updates); otherwise every step reuses what the cache and the build cache hold. Needs root for
# mmdebstrap the first time; the downloads are kept in ~/.cache/content-platform/images.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
LOG_NAME=build
# shellcheck source=deploy/images/common.sh
source deploy/images/common.sh
pick_docker

$DOCKER version --format '{{.Server.Version}}' >/dev/null 2>&1 \
  || { log "no Docker daemon answers (DOCKER_HOST=${DOCKER_HOST:-unset}); bash deploy/images/dockerd.sh start"; exit 1; }
mkdir -p "$IMAGES_CACHE"
t_all=$SECONDS
step() { log "$1 done in $((SECONDS - $2)) s"; }

# fetch <url> <sha256> <file>: downloads once, checks every time.
fetch_checked() {
  if [ ! -f "$3" ]; then
    curl -fsSL --retry 3 "$1" -o "$3.part" && mv "$3.part" "$3"
  fi
  echo "$2  $3" | sha256sum -c --quiet - || { log "$3 does not have the expected SHA-256 (from $1)"; rm -f "$3"; exit 1; }
}

# 1. The Debian base.
t=$SECONDS
rootfs="$IMAGES_CACHE/debian-$DEBIAN_SUITE-minbase.tar"
if [ ! -f "$rootfs" ] || [ "${CP_IMAGES_REFRESH:-}" = 1 ]; then
  command -v mmdebstrap >/dev/null 2>&1 || { log "mmdebstrap is missing: apt-get install mmdebstrap"; exit 1; }
  log "making the Debian $DEBIAN_SUITE base with mmdebstrap (about 1-2 minutes)"
  # No manuals, docs (but copyrights) or translations, as in debian:*-slim.
  mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$DEBIAN_SUITE" "$rootfs.part" "${DEBIAN_MIRRORS[@]}" </dev/null
  mv "$rootfs.part" "$rootfs"
fi
# Imported once per root filesystem: an import makes a new image id, and every layer above it anew.
rootfs_sum=$(sha256sum "$rootfs" | cut -c1-64)
if [ "$($DOCKER image inspect --format '{{index .Config.Labels "content-platform.rootfs-sha256"}}' "$DEBIAN_IMAGE" 2>/dev/null)" != "$rootfs_sum" ]; then
  $DOCKER import --change "LABEL content-platform.rootfs-sha256=$rootfs_sum" --change 'CMD ["bash"]' \
    "$rootfs" "$DEBIAN_IMAGE" >/dev/null
fi
step "Debian base $DEBIAN_IMAGE" $t

# 2. Node.js on it.
t=$SECONDS
case "$(uname -m)" in
  x86_64 | amd64) node_arch=x64 ;;
  aarch64 | arm64) node_arch=arm64 ;;
  *) log "no pinned Node.js for $(uname -m)"; exit 1 ;;
esac
node_sum=$(sed -n "s/.*arch=$node_arch sum=\([0-9a-f]\{64\}\).*/\1/p" scripts/bootstrap.sh)
[ -n "$NODE_VERSION" ] && [ -n "$node_sum" ] || { log "cannot read the Node.js pin from scripts/bootstrap.sh"; exit 1; }
node_tgz="$IMAGES_CACHE/node-linux-$node_arch-$NODE_VERSION.tgz"
fetch_checked "https://registry.npmjs.org/node-linux-$node_arch/-/node-linux-$node_arch-$NODE_VERSION.tgz" "$node_sum" "$node_tgz"
npm_tgz="$IMAGES_CACHE/npm-$NPM_VERSION.tgz"
fetch_checked "https://registry.npmjs.org/npm/-/npm-$NPM_VERSION.tgz" "$NPM_SHA256" "$npm_tgz"
# The build contexts stay in the cache: the daemon is sent only what changed.
ctx="$IMAGES_CACHE/context"
node_ctx="$ctx/node-$NODE_VERSION-npm-$NPM_VERSION"
if [ ! -d "$node_ctx" ]; then
  rm -rf "$ctx"/node-* && mkdir -p "$node_ctx.part/npm"
  tar xzf "$node_tgz" -C "$node_ctx.part" --strip-components=2 package/bin/node
  tar xzf "$npm_tgz" -C "$node_ctx.part/npm" --strip-components=1
  mv "$node_ctx.part" "$node_ctx"
fi
$DOCKER build --quiet --network none -f deploy/images/node.Dockerfile --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" \
  --build-arg "NODE_VERSION=$NODE_VERSION" -t "$NODE_IMAGE_LOCAL" "$node_ctx" >/dev/null
step "Node.js base $NODE_IMAGE_LOCAL" $t

# 3. The services, from deploy/Dockerfile unchanged but for the base. RUN steps fetch packages from
# the npm registry over the host's network (the daemon has no bridge).
# Behind a TLS-inspecting proxy, its CA (the file Node.js is told of here) goes to them as a build secret.
t=$SECONDS
ca=${CP_BUILD_CA_CERTS:-${NODE_EXTRA_CA_CERTS:-}}
ca_secret=()
[ -n "$ca" ] && [ -f "$ca" ] && ca_secret=(--secret "id=ca-certificates,src=$ca")
for s in "${SERVICES[@]}"; do
  ts=$SECONDS
  $DOCKER build --quiet --network host -f deploy/Dockerfile --build-arg "SERVICE=$s" \
    --build-arg "NODE_IMAGE=$NODE_IMAGE_LOCAL" "${ca_secret[@]}" -t "content-platform/$s:dev" . >/dev/null
  log "  content-platform/$s:dev in $((SECONDS - ts)) s"
done
step "service images" $t

# 4. The backing servers.
t=$SECONDS
# Builds what is missing or out of date (a FerretDB of another build), else returns at once.
CP_TOOLS_DIR="$TOOLS_DIR" bash deploy/local/backing-servers.sh install
mkdir -p "$ctx/backing"
cp -p "$TOOLS_DIR/versitygw" "$TOOLS_DIR/ferretdb" deploy/images/http-ok deploy/images/redis-entrypoint "$ctx/backing/"
for entry in "${BACKING_IMAGES[@]}"; do
  read -r target image <<<"$entry"
  $DOCKER build --quiet --network host -f deploy/images/backing.Dockerfile --target "$target" \
    --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" -t "$image" "$ctx/backing" >/dev/null
done
step "backing server images" $t

log "all images built in $((SECONDS - t_all)) s:"
for image in "$DEBIAN_IMAGE" "$NODE_IMAGE_LOCAL" "${SERVICES[@]/#/content-platform/}" "${BACKING_IMAGES[@]#* }"; do
  case "$image" in content-platform/*-service | content-platform/gateway) image="$image:dev" ;; esac
  printf '  %-44s %6.1f MB\n' "$image" "$($DOCKER image inspect --format '{{.Size}}' "$image" | awk '{print $1 / 1e6}')" >&2
done
