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
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

func TestMachineUseSince(t *testing.T) {
	since := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	before, after := metav1.NewTime(since.Add(-time.Hour)), metav1.NewTime(since.Add(time.Minute))
	type history struct{ inspect, provision, deprovision metav1.Time }
	for _, tc := range []struct {
		name        string
		state       bmov1alpha1.ProvisioningState
		poweredOn   bool
		networkData bool
		notOurs     bool
		history     history
		inUse       bool
		until       string
	}{
		{name: "never pointed at our Secret", notOurs: true, state: bmov1alpha1.StateProvisioned, poweredOn: true},
		{name: "provisioned with the old data", state: bmov1alpha1.StateProvisioned, poweredOn: true,
			history: history{inspect: before, provision: before}, inUse: true, until: "deprovisioned"},
		{name: "provisioned and powered off: the disk keeps the old data", state: bmov1alpha1.StateProvisioned,
			history: history{inspect: before, provision: before}, inUse: true, until: "deprovisioned"},
		{name: "externally provisioned", state: bmov1alpha1.StateExternallyProvisioned, poweredOn: true, inUse: true,
			until: "deprovisioned"},
		{name: "provisioned with spec.networkData: the OS has CAPM3's data", state: bmov1alpha1.StateProvisioned,
			poweredOn: true, networkData: true, history: history{inspect: before, provision: before}},
		{name: "provisioned after the change", state: bmov1alpha1.StateProvisioned, poweredOn: true,
			history: history{inspect: before, provision: after}},
		{name: "deprovisioning an OS with the old data", state: bmov1alpha1.StateDeprovisioning, poweredOn: true,
			history: history{inspect: before, provision: before, deprovision: after}, inUse: true, until: "deprovisioned"},
		{name: "deprovisioning with CAPM3's data, its cleaning ramdisk booted before the change",
			state: bmov1alpha1.StateDeprovisioning, poweredOn: true, networkData: true,
			history: history{inspect: before, provision: before, deprovision: before}, inUse: true, until: "fast track"},
		{name: "deprovisioning with CAPM3's data, its cleaning ramdisk booted after the change",
			state: bmov1alpha1.StateDeprovisioning, poweredOn: true, networkData: true,
			history: history{inspect: before, provision: before, deprovision: after}},
		{name: "provisioning after the change, ramdisk from before", state: bmov1alpha1.StateProvisioning, poweredOn: true,
			history: history{inspect: before, provision: after}, inUse: true, until: "fast track"},
		{name: "available, fast-track ramdisk from before", state: bmov1alpha1.StateAvailable, poweredOn: true,
			history: history{inspect: before}, inUse: true, until: "powered off"},
		{name: "available and powered off", state: bmov1alpha1.StateAvailable, history: history{inspect: before}},
		{name: "inspected again after the change", state: bmov1alpha1.StateAvailable, poweredOn: true,
			history: history{inspect: after}},
		{name: "inspecting since before the change", state: bmov1alpha1.StateInspecting, poweredOn: true,
			history: history{inspect: before}, inUse: true, until: "fast track"},
		{name: "deprovisioned after the change", state: bmov1alpha1.StateAvailable, poweredOn: true,
			history: history{inspect: before, provision: before, deprovision: after}},
		{name: "preparing with a ramdisk from before", state: bmov1alpha1.StatePreparing, poweredOn: true,
			history: history{inspect: before}, inUse: true, until: "fast track"},
		{name: "available, never inspected (its cleaning ramdisk may run)", state: bmov1alpha1.StateAvailable,
			poweredOn: true, inUse: true, until: "fast track"},
		{name: "registering, never booted", state: bmov1alpha1.StateRegistering, poweredOn: true},
		{name: "not registered yet", state: bmov1alpha1.StateNone, poweredOn: true},
		{name: "registering again after an inspection", state: bmov1alpha1.StateRegistering, poweredOn: true,
			history: history{inspect: before}, inUse: true, until: "powered off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
			if !tc.notOurs {
				host.Labels = map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}
				host.Spec.PreprovisioningNetworkDataName = NetworkDataSecretName(host.Name)
			}
			if tc.networkData {
				host.Spec.NetworkData = &corev1.SecretReference{Name: "node-0-networkdata"}
			}
			host.Status.Provisioning.State, host.Status.PoweredOn = tc.state, tc.poweredOn
			host.Status.OperationHistory.Inspect.Start = tc.history.inspect
			host.Status.OperationHistory.Provision.Start = tc.history.provision
			host.Status.OperationHistory.Deprovision.Start = tc.history.deprovision

			use := MachineUseSince(host, since)
			assert.Equal(t, tc.inUse, use.InUse)
			if tc.inUse {
				assert.Contains(t, use.Until, tc.until)
			} else {
				assert.Empty(t, use.Until)
			}
		})
	}
}

func TestMachineUseSinceAHostPointedAtOurSecretWithoutOurLabel(t *testing.T) {
	host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
	host.Spec.PreprovisioningNetworkDataName = NetworkDataSecretName(host.Name)
	host.Status.Provisioning.State = bmov1alpha1.StateProvisioned
	assert.True(t, MachineUseSince(host, time.Now()).InUse)
}
