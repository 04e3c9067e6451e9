#!/usr/bin/env bash
# The offline deployment checks (no cluster, no container engine, no network beyond the package
# registries that install-tools.sh uses once):
#   1. every kustomize overlay renders (`kubectl kustomize`, or `kustomize build`);
#   2. the rendered objects validate against the Kubernetes 1.30 schemas (kubectl-validate), and
#      the custom ones (HTTPRoute, Gateway, PodMonitor, Envoy Gateway's policies) against their
#      CRDs, pinned and fetched by install-tools.sh;
#   3. jest tests of what the manifests, the Dockerfile and the compose file must say, and the
#      OpenAPI description's validity (deploy/test/*.test.ts).
# Usage: bash deploy/checks/run.sh [--no-chromium] [--no-schemas]
#   (from anywhere; exits non-zero on the first failure)
# --no-schemas leaves step 2 to deploy/cluster/validate.sh, which sends every overlay to a running
# cluster's API server (CI's cluster stage does): kubectl-validate is then neither built nor run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
TOOLS_DIR=${CP_TOOLS_DIR:-$HOME/.cache/content-platform/bin}
CRDS_DIR=${CP_CRDS_DIR:-$HOME/.cache/content-platform/crds}
export PATH="$TOOLS_DIR:$PATH"
K8S_VERSION=${K8S_SCHEMA_VERSION:-1.30}

schemas=1 tools=()
for arg in "$@"; do
  case $arg in
    --no-schemas) schemas= tools+=(--no-kubectl-validate) ;;
    *) tools+=("$arg") ;;
  esac
done
bash deploy/checks/install-tools.sh "${tools[@]}"

render() {
  if command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1; then kubectl kustomize "$1"; else kustomize build "$1"; fi
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
# The validator must be able to fail: an unknown field in a Deployment is refused.
printf '%s\n' 'apiVersion: apps/v1' 'kind: Deployment' 'metadata: {name: broken}' \
  'spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: x, image: "y:1", bogus: 1}]}}}' > "$out/broken.yaml"
validate() { kubectl-validate "$1" --version "$K8S_VERSION" --local-crds "$CRDS_DIR"; }
if [ -z "$schemas" ]; then
  echo "schemas: not validated here (--no-schemas); deploy/cluster/validate.sh validates them on a cluster"
elif validate "$out/broken.yaml" >/dev/null 2>&1; then
  echo "FAIL kubectl-validate accepted a Deployment with an unknown field"; exit 1
fi
# ... and so must a custom object's: the CRDs are loaded, not skipped.
printf '%s\n' 'apiVersion: gateway.networking.k8s.io/v1' 'kind: HTTPRoute' 'metadata: {name: broken}' \
  'spec: {rules: [{backendRefs: [{name: x, port: 80}], timeouts: {request: 10s, backendRequest: 20s}}]}' > "$out/broken.yaml"
if [ -n "$schemas" ] && validate "$out/broken.yaml" >/dev/null 2>&1; then
  echo "FAIL kubectl-validate accepted an HTTPRoute whose backendRequest timeout exceeds its request timeout"; exit 1
fi
for dir in k8s/base k8s/overlays/*/; do
  dir=${dir%/}
  name=$(echo "$dir" | tr '/' '-')
  if ! render "$dir" > "$out/$name.yaml" 2> "$out/$name.err"; then
    echo "FAIL render $dir"; cat "$out/$name.err"; failed=1; continue
  fi
  if [ -z "$schemas" ]; then
    echo "ok   render $dir ($(grep -c '^kind:' "$out/$name.yaml") objects)"
  elif validate "$out/$name.yaml" > "$out/$name.validate" 2>&1; then
    echo "ok   render + validate $dir ($(grep -c '^kind:' "$out/$name.yaml") objects, Kubernetes $K8S_VERSION schemas and $(ls "$CRDS_DIR" | wc -l) CRDs)"
  else
    echo "FAIL validate $dir"; cat "$out/$name.validate"; failed=1
  fi
done
[ "$failed" = 0 ] || exit 1

[ -x node_modules/.bin/jest ] || pnpm install --frozen-lockfile --reporter=silent
# Installed above: the rule checks of deploy/test/monitoring.test.ts must not skip here.
CP_REQUIRE_PROMTOOL=1 pnpm exec jest --ci --selectProjects unit --testPathPatterns 'deploy/test/'
