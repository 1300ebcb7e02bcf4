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

// Package ipamstandin plays the Metal3 IPAM controller (ip-address-manager)
// in tests and in the local demo, where the real one cannot run. It follows
// the upstream contract (IPAM's ipam/ippool_manager.go) and nothing more,
// its races included:
//
//   - it serves the IPClaims of a pool's namespace whose spec.pool.name names
//     the pool, and only pools whose spec.clusterName is unset or names a
//     Cluster that exists;
//   - it drops the events of objects paused with cluster.x-k8s.io/paused, a
//     paused pool's growth included (its event filter, CAPI's
//     ResourceNotPaused); the update that ends the pause brings the pool
//     back. A paused pool whose Cluster exists, or whose Cluster is paused,
//     is not served, and looked at again 30 s later (IPPoolReconciler's
//     IsPaused); a paused pool without a clusterName is served when a
//     claim's event brings it, as IPAM's Reconcile checks the pause only
//     with a Cluster;
//   - what a pool has given is read from the IPAddress objects in its cache
//     (getIndexes), Metal3's and Cluster API's whose spec.poolRef.name is
//     the pool's name, whatever its kind: each address is allocated to the
//     claim name in its spec.claim (spec.claimRef), whether or not that
//     claim still exists, and a claim whose
//     name already has an address gets that address, object and all, without
//     a new one (createAddress);
//   - for a claim with neither status.address nor status.errorMessage it
//     takes the pool's preAllocations entry for the claim's name or else the
//     first free address of spec.pools, creates the IPAddress
//     "<namePrefix>-<ip, dots and colons as dashes>" (finalizer
//     ipaddress.ipam.metal3.io, owner references to the pool and the claim,
//     the claim's labels, address, prefix, gateway and DNS servers from the
//     pool entry or the pool), and only then writes the claim's finalizer
//     ipclaim.ipam.metal3.io and status.address, as IPAM's deferred patch
//     helper does. A claim deleted in between has no finalizer yet and is
//     gone: its IPAddress stays behind, owned by the pool, and keeps the
//     address for a claim of the same name;
//   - when no address is free it sets status.errorMessage "Exhausted IP Pools"
//     ("Pre-allocated IP out of bond" for a pre-allocation outside the pool)
//     and never looks at that claim again;
//   - when a claim is deleted (and IPAM's finalizer is its last) it deletes
//     the IPAddress its cached allocations name, then removes the claim's
//     finalizer (deleteAddress). An address the cache has not seen yet is not
//     deleted and stays behind too;
//   - it records allocations in the pool's status, even when serving a claim
//     failed.
package ipamstandin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/predicates"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// IPAM's status.errorMessage values.
const (
	// ExhaustedMessage: the pool has no free address.
	ExhaustedMessage = "Exhausted IP Pools"
	// PreAllocationOutOfPoolMessage: the claim's pre-allocated address is in
	// none of the pool's ranges (IPAM's wording).
	PreAllocationOutOfPoolMessage = "Pre-allocated IP out of bond"
)

// Reconciler allocates addresses for the claims of a pool.
type Reconciler struct {
	Client client.Client
}

// SetupWithManager registers the stand-in; the manager's scheme must hold the
// IPAM types and CAPI's Cluster. Like IPAM, it watches pools and claims, not
// addresses.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("ipam-standin").
		For(&ipamv1.IPPool{}).
		Watches(&ipamv1.IPClaim{}, handler.EnqueueRequestsFromMapFunc(claimToPool)).
		WithEventFilter(predicates.ResourceNotPaused(mgr.GetScheme(), mgr.GetLogger())).
		Complete(r)
}

// pausedRequeue is how soon IPAM looks again at a paused pool of a Cluster
// (its requeueAfter).
const pausedRequeue = 30 * time.Second

func claimToPool(_ context.Context, obj client.Object) []reconcile.Request {
	claim, ok := obj.(*ipamv1.IPClaim)
	if !ok || claim.Spec.Pool.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: claim.Namespace, Name: claim.Spec.Pool.Name}}}
}

// poolIndex is what a pool has given, read from its IPAddress objects.
type poolIndex struct {
	// allocations maps claim names to their address.
	allocations map[string]ipamv1.IPAddressStr
	// used holds the canonical form of every address given or pre-allocated.
	used map[string]bool
}

// Reconcile serves every pending or deleted claim of one pool.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &ipamv1.IPPool{}
	if err := r.Client.Get(ctx, req.NamespacedName, pool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster, served, err := r.cluster(ctx, pool)
	if err != nil || !served {
		return ctrl.Result{}, err
	}
	if cluster != nil && (ptr.Deref(cluster.Spec.Paused, false) || annotations.HasPaused(pool)) {
		return ctrl.Result{RequeueAfter: pausedRequeue}, nil
	}
	index, err := r.index(ctx, pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	claims := &ipamv1.IPClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(pool.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	var serveErr error
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.Spec.Pool.Name != pool.Name {
			continue
		}
		deleting := !claim.DeletionTimestamp.IsZero()
		if !deleting && (claim.Status.Address != nil || claim.Status.ErrorMessage != nil) {
			continue
		}
		if deleting {
			serveErr = r.release(ctx, pool, claim, index)
		} else {
			serveErr = r.serve(ctx, pool, claim, index)
		}
		if serveErr != nil {
			break
		}
	}
	// IPAM patches the pool's status on its way out, error or not.
	return ctrl.Result{}, errors.Join(serveErr, r.recordAllocations(ctx, pool, index.allocations))
}

// index reads the pool's IPAddress objects from the cache.
func (r *Reconciler) index(ctx context.Context, pool *ipamv1.IPPool) (*poolIndex, error) {
	addresses := &ipamv1.IPAddressList{}
	if err := r.Client.List(ctx, addresses, client.InNamespace(pool.Namespace)); err != nil {
		return nil, err
	}
	index := &poolIndex{allocations: map[string]ipamv1.IPAddressStr{}, used: map[string]bool{}}
	for _, preAllocated := range pool.Spec.PreAllocations {
		index.used[canonical(preAllocated)] = true
	}
	for _, address := range addresses.Items {
		if address.Spec.Pool.Name == pool.Name {
			index.used[canonical(address.Spec.Address)] = true
			index.allocations[address.Spec.Claim.Name] = address.Spec.Address
		}
	}
	clusterAPIAddresses := &capipamv1.IPAddressList{}
	if err := r.Client.List(ctx, clusterAPIAddresses, client.InNamespace(pool.Namespace)); err != nil {
		return nil, err
	}
	for _, address := range clusterAPIAddresses.Items {
		if address.Spec.PoolRef.Name == pool.Name {
			ip := ipamv1.IPAddressStr(address.Spec.Address)
			index.used[canonical(ip)] = true
			index.allocations[address.Spec.ClaimRef.Name] = ip
		}
	}
	return index, nil
}

// cluster reads the pool's Cluster, if it names one, and tells whether the
// pool is served: without a clusterName, or once its Cluster exists.
func (r *Reconciler) cluster(ctx context.Context, pool *ipamv1.IPPool) (*clusterv1.Cluster, bool, error) {
	if pool.Spec.ClusterName == nil || *pool.Spec.ClusterName == "" {
		return nil, true, nil
	}
	cluster := &clusterv1.Cluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: *pool.Spec.ClusterName}, cluster)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return cluster, err == nil, err
}

// serve gives a claim its address (IPAM's updateAddress and createAddress):
// the IPAddress is created first, and the claim's finalizer and status are
// written last, in one go, as IPAM's deferred patch helper writes them.
func (r *Reconciler) serve(ctx context.Context, pool *ipamv1.IPPool, claim *ipamv1.IPClaim, index *poolIndex) error {
	original := claim.DeepCopy()
	controllerutil.AddFinalizer(claim, ipamv1.IPClaimFinalizer)
	claim.Status.ErrorMessage = nil
	allocateErr := r.allocate(ctx, pool, claim, index)
	if err := r.patchClaim(ctx, original, claim); err != nil {
		return errors.Join(allocateErr, fmt.Errorf("failed to patch IPClaim %s: %w", claim.Name, err))
	}
	return allocateErr
}

// allocate sets the claim's status.address, creating its IPAddress unless
// the claim's name already has one, or its status.errorMessage.
func (r *Reconciler) allocate(ctx context.Context, pool *ipamv1.IPPool, claim *ipamv1.IPClaim, index *poolIndex) error {
	if ip, ok := index.allocations[claim.Name]; ok {
		claim.Status.Address = &corev1.ObjectReference{Name: addressName(pool, ip), Namespace: pool.Namespace}
		return nil
	}
	entry, ip, found := pick(pool, claim.Name, index.used)
	if !found {
		message := ExhaustedMessage
		if _, preAllocated := pool.Spec.PreAllocations[claim.Name]; preAllocated {
			message = PreAllocationOutOfPoolMessage
		}
		claim.Status.ErrorMessage = ptr.To(message)
		return nil
	}
	address := newAddress(pool, claim, entry, ip)
	if err := r.Client.Create(ctx, address); err != nil {
		// AlreadyExists included: IPAM requeues and looks again.
		return fmt.Errorf("creating IPAddress %s: %w", address.Name, err)
	}
	index.used[canonical(ip)] = true
	index.allocations[claim.Name] = ip
	claim.Status.Address = &corev1.ObjectReference{Name: address.Name, Namespace: pool.Namespace}
	return nil
}

// patchClaim writes the claim's metadata, then its status, as Cluster API's
// patch helper does.
func (r *Reconciler) patchClaim(ctx context.Context, original, claim *ipamv1.IPClaim) error {
	statusChange := claim.DeepCopy()
	claim.Status = original.Status
	if err := r.Client.Patch(ctx, claim, client.MergeFrom(original)); err != nil {
		return err
	}
	statusBase := claim.DeepCopy()
	claim.Status = statusChange.Status
	return r.Client.Status().Patch(ctx, claim, client.MergeFrom(statusBase))
}

// pick returns the pool entry and address for a claim: its pre-allocation if
// the pool has one, else the first free address of the entries in order.
func pick(pool *ipamv1.IPPool, claimName string, used map[string]bool) (ipamv1.Pool, ipamv1.IPAddressStr, bool) {
	preAllocated, hasPreAllocation := pool.Spec.PreAllocations[claimName]
	for _, entry := range pool.Spec.Pools {
		for index := 0; ; index++ {
			ip, err := ipamv1.GetIPAddress(entry, index)
			if err != nil {
				break
			}
			if hasPreAllocation {
				if canonical(ip) == canonical(preAllocated) {
					return entry, ip, true
				}
				continue
			}
			if !used[canonical(ip)] {
				return entry, ip, true
			}
		}
	}
	return ipamv1.Pool{}, "", false
}

func newAddress(pool *ipamv1.IPPool, claim *ipamv1.IPClaim, entry ipamv1.Pool, ip ipamv1.IPAddressStr) *ipamv1.IPAddress {
	prefix, gateway, dnsServers := pool.Spec.Prefix, pool.Spec.Gateway, pool.Spec.DNSServers
	if entry.Prefix != 0 {
		prefix = entry.Prefix
	}
	if entry.Gateway != nil {
		gateway = entry.Gateway
	}
	if len(entry.DNSServers) != 0 {
		dnsServers = entry.DNSServers
	}
	return &ipamv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{
			Name:       addressName(pool, ip),
			Namespace:  pool.Namespace,
			Finalizers: []string{ipamv1.IPAddressFinalizer},
			Labels:     claim.Labels,
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: ipamv1.GroupVersion.String(), Kind: "IPPool", Name: pool.Name, UID: pool.UID},
				{APIVersion: ipamv1.GroupVersion.String(), Kind: "IPClaim", Name: claim.Name, UID: claim.UID},
			},
		},
		Spec: ipamv1.IPAddressSpec{
			Address:    ip,
			Pool:       corev1.ObjectReference{Name: pool.Name, Namespace: pool.Namespace},
			Claim:      corev1.ObjectReference{Name: claim.Name, Namespace: pool.Namespace},
			Prefix:     prefix,
			Gateway:    gateway,
			DNSServers: dnsServers,
		},
	}
}

// release lets a deleted claim go once IPAM's finalizer is its last (IPAM's
// deleteAddress): it deletes the IPAddress its cached allocations name, if
// the cache has it, then removes the claim's finalizer.
func (r *Reconciler) release(ctx context.Context, pool *ipamv1.IPPool, claim *ipamv1.IPClaim, index *poolIndex) error {
	if len(claim.Finalizers) > 1 || (len(claim.Finalizers) == 1 && claim.Finalizers[0] != ipamv1.IPClaimFinalizer) {
		return nil
	}
	ip, allocated := index.allocations[claim.Name]
	if allocated {
		address := &ipamv1.IPAddress{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: addressName(pool, ip)}, address)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			original := address.DeepCopy()
			controllerutil.RemoveFinalizer(address, ipamv1.IPAddressFinalizer)
			if err := client.IgnoreNotFound(r.Client.Patch(ctx, address, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{}))); err != nil {
				return err
			}
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, address)); err != nil {
				return err
			}
		}
	}
	original := claim.DeepCopy()
	claim.Status.Address = nil
	controllerutil.RemoveFinalizer(claim, ipamv1.IPClaimFinalizer)
	if err := client.IgnoreNotFound(r.Client.Patch(ctx, claim, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{}))); err != nil {
		return err
	}
	if allocated {
		if _, preAllocated := pool.Spec.PreAllocations[claim.Name]; !preAllocated {
			delete(index.used, canonical(ip))
		}
		delete(index.allocations, claim.Name)
	}
	return nil
}

func (r *Reconciler) recordAllocations(ctx context.Context, pool *ipamv1.IPPool, allocations map[string]ipamv1.IPAddressStr) error {
	if equalAllocations(pool.Status.Allocations, allocations) {
		return nil
	}
	original := pool.DeepCopy()
	pool.Status.Allocations = allocations
	now := metav1.Now()
	pool.Status.LastUpdated = &now
	return r.Client.Status().Patch(ctx, pool, client.MergeFrom(original))
}

func equalAllocations(a, b map[string]ipamv1.IPAddressStr) bool {
	if len(a) != len(b) {
		return false
	}
	for claim, ip := range a {
		if b[claim] != ip {
			return false
		}
	}
	return true
}

// addressName is IPAM's IPAddress name: the pool's namePrefix and the address
// with dots and colons turned into dashes.
func addressName(pool *ipamv1.IPPool, ip ipamv1.IPAddressStr) string {
	dashed := strings.NewReplacer(".", "-", ":", "-").Replace(string(ip))
	return strings.TrimRight(pool.Spec.NamePrefix+"-"+dashed, "-")
}

func canonical(ip ipamv1.IPAddressStr) string {
	if parsed := net.ParseIP(string(ip)); parsed != nil {
		return parsed.String()
	}
	return string(ip)
}
