#!/usr/bin/env bash
# The platform on the local cluster: its images imported into the node, the local overlay's
# Secrets (k8s/overlays/local/create-secrets.sh), the overlay applied through deploy/cluster/overlay,
# and every Deployment rolled out.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
started=$(date +%s)

bash "$here/images.sh" project
existed=$(kubectl_ -n content-platform get deployment -o name 2>/dev/null | head -1)

# Node.js for create-secrets.sh (random values, the dev key's JWKS).
(cd "$root" && source scripts/bootstrap.sh >/dev/null
 [ -f .local/dev-keys/jwks.json ] || [ -d node_modules ] || pnpm install --frozen-lockfile >/dev/null
 KUBECONFIG=$KUBECONFIG_ADMIN INGRESS_HOST=$EDGE_HOST bash k8s/overlays/local/create-secrets.sh 2>/dev/null >/dev/null)

# The backing servers' tags: those deploy/images/build.sh gave them.
overlay=$STATE/overlay
mkdir -p "$overlay"
tags=$(cd "$root" && source deploy/images/common.sh >/dev/null 2>&1 && echo "$FERRETDB_VERSION $VERSITYGW_VERSION $DEBIAN_SUITE")
read -r ferretdb versitygw debian <<<"$tags"
cat >"$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$overlay" "$here/overlay")
images:
  - {name: mongo, newName: content-platform/ferretdb, newTag: "$ferretdb"}
  - {name: redis, newName: content-platform/redis, newTag: "$debian"}
  - {name: versity/versitygw, newName: content-platform/versitygw, newTag: "$versitygw"}
YAML
kubectl_ apply -k "$overlay" >"$LOGS/apply.log"
# The Secrets changed (fresh random values): restart whatever ran with the old ones.
[ -n "$existed" ] && kubectl_ -n content-platform rollout restart deployment >/dev/null
kubectl_ -n content-platform rollout status deployment --timeout=300s >/dev/null
log "platform applied and rolled out in $(elapsed "$started") s"
