#!/usr/bin/env bash
# Builds the cluster's binaries from their pinned Go modules into the cache:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl,
#   etcd, coredns, traefik, metrics-server and the pause program.
# Each lands in $CLUSTER_CACHE/bin/<name>-<version>/ and is skipped when already there. Builds run
# at the lowest CPU priority and print what each cost.
#   deploy/cluster/build.sh [NAME...]    (no name: all)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/versions.sh"
source "$here/../../scripts/use-go.sh"
use_go
export CGO_ENABLED=0 GOFLAGS=-mod=mod
src=$CLUSTER_CACHE/src
mkdir -p "$src" "$CLUSTER_CACHE/bin"
# One build at a time: a second caller waits, then finds the binaries cached.
exec 9>"$CLUSTER_CACHE/.build.lock"
flock 9

log() { echo "cluster-build: $*" >&2; }

# go.mod of a scratch module that requires MODULE@VERSION and builds main packages from it.
# The replace lines of the module's own go.mod that point at other modules are carried over, since
# Go ignores a dependency's replace directives.
scratch_module() {
  local dir=$1 module=$2 version=$3 gomod line
  mkdir -p "$dir"
  gomod=$(cd "$dir" && go mod download -json "$module@$version" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
  {
    echo "module cpcluster/$(basename "$dir")"
    echo
    echo "go $(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod")"
    echo
    echo "require $module $version"
    # Single-line and block replace directives whose target is a module, not a local path.
    awk '
      /^replace \(/ { inblock = 1; next }
      inblock && /^\)/ { inblock = 0; next }
      inblock { print; next }
      /^replace / { sub(/^replace /, ""); print }
    ' "$gomod" | grep -v '=> *\.' | grep '=>' | sed 's/^\s*/replace /' || true
  } >"$dir/go.mod"
}

# build NAME VERSION DIR PACKAGE... : go build each package into $CLUSTER_CACHE/bin/NAME-VERSION.
build_into() {
  local name=$1 version=$2 dir=$3 ldflags=$4; shift 4
  local out=$CLUSTER_CACHE/bin/$name-$version at
  if [ -f "$out/.complete" ]; then log "$name $version: cached in $out"; return 0; fi
  at=$(date +%s)
  mkdir -p "$out.tmp"
  (cd "$dir" && nice -n 19 go mod tidy >/dev/null 2>&1 || true
   cd "$dir" && nice -n 19 go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp/" "$@")
  rm -rf "$out" && mv "$out.tmp" "$out" && touch "$out/.complete"
  log "$name $version: built in $(( $(date +%s) - at )) s into $out"
}

tools_go() { # DIR PACKAGE... : a file importing the main packages so tidy keeps their deps
  local dir=$1; shift
  { echo '//go:build tools'; echo; echo 'package tools'; echo; echo 'import ('
    for p in "$@"; do echo "	_ \"$p\""; done; echo ')'; } >"$dir/tools.go"
}

build_kubernetes() {
  local dir=$src/kubernetes-$K8S_VERSION gomod m
  [ -f "$CLUSTER_CACHE/bin/kubernetes-$K8S_VERSION/.complete" ] && { log "kubernetes $K8S_VERSION: cached"; return 0; }
  mkdir -p "$dir"
  gomod=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p')
  # k8s.io/kubernetes points its staging modules at ./staging; use their published versions.
  {
    echo "module cpcluster/kubernetes"; echo
    echo "go $(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod")"; echo
    echo "require k8s.io/kubernetes $K8S_VERSION"; echo
    for m in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$gomod"); do
      echo "replace $m => $m $K8S_STAGING_VERSION"
    done
  } >"$dir/go.mod"
  local cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
  tools_go "$dir" "${cmds[@]/#/k8s.io/kubernetes/cmd/}"
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local v ldflags=
  for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor"
    ldflags+=" -X $v.gitTreeState=clean -X $v.buildDate=1970-01-01T00:00:00Z"
  done
  build_into kubernetes "$K8S_VERSION" "$dir" "$ldflags" "${cmds[@]/#/k8s.io/kubernetes/cmd/}"
}

build_etcd() {
  local dir=$src/etcd-$ETCD_VERSION
  [ -f "$CLUSTER_CACHE/bin/etcd-$ETCD_VERSION/.complete" ] && { log "etcd $ETCD_VERSION: cached"; return 0; }
  scratch_module "$dir" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
  mkdir -p "$dir/cmd/etcd"
  cat >"$dir/cmd/etcd/main.go" <<'GO'
// The etcd server, as its own release binary starts it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  build_into etcd "$ETCD_VERSION" "$dir" "" ./cmd/etcd
}

# CoreDNS with the plugins of the cluster's Corefile (deploy/cluster/addons/coredns.yaml) and no
# others, as CoreDNS documents for a build of one's own. Its stock main links every plugin, the AWS,
# Azure and Google Cloud DNS SDKs among them: 544 s of a fresh machine's build.
build_coredns() {
  local dir=$src/coredns-$COREDNS_TAG
  [ -f "$CLUSTER_CACHE/bin/coredns-$COREDNS_TAG/.complete" ] && { log "coredns $COREDNS_TAG: cached"; return 0; }
  scratch_module "$dir" github.com/coredns/coredns "$COREDNS_VERSION"
  mkdir -p "$dir/cmd/coredns"
  cat >"$dir/cmd/coredns/main.go" <<'GO'
// CoreDNS with the plugins of the cluster's Corefile only.
package main

import (
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"

	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }
GO
  build_into coredns "$COREDNS_TAG" "$dir" "" ./cmd/coredns
  # Every directive of the Corefile must be one this binary knows.
  local plugin have
  have=$("$CLUSTER_CACHE/bin/coredns-$COREDNS_TAG/coredns" -plugins)
  for plugin in cache errors health kubernetes loop ready reload; do
    grep -Eqx "\s*(dns\.)?$plugin" <<<"$have" || { log "coredns: plugin $plugin missing from the build"; exit 1; }
  done
}

# Traefik from a copy of its module without lego's ACME DNS-01 providers: that one package links the
# SDK of every DNS host lego knows (847 of Traefik's 2,495 packages, a quarter of its source). The
# cluster's edge serves a generated certificate and asks no ACME server for one; a DNS challenge
# configured anyway fails with an error naming this build. HTTP-01 and TLS-ALPN-01 are unchanged.
build_traefik() {
  local dir=$src/traefik-$TRAEFIK_TAG moddir acme
  [ -f "$CLUSTER_CACHE/bin/traefik-$TRAEFIK_TAG/.complete" ] && { log "traefik $TRAEFIK_TAG: cached"; return 0; }
  scratch_module "$dir" github.com/traefik/traefik/v3 "$TRAEFIK_VERSION"
  moddir=$(cd "$dir" && go mod download -json "github.com/traefik/traefik/v3@$TRAEFIK_VERSION" |
    sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$dir/traefik" && cp -r "$moddir" "$dir/traefik" && chmod -R u+w "$dir/traefik"
  acme=$dir/traefik/pkg/provider/acme
  sed -i '\#^\s*"github.com/go-acme/lego/v4/providers/dns"$#d' "$acme/provider.go"
  if grep -rq 'lego/v4/providers/dns"' "$dir/traefik" --include='*.go'; then
    log "traefik: lego's DNS providers are still imported; the patch no longer fits $TRAEFIK_VERSION"
    exit 1
  fi
  cat >"$acme/dns_providers_not_built.go" <<'GO'
package acme

import (
	"fmt"

	"github.com/go-acme/lego/v4/challenge"
)

// dns stands in for lego's providers/dns package, which this build leaves out.
var dns dnsProvidersNotBuilt

type dnsProvidersNotBuilt struct{}

func (dnsProvidersNotBuilt) NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("ACME DNS challenge provider %q: this Traefik is built without DNS challenge providers", name)
}
GO
  echo "replace github.com/traefik/traefik/v3 => ./traefik" >>"$dir/go.mod"
  tools_go "$dir" github.com/traefik/traefik/v3/cmd/traefik
  build_into traefik "$TRAEFIK_TAG" "$dir" "-X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION" \
    github.com/traefik/traefik/v3/cmd/traefik
}

build_metrics_server() {
  local dir=$src/metrics-server-$METRICS_SERVER_VERSION
  [ -f "$CLUSTER_CACHE/bin/metrics-server-$METRICS_SERVER_VERSION/.complete" ] && { log "metrics-server $METRICS_SERVER_VERSION: cached"; return 0; }
  scratch_module "$dir" sigs.k8s.io/metrics-server "$METRICS_SERVER_VERSION"
  tools_go "$dir" sigs.k8s.io/metrics-server/cmd/metrics-server
  build_into metrics-server "$METRICS_SERVER_VERSION" "$dir" "" sigs.k8s.io/metrics-server/cmd/metrics-server
}

# The sandbox ("pause") container's program: sleeps until told to stop, reaps orphans.
build_pause() {
  local dir=$src/pause
  mkdir -p "$dir"
  [ -f "$CLUSTER_CACHE/bin/pause-1/.complete" ] && { log "pause: cached"; return 0; }
  printf 'module cpcluster/pause\n\ngo 1.22\n' >"$dir/go.mod"
  cat >"$dir/main.go" <<'GO'
// The pod sandbox's process: holds the pod's namespaces, reaps zombies, exits on SIGINT/SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
GO
  build_into pause 1 "$dir" "" .
}

all=(kubernetes etcd pause coredns metrics_server traefik)
[ $# -gt 0 ] && all=("${@//-/_}")
started=$(date +%s)
for name in "${all[@]}"; do "build_$name"; done
log "done in $(( $(date +%s) - started )) s"
