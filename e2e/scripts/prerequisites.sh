#!/usr/bin/env bash
# Makes sure the commands that `make cluster`, `make demo` and `make test` run are installed.
# Missing Debian packages are installed with apt-get when this runs as root (and
# WINDLASS_NO_INSTALL is not set); otherwise it prints the exact command to run and stops.
# Go and Rust are not Debian packages here (Debian's are older than windlass needs): when they
# are missing it says what to install and stops.
# Usage: prerequisites.sh cluster|demo|test
source "$(dirname "$0")/lib.sh"

purpose="${1:?usage: prerequisites.sh cluster|demo|test}"

# What each purpose runs, as command:debian-package (a path stands for a file the package
# provides). The local control plane: the registry, the PKI, the health checks, free ports,
# process groups and the tool-build lock.
cluster=(docker-registry:docker-registry openssl:openssl curl:curl python3:python3
  setsid:util-linux flock:util-linux base64:coreutils)
# Building windlass: rustc links through the C compiler.
build=(cc:gcc)
# The tests: skopeo reads images from the outside, the image test strips and inspects the
# manager binary and unpacks layers, and checks the CA bundle the image carries; htpasswd
# writes the users of the registry that asks for credentials; prometheus answers the PromQL
# risks of conditional release updates (each test starts its own on a free port; installing
# the package as root may also enable the system's own prometheus service, which the tests
# leave alone); the hub's browser tests drive headless chromium through chromedriver; gpg
# signs OpenShift-style release signatures for the signature-store tests.
tests=(skopeo:skopeo strip:binutils ldd:libc-bin tar:tar gzip:gzip
  /etc/ssl/certs/ca-certificates.crt:ca-certificates htpasswd:apache2-utils prometheus:prometheus
  chromium:chromium chromedriver:chromium-driver gpg:gnupg)
case "$purpose" in
  cluster) needs=("${cluster[@]}") ;;
  demo) needs=("${cluster[@]}" "${build[@]}") ;;
  test) needs=("${cluster[@]}" "${build[@]}" "${tests[@]}") ;;
  *) die "usage: prerequisites.sh cluster|demo|test (not $purpose)" ;;
esac

present() { # command-or-path
  if [[ "$1" == /* ]]; then [[ -e "$1" ]]; else command -v "$1" >/dev/null; fi
}
missing_packages() {
  local pair packages=()
  for pair in "${needs[@]}"; do
    present "${pair%%:*}" || packages+=("${pair#*:}")
  done
  ((${#packages[@]})) && printf '%s\n' "${packages[@]}" | sort -u | tr '\n' ' '
  return 0
}

# Rust and Go first: nothing else helps without them.
if [[ "$purpose" != cluster ]]; then
  command -v cargo >/dev/null || die "cargo (Rust) is missing. $INSTALL_RUST"
fi
missing="$(missing_tools | tr '\n' ' ')"
if [[ -n "$missing" ]] && ! command -v go >/dev/null; then
  die "Go is missing, and it builds the pinned Kubernetes tools (not built yet: ${missing% }). $INSTALL_GO"
fi

packages="$(missing_packages)"; packages="${packages% }"
[[ -z "$packages" ]] && exit 0

if [[ $EUID -ne 0 || -n "${WINDLASS_NO_INSTALL:-}" ]] || ! command -v apt-get >/dev/null; then
  log "missing Debian packages for 'make $purpose': $packages"
  if command -v apt-get >/dev/null; then
    log "install them with:"
    printf '\n    sudo apt-get install -y %s\n\n' "$packages" >&2
  else
    log "this machine has no apt-get: install the equivalent packages with its package manager"
  fi
  exit 1
fi

log "installing the missing Debian packages for 'make $purpose': $packages"
start=$SECONDS
# Wait for another apt run (a second make started at once) instead of failing on its lock.
apt_options=(-o DPkg::Lock::Timeout=300 -qq)
apt-get "${apt_options[@]}" update
# shellcheck disable=SC2086 # one word per package
DEBIAN_FRONTEND=noninteractive apt-get "${apt_options[@]}" install -y $packages >/dev/null
log "installed $packages in $((SECONDS - start)) s"
still="$(missing_packages)"
[[ -z "$still" ]] || die "after apt-get install, still missing: ${still% } (see the apt-get output above)"
