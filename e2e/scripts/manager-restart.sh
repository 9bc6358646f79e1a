#!/usr/bin/env bash
# (Re)starts the windlass manager against the local control plane, out of cluster, with the
# windlass CRDs applied first. The manager is stopped by cluster-down. Usage: manager-restart.sh BIN
# WINDLASS_MANAGER_ARGS adds flags (`--release-api=openshift` for the OpenShift API tests).
source "$(dirname "$0")/lib.sh"
bin="${1:?usage: manager-restart.sh PATH-TO-windlass-BINARY}"
[[ -x "$bin" ]] || die "$bin is not built (cargo build -p windlass)"
[[ -f "$STATE_DIR/cluster.env" ]] || die "the local control plane is not running (make cluster)"
set -a; source "$STATE_DIR/cluster.env"; set +a
kubectl="$(tool_dir kubernetes)/kubectl"

pid_file="$STATE_DIR/pids/manager"
if [[ -f "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null; then
  kill -TERM "$(cat "$pid_file")" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$(cat "$pid_file")" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$(cat "$pid_file")" 2>/dev/null || true
fi

"$kubectl" apply --server-side --force-conflicts --field-manager windlass-e2e -f "$REPO_DIR/config/crd" >/dev/null
"$kubectl" wait --for=condition=Established -f "$REPO_DIR/config/crd" --timeout=60s >/dev/null

# The manager runs as it does when installed: the chart's ServiceAccount with the generated
# ClusterRole (config/rbac), through a token for that account, so a permission it lacks fails a
# test and one it should not have can be seen. Only the CRDs above are applied as admin.
manager_namespace=windlass-system
"$kubectl" create namespace "$manager_namespace" --dry-run=client -o yaml \
  | "$kubectl" apply --server-side --field-manager windlass-e2e -f - >/dev/null
"$kubectl" apply --server-side --force-conflicts --field-manager windlass-e2e -k "$REPO_DIR/config/rbac" >/dev/null
# And bounded as it is when installed: the admission policies that let only this account write
# what only windlass writes.
"$kubectl" apply --server-side --force-conflicts --field-manager windlass-e2e -k "$REPO_DIR/config/admission" >/dev/null
token=$("$kubectl" -n "$manager_namespace" create token windlass --duration 48h)
server=$("$kubectl" config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
ca=$("$kubectl" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
manager_kubeconfig="$STATE_DIR/manager.kubeconfig"
umask 077
cat >"$manager_kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: windlass
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: windlass-manager
  user: {token: "$token"}
contexts:
- name: windlass
  context: {cluster: windlass, user: windlass-manager, namespace: $manager_namespace}
current-context: windlass
KC
umask 022
# Wait until the authorizer sees the new bindings (it learns them through its informers).
for _ in $(seq 100); do
  [[ "$("$kubectl" auth can-i list blueprints.windlass.dev --all-namespaces \
    --as "system:serviceaccount:$manager_namespace:windlass" 2>/dev/null)" == yes ]] && break
  sleep 0.2
done

metrics_port=$(free_port); health_port=$(free_port "$metrics_port")
# As the Helm chart does: two malloc arenas keep the manager's memory down (see the chart).
# MALLOC_ARENA_MAX=default leaves glibc's allocator as it comes (the scale benchmark's setting).
allocator=(env MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}")
[[ "${MALLOC_ARENA_MAX:-}" == default ]] && allocator=(env -u MALLOC_ARENA_MAX)
"${allocator[@]}" setsid "$bin" manager --kubeconfig "$manager_kubeconfig" --namespace "$manager_namespace" --log-level "${WINDLASS_LOG:-info,kube=warn}" \
  --metrics-bind-address "127.0.0.1:$metrics_port" --health-probe-bind-address "127.0.0.1:$health_port" ${WINDLASS_MANAGER_ARGS:-} \
  >>"$STATE_DIR/logs/manager.log" 2>&1 </dev/null &
echo $! >"$pid_file"
echo "WINDLASS_MANAGER_METRICS=127.0.0.1:$metrics_port" >"$STATE_DIR/manager.env"
echo "WINDLASS_MANAGER_HEALTH=127.0.0.1:$health_port" >>"$STATE_DIR/manager.env"
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$health_port/readyz" >/dev/null && { log "manager ready (log: $STATE_DIR/logs/manager.log)"; exit 0; }
  kill -0 "$(cat "$pid_file")" 2>/dev/null || die "the manager exited; see $STATE_DIR/logs/manager.log"
  sleep 0.2
done
die "the manager did not become ready within 20 s; see $STATE_DIR/logs/manager.log"
