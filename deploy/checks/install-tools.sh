#!/usr/bin/env bash
# Installs the tools of the offline deployment checks, each only when missing, into
# $HOME/.cache/content-platform/bin (pinned versions):
#   kustomize      `kubectl kustomize` when kubectl is there; else kustomize v5 built from the Go proxy
#   kubectl-validate  sigs.k8s.io/kubectl-validate v0.0.4 (Kubernetes schemas built in, no cluster)
#   chromium       Debian's package, for the /docs page test (skipped with --no-chromium)
# Prints nothing on success but what it builds. Safe to run again.
set -euo pipefail

KUBECTL_VALIDATE_VERSION=v0.0.4
KUSTOMIZE_VERSION=v5.5.0
TOOLS_DIR=${CP_TOOLS_DIR:-$HOME/.cache/content-platform/bin}
mkdir -p "$TOOLS_DIR"
export PATH="$TOOLS_DIR:$PATH"

log() { printf 'install-tools: %s\n' "$*" >&2; }

apt_install() {
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

need_go() {
  command -v go >/dev/null 2>&1 || { [ -x /usr/local/go/bin/go ] && export PATH=$PATH:/usr/local/go/bin; }
  command -v go >/dev/null 2>&1 || { log "installing golang-go"; apt_install golang-go; }
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

install_chromium() {
  command -v chromium >/dev/null 2>&1 && return
  log "installing chromium (Debian package)"
  apt_install chromium
}

install_kustomize
install_kubectl_validate
if [ "${1:-}" != "--no-chromium" ]; then install_chromium; fi
