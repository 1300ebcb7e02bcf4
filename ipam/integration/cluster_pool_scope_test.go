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

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/expectations"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// A GlobalInClusterIPPool is cluster-scoped: the host's claim on it lives in
// the host's namespace and names the pool by name only, and the pool a
// waiting claim is checked against is read without a namespace, never a
// namespaced pool of the same name in the host's namespace.
func TestClaimOnAClusterScopedPoolReadsThePoolWithoutANamespace(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "global-pool-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	host := fixtures.Host(ns.Name, "node-0", "52:54:00:aa:bb:11", nil)
	require.NoError(t, k8sClient.Create(ctx, host))
	// A namespaced pool of the same name, with free addresses: reading it
	// instead of the cluster-scoped one would hide that the latter is missing.
	sameName := fixtures.InClusterIPPool(ns.Name, "shared", "192.0.2.10-192.0.2.20", 24, "192.0.2.1")
	require.NoError(t, k8sClient.Create(ctx, sameName))
	sameName.Status.Addresses = &inclusterv1alpha2.InClusterIPPoolStatusIPAddresses{Total: 11, Free: 11}
	require.NoError(t, k8sClient.Status().Update(ctx, sameName))

	pool := networkdata.Pool{Name: "shared", APIGroup: networkdata.ClusterAPIIPAMGroup, Kind: inclusterv1alpha2.GlobalInClusterIPPoolKind}
	// The hosts waiting on a pool share a read of it for ClusterAPIRecheck:
	// the clock steps past it before each look that must see a change.
	clock := clocktesting.NewFakeClock(time.Now())
	claims := &ipam.Claims{Client: k8sClient, Clock: clock}
	var writes expectations.Writes
	ensure := func() ipam.PoolState {
		t.Helper()
		states, err := claims.EnsureClusterAPI(ctx, host, []networkdata.Pool{pool}, ipam.AddressUsers{}, &writes)
		require.NoError(t, err)
		require.Len(t, states, 1)
		return states[0]
	}

	state := ensure()
	assert.Contains(t, state.Waiting, "waiting for the IPAM provider")
	claim := &capipamv1.IPAddressClaim{}
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "node-0-shared"}, claim))
	assert.Equal(t, capipamv1.IPPoolReference{APIGroup: networkdata.ClusterAPIIPAMGroup, Kind: inclusterv1alpha2.GlobalInClusterIPPoolKind,
		Name: "shared"}, claim.Spec.PoolRef)

	clock.Step(ipam.ClusterAPIRecheck)
	state = ensure()
	assert.Contains(t, state.Failed, "does not exist in the cluster", "the missing cluster-scoped pool was not reported as missing")
	assert.NotContains(t, state.Failed, "namespace")

	global := &inclusterv1alpha2.GlobalInClusterIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "shared"},
		Spec:       inclusterv1alpha2.InClusterIPPoolSpec{Addresses: []string{"198.51.100.10-198.51.100.11"}, Prefix: 24},
	}
	require.NoError(t, k8sClient.Create(ctx, global))
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), global) })
	global.Status.Addresses = &inclusterv1alpha2.InClusterIPPoolStatusIPAddresses{Total: 2, Used: 2}
	require.NoError(t, k8sClient.Status().Update(ctx, global))
	clock.Step(ipam.ClusterAPIRecheck)
	state = ensure()
	assert.Contains(t, state.Failed, "has no free address", "the cluster-scoped pool's count of free addresses was not read")

	global.Status.Addresses = &inclusterv1alpha2.InClusterIPPoolStatusIPAddresses{Total: 2, Used: 1, Free: 1}
	require.NoError(t, k8sClient.Status().Update(ctx, global))
	clock.Step(ipam.ClusterAPIRecheck)
	state = ensure()
	assert.Empty(t, state.Failed)
	assert.Contains(t, state.Waiting, "waiting for the IPAM provider")
	assert.Equal(t, ipam.ClusterAPIRecheck, state.RetryAfter)
}

// The hosts waiting on a Cluster API pool share one read of it every
// ClusterAPIRecheck, and a pool that counts no free address is looked at
// again later and later (the claim's own update brings its host back when
// the address comes): a fleet waiting on such a pool polled it every 10 s
// per host.
func TestHostsWaitingOnAClusterAPIPoolShareItsReadsAndBackOff(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "waiting-pool-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	// No provider serves it here, and its status counts nothing.
	require.NoError(t, k8sClient.Create(ctx, fixtures.InClusterIPPool(ns.Name, "uncounted", "192.0.2.10-192.0.2.250", 24, "192.0.2.1")))
	pool := networkdata.Pool{Name: "uncounted", APIGroup: networkdata.ClusterAPIIPAMGroup, Kind: inclusterv1alpha2.InClusterIPPoolKind}
	clock := clocktesting.NewFakeClock(time.Now())
	reads := &readCounter{Reader: k8sClient, reads: map[string]int{}}
	claims := &ipam.Claims{Client: k8sClient, APIReader: reads, Clock: clock}
	var writes expectations.Writes
	const waiting = 20
	hosts := make([]*bmov1alpha1.BareMetalHost, waiting)
	for i := range hosts {
		hosts[i] = fixtures.Host(ns.Name, fmt.Sprintf("node-%02d", i), "", nil)
		require.NoError(t, k8sClient.Create(ctx, hosts[i]))
	}
	look := func() []time.Duration {
		t.Helper()
		var retries []time.Duration
		for _, host := range hosts {
			states, err := claims.EnsureClusterAPI(ctx, host, []networkdata.Pool{pool}, ipam.AddressUsers{}, &writes)
			require.NoError(t, err)
			require.Len(t, states, 1)
			require.Contains(t, states[0].Waiting, "waiting for the IPAM provider")
			retries = append(retries, states[0].RetryAfter)
		}
		return retries
	}
	look() // creates the claims
	reads.reads = map[string]int{}
	for _, retry := range look() {
		assert.Equal(t, ipam.ClusterAPIRecheck, retry, "a claim that has just waited")
	}
	assert.Equal(t, 1, reads.reads["uncounted"], "API reads of the pool for %d hosts waiting on it", waiting)

	clock.Step(time.Minute)
	for _, retry := range look() {
		assert.InDelta(t, time.Minute, retry, float64(5*time.Second), "a claim that has waited a minute")
	}
	clock.Step(time.Hour)
	for _, retry := range look() {
		assert.Equal(t, ipam.ClusterAPIRecheckLimit, retry, "a claim that has waited an hour")
	}
	assert.Equal(t, 3, reads.reads["uncounted"], "API reads of the pool, one per look of the fleet")
}

// A host's release of its unused Cluster API claims reads its own claims,
// through the cache's index, not every claim of ours in its namespace: it
// runs on every reconcile of a Ready host.
func TestAHostsReleaseReadsOnlyItsOwnAddressClaims(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "own-address-claims-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	pool := networkdata.Pool{Name: "provisioning", APIGroup: networkdata.ClusterAPIIPAMGroup, Kind: inclusterv1alpha2.InClusterIPPoolKind}
	const hosts = 30
	var writes expectations.Writes
	direct := &ipam.Claims{Client: k8sClient}
	var first *bmov1alpha1.BareMetalHost
	for i := range hosts {
		host := fixtures.Host(ns.Name, fmt.Sprintf("node-%02d", i), "", nil)
		require.NoError(t, k8sClient.Create(ctx, host))
		_, err := direct.EnsureClusterAPI(ctx, host, []networkdata.Pool{pool}, ipam.AddressUsers{}, &writes)
		require.NoError(t, err)
		if first == nil {
			first = host
		}
	}
	cached := indexedCache(ctx, t)
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		claims := &capipamv1.IPAddressClaimList{}
		assert.NoError(collect, cached.List(ctx, claims, client.InNamespace(ns.Name)))
		assert.Len(collect, claims.Items, hosts)
	}, 30*time.Second, 100*time.Millisecond)

	counted := &addressClaimReadCounter{Client: cached}
	claims := &ipam.Claims{Client: counted, APIReader: k8sClient, Indexed: true}
	held, err := claims.ReleaseUnusedClusterAPI(ctx, first, []networkdata.Pool{pool}, ipam.AddressUsers{})
	require.NoError(t, err)
	assert.Empty(t, held)
	assert.Equal(t, 1, counted.read, "IPAddressClaims read for a host with one claim, in a namespace of %d", hosts)
}

// addressClaimReadCounter counts the IPAddressClaims its lists return.
type addressClaimReadCounter struct {
	client.Client
	read int
}

func (c *addressClaimReadCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := c.Client.List(ctx, list, opts...)
	if claims, ok := list.(*capipamv1.IPAddressClaimList); ok {
		c.read += len(claims.Items)
	}
	return err
}
