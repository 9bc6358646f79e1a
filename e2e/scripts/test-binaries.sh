#!/usr/bin/env bash
# Builds every test of the workspace with exactly the package and target selection `make build`
# uses (`--workspace --all-targets`) and lists the test executables, one per line:
# package<TAB>target kind<TAB>target name<TAB>package folder<TAB>executable.
# Cargo resolves features per selection: `cargo test --test e2e` or `--exclude windlass-e2e`
# would each unify a different feature set and compile most of the dependency tree again, so
# the test stages run these executables themselves instead of asking cargo to.
source "$(dirname "$0")/lib.sh"
cargo="${CARGO:-cargo}"
"$cargo" test --workspace --all-targets --no-run --message-format=json-render-diagnostics |
  python3 -c '
import json, os, sys
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if message.get("reason") != "compiler-artifact" or not message.get("executable"):
        continue
    if not message["profile"]["test"]:
        continue
    target = message["target"]
    # "path+file:///x/crates/api#windlass-api@0.1.0", or "...#0.1.0" when the folder is the name
    location, _, fragment = message["package_id"].rpartition("#")
    package = fragment.split("@", 1)[0] if "@" in fragment else location.rstrip("/").rsplit("/", 1)[-1]
    folder = os.path.dirname(message["manifest_path"])
    print("\t".join([package, target["kind"][0], target["name"], folder, message["executable"]]))
'
