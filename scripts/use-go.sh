# Sourced by every script that builds a Go module (the backing servers, the deploy checks' tools,
# Docker Compose, the cluster's binaries, Jaeger). `use_go` puts a Go of 1.21 or newer first on
# PATH: one already there, /usr/local/go, or a toolchain it fetches once from the Go module proxy
# into ~/.cache/content-platform (the zip `go` itself downloads for GOTOOLCHAIN). Debian 12's
# golang-go (1.19) is too old: it cannot read the `go 1.25.0` lines of the modules built here.
# From 1.21 on, Go fetches any newer toolchain a module asks for by itself.

CP_GO_VERSION=${CP_GO_VERSION:-1.26.8}

_go_is_new_enough() {
  "$1" version 2>/dev/null | grep -qE ' go1\.(2[1-9]|[3-9][0-9])'
}

use_go() {
  if command -v go >/dev/null 2>&1 && _go_is_new_enough go; then return 0; fi
  local cache=${XDG_CACHE_HOME:-$HOME/.cache}/content-platform
  local fetched=$cache/go-$CP_GO_VERSION
  local dir
  for dir in /usr/local/go/bin "$fetched/bin"; do
    if [ -x "$dir/go" ] && _go_is_new_enough "$dir/go"; then
      export PATH="$dir:$PATH"
      return 0
    fi
  done
  local arch
  case $(uname -m) in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "go: no Go 1.21 or newer here, and no toolchain to fetch for $(uname -m)" >&2; return 1 ;;
  esac
  local name=v0.0.1-go$CP_GO_VERSION.linux-$arch work
  work=$(mktemp -d)
  echo "go: no Go 1.21 or newer on PATH; fetching Go $CP_GO_VERSION from the Go module proxy" >&2
  if ! curl -fsSL --retry 3 --max-time 600 -o "$work/go.zip" \
    "https://proxy.golang.org/golang.org/toolchain/@v/$name.zip"; then
    rm -rf "$work"
    echo "go: could not fetch Go $CP_GO_VERSION" >&2
    return 1
  fi
  if command -v unzip >/dev/null 2>&1; then
    unzip -q "$work/go.zip" -d "$work/x"
  else
    python3 -m zipfile -e "$work/go.zip" "$work/x"
  fi
  # Module zips keep no file modes: the commands are made executable as `go` does for itself.
  local root="$work/x/golang.org/toolchain@$name"
  chmod +x "$root"/bin/* "$root"/pkg/tool/*/*
  mkdir -p "$cache"
  rm -rf "$fetched"
  mv "$root" "$fetched"
  rm -rf "$work"
  export PATH="$fetched/bin:$PATH"
  _go_is_new_enough go
}
