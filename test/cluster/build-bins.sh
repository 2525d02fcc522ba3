#!/usr/bin/env bash
# build-bins.sh — build (once) and cache the binaries of Gantry's test control plane, from the Go module proxy only:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (k8s.io/kubernetes @ KUBE_VERSION)
#   etcd (go.etcd.io/etcd/server/v3 @ ETCD_VERSION), kwok + its Stage manifests (sigs.k8s.io/kwok @ KWOK_VERSION),
#   helm (helm.sh/helm/v3 @ HELM_VERSION).
# With --kubelet, also what the real node runs (test/cluster/real-node.ts): the kubelet (same module and version), the
# pod sandbox's pause binary (Kubernetes' build/pause/linux/pause.c, compiled static with the machine's cc) and the
# cluster DNS, CoreDNS (github.com/coredns/coredns @ COREDNS_VERSION, with the plugins a cluster DNS uses).
# Cache: $GANTRY_CACHE/k8s/<versions>/ (default ~/.cache/gantry), outside the repo. Idempotent: a warm cache returns
# at once. Progress goes to stderr; the last line on stdout is the directory holding the binaries.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.34.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
HELM_VERSION="${HELM_VERSION:-v3.21.4}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
CACHE="${GANTRY_CACHE:-$HOME/.cache/gantry}"
OUT="$CACHE/k8s/k8s-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_helm-${HELM_VERSION}"

export GOTOOLCHAIN=local CGO_ENABLED=0
have() { [ -x "$OUT/$1" ]; }
all_built() {
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok helm; do have "$b" || return 1; done
  [ -s "$OUT/kwok.yaml" ]
}
KUBELET=""
[ "${1:-}" = --kubelet ] && KUBELET=1
kubelet_built() { [ -z "$KUBELET" ] || { have kubelet && have pause && have coredns; }; }
if all_built && kubelet_built; then echo "$OUT"; exit 0; fi
command -v go >/dev/null || { echo "build-bins: Go >= 1.26 is required to build the test control plane" >&2; exit 1; }
mkdir -p "$OUT"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
T0=$(date +%s)
step() { echo "build-bins: $* ($(( $(date +%s) - T0 ))s)" >&2; }

# A module that requires k8s.io/kubernetes at KUBE_VERSION with its staging modules at their tags; go build flags that
# stamp the version as Kubernetes' own builds do.
k8s_module() {
  mkdir -p "$WORK/k8s" && cd "$WORK/k8s"
  [ -n "${LDF:-}" ] && return 0
  go mod init local/k8s-test-bins >/dev/null 2>&1
  K8S_GOMOD="$(go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" | sed -n 's/^\s*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
  for m in $(grep -oE 'k8s\.io/[A-Za-z0-9._-]+ => \./staging/' "$K8S_GOMOD" | awk '{print $1}' | sort -u); do
    go mod edit -replace="${m}=${m}@${STAGING_VERSION}"
  done
  go mod edit -go="$(awk '$1=="go"{print $2; exit}' "$K8S_GOMOD")"
  GODEBUG_DEFAULT="$(awk '$1=="godebug" && $2 ~ /^default=/ {print $2; exit}' "$K8S_GOMOD")"
  [ -z "$GODEBUG_DEFAULT" ] || go mod edit -godebug="$GODEBUG_DEFAULT"
  MINOR="$(echo "$KUBE_VERSION" | cut -d. -f2)"
  BUILD_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  LDF="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDF="$LDF -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean -X $p.buildDate=$BUILD_DATE"
  done
}
k8s_build() {
  k8s_module
  go get $(for c in "$@"; do printf 'k8s.io/kubernetes/cmd/%s@%s ' "$c" "$KUBE_VERSION"; done) >&2
  go build -mod=mod -trimpath -tags=notest,grpcnotrace -ldflags "$LDF" -o "$OUT/" \
    $(for c in "$@"; do printf 'k8s.io/kubernetes/cmd/%s ' "$c"; done) >&2
}

if ! { have kube-apiserver && have kube-controller-manager && have kube-scheduler && have kubectl; }; then
  step "building Kubernetes ${KUBE_VERSION} (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)"
  k8s_build kube-apiserver kube-controller-manager kube-scheduler kubectl
fi
if [ -n "$KUBELET" ] && ! have kubelet; then
  step "building the kubelet ${KUBE_VERSION}"
  k8s_build kubelet
fi
if [ -n "$KUBELET" ] && ! have pause; then
  step "compiling the pause binary of Kubernetes ${KUBE_VERSION}"
  PAUSE_SRC="$(go env GOMODCACHE)/k8s.io/kubernetes@${KUBE_VERSION}/build/pause/linux/pause.c"
  [ -f "$PAUSE_SRC" ] || go mod download "k8s.io/kubernetes@${KUBE_VERSION}" >&2
  cc -Os -static -Wall -Werror -DVERSION="\"${KUBE_VERSION}\"" -o "$OUT/pause.tmp" "$PAUSE_SRC" && mv "$OUT/pause.tmp" "$OUT/pause"
fi

if ! have etcd; then
  step "building etcd ${ETCD_VERSION}"
  mkdir -p "$WORK/etcd" && cd "$WORK/etcd"
  go mod init local/etcd-bin >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
  go build -mod=mod -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3 >&2
fi

if [ -n "$KUBELET" ] && ! have coredns; then
  # CoreDNS's own main with only the plugins a cluster's DNS uses (its default build links every cloud provider's SDK).
  step "building CoreDNS ${COREDNS_VERSION}"
  mkdir -p "$WORK/coredns" && cd "$WORK/coredns"
  go mod init local/coredns-bin >/dev/null 2>&1
  cat > main.go <<'GO'
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The order plugins run in (CoreDNS's plugin.cfg order, these plugins only).
func init() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes", "forward"}
}

func main() { coremain.Run() }
GO
  go get "github.com/coredns/coredns@${COREDNS_VERSION}" >&2
  go build -mod=mod -trimpath -ldflags "-s -w" -o "$OUT/coredns" . >&2
fi

cd "$WORK"
if ! have kwok; then
  step "building kwok ${KWOK_VERSION}"
  GOBIN="$OUT" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" >&2
fi
KWOK_SRC="$(go env GOMODCACHE)/sigs.k8s.io/kwok@${KWOK_VERSION}"
{
  printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions: {}\n'
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
           pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    printf -- '---\n'; cat "$KWOK_SRC/kustomize/stage/$f"; printf '\n'
  done
} > "$OUT/kwok.yaml.tmp" && mv "$OUT/kwok.yaml.tmp" "$OUT/kwok.yaml"
cp "$KWOK_SRC/kustomize/crd/bases/kwok.x-k8s.io_stages.yaml" "$OUT/kwok-stage-crd.yaml"
chmod u+w "$OUT"/*.yaml

if ! have helm; then
  step "building helm ${HELM_VERSION}"
  GOBIN="$OUT" go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" \
    "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2
fi
step "done: $OUT"
echo "$OUT"
