#!/usr/bin/env bash
# The cluster's add-ons: CoreDNS, metrics-server, the Gateway API CRDs (standard channel, from the
# gateway-api module the pinned Traefik is built against) and Traefik as the GatewayClass `traefik`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

render() { # FILE: the add-on with this cluster's versions and addresses
  sed -e "s/COREDNS_TAG/$COREDNS_TAG/; s/METRICS_SERVER_VERSION/$METRICS_SERVER_VERSION/" \
    -e "s/TRAEFIK_TAG/$TRAEFIK_TAG/; s/DNS_SERVICE_IP/$DNS_SERVICE_IP/; s/NODE_IP/$NODE_IP/" \
    -e "s/EDGE_PORT/$EDGE_PORT/" "$1"
}

gateway_api=$(cd "$CLUSTER_CACHE/src/traefik-$TRAEFIK_TAG" && go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)
[ -d "$gateway_api/config/crd/standard" ] || die "no Gateway API CRDs in $gateway_api"
kubectl_ apply --server-side -f "$gateway_api/config/crd/standard" >/dev/null
kubectl_ wait --for=condition=Established crd --all --timeout=60s >/dev/null

for addon in coredns metrics-server traefik; do
  render "$here/addons/$addon.yaml" | kubectl_ apply -f - >/dev/null
done
kubectl_ -n kube-system rollout status deployment/coredns deployment/metrics-server --timeout=180s >/dev/null
kubectl_ -n traefik rollout status deployment/traefik --timeout=180s >/dev/null
kubectl_ wait --for=condition=Available apiservice/v1beta1.metrics.k8s.io --timeout=120s >/dev/null
log "add-ons: CoreDNS, metrics-server, Gateway API $(basename "$gateway_api" | sed 's/.*@//'), Traefik $TRAEFIK_VERSION"
