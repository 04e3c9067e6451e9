#!/usr/bin/env bash
# kubectl (the cluster's own, of its pinned version) on the local cluster:
#   deploy/cluster/kubectl.sh get pods -A
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
exec "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"
