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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	clusterutil "sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// errNoAddressAvailable is the provider's error for a pool with no free
// address (poolutil.FindFreeAddress).
var errNoAddressAvailable = errors.New("no address available")

// ClaimReconciler serves the IPAddressClaims of InClusterIPPools.
type ClaimReconciler struct {
	Client client.Client
	// ReadyCondition: see Options.
	ReadyCondition bool
}

// SetupWithManager registers the claim controller with the provider's
// watches: claims of InClusterIPPools, Clusters that stop being paused,
// pools that appear, go, stop being paused or get a free address again, and the
// claims' IPAddresses; objects with the paused annotation are ignored.
func (r *ClaimReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("capi-ipam-standin-claims").
		WithEventFilter(predicates.ResourceNotPaused(mgr.GetScheme(), mgr.GetLogger())).
		For(&ipamv1.IPAddressClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			claim, ok := obj.(*ipamv1.IPAddressClaim)
			return ok && isInClusterPool(claim.Spec.PoolRef)
		}))).
		// One claim at a time, so two never get the same address.
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToClaims),
			builder.WithPredicates(clusterUnpaused())).
		Watches(&inclusterv1alpha2.InClusterIPPool{}, handler.EnqueueRequestsFromMapFunc(r.poolToClaims),
			builder.WithPredicates(poolChanged())).
		Owns(&ipamv1.IPAddress{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			address, ok := obj.(*ipamv1.IPAddress)
			return ok && isInClusterPool(address.Spec.PoolRef)
		}))).
		Complete(r)
}

// Reconcile serves or releases one claim (ipamutil.ClaimReconciler.Reconcile).
func (r *ClaimReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	claim := &ipamv1.IPAddressClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, claim); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// A Cluster's event brings back the claims of other providers too.
	if !isInClusterPool(claim.Spec.PoolRef) {
		return ctrl.Result{}, nil
	}
	if skip, err := r.clusterHoldsClaim(ctx, claim); skip || err != nil {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(claim, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	if controllerutil.AddFinalizer(claim, ReleaseAddressFinalizer) {
		return ctrl.Result{}, patchIfExists(ctx, helper, claim)
	}
	deleting := !claim.DeletionTimestamp.IsZero()
	pool := &inclusterv1alpha2.InClusterIPPool{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Spec.PoolRef.Name}, pool)
	switch {
	case apierrors.IsNotFound(err) && deleting:
		return ctrl.Result{}, r.release(ctx, helper, claim)
	case apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).Info("the referenced pool could not be found", "pool", claim.Spec.PoolRef.Name)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("failed to fetch pool: %w", err)
	case annotations.HasPaused(pool):
		return ctrl.Result{}, nil
	case deleting:
		return ctrl.Result{}, r.release(ctx, helper, claim)
	}
	serveErr := r.serve(ctx, claim, pool)
	return ctrl.Result{}, errors.Join(serveErr, patchIfExists(ctx, helper, claim))
}

// clusterHoldsClaim says whether the claim's Cluster keeps it from being
// served: paused, or not found while the claim is not being deleted.
func (r *ClaimReconciler) clusterHoldsClaim(ctx context.Context, claim *ipamv1.IPAddressClaim) (bool, error) {
	var cluster *clusterv1.Cluster
	var err error
	switch {
	case claim.Spec.ClusterName != "":
		cluster, err = clusterutil.GetClusterByName(ctx, r.Client, claim.Namespace, claim.Spec.ClusterName)
	case claim.Labels[clusterv1.ClusterNameLabel] != "":
		cluster, err = clusterutil.GetClusterFromMetadata(ctx, r.Client, claim.ObjectMeta)
	default:
		return false, nil
	}
	if apierrors.IsNotFound(err) {
		return claim.DeletionTimestamp.IsZero(), nil
	}
	if err != nil {
		return true, err
	}
	return annotations.IsPaused(cluster, cluster), nil
}

// serve creates or completes the claim's IPAddress and sets the claim's
// status.addressRef.
func (r *ClaimReconciler) serve(ctx context.Context, claim *ipamv1.IPAddressClaim, pool *inclusterv1alpha2.InClusterIPPool) error {
	address, err := r.ensureAddress(ctx, claim, pool)
	if errors.Is(err, errNoAddressAvailable) {
		r.setReady(claim, metav1.ConditionFalse, ipamv1.IPAddressClaimReadyPoolExhaustedReason,
			fmt.Sprintf("InClusterIPPool %s has no free address", pool.Name))
	}
	if err != nil {
		return fmt.Errorf("failed to create or patch address: %w", err)
	}
	// The next claim must see this address in the cache, or it may get the
	// same one.
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		getErr := r.Client.Get(ctx, client.ObjectKeyFromObject(address), &ipamv1.IPAddress{})
		return getErr == nil, client.IgnoreNotFound(getErr)
	})
	if err != nil {
		return fmt.Errorf("failed waiting for IPAddress %s/%s to be visible in the cache after create: %w", address.Namespace, address.Name, err)
	}
	claim.Status.AddressRef = ipamv1.IPAddressReference{Name: address.Name}
	r.setReady(claim, metav1.ConditionTrue, clusterv1.ReadyReason, "")
	return nil
}

// ensureAddress creates the claim's IPAddress with a free address of the
// pool, or brings an existing one's owners, label and finalizer up to date.
func (r *ClaimReconciler) ensureAddress(ctx context.Context, claim *ipamv1.IPAddressClaim, pool *inclusterv1alpha2.InClusterIPPool) (*ipamv1.IPAddress, error) {
	address := &ipamv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: claim.Name},
		Spec: ipamv1.IPAddressSpec{
			ClaimRef: ipamv1.IPAddressClaimReference{Name: claim.Name},
			PoolRef:  inClusterPoolRef(pool.Name),
		},
	}
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, address, func() error {
		if err := r.allocate(ctx, address, pool); err != nil {
			return err
		}
		if err := controllerutil.SetControllerReference(claim, address, r.Client.Scheme()); err != nil {
			if !errors.As(err, new(*controllerutil.AlreadyOwnedError)) {
				return err
			}
		}
		if err := controllerutil.SetOwnerReference(pool, address, r.Client.Scheme()); err != nil {
			return err
		}
		for i, owner := range address.OwnerReferences {
			if owner.Kind == inclusterv1alpha2.InClusterIPPoolKind && owner.Name == pool.Name {
				address.OwnerReferences[i].Controller = ptr.To(false)
				address.OwnerReferences[i].BlockOwnerDeletion = ptr.To(true)
			}
		}
		if cluster, ok := claim.Labels[clusterv1.ClusterNameLabel]; ok {
			metav1.SetMetaDataLabel(&address.ObjectMeta, clusterv1.ClusterNameLabel, cluster)
		}
		controllerutil.AddFinalizer(address, ProtectAddressFinalizer)
		return nil
	})
	return address, err
}

// allocate gives the address, unless the pool's addresses already hold it,
// the lowest free address of the pool with the pool's prefix and gateway
// (IPAddressClaimHandler.EnsureAddress).
func (r *ClaimReconciler) allocate(ctx context.Context, address *ipamv1.IPAddress, pool *inclusterv1alpha2.InClusterIPPool) error {
	inUse, err := addressesOf(ctx, r.Client, pool.Namespace, pool.Name)
	if err != nil {
		return fmt.Errorf("failed to list addresses: %w", err)
	}
	used := map[netip.Addr]bool{}
	for _, existing := range inUse {
		if existing.Name == address.Name {
			return nil
		}
		if addr, parseErr := netip.ParseAddr(existing.Spec.Address); parseErr == nil {
			used[addr] = true
		}
	}
	available, err := poolAddresses(&pool.Spec)
	if err != nil {
		return fmt.Errorf("failed to convert pool to range: %w", err)
	}
	free, found := available.lowestFree(used)
	if !found {
		return fmt.Errorf("failed to find free address: %w", errNoAddressAvailable)
	}
	address.Spec.Address = free.String()
	address.Spec.Gateway = pool.Spec.Gateway
	address.Spec.Prefix = ptr.To(int32(pool.Spec.Prefix))
	return nil
}

// release deletes the claim's IPAddress, once its finalizer is removed,
// then removes the claim's finalizer (ClaimReconciler.reconcileDelete).
func (r *ClaimReconciler) release(ctx context.Context, helper *patch.Helper, claim *ipamv1.IPAddressClaim) error {
	address := &ipamv1.IPAddress{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Name}, address)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to fetch address: %w", err)
	}
	if err == nil {
		base := address.DeepCopy()
		if controllerutil.RemoveFinalizer(address, ProtectAddressFinalizer) {
			if err := client.IgnoreNotFound(r.Client.Patch(ctx, address, client.MergeFrom(base))); err != nil {
				return fmt.Errorf("failed to remove address finalizer: %w", err)
			}
		}
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, address)); err != nil {
			return err
		}
	}
	controllerutil.RemoveFinalizer(claim, ReleaseAddressFinalizer)
	return patchIfExists(ctx, helper, claim)
}

// setReady sets Cluster API's Ready condition when Options.ReadyCondition
// asks for it.
func (r *ClaimReconciler) setReady(claim *ipamv1.IPAddressClaim, status metav1.ConditionStatus, reason, message string) {
	if !r.ReadyCondition {
		return
	}
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{
		Type: ipamv1.IPAddressClaimReadyCondition, Status: status, Reason: reason, Message: message,
		ObservedGeneration: claim.Generation,
	})
}

func (r *ClaimReconciler) clusterToClaims(ctx context.Context, cluster client.Object) []reconcile.Request {
	claims := &ipamv1.IPAddressClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(cluster.GetNamespace()), client.MatchingFields{claimClusterField: cluster.GetName()}); err != nil {
		return nil
	}
	return claimRequests(claims.Items)
}

func (r *ClaimReconciler) poolToClaims(ctx context.Context, pool client.Object) []reconcile.Request {
	claims := &ipamv1.IPAddressClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(pool.GetNamespace()), client.MatchingFields{claimPoolField: poolKey(inClusterPoolRef(pool.GetName()))}); err != nil {
		return nil
	}
	return claimRequests(claims.Items)
}

func claimRequests(claims []ipamv1.IPAddressClaim) []reconcile.Request {
	requests := make([]reconcile.Request, 0, len(claims))
	for _, claim := range claims {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claim)})
	}
	return requests
}

// clusterUnpaused passes Clusters that appear or go unpaused, and deleted
// ones that were not paused.
func clusterUnpaused() predicate.Funcs {
	paused := func(obj client.Object) bool {
		cluster, ok := obj.(*clusterv1.Cluster)
		return ok && annotations.IsPaused(cluster, cluster)
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return !paused(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return paused(e.ObjectOld) && !paused(e.ObjectNew) },
		DeleteFunc: func(e event.DeleteEvent) bool { return !paused(e.Object) },
	}
}

// poolChanged passes a pool's creation and deletion, and updates that
// remove the paused annotation or take its status from no free address to
// some (the provider's resourceTransitionedToUnpaused or poolNoLongerEmpty).
func poolChanged() predicate.Funcs {
	free := func(obj client.Object) (int, bool) {
		pool, ok := obj.(*inclusterv1alpha2.InClusterIPPool)
		if !ok || pool.Status.Addresses == nil {
			return 0, false
		}
		return pool.Status.Addresses.Free, true
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if annotations.HasPaused(e.ObjectOld) && !annotations.HasPaused(e.ObjectNew) {
				return true
			}
			before, okBefore := free(e.ObjectOld)
			after, okAfter := free(e.ObjectNew)
			return okBefore && okAfter && before == 0 && after > 0
		},
	}
}
