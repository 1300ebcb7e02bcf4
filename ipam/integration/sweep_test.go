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
	"maps"
	"slices"
	"strings"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

func TestSweepReleasesClaimsOfDeletedHostsOnly(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sweep-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))

	alive := fixtures.Host(ns.Name, "alive", "52:54:00:aa:bb:01", nil)
	provisioned := fixtures.Host(ns.Name, "provisioned", "52:54:00:aa:bb:02", nil)
	require.NoError(t, k8sClient.Create(ctx, alive))
	require.NoError(t, k8sClient.Create(ctx, provisioned))
	data := &capm3.Metal3Data{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "workers-0"}}
	require.NoError(t, k8sClient.Create(ctx, data))
	// A host deleted while no manager ran, and one recreated since under the
	// same name (a new UID): the claims of the old ones must go.
	gone := hostRef("gone", "uid-of-a-deleted-host")
	recreated := fixtures.Host(ns.Name, "recreated", "52:54:00:aa:bb:03", nil)
	require.NoError(t, k8sClient.Create(ctx, recreated))

	claims := map[string][]metav1.OwnerReference{
		"alive-pool":       {hostRef(alive.Name, alive.UID)},
		"gone-pool":        {gone},
		"recreated-pool":   {hostRef("recreated", "uid-of-the-earlier-host")},
		"provisioned-pool": {hostRef("deleted-but-provisioned", "uid-x"), ownership.Metal3DataOwnerReference(data)},
	}
	createManagedClaims(t, ns.Name, claims)
	foreign := &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "someone-elses", OwnerReferences: []metav1.OwnerReference{gone}},
		Spec:       ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: "pool"}},
	}
	require.NoError(t, k8sClient.Create(ctx, foreign))

	sweeper := &ipam.Sweeper{Client: k8sClient, APIReader: k8sClient}
	require.NoError(t, sweeper.Sweep(ctx, ""))

	exists := func(name string) bool { return claimExists(t, ns.Name, name) }
	assert.True(t, exists("alive-pool"), "the claim of a live host was deleted")
	assert.True(t, exists("provisioned-pool"), "a claim a live Metal3Data owns was deleted")
	assert.True(t, exists("someone-elses"), "a claim without our label was deleted")
	assert.False(t, exists("gone-pool"), "the claim of a deleted host leaked")
	assert.False(t, exists("recreated-pool"), "the claim of the earlier host of the same name leaked")
}

// IPAM can leave the IPAddress of a claim deleted while it allocated it
// behind, and then keeps that address for a claim of the same name only: the
// sweep releases it once the claim and its host are both gone.
func TestSweepReleasesAddressesIPAMLeftBehindDeletedHosts(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sweep-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	alive := fixtures.Host(ns.Name, "alive", "52:54:00:aa:bb:01", nil)
	require.NoError(t, k8sClient.Create(ctx, alive))
	// A deleted host's claim that a live Metal3Data keeps (CAPM3 uses it).
	data := &capm3.Metal3Data{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "workers-0"}}
	require.NoError(t, k8sClient.Create(ctx, data))
	createManagedClaims(t, ns.Name, map[string][]metav1.OwnerReference{
		"claimed-pool": {hostRef("claimed", "uid-of-a-deleted-host"), ownership.Metal3DataOwnerReference(data)},
	})

	ours := map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}
	addresses := map[string]struct {
		claim  string
		labels map[string]string
		kept   string
	}{
		"pool-192-0-2-10": {claim: "gone-pool", labels: ours},
		"pool-192-0-2-11": {claim: "alive-pool", labels: ours, kept: "a host of that name is registered: its new claim takes the address over"},
		"pool-192-0-2-12": {claim: "claimed-pool", labels: ours, kept: "its claim exists"},
		"pool-192-0-2-13": {claim: "someone-elses-pool", kept: "it is not the address of one of our claims"},
		"pool-192-0-2-14": {claim: "stray-claim", labels: ours, kept: "its claim is not named <host>-<pool>"},
	}
	for name, a := range addresses {
		address := &ipamv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: a.labels, Finalizers: []string{ipamv1.IPAddressFinalizer}},
			Spec: ipamv1.IPAddressSpec{
				Address: ipamv1.IPAddressStr(strings.ReplaceAll(strings.TrimPrefix(name, "pool-"), "-", ".")), Prefix: 24,
				Pool:  corev1.ObjectReference{Name: "pool"},
				Claim: corev1.ObjectReference{Name: a.claim},
			},
		}
		require.NoError(t, k8sClient.Create(ctx, address))
	}

	sweeper := &ipam.Sweeper{Client: k8sClient, APIReader: k8sClient}
	require.NoError(t, sweeper.Sweep(ctx, ns.Name))

	for name, a := range addresses {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name}, &ipamv1.IPAddress{})
		if a.kept == "" {
			assert.True(t, apierrors.IsNotFound(err), "IPAddress %s of a deleted host's claim was left behind: %v", name, err)
			continue
		}
		assert.NoError(t, err, "IPAddress %s was released although %s", name, a.kept)
	}
}

func claimExists(t *testing.T, namespace, name string) bool {
	t.Helper()
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &ipamv1.IPClaim{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// createManagedClaims creates claims of ours on the pool "pool", by name
// with their owners.
func createManagedClaims(t *testing.T, namespace string, claims map[string][]metav1.OwnerReference) {
	t.Helper()
	for name, owners := range claims {
		claim := &ipamv1.IPClaim{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace, Name: name, OwnerReferences: owners,
				Labels: map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
			},
			Spec: ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: "pool"}},
		}
		require.NoError(t, k8sClient.Create(context.Background(), claim))
	}
}

func hostRef(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: bmov1alpha1.GroupVersion.String(), Kind: "BareMetalHost", Name: name, UID: uid}
}

// The sweep asks the API only about owners the cache lacks: an owner the
// cache has is alive, and one it lacks may have been created a moment ago.
func TestSweepReadsTheAPIOnlyForOwnersTheCacheLacks(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sweep-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))

	alive := fixtures.Host(ns.Name, "alive", "52:54:00:aa:bb:01", nil)
	fresh := fixtures.Host(ns.Name, "fresh", "52:54:00:aa:bb:02", nil)
	require.NoError(t, k8sClient.Create(ctx, alive))
	require.NoError(t, k8sClient.Create(ctx, fresh))
	data := &capm3.Metal3Data{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "workers-0"}}
	require.NoError(t, k8sClient.Create(ctx, data))

	claims := map[string][]metav1.OwnerReference{
		"alive-pool":       {hostRef(alive.Name, alive.UID)},
		"fresh-pool":       {hostRef(fresh.Name, fresh.UID)},
		"gone-pool":        {hostRef("gone", "uid-of-a-deleted-host")},
		"provisioned-pool": {hostRef("deleted-but-provisioned", "uid-x"), ownership.Metal3DataOwnerReference(data)},
	}
	createManagedClaims(t, ns.Name, claims)
	pool := fixtures.Pool(ns.Name, "pool", "192.0.2.10", "192.0.2.20", "192.0.2.1")
	pool.Spec.PreAllocations = map[string]ipamv1.IPAddressStr{
		"alive-pool": "192.0.2.10", "fresh-pool": "192.0.2.11", "gone-pool": "192.0.2.12",
	}
	pool.Annotations = map[string]string{preprovv1.PreallocatedForAnnotation: `["alive-pool","fresh-pool","gone-pool"]`}
	require.NoError(t, k8sClient.Create(ctx, pool))

	// The cache has not seen the host "fresh" yet.
	cache := &laggingCache{Client: k8sClient, unseen: fresh.Name}
	apiReader := &readCounter{Reader: k8sClient, reads: map[string]int{}}
	sweeper := &ipam.Sweeper{Client: cache, APIReader: apiReader}
	require.NoError(t, sweeper.Sweep(ctx, ns.Name))

	exists := func(name string) bool { return claimExists(t, ns.Name, name) }
	assert.True(t, exists("alive-pool"), "the claim of a live host was deleted")
	assert.True(t, exists("fresh-pool"), "the claim of a host the cache has not seen yet was deleted")
	assert.True(t, exists("provisioned-pool"), "a claim a live Metal3Data owns was deleted")
	assert.False(t, exists("gone-pool"), "the claim of a deleted host leaked")
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool))
	assert.Equal(t, map[string]ipamv1.IPAddressStr{"alive-pool": "192.0.2.10", "fresh-pool": "192.0.2.11"},
		pool.Spec.PreAllocations)

	read := slices.Sorted(maps.Keys(apiReader.reads))
	assert.Equal(t, []string{"deleted-but-provisioned", "fresh", "gone"}, read,
		"the API must be read for the owners the cache lacks, and only for them")
}

// laggingCache is a client whose Get has not seen one object yet.
type laggingCache struct {
	client.Client
	unseen string
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Name == c.unseen {
		return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// readCounter counts the Gets of each name.
type readCounter struct {
	client.Reader
	reads map[string]int
}

func (r *readCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.reads[key.Name]++
	return r.Reader.Get(ctx, key, obj, opts...)
}
