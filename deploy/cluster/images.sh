#!/usr/bin/env bash
# The cluster's images, none from a registry:
#   images.sh system        assemble the pause, CoreDNS, metrics-server and Traefik images from the
#                           binaries build.sh made (OCI archives in $CLUSTER_CACHE/images)
#   images.sh load-system   import those into the node's containerd
#   images.sh project       the platform's images (deploy/images/build.sh: the four services and the
#                           backing servers), saved once per source tree into the cache, imported
# Every image keeps its name; the node never pulls (imagePullPolicy Never/IfNotPresent).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

system_images() {
  echo "pause 1 pause-1/pause /pause"
  echo "coredns $COREDNS_TAG coredns-$COREDNS_TAG/coredns /coredns"
  echo "metrics-server $METRICS_SERVER_VERSION metrics-server-$METRICS_SERVER_VERSION/metrics-server /metrics-server"
  echo "traefik $TRAEFIK_TAG traefik-$TRAEFIK_TAG/traefik /traefik"
}

assemble_system() {
  local name tag bin entry
  while read -r name tag bin entry; do
    local out=$IMAGES/$name-$tag.tar
    [ -f "$out" ] && continue
    [ -x "$CLUSTER_CACHE/bin/$bin" ] || die "$CLUSTER_CACHE/bin/$bin is missing: deploy/cluster/build.sh"
    bash "$here/oci-image.sh" "$out" "content-platform-cluster/$name:$tag" "$entry" "$CLUSTER_CACHE/bin/$bin"
    log "image content-platform-cluster/$name:$tag assembled"
  done < <(system_images)
}

load_system() {
  local name tag rest
  while read -r name tag rest; do
    [ -f "$IMAGES/$name-$tag.tar" ] || die "$IMAGES/$name-$tag.tar is missing: deploy/cluster/images.sh system"
    ctr_ images import "$IMAGES/$name-$tag.tar" >/dev/null
  done < <(system_images)
}

# What the platform's images are built from: the files deploy/images/build.sh reads, as git sees
# them (tracked content plus uncommitted changes).
project_key() {
  local paths=(services libs deploy/Dockerfile deploy/Dockerfile.dockerignore deploy/images
    package.json pnpm-lock.yaml pnpm-workspace.yaml tsconfig.base.json scripts/bootstrap.sh)
  (cd "$root" && { git ls-files -s -- "${paths[@]}"; git diff HEAD -- "${paths[@]}"; } | sha256sum | cut -c1-16)
}

project_images() {
  (cd "$root" && source deploy/images/common.sh >/dev/null 2>&1
   printf '%s\n' "${SERVICES[@]/#/content-platform/}" | sed 's/$/:dev/'
   printf '%s\n' "${BACKING_IMAGES[@]#* }")
}

project() {
  local key tar at started_docker=
  key=$(project_key)
  tar=$IMAGES/project-$key.tar
  if [ ! -f "$tar" ]; then
    at=$(date +%s)
    if [ -z "${DOCKER_HOST:-}" ]; then
      eval "$(bash "$root/deploy/images/dockerd.sh" env)"
    fi
    if ! docker version >/dev/null 2>&1; then
      bash "$root/deploy/images/dockerd.sh" start >/dev/null
      started_docker=1
    fi
    nice -n 19 bash "$root/deploy/images/build.sh"
    mkdir -p "$IMAGES"
    docker save -o "$tar.tmp" $(project_images)
    mv "$tar.tmp" "$tar"
    # Older archives of other source trees are of no more use.
    find "$IMAGES" -name 'project-*.tar' ! -name "project-$key.tar" -delete
    [ -n "$started_docker" ] && bash "$root/deploy/images/dockerd.sh" stop >/dev/null
    log "project images built and saved in $(elapsed "$at") s"
  fi
  at=$(date +%s)
  ctr_ images import "$tar" >/dev/null
  log "project images imported in $(elapsed "$at") s: $(project_images | tr '\n' ' ')"
}

mkdir -p "$IMAGES"
case "${1:-}" in
  system) assemble_system ;;
  load-system) load_system ;;
  project) project ;;
  *) echo "usage: $0 system|load-system|project" >&2; exit 2 ;;
esac
