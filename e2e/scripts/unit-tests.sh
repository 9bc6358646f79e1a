#!/usr/bin/env bash
# The unit, library and integration tests of every crate but the end-to-end one: the test
# executables of `test-binaries.sh` (the same build as `make build`, so nothing is compiled
# again), each run from its package folder as cargo would, then the doc tests. Every
# executable runs even when one fails; the failures are listed at the end.
source "$(dirname "$0")/lib.sh"
cargo="${CARGO:-cargo}"
read -r -a test_args <<<"${WINDLASS_UNIT_TEST_ARGS:-}"

binaries="$(mktemp "${TMPDIR:-/tmp}/windlass-test-binaries.XXXXXX")"
trap 'rm -f "$binaries"' EXIT
"$E2E_DIR/scripts/test-binaries.sh" >"$binaries"
failed=()
while IFS=$'\t' read -r package kind name folder executable; do
  # The end-to-end crate needs the control plane (e2e-tests.sh); benches and examples are
  # not tests.
  [[ "$package" == windlass-e2e || "$kind" == bench || "$kind" == example ]] && continue
  log "$package: $kind $name"
  (cd "$folder" && run_timed_tests "$package" "$executable" "${test_args[@]}") || failed+=("$package ($kind $name)")
done <"$binaries"
"$cargo" test --workspace --doc || failed+=("doc tests")
((${#failed[@]} == 0)) || die "failed: ${failed[*]}"
