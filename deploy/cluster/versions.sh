# Pinned versions of everything the local cluster is built from. Sourced by the cluster scripts;
# each built binary and image is cached under a directory named after its pin, so a change here
# rebuilds only what changed.
#
# Kubernetes 1.35 is the newest release whose kubelet still runs with containerd 1.x (1.36 asks for
# containerd 2) and still starts on cgroup v1 when told to (failCgroupV1: false). With it the node
# uses Debian 12's own containerd 1.6 and runc, so no container runtime has to be built.
K8S_VERSION=v1.35.4
# The staging modules (k8s.io/api, client-go, ...) published for that release.
K8S_STAGING_VERSION=v0.35.4
# The etcd minor release Kubernetes 1.35 is tested with.
ETCD_VERSION=v3.6.16
COREDNS_VERSION=v1.14.7
# CoreDNS built with the plugins of the cluster's Corefile only (build.sh); the tag names that
# recipe, so that a binary or image cached from another recipe is not taken for this one.
COREDNS_TAG=$COREDNS_VERSION-corefile
TRAEFIK_VERSION=v3.6.12
# Traefik without the ACME DNS-01 providers (build.sh), tagged like CoreDNS above.
TRAEFIK_TAG=$TRAEFIK_VERSION-nodns01
METRICS_SERVER_VERSION=v0.8.0

CLUSTER_CACHE=${CP_CLUSTER_CACHE:-$HOME/.cache/content-platform/cluster}
