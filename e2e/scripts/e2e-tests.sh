#!/usr/bin/env bash
# Runs the end-to-end tests: the e2e test binary one module at a time, each module's tests in
# parallel, then the e2e crate's own unit tests. The modules were separate test binaries once,
# which cargo runs one after another, and some rely on not overlapping with the others:
# manager_kills restarts the shared manager, some tests count polls or writes in a time window.
# One binary is still one link. Usage: e2e-tests.sh [MODULE...] (default: every module that
# tests/e2e/main.rs declares); extra libtest arguments go in WINDLASS_TEST_ARGS.
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
failed=()
start=$SECONDS
for module in "${modules[@]}"; do
  log "e2e module $module"
  module_start=$SECONDS
  (cd "$E2E_DIR" && run_timed_tests e2e "$e2e" "${test_args[@]}" "$module::") || failed+=("$module")
  log "e2e module $module took $((SECONDS - module_start)) s"
done
(cd "$E2E_DIR" && run_timed_tests windlass-e2e "$image" "${test_args[@]}") || failed+=("(e2e crate unit tests)")
log "end-to-end tests took $((SECONDS - start)) s"
((${#failed[@]} == 0)) || die "failed: ${failed[*]}"
