#!/usr/bin/env bash
# Fails when a package holds +kubebuilder:rbac markers but is an input of no component's role,
# or of two: `make generate` runs controller-gen once per component (controller, api, build)
# on that component's packages only, so a marker anywhere else would silently grant nothing,
# and a package shared by two lists would grant its markers to both.
# Usage: hack/check-rbac-packages.sh PACKAGE... (as ./dir, the Makefile's RBAC_*_PACKAGES)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
declare -A listed=()
fail=0
for pkg in "$@"; do
  if [ -n "${listed[$pkg]:-}" ]; then
    echo "$pkg is in two components' RBAC packages (Makefile RBAC_*_PACKAGES)" >&2
    fail=1
  fi
  listed[$pkg]=1
done
while IFS= read -r dir; do
  if [ -z "${listed[./$dir]:-}" ]; then
    echo "./$dir has +kubebuilder:rbac markers but is in no component's RBAC packages: add it to one of the Makefile's RBAC_*_PACKAGES" >&2
    fail=1
  fi
done < <(grep -rl --include='*.go' --exclude='*_test.go' '^// *+kubebuilder:rbac' api cmd internal | xargs -r -n1 dirname | sort -u)
exit "$fail"
