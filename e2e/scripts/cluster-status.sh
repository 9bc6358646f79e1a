#!/usr/bin/env bash
# Exits 0 and prints how to reach the cluster when every component is running and the
# apiserver is ready; exits 1 otherwise.
source "$(dirname "$0")/lib.sh"
[[ -f "$STATE_DIR/cluster.env" ]] || { echo "no local cluster (start it with: make cluster)"; exit 1; }
for name in etcd kube-apiserver kube-controller-manager kube-scheduler kwok registry; do
  pid_file="$STATE_DIR/pids/$name"
  if [[ ! -f "$pid_file" ]] || ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "$name is not running (restart with: make cluster-down cluster)"; exit 1
  fi
done
source "$STATE_DIR/cluster.env"
curl -sf --cacert "$STATE_DIR/pki/ca.crt" --cert "$STATE_DIR/pki/admin.crt" --key "$STATE_DIR/pki/admin.key" \
  "$WINDLASS_APISERVER/readyz" >/dev/null || { echo "kube-apiserver is not ready"; exit 1; }
cat <<MSG
windlass local control plane (Kubernetes $K8S_VERSION) is running:
  export KUBECONFIG=$KUBECONFIG
  export PATH=$WINDLASS_TOOLS_PATH:\$PATH   # the pinned kubectl $K8S_VERSION and helm $HELM_VERSION
  apiserver: $WINDLASS_APISERVER
  registry:  $WINDLASS_REGISTRY (plain HTTP)
  logs:      $STATE_DIR/logs
MSG
