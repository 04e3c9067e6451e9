#!/usr/bin/env bash
# Assembles a one-layer OCI image archive from static binaries, with no container engine:
#   deploy/cluster/oci-image.sh OUT.tar NAME:TAG ENTRYPOINT FILE[=PATH_IN_IMAGE]...
# The layer holds each FILE at PATH_IN_IMAGE (default /basename), /etc/passwd and /etc/group with
# a non-root user 65532, and /tmp; the image runs ENTRYPOINT as that user. NAME:TAG is written as
# docker.io/NAME:TAG, the name containerd's CRI looks an image up by; `ctr images import` loads it.
set -euo pipefail
out=$1 ref=$2 entrypoint=$3; shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
mkdir -p "$rootfs/etc" "$rootfs/tmp" "$work/blobs/sha256"
chmod 1777 "$rootfs/tmp"
printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
for spec in "$@"; do
  file=${spec%%=*} dest=/$(basename "$file")
  [ "$spec" != "$file" ] && dest=${spec#*=}
  mkdir -p "$rootfs$(dirname "$dest")"
  cp -L "$file" "$rootfs$dest"
done
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$work/layer.tar" .

blob() { # FILE -> digest hex; moved into blobs/
  local hex
  hex=$(sha256sum "$1" | cut -d' ' -f1)
  mv "$1" "$work/blobs/sha256/$hex"
  echo "$hex"
}
size() { stat -c %s "$work/blobs/sha256/$1"; }

layer=$(blob "$work/layer.tar")
printf '{"architecture":"amd64","os":"linux","config":{"User":"65532:65532","Entrypoint":["%s"],"WorkingDir":"/","Env":["PATH=/usr/local/bin:/usr/bin:/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$entrypoint" "$layer" >"$work/config.json"
config=$(blob "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$config" "$(size "$config")" "$layer" "$(size "$layer")" >"$work/manifest.json"
manifest=$(blob "$work/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"docker.io/%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$manifest" "$(size "$manifest")" "$ref" "${ref##*:}" >"$work/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$work/oci-layout"
mkdir -p "$(dirname "$out")"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf "$out.tmp" oci-layout index.json blobs
mv "$out.tmp" "$out"
