#!/usr/bin/env bash
# Every kustomize overlay of k8s/ validated by the local cluster's own API server (the Kubernetes of
# deploy/cluster/versions.sh): each rendered overlay is sent with
# `kubectl apply --dry-run=server --validate=strict`, which checks every object against the
# server's schemas (an unknown field is refused), the CRDs' schemas and CEL rules, and admission,
# and stores nothing. It is the schema check of deploy/checks/run.sh (kubectl-validate, offline,
# Kubernetes 1.30 schemas), made where a server of the target version runs anyway: CI's cluster
# stage, so that a fresh machine need not build kubectl-validate as well as Kubernetes.
#   bash deploy/cluster/validate.sh      (the cluster up: deploy/cluster/up.sh)
# The CRDs the manifests use that the cluster lacks (PodMonitor, PrometheusRule and Envoy Gateway's
# policies, the pinned files deploy/checks/install-tools.sh fetches) are installed first; the
# Gateway API's are the cluster's own (those of the Traefik it runs). As run.sh does, it first
# shows that it can fail.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CRDS_DIR=${CP_CRDS_DIR:-$HOME/.cache/content-platform/crds}
started=$(date +%s)

CP_CRDS_DIR=$CRDS_DIR bash "$root/deploy/checks/install-tools.sh" crds
for crd in "$CRDS_DIR"/*.yaml; do
  case $(basename "$crd") in gateway.networking.k8s.io_*) continue ;; esac
  kubectl_ apply --server-side -f "$crd" >/dev/null
done
kubectl_ wait --for=condition=Established crd --all --timeout=60s >/dev/null

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
dry_run() { kubectl_ apply --dry-run=server --validate=strict -f "$1"; }
failed=0
# The server must refuse what is wrong: an unknown field in a Deployment ...
printf '%s\n' 'apiVersion: apps/v1' 'kind: Deployment' 'metadata: {name: broken, namespace: default}' \
  'spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: x, image: "y:1", bogus: 1}]}}}' >"$out/broken.yaml"
if dry_run "$out/broken.yaml" >/dev/null 2>&1; then
  echo "FAIL the API server accepted a Deployment with an unknown field"; exit 1
fi
# ... and a custom object that breaks its CRD's CEL rule.
printf '%s\n' 'apiVersion: gateway.networking.k8s.io/v1' 'kind: HTTPRoute' 'metadata: {name: broken, namespace: default}' \
  'spec: {rules: [{backendRefs: [{name: x, port: 80}], timeouts: {request: 10s, backendRequest: 20s}}]}' >"$out/broken.yaml"
if dry_run "$out/broken.yaml" >/dev/null 2>&1; then
  echo "FAIL the API server accepted an HTTPRoute whose backendRequest timeout exceeds its request timeout"; exit 1
fi

version=$(kubectl_ version -o json | sed -n 's/.*"gitVersion": "\(v[^"]*\)".*/\1/p' | tail -1)
for dir in "$root"/k8s/base "$root"/k8s/overlays/*/; do
  dir=${dir%/}
  name=${dir#"$root"/}
  file="$out/$(echo "$name" | tr '/' '-').yaml"
  if ! kubectl_ kustomize "$dir" >"$file" 2>"$file.err"; then
    echo "FAIL render $name"; cat "$file.err"; failed=1; continue
  fi
  # Namespaced objects need their namespace to exist, even in a dry run.
  for ns in $(sed -n 's/^  namespace: \(.*\)$/\1/p' "$file" | sort -u); do
    kubectl_ get namespace "$ns" >/dev/null 2>&1 || kubectl_ create namespace "$ns" >/dev/null
  done
  if dry_run "$file" >"$file.out" 2>&1; then
    echo "ok   render + server-side validate $name ($(grep -c '^kind:' "$file") objects, Kubernetes $version)"
  else
    echo "FAIL server-side validate $name"; cat "$file.out"; failed=1
  fi
done
log "manifests validated by the API server in $(elapsed "$started") s"
[ "$failed" = 0 ]
