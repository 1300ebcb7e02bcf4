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

package controllers

import (
	"context"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// machineState is what BMO reports of a host's machine, as the tests
// write it in place of BMO.
type machineState struct {
	state     bmov1alpha1.ProvisioningState
	poweredOn bool
	// consumer is a Metal3Machine that consumes the host without a data
	// template (no Metal3Data renders its network data).
	consumer                        string
	inspect, provision, deprovision time.Time
}

func setMachineState(t require.TestingT, ns, name string, machine machineState) {
	ctx := context.Background()
	host := getHost(t, ns, name)
	original := host.DeepCopy()
	host.Spec.ConsumerRef = nil
	if machine.consumer != "" {
		host.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: capm3.GroupVersion.String(), Kind: "Metal3Machine",
			Namespace: ns, Name: machine.consumer}
	}
	require.NoError(t, k8sClient.Patch(ctx, host, client.MergeFrom(original)))
	host.Status.Provisioning.State, host.Status.PoweredOn = machine.state, machine.poweredOn
	history := &host.Status.OperationHistory
	history.Inspect.Start = metav1.NewTime(machine.inspect)
	history.Provision.Start = metav1.NewTime(machine.provision)
	history.Deprovision.Start = metav1.NewTime(machine.deprovision)
	require.NoError(t, k8sClient.Status().Update(ctx, host))
}

// heldSince waits until the host's old claim is kept for its machine, and
// returns since when its address is out of the network data.
func heldSince(t *testing.T, ns, claimName string, claim client.Object) time.Time {
	t.Helper()
	var since time.Time
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: claimName}, claim))
		var marked bool
		since, marked = ipam.UnusedSince(claim)
		assert.True(c, marked, "the old claim is not marked as out of the network data")
		assert.NotEmpty(c, claim.GetAnnotations()[preprovv1.HeldForAnnotation])
	}, waitTimeout, pollInterval)
	return since
}

func claimObject(family ipamFamily) client.Object {
	if family.name == clusterAPIIPAM.name {
		return &capipamv1.IPAddressClaim{}
	}
	return &ipamv1.IPClaim{}
}

// movedToNewPool sets up node-0 from pool "old", lets BMO's stand-in state
// run its machine, moves its template to pool "new", and returns since when
// the old claim is held, once the Secret holds the new address.
func movedToNewPool(t *testing.T, family ipamFamily, ns string, machine machineState) (time.Time, string) {
	t.Helper()
	racked := map[string]string{"rack": "r1"}
	template := fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, family.networkData("old"))
	template.Spec.ProvisionedHostPolicy = preprovv1.ProvisionedHostUpdate
	create(t,
		family.pool(ns, "old", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		family.pool(ns, "new", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
		template,
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-0")))
	old := family.claim(t, ns, "node-0-old")
	setMachineState(t, ns, "node-0", machine)

	setNetworkData(t, ns, "rack-r1", family.networkData("new"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "198.51.100.10", ipOf(readNetworkData(c, ns, "node-0")))
	}, waitTimeout, pollInterval)
	since := heldSince(t, ns, "node-0-old", claimObject(family))
	assert.Contains(t, waitForEvent(t, ns, "node-0", baremetal.ReasonAddressHeld), "node-0-old")
	assert.False(t, family.claimGone(ns, "node-0-old"), "the claim the machine may still use was released")
	assert.False(t, family.addressGone(ns, old.address), "the address the machine may still use was released")
	return since, old.address
}

func waitReleased(t *testing.T, family ipamFamily, ns, address string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.True(c, family.claimGone(ns, "node-0-old"), "the claim on the old pool is still there")
		assert.True(c, family.addressGone(ns, address), "the address of the old pool is still there")
	}, waitTimeout, pollInterval)
}

// A provisioned host whose OS BMO gave the pre-provisioning data (no
// spec.networkData, no Metal3Data owning its claims) keeps the claim its
// OS runs with when its template moves it to another pool; the claim goes
// once the host has been deprovisioned.
func TestARunningOSKeepsItsAddress(t *testing.T) {
	for _, family := range ipamFamilies {
		for _, consumer := range []struct{ name, metal3Machine string }{
			{name: "provisioned by hand, or left provisioned by a deleted HostClaim"},
			{name: "consumed by a Metal3Machine without a data template", metal3Machine: "worker-0"},
		} {
			t.Run(family.name+"/"+consumer.name, func(t *testing.T) {
				ns := newNamespace(t)
				booted := time.Now().Add(-time.Hour)
				since, address := movedToNewPool(t, family, ns, machineState{state: bmov1alpha1.StateProvisioned, poweredOn: true,
					consumer: consumer.metal3Machine, inspect: booted, provision: booted})
				assert.Contains(t, getAnnotation(t, ns, "node-0-old", family, preprovv1.HeldForAnnotation), "deprovisioned")

				// Powered off, the OS still boots from its disk with the old data.
				setMachineState(t, ns, "node-0", machineState{state: bmov1alpha1.StateProvisioned, consumer: consumer.metal3Machine,
					inspect: booted, provision: booted})
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.Contains(c, getAnnotation(c, ns, "node-0-old", family, preprovv1.HeldForAnnotation), "state provisioned")
				}, waitTimeout, pollInterval)
				assert.False(t, family.claimGone(ns, "node-0-old"), "powered off, the OS's address was released")

				setMachineState(t, ns, "node-0", machineState{state: bmov1alpha1.StateAvailable, poweredOn: true,
					inspect: booted, provision: booted, deprovision: since.Add(time.Second)})
				waitReleased(t, family, ns, address)
			})
		}
	}
}

// Under Ironic's fast track the ramdisk booted for inspection keeps running
// with the data it booted with: the old claim is kept until the ramdisk is
// gone (powered off) or booted again (inspected again).
func TestARunningRamdiskKeepsItsAddress(t *testing.T) {
	for _, family := range ipamFamilies {
		for _, release := range []struct {
			name string
			then func(since, booted time.Time) machineState
		}{
			{name: "powered off", then: func(_, booted time.Time) machineState {
				return machineState{state: bmov1alpha1.StateAvailable, inspect: booted}
			}},
			{name: "inspected again", then: func(since, _ time.Time) machineState {
				return machineState{state: bmov1alpha1.StateInspecting, poweredOn: true, inspect: since.Add(time.Second)}
			}},
		} {
			t.Run(family.name+"/"+release.name, func(t *testing.T) {
				ns := newNamespace(t)
				booted := time.Now().Add(-time.Hour)
				since, address := movedToNewPool(t, family, ns, machineState{state: bmov1alpha1.StateAvailable, poweredOn: true,
					inspect: booted})
				assert.Contains(t, getAnnotation(t, ns, "node-0-old", family, preprovv1.HeldForAnnotation), "fast track")

				setMachineState(t, ns, "node-0", release.then(since, booted))
				waitReleased(t, family, ns, address)
			})
		}
	}
}

func getAnnotation(t require.TestingT, ns, name string, family ipamFamily, key string) string {
	claim := claimObject(family)
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, claim))
	return claim.GetAnnotations()[key]
}

// A host BMO never ran with our data (still paused for us) whose template
// moves it to an exhausted pool gives its old pool's claim back at once,
// without waiting for an address from the new one.
func TestHostNotSetUpGivesBackItsOldClaimWhileWaiting(t *testing.T) {
	for _, family := range ipamFamilies {
		t.Run(family.name, func(t *testing.T) {
			ns := newNamespace(t)
			racked := map[string]string{"rack": "r1"}
			full := map[string]string{"rack": "full"}
			twoPools := family.networkData("old")
			twoPools.Networks.IPv4 = append(twoPools.Networks.IPv4, family.networkData("missing").Networks.IPv4[0])
			twoPools.Networks.IPv4[1].ID, twoPools.Networks.IPv4[1].Routes = "storage", nil
			create(t,
				family.pool(ns, "old", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
				family.pool(ns, "tiny", "198.51.100.10", "198.51.100.10", "198.51.100.1"),
				fixtures.PreprovisioningTemplate(ns, "rack-full", full, family.networkData("tiny")),
				fixtures.Host(ns, "holder", "52:54:00:aa:bb:09", full),
			)
			waitForNetworkData(t, ns, "holder")
			create(t,
				fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, twoPools),
				fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
			)
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.NotEmpty(c, family.claim(c, ns, "node-0-old").address)
			}, waitTimeout, pollInterval)
			old := family.claim(t, ns, "node-0-old")

			setNetworkData(t, ns, "rack-r1", family.networkData("tiny"))
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.True(c, family.claimGone(ns, "node-0-old"), "the host waits on the exhausted pool holding its old claim")
				assert.True(c, family.addressGone(ns, old.address), "the old address is still reserved")
			}, waitTimeout, pollInterval)
			assertPausedForUs(t, ns, "node-0")
		})
	}
}
