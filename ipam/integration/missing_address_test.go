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
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/expectations"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A claim that lost the same-name race points at an IPAddress that is gone,
// and IPAM never looks at a claim with an address again: past a bound, the
// claim is made again, once, and the host is told.
func TestClaimPointingAtAMissingAddressIsMadeAgain(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "missing-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	host := fixtures.Host(ns.Name, "node-0", "52:54:00:aa:bb:01", nil)
	require.NoError(t, k8sClient.Create(ctx, host))
	require.NoError(t, k8sClient.Create(ctx, fixtures.Pool(ns.Name, "pool", "192.0.2.10", "192.0.2.20", "192.0.2.1")))
	createManagedClaims(t, ns.Name, map[string][]metav1.OwnerReference{"node-0-pool": {ownership.HostOwnerReference(host)}})
	lost := &ipamv1.IPClaim{}
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "node-0-pool"}, lost))
	lost.Status.Address = &corev1.ObjectReference{Name: "pool-192-0-2-10", Namespace: ns.Name}
	require.NoError(t, k8sClient.Status().Update(ctx, lost))

	clock := clocktesting.NewFakePassiveClock(time.Now())
	claims := &ipam.Claims{Client: k8sClient, Clock: clock}
	var writes expectations.Writes
	ensure := func() ipam.PoolState {
		t.Helper()
		states, err := claims.Ensure(ctx, host, []string{"pool"}, &writes)
		require.NoError(t, err)
		require.Len(t, states, 1)
		return states[0]
	}

	state := ensure()
	assert.Empty(t, state.Remade, "a claim whose address a lagging cache lacks was made again at once")
	assert.Equal(t, ipam.MissingAddressTimeout, state.RetryAfter)
	clock.SetTime(clock.Now().Add(ipam.MissingAddressTimeout / 2))
	assert.Empty(t, ensure().Remade)
	assert.True(t, claimExists(t, ns.Name, "node-0-pool"))

	clock.SetTime(clock.Now().Add(ipam.MissingAddressTimeout))
	assert.NotEmpty(t, ensure().Remade, "a claim pointing at a missing IPAddress past the bound was not made again")
	state = ensure()
	assert.Empty(t, state.Remade, "the claim was made again twice")
	remade := &ipamv1.IPClaim{}
	require.NoError(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "node-0-pool"}, remade))
	assert.NotEqual(t, lost.UID, remade.UID, "the claim was not made again")
	assert.Nil(t, remade.Status.Address, "the new claim waits for IPAM")
}
