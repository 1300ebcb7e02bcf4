#!/usr/bin/env bash
# Regenerates config/crd/upstream/ : the CRDs of the upstream APIs this
# project consumes, at exactly the versions pinned in the root go.mod.
#
#   - metal3.io (BareMetalHost, HardwareData, ...): generated with controller-gen
#     from github.com/metal3-io/baremetal-operator/apis
#   - infrastructure.cluster.x-k8s.io (Metal3Machine, Metal3Data, ...; v1beta1 +
#     v1beta2, v1beta2 stored): generated from
#     github.com/metal3-io/cluster-api-provider-metal3/api
#   - ipam.metal3.io (IPPool, IPClaim, IPAddress): generated from
#     github.com/metal3-io/ip-address-manager/api
#   - cluster.x-k8s.io and ipam.cluster.x-k8s.io: copied verbatim from
#     config/crd/bases of the sigs.k8s.io/cluster-api module, and
#     KubeadmControlPlane (controlplane.cluster.x-k8s.io, whose
#     spec.machineTemplate.spec.infrastructureRef the controller reads) from
#     controlplane/kubeadm/config/crd/bases.
#
# The output is deterministic: re-running it on an unchanged go.mod and the
# same controller-gen produces identical files, so CI can check staleness with
#   hack/upstream-crds.sh && git diff --exit-code config/crd/upstream
#
# Usage (from anywhere; it works from the repo root):
#   CONTROLLER_GEN=bin/controller-gen hack/upstream-crds.sh
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

CONTROLLER_GEN="${CONTROLLER_GEN:-bin/controller-gen}"
OUT_DIR="config/crd/upstream"

# The checksum database does not serve these module paths.
export GONOSUMDB="${GONOSUMDB:-github.com/metal3-io,k8s.io}"

if [[ ! -x "${CONTROLLER_GEN}" ]]; then
  echo "controller-gen not found or not executable at '${CONTROLLER_GEN}' (set CONTROLLER_GEN)" >&2
  exit 1
fi

BMO_MOD="github.com/metal3-io/baremetal-operator/apis"
CAPM3_MOD="github.com/metal3-io/cluster-api-provider-metal3/api"
IPAM_MOD="github.com/metal3-io/ip-address-manager/api"
CAPI_MOD="sigs.k8s.io/cluster-api"

# Make sure the pinned modules are in the module cache (no-op when they are).
go mod download "${BMO_MOD}" "${CAPM3_MOD}" "${IPAM_MOD}" "${CAPI_MOD}"

for mod in "${BMO_MOD}" "${CAPM3_MOD}" "${IPAM_MOD}" "${CAPI_MOD}"; do
  echo "using $(go list -m -f '{{.Path}}@{{.Version}}' "${mod}")"
done

TMP_DIR="$(mktemp -d)"
trap 'rm -rf "${TMP_DIR}"' EXIT

# controller-gen resolves the package import paths through `go list` in the
# root module, which requires the pinned upstream API modules.
# BMO: status fields use float64, hence allowDangerousTypes (as upstream does).
"${CONTROLLER_GEN}" crd:allowDangerousTypes=true \
  paths="${BMO_MOD}/metal3.io/v1alpha1" \
  output:crd:dir="${TMP_DIR}"

# CAPM3: v1beta1 and v1beta2 of infrastructure.cluster.x-k8s.io go into one
# CRD per kind; v1beta2 carries +kubebuilder:storageversion.
"${CONTROLLER_GEN}" crd \
  paths="${CAPM3_MOD}/v1beta1" \
  paths="${CAPM3_MOD}/v1beta2" \
  output:crd:dir="${TMP_DIR}"

# IPAM (ipam.metal3.io/v1alpha1).
"${CONTROLLER_GEN}" crd \
  paths="${IPAM_MOD}/v1alpha1" \
  output:crd:dir="${TMP_DIR}"

# CAPI core (cluster.x-k8s.io), CAPI IPAM (ipam.cluster.x-k8s.io) and KCP CRDs are
# shipped pre-generated in the module; copy them as they are (the module
# cache is read-only, so set the mode explicitly).
CAPI_DIR="$(go list -m -f '{{.Dir}}' "${CAPI_MOD}")"
shopt -s nullglob
capi_crds=("${CAPI_DIR}"/config/crd/bases/cluster.x-k8s.io_*.yaml
           "${CAPI_DIR}"/config/crd/bases/ipam.cluster.x-k8s.io_*.yaml
           "${CAPI_DIR}"/controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml)
shopt -u nullglob
if [[ ${#capi_crds[@]} -eq 0 ]]; then
  echo "no CRDs found under ${CAPI_DIR}/config/crd/bases" >&2
  exit 1
fi
for f in "${capi_crds[@]}"; do
  install -m 0644 "${f}" "${TMP_DIR}/$(basename "${f}")"
done

# Replace the output directory's CRDs as a whole so that CRDs dropped upstream
# do not linger.
mkdir -p "${OUT_DIR}"
rm -f "${OUT_DIR}"/*.yaml
for f in "${TMP_DIR}"/*.yaml; do
  install -m 0644 "${f}" "${OUT_DIR}/$(basename "${f}")"
done

echo "wrote $(find "${OUT_DIR}" -maxdepth 1 -name '*.yaml' | wc -l) CRDs to ${OUT_DIR}"
