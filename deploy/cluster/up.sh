#!/usr/bin/env bash
# A one-node Kubernetes cluster on this machine, from source, then the local overlay on it:
#   bash deploy/cluster/up.sh            cluster, edge, metrics-server, project images, overlay
#   bash deploy/cluster/up.sh --bare     the cluster and its add-ons only
# Builds what the cache lacks (deploy/cluster/build.sh, images.sh), starts etcd, the control
# plane, containerd and the kubelet in a network namespace of their own, and waits until the node
# is Ready. Then kubectl works from the host:
#   deploy/cluster/kubectl.sh get pods -A       (or KUBECONFIG=/var/lib/content-platform-cluster/admin.kubeconfig)
# and the edge answers on https://content.localtest.me:16444 (127.0.0.1; a self-signed certificate).
# Stop it all with deploy/cluster/down.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$here/pki.sh"
bare=
[ "${1:-}" = --bare ] && bare=1
started=$(date +%s)

[ "$(id -u)" = 0 ] || die "run as root (network namespace, cgroups, containerd)"
[ -e "$NETNS_PATH" ] && die "a cluster is up already ($NETNS_PATH); deploy/cluster/down.sh first"

# Debian packages: the container runtime, the CNI plugins, and the tools the node needs.
need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
command -v conntrack >/dev/null || need+=(conntrack)
command -v iptables >/dev/null || need+=(iptables)
command -v socat >/dev/null || need+=(socat)
command -v openssl >/dev/null || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  # No package may start a service of its own (Debian's containerd would).
  policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && policy=1; fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  [ -n "$policy" ] && rm -f /usr/sbin/policy-rc.d
fi

at=$(date +%s)
bash "$here/build.sh"
bash "$here/images.sh" system
log "binaries and system images ready in $(elapsed "$at") s"

rm -rf "$STATE" "$RUN"
mkdir -p "$STATE" "$RUN" "$LOGS" "$STATE/cni/net.d" "$STATE/kubelet"

# The node's network namespace: loopback, the node's address on a veth pair that stays inside,
# forwarding on, bridged pod traffic through iptables (for Service addresses).
ip netns add "$NETNS"
in_ns ip link set lo up
in_ns ip link add cpnode0 type veth peer name cpnode1
in_ns ip addr add "$NODE_IP/24" dev cpnode0
in_ns ip link set cpnode0 up
in_ns ip link set cpnode1 up
in_ns sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
printf '' >"$STATE/resolv.conf"

make_pki

# etcd
start etcd "$CLUSTER_CACHE/bin/etcd-$ETCD_VERSION/etcd" --name "$NODE_NAME" --data-dir "$STATE/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "$NODE_NAME=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls= \
  --quota-backend-bytes=2147483648 --log-level=warn

# containerd: Debian's, with a configuration, state and socket of its own.
cat >"$STATE/containerd.toml" <<TOML
version = 2
root = "$STATE/containerd"
state = "$RUN/containerd"
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$RUN/containerd-ttrpc.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/content-platform-cluster/pause:1"
  stream_server_address = "127.0.0.1"
  enable_selinux = false
  # Root here may not lower a process's OOM score (no CAP_SYS_RESOURCE); the kubelet asks for -998
  # for every sandbox, which runc would fail to set. Keep scores at or above containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
TOML
# One bridge for every pod; host-local addresses; hostPort through portmap.
cat >"$STATE/cni/net.d/10-content-platform.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "content-platform",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_SUBNET"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$STATE/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
JSON
start containerd containerd --config "$STATE/containerd.toml"

wait_for etcd 30 in_ns bash -c "exec 3<>/dev/tcp/127.0.0.1/$ETCD_PORT"

start kube-apiserver kube-apiserver \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=0.0.0.0 --secure-port="$API_PORT" --advertise-address="$NODE_IP" \
  --service-cluster-ip-range="$SERVICE_CIDR" \
  --client-ca-file="$PKI/ca.crt" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --requestheader-client-ca-file="$PKI/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
  --requestheader-extra-headers-prefix=X-Remote-Extra- --requestheader-group-headers=X-Remote-Group \
  --requestheader-username-headers=X-Remote-User \
  --proxy-client-cert-file="$PKI/front-proxy-client.crt" --proxy-client-key-file="$PKI/front-proxy-client.key" \
  --enable-aggregator-routing=true --allow-privileged=true --profiling=false

wait_for containerd 30 ctr_ version
at=$(date +%s)
bash "$here/images.sh" load-system
log "system images loaded in $(elapsed "$at") s"

# The host reaches the API server and the edge on its loopback: each connection is relayed into
# the namespace (socat listens on the host, then enters NETNS for each connection).
for pair in "api $API_PORT" "edge $EDGE_PORT"; do
  set -- $pair
  setsid socat "TCP-LISTEN:$2,bind=127.0.0.1,reuseaddr,fork" \
    "EXEC:$here/relay.sh $NETNS_PATH $NODE_IP $2" >"$LOGS/forward-$1.log" 2>&1 </dev/null &
  echo $! >"$RUN/forward-$1.pid"
done

wait_for kube-apiserver 120 kubectl_ get --raw /readyz

start kube-controller-manager kube-controller-manager \
  --kubeconfig="$STATE/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$STATE/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$CONTROLLER_MANAGER_PORT" \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --use-service-account-credentials=true --service-cluster-ip-range="$SERVICE_CIDR" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --leader-elect=false --profiling=false
start kube-scheduler kube-scheduler \
  --kubeconfig="$STATE/scheduler.kubeconfig" \
  --authentication-kubeconfig="$STATE/scheduler.kubeconfig" \
  --authorization-kubeconfig="$STATE/scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" --leader-elect=false --profiling=false

cat >"$STATE/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine runs cgroup v1, which Kubernetes 1.35 refuses unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$DNS_SERVICE_IP]
resolvConf: $STATE/resolv.conf
failSwapOn: false
# Every image was loaded by hand and none can be pulled again: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 200Mi, nodefs.available: 2%, imagefs.available: 2%, nodefs.inodesFree: 2%}
serializeImagePulls: false
maxPods: 110
YAML
start kubelet kubelet --config="$STATE/kubelet.yaml" --kubeconfig="$STATE/kubelet.kubeconfig" \
  --root-dir="$STATE/kubelet" --cert-dir="$STATE/kubelet/pki" --hostname-override="$NODE_NAME" \
  --node-ip="$NODE_IP" --v=1

cat >"$STATE/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $STATE/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE_NAME
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$PROXY_METRICS_PORT
iptables: {localhostNodePorts: false}
# Leave the machine-wide conntrack settings as they are.
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
start kube-proxy kube-proxy --config="$STATE/kube-proxy.yaml"

wait_for "node $NODE_NAME" 120 kubectl_ get node "$NODE_NAME"
kubectl_ wait --for=condition=Ready "node/$NODE_NAME" --timeout=120s >/dev/null
log "node $NODE_NAME Ready after $(elapsed "$started") s"

# Add-ons: DNS, metrics-server, the Gateway API CRDs and Traefik.
at=$(date +%s)
bash "$here/addons.sh"
log "add-ons ready in $(elapsed "$at") s"

if [ -z "$bare" ]; then
  bash "$here/apply.sh"
fi
log "up in $(elapsed "$started") s; kubectl: deploy/cluster/kubectl.sh (KUBECONFIG=$KUBECONFIG_ADMIN)"
