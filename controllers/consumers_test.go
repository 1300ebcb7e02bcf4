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
	"strings"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// Hosts consumed by something other than CAPM3 (BMO's HostClaim, a
// consumer of a user's own, even one of a kind named like CAPM3's) keep
// every claim while they are consumed: their OS may run on its address,
// and no Metal3Data marks it. They get no handoff to CAPM3, not even from a
// Metal3Data of a claim named like their consumer. Once the consumer lets
// go, what the Secret no longer names is released, as for every host.
func TestHostsConsumedByOthersKeepTheirClaims(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	racked := map[string]string{"rack": "r1"}
	template := fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("provisioning"))
	template.Spec.ProvisionedHostPolicy = preprovv1.ProvisionedHostUpdate
	create(t,
		fixtures.Pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.Pool(ns, "renumbered", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
		template,
		fixtures.Host(ns, "tenant-host", "52:54:00:aa:bb:01", racked),
		fixtures.Host(ns, "own-host", "52:54:00:aa:bb:02", racked),
	)
	consumers := map[string]*corev1.ObjectReference{
		"tenant-host": {APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "HostClaim", Namespace: ns, Name: "tenant-a"},
		"own-host":    {APIVersion: "example.com/v1", Kind: "Metal3Machine", Namespace: ns, Name: "own-a"},
	}
	before := map[string]string{}
	for name, consumer := range consumers {
		waitForNetworkData(t, ns, name)
		claim := claimOf(t, ns, name+"-provisioning")
		before[name] = string(claim.UID) + " " + claim.Status.Address.Name

		// The consumer provisions the host.
		host := getHost(t, ns, name)
		original := host.DeepCopy()
		host.Spec.ConsumerRef = consumer
		require.NoError(t, k8sClient.Patch(ctx, host, client.MergeFrom(original)))
		setProvisioningState(t, ns, name, bmov1alpha1.StateProvisioned)
		// A Metal3Data whose claim is named like the consumer: not this
		// host's, as CAPM3 consumes it not.
		require.NoError(t, k8sClient.Create(ctx, &capm3.Metal3Data{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-" + name},
			Spec: capm3.Metal3DataSpec{
				Index: new(int32), Claim: &capm3.Metal3ObjectRef{Name: consumer.Name}, Template: &capm3.Metal3ObjectRef{Name: "pooled"},
			},
		}))
	}

	// The template moves its hosts to another pool, provisioned ones too.
	current := getTemplate(t, ns, "rack-r1")
	original := current.DeepCopy()
	current.Spec.NetworkData = fixtures.PoolNetworkData("renumbered")
	require.NoError(t, k8sClient.Patch(ctx, current, client.MergeFrom(original)))
	for name := range consumers {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.True(c, strings.HasPrefix(hostIPv4(c, ns, name), "198.51.100."), "%s still has its old address", name)
			assert.NotNil(c, claimOf(c, ns, name+"-renumbered").Status.Address)
		}, waitTimeout, pollInterval)
		claim := claimOf(t, ns, name+"-provisioning")
		assert.Equal(t, before[name], string(claim.UID)+" "+claim.Status.Address.Name,
			"%s: the claim its OS may run on was released while it was consumed", name)
		for _, claimName := range []string{name + "-provisioning", name + "-renumbered"} {
			assert.Empty(t, metal3DataOwners(claimOf(t, ns, claimName)), "%s was handed over to CAPM3", claimName)
		}
		for _, event := range hostEvents(t, ns, name) {
			assert.NotEqual(t, corev1.EventTypeWarning, event.Type, "%s: %s: %s", name, event.Reason, event.Note)
		}
	}

	// The HostClaim lets go: BMO's HostClaim deletion leaves the host
	// provisioned, its OS still on the old address, which stays claimed.
	// BMO then deprovisions and cleans the host, the ramdisk booting on the
	// Secret's new data: the old claim is released.
	setMachineState(t, ns, "tenant-host", machineState{state: bmov1alpha1.StateProvisioned, poweredOn: true})
	since := heldSince(t, ns, "tenant-host-provisioning", &ipamv1.IPClaim{})
	setMachineState(t, ns, "tenant-host", machineState{state: bmov1alpha1.StateAvailable, poweredOn: true,
		deprovision: since.Add(time.Second)})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tenant-host-provisioning"}, &ipamv1.IPClaim{})
		assert.True(c, apierrors.IsNotFound(err), "the unused claim of a host no longer consumed stays")
	}, waitTimeout, pollInterval)
	assert.NotNil(t, claimOf(t, ns, "own-host-provisioning").Status.Address, "a host still consumed keeps its claim")
}

// hostIPv4 is the address of the first network in the host's Secret.
func hostIPv4(t require.TestingT, ns, hostName string) string {
	networks, ok := readNetworkData(t, ns, hostName)["networks"].([]any)
	require.True(t, ok && len(networks) > 0, "no networks")
	network, ok := networks[0].(map[string]any)
	require.True(t, ok)
	address, _ := network["ip_address"].(string)
	return address
}
