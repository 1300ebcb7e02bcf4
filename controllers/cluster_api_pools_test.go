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

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// A pool shrunk under the addresses it gave counts fewer than none free
// (the in-cluster provider's free is total less used): a host waiting on it
// is told the pool is exhausted, as on a pool with none free.
func TestClusterAPIPoolShrunkUnderItsAddresses(t *testing.T) {
	ns := newNamespace(t)
	rack := createRack(t, clusterAPIIPAM, ns, "r1", "tiny", "192.0.2.10", "192.0.2.11")
	for i, host := range []string{"node-0", "node-1"} {
		create(t, rackHosts(ns, rack, i, host)...)
		waitForNetworkData(t, ns, host)
	}

	pool := &inclusterv1alpha2.InClusterIPPool{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tiny"}, pool))
	shrunk := pool.DeepCopy()
	shrunk.Spec.Addresses = []string{"192.0.2.10"}
	require.NoError(t, k8sClient.Patch(context.Background(), shrunk, client.MergeFrom(pool)))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		require.NoError(c, k8sClient.Get(context.Background(), client.ObjectKeyFromObject(pool), pool))
		require.NotNil(c, pool.Status.Addresses)
		assert.Equal(c, -1, pool.Status.Addresses.Free, "one address in the pool, two held")
	}, waitTimeout, pollInterval)

	create(t, rackHosts(ns, rack, 2, "node-2")...)
	note := waitForEvent(t, ns, "node-2", baremetal.ReasonIPClaimFailed)
	assert.Contains(t, note, `InClusterIPPool "tiny" has no free address (its status.ipAddresses.free is -1)`)
}

// A template taking addresses from a Cluster API pool named like a Metal3
// IPPool of the namespace is refused before any claim is made: Metal3 IPAM
// serves IPAddressClaims by their pool's name, whatever the kind, and would
// answer the host's claim too. Once the Metal3 IPPool is gone, the host is
// set up from the Cluster API pool.
func TestClusterAPIPoolNamedLikeAMetal3IPPool(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	metal3Pool := fixtures.Pool(ns, "shared", "198.51.100.10", "198.51.100.20", "198.51.100.1")
	create(t,
		metal3Pool,
		fixtures.InClusterIPPool(ns, "shared", "192.0.2.10-192.0.2.20", 24, "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.ClusterAPIPoolNetworkData("shared")),
		fixtures.Host(ns, "node-0", "52:54:00:aa:dd:01", racked),
	)

	note := waitForEvent(t, ns, "node-0", baremetal.ReasonPoolNameShared)
	assert.Contains(t, note, `InClusterIPPool "shared" and the Metal3 IPPool "shared" of namespace "`+ns+`" share a name`)
	assert.Contains(t, note, "Metal3 IPAM serves an IPAddressClaim by its pool's name whatever its kind")
	assert.Contains(t, note, "rename one of the two pools")
	host := getHost(t, ns, "node-0")
	assert.Equal(t, baremetal.ReasonPoolNameShared, host.Annotations[preprovv1.ProblemAnnotation], "the host's problem")
	assert.Equal(t, preprovv1.PausedForPreprovisioning, host.Annotations[preprovv1.PausedAnnotation], "the host stays paused")
	assert.True(t, isGone(ns, ipam.ClaimName("node-0", "shared"), &capipamv1.IPAddressClaim{}), "no claim was made")

	require.NoError(t, k8sClient.Delete(context.Background(), metal3Pool))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.True(c, isGone(ns, "shared", &ipamv1.IPPool{}), "the Metal3 IPPool is still there")
	}, waitTimeout, pollInterval)
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-0")), "an address of the Cluster API pool")
}
