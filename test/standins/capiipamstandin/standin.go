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

// Package capiipamstandin plays the Cluster API in-cluster IPAM provider
// (kubernetes-sigs/cluster-api-ipam-provider-in-cluster) in tests and in the
// local demo, for IPAddressClaims whose spec.poolRef names an
// InClusterIPPool (v1alpha2 holds a test copy of that pool's schema: the
// provider's module is not served here). It uses Cluster API's own
// IPAddressClaim and IPAddress (ipam.cluster.x-k8s.io/v1beta2) and follows
// the provider's code, and nothing more:
//
//   - it serves claims whose spec.poolRef is apiGroup ipam.cluster.x-k8s.io,
//     kind InClusterIPPool, from the pool of that name in the claim's
//     namespace, one claim at a time (InClusterProviderAdapter.SetupWithManager);
//     a claim of another provider that a Cluster's event brings back is left
//     alone (the provider would add its finalizer to it);
//   - it ignores the events of any object with the cluster.x-k8s.io/paused
//     annotation, skips a claim whose spec.clusterName (or
//     cluster.x-k8s.io/cluster-name label) names a paused Cluster or one that
//     does not exist (a deleted claim is released anyway), and skips claims
//     of a paused pool (ipamutil.ClaimReconciler.Reconcile);
//   - it first adds the finalizer ipam.cluster.x-k8s.io/ReleaseAddress to the
//     claim and stops there: the claim's update brings it back;
//   - a claim whose pool does not exist is left as it is, with no condition
//     and no address; the pool's creation brings it back;
//   - it gives the lowest address of spec.addresses that no IPAddress of the
//     pool holds, without spec.excludedAddresses, the gateway, and the
//     network address (and IPv4 broadcast address) of the prefix around the
//     pool's lowest address unless spec.allocateReservedIPAddresses
//     (IPAddressClaimHandler.EnsureAddress, poolutil.PoolSpecToIPSet and
//     FindFreeAddress);
//   - it creates the IPAddress named like the claim with spec.claimRef,
//     spec.poolRef, address, prefix and gateway, owned by the claim
//     (controller, blockOwnerDeletion) and the pool (blockOwnerDeletion),
//     the claim's cluster.x-k8s.io/cluster-name label and the finalizer
//     ipam.cluster.x-k8s.io/ProtectAddress; it waits until its cache sees the
//     address, then sets the claim's status.addressRef
//     (ipamutil.NewIPAddress, ensureIPAddressOwnerReferences);
//   - when the pool has no free address the reconcile fails ("no address
//     available") and the claim keeps no addressRef and gets no condition:
//     the provider writes no condition on claims. Controller-runtime retries
//     it with its backoff, and the pool's status going from 0 free
//     addresses to some brings every claim of the pool back
//     (poolNoLongerEmpty). Options.ReadyCondition adds Cluster API's Ready
//     condition (True, or False with reason PoolExhausted), which the
//     contract defines and other providers may write;
//   - a deleted claim's IPAddress loses its finalizer and is deleted, then
//     the claim's finalizer is removed (ClaimReconciler.reconcileDelete);
//   - the pool's status.ipAddresses counts total, used, free and out of
//     range addresses, and the pool keeps the finalizer
//     ipam.cluster.x-k8s.io/ProtectPool while an IPAddress of it exists
//     (InClusterIPPoolReconciler, genericReconcile).
package capiipamstandin

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// The provider's finalizers.
const (
	// ReleaseAddressFinalizer holds a claim until its address is released.
	ReleaseAddressFinalizer = "ipam.cluster.x-k8s.io/ReleaseAddress"
	// ProtectAddressFinalizer holds an IPAddress until its claim releases it.
	ProtectAddressFinalizer = "ipam.cluster.x-k8s.io/ProtectAddress"
	// ProtectPoolFinalizer holds a pool while an IPAddress of it exists.
	ProtectPoolFinalizer = "ipam.cluster.x-k8s.io/ProtectPool"
)

// Options change what the stand-in writes.
type Options struct {
	// ReadyCondition writes Cluster API's Ready condition on the claims it
	// serves, which the in-cluster provider does not.
	ReadyCondition bool
}

// AddToScheme adds what the stand-in reads and writes: Cluster API's
// IPAddressClaim, IPAddress and Cluster, and InClusterIPPool.
func AddToScheme(scheme *runtime.Scheme) error {
	return errors.NewAggregate([]error{
		ipamv1.AddToScheme(scheme),
		clusterv1.AddToScheme(scheme),
		inclusterv1alpha2.AddToScheme(scheme),
	})
}

// Setup registers the stand-in's indexes and its two controllers, claims and
// pools, as the provider's main.go does; the manager's scheme must hold
// what AddToScheme adds.
func Setup(ctx context.Context, mgr ctrl.Manager, options Options) error {
	if err := setupIndexes(ctx, mgr); err != nil {
		return err
	}
	claims := &ClaimReconciler{Client: mgr.GetClient(), ReadyCondition: options.ReadyCondition}
	if err := claims.SetupWithManager(mgr); err != nil {
		return err
	}
	return (&PoolReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
}

// The indexes the provider lists by (internal/index, ipamutil's clusterName).
const (
	addressPoolField  = "capiipamstandin.spec.poolRef"
	claimPoolField    = "capiipamstandin.spec.poolRef"
	claimClusterField = "capiipamstandin.clusterName"
)

func setupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	indexer := mgr.GetFieldIndexer()
	return errors.NewAggregate([]error{
		indexer.IndexField(ctx, &ipamv1.IPAddress{}, addressPoolField, func(obj client.Object) []string {
			if address, ok := obj.(*ipamv1.IPAddress); ok {
				return []string{poolKey(address.Spec.PoolRef)}
			}
			return nil
		}),
		indexer.IndexField(ctx, &ipamv1.IPAddressClaim{}, claimPoolField, func(obj client.Object) []string {
			if claim, ok := obj.(*ipamv1.IPAddressClaim); ok {
				return []string{poolKey(claim.Spec.PoolRef)}
			}
			return nil
		}),
		indexer.IndexField(ctx, &ipamv1.IPAddressClaim{}, claimClusterField, func(obj client.Object) []string {
			if claim, ok := obj.(*ipamv1.IPAddressClaim); ok && clusterName(claim) != "" {
				return []string{clusterName(claim)}
			}
			return nil
		}),
	})
}

// poolKey is a pool reference as the indexes hold it.
func poolKey(ref ipamv1.IPPoolReference) string {
	return ref.APIGroup + "/" + ref.Kind + "/" + ref.Name
}

// inClusterPoolRef references an InClusterIPPool.
func inClusterPoolRef(name string) ipamv1.IPPoolReference {
	return ipamv1.IPPoolReference{APIGroup: inclusterv1alpha2.GroupVersion.Group, Kind: inclusterv1alpha2.InClusterIPPoolKind, Name: name}
}

// isInClusterPool says whether ref names an InClusterIPPool.
func isInClusterPool(ref ipamv1.IPPoolReference) bool {
	return ref.APIGroup == inclusterv1alpha2.GroupVersion.Group && ref.Kind == inclusterv1alpha2.InClusterIPPoolKind
}

// clusterName is the Cluster a claim belongs to: spec.clusterName, or its
// cluster.x-k8s.io/cluster-name label.
func clusterName(claim *ipamv1.IPAddressClaim) string {
	if claim.Spec.ClusterName != "" {
		return claim.Spec.ClusterName
	}
	return claim.Labels[clusterv1.ClusterNameLabel]
}

// addressesOf lists the IPAddresses of a pool from the cache
// (poolutil.ListAddressesInUse).
func addressesOf(ctx context.Context, c client.Reader, namespace, pool string) ([]ipamv1.IPAddress, error) {
	addresses := &ipamv1.IPAddressList{}
	err := c.List(ctx, addresses, client.InNamespace(namespace), client.MatchingFields{addressPoolField: poolKey(inClusterPoolRef(pool))})
	return addresses.Items, err
}

// patchIfExists writes what changed of obj with Cluster API's patch helper,
// as the provider does (ipamutil.ClaimReconciler.Reconcile); an object gone
// once its last finalizer was removed is no error.
func patchIfExists(ctx context.Context, helper *patch.Helper, obj client.Object) error {
	// The helper returns an aggregate: filter it, errors.As sees no API status in it.
	if err := errors.FilterOut(helper.Patch(ctx, obj), apierrors.IsNotFound); err != nil {
		return fmt.Errorf("failed to patch %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
