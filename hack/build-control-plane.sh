#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from Go modules into the folder given as $1,
# which envtest then uses as KUBEBUILDER_ASSETS; with "node" as $2, the local cluster's
# kube-controller-manager, kube-scheduler, kubelet and kube-proxy instead. Nothing but Go
# modules is downloaded.
set -euo pipefail

out=${1:?usage: build-control-plane.sh OUTPUT_DIR [node]}
mode=${2:-}
kube_version=${KUBE_VERSION:-v1.37.1}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

step() { printf '==> %s\n' "$*"; }

major=${kube_version#v}; major=${major%%.*}
minor=${kube_version#v*.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"

if [ "$mode" = node ]; then
  # The same module, flags and build cache as kube-apiserver: after it, only the node's own
  # packages compile (about 2 minutes on two cores).
  node=(kube-controller-manager kube-scheduler kubelet kube-proxy)
  start=$(date +%s)
  step "building ${node[*]} $kube_version (k8s.io/kubernetes) into $out"
  log="$out/node.build.log"
  staging="$out/.node-build"
  rm -rf "$staging" && mkdir -p "$staging"
  if ! (cd "$root/hack/tools/kube-apiserver" && go build -v -trimpath -ldflags "$ldflags" -o "$staging/" \
      "${node[@]/#/k8s.io/kubernetes/cmd/}" 2>&1 |
    tee "$log" | awk '{ n++; if (n % 100 == 0) { printf "    %d packages compiled (%s)\n", n, $0; fflush() } }'); then
    echo "node build failed; the end of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  rm -f "$log"
  for b in "${node[@]}"; do mv "$staging/$b" "$out/$b"; done
  rmdir "$staging"
  step "node components built after $(( $(date +%s) - start ))s"
  "$out/kubelet" --version
  exit 0
fi

if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ -x "$out/kubectl" ]; then
  step "control plane already built in $out"
  exit 0
fi

start=$(date +%s)
if [ ! -x "$out/etcd" ]; then
  step "building etcd (go.etcd.io/etcd/server/v3) into $out/etcd"
  (cd "$root/hack/tools/etcd" && go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" .)
  mv "$out/etcd.tmp" "$out/etcd"
  step "etcd built after $(( $(date +%s) - start ))s"
fi
if [ ! -x "$out/kube-apiserver" ]; then
  step "building kube-apiserver $kube_version (k8s.io/kubernetes) into $out/kube-apiserver"
  step "a cold build compiles about 2,000 packages and takes several minutes; progress follows"
  log="$out/kube-apiserver.build.log"
  if ! (cd "$root/hack/tools/kube-apiserver" && go build -v -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver 2>&1 |
    tee "$log" | awk '{ n++; if (n % 100 == 0) { printf "    %d packages compiled (%s)\n", n, $0; fflush() } }'); then
    echo "kube-apiserver build failed; the end of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  rm -f "$log"
  mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
  step "kube-apiserver built after $(( $(date +%s) - start ))s"
fi
if [ ! -x "$out/kubectl" ]; then
  step "building kubectl $kube_version into $out/kubectl"
  (cd "$root/hack/tools/kube-apiserver" && go build -trimpath -ldflags "$ldflags" -o "$out/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl)
  mv "$out/kubectl.tmp" "$out/kubectl"
  step "kubectl built after $(( $(date +%s) - start ))s"
fi
"$out/kube-apiserver" --version
"$out/kubectl" version --client | sed -n 1p
"$out/etcd" --version | sed -n 1p
