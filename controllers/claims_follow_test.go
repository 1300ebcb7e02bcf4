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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

func claimGone(ns, name string) bool {
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &ipamv1.IPClaim{})
	return apierrors.IsNotFound(err)
}

func setNetworkData(t *testing.T, ns, template string, networkData *capm3.NetworkData) {
	t.Helper()
	m3ppt := getTemplate(t, ns, template)
	original := m3ppt.DeepCopy()
	m3ppt.Spec.NetworkData = networkData
	require.NoError(t, k8sClient.Patch(context.Background(), m3ppt, client.MergeFrom(original)))
}

// The template moves its hosts to another pool: once the Secret holds the
// new address, the claim on the old pool is released.
func TestClaimOnAPoolTheTemplateNoLongerUsesIsReleased(t *testing.T) {
	for _, family := range ipamFamilies {
		t.Run(family.name, func(t *testing.T) {
			ns := newNamespace(t)
			racked := map[string]string{"rack": "r1"}
			create(t,
				family.pool(ns, "old", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
				family.pool(ns, "new", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
				fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, family.networkData("old")),
				fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
			)
			assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-0")))
			old := family.claim(t, ns, "node-0-old")

			setNetworkData(t, ns, "rack-r1", family.networkData("new"))
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.Equal(c, "198.51.100.10", ipOf(readNetworkData(c, ns, "node-0")))
				assert.True(c, family.claimGone(ns, "node-0-old"), "the claim on the old pool is still there")
				assert.True(c, family.addressGone(ns, old.address), "the address of the old pool is still there")
			}, waitTimeout, pollInterval)
			assert.NotEmpty(t, family.claim(t, ns, "node-0-new").address)
		})
	}
}

// With --pool-preallocations, a host's address is recorded in its Metal3
// IPPool too, and the entry goes with the claim when the template moves the
// host to another pool.
func TestPreallocationFollowsTheClaim(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.Pool(ns, "old", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
		fixtures.Pool(ns, "new", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("old")),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
	)
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-0")))
	backstop, _ := countingHostManager(t, false)
	backstop.Preallocations = &ipam.Preallocations{Client: backstop.Client}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = backstop.Preallocations.Start(ctx) }()
	_, err := backstop.Reconcile(ctx, getHost(t, ns, "node-0"))
	require.NoError(t, err)
	oldPool := &ipamv1.IPPool{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, backstop.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, oldPool))
		assert.Equal(c, ipamv1.IPAddressStr("192.0.2.10"), oldPool.Spec.PreAllocations["node-0-old"])
	}, waitTimeout, pollInterval)

	setNetworkData(t, ns, "rack-r1", fixtures.PoolNetworkData("new"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "198.51.100.10", ipOf(readNetworkData(c, ns, "node-0")))
		assert.True(c, claimGone(ns, "node-0-old"), "the claim on the old pool is still there")
	}, waitTimeout, pollInterval)

	_, err = backstop.Reconcile(ctx, getHost(t, ns, "node-0"))
	require.NoError(t, err)
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, oldPool))
	assert.NotContains(t, oldPool.Spec.PreAllocations, "node-0-old")
	assert.NotContains(t, oldPool.Annotations, preprovv1.PreallocatedForAnnotation)
}

// A host still paused for us gives back what it claimed when its template
// goes before it was set up: here its second pool does not exist, which
// stops it with a failure that names the pool.
func TestPausedHostThatLosesItsTemplateReleasesItsClaims(t *testing.T) {
	for _, family := range ipamFamilies {
		t.Run(family.name, func(t *testing.T) {
			ns := newNamespace(t)
			racked := map[string]string{"rack": "r1"}
			twoPools := family.networkData("provisioning")
			twoPools.Networks.IPv4 = append(twoPools.Networks.IPv4, family.networkData("missing").Networks.IPv4[0])
			twoPools.Networks.IPv4[1].ID, twoPools.Networks.IPv4[1].Routes = "storage", nil
			create(t,
				family.pool(ns, "provisioning", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
				fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, twoPools),
				fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
			)
			note := waitForEvent(t, ns, "node-0", baremetal.ReasonIPClaimFailed)
			assert.Contains(t, note, family.poolName("missing")+" does not exist")
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.NotEmpty(c, family.claim(c, ns, "node-0-provisioning").address)
			}, waitTimeout, pollInterval)

			require.NoError(t, k8sClient.Delete(context.Background(), getTemplate(t, ns, "rack-r1")))
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.True(c, family.claimGone(ns, "node-0-provisioning"), "the claim of a host no template selects is still there")
				assert.True(c, family.claimGone(ns, "node-0-missing"), "the claim on the missing pool is still there")
			}, waitTimeout, pollInterval)
			assertPausedForUs(t, ns, "node-0")
		})
	}
}

// A provisioned host whose Secret is left as it is claims nothing from the
// new pool of its template, and keeps the address its Secret names.
func TestProvisionedHostReportingDriftClaimsNoNewPool(t *testing.T) {
	for _, family := range ipamFamilies {
		t.Run(family.name, func(t *testing.T) {
			ns := newNamespace(t)
			racked := map[string]string{"rack": "r1"}
			create(t,
				family.pool(ns, "old", "192.0.2.10", "192.0.2.20", "192.0.2.1"),
				family.pool(ns, "new", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
				fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, family.networkData("old")),
				fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked),
			)
			before := waitForNetworkData(t, ns, "node-0")
			host := getHost(t, ns, "node-0")
			host.Status.Provisioning.State = bmov1alpha1.StateProvisioned
			require.NoError(t, k8sClient.Status().Update(context.Background(), host))

			setNetworkData(t, ns, "rack-r1", family.networkData("new"))
			note := waitForEvent(t, ns, "node-0", baremetal.ReasonNetworkDataDrift)
			assert.Contains(t, note, family.poolName("new")+", which the host holds none from")
			assert.True(t, family.claimGone(ns, "node-0-new"), "a provisioned host claimed an address its Secret will not use")
			assert.NotEmpty(t, family.claim(t, ns, "node-0-old").address)
			assert.Equal(t, before, readNetworkData(t, ns, "node-0"))
		})
	}
}
