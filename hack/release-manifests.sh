#!/usr/bin/env bash
# Builds the clusterctl release assets into $OUT: infrastructure-components.yaml
# (config/default with the manager image set to $IMG:$TAG), metadata.yaml and
# the cluster templates. Run it from the repository root. The image is set on
# a temporary copy of config/, so the tree is never edited.
set -euo pipefail

KUSTOMIZE="${KUSTOMIZE:-bin/kustomize}"
IMG="${IMG:-quay.io/capm3-preprov/capm3-preprov}"
TAG="${TAG:-v0.1.0}"
OUT="${OUT:-out}"

# kustomize edit runs inside the copy, so it needs an absolute path.
case "$KUSTOMIZE" in
  */*) KUSTOMIZE="$(cd "$(dirname "$KUSTOMIZE")" && pwd)/$(basename "$KUSTOMIZE")" ;;
  *) KUSTOMIZE="$(command -v "$KUSTOMIZE")" ;;
esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -R config "$work/config"
(cd "$work/config/manager" && "$KUSTOMIZE" edit set image "controller=$IMG:$TAG")

mkdir -p "$OUT"
"$KUSTOMIZE" build "$work/config/default" > "$OUT/infrastructure-components.yaml"
cp metadata.yaml templates/cluster-template*.yaml "$OUT/"
