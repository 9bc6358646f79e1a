#!/usr/bin/env bash
# Brings up the local control plane on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok (one simulated node) and an OCI registry. Idempotent: when the cluster is
# already up and healthy it only prints how to reach it. On any failure it stops what it started.
source "$(dirname "$0")/lib.sh"

if [[ -f "$STATE_DIR/cluster.env" ]] && "$E2E_DIR/scripts/cluster-status.sh" >/dev/null 2>&1; then
  log "cluster already running"
  "$E2E_DIR/scripts/cluster-status.sh"
  exit 0
fi
if [[ -d "$STATE_DIR" ]]; then
  log "found state of a cluster that is not healthy in $STATE_DIR; cleaning it up first"
  "$E2E_DIR/scripts/cluster-down.sh"
fi

"$E2E_DIR/scripts/prerequisites.sh" cluster
"$E2E_DIR/scripts/build-tools.sh"

start=$SECONDS
mkdir -p "$STATE_DIR"/{pki,etcd,logs,pids,registry,apiserver-certs}
trap 'status=$?; if [[ $status -ne 0 ]]; then log "start-up failed; logs were in $STATE_DIR/logs:"; tail -n 20 "$STATE_DIR"/logs/*.log >&2 2>/dev/null || true; "$E2E_DIR/scripts/cluster-down.sh" >&2 || true; fi' EXIT

K8S_BIN="$(tool_dir kubernetes)"; ETCD_BIN="$(tool_dir etcd)"; KWOK_BIN="$(tool_dir kwok)"

# Ports: fixed ones may be requested (WINDLASS_APISERVER_PORT, ...); otherwise free ones are chosen.
pick() { # env-var-value
  if [[ -n "$1" ]]; then
    port_in_use "$1" && die "port $1 on 127.0.0.1 is taken; free it or choose another port"
    echo "$1"
  else
    free_port "${taken[@]}"
  fi
}
taken=()
ETCD_PORT=$(pick "${WINDLASS_ETCD_PORT:-}"); taken+=("$ETCD_PORT")
ETCD_PEER_PORT=$(pick ""); taken+=("$ETCD_PEER_PORT")
APISERVER_PORT=$(pick "${WINDLASS_APISERVER_PORT:-}"); taken+=("$APISERVER_PORT")
KCM_PORT=$(pick ""); taken+=("$KCM_PORT")
SCHEDULER_PORT=$(pick ""); taken+=("$SCHEDULER_PORT")
KWOK_PORT=$(pick ""); taken+=("$KWOK_PORT")
REGISTRY_PORT=$(pick "${WINDLASS_REGISTRY_PORT:-}"); taken+=("$REGISTRY_PORT")

"$E2E_DIR/scripts/pki.sh" "$STATE_DIR/pki"
PKI="$STATE_DIR/pki"

# Starts a process detached from this shell, logging to logs/NAME.log, pid in pids/NAME.
launch() { # name command...
  local name="$1"; shift
  setsid "$@" >"$STATE_DIR/logs/$name.log" 2>&1 < /dev/null &
  echo $! >"$STATE_DIR/pids/$name"
}
wait_for() { # description seconds command...
  local what="$1" limit="$2"; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "$what did not come up within ${limit} s"
    sleep 0.2
  done
}
alive() { kill -0 "$(cat "$STATE_DIR/pids/$1")" 2>/dev/null; }

log "starting etcd on 127.0.0.1:$ETCD_PORT"
launch etcd "$ETCD_BIN/etcd" --name windlass --data-dir "$STATE_DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "windlass=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync=true --log-level warn
wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"

# WINDLASS_AUDIT=requests also logs the manager's reads (for the scale benchmarks), in a log
# large enough for ten thousand installs without rotating.
case "${WINDLASS_AUDIT:-writes}" in
  writes) audit_policy="$E2E_DIR/audit/policy.yaml" audit_max_mb=200 ;;
  requests) audit_policy="$E2E_DIR/audit/policy-requests.yaml" audit_max_mb=4000 ;;
  *) die "WINDLASS_AUDIT is writes (the default) or requests, not ${WINDLASS_AUDIT}" ;;
esac
log "starting kube-apiserver on https://127.0.0.1:$APISERVER_PORT"
launch kube-apiserver "$K8S_BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
  --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" --cert-dir "$STATE_DIR/apiserver-certs" \
  --client-ca-file "$PKI/ca.crt" --authorization-mode Node,RBAC --allow-privileged=true \
  --service-cluster-ip-range 10.0.0.0/24 \
  --service-account-issuer "https://127.0.0.1:$APISERVER_PORT" \
  --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
  --audit-policy-file "$audit_policy" --audit-log-path "$STATE_DIR/logs/audit.log" \
  --audit-log-maxsize "$audit_max_mb" --audit-log-maxbackup 1 \
  --enable-priority-and-fairness=false --profiling=false --v=1
wait_for kube-apiserver 60 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
  "https://127.0.0.1:$APISERVER_PORT/readyz"

kubeconfig() { # path user-cert user-key
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: windlass
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(base64 -w0 <"$2")
    client-key-data: $(base64 -w0 <"$3")
contexts:
- name: windlass
  context: {cluster: windlass, user: admin}
current-context: windlass
KC
}
kubeconfig "$KUBECONFIG_PATH" "$PKI/admin.crt" "$PKI/admin.key"

log "starting kube-controller-manager and kube-scheduler"
# The controller-manager's own API rate limit, upstream's by default (20 per second, burst 30).
# Every Deployment costs its controllers a few requests, so at a thousand Deployments that limit
# decides how fast they become Available; the scale benchmark raises it, as large control
# planes do.
KCM_QPS=${WINDLASS_KCM_QPS:-20}
launch kube-controller-manager "$K8S_BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG_PATH" \
  --leader-elect=false --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
  --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
  --use-service-account-credentials=false --controllers '*' \
  --kube-api-qps "$KCM_QPS" --kube-api-burst "$(( KCM_QPS * 3 / 2 ))" --v=1
# The scheduler's limit (upstream's 50 per second) is raised with the controller-manager's: it
# binds every pod those controllers create.
SCHEDULER_QPS=$(( KCM_QPS > 50 ? KCM_QPS : 50 ))
launch kube-scheduler "$K8S_BIN/kube-scheduler" --kubeconfig "$KUBECONFIG_PATH" \
  --leader-elect=false --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" \
  --kube-api-qps "$SCHEDULER_QPS" --kube-api-burst "$(( SCHEDULER_QPS * 2 ))" --v=1

# One simulated node holds a thousand pods; the scale benchmark asks for more of them
# (WINDLASS_KWOK_NODES), and then pod addresses come from a /16.
KWOK_NODES=${WINDLASS_KWOK_NODES:-1}
[[ "$KWOK_NODES" =~ ^[1-9][0-9]*$ ]] || die "WINDLASS_KWOK_NODES is a number of nodes, not '$KWOK_NODES'"
POD_CIDR=10.0.2.0/24
((KWOK_NODES == 1)) || POD_CIDR=10.64.0.0/16
log "starting kwok ($KWOK_NODES simulated node(s) and their pods)"
launch kwok "$KWOK_BIN/kwok" --kubeconfig "$KUBECONFIG_PATH" -c "$E2E_DIR/kwok/stages.yaml" \
  --manage-all-nodes=true --node-lease-duration-seconds=40 \
  --server-address "127.0.0.1:$KWOK_PORT" --node-ip 10.0.1.1 --cidr "$POD_CIDR"
KUBECTL=("$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH")
for ((node = 0; node < KWOK_NODES; node++)); do
  cat <<NODE
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$node
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: kwok-node-$node
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  capacity: {cpu: "64", memory: 256Gi, pods: "1000"}
  allocatable: {cpu: "64", memory: 256Gi, pods: "1000"}
---
NODE
done | "${KUBECTL[@]}" apply -f - >/dev/null

log "starting the OCI registry on 127.0.0.1:$REGISTRY_PORT"
cat >"$STATE_DIR/registry.yml" <<REG
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $STATE_DIR/registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$REGISTRY_PORT
REG
launch registry docker-registry serve "$STATE_DIR/registry.yml"
wait_for registry 20 curl -sf "http://127.0.0.1:$REGISTRY_PORT/v2/"

wait_for "node kwok-node-0 Ready" 60 "${KUBECTL[@]}" wait --for=condition=Ready node/kwok-node-0 --timeout=1s
wait_for "default ServiceAccount" 60 "${KUBECTL[@]}" get serviceaccount default -n default
for name in etcd kube-apiserver kube-controller-manager kube-scheduler kwok registry; do
  alive "$name" || die "$name exited during start-up"
done

cat >"$STATE_DIR/cluster.env" <<ENV
KUBECONFIG=$KUBECONFIG_PATH
WINDLASS_APISERVER=https://127.0.0.1:$APISERVER_PORT
WINDLASS_REGISTRY=127.0.0.1:$REGISTRY_PORT
WINDLASS_ETCD=http://127.0.0.1:$ETCD_PORT
WINDLASS_TOOLS_PATH=$(tools_path)
ENV
echo "127.0.0.1:$REGISTRY_PORT" >"$STATE_DIR/registry.addr"
trap - EXIT
log "control plane up in $((SECONDS - start)) s"
"$E2E_DIR/scripts/cluster-status.sh"
