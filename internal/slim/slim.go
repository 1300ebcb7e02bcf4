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

// Package slim makes the copies the manager's cache keeps of the objects it
// holds most of: only what the controllers read, and one copy of what many
// objects repeat (shared.go). Each function is a cache transform; an object
// of another type passes unchanged.
//
// Layer: an internal/ leaf; it imports api/v1beta1 only.
package slim

import (
	"slices"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// Host keeps of a BareMetalHost only what we read: its metadata, the
// spec fields of our contract and its network data reference, its BMC
// address (whose driver says whether the ramdisk boots without DHCP), its
// provisioning and power state, when BMO started each operation on it, and
// its NICs' names and MACs. Inspection data (status.hardware) is most of a host's size, and
// a management cluster holds thousands of hosts. Patches stay correct: they
// are computed between two copies of the slim object, so they carry only
// our changes.
func Host(obj any) (any, error) {
	host, ok := obj.(*bmov1alpha1.BareMetalHost)
	if !ok {
		return obj, nil
	}
	slim := HostCopy(host)
	// The copy's slices are the decoded host's, which only this transform holds.
	ShareMetadata(slim)
	slim.Status.Provisioning.State = bmov1alpha1.ProvisioningState(intern(string(slim.Status.Provisioning.State)))
	if slim.Spec.ConsumerRef != nil {
		shareReference(slim.Spec.ConsumerRef)
	}
	return slim, nil
}

// HostCopy is the slim copy of a BareMetalHost that Host keeps, before its
// metadata is shared: it shares the host's maps and slices, and changes
// nothing of it.
func HostCopy(host *bmov1alpha1.BareMetalHost) *bmov1alpha1.BareMetalHost {
	slim := &bmov1alpha1.BareMetalHost{
		TypeMeta:   host.TypeMeta,
		ObjectMeta: identity(host.ObjectMeta),
		Spec: bmov1alpha1.BareMetalHostSpec{
			Online:                         host.Spec.Online,
			BootMACAddress:                 host.Spec.BootMACAddress,
			ConsumerRef:                    host.Spec.ConsumerRef,
			PreprovisioningNetworkDataName: host.Spec.PreprovisioningNetworkDataName,
			// Whether the OS gets other network data than ours.
			NetworkData: host.Spec.NetworkData,
			BMC:         bmov1alpha1.BMCDetails{Address: host.Spec.BMC.Address},
		},
		Status: bmov1alpha1.BareMetalHostStatus{
			Provisioning: bmov1alpha1.ProvisionStatus{State: host.Status.Provisioning.State},
			// Whether a fast-track ramdisk may still run.
			PoweredOn: host.Status.PoweredOn,
			// When BMO started each operation: the inspection stall counts
			// from registration and inspection, and a machine booted after
			// its network data changed no longer runs with the old data.
			OperationHistory: bmov1alpha1.OperationHistory{
				Register:    bmov1alpha1.OperationMetric{Start: host.Status.OperationHistory.Register.Start},
				Inspect:     bmov1alpha1.OperationMetric{Start: host.Status.OperationHistory.Inspect.Start},
				Provision:   bmov1alpha1.OperationMetric{Start: host.Status.OperationHistory.Provision.Start},
				Deprovision: bmov1alpha1.OperationMetric{Start: host.Status.OperationHistory.Deprovision.Start},
			},
		},
	}
	slim.Labels, slim.Annotations = host.Labels, host.Annotations
	slim.OwnerReferences, slim.Finalizers = host.OwnerReferences, host.Finalizers
	if host.Status.HardwareDetails != nil {
		nics := make([]bmov1alpha1.NIC, 0, len(host.Status.HardwareDetails.NIC))
		for _, nic := range host.Status.HardwareDetails.NIC {
			nics = append(nics, bmov1alpha1.NIC{Name: nic.Name, MAC: nic.MAC})
		}
		slim.Status.HardwareDetails = &bmov1alpha1.HardwareDetails{NIC: nics}
	}
	return slim
}

// Pool drops an IPPool's status and the managed fields of every field
// manager but ours of spec.preAllocations (which say which entries we wrote):
// we never read them, and the status's allocations grow with every claim, so
// keeping them would make each read of a pool from the cache (a deep copy)
// cost O(hosts). Pool patches stay correct: they are computed between two
// copies of the cached object.
func Pool(obj any) (any, error) {
	if pool, ok := obj.(*ipamv1.IPPool); ok {
		pool.ManagedFields = slices.DeleteFunc(pool.ManagedFields, func(entry metav1.ManagedFieldsEntry) bool {
			return entry.Manager != preprovv1.PreallocationsFieldManager
		})
		pool.Status = ipamv1.IPPoolStatus{}
	}
	return obj, nil
}

// MachineDeployment keeps of a MachineDeployment only the
// Metal3MachineTemplate it references (spec.template.spec.infrastructureRef):
// we read nothing else of it and never write it.
func MachineDeployment(obj any) (any, error) {
	deployment, ok := obj.(*clusterv1.MachineDeployment)
	if !ok {
		return obj, nil
	}
	slim := &clusterv1.MachineDeployment{
		TypeMeta:   deployment.TypeMeta,
		ObjectMeta: identity(deployment.ObjectMeta),
	}
	slim.Spec.Template.Spec.InfrastructureRef = deployment.Spec.Template.Spec.InfrastructureRef
	return slim, nil
}

// identity is the part of an object's metadata every slim copy keeps: what
// names it, versions it and says whether it is being deleted.
func identity(meta metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              meta.Name,
		Namespace:         meta.Namespace,
		UID:               meta.UID,
		ResourceVersion:   meta.ResourceVersion,
		Generation:        meta.Generation,
		CreationTimestamp: meta.CreationTimestamp,
		DeletionTimestamp: meta.DeletionTimestamp,
	}
}
