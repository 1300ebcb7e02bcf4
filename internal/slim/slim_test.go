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

package slim

import (
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

func TestHostKeepsWhatWeRead(t *testing.T) {
	now := metav1.Now()
	registered := metav1.NewTime(now.Add(-time.Hour))
	inspected, provisioned := metav1.NewTime(now.Add(-50*time.Minute)), metav1.NewTime(now.Add(-40*time.Minute))
	deprovisioned := metav1.NewTime(now.Add(-30 * time.Minute))
	host := &bmov1alpha1.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{
			Name: "node-0", Namespace: "metal3", UID: "uid-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: now, DeletionTimestamp: &now,
			Labels:          map[string]string{"role": "worker"},
			Annotations:     map[string]string{"example.com/mac": "52:54:00:aa:bb:01"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Metal3Machine", Name: "m"}},
			Finalizers:      []string{"baremetalhost.metal3.io"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: bmov1alpha1.BareMetalHostSpec{
			Online:                         true,
			BootMACAddress:                 "52:54:00:aa:bb:01",
			ConsumerRef:                    &corev1.ObjectReference{Kind: "Metal3Machine", Name: "m"},
			PreprovisioningNetworkDataName: "node-0-preprov-networkdata",
			NetworkData:                    &corev1.SecretReference{Name: "node-0-networkdata"},
			BMC:                            bmov1alpha1.BMCDetails{Address: "redfish://x", CredentialsName: "node-0-bmc"},
			Description:                    "rack 1",
		},
		Status: bmov1alpha1.BareMetalHostStatus{
			Provisioning: bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateProvisioned, ID: "ironic-id"},
			HardwareDetails: &bmov1alpha1.HardwareDetails{
				Hostname: "node-0",
				CPU:      bmov1alpha1.CPU{Model: "Xeon", Count: 64},
				Storage:  []bmov1alpha1.Storage{{Name: "/dev/sda", SizeBytes: 1 << 40}},
				NIC:      []bmov1alpha1.NIC{{Name: "enp1s0", MAC: "52:54:00:aa:bb:01", IP: "192.0.2.10", Model: "virtio", SpeedGbps: 25}},
			},
			ErrorMessage: "old error",
			PoweredOn:    true,
			OperationHistory: bmov1alpha1.OperationHistory{
				Register:    bmov1alpha1.OperationMetric{Start: registered, End: inspected},
				Inspect:     bmov1alpha1.OperationMetric{Start: inspected, End: provisioned},
				Provision:   bmov1alpha1.OperationMetric{Start: provisioned, End: deprovisioned},
				Deprovision: bmov1alpha1.OperationMetric{Start: deprovisioned},
			},
		},
	}

	slimmed, err := Host(host)
	require.NoError(t, err)
	slim, ok := slimmed.(*bmov1alpha1.BareMetalHost)
	require.True(t, ok)

	want := host.ObjectMeta.DeepCopy()
	want.ManagedFields = nil
	assert.Equal(t, *want, slim.ObjectMeta)
	assert.Equal(t, bmov1alpha1.BareMetalHostSpec{
		Online: true, BootMACAddress: host.Spec.BootMACAddress, ConsumerRef: host.Spec.ConsumerRef,
		PreprovisioningNetworkDataName: host.Spec.PreprovisioningNetworkDataName, NetworkData: host.Spec.NetworkData,
		BMC: bmov1alpha1.BMCDetails{Address: "redfish://x"},
	}, slim.Spec)
	assert.Equal(t, bmov1alpha1.BareMetalHostStatus{
		Provisioning:    bmov1alpha1.ProvisionStatus{State: bmov1alpha1.StateProvisioned},
		HardwareDetails: &bmov1alpha1.HardwareDetails{NIC: []bmov1alpha1.NIC{{Name: "enp1s0", MAC: "52:54:00:aa:bb:01"}}},
		PoweredOn:       true,
		OperationHistory: bmov1alpha1.OperationHistory{
			Register:    bmov1alpha1.OperationMetric{Start: registered},
			Inspect:     bmov1alpha1.OperationMetric{Start: inspected},
			Provision:   bmov1alpha1.OperationMetric{Start: provisioned},
			Deprovision: bmov1alpha1.OperationMetric{Start: deprovisioned},
		},
	}, slim.Status, "the starts of registration and inspection time the inspection stall; the power state and the "+
		"starts of every boot tell whether a machine still runs with old network data")

	uninspected, err := Host(&bmov1alpha1.BareMetalHost{})
	require.NoError(t, err)
	assert.Equal(t, &bmov1alpha1.BareMetalHost{}, uninspected, "a host never inspected has no hardware details")

	other := &corev1.Secret{}
	passed, err := Host(other)
	require.NoError(t, err)
	assert.Same(t, other, passed)
}

func TestPoolKeepsTheSpecAndOurPreallocationsRecord(t *testing.T) {
	pool := &ipamv1.IPPool{
		ObjectMeta: metav1.ObjectMeta{
			Name: "provisioning", Namespace: "metal3", ResourceVersion: "7",
			Annotations:   map[string]string{"preprovisioning.metal3.io/preallocations": `["node-0-provisioning"]`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "ipam"}, {Manager: preprovv1.PreallocationsFieldManager}},
		},
		Spec: ipamv1.IPPoolSpec{
			Pools:          []ipamv1.Pool{{Start: ptr.To(ipamv1.IPAddressStr("10.0.0.10")), End: ptr.To(ipamv1.IPAddressStr("10.0.0.20"))}},
			Prefix:         24,
			PreAllocations: map[string]ipamv1.IPAddressStr{"node-0-provisioning": "10.0.0.10"},
		},
		Status: ipamv1.IPPoolStatus{Allocations: map[string]ipamv1.IPAddressStr{"node-0-provisioning": "10.0.0.10"}},
	}
	want := pool.DeepCopy()
	want.ManagedFields = want.ManagedFields[1:]
	want.Status = ipamv1.IPPoolStatus{}

	slimmed, err := Pool(pool)
	require.NoError(t, err)
	assert.Equal(t, want, slimmed)

	other := &corev1.Secret{}
	passed, err := Pool(other)
	require.NoError(t, err)
	assert.Same(t, other, passed)
}

func TestMachineDeploymentKeepsItsTemplateReference(t *testing.T) {
	now := metav1.Now()
	deployment := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "workers", Namespace: "metal3", UID: "uid-md", ResourceVersion: "9", Generation: 2,
			CreationTimestamp: now, DeletionTimestamp: &now,
			Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "c"}, Annotations: map[string]string{"a": "b"},
		},
		Spec: clusterv1.MachineDeploymentSpec{ClusterName: "c", Replicas: ptr.To[int32](3)},
	}
	reference := clusterv1.ContractVersionedObjectReference{Kind: "Metal3MachineTemplate", Name: "workers-v2", APIGroup: "infrastructure.cluster.x-k8s.io"}
	deployment.Spec.Template.Spec.InfrastructureRef = reference

	slimmed, err := MachineDeployment(deployment)
	require.NoError(t, err)
	want := &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{
		Name: "workers", Namespace: "metal3", UID: "uid-md", ResourceVersion: "9", Generation: 2,
		CreationTimestamp: now, DeletionTimestamp: &now,
	}}
	want.Spec.Template.Spec.InfrastructureRef = reference
	assert.Equal(t, want, slimmed)

	other := &corev1.Secret{}
	passed, err := MachineDeployment(other)
	require.NoError(t, err)
	assert.Same(t, other, passed)
}
