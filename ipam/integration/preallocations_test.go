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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/controllers"
	"github.com/capm3-preprov/capm3-preprov/internal/expectations"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/scheme"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// entriesAtScale is past the ~6,000 keys per pool at which the list of our
// keys in a pool annotation reached the API's 256 KiB limit.
const entriesAtScale = 10000

// A pool holding 10,000 of our entries still takes the next hosts, with
// one pool write for the hosts that come within a window, through the
// manager's own cache; the sweep still removes the entries of deleted hosts,
// in one write, and never an entry someone else wrote.
func TestPreallocationsScaleToTenThousandHostsPerPool(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "preallocations-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	pool := fixtures.Pool(ns.Name, "provisioning", "10.0.0.10", "10.0.255.250", "10.0.0.1")
	pool.Spec.Prefix = 16
	pool.Spec.PreAllocations = map[string]ipamv1.IPAddressStr{"users-own-provisioning": "10.0.255.1"}
	require.NoError(t, k8sClient.Create(ctx, pool))
	recordAsOurs(t, pool, scaleEntries())
	alive := fixtures.Host(ns.Name, hostAtScale(0), "52:54:00:aa:bb:01", nil)
	require.NoError(t, k8sClient.Create(ctx, alive))

	c, patches := cachedPoolPatchCounter(ctx, t, ns.Name)
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		cached := &ipamv1.IPPool{}
		assert.NoError(collect, c.Get(ctx, client.ObjectKeyFromObject(pool), cached))
		assert.Len(collect, cached.Spec.PreAllocations, entriesAtScale+1)
	}, 30*time.Second, 100*time.Millisecond)

	// The next hosts come together.
	const next = 50
	states := make([]ipam.PoolState, next)
	for i := range next {
		states[i] = standingClaim(ctx, t, c, pool, fmt.Sprintf("next-%02d", i), fmt.Sprintf("10.0.250.%d", i+1))
	}
	preallocations := &ipam.Preallocations{Client: c}
	go func() { _ = preallocations.Start(ctx) }()
	start := time.Now()
	for i := range next {
		host := fixtures.Host(ns.Name, fmt.Sprintf("next-%02d", i), "", nil)
		full, err := preallocations.Ensure(ctx, host, states[i:i+1])
		require.NoError(t, err, "host next-%02d", i)
		require.Empty(t, full)
	}
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		written := &ipamv1.IPPool{}
		assert.NoError(collect, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), written))
		assert.Len(collect, written.Spec.PreAllocations, entriesAtScale+1+next)
	}, 30*time.Second, 50*time.Millisecond)
	t.Logf("%d hosts recorded at once in a pool of %d entries in %s", next, entriesAtScale, time.Since(start).Round(time.Millisecond))
	recorded := patches.Load()
	t.Logf("%d pool writes for %d hosts: %.2f per host", recorded, next, float64(recorded)/next)
	// The hosts came within one window: one write records them all.
	assert.Equal(t, int64(1), recorded, "pool writes for %d hosts recording at once", next)
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool))
	assert.Len(t, pool.Spec.PreAllocations, entriesAtScale+1+next)
	assert.Equal(t, ipamv1.IPAddressStr("10.0.250.50"), pool.Spec.PreAllocations["next-49-provisioning"])
	assert.NotContains(t, pool.Annotations, preprovv1.PreallocatedForAnnotation, "a list of our keys grows with the pool")
	t.Logf("IPPool with %d entries: %d bytes of spec.preAllocations, %d bytes of our managed fields record",
		len(pool.Spec.PreAllocations), jsonSize(t, pool.Spec.PreAllocations), ourRecordSize(pool))

	// All hosts but "alive" are gone (the next ones were never created).
	start = time.Now()
	require.NoError(t, (&ipam.Sweeper{Client: c, APIReader: k8sClient}).Sweep(ctx, ns.Name))
	t.Logf("the sweep of %d entries took %s", entriesAtScale+next, time.Since(start).Round(time.Millisecond))
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool))
	assert.Equal(t, map[string]ipamv1.IPAddressStr{
		"users-own-provisioning":              "10.0.255.1",
		ipam.ClaimName(alive.Name, pool.Name): ipAtScale(0),
	}, pool.Spec.PreAllocations)
	assert.Equal(t, recorded+1, patches.Load(), "the sweep removes all entries of deleted hosts in one write")
}

// Hosts set up one after another, at the client's pace, share their pool's
// writes: a host only queues its entries, and a pool is written at most
// once per window with all that came meanwhile. Each host here comes alone:
// when each host wrote its own entries, each wrote both pools.
func TestHostsSetUpOneAfterAnotherShareTheirPoolWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "preallocations-paced-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	pools := []*ipamv1.IPPool{
		fixtures.Pool(ns.Name, "provisioning", "10.0.0.10", "10.0.0.250", "10.0.0.1"),
		fixtures.Pool(ns.Name, "storage", "10.1.0.10", "10.1.0.250", "10.1.0.1"),
	}
	for _, pool := range pools {
		require.NoError(t, k8sClient.Create(ctx, pool))
	}
	c, patches := cachedPoolPatchCounter(ctx, t, ns.Name)
	const hosts, pace = 20, 100 * time.Millisecond
	states := make([][]ipam.PoolState, hosts)
	for i := range hosts {
		for j, pool := range pools {
			states[i] = append(states[i], standingClaim(ctx, t, c, pool, fmt.Sprintf("paced-%02d", i), fmt.Sprintf("10.%d.0.%d", j, 10+i)))
		}
	}
	preallocations := &ipam.Preallocations{Client: c}
	go func() { _ = preallocations.Start(ctx) }()
	start := time.Now()
	for i := range hosts {
		time.Sleep(pace)
		_, err := preallocations.Ensure(ctx, fixtures.Host(ns.Name, fmt.Sprintf("paced-%02d", i), "", nil), states[i])
		require.NoError(t, err, "host paced-%02d", i)
	}
	for j, pool := range pools {
		require.EventuallyWithT(t, func(collect *assert.CollectT) {
			assert.NoError(collect, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool))
			assert.Len(collect, pool.Spec.PreAllocations, hosts, "every host's entry in %s", pool.Name)
		}, 30*time.Second, 50*time.Millisecond)
		assert.Equal(t, ipamv1.IPAddressStr(fmt.Sprintf("10.%d.0.%d", j, 10+hosts-1)),
			pool.Spec.PreAllocations[ipam.ClaimName(fmt.Sprintf("paced-%02d", hosts-1), pool.Name)])
	}
	elapsed := time.Since(start)
	written := patches.Load()
	t.Logf("%d pool writes for %d hosts of two pools coming every %s, in %s", written, hosts, pace, elapsed.Round(time.Millisecond))
	// Per pool: one write per window at most, the last one included.
	windows := int64(elapsed/ipam.PoolEntryWindow) + 1
	assert.LessOrEqual(t, written, int64(len(pools))*windows, "pool writes for %d hosts in %s", hosts, elapsed.Round(time.Millisecond))
}

// An address whose claim is gone by the pool's write is not recorded: its
// host was deleted, or its claim made again, and IPAM may have given the
// address to another claim. The standing claim's address is.
func TestAnAddressIsNotRecordedOnceItsClaimIsGone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "preallocations-gone-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	pool := fixtures.Pool(ns.Name, "provisioning", "10.0.0.10", "10.0.0.250", "10.0.0.1")
	require.NoError(t, k8sClient.Create(ctx, pool))
	c, patches := cachedPoolPatchCounter(ctx, t, ns.Name)
	preallocations := &ipam.Preallocations{Client: c}
	var states []ipam.PoolState
	hosts := []string{"deleted", "remade", "standing"}
	for i, name := range hosts {
		states = append(states, standingClaim(ctx, t, c, pool, name, fmt.Sprintf("10.0.0.%d", 10+i)))
	}
	for i, state := range states {
		_, err := preallocations.Ensure(ctx, fixtures.Host(ns.Name, hosts[i], "", nil), []ipam.PoolState{state})
		require.NoError(t, err)
	}
	// Before the window ends, one claim goes and one is made again.
	require.NoError(t, k8sClient.Delete(ctx, &ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: states[0].Claim}}))
	require.NoError(t, k8sClient.Delete(ctx, &ipamv1.IPClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: states[1].Claim}}))
	standingClaim(ctx, t, c, pool, hosts[1], "10.0.0.20")
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		assert.True(collect, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: states[0].Claim}, &ipamv1.IPClaim{})))
	}, 30*time.Second, 20*time.Millisecond)
	go func() { _ = preallocations.Start(ctx) }()

	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		assert.NoError(collect, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool))
		assert.Equal(collect, map[string]ipamv1.IPAddressStr{states[2].Claim: "10.0.0.12"}, pool.Spec.PreAllocations)
	}, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, int64(1), patches.Load())
}

// standingClaim creates the host's IPClaim on the pool holding ip, as IPAM
// leaves it, and returns the claim's state as the host's reconcile reads it
// once the cache behind c shows the claim.
func standingClaim(ctx context.Context, t *testing.T, c client.Client, pool *ipamv1.IPPool, host, ip string) ipam.PoolState {
	t.Helper()
	claim := &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: ipam.ClaimName(host, pool.Name)},
		Spec:       ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: pool.Name}},
	}
	require.NoError(t, k8sClient.Create(ctx, claim))
	claim.Status.Address = &corev1.ObjectReference{Name: pool.Spec.NamePrefix + "-" + strings.ReplaceAll(ip, ".", "-")}
	require.NoError(t, k8sClient.Status().Update(ctx, claim))
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		cached := &ipamv1.IPClaim{}
		assert.NoError(collect, c.Get(ctx, client.ObjectKeyFromObject(claim), cached))
		assert.Equal(collect, claim.UID, cached.UID)
		assert.NotNil(collect, cached.Status.Address)
	}, 30*time.Second, 20*time.Millisecond)
	return ipam.PoolState{Pool: pool.Name, Claim: claim.Name, Address: &networkdata.Address{IP: ip, Prefix: pool.Spec.Prefix},
		ClaimUID: claim.UID}
}

// recordAsOurs writes entries as the backstop does, with its field
// manager, in one patch (the test's stand-in for hosts recorded over time).
func recordAsOurs(t *testing.T, pool *ipamv1.IPPool, entries map[string]ipamv1.IPAddressStr) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"preAllocations": entries}})
	require.NoError(t, err)
	require.NoError(t, k8sClient.Patch(context.Background(), pool, client.RawPatch(types.MergePatchType, patch),
		client.FieldOwner(preprovv1.PreallocationsFieldManager)))
}

func scaleEntries() map[string]ipamv1.IPAddressStr {
	entries := make(map[string]ipamv1.IPAddressStr, entriesAtScale)
	for i := range entriesAtScale {
		entries[ipam.ClaimName(hostAtScale(i), "provisioning")] = ipAtScale(i)
	}
	return entries
}

// hostAtScale names hosts as racks of 100 are named, short enough for
// 10,000 entries of them to fit a pool (ipam.PoolSizeBudget).
func hostAtScale(i int) string { return fmt.Sprintf("r%03d-n%02d", i/100, i%100) }

func ipAtScale(i int) ipamv1.IPAddressStr {
	return ipamv1.IPAddressStr(fmt.Sprintf("10.0.%d.%d", 1+i/200, 10+i%200))
}

// cachedPoolPatchCounter is a client that reads from a cache of the
// namespace made as the manager's (slim pools, our indexes) and counts
// IPPool patches.
func cachedPoolPatchCounter(ctx context.Context, t *testing.T, namespace string) (client.Client, *atomic.Int64) {
	t.Helper()
	options := controllers.CacheOptions(namespace, "")
	options.Scheme = scheme.New()
	informers, err := cache.New(testEnv.Config, options)
	require.NoError(t, err)
	require.NoError(t, index.Register(ctx, informers))
	go func() { _ = informers.Start(ctx) }() // ends with the test's context
	cached, err := client.New(testEnv.Config, client.Options{Scheme: options.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	require.NoError(t, err)
	counter := &poolPatchCounter{Client: cached}
	return counter, &counter.patches
}

// poolPatchCounter counts the IPPool patches it sends.
type poolPatchCounter struct {
	client.Client
	patches atomic.Int64
}

func (c *poolPatchCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*ipamv1.IPPool); ok {
		c.patches.Add(1)
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func jsonSize(t *testing.T, v any) int {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return len(data)
}

func ourRecordSize(pool *ipamv1.IPPool) int {
	size := 0
	for _, entry := range pool.ManagedFields {
		if entry.Manager == preprovv1.PreallocationsFieldManager && entry.FieldsV1 != nil {
			size += len(entry.FieldsV1.Raw)
		}
	}
	return size
}

// The entries of hosts deleted together go in a few writes of their pool,
// not one write per host: the fleet's sweeps queue them, and the pool is
// written once per window. An entry someone else wrote stays.
func TestSweepsOfDeletedHostsShareTheirPoolWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "entry-removals-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	pool := fixtures.Pool(ns.Name, "provisioning", "10.0.0.10", "10.0.255.250", "10.0.0.1")
	pool.Spec.Prefix = 16
	pool.Spec.PreAllocations = map[string]ipamv1.IPAddressStr{"users-own-provisioning": "10.0.255.1"}
	require.NoError(t, k8sClient.Create(ctx, pool))
	const deleted = 100
	entries := map[string]ipamv1.IPAddressStr{}
	for i := range deleted {
		entries[ipam.ClaimName(hostAtScale(i), pool.Name)] = ipAtScale(i)
	}
	recordAsOurs(t, pool, entries)

	c, patches := cachedPoolPatchCounter(ctx, t, ns.Name)
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		cached := &ipamv1.IPPool{}
		assert.NoError(collect, c.Get(ctx, client.ObjectKeyFromObject(pool), cached))
		assert.Len(collect, cached.Spec.PreAllocations, deleted+1)
	}, 30*time.Second, 100*time.Millisecond)
	apiReader := &readCounter{Reader: k8sClient, reads: map[string]int{}}
	sweeper := &ipam.Sweeper{Client: c, APIReader: apiReader}
	go func() { _ = sweeper.Start(ctx) }() // ends with the test's context

	// As the manager's ten workers sweep the hosts the cache saw deleted.
	hosts := make(chan int, deleted)
	for i := range deleted {
		hosts <- i
	}
	close(hosts)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for i := range hosts {
				assert.NoError(t, sweeper.SweepHost(ctx, types.NamespacedName{Namespace: ns.Name, Name: hostAtScale(i)}))
			}
		})
	}
	wg.Wait()
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		assert.NoError(collect, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool))
		assert.Equal(collect, map[string]ipamv1.IPAddressStr{"users-own-provisioning": "10.0.255.1"}, pool.Spec.PreAllocations)
	}, 30*time.Second, 100*time.Millisecond)
	t.Logf("%d pool writes and %d host reads for %d deleted hosts", patches.Load(), len(apiReader.reads), deleted)
	assert.LessOrEqual(t, patches.Load(), int64(deleted/10), "pool writes for %d hosts deleted together", deleted)
	// A host the cache lacks is confirmed gone with the API: one list of
	// the namespace's hosts for a batch, not a read each.
	assert.LessOrEqual(t, len(apiReader.reads), deleted/10, "hosts read from the API to confirm them gone")
}

// A set-up host's reconcile reads its namespace's pools from the cache
// without copying one: with --pool-preallocations a pool holds an entry per
// host, and a copy per read made each host's reconcile cost its pools'
// size several times over.
func TestAHostsReconcileCopiesNoPool(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pool-copies-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	pool := fixtures.Pool(ns.Name, "provisioning", "10.0.0.10", "10.0.255.250", "10.0.0.1")
	other := fixtures.Pool(ns.Name, "storage", "10.1.0.10", "10.1.255.250", "10.1.0.1")
	for _, p := range []*ipamv1.IPPool{pool, other} {
		require.NoError(t, k8sClient.Create(ctx, p))
	}
	host := fixtures.Host(ns.Name, "node-0", "52:54:00:aa:bb:01", nil)
	require.NoError(t, k8sClient.Create(ctx, host))
	recordAsOurs(t, other, map[string]ipamv1.IPAddressStr{ipam.ClaimName(host.Name, other.Name): "10.1.0.10"})

	cached, _ := cachedPoolPatchCounter(ctx, t, ns.Name)
	require.EventuallyWithT(t, func(collect *assert.CollectT) {
		cachedPool := &ipamv1.IPPool{}
		assert.NoError(collect, cached.Get(ctx, client.ObjectKeyFromObject(other), cachedPool))
		assert.Len(collect, cachedPool.Spec.PreAllocations, 1)
		assert.NoError(collect, cached.Get(ctx, client.ObjectKeyFromObject(host), &bmov1alpha1.BareMetalHost{}))
	}, 30*time.Second, 100*time.Millisecond)
	c := &poolCopyCounter{Client: cached}
	claims := &ipam.Claims{Client: c, APIReader: k8sClient, Indexed: true}
	preallocations := &ipam.Preallocations{Client: c}

	_, err := claims.Ensure(ctx, host, []string{pool.Name}, &expectations.Writes{})
	require.NoError(t, err)
	full, err := preallocations.Ensure(ctx, host, []ipam.PoolState{{
		Pool: pool.Name, Claim: ipam.ClaimName(host.Name, pool.Name), Address: &networkdata.Address{IP: "10.0.0.10", Prefix: 16},
	}})
	require.NoError(t, err)
	assert.Empty(t, full)
	_, err = claims.ReleaseUnused(ctx, host, []string{pool.Name}, ipam.AddressUsers{})
	require.NoError(t, err)
	require.NoError(t, preallocations.RemoveUnused(ctx, host, []string{pool.Name}, nil))
	_, err = claims.HostsToRetry(ctx, ns.Name, pool.Name)
	require.NoError(t, err)
	assert.Zero(t, c.copies.Load(), "pool reads that copied a pool out of the cache")

	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(other), other))
	assert.Empty(t, other.Spec.PreAllocations, "the entry on the pool the host no longer uses is removed")
}

// poolCopyCounter counts the IPPool reads that copy pools out of the cache.
type poolCopyCounter struct {
	client.Client
	copies atomic.Int64
}

func (c *poolCopyCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*ipamv1.IPPool); ok {
		c.copies.Add(1)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *poolCopyCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*ipamv1.IPPoolList); ok && !slices.Contains(opts, client.ListOption(client.UnsafeDisableDeepCopy)) {
		c.copies.Add(1)
	}
	return c.Client.List(ctx, list, opts...)
}
