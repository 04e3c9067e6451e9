#!/usr/bin/env bash
# Stops the local cluster that up.sh started and removes its state: every pod's containers, the
# daemons (by the pids up.sh recorded), the mounts under the state directory, the cgroups the
# kubelet made, the pods' network namespaces and the node's. The cache (binaries, images) stays.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

stop_pid() { # NAME
  local pidfile=$RUN/$1.pid pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$pidfile"
}

# The kubelet first, so that it restarts nothing; then every container, while containerd still runs.
stop_pid kubelet
pod_netns=()
if [ -S "$CONTAINERD_SOCK" ]; then
  # The pods' network namespaces (named in each sandbox's spec), removed once their tasks are gone.
  for c in $(ctr_ containers ls -q 2>/dev/null); do
    pod_netns+=($(ctr_ containers info "$c" 2>/dev/null | grep -o 'netns/cni-[0-9a-f-]*' | sed 's#netns/##' | sort -u))
  done
  for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$task" >/dev/null 2>&1; done
  sleep 1
  for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$task" >/dev/null 2>&1; done
  for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$c" >/dev/null 2>&1; done
fi
for name in kube-proxy kube-scheduler kube-controller-manager kube-apiserver containerd etcd forward-api forward-edge; do
  stop_pid "$name"
done
# Shims left behind by containerd (they outlive it by design).
for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done

# Mounts under the state directory (volumes, rootfs), deepest first.
if [ -d "$STATE" ]; then
  awk -v s="$STATE" '$2 ~ "^"s {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
fi
awk -v s="$RUN" '$2 ~ "^"s {print $2}' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
# Pod network namespaces containerd made for this cluster's sandboxes.
for ns in $(printf '%s\n' "${pod_netns[@]}" | sort -u); do ip netns delete "$ns" 2>/dev/null; done
# The kubelet's cgroups (cgroup v1: one tree per controller).
for tree in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
  [ -d "$tree" ] && find "$tree" -depth -type d -exec rmdir {} \; 2>/dev/null
done
ip netns delete "$NETNS" 2>/dev/null
rm -rf "$RUN"
[ "${1:-}" = --keep-state ] || rm -rf "$STATE"
log "down"
