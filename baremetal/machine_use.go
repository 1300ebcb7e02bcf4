/*
Copyright The capm3-preprov Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package baremetal

import (
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// MachineUse is whether a host's machine may still run with network data
// its Secret held before some time, and if so, which machine and what ends
// that use, in words for a user.
type MachineUse struct {
	InUse bool
	Until string
}

// MachineUseSince tells whether the host's machine may still run with the
// network data its Secret held before since: an address that data named is
// not free while it may. Two machines keep data they booted with (design,
// "Who still uses an address"):
//   - the OS: BMO gives it the pre-provisioning data when spec.networkData is
//     unset (host_config_data.go), written into the config drive at
//     provisioning, and a HostClaim's deletion leaves it running; it keeps
//     that data until the host is deprovisioned;
//   - the deploy ramdisk: under Ironic's fast track the agent booted for
//     inspection keeps running, with the data it booted with, through
//     available, preparing and provisioning until the host is powered off or
//     the ramdisk is booted again (inspection, deprovisioning); so does the
//     one deprovisioning boots to clean the host.
//
// BMO records when each inspection, provisioning and deprovisioning starts
// (status.operationHistory): a start after since booted the machine with
// data newer than since. A host we never pointed at our Secret never ran
// with it.
func MachineUseSince(host *bmov1alpha1.BareMetalHost, since time.Time) MachineUse {
	if !everPointedAtOurSecret(host) {
		return MachineUse{}
	}
	history := host.Status.OperationHistory
	state := host.Status.Provisioning.State
	if osStates[state] && host.Spec.NetworkData == nil && !history.Provision.Start.After(since) {
		return MachineUse{InUse: true, Until: "the host's OS was provisioned with this address (state " + stateName(state) +
			"; BMO gives the OS the pre-provisioning network data when spec.networkData is unset): it is released once the " +
			"host is deprovisioned"}
	}
	// Provisioning and deprovisioning boot the deploy ramdisk (deprovisioning
	// cleans with it), which fast track then keeps running.
	if osStates[state] && state != bmov1alpha1.StateProvisioning && state != bmov1alpha1.StateDeprovisioning {
		return MachineUse{}
	}
	lastRamdiskBoot := history.Inspect.Start.Time
	if history.Deprovision.Start.After(lastRamdiskBoot) {
		lastRamdiskBoot = history.Deprovision.Start.Time
	}
	neverBooted := lastRamdiskBoot.IsZero() && history.Provision.Start.IsZero()
	switch {
	case !host.Status.PoweredOn, lastRamdiskBoot.After(since), neverBooted && notYetBooted[state]:
		return MachineUse{}
	}
	return MachineUse{InUse: true, Until: "the host's deploy ramdisk, booted before its network data changed, may still run " +
		"with this address under Ironic's fast track (state " + stateName(state) + ", powered on): it is released once the " +
		"host is powered off, deprovisioned or inspected again"}
}

// osStates are the states in which the host's OS may run, or is being
// written with a config drive from its network data.
var osStates = map[bmov1alpha1.ProvisioningState]bool{
	bmov1alpha1.StateProvisioning:          true,
	bmov1alpha1.StateProvisioned:           true,
	bmov1alpha1.StateExternallyProvisioned: true,
	bmov1alpha1.StateDeprovisioning:        true,
}

// notYetBooted are the states before Ironic first boots the host: a host
// there with no recorded inspection, provisioning or deprovisioning has
// never run a ramdisk.
var notYetBooted = map[bmov1alpha1.ProvisioningState]bool{
	bmov1alpha1.StateNone:        true,
	bmov1alpha1.StateUnmanaged:   true,
	bmov1alpha1.StateRegistering: true,
}

// everPointedAtOurSecret is a host we set up (our label) or that points at
// our Secret: BMO may have booted it with that Secret's data.
func everPointedAtOurSecret(host *bmov1alpha1.BareMetalHost) bool {
	return ownership.Ours(host) || host.Spec.PreprovisioningNetworkDataName == NetworkDataSecretName(host.Name)
}

func stateName(state bmov1alpha1.ProvisioningState) string {
	if state == bmov1alpha1.StateNone {
		return "not registered"
	}
	return string(state)
}
