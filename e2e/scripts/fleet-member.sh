#!/usr/bin/env bash
# A member cluster of a fleet, for the fleet tests: its own local control plane (in DIR) with
# its own windlass manager, the windlass-fleet ServiceAccount and role a hub acts through
# (config/rbac/fleet_member.yaml), the namespaces the tests roll out into, and DIR/fleet.kubeconfig:
# that account's token, which the hub is given.
# Usage: fleet-member.sh up DIR WINDLASS-BINARY | down DIR | kill-apiserver DIR
set -euo pipefail
action="${1:?usage: fleet-member.sh up|down|kill-apiserver DIR [BIN]}"
export WINDLASS_CLUSTER_DIR="${2:?usage: fleet-member.sh up|down|kill-apiserver DIR [BIN]}"
source "$(dirname "$0")/lib.sh"
case "$action" in
  down) exec "$E2E_DIR/scripts/cluster-down.sh" ;;
  kill-apiserver)
    # The member's API server dies as a crashed one does; its other processes keep running.
    kill -KILL "$(cat "$STATE_DIR/pids/kube-apiserver")"
    exit 0 ;;
  up) ;;
  *) die "unknown action $action" ;;
esac
bin="${3:?usage: fleet-member.sh up DIR WINDLASS-BINARY}"
"$E2E_DIR/scripts/cluster-up.sh" >/dev/null
"$E2E_DIR/scripts/manager-restart.sh" "$bin" >/dev/null
set -a; source "$STATE_DIR/cluster.env"; set +a
kubectl="$(tool_dir kubernetes)/kubectl"
"$kubectl" apply --server-side --field-manager windlass-e2e -f "$REPO_DIR/config/rbac/fleet_member.yaml" >/dev/null
for namespace in fleet-db fleet-cache; do
  "$kubectl" create namespace "$namespace" --dry-run=client -o yaml \
    | "$kubectl" apply --server-side --field-manager windlass-e2e -f - >/dev/null
done
# The namespaces rollouts install into may take what acme-db and acme-cache bring (CRDs,
# ClusterRoles), as an admin of the member would allow.
"$kubectl" apply --server-side --field-manager windlass-e2e -f - >/dev/null <<POLICY
apiVersion: windlass.dev/v1alpha1
kind: InstallPolicy
metadata: {name: fleet-rollouts}
spec:
  namespaces: [fleet-db, fleet-cache]
  trusted: true
  installModes: [SingleNamespace, MultiNamespace, AllNamespaces]
  clusterScoped: [CustomResourceDefinitions, ClusterPermissions, Webhooks, OtherObjects]
POLICY
token=$("$kubectl" -n windlass-system create token windlass-fleet --duration 24h)
server=$("$kubectl" config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
ca=$("$kubectl" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
umask 077
cat >"$STATE_DIR/fleet.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: member
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: windlass-fleet
  user: {token: "$token"}
contexts:
- name: member
  context: {cluster: member, user: windlass-fleet}
current-context: member
KC
echo "$STATE_DIR/fleet.kubeconfig"
