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
	"fmt"
	"slices"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A host waiting on an exhausted pool gets the next freed address, whatever
// the order its claim was made in. IPAM never looks at a failed claim again;
// claims made at once all saw an empty pool when they were made, so the
// rule must not depend on what the pool held then.

// Three hosts registered together on a pool of two addresses; one that got
// an address is deleted: the third gets it.
func TestExhaustedPoolHostsRegisteredTogether(t *testing.T) {
	for _, family := range ipamFamilies {
		t.Run(family.name, func(t *testing.T) {
			ns := newNamespace(t)
			rack := createRack(t, family, ns, "r1", "tiny", "192.0.2.10", "192.0.2.11")
			hosts := []string{"node-0", "node-1", "node-2"}
			create(t, rackHosts(ns, rack, 0, hosts...)...)

			setUp, failed := waitForExhaustion(t, family, ns, "tiny", hosts, 2)
			deleteHost(t, ns, setUp[0])
			assertSetUpOnce(t, family, ns, append(setUp[1:], failed...)...)
		})
	}
}

// Hosts registered one by one: each claim is made once the one before it
// was served.
func TestExhaustedPoolHostsRegisteredOneByOne(t *testing.T) {
	for _, family := range ipamFamilies {
		t.Run(family.name, func(t *testing.T) {
			ns := newNamespace(t)
			rack := createRack(t, family, ns, "r1", "tiny", "192.0.2.10", "192.0.2.11")
			for i, host := range []string{"node-0", "node-1"} {
				create(t, rackHosts(ns, rack, i, host)...)
				waitForNetworkData(t, ns, host)
			}
			create(t, rackHosts(ns, rack, 2, "node-2")...)
			note := waitForEvent(t, ns, "node-2", baremetal.ReasonIPClaimFailed)
			assert.Contains(t, note, family.poolName("tiny"), "the Warning names the pool")

			deleteHost(t, ns, "node-0")
			assertSetUpOnce(t, family, ns, "node-1", "node-2")
		})
	}
}

// Hosts registered one by one while a second template selects their rack
// claim nothing; deleting that template makes all their claims at once.
func TestExhaustedPoolHostsReleasedFromAConflictTogether(t *testing.T) {
	for _, family := range ipamFamilies {
		t.Run(family.name, func(t *testing.T) {
			ns := newNamespace(t)
			rack := createRack(t, family, ns, "r1", "tiny", "192.0.2.10", "192.0.2.11")
			conflicting := fixtures.PreprovisioningTemplate(ns, "rack-r1-too", rack, fixtures.StaticNetworkData())
			create(t, conflicting)
			hosts := []string{"node-0", "node-1", "node-2"}
			for i, host := range hosts {
				create(t, rackHosts(ns, rack, i, host)...)
				waitForEvent(t, ns, host, baremetal.ReasonTemplateConflict)
			}

			require.NoError(t, k8sClient.Delete(context.Background(), conflicting))
			setUp, failed := waitForExhaustion(t, family, ns, "tiny", hosts, 2)
			deleteHost(t, ns, setUp[1])
			assertSetUpOnce(t, family, ns, append([]string{setUp[0]}, failed...)...)
		})
	}
}

// A host set up on one rack is relabelled to another right after a burst
// there exhausted its pool: it keeps its Secret while it waits, and gets an
// address of the new pool, as the burst's own waiting host does, once they
// free.
func TestExhaustedPoolHostMovedBetweenRacks(t *testing.T) {
	for _, family := range ipamFamilies {
		t.Run(family.name, func(t *testing.T) {
			ns := newNamespace(t)
			r1 := createRack(t, family, ns, "r1", "rack-one", "192.0.2.10", "192.0.2.11")
			r2 := createRack(t, family, ns, "r2", "rack-two", "198.51.100.10", "198.51.100.11")
			create(t, rackHosts(ns, r1, 0, "moved")...)
			waitForNetworkData(t, ns, "moved")

			burst := []string{"node-0", "node-1", "node-2"}
			create(t, rackHosts(ns, r2, 1, burst...)...)
			setUp, failed := waitForExhaustion(t, family, ns, "rack-two", burst, 2)
			moved := getHost(t, ns, "moved")
			original := moved.DeepCopy()
			moved.Labels["rack"] = r2["rack"]
			require.NoError(t, k8sClient.Patch(context.Background(), moved, client.MergeFrom(original)))
			waitForEvent(t, ns, "moved", baremetal.ReasonIPClaimFailed)
			assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "moved")), "the moved host keeps its Secret while it waits")

			deleteHost(t, ns, setUp[0])
			deleteHost(t, ns, setUp[1])
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.Contains(c, ipOf(readNetworkData(c, ns, "moved")), "198.51.100.", "the moved host has an address of its new rack")
			}, waitTimeout, pollInterval)
			assertSetUpOnce(t, family, ns, append(failed, "moved")...)
		})
	}
}

// createRack creates the pool of a rack, from start to end, and the
// Metal3PreprovisioningTemplate "rack-<rack>" drawing the hosts' address
// from it; it returns the rack's labels.
func createRack(t *testing.T, family ipamFamily, ns, rack, pool, start, end string) map[string]string {
	t.Helper()
	labels := map[string]string{"rack": rack}
	gateway := start[:len(start)-2] + "1"
	create(t,
		family.pool(ns, pool, start, end, gateway),
		fixtures.PreprovisioningTemplate(ns, "rack-"+rack, labels, family.networkData(pool)),
	)
	return labels
}

// rackHosts are paused hosts with these names and labels, boot MACs
// numbered from first.
func rackHosts(ns string, labels map[string]string, first int, names ...string) []client.Object {
	hosts := make([]client.Object, 0, len(names))
	for i, name := range names {
		hosts = append(hosts, fixtures.Host(ns, name, fmt.Sprintf("52:54:00:aa:cc:%02x", first+i+1), labels))
	}
	return hosts
}

// waitForExhaustion waits until capacity of the hosts are set up and the
// others' claims on the pool have failed, and returns both, sorted.
func waitForExhaustion(t *testing.T, family ipamFamily, ns, pool string, hosts []string, capacity int) ([]string, []string) {
	t.Helper()
	var setUp, failed []string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		setUp, failed = nil, nil
		for _, host := range hosts {
			claim := family.claim(c, ns, ipam.ClaimName(host, pool))
			if claim.refused {
				failed = append(failed, host)
				continue
			}
			if assert.NotEmpty(c, claim.address, "claim of %s", host) {
				readNetworkData(c, ns, host)
				setUp = append(setUp, host)
			}
		}
		require.Len(c, setUp, capacity, "hosts set up")
	}, waitTimeout, pollInterval)
	slices.Sort(setUp)
	slices.Sort(failed)
	return setUp, failed
}

func deleteHost(t *testing.T, ns, name string) {
	t.Helper()
	require.NoError(t, k8sClient.Delete(context.Background(), getHost(t, ns, name)))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &bmov1alpha1.BareMetalHost{})
		assert.True(c, apierrors.IsNotFound(err), "host %s is still there", name)
	}, waitTimeout, pollInterval)
}

// assertSetUpOnce waits until every host is set up, and checks that no
// address was given twice: in the hosts' Secrets and in the pools.
func assertSetUpOnce(t *testing.T, family ipamFamily, ns string, hosts ...string) {
	t.Helper()
	given := map[string]string{}
	for _, host := range hosts {
		ip := fmt.Sprint(ipOf(waitForNetworkData(t, ns, host)))
		assert.NotContains(t, given, ip, "%s has the address of %s", host, given[ip])
		given[ip] = host
	}
	claimed := map[string]string{}
	for name, ip := range family.addresses(t, ns) {
		assert.NotContains(t, claimed, ip, "IPAddresses %s and %s hold the same address", name, claimed[ip])
		claimed[ip] = name
	}
}
