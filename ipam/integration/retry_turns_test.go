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

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A claim IPAM has still to serve holds back a failed claim's turn only if
// it will take an address that looks free: a pre-allocated claim takes its
// own. Found by the soak (seed 1, step 80): a recreated host's pre-allocated
// claim, unserved for a moment, held the one free address of the pool back
// from three waiting hosts, and nothing woke them once it was served.
func TestAPreAllocatedClaimDoesNotHoldAFreeAddressBack(t *testing.T) {
	for _, tc := range []struct {
		name             string
		newcomerReserved bool
		wantTurn         bool
	}{
		{name: "the newcomer is pre-allocated an address: the waiting host has its turn", newcomerReserved: true, wantTurn: true},
		{name: "the newcomer takes the free address: the waiting host waits", newcomerReserved: false, wantTurn: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "turns-"}}
			require.NoError(t, k8sClient.Create(ctx, ns))
			waiting := fixtures.Host(ns.Name, "waiting", "52:54:00:aa:bb:01", nil)
			newcomer := fixtures.Host(ns.Name, "newcomer", "52:54:00:aa:bb:02", nil)
			require.NoError(t, k8sClient.Create(ctx, waiting))
			require.NoError(t, k8sClient.Create(ctx, newcomer))

			// Three addresses: .10 taken, .11 free, .12 pre-allocated to
			// the newcomer's claim or to a claim not made yet.
			pool := fixtures.Pool(ns.Name, "pool", "192.0.2.10", "192.0.2.12", "192.0.2.1")
			reservedFor := "later-pool"
			if tc.newcomerReserved {
				reservedFor = "newcomer-pool"
			}
			pool.Spec.PreAllocations = map[string]ipamv1.IPAddressStr{reservedFor: "192.0.2.12"}
			require.NoError(t, k8sClient.Create(ctx, pool))
			require.NoError(t, k8sClient.Create(ctx, &ipamv1.IPAddress{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "pool-192-0-2-10"},
				Spec: ipamv1.IPAddressSpec{
					Pool:    corev1.ObjectReference{Name: "pool"},
					Claim:   corev1.ObjectReference{Name: "someone-pool"},
					Address: "192.0.2.10", Prefix: 24,
				},
			}))
			createManagedClaims(t, ns.Name, map[string][]metav1.OwnerReference{
				"waiting-pool":  {ownership.HostOwnerReference(waiting)},
				"newcomer-pool": {ownership.HostOwnerReference(newcomer)},
			})
			failed := &ipamv1.IPClaim{}
			require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "waiting-pool"}, failed))
			failed.Status.ErrorMessage = ptr.To("Exhausted IP Pools")
			require.NoError(t, k8sClient.Status().Update(ctx, failed))

			claims := &ipam.Claims{Client: k8sClient}
			hosts, err := claims.HostsToRetry(ctx, ns.Name, "pool")
			require.NoError(t, err)
			if tc.wantTurn {
				assert.Equal(t, []types.NamespacedName{client.ObjectKeyFromObject(waiting)}, hosts)
			} else {
				assert.Empty(t, hosts, "IPAM serves the newcomer's claim first, with the one free address")
			}
		})
	}
}
