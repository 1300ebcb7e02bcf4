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
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// More orderings in which a host must not be stranded on an exhausted pool:
// Metal3 IPAM never looks at a failed claim again, so each ordering must
// wake the host when the pool has room.

// A host an adopting template takes over (it is not paused for us, and not
// labelled ours until it is set up) is woken when its pool grows.
func TestExhaustedPoolAdoptedHostWokenWhenThePoolGrows(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t, fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.10", "192.0.2.1"), adoptingTemplate(ns, racked, "tiny"))
	create(t, existingHost(ns, "node-0", 1, racked))
	waitForNetworkData(t, ns, "node-0")
	create(t, existingHost(ns, "node-1", 2, racked))
	waitForFailedClaim(t, ns, ipam.ClaimName("node-1", "tiny"))

	growPool(t, ns, "tiny", "192.0.2.11")
	assert.Equal(t, "192.0.2.11", ipOf(waitForNetworkData(t, ns, "node-1")))
}

// A host an adopting template takes over is woken when its pool is created.
func TestAdoptedHostWokenWhenItsPoolIsCreated(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t, adoptingTemplate(ns, racked, "later"), existingHost(ns, "node-0", 1, racked))
	waitForEvent(t, ns, "node-0", baremetal.ReasonIPClaimFailed)

	create(t, fixtures.Pool(ns, "later", "192.0.2.10", "192.0.2.20", "192.0.2.1"))
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-0")))
}

// Metal3 IPAM counts the Cluster API IPAddresses whose poolRef names one of
// its pools as taken (getIndexes compares the name only): the count recorded
// on a failed claim holds them, and the release of one wakes the host.
func TestExhaustedPoolPartlyHeldByClusterAPIAddresses(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	held := clusterAPIAddress(ns, "held-by-capi", "tiny", "192.0.2.10")
	create(t, held,
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.11", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("tiny")),
	)
	create(t, rackHosts(ns, racked, 0, "node-0")...)
	assert.Equal(t, "192.0.2.11", ipOf(waitForNetworkData(t, ns, "node-0")), "IPAM skips the Cluster API address")

	create(t, rackHosts(ns, racked, 1, "node-1")...)
	var recorded string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		claim := claimOf(c, ns, ipam.ClaimName("node-1", "tiny"))
		recorded = claim.Annotations[preprovv1.PoolAddressesAnnotation]
		assert.NotEmpty(c, recorded, "the failure is recorded")
	}, waitTimeout, pollInterval)
	assert.Equal(t, "2", recorded, "the Cluster API address counts as one of the pool's")

	require.NoError(t, k8sClient.Delete(context.Background(), held))
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-1")))
}

// IPAM drops the events of a paused pool and looks at it again when the
// pause ends, but never at a failed claim: the end of the pause wakes the
// host, and its claim, made again, gets the address the pool grew by.
func TestExhaustedPoolPausedGrownThenUnpaused(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.10", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("tiny")),
	)
	create(t, rackHosts(ns, racked, 0, "node-0")...)
	waitForNetworkData(t, ns, "node-0")
	create(t, rackHosts(ns, racked, 1, "node-1")...)
	waitForFailedClaim(t, ns, ipam.ClaimName("node-1", "tiny"))

	setPoolPaused(t, ns, "tiny", true)
	growPool(t, ns, "tiny", "192.0.2.11")
	setPoolPaused(t, ns, "tiny", false)
	assert.Equal(t, "192.0.2.11", ipOf(waitForNetworkData(t, ns, "node-1")))
}

// A template paused with Cluster API's annotation is edited: the event
// filter drops the edit, and the end of the pause, which changes no
// generation, brings it to the hosts: the one waiting on the exhausted pool
// the template named is set up from the pool it names now.
func TestTemplateEditedWhilePaused(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.10", "192.0.2.1"),
		fixtures.Pool(ns, "roomy", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("tiny")),
	)
	create(t, rackHosts(ns, racked, 0, "node-0")...)
	waitForNetworkData(t, ns, "node-0")
	create(t, rackHosts(ns, racked, 1, "node-1")...)
	waitForFailedClaim(t, ns, ipam.ClaimName("node-1", "tiny"))

	patchTemplate(t, ns, "rack-r1", func(template *preprovv1.Metal3PreprovisioningTemplate) {
		template.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
	})
	patchTemplate(t, ns, "rack-r1", func(template *preprovv1.Metal3PreprovisioningTemplate) {
		template.Spec.NetworkData = fixtures.PoolNetworkData("roomy")
	})
	patchTemplate(t, ns, "rack-r1", func(template *preprovv1.Metal3PreprovisioningTemplate) {
		delete(template.Annotations, clusterv1.PausedAnnotation)
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Contains(c, ipOf(readNetworkData(c, ns, "node-1")), "198.51.100.", "node-1 has an address of the edited template's pool")
		assert.Contains(c, ipOf(readNetworkData(c, ns, "node-0")), "198.51.100.", "node-0 is rendered from the edited template")
	}, waitTimeout, pollInterval)
}

// One freed address re-makes one failed claim, the oldest: the other hosts
// waiting on the pool keep their failed claims, not made again in a herd.
func TestExhaustedPoolFreedAddressesRetryTheOldestClaimsOnly(t *testing.T) {
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	create(t,
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.12", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("tiny")),
	)
	holders := []string{"holder-0", "holder-1", "holder-2"}
	create(t, rackHosts(ns, racked, 0, holders...)...)
	for _, holder := range holders {
		waitForNetworkData(t, ns, holder)
	}
	// Registered one after the other: their claims' ages follow their names.
	failedUIDs := map[string]types.UID{}
	var waiting []string
	for i := range 6 {
		host := fmt.Sprintf("waiting-%d", i)
		create(t, rackHosts(ns, racked, 10+i, host)...)
		failedUIDs[host] = waitForFailedClaim(t, ns, ipam.ClaimName(host, "tiny")).UID
		waiting = append(waiting, host)
	}

	deleteHost(t, ns, "holder-0")
	deleteHost(t, ns, "holder-2")
	assertSetUpOnce(t, metal3IPAM, ns, "holder-1", "waiting-0", "waiting-1")
	for _, host := range waiting[2:] {
		claim := claimOf(t, ns, ipam.ClaimName(host, "tiny"))
		assert.Equal(t, failedUIDs[host], claim.UID, "the claim of %s was made again", host)
		assert.NotNil(t, claim.Status.ErrorMessage, "the claim of %s still waits", host)
	}
}

// adoptingTemplate draws the hosts' address from pool and adopts hosts
// that are not paused.
func adoptingTemplate(ns string, selector map[string]string, pool string) *preprovv1.Metal3PreprovisioningTemplate {
	template := fixtures.PreprovisioningTemplate(ns, "rack-r1", selector, fixtures.PoolNetworkData(pool))
	template.Spec.AdoptExistingHosts = true
	return template
}

// existingHost is a host registered before the controller: not paused.
func existingHost(ns, name string, mac int, labels map[string]string) client.Object {
	host := fixtures.Host(ns, name, fmt.Sprintf("52:54:00:aa:dd:%02x", mac), labels)
	delete(host.Annotations, preprovv1.PausedAnnotation)
	return host
}

// clusterAPIAddress is a Cluster API IPAddress of a pool named pool, as the
// in-cluster provider would make for a claim of another cluster.
func clusterAPIAddress(ns, name, pool, address string) *capipamv1.IPAddress {
	ip := &capipamv1.IPAddress{}
	ip.Namespace, ip.Name = ns, name
	ip.Spec = capipamv1.IPAddressSpec{
		ClaimRef: capipamv1.IPAddressClaimReference{Name: name},
		PoolRef:  capipamv1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: pool},
		Address:  address,
		Prefix:   ptr.To[int32](24),
	}
	return ip
}

func waitForFailedClaim(t *testing.T, ns, name string) *ipamv1.IPClaim {
	t.Helper()
	var claim *ipamv1.IPClaim
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		claim = claimOf(c, ns, name)
		assert.NotNil(c, claim.Status.ErrorMessage, "claim %s failed", name)
	}, waitTimeout, pollInterval)
	return claim
}

// growPool moves the end of the pool's one range to end.
func growPool(t *testing.T, ns, name, end string) {
	t.Helper()
	patchPool(t, ns, name, func(pool *ipamv1.IPPool) { pool.Spec.Pools[0].End = ptr.To(ipamv1.IPAddressStr(end)) })
}

func setPoolPaused(t *testing.T, ns, name string, paused bool) {
	t.Helper()
	patchPool(t, ns, name, func(pool *ipamv1.IPPool) {
		if paused {
			pool.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
		} else {
			delete(pool.Annotations, clusterv1.PausedAnnotation)
		}
	})
}

func patchPool(t *testing.T, ns, name string, change func(*ipamv1.IPPool)) {
	t.Helper()
	pool := &ipamv1.IPPool{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pool))
	original := pool.DeepCopy()
	change(pool)
	require.NoError(t, k8sClient.Patch(context.Background(), pool, client.MergeFrom(original)))
}

func patchTemplate(t *testing.T, ns, name string, change func(*preprovv1.Metal3PreprovisioningTemplate)) {
	t.Helper()
	template := getTemplate(t, ns, name)
	original := template.DeepCopy()
	change(template)
	require.NoError(t, k8sClient.Patch(context.Background(), template, client.MergeFrom(original)))
}

// A host provisioned while its claim on its template's new pool waits for
// an address keeps its Secret (provisionedHostPolicy Keep) and makes no
// claim on that pool: its failed claim goes, and with it its turn, so the
// address the pool frees next goes to the host waiting behind it. Found by
// the soak (seed 1, step 80): the provisioned host took the turn, dropped
// its claim, and the hosts behind it were never woken.
func TestAProvisionedHostGivesUpItsFailedClaimAndItsTurn(t *testing.T) {
	ns := newNamespace(t)
	racked, held := map[string]string{"rack": "r1"}, map[string]string{"rack": "holder"}
	create(t,
		fixtures.Pool(ns, "roomy", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.10", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData("roomy")),
		fixtures.PreprovisioningTemplate(ns, "holder", held, fixtures.PoolNetworkData("tiny")),
	)
	create(t, rackHosts(ns, held, 0, "holder")...)
	create(t, rackHosts(ns, racked, 1, "node-a")...)
	waitForNetworkData(t, ns, "holder")
	waitForNetworkData(t, ns, "node-a")

	patchTemplate(t, ns, "rack-r1", func(template *preprovv1.Metal3PreprovisioningTemplate) {
		template.Spec.NetworkData = fixtures.PoolNetworkData("tiny")
	})
	waitForFailedClaim(t, ns, ipam.ClaimName("node-a", "tiny"))
	create(t, rackHosts(ns, racked, 2, "node-b")...)
	waitForFailedClaim(t, ns, ipam.ClaimName("node-b", "tiny"))

	setMachineState(t, ns, "node-a", machineState{state: bmov1alpha1.StateProvisioned, poweredOn: true, provision: time.Now()})
	waitForEvent(t, ns, "node-a", baremetal.ReasonNetworkDataDrift)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ipam.ClaimName("node-a", "tiny")}, &ipamv1.IPClaim{})
		assert.True(c, apierrors.IsNotFound(err), "the provisioned host's failed claim is deleted: %v", err)
	}, waitTimeout, pollInterval)

	deleteHost(t, ns, "holder")
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-b")))
}

// A host whose template moves on while its claim on the template's pool
// waits for an address gives that failed claim back at once, though the
// host waits on its new pool: the address the old pool frees next goes to
// the host waiting behind it there. Found by the soak (seed 1, step 764).
func TestAHostMovedOnGivesUpItsFailedClaimAndItsTurn(t *testing.T) {
	ns := newNamespace(t)
	rackA, rackB := map[string]string{"rack": "a"}, map[string]string{"rack": "b"}
	heldOld, heldNew := map[string]string{"rack": "holder-old"}, map[string]string{"rack": "holder-new"}
	create(t,
		fixtures.Pool(ns, "roomy", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
		fixtures.Pool(ns, "old", "192.0.2.10", "192.0.2.10", "192.0.2.1"),
		fixtures.Pool(ns, "new", "203.0.113.10", "203.0.113.10", "203.0.113.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-a", rackA, fixtures.PoolNetworkData("roomy")),
		fixtures.PreprovisioningTemplate(ns, "rack-b", rackB, fixtures.PoolNetworkData("old")),
		fixtures.PreprovisioningTemplate(ns, "holder-old", heldOld, fixtures.PoolNetworkData("old")),
		fixtures.PreprovisioningTemplate(ns, "holder-new", heldNew, fixtures.PoolNetworkData("new")),
	)
	create(t, rackHosts(ns, heldOld, 0, "holder-old")...)
	create(t, rackHosts(ns, heldNew, 1, "holder-new")...)
	create(t, rackHosts(ns, rackA, 2, "node-a")...)
	for _, host := range []string{"holder-old", "holder-new", "node-a"} {
		waitForNetworkData(t, ns, host)
	}

	patchTemplate(t, ns, "rack-a", func(template *preprovv1.Metal3PreprovisioningTemplate) {
		template.Spec.NetworkData = fixtures.PoolNetworkData("old")
	})
	waitForFailedClaim(t, ns, ipam.ClaimName("node-a", "old"))
	create(t, rackHosts(ns, rackB, 3, "node-b")...)
	waitForFailedClaim(t, ns, ipam.ClaimName("node-b", "old"))

	patchTemplate(t, ns, "rack-a", func(template *preprovv1.Metal3PreprovisioningTemplate) {
		template.Spec.NetworkData = fixtures.PoolNetworkData("new")
	})
	waitForFailedClaim(t, ns, ipam.ClaimName("node-a", "new"))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ipam.ClaimName("node-a", "old")}, &ipamv1.IPClaim{})
		assert.True(c, apierrors.IsNotFound(err), "the failed claim on the pool the host left is deleted: %v", err)
	}, waitTimeout, pollInterval)

	deleteHost(t, ns, "holder-old")
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-b")))
}

// A host no template selects any more keeps its claims, but not a failed
// one: it holds no address, and its retry turn would never be taken, so the
// address the pool frees next goes to the host waiting behind it. Found by
// the soak (seed 2, step 652: a provisioned host left orphaned).
func TestAnOrphanedHostGivesUpItsFailedClaimAndItsTurn(t *testing.T) {
	ns := newNamespace(t)
	rackA, rackB, held := map[string]string{"rack": "a"}, map[string]string{"rack": "b"}, map[string]string{"rack": "holder"}
	create(t,
		fixtures.Pool(ns, "roomy", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
		fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.10", "192.0.2.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-a", rackA, fixtures.PoolNetworkData("roomy")),
		fixtures.PreprovisioningTemplate(ns, "rack-b", rackB, fixtures.PoolNetworkData("tiny")),
		fixtures.PreprovisioningTemplate(ns, "holder", held, fixtures.PoolNetworkData("tiny")),
	)
	create(t, rackHosts(ns, held, 0, "holder")...)
	create(t, rackHosts(ns, rackA, 1, "node-a")...)
	waitForNetworkData(t, ns, "holder")
	waitForNetworkData(t, ns, "node-a")
	patchTemplate(t, ns, "rack-a", func(template *preprovv1.Metal3PreprovisioningTemplate) {
		template.Spec.NetworkData = fixtures.PoolNetworkData("tiny")
	})
	waitForFailedClaim(t, ns, ipam.ClaimName("node-a", "tiny"))
	create(t, rackHosts(ns, rackB, 2, "node-b")...)
	waitForFailedClaim(t, ns, ipam.ClaimName("node-b", "tiny"))

	require.NoError(t, k8sClient.Delete(context.Background(), getTemplate(t, ns, "rack-a")))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ipam.ClaimName("node-a", "tiny")}, &ipamv1.IPClaim{})
		assert.True(c, apierrors.IsNotFound(err), "the orphaned host's failed claim is deleted: %v", err)
	}, waitTimeout, pollInterval)
	claimOf(t, ns, ipam.ClaimName("node-a", "roomy"))

	deleteHost(t, ns, "holder")
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-b")))
}
