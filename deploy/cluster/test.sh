#!/usr/bin/env bash
# The cluster suite (deploy/cluster/suite.js) on the local cluster:
#   bash deploy/cluster/test.sh           brings the cluster up (up.sh) unless it is up, validates
#                                         every overlay with its API server (validate.sh), runs the
#                                         suite, and takes down what it brought up
#   CP_CLUSTER_KEEP=1 bash deploy/cluster/test.sh    leaves it running afterwards
# Prints each stage's cost and, last, the suite's `N passed, N failed, N not checked`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
started=$(date +%s)
brought_up=
cleanup() {
  if [ -n "$brought_up" ] && [ "${CP_CLUSTER_KEEP:-}" != 1 ]; then bash "$here/down.sh"; fi
}
# Set before up.sh: an up.sh that fails halfway (an add-on never ready) leaves a node running.
trap cleanup EXIT
if [ ! -e "$NETNS_PATH" ]; then
  brought_up=1
  bash "$here/up.sh"
elif ! kubectl_ -n content-platform get deployment gateway >/dev/null 2>&1; then
  bash "$here/apply.sh"
fi

# Every overlay of k8s/ validated by this cluster's API server (server-side dry run).
bash "$here/validate.sh"

cd "$root"
# Node.js and the workspace packages (@cp/credentials mints the dev tokens).
source scripts/bootstrap.sh >/dev/null
at=$(date +%s)
rc=0
KUBECTL="$K8S_BIN/kubectl --kubeconfig $KUBECONFIG_ADMIN" CTR="ctr --address $CONTAINERD_SOCK -n k8s.io" \
  EDGE_URL="https://127.0.0.1:$EDGE_PORT" EDGE_HOST="$EDGE_HOST" \
  node deploy/cluster/suite.js || rc=$?
log "suite took $(elapsed "$at") s; everything $(elapsed "$started") s"
exit $rc
