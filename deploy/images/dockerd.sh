#!/usr/bin/env bash
# A Docker daemon of the project's own, for building and running its images on one machine:
# no default bridge, no iptables rules, no IP forwarding. Containers run with host networking
# (deploy/compose.local.yaml), so every hop stays on 127.0.0.1.
#
#   bash deploy/images/dockerd.sh start   start it unless it answers already; prints its DOCKER_HOST
#   bash deploy/images/dockerd.sh stop    stop the one start started (SIGTERM, then waits)
#   bash deploy/images/dockerd.sh env     print `export DOCKER_HOST=...`
#
# Its socket, pid file and runtime state are under CP_DOCKER_RUN (/run/content-platform-docker),
# so it does not meet a system Docker; images and volumes under CP_DOCKER_DATA_ROOT (Docker's
# default /var/lib/docker). Needs root and Debian's docker.io (dockerd, containerd, runc).
set -euo pipefail

RUN_DIR=${CP_DOCKER_RUN:-/run/content-platform-docker}
DATA_ROOT=${CP_DOCKER_DATA_ROOT:-/var/lib/docker}
SOCKET="$RUN_DIR/docker.sock"
PIDFILE="$RUN_DIR/dockerd.pid"
LOG=${CP_DOCKER_LOG:-$RUN_DIR/dockerd.log}
DOCKER_HOST_URL="unix://$SOCKET"

log() { printf 'dockerd: %s\n' "$*" >&2; }

answers() { DOCKER_HOST="$DOCKER_HOST_URL" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start() {
  if answers; then
    log "already answers on $DOCKER_HOST_URL"
  else
    command -v dockerd >/dev/null 2>&1 || { log "dockerd is missing: apt-get install docker.io"; exit 1; }
    mkdir -p "$RUN_DIR"
    # A configuration file of its own: /etc/docker/daemon.json (a system Docker's) is not read.
    # containerd is started by dockerd itself, its state under the exec root: not the system's.
    cat >"$RUN_DIR/daemon.json" <<JSON
{
  "hosts": ["$DOCKER_HOST_URL"],
  "pidfile": "$PIDFILE",
  "exec-root": "$RUN_DIR/exec",
  "data-root": "$DATA_ROOT",
  "containerd-namespace": "content-platform",
  "containerd-plugins-namespace": "content-platform-plugins",
  "bridge": "none",
  "iptables": false,
  "ip6tables": false,
  "ip-forward": false,
  "ip-masq": false,
  "storage-driver": "overlay2",
  "log-driver": "local"
}
JSON
    nohup dockerd --config-file "$RUN_DIR/daemon.json" >"$LOG" 2>&1 &
    for _ in $(seq 1 120); do
      answers && break
      sleep 0.5
    done
    answers || { log "did not answer within 60 s; see $LOG"; tail -20 "$LOG" >&2; exit 1; }
    log "started (pid $(cat "$PIDFILE"), data $DATA_ROOT, log $LOG)"
  fi
  echo "$DOCKER_HOST_URL"
}

stop() {
  [ -f "$PIDFILE" ] || { log "not running (no $PIDFILE)"; return 0; }
  local pid; pid=$(cat "$PIDFILE")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && { log "pid $pid still runs after 30 s"; exit 1; }
  fi
  rm -f "$PIDFILE"
  # dockerd leaves its default network namespace bind-mounted under the exec root; unmounted here
  # so that nothing of the daemon stays behind.
  local mount
  for mount in $(awk -v root="$RUN_DIR/exec/" 'index($5, root) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
    umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || log "could not unmount $mount"
  done
  log "stopped (pid $pid)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) echo "export DOCKER_HOST=$DOCKER_HOST_URL" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
