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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// An edit of a pool wakes the hosts that wait on it, not every host we set
// up in its namespace: a host whose claim has its address reads nothing
// else of the pool. Its creation still wakes them all.
func TestAPoolEditWakesOnlyTheHostsWaitingOnIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t)
	racked := map[string]string{"rack": "r1"}
	pool := fixtures.Pool(ns, "provisioning", "192.168.10.10", "192.168.10.20", "192.168.10.1")
	create(t, pool, fixtures.PreprovisioningTemplate(ns, "rack-r1", racked, fixtures.PoolNetworkData(pool.Name)),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", racked))
	waitForNetworkData(t, ns, "node-0")
	// IPAM serves no claim on the pool until its Cluster exists: node-1 waits.
	original := pool.DeepCopy()
	pool.Spec.ClusterName = ptr.To("not-yet")
	require.NoError(t, k8sClient.Patch(ctx, pool, client.MergeFrom(original)))
	create(t, fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", racked))

	cached := indexedCache(ctx, t, ns)
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		claim := &ipamv1.IPClaim{}
		assert.NoError(collect, cached.Get(ctx, client.ObjectKey{Namespace: ns, Name: ipam.ClaimName("node-1", pool.Name)}, claim))
		assert.Nil(collect, claim.Status.Address)
		host := getHost(collect, ns, "node-0")
		assert.NoError(collect, cached.Get(ctx, client.ObjectKeyFromObject(host), host))
		assert.NotContains(collect, host.Annotations, "baremetalhost.metal3.io/paused")
	}, waitTimeout, pollInterval)
	mapper := &poolMapper{client: cached, claims: &ipam.Claims{Client: cached, APIReader: k8sClient, Indexed: true}}
	request := func(host string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: host}}
	}
	assert.ElementsMatch(t, []reconcile.Request{request("node-1")}, mapper.forPoolEdit(ctx, pool), "an edit of the pool")
	assert.ElementsMatch(t, []reconcile.Request{request("node-0"), request("node-1")}, mapper.forPool(ctx, pool),
		"the pool's creation or deletion")
}

// indexedCache is a client reading a cache of the namespace made as the
// manager's, with our indexes.
func indexedCache(ctx context.Context, t *testing.T, namespace string) client.Client {
	t.Helper()
	options := CacheOptions(namespace, "")
	options.Scheme = testEnv.Scheme
	informers, err := cache.New(testEnv.Config, options)
	require.NoError(t, err)
	require.NoError(t, index.Register(ctx, informers))
	go func() { _ = informers.Start(ctx) }() // ends with the test's context
	require.True(t, informers.WaitForCacheSync(ctx))
	cached, err := client.New(testEnv.Config, client.Options{Scheme: testEnv.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	require.NoError(t, err)
	return cached
}
