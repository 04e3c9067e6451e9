#!/usr/bin/env bash
# Installs the tools of the offline deployment checks, each only when missing, into
# $HOME/.cache/content-platform/bin (pinned versions):
#   kustomize      `kubectl kustomize` when kubectl is there; else kustomize v5 built from the Go proxy
#   kubectl-validate  sigs.k8s.io/kubectl-validate v0.0.4 (Kubernetes schemas built in, no cluster)
#   chromium       Debian's package, for the /docs page test (skipped with --no-chromium)
#   (kubectl-validate is skipped with --no-kubectl-validate)
#   promtool       Debian's package prometheus, for the alert rules' checks and unit tests (and
#                  the Prometheus server test-e2e/prometheus.e2e.test.ts runs: `install-tools.sh prometheus`;
#                  `install-tools.sh test-packages`: prometheus and chromium, for scripts/test.sh)
# and, into $HOME/.cache/content-platform/crds, the CustomResourceDefinitions the manifests use, so
# that kubectl-validate checks those objects offline too (list below: each file pinned by version
# and SHA-256). They are files of the projects' own Go modules, fetched with `go mod download`
# (checked against sum.golang.org) like the tools above.
# Prints nothing on success but what it builds or fetches. Safe to run again.
set -euo pipefail

KUBECTL_VALIDATE_VERSION=v0.0.4
KUSTOMIZE_VERSION=v5.5.0
# Gateway API: the version Envoy Gateway v1.9.1 ships; HTTPRoute timeouts are standard since v1.2.
GATEWAY_API_VERSION=v1.6.1
PROMETHEUS_OPERATOR_VERSION=v0.85.0
ENVOY_GATEWAY_VERSION=v1.9.1
TOOLS_DIR=${CP_TOOLS_DIR:-$HOME/.cache/content-platform/bin}
CRDS_DIR=${CP_CRDS_DIR:-$HOME/.cache/content-platform/crds}
mkdir -p "$TOOLS_DIR"

# module@version  path in the module  SHA-256 of the file
CRDS="
sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION config/crd/standard/gateway.networking.k8s.io_httproutes.yaml a424a0d6c953b162e71d1d97bb7e75012d8f1ac264e7274f2763d1b96ab39852
sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION config/crd/standard/gateway.networking.k8s.io_gateways.yaml 25b885f5870b8fff1ae82efa2628b2761cef3745900c2aecf8fb76629a01255a
github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml 8ce88c52c51209993511cae093089c9525f5552def88119e3f559123ee9d454b
github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml 98fd16c9ab79fba8dcd6ef62c957c98cd6546ab74ce0a4ecf09ddf2fda03020e
github.com/envoyproxy/gateway@$ENVOY_GATEWAY_VERSION charts/gateway-helm/charts/crds/crds/generated/gateway.envoyproxy.io_clienttrafficpolicies.yaml 2c7eaa1ce30de626e9c362b8d9002281c2f435f970020fa81902ad7f30b38d5b
github.com/envoyproxy/gateway@$ENVOY_GATEWAY_VERSION charts/gateway-helm/charts/crds/crds/generated/gateway.envoyproxy.io_backendtrafficpolicies.yaml cd75a4c222df5487aa9ca8957b48bcc3255eb25de02ed9153faf620bc160f786
"
export PATH="$TOOLS_DIR:$PATH"

# Each line says when it came, in seconds since the start: what each tool cost to fetch or build.
log() { printf 'install-tools: [%4ss] %s\n' "$SECONDS" "$*" >&2; }

source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/apt-install.sh"

need_go() {
  source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/use-go.sh"
  use_go
}

# Builds <pkg>@<version> into $TOOLS_DIR/<bin> through a throwaway module: `go install mod@v`
# asks the proxy for the module's version list, which it refuses for some modules.
go_build() {
  local bin=$1 pkg=$2 version=$3 mod=${4:-$2}
  need_go
  local work; work=$(mktemp -d)
  log "building $bin $version (a few minutes, once)"
  (cd "$work" && go mod init local/tool-build >/dev/null 2>&1 \
    && GOFLAGS=-mod=mod go get "$mod@$version" >/dev/null 2>&1 \
    && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -o "$TOOLS_DIR/$bin" "$pkg")
  rm -rf "$work"
}

install_kustomize() {
  if command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1; then return; fi
  command -v kustomize >/dev/null 2>&1 && return
  go_build kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION"
}

install_kubectl_validate() {
  command -v kubectl-validate >/dev/null 2>&1 && return
  go_build kubectl-validate sigs.k8s.io/kubectl-validate "$KUBECTL_VALIDATE_VERSION"
}

# Each CRD file into $CRDS_DIR, unless it is there with the pinned SHA-256; a fetched file with
# another digest is refused (removed, exit 1).
install_crds() {
  mkdir -p "$CRDS_DIR"
  local mod file sum name dir
  while read -r mod file sum; do
    [ -n "$mod" ] || continue
    name=$(basename "$file")
    if [ -f "$CRDS_DIR/$name" ] && [ "$(sha256sum "$CRDS_DIR/$name" | cut -d' ' -f1)" = "$sum" ]; then continue; fi
    need_go
    log "fetching $name from $mod"
    dir=$(go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    if [ -z "$dir" ] || [ ! -f "$dir/$file" ]; then log "no $file in $mod"; return 1; fi
    cp "$dir/$file" "$CRDS_DIR/$name.part" && chmod u+w "$CRDS_DIR/$name.part"
    if [ "$(sha256sum "$CRDS_DIR/$name.part" | cut -d' ' -f1)" != "$sum" ]; then
      rm -f "$CRDS_DIR/$name.part"; log "$name from $mod does not have the pinned SHA-256 $sum"; return 1
    fi
    mv "$CRDS_DIR/$name.part" "$CRDS_DIR/$name"
  done <<< "$CRDS"
  # Files of an older pin that the list no longer names would be read by kubectl-validate too.
  for name in "$CRDS_DIR"/*.yaml; do
    [ -e "$name" ] || continue
    grep -q "/$(basename "$name") " <<< "$CRDS" || rm -f "$name"
  done
}

install_chromium() {
  command -v chromium >/dev/null 2>&1 && return
  log "installing chromium (Debian package)"
  apt_install chromium
}

# promtool checks and unit-tests the alert rules (deploy/test/monitoring.test.ts): Debian's
# prometheus package ships it. Its postinst may start a Prometheus server: stopped, never used.
install_promtool() {
  command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 && return
  log "installing promtool (Debian package prometheus)"
  apt_install prometheus
  stop_packaged_prometheus
}

stop_packaged_prometheus() {
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
}

# The Debian packages the tests run (scripts/test.sh): Prometheus (test-e2e/prometheus.e2e.test.ts)
# and Chromium (the /docs page, the browser bundle and Uppy), those missing in one apt call.
install_test_packages() {
  local missing=()
  command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  [ ${#missing[@]} -gt 0 ] || return 0
  log "installing ${missing[*]} (Debian packages)"
  apt_install "${missing[@]}"
  log "installed ${missing[*]}"
  stop_packaged_prometheus
}

# `install-tools.sh test-packages`: Prometheus and Chromium alone (scripts/test.sh);
# `install-tools.sh prometheus`: Prometheus and promtool alone; `install-tools.sh crds`: the CRD
# files alone (deploy/cluster/validate.sh).
if [ "${1:-}" = "test-packages" ]; then install_test_packages; exit 0; fi
if [ "${1:-}" = "prometheus" ]; then install_promtool; exit 0; fi
if [ "${1:-}" = "crds" ]; then install_crds; exit 0; fi

# Options: --no-chromium, --no-kubectl-validate (run.sh --no-schemas).
chromium=1 validator=1
for arg in "$@"; do
  case $arg in
    --no-chromium) chromium= ;;
    --no-kubectl-validate) validator= ;;
    *) log "unknown option $arg"; exit 2 ;;
  esac
done
install_kustomize
if [ -n "$validator" ]; then install_kubectl_validate; fi
install_promtool
install_crds
if [ -n "$chromium" ]; then install_chromium; fi
