#!/usr/bin/env bash
# Runs benchmark commands one after the other (each a single shell word list, as `make bench`
# passes them), shows their output as it comes, and ends with every summary row they printed
# (lines `bench-row<TAB>what<TAB>value<TAB>anchor<TAB>ratio<TAB>target<TAB>met|MISSED`) in one
# table. A command that fails is named, and the others still run.
# Usage: bench-summary.sh 'COMMAND ...' ['COMMAND ...' ...]
source "$(dirname "$0")/lib.sh"
rows="$(mktemp "${TMPDIR:-/tmp}/windlass-bench-rows.XXXXXX")"
trap 'rm -f "$rows"' EXIT
failed=()
start=$SECONDS
for command in "$@"; do
  log "bench: $command"
  set +e
  bash -c "$command" 2>&1 | tee >(grep --line-buffered $'^bench-row\t' >>"$rows")
  status=${PIPESTATUS[0]}
  set -e
  ((status == 0)) || failed+=("$command")
done
# tee's process substitution may still be writing.
sleep 1
printf '\n== make bench: %d rows in %d min\n' "$(wc -l <"$rows")" $(((SECONDS - start) / 60))
awk -F'\t' '{ printf "  %-62s %12s  %-44s %7s %9s  %s\n", $2, $3, $4, $5, $6, $7 }' "$rows"
if ((${#failed[@]})); then
  printf 'failed:\n'
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
