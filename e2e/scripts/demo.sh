#!/usr/bin/env bash
# The windlass demo: subscribe to the sample acme-db operator from the built-in catalog, look at
# and approve the plans of its install and an upgrade, watch the deliberately broken 1.1.1 fail
# and roll back by itself, then roll back by hand (refused across a minor version, then forced
# and approved); then move the platform itself between two sample releases with a
# ClusterVersion. Prints `kubectl get windlass` at each step. Expects the local control plane
# and the manager running (`make demo` starts both). Usage: demo.sh PATH-TO-windlass-BINARY
source "$(dirname "$0")/lib.sh"
windlass="${1:?usage: demo.sh PATH-TO-windlass-BINARY}"
[[ -f "$STATE_DIR/cluster.env" ]] || die "the local control plane is not running (make cluster)"
set -a; source "$STATE_DIR/cluster.env"; set +a
export PATH="$WINDLASS_TOOLS_PATH:$PATH"
ns="${WINDLASS_DEMO_NAMESPACE:-windlass-demo}"
export WINDLASS_NAMESPACE="$ns"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() {
  echo "\$ kubectl get wsub,bp,wcsv -n $ns"
  kubectl get wsub,bp,wcsv -n "$ns" 2>&1 | sed 's/^/  /'
}
# wait_for JSONPATH VALUE [TIMEOUT]: waits until the Blueprint's field has the value.
wait_for() {
  local path="$1" want="$2" timeout="${3:-180}" got=""
  [[ "$path" == "{"* ]] || path="{$path}"
  for _ in $(seq "$timeout"); do
    got="$(kubectl get blueprint acme-db -n "$ns" -o "jsonpath=$path" 2>/dev/null || true)"
    [[ "$got" == "$want" ]] && return 0
    sleep 1
  done
  kubectl get blueprint acme-db -n "$ns" -o yaml >&2 || true
  die "blueprint acme-db: $path is '$got', expected '$want' after ${timeout}s"
}
# completed VERSION: waits until the history records a Completed revision of VERSION.
completed() {
  local version="$1" got=""
  for _ in $(seq "${2:-180}"); do
    got="$(kubectl get blueprint acme-db -n "$ns" -o "jsonpath={.status.history[?(@.version==\"$version\")].outcome}" 2>/dev/null || true)"
    [[ " $got " == *" Completed "* ]] && return 0
    sleep 1
  done
  kubectl get blueprint acme-db -n "$ns" -o yaml >&2 || true
  die "blueprint acme-db: no Completed revision of $version (outcomes: '$got')"
}
# approve: shows the plan the Blueprint waits with, then approves exactly that plan.
approve() {
  echo "\$ windlass plan acme-db -n $ns"
  "$windlass" plan acme-db -n "$ns" | sed 's/^/  /'
  echo "\$ windlass approve acme-db -n $ns"
  "$windlass" approve acme-db -n "$ns" | sed 's/^/  /'
}

step "The built-in catalog"
for _ in $(seq 60); do
  [[ "$(kubectl get catalog builtin -o 'jsonpath={.status.phase}' 2>/dev/null)" == Serving ]] && break
  sleep 1
done
kubectl get wcat

kubectl delete namespace "$ns" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "$ns" >/dev/null

step "Let the namespace install acme-db with its CRD and cluster permissions (an admin's InstallPolicy)"
cat <<YAML | tee /dev/stderr | kubectl apply --server-side -f - >/dev/null
apiVersion: windlass.dev/v1alpha1
kind: InstallPolicy
metadata:
  name: $ns
spec:
  namespaces: [$ns]
  clusterScoped: [CustomResourceDefinitions, ClusterPermissions]
YAML

step "Give the namespace its install ServiceAccount: windlass installs acme-db's namespaced objects as it"
cat <<YAML | tee /dev/stderr | kubectl apply --server-side -f - >/dev/null
apiVersion: v1
kind: ServiceAccount
metadata:
  name: windlass-installer
  namespace: $ns
---
# acme-db's operator is granted its own custom resources; whoever grants that must hold it.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: acme-operator-apis
rules:
- apiGroups: [acme.windlass.dev]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: windlass-installer-admin
  namespace: $ns
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: ServiceAccount, name: windlass-installer, namespace: $ns}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: windlass-installer-acme-operator-apis
  namespace: $ns
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: acme-operator-apis}
subjects: [{kind: ServiceAccount, name: windlass-installer, namespace: $ns}]
YAML

step "What may this namespace install? Anyone who may view it can ask (kubectl get installscopes)"
for _ in $(seq 1 30); do
  kubectl get installscope windlass -n "$ns" >/dev/null 2>&1 && break
  sleep 1
done
kubectl get installscopes -n "$ns" -o wide

step "Subscribe to acme-db on channel stable, starting at 1.0.0, upgrades approved by hand"
cat <<YAML | tee /dev/stderr | kubectl apply -n "$ns" -f - >/dev/null
apiVersion: windlass.dev/v1alpha1
kind: Subscription
metadata:
  name: acme-db
spec:
  package: acme-db
  channel: stable
  startingCSV: acme-db.v1.0.0
  approval: Manual
  rollback:
    automatic: true
    progressDeadlineSeconds: 60
YAML
wait_for .status.phase RequiresApproval
show

step "Approve the install of 1.0.0"
approve
completed 1.0.0
show

step "An upgrade is waiting: approve 1.1.0 (a skipRange jump over 1.0.1)"
wait_for .spec.clusterServiceVersionName acme-db.v1.1.0
wait_for .status.phase RequiresApproval
show
approve
completed 1.1.0
show

step "Approve 1.1.1, the broken release: its pods crash-loop, so it misses its 60 s deadline"
wait_for .spec.clusterServiceVersionName acme-db.v1.1.1
wait_for .status.phase RequiresApproval
approve
wait_for .status.phase Installing
show
step "... windlass rolls back to 1.1.0 by itself, from the revision it stored in the cluster"
wait_for .status.phase RolledBack 240
show
echo
echo "\$ kubectl get blueprint acme-db -n $ns -o jsonpath='{.status.history}'"
kubectl get blueprint acme-db -n "$ns" -o jsonpath='{range .status.history[*]}  r{.revision} {.version} {.outcome} {.reason}{"\n"}{end}'

step "Roll back by hand to 1.0.0: refused, it crosses a minor version"
echo "\$ windlass rollback acme-db -n $ns"
"$windlass" rollback acme-db -n "$ns"
sleep 3
kubectl get blueprint acme-db -n "$ns" -o jsonpath='{range .status.conditions[?(@.type=="RollbackAllowed")]}  {.type}={.status} {.reason}: {.message}{"\n"}{end}'

step "Force it: under Manual approval the rollback waits with its plan, then runs once approved"
echo "\$ windlass rollback acme-db -n $ns --force --wait"
"$windlass" rollback acme-db -n "$ns" --force --wait --timeout 180
wait_for .status.phase RequiresApproval
approve
wait_for .status.phase Succeeded 240
show
kubectl get blueprint acme-db -n "$ns" -o jsonpath='{range .status.history[*]}  r{.revision} {.version} {.outcome} forced={.forced} {.reason}{"\n"}{end}'

step "The platform itself: push two sample releases with windlass release new"
releases="$(dirname "$0")/../releases"
release_repo="$WINDLASS_REGISTRY/windlass-demo/release"
for version in 4.1.0 4.1.1; do
  echo "\$ windlass release new --from-dir e2e/releases/$version --version $version --to $release_repo:$version"
  "$windlass" release new --from-dir "$releases/$version" --version "$version" --to "$release_repo:$version" --plain-http
done

step "Let windlass apply releases as its release ServiceAccount (a cluster admin binds it)"
cat <<YAML | tee /dev/stderr | kubectl apply --server-side -f - >/dev/null
apiVersion: v1
kind: ServiceAccount
metadata: {name: windlass-release, namespace: windlass-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: windlass-release}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: windlass-release, namespace: windlass-system}]
YAML

# wait_release VERSION [show]: waits until the ClusterVersion completed VERSION, printing
# `kubectl get clusterversion.windlass.dev` on the way and, with `show`, `windlass upgrade status`
# once while a level is in progress.
wait_release() {
  local version="$1" show="${2:-}" got="" level=""
  for i in $(seq 360); do
    got="$(kubectl get clusterversion.windlass.dev version -o 'jsonpath={.status.history[0].version} {.status.history[0].state}' 2>/dev/null || true)"
    [[ "$got" == "$version Completed" ]] && return 0
    (( i % 6 == 1 )) && kubectl get clusterversion.windlass.dev 2>&1 | sed 's/^/  /'
    if [[ -n "$show" ]]; then
      level="$(kubectl get clusterversion.windlass.dev version -o 'jsonpath={.status.progress.level}' 2>/dev/null || true)"
      if [[ -n "$level" ]]; then
        echo "\$ windlass upgrade status    # while level $level is in progress"
        "$windlass" upgrade status | sed 's/^/  /'
        show=""
      fi
    fi
    sleep 0.5
  done
  "$windlass" upgrade status >&2 || true
  die "the cluster did not reach release $version (history: '$got')"
}

step "Install release 4.1.0 (no TrustPolicy covers release images here, so it is forced and recorded as unverified)"
echo "\$ windlass upgrade --to-image $release_repo:4.1.0 --force --plain-http"
"$windlass" upgrade --to-image "$release_repo:4.1.0" --force --plain-http
wait_release 4.1.0
kubectl get clusterversion.windlass.dev

step "Update to the patch release 4.1.1, level by level (the estimate comes from the 4.1.0 install)"
echo "\$ windlass upgrade --to-image $release_repo:4.1.1 --force --plain-http"
"$windlass" upgrade --to-image "$release_repo:4.1.1" --force --plain-http
wait_release 4.1.1 show
kubectl get clusterversion.windlass.dev
echo "\$ windlass upgrade status"
"$windlass" upgrade status

step "Done"
echo "The cluster keeps running: kubectl get windlass -n $ns (after: source <(sed 's/^/export /' $STATE_DIR/cluster.env))"
echo "Hand the target back to the channel with: $windlass resume acme-db -n $ns; stop everything with: make cluster-down"
