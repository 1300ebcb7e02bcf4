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

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// An entry of ours that the pool's ranges no longer hold fails the host's
// claim for good ("Pre-allocated IP out of bond"): it goes. Found by the
// soak (seed 4 step 178, seed 1 step 407): a host registered again under
// the same name met the earlier host's entry, outside the shrunk pool.
// Entries inside the ranges, and entries we did not write, stay.
func TestAPreAllocationOutsideThePoolGoes(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "out-of-range-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	pool := fixtures.Pool(ns.Name, "pool", "192.0.2.10", "192.0.2.12", "192.0.2.1")
	require.NoError(t, k8sClient.Create(ctx, pool))
	recordAsOurs(t, pool, map[string]ipamv1.IPAddressStr{"outside-pool": "192.0.2.18", "inside-pool": "192.0.2.11"})
	theirs := pool.DeepCopy()
	theirs.Spec.PreAllocations["theirs-pool"] = "192.0.2.19"
	require.NoError(t, k8sClient.Patch(ctx, theirs, client.MergeFrom(pool), client.FieldOwner("a-user")))

	preallocations := &ipam.Preallocations{Client: k8sClient}
	for _, name := range []string{"outside", "inside", "theirs"} {
		host := fixtures.Host(ns.Name, name, "52:54:00:aa:bb:01", nil)
		require.NoError(t, preallocations.RemoveOutOfRange(ctx, host, []string{"pool", "absent"}))
	}
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool))
	assert.Equal(t, map[string]ipamv1.IPAddressStr{"inside-pool": "192.0.2.11", "theirs-pool": "192.0.2.19"}, pool.Spec.PreAllocations)
}

// An entry of ours whose address another claim holds goes when the claim
// of its name waits for IPAM: IPAM would give the claim that address and
// never create its IPAddress. An entry whose address its own claim's
// IPAddress holds, and an entry someone else wrote, stay.
func TestAnEntryWhoseAddressAnotherClaimHoldsGoes(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "entry-taken-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	pool := fixtures.Pool(ns.Name, "provisioning", "10.0.0.10", "10.0.0.250", "10.0.0.1")
	pool.Spec.NamePrefix = "prov"
	pool.Spec.PreAllocations = map[string]ipamv1.IPAddressStr{"users-provisioning": "10.0.0.13"}
	require.NoError(t, k8sClient.Create(ctx, pool))
	recordAsOurs(t, pool, map[string]ipamv1.IPAddressStr{"taken-provisioning": "10.0.0.11", "own-provisioning": "10.0.0.12"})
	for ip, claim := range map[string]string{"10.0.0.11": "other-provisioning", "10.0.0.12": "own-provisioning", "10.0.0.13": "third-provisioning"} {
		require.NoError(t, k8sClient.Create(ctx, &ipamv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "prov-" + strings.ReplaceAll(ip, ".", "-")},
			Spec: ipamv1.IPAddressSpec{Address: ipamv1.IPAddressStr(ip), Prefix: 24,
				Pool: corev1.ObjectReference{Name: pool.Name}, Claim: corev1.ObjectReference{Name: claim}},
		}))
	}
	preallocations := &ipam.Preallocations{Client: k8sClient}
	for _, name := range []string{"taken", "own", "users"} {
		host := fixtures.Host(ns.Name, name, "", nil)
		require.NoError(t, preallocations.RemoveTaken(ctx, host, []ipam.PoolState{{
			Pool: pool.Name, Claim: ipam.ClaimName(name, pool.Name), Waiting: "IPAM has not served it yet",
		}}))
	}
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(pool), pool))
	assert.Equal(t, map[string]ipamv1.IPAddressStr{"own-provisioning": "10.0.0.12", "users-provisioning": "10.0.0.13"},
		pool.Spec.PreAllocations)
}
