#!/usr/bin/env bash
# Runs a command with the local control plane up. Starts the cluster when it is not running and
# then stops it again afterwards (also on failure); a cluster that was already up is left up.
source "$(dirname "$0")/lib.sh"
started=0
if ! "$E2E_DIR/scripts/cluster-status.sh" >/dev/null 2>&1; then
  "$E2E_DIR/scripts/cluster-up.sh"
  started=1
fi
cleanup() { if [[ $started -eq 1 && -z "${WINDLASS_KEEP_CLUSTER:-}" ]]; then "$E2E_DIR/scripts/cluster-down.sh"; fi; }
trap cleanup EXIT
set -a; source "$STATE_DIR/cluster.env"; set +a
export PATH="$WINDLASS_TOOLS_PATH:$PATH"
if [[ -n "${WINDLASS_MANAGER_BIN:-}" ]]; then
  "$E2E_DIR/scripts/manager-restart.sh" "$WINDLASS_MANAGER_BIN"
fi
"$@"
