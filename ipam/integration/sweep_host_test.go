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
	"maps"
	"slices"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A deleted host's sweep looks at that host's objects only, in the cache,
// and leaves its claims to the garbage collector: it asks the API nothing
// while the claims wait for it, and then only about the host's own
// left-behind address. (The sweep it replaces went over the whole namespace
// on every event of every deleted host, asking the API about each claim
// waiting for the garbage collector: quadratic in a fleet's deletion.)
func TestSweepOfADeletedHostReadsOnlyItsOwnObjects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sweep-host-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	cached := indexedCache(ctx, t)

	pool := fixtures.Pool(ns.Name, "pool", "192.0.2.10", "192.0.2.20", "192.0.2.1")
	require.NoError(t, k8sClient.Create(ctx, pool))
	for i := range 5 {
		host := fixtures.Host(ns.Name, fmt.Sprintf("node-%d", i), fmt.Sprintf("52:54:00:aa:bb:%02x", i+1), nil)
		require.NoError(t, k8sClient.Create(ctx, host))
		claimName := ipam.ClaimName(host.Name, pool.Name)
		createManagedClaims(t, ns.Name, map[string][]metav1.OwnerReference{claimName: {hostRef(host.Name, host.UID)}})
		leftBehindAddress(t, ns.Name, claimName, fmt.Sprintf("192.0.2.%d", 10+i))
	}
	// Every host but node-4 is deleted; node-0's claim is already gone
	// (the garbage collector was there), and IPAM left its address behind.
	for _, name := range []string{"node-0", "node-1", "node-2", "node-3"} {
		require.NoError(t, k8sClient.Delete(ctx, fixtures.Host(ns.Name, name, "", nil)))
	}
	require.NoError(t, k8sClient.Delete(ctx, &ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "node-0-pool"}}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.True(c, apierrors.IsNotFound(cached.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "node-0-pool"}, &ipamv1.IPClaim{})))
		for _, name := range []string{"node-0", "node-1", "node-2", "node-3"} {
			assert.True(c, apierrors.IsNotFound(cached.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name}, &bmov1alpha1.BareMetalHost{})))
		}
	}, 10*time.Second, 50*time.Millisecond, "the cache shows the deletions")

	apiReader := &readCounter{Reader: k8sClient, reads: map[string]int{}}
	sweeper := &ipam.Sweeper{Client: cached, APIReader: apiReader}
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		require.NoError(t, sweeper.SweepHost(ctx, types.NamespacedName{Namespace: ns.Name, Name: name}))
	}
	assert.Empty(t, apiReader.reads, "claims waiting for the garbage collector cost no API read")
	for _, name := range []string{"node-1-pool", "node-2-pool", "node-3-pool", "node-4-pool"} {
		assert.True(t, claimExists(t, ns.Name, name), "the sweep of a host deleted the claim %s: that is the garbage collector's", name)
	}

	require.NoError(t, sweeper.SweepHost(ctx, types.NamespacedName{Namespace: ns.Name, Name: "node-0"}))
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "pool-192-0-2-10"}, &ipamv1.IPAddress{})
	assert.True(t, apierrors.IsNotFound(err), "the address IPAM left behind node-0's claim is still there: %v", err)
	assert.Equal(t, []string{"node-0", "node-0-pool", "pool-192-0-2-10"}, slices.Sorted(maps.Keys(apiReader.reads)),
		"the API is read to confirm the release of node-0's address, and about nothing else")
	for i, name := range []string{"pool-192-0-2-11", "pool-192-0-2-12", "pool-192-0-2-13", "pool-192-0-2-14"} {
		assert.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name}, &ipamv1.IPAddress{}),
			"the address of node-%d's claim was released", i+1)
	}
}

// indexedCache is a client that reads, as the manager's does, from a cache
// with our field indexes, and writes to the API server.
func indexedCache(ctx context.Context, t *testing.T) client.Client {
	t.Helper()
	informers, err := cache.New(testEnv.Config, cache.Options{Scheme: framework.Scheme()})
	require.NoError(t, err)
	require.NoError(t, index.Register(ctx, informers))
	for _, obj := range []client.Object{&ipamv1.IPPool{}, &ipamv1.IPClaim{}, &ipamv1.IPAddress{}, &bmov1alpha1.BareMetalHost{}} {
		_, informerErr := informers.GetInformer(ctx, obj)
		require.NoError(t, informerErr)
	}
	go func() { _ = informers.Start(ctx) }()
	require.True(t, informers.WaitForCacheSync(ctx))
	cached, err := client.New(testEnv.Config, client.Options{Scheme: framework.Scheme(), Cache: &client.CacheOptions{Reader: informers}})
	require.NoError(t, err)
	return cached
}
