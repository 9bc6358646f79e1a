#!/usr/bin/env bash
# Builds the pinned control-plane binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd, kwok, helm) from the Go module proxy into the version cache.
# Each binary is built only when missing, so this is a no-op on a warm machine.
# Usage: build-tools.sh [all|kubernetes|etcd|kwok|helm|cosign|oc]; `all` (the default) leaves
# out cosign, which only the signature tests need: `build-tools.sh cosign` builds it and a
# registry that serves the OCI referrers API (about 2 minutes and 2.3 GB of module cache the
# first time), and oc, which only the OpenShift API tests need (about 4 minutes).
source "$(dirname "$0")/lib.sh"

only="${1:-all}"
missing="$(missing_tools "$only" | tr '\n' ' ')"
[[ -n "$missing" ]] || exit 0
command -v go >/dev/null || die "Go is missing and these are not built yet: ${missing% }. $INSTALL_GO"
mkdir -p "$WINDLASS_CACHE"

build() { # module-dir binary-name package ldflags
  local dir="$1" name="$2" pkg="$3" ldflags="$4"
  local bin_dir; bin_dir="$(tool_dir "$dir")"
  if [[ -x "$bin_dir/$name" ]]; then return 0; fi
  # One lock per tool: two `make` targets started together must not race on the same binary,
  # and building cosign must not hold up a helm build. Checked again once the lock is held.
  exec 9>"$WINDLASS_CACHE/.build-$dir.lock"
  flock 9
  if [[ -x "$bin_dir/$name" ]]; then exec 9>&-; return 0; fi
  mkdir -p "$bin_dir"
  log "building $name from $pkg (cached afterwards in $bin_dir)"
  local start=$SECONDS
  (cd "$E2E_DIR/tools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin_dir/$name.partial.$$" "$pkg") \
    || die "building $name failed (see the Go output above); check that the Go module proxy is reachable and Go is 1.26+"
  mv "$bin_dir/$name.partial.$$" "$bin_dir/$name"
  log "built $name in $((SECONDS - start)) s"
  exec 9>&-
}

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

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
if [[ "$only" == cosign ]]; then
  build cosign cosign github.com/sigstore/cosign/v3/cmd/cosign "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$COSIGN_VERSION"
  build cosign referrers-registry ./referrers-registry "-s -w"
fi
if [[ "$only" == oc ]]; then
  bin_dir="$(tool_dir oc)"
  exec 9>"$WINDLASS_CACHE/.build-oc.lock"
  flock 9
  if [[ ! -x "$bin_dir/oc" ]]; then
    # oc's go.mod has replace directives, which apply only to the main module: it is built as
    # one, from its module source as the proxy serves it (without the vendor tree it names).
    log "building oc from github.com/openshift/oc@$OC_VERSION (cached afterwards in $bin_dir)"
    start=$SECONDS
    source_dir=$(cd "$E2E_DIR/tools/openshift" && go mod download -json "github.com/openshift/oc@$OC_VERSION" \
      | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [[ -n "$source_dir" ]] || die "could not download github.com/openshift/oc@$OC_VERSION from the Go module proxy"
    work=$(mktemp -d)
    cp -r "$source_dir/." "$work/" && chmod -R u+w "$work" && rm -rf "$work/vendor"
    mkdir -p "$bin_dir"
    (cd "$work" && CGO_ENABLED=0 go build -mod=mod -trimpath -tags containers_image_openpgp \
      -ldflags "-s -w" -o "$bin_dir/oc.partial.$$" ./cmd/oc) \
      || { rm -rf "$work"; die "building oc failed (see the Go output above)"; }
    rm -rf "$work"
    mv "$bin_dir/oc.partial.$$" "$bin_dir/oc"
    log "built oc in $((SECONDS - start)) s"
  fi
  exec 9>&-
fi
