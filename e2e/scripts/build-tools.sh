#!/usr/bin/env bash
# Builds the pinned control-plane binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd, kwok, helm) from the Go module proxy into the version cache.
# Each binary is built only when missing, so this is a no-op on a warm machine.
source "$(dirname "$0")/lib.sh"

missing="$(missing_tools | tr '\n' ' ')"
[[ -n "$missing" ]] || exit 0
command -v go >/dev/null || die "Go is missing and these are not built yet: ${missing% }. $INSTALL_GO"

# One build at a time: two `make` targets started together must not race on the same binary.
mkdir -p "$WINDLASS_CACHE"
exec 9>"$WINDLASS_CACHE/.build.lock"
flock 9

build() { # module-dir binary-name package ldflags
  local dir="$1" name="$2" pkg="$3" ldflags="$4"
  local bin_dir; bin_dir="$(tool_dir "$dir")"
  if [[ -x "$bin_dir/$name" ]]; then return 0; fi
  mkdir -p "$bin_dir"
  log "building $name from $pkg (cached afterwards in $bin_dir)"
  local start=$SECONDS
  (cd "$E2E_DIR/tools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin_dir/$name.partial.$$" "$pkg") \
    || die "building $name failed (see the Go output above); check that the Go module proxy is reachable and Go is 1.26+"
  mv "$bin_dir/$name.partial.$$" "$bin_dir/$name"
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
