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

package bmomodel

import (
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func host(state bmov1alpha1.ProvisioningState, online, withImage bool, annotations map[string]string) *bmov1alpha1.BareMetalHost {
	h := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	h.Spec.Online = online
	h.Status.Provisioning.State = state
	if withImage {
		h.Spec.Image = &bmov1alpha1.Image{URL: "http://images.example.com/node.qcow2"}
	}
	return h
}

func TestNext(t *testing.T) {
	current := Data{Preprovisioning: []string{"10.0.0.2"}}
	withNetworkData := host(bmov1alpha1.StateProvisioning, true, true, nil)
	withNetworkData.Spec.NetworkData = &corev1.SecretReference{Name: "data-0-networkdata"}
	oldRamdisk := Machine{PoweredOn: true, RamdiskRunning: true, Ramdisk: []string{"10.0.0.1"}}
	os := Machine{PoweredOn: true, Installed: true, OS: []string{"10.0.0.1"}}
	tests := []struct {
		name    string
		host    *bmov1alpha1.BareMetalHost
		machine Machine
		data    Data
		want    Step
	}{
		{name: "a new host registers", host: host(bmov1alpha1.StateNone, true, false, nil),
			want: Step{State: bmov1alpha1.StateRegistering}},
		{name: "inspection boots the ramdisk with the current data", host: host(bmov1alpha1.StateRegistering, true, false, nil), data: current,
			want: Step{State: bmov1alpha1.StateInspecting, Machine: Machine{PoweredOn: true, RamdiskRunning: true, Ramdisk: []string{"10.0.0.2"}}}},
		{name: "fast track: an available host keeps the ramdisk it booted", host: host(bmov1alpha1.StateAvailable, true, false, nil),
			machine: oldRamdisk, data: current, want: Step{State: bmov1alpha1.StateAvailable, Machine: oldRamdisk, Done: true}},
		{name: "fast track: provisioning keeps the running ramdisk", host: host(bmov1alpha1.StateAvailable, true, true, nil),
			machine: oldRamdisk, data: current, want: Step{State: bmov1alpha1.StateProvisioning, Machine: oldRamdisk}},
		{name: "provisioning a powered-off host boots the ramdisk with the current data", host: host(bmov1alpha1.StateAvailable, false, true, nil),
			data: current, want: Step{State: bmov1alpha1.StateProvisioning, Machine: Machine{PoweredOn: true, RamdiskRunning: true, Ramdisk: []string{"10.0.0.2"}}}},
		{name: "without spec.networkData the OS gets the preprovisioning data", host: host(bmov1alpha1.StateProvisioning, true, true, nil),
			machine: oldRamdisk, data: current, want: Step{State: bmov1alpha1.StateProvisioned, Machine: Machine{PoweredOn: true, Installed: true, OS: []string{"10.0.0.2"}}}},
		{name: "with spec.networkData the OS gets it", host: withNetworkData, machine: oldRamdisk,
			data: Data{Preprovisioning: []string{"10.0.0.2"}, Network: []string{"10.0.0.3"}},
			want: Step{State: bmov1alpha1.StateProvisioned, Machine: Machine{PoweredOn: true, Installed: true, OS: []string{"10.0.0.3"}}}},
		{name: "the OS keeps its addresses when the data changes", host: host(bmov1alpha1.StateProvisioned, true, true, nil), machine: os, data: current,
			want: Step{State: bmov1alpha1.StateProvisioned, Machine: os, Done: true}},
		{name: "deprovisioning boots the ramdisk with the current data", host: host(bmov1alpha1.StateProvisioned, true, false, nil), machine: os, data: current,
			want: Step{State: bmov1alpha1.StateDeprovisioning, Machine: Machine{PoweredOn: true, RamdiskRunning: true, Ramdisk: []string{"10.0.0.2"}}}},
		{name: "re-inspection boots the ramdisk again", host: host(bmov1alpha1.StateAvailable, true, false, map[string]string{InspectAnnotation: ""}),
			machine: oldRamdisk, data: current,
			want: Step{State: bmov1alpha1.StateInspecting, Machine: Machine{PoweredOn: true, RamdiskRunning: true, Ramdisk: []string{"10.0.0.2"}}, ClearInspect: true}},
		{name: "a power-off stops the ramdisk", host: host(bmov1alpha1.StateAvailable, false, false, nil), machine: oldRamdisk,
			want: Step{State: bmov1alpha1.StateAvailable}},
		{name: "a power-on boots no ramdisk", host: host(bmov1alpha1.StateAvailable, true, false, nil),
			want: Step{State: bmov1alpha1.StateAvailable, Machine: Machine{PoweredOn: true}}},
		{name: "a power-on boots the installed OS", host: host(bmov1alpha1.StateProvisioned, true, true, nil),
			machine: Machine{Installed: true, OS: []string{"10.0.0.1"}}, want: Step{State: bmov1alpha1.StateProvisioned, Machine: os}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Next(tt.host, tt.machine, tt.data))
		})
	}
}

func TestInUse(t *testing.T) {
	tests := []struct {
		name      string
		machine   Machine
		system    string
		addresses []string
	}{
		{name: "off", machine: Machine{Installed: true, OS: []string{"10.0.0.1"}}},
		{name: "the OS", machine: Machine{PoweredOn: true, Installed: true, OS: []string{"10.0.0.1"}}, system: "os", addresses: []string{"10.0.0.1"}},
		{name: "the ramdisk", machine: Machine{PoweredOn: true, RamdiskRunning: true, Ramdisk: []string{"10.0.0.2"}},
			system: "ramdisk", addresses: []string{"10.0.0.2"}},
		{name: "nothing booted", machine: Machine{PoweredOn: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			system, addresses := tt.machine.InUse()
			assert.Equal(t, tt.system, system)
			assert.Equal(t, tt.addresses, addresses)
		})
	}
}

func TestAddresses(t *testing.T) {
	addresses, err := Addresses([]byte(`{"links":[],"networks":[{"id":"a","ip_address":"10.0.0.1"},{"id":"b","type":"ipv6_slaac"}],"services":[]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1"}, addresses)
	_, err = Addresses([]byte(`{`))
	assert.Error(t, err)
}
