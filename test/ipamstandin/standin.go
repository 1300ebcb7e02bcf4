// Package ipamstandin plays the Metal3 IPAM controller (ip-address-manager)
// in tests and in the local demo, where the real one cannot run. It follows
// the upstream contract and nothing more:
//
//   - it serves the IPClaims of a pool's namespace whose spec.pool.name names
//     the pool, and only pools whose spec.clusterName is unset or names a
//     Cluster that exists;
//   - for a claim with neither status.address nor status.errorMessage it adds
//     the finalizer ipclaim.ipam.metal3.io, takes the pool's preAllocations
//     entry for the claim's name or else the first free address of
//     spec.pools, creates the IPAddress "<namePrefix>-<ip, dots and colons
//     as dashes>" (finalizer ipaddress.ipam.metal3.io, owner references to the
//     pool and the claim, the claim's labels, address, prefix, gateway and DNS
//     servers from the pool entry or the pool) and sets status.address;
//   - when no address is free it sets status.errorMessage "Exhausted IP Pools"
//     ("Pre-allocated IP out of bond" for a pre-allocation outside the pool)
//     and never looks at that claim again;
//   - when a claim is deleted it deletes its IPAddress (the one its
//     status.address names, else those whose spec.claim names it, read past
//     the cache) and only then removes the claim's finalizer; it records
//     allocations in the pool's status.
package ipamstandin

import (
	"context"
	"fmt"
	"net"
	"strings"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
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
	// APIReader finds the address of a deleted claim past the cache, which
	// may not have seen the address or the claim's status.address yet.
	// SetupWithManager sets it to the manager's API reader when unset.
	APIReader client.Reader
}

// SetupWithManager registers the stand-in; the manager's scheme must hold the
// IPAM types and CAPI's Cluster.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("ipam-standin").
		For(&ipamv1.IPPool{}).
		Watches(&ipamv1.IPClaim{}, handler.EnqueueRequestsFromMapFunc(claimToPool)).
		Complete(r)
}

func claimToPool(_ context.Context, obj client.Object) []reconcile.Request {
	claim, ok := obj.(*ipamv1.IPClaim)
	if !ok || claim.Spec.Pool.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: claim.Namespace, Name: claim.Spec.Pool.Name}}}
}

// Reconcile serves every pending claim of one pool.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pool := &ipamv1.IPPool{}
	if err := r.Client.Get(ctx, req.NamespacedName, pool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if served, err := r.clusterExists(ctx, pool); err != nil || !served {
		return ctrl.Result{}, err
	}

	addresses := &ipamv1.IPAddressList{}
	if err := r.Client.List(ctx, addresses, client.InNamespace(pool.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	used := map[string]bool{}
	allocations := map[string]ipamv1.IPAddressStr{}
	for _, address := range addresses.Items {
		if address.Spec.Pool.Name == pool.Name {
			used[canonical(address.Spec.Address)] = true
			allocations[address.Spec.Claim.Name] = address.Spec.Address
		}
	}
	for _, preAllocated := range pool.Spec.PreAllocations {
		used[canonical(preAllocated)] = true
	}

	claims := &ipamv1.IPClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(pool.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.Spec.Pool.Name != pool.Name {
			continue
		}
		var err error
		switch {
		case !claim.DeletionTimestamp.IsZero():
			err = r.release(ctx, pool, claim, allocations)
		case claim.Status.Address == nil && claim.Status.ErrorMessage == nil:
			err = r.allocate(ctx, pool, claim, used, allocations)
		}
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.recordAllocations(ctx, pool, allocations)
}

func (r *Reconciler) clusterExists(ctx context.Context, pool *ipamv1.IPPool) (bool, error) {
	if pool.Spec.ClusterName == nil || *pool.Spec.ClusterName == "" {
		return true, nil
	}
	cluster := &clusterv1.Cluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: *pool.Spec.ClusterName}, cluster)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func (r *Reconciler) allocate(ctx context.Context, pool *ipamv1.IPPool, claim *ipamv1.IPClaim,
	used map[string]bool, allocations map[string]ipamv1.IPAddressStr,
) error {
	original := claim.DeepCopy()
	if controllerutil.AddFinalizer(claim, ipamv1.IPClaimFinalizer) {
		if err := r.Client.Patch(ctx, claim, client.MergeFrom(original)); err != nil {
			return err
		}
	}

	statusBase := claim.DeepCopy()
	if address, ok := allocations[claim.Name]; ok {
		claim.Status.Address = &corev1.ObjectReference{Name: addressName(pool, address), Namespace: pool.Namespace}
		return r.Client.Status().Patch(ctx, claim, client.MergeFrom(statusBase))
	}
	entry, ip, found := pick(pool, claim.Name, used)
	if !found {
		message := ExhaustedMessage
		if _, preAllocated := pool.Spec.PreAllocations[claim.Name]; preAllocated {
			message = PreAllocationOutOfPoolMessage
		}
		claim.Status.ErrorMessage = ptr.To(message)
		return r.Client.Status().Patch(ctx, claim, client.MergeFrom(statusBase))
	}

	address := newAddress(pool, claim, entry, ip)
	if err := r.Client.Create(ctx, address); err != nil {
		return fmt.Errorf("creating IPAddress %s: %w", address.Name, err)
	}
	used[canonical(ip)] = true
	allocations[claim.Name] = ip
	claim.Status.Address = &corev1.ObjectReference{Name: address.Name, Namespace: pool.Namespace}
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

// release deletes the address of a claim being deleted, once IPAM's finalizer
// is the only one left, and then lets the claim go.
func (r *Reconciler) release(ctx context.Context, pool *ipamv1.IPPool, claim *ipamv1.IPClaim,
	allocations map[string]ipamv1.IPAddressStr,
) error {
	if len(claim.Finalizers) != 1 || claim.Finalizers[0] != ipamv1.IPClaimFinalizer {
		return nil
	}
	addresses, err := r.addressesOf(ctx, pool, claim)
	if err != nil {
		return err
	}
	for i := range addresses {
		address := &addresses[i]
		original := address.DeepCopy()
		controllerutil.RemoveFinalizer(address, ipamv1.IPAddressFinalizer)
		if err := r.Client.Patch(ctx, address, client.MergeFrom(original)); client.IgnoreNotFound(err) != nil {
			return err
		}
		if err := r.Client.Delete(ctx, address); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	delete(allocations, claim.Name)
	original := claim.DeepCopy()
	controllerutil.RemoveFinalizer(claim, ipamv1.IPClaimFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, claim, client.MergeFrom(original)))
}

// addressesOf reads past the cache the IPAddresses of a claim: the one its
// status.address names, else those of the pool whose spec.claim names it. The
// cache may not have seen a new address, nor the claim's status.address.
func (r *Reconciler) addressesOf(ctx context.Context, pool *ipamv1.IPPool, claim *ipamv1.IPClaim) ([]ipamv1.IPAddress, error) {
	if claim.Status.Address != nil && claim.Status.Address.Name != "" {
		address := ipamv1.IPAddress{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.Address.Name}, &address)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []ipamv1.IPAddress{address}, nil
	}
	list := &ipamv1.IPAddressList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(claim.Namespace)); err != nil {
		return nil, err
	}
	var addresses []ipamv1.IPAddress
	for _, address := range list.Items {
		if address.Spec.Claim.Name == claim.Name && address.Spec.Pool.Name == pool.Name {
			addresses = append(addresses, address)
		}
	}
	return addresses, nil
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
