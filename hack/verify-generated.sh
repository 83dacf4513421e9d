#!/usr/bin/env bash
# Fails when the generated files (deepcopy, CRDs, RBAC, the Helm chart's copies of both, the
# Connect API's Go code in internal/gen) differ from what `make generate` produces from the
# current sources. It regenerates them in place, so after a failure the working tree holds
# the right files: review and commit them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
generated=(config/crd config/rbac charts/release-controller/crds charts/release-controller/templates/rbac-generated.yaml internal/gen $(find api -name 'zz_generated.*.go'))
before=$(mktemp -d)
trap 'rm -rf "$before"' EXIT
for path in "${generated[@]}"; do
  mkdir -p "$before/$(dirname "$path")"
  cp -r "$path" "$before/$path"
done

make --no-print-directory generate >/dev/null

drift=0
for path in "${generated[@]}" $(find api -name 'zz_generated.*.go' -newer "$before"); do
  if ! diff -ru "$before/$path" "$path" >/dev/null 2>&1; then
    echo "generated file drifted: $path"
    diff -ru "$before/$path" "$path" | head -n 40 || true
    drift=1
  fi
done
if [ "$drift" -ne 0 ]; then
  echo "run 'make generate' and commit the result" >&2
  exit 1
fi
echo "generated files are up to date"
