#!/usr/bin/env bash
# Stops every component of the local control plane and removes its state. Safe to run twice.
source "$(dirname "$0")/lib.sh"
[[ -d "$STATE_DIR" ]] || { log "no local cluster to stop"; exit 0; }

stop() { # name grace-seconds
  local pid_file="$STATE_DIR/pids/$1" pid
  [[ -f "$pid_file" ]] || return 0
  pid="$(cat "$pid_file")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + $2))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    # kube-apiserver drains watches for tens of seconds after SIGTERM; do not wait for that.
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
}
stop manager 5
for name in kwok kube-scheduler kube-controller-manager; do stop "$name" 5; done
stop kube-apiserver 3
stop etcd 5
stop registry 3
rm -rf "$STATE_DIR"
log "local cluster stopped"
