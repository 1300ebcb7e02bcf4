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
	"strings"
	"testing"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// CAPM3 has just added its Metal3Data as an owner of a claim, and the cache
// has not shown it yet: neither the release of a host's unused claims nor
// the sweep may delete the claim on that view (IPAM would free an address
// the provisioned OS uses). Their deletes are fenced on the version they
// decided on, and decided again on the API's.
func TestNoClaimIsReleasedOnAStaleView(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "stale-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	host := fixtures.Host(ns.Name, "node-0", "52:54:00:aa:bb:01", nil)
	require.NoError(t, k8sClient.Create(ctx, host))
	require.NoError(t, k8sClient.Create(ctx, fixtures.Pool(ns.Name, "old", "192.0.2.10", "192.0.2.20", "192.0.2.1")))
	data := &capm3.Metal3Data{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "workers-0"}}
	require.NoError(t, k8sClient.Create(ctx, data))

	// The live host's claim on a pool its template no longer uses, and the
	// claim of a host deleted once CAPM3 provisioned it.
	createManagedClaims(t, ns.Name, map[string][]metav1.OwnerReference{
		"node-0-old":      {ownership.HostOwnerReference(host)},
		"provisioned-old": {hostRef("provisioned", "uid-of-a-deleted-host")},
	})
	cache := &staleCache{Client: k8sClient, claims: map[string]*ipamv1.IPClaim{}}
	for _, name := range []string{"node-0-old", "provisioned-old"} {
		cache.claims[name] = addMetal3DataOwner(t, ns.Name, name, data)
	}

	claims := &ipam.Claims{Client: cache, APIReader: k8sClient}
	_, err := claims.ReleaseUnused(ctx, host, []string{"new"}, ipam.AddressUsers{})
	require.NoError(t, err)
	sweeper := &ipam.Sweeper{Client: cache, APIReader: k8sClient}
	require.NoError(t, sweeper.Sweep(ctx, ns.Name))

	assert.True(t, claimExists(t, ns.Name, "node-0-old"), "the release deleted a claim CAPM3 uses, on a stale view")
	assert.True(t, claimExists(t, ns.Name, "provisioned-old"), "the sweep deleted a claim CAPM3 uses, on a stale view")

	// Once CAPM3 lets go (the Metal3Data deleted), the sweep decides again
	// on the API's version and releases the deleted host's claim.
	require.NoError(t, k8sClient.Delete(ctx, data))
	require.NoError(t, sweeper.Sweep(ctx, ns.Name))
	assert.False(t, claimExists(t, ns.Name, "provisioned-old"), "the claim of a deleted host leaked")
}

// addMetal3DataOwner adds the Metal3Data as an owner of the claim, as CAPM3's
// handoff needs, and returns the claim as it was before: the cache's view.
func addMetal3DataOwner(t *testing.T, namespace, name string, data *capm3.Metal3Data) *ipamv1.IPClaim {
	t.Helper()
	claim := &ipamv1.IPClaim{}
	require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, claim))
	before := claim.DeepCopy()
	claim.OwnerReferences = append(claim.OwnerReferences, ownership.Metal3DataOwnerReference(data))
	require.NoError(t, k8sClient.Update(context.Background(), claim))
	return before
}

// staleCache is a client whose reads show old copies of some claims, as a
// cache that has not caught up shows them.
type staleCache struct {
	client.Client
	claims map[string]*ipamv1.IPClaim
}

func (c *staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if claim, ok := obj.(*ipamv1.IPClaim); ok {
		if stale, ok := c.claims[key.Name]; ok {
			stale.DeepCopyInto(claim)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *staleCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if claims, ok := list.(*ipamv1.IPClaimList); ok {
		for i := range claims.Items {
			if stale, ok := c.claims[claims.Items[i].Name]; ok {
				stale.DeepCopyInto(&claims.Items[i])
			}
		}
	}
	return nil
}

// A host registered again under its name while the sweep releases the
// address IPAM left behind its old claim: IPAM hands that address,
// unchanged, to the new claim, so nothing but a read of the claim tells.
// The sweep must leave the address to the new claim.
func TestSweepLeavesAnAddressANewClaimOfItsNameTookOver(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sweep-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	address := leftBehindAddress(t, ns.Name, "node-0-pool", "192.0.2.10")

	// The host and its claim come back while the sweep writes: right before
	// its first write to the address.
	recreate := func() {
		host := fixtures.Host(ns.Name, "node-0", "52:54:00:aa:bb:01", nil)
		require.NoError(t, k8sClient.Create(ctx, host))
		createManagedClaims(t, ns.Name, map[string][]metav1.OwnerReference{"node-0-pool": {ownership.HostOwnerReference(host)}})
		claim := &ipamv1.IPClaim{}
		require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "node-0-pool"}, claim))
		claim.Status.Address = &corev1.ObjectReference{Name: address.Name, Namespace: ns.Name}
		require.NoError(t, k8sClient.Status().Update(ctx, claim))
	}
	writer := &beforeFirstWrite{Client: k8sClient, hook: recreate}
	sweeper := &ipam.Sweeper{Client: writer, APIReader: k8sClient}
	require.NoError(t, sweeper.Sweep(ctx, ns.Name))
	require.True(t, writer.hooked, "the sweep never wrote to the address: the race was not provoked")

	kept := &ipamv1.IPAddress{}
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(address), kept), "the sweep deleted the address of a live claim")
	assert.Contains(t, kept.Finalizers, ipamv1.IPAddressFinalizer, "IPAM's finalizer was not put back")
}

// leftBehindAddress creates the IPAddress IPAM left behind a deleted claim
// of ours on the pool "pool", with IPAM's finalizer.
func leftBehindAddress(t *testing.T, namespace, claim, ip string) *ipamv1.IPAddress {
	t.Helper()
	address := &ipamv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: "pool-" + strings.ReplaceAll(ip, ".", "-"), Finalizers: []string{ipamv1.IPAddressFinalizer},
			Labels: map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
		},
		Spec: ipamv1.IPAddressSpec{
			Address: ipamv1.IPAddressStr(ip), Prefix: 24,
			Pool: corev1.ObjectReference{Name: "pool"}, Claim: corev1.ObjectReference{Name: claim},
		},
	}
	require.NoError(t, k8sClient.Create(context.Background(), address))
	return address
}

// beforeFirstWrite runs hook once, right before the first Patch or Delete.
type beforeFirstWrite struct {
	client.Client
	hook   func()
	hooked bool
}

func (w *beforeFirstWrite) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	w.runHook()
	return w.Client.Patch(ctx, obj, patch, opts...)
}

func (w *beforeFirstWrite) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	w.runHook()
	return w.Client.Delete(ctx, obj, opts...)
}

func (w *beforeFirstWrite) runHook() {
	if !w.hooked {
		w.hooked = true
		w.hook()
	}
}
