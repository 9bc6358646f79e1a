#!/usr/bin/env bash
# Runs a command (the stages of `make test`) and then prints a summary, whether it passed or
# not: the result, how long it took, and every test that skipped and why, with what to do to run
# them. Tests record their skips in the file WINDLASS_SKIPPED_TESTS names (one line each:
# file, test, reason). Usage: with-test-summary.sh COMMAND...
source "$(dirname "$0")/lib.sh"

record="$(mktemp "${TMPDIR:-/tmp}/windlass-skipped-tests.XXXXXX")"
times="$(mktemp "${TMPDIR:-/tmp}/windlass-test-times.XXXXXX")"
trap 'rm -f "$record" "$times"' EXIT
export WINDLASS_SKIPPED_TESTS="$record" WINDLASS_TEST_TIMES="$times"

start=$SECONDS
status=0
"$@" || status=$?
elapsed=$((SECONDS - start))

printf '\n== make test: '
if ((status == 0)); then printf 'passed'; else printf 'FAILED (exit status %s)' "$status"; fi
printf ' in %d min %02d s\n' $((elapsed / 60)) $((elapsed % 60))
if [[ -s "$times" ]]; then
  printf '%s tests took %.0f s between them; the slowest ten:\n' "$(wc -l <"$times")" \
    "$(awk -F'\t' '{ s += $1 } END { print s }' "$times")"
  # awk reads to the end (no `head`): a reader that stops early makes sort die of SIGPIPE,
  # which pipefail turns into this script's exit status.
  sort -t$'\t' -k1,1 -gr "$times" | awk -F'\t' 'NR <= 10 { printf "  %7.1f s  %s  (%s)\n", $1, $3, $2 }'
fi
if [[ -s "$record" ]]; then
  sort -u "$record" >"$record.sorted"
  printf '%s tests skipped:\n' "$(wc -l <"$record.sorted")"
  awk -F'\t' '{ printf "  %s  (%s)\n", $2, $1 }' "$record.sorted"
  printf 'why:\n'
  cut -f3 "$record.sorted" | sort -u | sed 's/^/  /'
  rm -f "$record.sorted"
  cat <<'HOW'
to run them: the corpus tests need the OperatorHub corpus (a folder holding
operatorhub/<package>/...): put it at ../shared/corpus beside this checkout, or set
WINDLASS_CORPUS to it; CONTRIBUTING.md ("The corpus") says where it comes from.
HOW
else
  printf 'no test skipped\n'
fi
exit "$status"
