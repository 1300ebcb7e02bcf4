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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// poolMapper maps pool events to the hosts that may be waiting on the pool.
type poolMapper struct {
	client client.Client
	// claims tells which failed claims have their turn to be made again.
	claims *ipam.Claims
}

// forPool maps a pool's creation or deletion to the hosts of its namespace
// that are paused for us, that we set up (a host set up earlier whose
// template now names the pool waits on it too), that an adopting template
// selects (they are neither), and to the hosts whose failed claims on it
// have their turn.
func (m *poolMapper) forPool(ctx context.Context, obj client.Object) []reconcile.Request {
	requests := hostRequests{}
	if !m.addHosts(ctx, requests, obj.GetNamespace(), client.MatchingFields{index.HostPausedForUsField: "true"}) ||
		!m.addHosts(ctx, requests, obj.GetNamespace(), client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}) {
		return nil
	}
	return m.addWaiting(ctx, requests, obj).list()
}

// forPoolEdit maps a change of the addresses a pool can give, or the end of
// its pause, to the hosts that may wait on it: those paused for us, those an
// adopting template selects, those whose claims on it have no address, and
// those whose failed claims on it have their turn. A host whose claim on
// the pool has its address reads nothing else of the pool: waking every
// host we set up made one pool edit cost a reconcile per host of the
// namespace.
func (m *poolMapper) forPoolEdit(ctx context.Context, obj client.Object) []reconcile.Request {
	requests := hostRequests{}
	if !m.addHosts(ctx, requests, obj.GetNamespace(), client.MatchingFields{index.HostPausedForUsField: "true"}) {
		return nil
	}
	claims := &ipamv1.IPClaimList{}
	if err := m.client.List(ctx, claims, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the IPClaims waiting on an IPPool")
		return nil
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.Spec.Pool.Name != obj.GetName() || claim.Status.Address != nil {
			continue
		}
		for _, host := range ownership.HostOwners(claim) {
			requests.add(types.NamespacedName{Namespace: claim.Namespace, Name: host})
		}
	}
	return m.addWaiting(ctx, requests, obj).list()
}

// hostRequests are the hosts a pool event wakes, each once.
type hostRequests map[types.NamespacedName]bool

func (r hostRequests) add(host types.NamespacedName) { r[host] = true }

func (r hostRequests) list() []reconcile.Request {
	requests := make([]reconcile.Request, 0, len(r))
	for host := range r {
		requests = append(requests, reconcile.Request{NamespacedName: host})
	}
	return requests
}

// addHosts adds the namespace's hosts the selection lists; false when they
// cannot be listed.
func (m *poolMapper) addHosts(ctx context.Context, requests hostRequests, namespace string, selection client.ListOption) bool {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := m.client.List(ctx, hosts, client.InNamespace(namespace), selection, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the BareMetalHosts an IPPool can unblock")
		return false
	}
	for i := range hosts.Items {
		requests.add(client.ObjectKeyFromObject(&hosts.Items[i]))
	}
	return true
}

// addWaiting adds the hosts adopting templates select and those whose
// failed claims on the pool have their turn.
func (m *poolMapper) addWaiting(ctx context.Context, requests hostRequests, pool client.Object) hostRequests {
	for _, host := range m.hostsOfAdoptingTemplates(ctx, pool.GetNamespace()) {
		requests.add(host)
	}
	for _, request := range m.hostsToRetry(ctx, pool.GetNamespace(), pool.GetName()) {
		requests.add(request.NamespacedName)
	}
	return requests
}

// hostsOfAdoptingTemplates are the hosts that the namespace's templates
// adopting existing hosts select: such a host is neither paused for us nor
// labelled until it is set up.
func (m *poolMapper) hostsOfAdoptingTemplates(ctx context.Context, namespace string) []types.NamespacedName {
	templates := &preprovv1.Metal3PreprovisioningTemplateList{}
	if err := m.client.List(ctx, templates, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the templates whose adopted hosts an IPPool can unblock")
		return nil
	}
	var hosts []types.NamespacedName
	for i := range templates.Items {
		if !templates.Items[i].Spec.AdoptExistingHosts {
			continue
		}
		selector, err := template.HostSelector(templates.Items[i].Spec.HostSelector)
		if err != nil {
			continue
		}
		selected := &bmov1alpha1.BareMetalHostList{}
		if err := m.client.List(ctx, selected, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the BareMetalHosts an adopting template selects")
			return hosts
		}
		for j := range selected.Items {
			hosts = append(hosts, client.ObjectKeyFromObject(&selected.Items[j]))
		}
	}
	return hosts
}

// forReleasedAddress maps a deleted IPAddress to the hosts whose claims on
// its pool failed and have their turn: IPAM never looks at a failed claim
// again, and the freed address may be theirs once the claim is made anew.
func (m *poolMapper) forReleasedAddress(ctx context.Context, obj client.Object) []reconcile.Request {
	address, ok := obj.(*ipamv1.IPAddress)
	if !ok {
		return nil
	}
	return m.hostsToRetry(ctx, address.Namespace, address.Spec.Pool.Name)
}

// forReleasedClusterAPIAddress maps a deleted Cluster API IPAddress to the
// hosts whose claims on the Metal3 IPPool of its pool's name failed and
// have their turn: Metal3 IPAM counts such an address as taken in that pool
// (getIndexes compares the pool's name only).
func (m *poolMapper) forReleasedClusterAPIAddress(ctx context.Context, obj client.Object) []reconcile.Request {
	address, ok := obj.(*capipamv1.IPAddress)
	if !ok || address.Spec.PoolRef.Name == "" {
		return nil
	}
	return m.hostsToRetry(ctx, address.Namespace, address.Spec.PoolRef.Name)
}

// forReleasedPreAllocation maps a pool that dropped or moved a
// spec.preAllocations entry (the sweep removes those of deleted hosts) to
// the hosts whose claims on it failed and have their turn: the address is
// free again.
func (m *poolMapper) forReleasedPreAllocation(ctx context.Context, obj client.Object) []reconcile.Request {
	return m.hostsToRetry(ctx, obj.GetNamespace(), obj.GetName())
}

// sweepHostsOfRecordedEntries sends the hosts of the spec.preAllocations
// entries a pool update added or changed, if the cache no longer has them,
// to their reconcile, which sweeps a host that is gone: the backstop's
// write (ipam.Preallocations) may land after the host's own sweep read the
// pool, and nothing else would remove the entry until the next start-up.
// A spec write bumps the pool's generation; IPAM's status writes, one per
// allocation, are passed over without reading the entries.
func (m *poolMapper) sweepHostsOfRecordedEntries() handler.EventHandler {
	return handler.Funcs{UpdateFunc: func(ctx context.Context, e event.UpdateEvent, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		oldPool, okOld := e.ObjectOld.(*ipamv1.IPPool)
		newPool, okNew := e.ObjectNew.(*ipamv1.IPPool)
		if !okOld || !okNew || oldPool.Generation == newPool.Generation {
			return
		}
		for key, ip := range newPool.Spec.PreAllocations {
			hostName, named := strings.CutSuffix(key, "-"+newPool.Name)
			if !named || oldPool.Spec.PreAllocations[key] == ip {
				continue
			}
			host := types.NamespacedName{Namespace: newPool.Namespace, Name: hostName}
			err := m.client.Get(ctx, host, &bmov1alpha1.BareMetalHost{})
			switch {
			case apierrors.IsNotFound(err):
				queue.Add(reconcile.Request{NamespacedName: host})
			case err != nil:
				ctrl.LoggerFrom(ctx).Error(err, "Reading the BareMetalHost of a spec.preAllocations entry", "pool", newPool.Name, "entry", key)
			}
		}
	}}
}

// forSettledClaim maps a claim IPAM stopped having to serve without giving
// it an address (it failed, or was deleted unserved) and a failed claim
// deleted to the hosts whose failed claims on its pool now have their turn:
// IPAM serves unserved claims first, so such a claim held a turn back, and a
// failed claim deleted (retried, or given up by its host) may have had one.
func (m *poolMapper) forSettledClaim(ctx context.Context, obj client.Object) []reconcile.Request {
	claim, ok := obj.(*ipamv1.IPClaim)
	if !ok || claim.Spec.Pool.Name == "" {
		return nil
	}
	return m.hostsToRetry(ctx, claim.Namespace, claim.Spec.Pool.Name)
}

// hostsToRetry are the hosts whose failed claims on the pool have their
// turn to be made again (ipam.Claims.HostsToRetry): one freed address
// wakes one of them, not all.
func (m *poolMapper) hostsToRetry(ctx context.Context, namespace, pool string) []reconcile.Request {
	hosts, err := m.claims.HostsToRetry(ctx, namespace, pool)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Finding the failed IPClaims a released address can unblock", "pool", pool)
		return nil
	}
	requests := make([]reconcile.Request, 0, len(hosts))
	for _, host := range hosts {
		requests = append(requests, reconcile.Request{NamespacedName: host})
	}
	return requests
}

// unservedClaimSettled passes a claim that IPAM stopped having to serve
// without an address, an update that sets status.errorMessage, and the
// deletion of a claim without an address (unserved or failed).
var unservedClaimSettled = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldClaim, okOld := e.ObjectOld.(*ipamv1.IPClaim)
		newClaim, okNew := e.ObjectNew.(*ipamv1.IPClaim)
		return okOld && okNew && unserved(oldClaim) && newClaim.Status.ErrorMessage != nil
	},
	DeleteFunc: func(e event.DeleteEvent) bool {
		claim, ok := e.Object.(*ipamv1.IPClaim)
		return ok && claim.Status.Address == nil
	},
}

func unserved(claim *ipamv1.IPClaim) bool {
	return claim.Status.Address == nil && claim.Status.ErrorMessage == nil
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

// addressDeleted passes only deletions: the one IPAddress event (Metal3's
// or Cluster API's) that frees an address.
var addressDeleted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
