# Shared settings of the local cluster scripts (sourced).
#
# The whole node lives in a network namespace of its own (NETNS): etcd, the control plane, the
# kubelet, containerd and every pod. Pod and Service addresses exist only there, kube-proxy's and
# the CNI plugins' iptables rules are that namespace's, and the namespace has no route to anything
# outside this machine. Its ports are the same inside and, through socat on 127.0.0.1, outside.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/versions.sh"

NETNS=${CP_CLUSTER_NETNS:-content-platform-cluster}
NETNS_PATH=/run/netns/$NETNS
NODE_NAME=cp-node
# The node's address: on a veth pair that stays inside NETNS.
NODE_IP=10.203.0.2
POD_CIDR=10.244.0.0/16
POD_SUBNET=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
DNS_SERVICE_IP=10.96.0.10

# Ports (inside NETNS; the first two are forwarded from 127.0.0.1 on the host).
API_PORT=16443
EDGE_PORT=16444
ETCD_PORT=16379
ETCD_PEER_PORT=16380
KUBELET_PORT=16250
KUBELET_HEALTHZ_PORT=16248
PROXY_HEALTHZ_PORT=16256
PROXY_METRICS_PORT=16249
CONTROLLER_MANAGER_PORT=16257
SCHEDULER_PORT=16259

STATE=${CP_CLUSTER_STATE:-/var/lib/content-platform-cluster}
RUN=/run/content-platform-cluster
LOGS=$STATE/logs
PKI=$STATE/pki
KUBECONFIG_ADMIN=$STATE/admin.kubeconfig
CONTAINERD_SOCK=$RUN/containerd.sock
K8S_BIN=$CLUSTER_CACHE/bin/kubernetes-$K8S_VERSION
IMAGES=$CLUSTER_CACHE/images
# The public host name of the local overlay, and its port on this machine's loopback.
EDGE_HOST=content.localtest.me

export PATH="$K8S_BIN:$PATH:/usr/local/go/bin:/usr/sbin:/sbin"

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }
in_ns() { nsenter --net="$NETNS_PATH" "$@"; }
kubectl_() { "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
ctr_() { ctr --address "$CONTAINERD_SOCK" -n k8s.io "$@"; }

# start NAME COMMAND...: a daemon in NETNS, in a session of its own, logging to $LOGS/NAME.log.
start() {
  local name=$1; shift
  setsid nsenter --net="$NETNS_PATH" "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

# wait_for WHAT SECONDS COMMAND...: until COMMAND succeeds.
wait_for() {
  local what=$1 seconds=$2 at; shift 2
  at=$(date +%s)
  until "$@" >/dev/null 2>&1; do
    [ $(( $(date +%s) - at )) -lt "$seconds" ] || die "$what not ready after $seconds s (logs: $LOGS)"
    sleep 0.5
  done
}

elapsed() { echo $(( $(date +%s) - $1 )); }
