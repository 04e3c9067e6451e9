# apt_install PACKAGE...: Debian packages, installed quietly (with sudo when not root). Sourced by
# deploy/checks/install-tools.sh and deploy/local/backing-servers.sh. One apt at a time: scripts/test.sh
# installs the tests' packages in the background while backing-servers.sh may install redis-server,
# and both wait on this lock rather than fail on apt's own.
apt_install() {
  local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  (
    flock 8
    $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
  ) 8>"${TMPDIR:-/tmp}/content-platform-apt.lock"
}
