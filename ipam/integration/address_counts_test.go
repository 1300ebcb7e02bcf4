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
	"testing"
	"time"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
	"github.com/capm3-preprov/capm3-preprov/ipam"
)

// The counts start from the cache's first list and follow creations and
// deletions, on a cache of one namespace (--namespace) as on the manager's.
func TestAddressCountsFollowTheCache(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "counts-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	createAddress := func(name, pool, ip string) *ipamv1.IPAddress {
		address := &ipamv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name},
			Spec: ipamv1.IPAddressSpec{
				Address: ipamv1.IPAddressStr(ip), Prefix: 24,
				Pool: corev1.ObjectReference{Name: pool}, Claim: corev1.ObjectReference{Name: name},
			},
		}
		require.NoError(t, k8sClient.Create(ctx, address))
		return address
	}
	first := createAddress("node-0-provisioning", "provisioning", "192.0.2.10")
	createAddress("node-1-provisioning", "provisioning", "192.0.2.11")
	createAddress("node-0-baremetal", "baremetal", "198.51.100.10")

	informers, err := cache.New(restConfig, cache.Options{Scheme: scheme.New(), DefaultNamespaces: map[string]cache.Config{ns.Name: {}}})
	require.NoError(t, err)
	counts, err := ipam.CountAddresses(ctx, informers)
	require.NoError(t, err)
	go func() { _ = informers.Start(ctx) }() // ends with the test's context
	provisioning := client.ObjectKey{Namespace: ns.Name, Name: "provisioning"}
	baremetal := client.ObjectKey{Namespace: ns.Name, Name: "baremetal"}
	// The first read waits for the cache's first list to be counted.
	assertCount(t, counts, provisioning, 2)
	assertCount(t, counts, baremetal, 1)

	createAddress("node-2-provisioning", "provisioning", "192.0.2.12")
	require.NoError(t, k8sClient.Delete(ctx, first))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := counts.PoolAddresses(ctx, provisioning)
		assert.NoError(c, err)
		assert.Equal(c, 2, got)
		addresses := &ipamv1.IPAddressList{}
		assert.NoError(c, informers.List(ctx, addresses, client.InNamespace(ns.Name)))
		assert.Len(c, addresses.Items, 3, "the cache has seen both changes")
	}, 30*time.Second, 100*time.Millisecond)
	assertCount(t, counts, baremetal, 1)
}

func assertCount(t *testing.T, counts *ipam.AddressCounts, pool client.ObjectKey, want int) {
	t.Helper()
	got, err := counts.PoolAddresses(context.Background(), pool)
	require.NoError(t, err)
	assert.Equal(t, want, got, "IPAddresses of pool %s", pool)
}
