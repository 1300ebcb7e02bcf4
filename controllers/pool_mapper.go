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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// poolMapper maps pool events to the hosts that may be waiting on the pool.
type poolMapper struct {
	client client.Client
}

// forPool maps a pool's creation, deletion or spec change to the hosts of
// its namespace that are paused for us or that we set up: a host set up
// earlier whose template now names the pool waits on it too.
func (m *poolMapper) forPool(ctx context.Context, obj client.Object) []reconcile.Request {
	seen := map[types.NamespacedName]bool{}
	var requests []reconcile.Request
	for _, selection := range []client.ListOption{
		client.MatchingFields{index.HostPausedForUsField: "true"},
		client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
	} {
		hosts := &bmov1alpha1.BareMetalHostList{}
		if err := m.client.List(ctx, hosts, client.InNamespace(obj.GetNamespace()), selection); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the BareMetalHosts an IPPool can unblock")
			return nil
		}
		for i := range hosts.Items {
			request := requestFor(&hosts.Items[i])
			if !seen[request.NamespacedName] {
				seen[request.NamespacedName] = true
				requests = append(requests, request)
			}
		}
	}
	return requests
}

// forReleasedAddress maps a deleted IPAddress to the hosts whose claims on
// its pool failed: IPAM never looks at a failed claim again, and the freed
// address may be theirs once the claim is made anew.
func (m *poolMapper) forReleasedAddress(ctx context.Context, obj client.Object) []reconcile.Request {
	address, ok := obj.(*ipamv1.IPAddress)
	if !ok {
		return nil
	}
	return m.hostsWithFailedClaims(ctx, address.Namespace, address.Spec.Pool.Name)
}

// forReleasedPreAllocation maps a pool that dropped or moved a
// spec.preAllocations entry (the sweep removes those of deleted hosts) to
// the hosts whose claims on it failed: the address is free again.
func (m *poolMapper) forReleasedPreAllocation(ctx context.Context, obj client.Object) []reconcile.Request {
	return m.hostsWithFailedClaims(ctx, obj.GetNamespace(), obj.GetName())
}

func (m *poolMapper) hostsWithFailedClaims(ctx context.Context, namespace, pool string) []reconcile.Request {
	claims := &ipamv1.IPClaimList{}
	if err := m.client.List(ctx, claims, client.InNamespace(namespace), client.MatchingFields{index.FailedClaimPoolField: pool},
		client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the IPClaims a released address can unblock")
		return nil
	}
	var requests []reconcile.Request
	for i := range claims.Items {
		claim := &claims.Items[i]
		for _, host := range ownership.HostOwners(claim) {
			requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: claim.Namespace, Name: host}})
		}
	}
	return requests
}

// preAllocationReleased passes pool updates that drop or change a
// spec.preAllocations entry: IPAM counts every pre-allocated address as
// taken, so that frees one. poolAddressesChanged leaves these out: the
// backstop writes them for every host.
var preAllocationReleased = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldPool, okOld := e.ObjectOld.(*ipamv1.IPPool)
		newPool, okNew := e.ObjectNew.(*ipamv1.IPPool)
		if !okOld || !okNew {
			return false
		}
		for key, ip := range oldPool.Spec.PreAllocations {
			if newPool.Spec.PreAllocations[key] != ip {
				return true
			}
		}
		return false
	},
}

// addressDeleted passes only deletions: the one IPAddress event that frees
// an address.
var addressDeleted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
