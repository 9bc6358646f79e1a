#!/usr/bin/env bash
# Builds the pinned control-plane binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd, kwok, helm) from the Go module proxy into the version cache.
# Each binary is built only when missing, so this is a no-op on a warm machine.
source "$(dirname "$0")/lib.sh"

command -v go >/dev/null || die "Go is not installed; install Go 1.26+ (or run .ci/run, which installs what it needs)"
mkdir -p "$BIN_DIR"

build() { # module-dir binary-name package ldflags
  local dir="$1" name="$2" pkg="$3" ldflags="$4"
  if [[ -x "$BIN_DIR/$name" ]]; then return 0; fi
  log "building $name from $pkg (cached afterwards in $BIN_DIR)"
  local start=$SECONDS
  (cd "$E2E_DIR/tools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BIN_DIR/$name.partial" "$pkg") \
    || die "building $name failed (see the Go output above); check that the Go module proxy is reachable and Go is 1.26+"
  mv "$BIN_DIR/$name.partial" "$BIN_DIR/$name"
  log "built $name in $((SECONDS - start)) s"
}

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

only="${1:-all}"
if [[ "$only" == all || "$only" == kubernetes ]]; then
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    build kubernetes "$cmd" "k8s.io/kubernetes/cmd/$cmd" "$k8s_ldflags"
  done
fi
if [[ "$only" == all || "$only" == etcd ]]; then
  build etcd etcd go.etcd.io/etcd/server/v3 "-s -w"
fi
if [[ "$only" == all || "$only" == kwok ]]; then
  build kwok kwok sigs.k8s.io/kwok/cmd/kwok "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"
fi
if [[ "$only" == all || "$only" == helm ]]; then
  build helm helm helm.sh/helm/v4/cmd/helm "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
fi
