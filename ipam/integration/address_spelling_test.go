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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// A claim on a pool the host's template no longer names stays while the
// host's Secret still names its address, however the Secret spells it
// (upper case, zeros written out): the release decision compares parsed
// addresses, for both IPAM families (issue 34 item 7). A substring match
// would miss these spellings and free the address of a running machine.
func TestAnAddressTheSecretSpellsAnotherWayIsKept(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "address-spelling-"}}
	require.NoError(t, k8sClient.Create(ctx, ns))
	host := fixtures.Host(ns.Name, "node-0", "52:54:00:aa:bb:02", nil)
	require.NoError(t, k8sClient.Create(ctx, host))
	require.NoError(t, k8sClient.Create(ctx, fixtures.Pool(ns.Name, "pool", "192.0.2.10", "192.0.2.20", "192.0.2.1")))
	metal3Claim := metal3ClaimWithAddress(t, host, "pool", "2001:db8::a")
	clusterAPIClaim := clusterAPIClaimWithAddress(t, host, "cluster-pool", "2001:db8::b")
	// The Secret as a machine booted with it: both addresses, spelled
	// otherwise than IPAM wrote them.
	users := ipam.AddressUsers{NetworkData: []byte(`{"links": [{"id": "eth0", "type": "phy", "ethernet_mac_address": "52:54:00:aa:bb:02"}],
	  "networks": [
	    {"id": "a", "type": "ipv6", "link": "eth0", "network_id": "a", "ip_address": "2001:DB8::A", "netmask": "ffff:ffff:ffff:ffff::"},
	    {"id": "b", "type": "ipv6", "link": "eth0", "network_id": "b", "ip_address": "2001:0db8:0:0:0:0:0:000b", "netmask": "ffff:ffff:ffff:ffff::"}],
	  "services": []}`)}

	claims := &ipam.Claims{Client: k8sClient}
	_, err := claims.ReleaseUnused(ctx, host, nil, users)
	require.NoError(t, err)
	_, err = claims.ReleaseUnusedClusterAPI(ctx, host, nil, users)
	require.NoError(t, err)
	assert.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(metal3Claim), &ipamv1.IPClaim{}),
		"the IPClaim whose address the Secret names as 2001:DB8::A was released")
	assert.NoError(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(clusterAPIClaim), &capipamv1.IPAddressClaim{}),
		"the IPAddressClaim whose address the Secret names as 2001:0db8:0:0:0:0:0:000b was released")
}

// metal3ClaimWithAddress creates the host's IPClaim of ours on the pool
// and the IPAddress IPAM served it with ip, as IPAM writes it.
func metal3ClaimWithAddress(t *testing.T, host *bmov1alpha1.BareMetalHost, pool, ip string) *ipamv1.IPClaim {
	t.Helper()
	ctx := context.Background()
	name := ipam.ClaimName(host.Name, pool)
	address := &ipamv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: host.Namespace, Name: name},
		Spec: ipamv1.IPAddressSpec{Address: ipamv1.IPAddressStr(ip), Prefix: 64,
			Pool: corev1.ObjectReference{Name: pool}, Claim: corev1.ObjectReference{Name: name}},
	}
	require.NoError(t, k8sClient.Create(ctx, address))
	claim := &ipamv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: host.Namespace, Name: name, OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(host)},
			Labels: map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
		},
		Spec: ipamv1.IPClaimSpec{Pool: corev1.ObjectReference{Name: pool}},
	}
	require.NoError(t, k8sClient.Create(ctx, claim))
	claim.Status.Address = &corev1.ObjectReference{Name: address.Name}
	require.NoError(t, k8sClient.Status().Update(ctx, claim))
	return claim
}

// clusterAPIClaimWithAddress creates the host's IPAddressClaim of ours on
// an InClusterIPPool and the IPAddress the provider served it with ip.
func clusterAPIClaimWithAddress(t *testing.T, host *bmov1alpha1.BareMetalHost, pool, ip string) *capipamv1.IPAddressClaim {
	t.Helper()
	ctx := context.Background()
	name := host.Name + "-" + pool
	poolRef := capipamv1.IPPoolReference{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: pool}
	address := &capipamv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: host.Namespace, Name: name},
		Spec: capipamv1.IPAddressSpec{Address: ip, Prefix: ptr.To[int32](64), PoolRef: poolRef,
			ClaimRef: capipamv1.IPAddressClaimReference{Name: name}},
	}
	require.NoError(t, k8sClient.Create(ctx, address))
	claim := &capipamv1.IPAddressClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: host.Namespace, Name: name, OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(host)},
			Labels: map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
		},
		Spec: capipamv1.IPAddressClaimSpec{PoolRef: poolRef},
	}
	require.NoError(t, k8sClient.Create(ctx, claim))
	claim.Status.AddressRef = capipamv1.IPAddressReference{Name: address.Name}
	require.NoError(t, k8sClient.Status().Update(ctx, claim))
	return claim
}
