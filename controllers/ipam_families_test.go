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

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// ipamFamily is one family of IPAM a claim test runs for: Metal3 IPAM
// (IPPool and IPClaim, played by test/standins/ipamstandin) or Cluster API
// IPAM (the in-cluster provider's InClusterIPPool and IPAddressClaim, played
// by test/standins/capiipamstandin).
type ipamFamily struct {
	name string
	// pool hands out the addresses from start to end of one /24, with
	// gateway.
	pool func(ns, name, start, end, gateway string) client.Object
	// networkData takes the host's address and default gateway from pool.
	networkData func(pool string) *capm3.NetworkData
	// claim reads a claim as the family's IPAM left it.
	claim func(t require.TestingT, ns, name string) claimView
	// addresses are the addresses the family's IPAM gave in the namespace,
	// by the name of their object.
	addresses func(t require.TestingT, ns string) map[string]string
	// gone tells whether the claim, or an address object, is gone.
	claimGone, addressGone func(ns, name string) bool
	// poolName is how messages name a pool of the family.
	poolName func(pool string) string
}

// claimView is what a test needs of a claim of either family.
type claimView struct {
	// address names the claim's address object, once it has one.
	address string
	// refused is set once the IPAM refused the claim (an exhausted pool).
	refused bool
}

var metal3IPAM = ipamFamily{
	name: "Metal3 IPAM",
	pool: func(ns, name, start, end, gateway string) client.Object {
		return fixtures.Pool(ns, name, start, end, gateway)
	},
	networkData: fixtures.PoolNetworkData,
	claim: func(t require.TestingT, ns, name string) claimView {
		claim := claimOf(t, ns, name)
		view := claimView{refused: claim.Status.ErrorMessage != nil}
		if claim.Status.Address != nil {
			view.address = claim.Status.Address.Name
		}
		return view
	},
	addresses: func(t require.TestingT, ns string) map[string]string {
		list := &ipamv1.IPAddressList{}
		require.NoError(t, k8sClient.List(context.Background(), list, client.InNamespace(ns)))
		addresses := map[string]string{}
		for _, address := range list.Items {
			addresses[address.Name] = string(address.Spec.Address)
		}
		return addresses
	},
	claimGone:   func(ns, name string) bool { return isGone(ns, name, &ipamv1.IPClaim{}) },
	addressGone: func(ns, name string) bool { return isGone(ns, name, &ipamv1.IPAddress{}) },
	poolName:    func(pool string) string { return `IPPool "` + pool + `"` },
}

var clusterAPIIPAM = ipamFamily{
	name: "Cluster API IPAM",
	pool: func(ns, name, start, end, gateway string) client.Object {
		return fixtures.InClusterIPPool(ns, name, start+"-"+end, 24, gateway)
	},
	networkData: fixtures.ClusterAPIPoolNetworkData,
	// The in-cluster provider says nothing on a claim it cannot serve: its
	// pool's status counts no free address.
	claim: func(t require.TestingT, ns, name string) claimView {
		claim := &capipamv1.IPAddressClaim{}
		require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, claim))
		view := claimView{address: claim.Status.AddressRef.Name}
		if view.address == "" {
			pool := &inclusterv1alpha2.InClusterIPPool{}
			require.NoError(t, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: claim.Spec.PoolRef.Name}, pool))
			view.refused = pool.Status.Addresses != nil && pool.Status.Addresses.Free <= 0
		}
		return view
	},
	addresses: func(t require.TestingT, ns string) map[string]string {
		list := &capipamv1.IPAddressList{}
		require.NoError(t, k8sClient.List(context.Background(), list, client.InNamespace(ns)))
		addresses := map[string]string{}
		for _, address := range list.Items {
			addresses[address.Name] = address.Spec.Address
		}
		return addresses
	},
	claimGone:   func(ns, name string) bool { return isGone(ns, name, &capipamv1.IPAddressClaim{}) },
	addressGone: func(ns, name string) bool { return isGone(ns, name, &capipamv1.IPAddress{}) },
	poolName:    func(pool string) string { return `InClusterIPPool "` + pool + `"` },
}

// ipamFamilies are the families every claim test runs for, each as a
// subtest in its own namespace.
var ipamFamilies = []ipamFamily{metal3IPAM, clusterAPIIPAM}

func isGone(ns, name string, obj client.Object) bool {
	return apierrors.IsNotFound(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj))
}
