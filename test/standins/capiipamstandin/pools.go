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

package capiipamstandin

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// PoolReconciler keeps an InClusterIPPool's finalizer and address counts
// (the provider's InClusterIPPoolReconciler).
type PoolReconciler struct {
	Client client.Client
}

// SetupWithManager registers the pool controller: pools and the IPAddresses
// that name them.
func (r *PoolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("capi-ipam-standin-pools").
		For(&inclusterv1alpha2.InClusterIPPool{}).
		Watches(&ipamv1.IPAddress{}, handler.EnqueueRequestsFromMapFunc(addressToPool)).
		Complete(r)
}

func addressToPool(_ context.Context, obj client.Object) []reconcile.Request {
	address, ok := obj.(*ipamv1.IPAddress)
	if !ok || !isInClusterPool(address.Spec.PoolRef) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: address.Namespace, Name: address.Spec.PoolRef.Name}}}
}

// Reconcile keeps the finalizer on a pool while an IPAddress of it exists,
// and counts its addresses (genericReconcile).
func (r *PoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &inclusterv1alpha2.InClusterIPPool{}
	if err := r.Client.Get(ctx, req.NamespacedName, pool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	helper, err := patch.NewHelper(pool, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	inUse, err := addressesOf(ctx, r.Client, pool.Namespace, pool.Name)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("failed to list addresses: %w", err)
	}
	controllerutil.AddFinalizer(pool, ProtectPoolFinalizer)
	var countErr error
	if pool.DeletionTimestamp.IsZero() {
		pool.Status.Addresses, countErr = countAddresses(pool, inUse)
	} else if len(inUse) == 0 {
		controllerutil.RemoveFinalizer(pool, ProtectPoolFinalizer)
	}
	return ctrl.Result{}, errors.Join(countErr, patchIfExists(ctx, helper, pool))
}

// countAddresses counts what a pool can give and what its IPAddresses hold;
// like the provider, free is what it can give less every IPAddress, those
// out of its range included.
func countAddresses(pool *inclusterv1alpha2.InClusterIPPool, inUse []ipamv1.IPAddress) (*inclusterv1alpha2.InClusterIPPoolStatusIPAddresses, error) {
	available, err := poolAddresses(&pool.Spec)
	if err != nil {
		return pool.Status.Addresses, fmt.Errorf("failed to build ip set from pool spec: %w", err)
	}
	outOfRange := addressSet{}
	for _, address := range inUse {
		if addr, err := netip.ParseAddr(address.Spec.Address); err == nil && !available.contains(addr) {
			outOfRange = outOfRange.add(addressRange{addr, addr})
		}
	}
	total := available.count()
	return &inclusterv1alpha2.InClusterIPPoolStatusIPAddresses{
		Total:      total,
		Used:       len(inUse),
		Free:       total - len(inUse),
		OutOfRange: outOfRange.count(),
	}, nil
}
