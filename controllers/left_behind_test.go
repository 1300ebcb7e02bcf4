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
	"strings"
	"testing"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A host paused for us that goes to conflict gives its claims back; a claim
// released while IPAM allocated it leaves its IPAddress behind (IPAM creates
// the address before it writes the claim's finalizer). That address is
// released with the claims, not kept for the host's lifetime.
func TestAddressLeftBehindAReleasedClaimIsReleased(t *testing.T) {
	ns := newNamespace(t)
	rack := map[string]string{"rack": "r1"}
	pool := fixtures.Pool(ns, "tiny", "192.0.2.10", "192.0.2.10", "192.0.2.1")
	create(t,
		pool,
		fixtures.PreprovisioningTemplate(ns, "rack-r1", rack, fixtures.PoolNetworkData("tiny")),
		fixtures.PreprovisioningTemplate(ns, "rack-r1-too", rack, fixtures.StaticNetworkData()),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", rack),
	)
	waitForEvent(t, ns, "node-0", baremetal.ReasonTemplateConflict)
	// The manager may have claimed from tiny before the second template
	// reached its cache: that claim and its address go first.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		claimErr := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "node-0-tiny"}, &ipamv1.IPClaim{})
		assert.True(c, apierrors.IsNotFound(claimErr), "the claim of the host in conflict is still there")
		addressErr := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tiny-192-0-2-10"}, &ipamv1.IPAddress{})
		assert.True(c, apierrors.IsNotFound(addressErr), "the address of the host in conflict is still there")
	}, waitTimeout, pollInterval)

	// What IPAM leaves when node-0's claim is released mid-allocation: the
	// pool's one address, owned by the pool and the claim that is gone.
	leaveAddressBehind(t, pool, "192.0.2.10", "node-0-tiny")

	// The address serves another host.
	other := map[string]string{"rack": "r2"}
	create(t,
		fixtures.PreprovisioningTemplate(ns, "rack-r2", other, fixtures.PoolNetworkData("tiny")),
		fixtures.Host(ns, "node-1", "52:54:00:aa:bb:02", other),
	)
	assert.Equal(t, "192.0.2.10", ipOf(waitForNetworkData(t, ns, "node-1")))
}

// A host that is set up and lives on keeps no address IPAM left behind one
// of its released claims: its template moved it off the pool, and the
// claim there was released while IPAM allocated it. The address is
// released while the host lives, not only once it is deleted.
func TestAddressLeftBehindALiveHostIsReleased(t *testing.T) {
	ns := newNamespace(t)
	rack := map[string]string{"rack": "r1"}
	old := fixtures.Pool(ns, "old", "192.0.2.10", "192.0.2.10", "192.0.2.1")
	create(t,
		old,
		fixtures.Pool(ns, "new", "198.51.100.10", "198.51.100.20", "198.51.100.1"),
		fixtures.PreprovisioningTemplate(ns, "rack-r1", rack, fixtures.PoolNetworkData("new")),
		fixtures.Host(ns, "node-0", "52:54:00:aa:bb:01", rack),
	)
	assert.Equal(t, "198.51.100.10", ipOf(waitForNetworkData(t, ns, "node-0")))

	leaveAddressBehind(t, old, "192.0.2.10", "node-0-old")
	assert.Equal(t, "198.51.100.10", ipOf(readNetworkData(t, ns, "node-0")))
}

// leaveAddressBehind creates what IPAM leaves when a claim is released
// mid-allocation (the address owned by the pool only, with IPAM's
// finalizer, naming the claim that is gone), and waits for the manager to
// release it.
func leaveAddressBehind(t *testing.T, pool *ipamv1.IPPool, ip, claimName string) {
	t.Helper()
	address := &ipamv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pool.Namespace, Name: pool.Name + "-" + strings.ReplaceAll(ip, ".", "-"),
			Finalizers: []string{ipamv1.IPAddressFinalizer},
			Labels:     map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: ipamv1.GroupVersion.String(), Kind: "IPPool", Name: pool.Name, UID: pool.UID,
			}},
		},
		Spec: ipamv1.IPAddressSpec{
			Address: ipamv1.IPAddressStr(ip), Prefix: 24,
			Pool:  corev1.ObjectReference{Name: pool.Name, Namespace: pool.Namespace},
			Claim: corev1.ObjectReference{Name: claimName, Namespace: pool.Namespace},
		},
	}
	create(t, address)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(address), &ipamv1.IPAddress{})
		assert.True(c, apierrors.IsNotFound(err), "the address left behind the released claim %s is still reserved for it", claimName)
	}, waitTimeout, pollInterval)
}
