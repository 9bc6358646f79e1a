#!/usr/bin/env bash
# Runs the end-to-end tests: the modules of the e2e test binary, each module's tests in
# parallel, then the e2e crate's own unit tests. Some modules rely on not overlapping with
# others on one cluster (manager_kills restarts the manager, some tests count polls or writes in
# a time window), so modules run one at a time per control plane. With WINDLASS_E2E_LANES=N
# (default 2) there are N control planes, each with its own manager: the running one and N-1
# started here (in $WINDLASS_CLUSTER_DIR-laneK, stopped at the end unless WINDLASS_KEEP_CLUSTER
# is set), and each takes the next module from one queue, longest first, so the lanes end
# together. Most of a module's time is spent waiting on controllers, so two lanes on two cores
# take little more than half the time of one. A module's output is printed whole when it ends.
# Usage: e2e-tests.sh [MODULE...] (default: every module that tests/e2e/main.rs declares); extra
# libtest arguments go in WINDLASS_TEST_ARGS.
source "$(dirname "$0")/lib.sh"
cargo="${CARGO:-cargo}"
# The pinned cosign for the signature tests and oc for the OpenShift API tests, also when the
# running cluster predates them on WINDLASS_TOOLS_PATH.
export PATH="$(tool_dir cosign):$(tool_dir oc):$PATH"
read -r -a test_args <<<"${WINDLASS_TEST_ARGS:---test-threads=4}"

mapfile -t all < <(sed -n 's/^mod \([a-z0-9_]*\);$/\1/p' "$E2E_DIR/tests/e2e/main.rs" | grep -vx common)
# libtest selects tests by substring: `install::` would also pick `lifecycle_install::...`.
for a in "${all[@]}"; do
  for b in "${all[@]}"; do
    [[ "$a" != "$b" && "$b" == *"$a" ]] && die "module $b ends with the name of module $a; rename one (tests are picked by name)"
  done
done
modules=("$@")
((${#modules[@]})) || modules=("${all[@]}")

# Built as `make build` builds (see test-binaries.sh), so nothing is compiled again; the
# executables are then run from the e2e folder as cargo would.
binaries="$(mktemp "${TMPDIR:-/tmp}/windlass-test-binaries.XXXXXX")"
trap 'rm -f "$binaries"' EXIT
"$E2E_DIR/scripts/test-binaries.sh" >"$binaries"
executable() { # kind name
  awk -F'\t' -v kind="$1" -v name="$2" '$1 == "windlass-e2e" && $2 == kind && $3 == name { print $5 }' "$binaries"
}
e2e="$(executable test e2e)"
image="$(executable bin windlass-image)"
[[ -x "$e2e" && -x "$image" ]] || die "the e2e test executables were not built (see test-binaries.sh)"
lanes="${WINDLASS_E2E_LANES:-2}"
[[ "$lanes" =~ ^[1-9][0-9]*$ ]] || die "WINDLASS_E2E_LANES=$lanes: give a whole number of lanes, 1 or more"
((lanes <= ${#modules[@]})) || lanes=${#modules[@]}
((lanes == 1)) || [[ -n "${WINDLASS_MANAGER_BIN:-}" ]] ||
  die "WINDLASS_E2E_LANES=$lanes needs WINDLASS_MANAGER_BIN (each lane's control plane gets its own manager), or set WINDLASS_E2E_LANES=1"

# Longest first: the times of the last run on this machine, else these modules known to be
# long (each over a minute), else the order main.rs declares. The order only balances lanes.
durations="$WINDLASS_CACHE/e2e-module-seconds"
long=(fleet crd_safety_differential manager_kills openshift_api cluster_versions catalog_removal
  lifecycle_rollback cluster_version_rollbacks)
work="$(mktemp -d "${TMPDIR:-/tmp}/windlass-e2e-lanes.XXXXXX")"
extra_clusters=()
cleanup() {
  if [[ -z "${WINDLASS_KEEP_CLUSTER:-}" ]]; then
    local dir
    for dir in "${extra_clusters[@]}"; do WINDLASS_CLUSTER_DIR="$dir" "$E2E_DIR/scripts/cluster-down.sh" >/dev/null 2>&1 || true; done
  fi
  rm -rf "$work" "$binaries"
}
trap cleanup EXIT
{
  for module in "${modules[@]}"; do
    weight=$(awk -F'\t' -v m="$module" '$1 == m { w = $2 } END { print w }' "$durations" 2>/dev/null || true)
    if [[ -z "$weight" ]]; then
      weight=30
      for known in "${long[@]}"; do [[ "$known" == "$module" ]] && weight=120; done
    fi
    printf '%s\t%s\n' "$weight" "$module"
  done
} | sort -t$'\t' -k1,1 -gr -s | cut -f2 >"$work/queue"
touch "$work/failed" "$work/seconds"

next_module() { # prints the next queued module and takes it off the queue; fails when empty
  local module
  {
    flock 8
    module="$(head -n 1 "$work/queue")"
    [[ -n "$module" ]] || return 1
    sed -i 1d "$work/queue"
  } 8>"$work/queue.lock"
  echo "$module"
}

run_lane() { # lane cluster-dir
  local lane="$1" module status module_start took
  export WINDLASS_CLUSTER_DIR="$2"
  set -a; source "$2/cluster.env"; set +a
  while module="$(next_module)"; do
    log "lane $lane: e2e module $module"
    module_start=$SECONDS
    status=0
    (cd "$E2E_DIR" && run_timed_tests e2e "$e2e" "${test_args[@]}" "$module::") >"$work/$module.log" 2>&1 || status=$?
    took=$((SECONDS - module_start))
    ((status == 0)) || echo "$module" >>"$work/failed"
    printf '%s\t%s\n' "$module" "$took" >>"$work/seconds"
    {
      flock 9
      cat "$work/$module.log"
      log "e2e module $module took $took s (lane $lane)$( ((status == 0)) || echo ", FAILED")"
    } 9>"$work/print.lock"
  done
}

start_lane() { # lane: starts a control plane and manager for it, then runs the lane
  local lane="$1" dir="$STATE_DIR-lane$1"
  if ! (export WINDLASS_CLUSTER_DIR="$dir"
        "$E2E_DIR/scripts/cluster-up.sh" && "$E2E_DIR/scripts/manager-restart.sh" "$WINDLASS_MANAGER_BIN") \
      >"$work/lane$lane-start.log" 2>&1; then
    cat "$work/lane$lane-start.log" >&2
    log "error: the control plane of lane $lane did not start; the other lanes run its share"
    echo "(control plane of lane $lane)" >>"$work/failed"
    return 0
  fi
  run_lane "$lane" "$dir"
}

start=$SECONDS
pids=()
for ((lane = 2; lane <= lanes; lane++)); do
  extra_clusters+=("$STATE_DIR-lane$lane")
  start_lane "$lane" &
  pids+=($!)
done
run_lane 1 "$STATE_DIR" &
pids+=($!)
for pid in "${pids[@]}"; do wait "$pid" || echo "(a lane stopped: exit status $?)" >>"$work/failed"; done
# The next run orders its queue by these times.
if [[ -s "$work/seconds" ]] && mkdir -p "$WINDLASS_CACHE" 2>/dev/null; then
  awk -F'\t' 'NR == FNR { new[$1] = $2; next } !($1 in new) { print } END { for (m in new) print m "\t" new[m] }' \
    "$work/seconds" "$durations" 2>/dev/null >"$work/durations" || cp "$work/seconds" "$work/durations"
  cp "$work/durations" "$durations" 2>/dev/null || true
fi
mapfile -t failed <"$work/failed"
(cd "$E2E_DIR" && run_timed_tests windlass-e2e "$image" "${test_args[@]}") || failed+=("(e2e crate unit tests)")
log "end-to-end tests took $((SECONDS - start)) s in $lanes lane(s)"
((${#failed[@]} == 0)) || die "failed: ${failed[*]}"
