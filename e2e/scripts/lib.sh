# Shared settings for the local control plane scripts. Sourced, not executed.
set -euo pipefail

E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_DIR="$(cd "$E2E_DIR/.." && pwd)"

K8S_VERSION="v1.37.2"
ETCD_VERSION="v3.6.16"
KWOK_VERSION="v0.8.0"
HELM_VERSION="v4.3.1"
# Only the signature tests need cosign; `make tools` leaves it out, `make e2e` builds it.
COSIGN_VERSION="v3.1.3"
# OpenShift's CLI, for the tests that drive the OpenShift ClusterVersion API with `oc adm
# upgrade`; `make e2e` builds it. The module has no tagged release the Go module proxy serves,
# so a commit of its master branch (January 2025) is pinned.
OC_VERSION="v0.0.0-alpha.0.0.20250108103617-ae1bd9e4a75b"

# Built binaries are cached by tool and version outside the checkout, so a second start takes
# seconds and bumping one tool rebuilds only that tool.
WINDLASS_CACHE="${WINDLASS_CACHE:-$HOME/.cache/windlass}"
tool_dir() { # kubernetes|etcd|kwok|helm|cosign
  case "$1" in
    kubernetes) echo "$WINDLASS_CACHE/kubernetes-$K8S_VERSION/bin" ;;
    etcd) echo "$WINDLASS_CACHE/etcd-$ETCD_VERSION/bin" ;;
    kwok) echo "$WINDLASS_CACHE/kwok-$KWOK_VERSION/bin" ;;
    helm) echo "$WINDLASS_CACHE/helm-$HELM_VERSION/bin" ;;
    cosign) echo "$WINDLASS_CACHE/cosign-$COSIGN_VERSION/bin" ;;
    oc) echo "$WINDLASS_CACHE/oc-${OC_VERSION##*-}/bin" ;;
    *) die "unknown tool $1" ;;
  esac
}
# The directories to put on PATH so that kubectl, helm and cosign are the pinned ones.
tools_path() { echo "$(tool_dir kubernetes):$(tool_dir etcd):$(tool_dir kwok):$(tool_dir helm):$(tool_dir cosign):$(tool_dir oc)"; }
# Every binary build-tools.sh builds, as tool:binary. `all` is what `make tools` builds.
TOOL_BINARIES=(kubernetes:kube-apiserver kubernetes:kube-controller-manager kubernetes:kube-scheduler
  kubernetes:kubectl etcd:etcd kwok:kwok helm:helm)
COSIGN_BINARIES=(cosign:cosign cosign:referrers-registry)
OC_BINARIES=(oc:oc)
# The binaries of a tool (or of TOOL_BINARIES for `all`) not built yet (none on a warm machine).
missing_tools() { # [all|kubernetes|etcd|kwok|helm|cosign|oc]
  local only="${1:-all}" pair
  for pair in "${TOOL_BINARIES[@]}" "${COSIGN_BINARIES[@]}" "${OC_BINARIES[@]}"; do
    if [[ "$only" == all && ( "$pair" == cosign:* || "$pair" == oc:* ) ]] || [[ "$only" != all && "${pair%%:*}" != "$only" ]]; then
      continue
    fi
    [[ -x "$(tool_dir "${pair%%:*}")/${pair#*:}" ]] || echo "${pair#*:}"
  done
}

# Runtime state of the running cluster: PKI, data, logs, pids, kubeconfig, ports.
STATE_DIR="${WINDLASS_CLUSTER_DIR:-${TMPDIR:-/tmp}/windlass-cluster}"
KUBECONFIG_PATH="$STATE_DIR/admin.kubeconfig"

# What to tell a person who lacks Go or Rust (neither comes from apt: Debian's are too old).
INSTALL_GO="Install Go 1.26 or newer (https://go.dev/dl), put it on PATH, and run this again."
INSTALL_RUST="Install Rust 1.89 or newer with rustup (https://rustup.rs), and run this again."

log() { printf '[windlass-e2e] %s\n' "$*" >&2; }
die() { printf '[windlass-e2e] error: %s\n' "$*" >&2; exit 1; }

# A free TCP port on 127.0.0.1, avoiding the given ports.
free_port() {
  python3 - "$@" <<'PY'
import socket, sys
taken = set(int(p) for p in sys.argv[1:])
while True:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    if port not in taken:
        print(port)
        break
PY
}

port_in_use() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(0)
finally:
    s.close()
sys.exit(1)
PY
}

# Runs a libtest executable with its per-test times on, and when WINDLASS_TEST_TIMES names a
# file, appends one line per finished test to it: seconds<TAB>label<TAB>test. libtest's
# `--report-time` is still unstable, and RUSTC_BOOTSTRAP=1 in the executable's own
# environment is how a stable toolchain turns it on; nothing is compiled under it.
# Usage: run_timed_tests LABEL EXECUTABLE [ARGS...]; the exit status is the executable's.
run_timed_tests() {
  local label="$1" executable="$2"
  shift 2
  local times="${WINDLASS_TEST_TIMES:-/dev/null}"
  RUSTC_BOOTSTRAP=1 "$executable" -Z unstable-options --report-time "$@" 2>&1 |
    LABEL="$label" TIMES="$times" awk '
      { print; fflush() }
      # Not anchored at the start: output of a child process without its own newline can
      # come before the result on the same line.
      match($0, /test [^ ]+ \.\.\. (ok|FAILED) <[0-9.]+s>$/) {
        n = split(substr($0, RSTART), field, " ")
        seconds = field[n]; gsub(/[<>s]/, "", seconds)
        printf "%s\t%s\t%s\n", seconds, ENVIRON["LABEL"], field[2] >> ENVIRON["TIMES"]
      }'
  return "${PIPESTATUS[0]}"
}
