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

package ipam

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// Sweeper releases what deleted hosts left behind: our claims (IPClaims and
// IPAddressClaims) whose owners are all gone, the IPAddresses IPAM left behind such claims, and our
// spec.preAllocations entries of hosts that are gone.
// The garbage collector already deletes such claims through their owner
// references; the sweep is the belt to those braces, run when a host is
// deleted and when the manager starts, so nothing leaks even if a host was
// deleted while no manager ran.
type Sweeper struct {
	Client client.Client
	// APIReader confirms past the cache an owner the cache does not have:
	// an owner created a moment ago must never be taken for gone. An owner
	// the cache has needs no API read. It also reads again a claim or
	// address that changed since the cache showed it (a fenced write lost).
	APIReader client.Reader

	// removals are the pool entries of deleted hosts SweepHost found, which
	// Start removes a pool at a time.
	removals poolWrites[entryRemoval]
}

// Sweep sweeps one namespace or, with "", all.
func (s *Sweeper) Sweep(ctx context.Context, namespace string) error {
	if err := s.sweepClaims(ctx, namespace); err != nil {
		return err
	}
	if err := s.sweepAddressClaims(ctx, namespace); err != nil {
		return err
	}
	if err := s.sweepAddresses(ctx, namespace); err != nil {
		return err
	}
	return s.sweepPools(ctx, namespace)
}

// sweepClaims deletes our claims whose hosts are gone and that no live
// Metal3Data owns (CAPM3 may still use a provisioned host's claim), each as
// decided on (deleteAsDecided): a Metal3Data owner the cache has not shown
// yet stops the delete. IPAM then releases the address.
func (s *Sweeper) sweepClaims(ctx context.Context, namespace string) error {
	claims := &ipamv1.IPClaimList{}
	if err := s.Client.List(ctx, claims, client.InNamespace(namespace),
		client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}); err != nil {
		return fmt.Errorf("listing our IPClaims: %w", err)
	}
	for i := range claims.Items {
		claim := &claims.Items[i]
		deleted, err := deleteAsDecided(ctx, s.Client, s.APIReader, claim, orphanedOf[*ipamv1.IPClaim](s))
		if err != nil {
			return fmt.Errorf("deleting IPClaim %s/%s of a deleted host: %w", claim.Namespace, claim.Name, err)
		}
		if deleted {
			ctrl.LoggerFrom(ctx).Info("Deleted the IPClaim of a deleted host", "claim", client.ObjectKeyFromObject(claim))
		}
	}
	return nil
}

// sweepAddresses releases the IPAddresses IPAM left behind our deleted
// claims. IPAM writes a claim's finalizer only after it created the claim's
// IPAddress, and releases a deleted claim's address only if its cache has
// the address: a claim deleted in either window leaves its IPAddress behind.
// IPAM then counts that address as allocated to the claim's name for good
// and gives it only to a new claim of that name, so every other host would
// have lost it. For an address whose claim and host are both gone we do what
// IPAM's deleteAddress would have done: drop its finalizer and delete it. A
// host registered again under the same name keeps it (its new claim takes
// the address over).
func (s *Sweeper) sweepAddresses(ctx context.Context, namespace string) error {
	addresses := &ipamv1.IPAddressList{}
	if err := s.Client.List(ctx, addresses, client.InNamespace(namespace),
		client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}); err != nil {
		return fmt.Errorf("listing the IPAddresses of our IPClaims: %w", err)
	}
	for i := range addresses.Items {
		address := &addresses.Items[i]
		released, err := releaseAddress(ctx, s.Client, s.APIReader, address, s.leftBehind)
		if err != nil {
			return fmt.Errorf("releasing IPAddress %s/%s that IPAM left behind a deleted host: %w", address.Namespace, address.Name, err)
		}
		if released {
			ctrl.LoggerFrom(ctx).Info("Released the IPAddress IPAM left behind the IPClaim of a deleted host",
				"address", client.ObjectKeyFromObject(address), "ip", address.Spec.Address, "claim", address.Spec.Claim.Name)
		}
	}
	return nil
}

// leftBehind is true for an address whose claim, named <host>-<pool>, and
// host are both gone. A claim or host the cache lacks is confirmed gone
// with the API.
func (s *Sweeper) leftBehind(ctx context.Context, address *ipamv1.IPAddress) (bool, error) {
	hostName, ours := claimHost(address)
	if !ours {
		return false, nil
	}
	claimGone, err := claimGone(ctx, s.Client, s.APIReader, address)
	if err != nil || !claimGone {
		return false, err
	}
	return s.hostGone(ctx, address.Namespace, hostName)
}

// claimHost is the host named in an address's claim name, <host>-<pool>.
func claimHost(address *ipamv1.IPAddress) (string, bool) {
	hostName, ours := strings.CutSuffix(address.Spec.Claim.Name, "-"+address.Spec.Pool.Name)
	return hostName, ours && hostName != ""
}

// claimGone is whether no claim of the address's claim name exists, the
// cache's no confirmed with the API.
func claimGone(ctx context.Context, cache client.Reader, api client.Reader, address *ipamv1.IPAddress) (bool, error) {
	claimKey := client.ObjectKey{Namespace: address.Namespace, Name: address.Spec.Claim.Name}
	exists, err := existsWithUID(ctx, cache, api, claimKey, &ipamv1.IPClaim{}, "")
	return !exists, err
}

// releaseAddress does for an IPAddress IPAM left behind what IPAM's
// deleteAddress does: it drops IPAM's finalizer and deletes the address,
// as long as leftBehind holds. Both writes are fenced on the version decided
// on (an optimistic lock, a resourceVersion precondition), and an address
// that changed is read again from the API and decided again. leftBehind is
// asked once more between the two writes: IPAM hands the address, unchanged,
// to a new claim of the same name (createAddress), so only a read of that
// claim tells a host registered again under its name; IPAM's finalizer is
// put back then.
func releaseAddress(ctx context.Context, c client.Client, api client.Reader, address *ipamv1.IPAddress,
	leftBehind func(context.Context, *ipamv1.IPAddress) (bool, error),
) (bool, error) {
	for attempt := 1; ; attempt++ {
		left, err := leftBehind(ctx, address)
		if err != nil || !left {
			return false, err
		}
		released, err := dropFinalizerAndDelete(ctx, c, address, leftBehind)
		switch {
		case err == nil:
			return released, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case !apierrors.IsConflict(err) || attempt == fencedAttempts:
			return false, err
		}
		fresh, err := reread(ctx, api, address)
		if err != nil || fresh == nil {
			return false, err
		}
		address = fresh
	}
}

// dropFinalizerAndDelete writes the release of an address as read.
func dropFinalizerAndDelete(ctx context.Context, c client.Client, address *ipamv1.IPAddress,
	leftBehind func(context.Context, *ipamv1.IPAddress) (bool, error),
) (bool, error) {
	if slices.Contains(address.Finalizers, ipamv1.IPAddressFinalizer) {
		original := address.DeepCopy()
		address.Finalizers = slices.DeleteFunc(address.Finalizers, func(f string) bool { return f == ipamv1.IPAddressFinalizer })
		if err := c.Patch(ctx, address, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
			return false, err
		}
		left, err := leftBehind(ctx, address)
		if err != nil || !left {
			return false, errors.Join(err, restoreFinalizer(ctx, c, address))
		}
	}
	uid, version := address.UID, address.ResourceVersion
	if err := c.Delete(ctx, address, client.Preconditions{UID: &uid, ResourceVersion: &version}); err != nil {
		return false, err
	}
	return true, nil
}

// restoreFinalizer puts IPAM's finalizer back on an address a new claim of
// its name took over while we released it.
func restoreFinalizer(ctx context.Context, c client.Client, address *ipamv1.IPAddress) error {
	original := address.DeepCopy()
	address.Finalizers = append(address.Finalizers, ipamv1.IPAddressFinalizer)
	err := c.Patch(ctx, address, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{}))
	if err != nil {
		return fmt.Errorf("putting IPAM's finalizer back on IPAddress %s/%s, which a new IPClaim %q took over: %w",
			address.Namespace, address.Name, address.Spec.Claim.Name, err)
	}
	return nil
}

// orphaned is true for a claim of a deleted host that nothing else keeps.
func (s *Sweeper) orphaned(ctx context.Context, claim client.Object) (bool, error) {
	if claim.GetDeletionTimestamp() != nil {
		return false, nil
	}
	return s.allOwnersGone(ctx, claim)
}

// orphanedOf is orphaned for the claim type deleteAsDecided works on.
func orphanedOf[T client.Object](s *Sweeper) func(context.Context, T) (bool, error) {
	return func(ctx context.Context, claim T) (bool, error) { return s.orphaned(ctx, claim) }
}

// allOwnersGone is true for a claim with a host owner when none of its
// host and Metal3Data owners exists any more.
func (s *Sweeper) allOwnersGone(ctx context.Context, claim client.Object) (bool, error) {
	if len(ownership.HostOwners(claim)) == 0 {
		return false, nil
	}
	for _, ref := range claim.GetOwnerReferences() {
		var owner client.Object
		switch {
		case ownership.IsHost(ref):
			owner = &bmov1alpha1.BareMetalHost{}
		case ownership.IsMetal3Data(ref):
			owner = &capm3.Metal3Data{}
		default:
			// An owner we do not know keeps the claim.
			return false, nil
		}
		exists, err := s.exists(ctx, client.ObjectKey{Namespace: claim.GetNamespace(), Name: ref.Name}, owner, ref.UID)
		if err != nil {
			return false, fmt.Errorf("getting %s %s/%s: %w", ref.Kind, claim.GetNamespace(), ref.Name, err)
		}
		if exists {
			return false, nil
		}
	}
	return true, nil
}

// exists tells whether the object named by key exists with the given UID
// (with any UID when uid is empty), asking the API when the cache says no.
func (s *Sweeper) exists(ctx context.Context, key client.ObjectKey, obj client.Object, uid types.UID) (bool, error) {
	return existsWithUID(ctx, s.Client, s.APIReader, key, obj, uid)
}

// sweepPools removes the spec.preAllocations entries we wrote for hosts
// that no longer exist.
func (s *Sweeper) sweepPools(ctx context.Context, namespace string) error {
	pools := &ipamv1.IPPoolList{}
	if err := s.Client.List(ctx, pools, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing IPPools: %w", err)
	}
	for i := range pools.Items {
		if err := s.sweepPool(ctx, &pools.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sweeper) sweepPool(ctx context.Context, pool *ipamv1.IPPool) error {
	return s.removeEntriesOfGoneHosts(ctx, pool, ownKeys(pool))
}

// removeEntriesOfGoneHosts removes those of keys, entries of ours, whose
// host is gone. The pool is left as read: it may be the cache's.
func (s *Sweeper) removeEntriesOfGoneHosts(ctx context.Context, pool *ipamv1.IPPool, keys []string) error {
	hostOf := func(key string) string { return strings.TrimSuffix(key, "-"+pool.Name) }
	hosts := make([]string, 0, len(keys))
	for _, key := range keys {
		hosts = append(hosts, hostOf(key))
	}
	goneHosts, err := s.hostsGone(ctx, pool.Namespace, hosts)
	if err != nil {
		return err
	}
	gone := slices.DeleteFunc(slices.Clone(keys), func(key string) bool { return !goneHosts.Has(hostOf(key)) })
	if len(gone) == 0 {
		return nil
	}
	swept := pool.DeepCopy()
	for _, key := range gone {
		delete(swept.Spec.PreAllocations, key)
	}
	removed := sets.New(gone...)
	kept := slices.DeleteFunc(ownKeys(pool), removed.Has)
	if err := setOwnKeys(swept, kept); err != nil {
		return err
	}
	if err := s.Client.Patch(ctx, swept, client.MergeFromWithOptions(pool, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing entries of deleted hosts from IPPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	return nil
}

// hostReadsPerList is how many hosts the cache lacks are confirmed gone
// with a read each: past it, one list of the namespace's hosts' metadata
// confirms them all (a fleet deleted at once would otherwise cost a read
// per host, at the client's rate limit).
const hostReadsPerList = 5

// hostsGone are those of names no host of the namespace has, the cache's
// no confirmed with the API.
func (s *Sweeper) hostsGone(ctx context.Context, namespace string, names []string) (sets.Set[string], error) {
	var uncached []string
	for _, name := range names {
		err := s.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &bmov1alpha1.BareMetalHost{})
		switch {
		case apierrors.IsNotFound(err):
			uncached = append(uncached, name)
		case err != nil:
			return nil, err
		}
	}
	gone := sets.New[string]()
	if len(uncached) <= hostReadsPerList {
		for _, name := range uncached {
			hostGone, err := s.hostGone(ctx, namespace, name)
			if err != nil {
				return nil, err
			}
			if hostGone {
				gone.Insert(name)
			}
		}
		return gone, nil
	}
	hosts := &metav1.PartialObjectMetadataList{}
	hosts.SetGroupVersionKind(bmov1alpha1.GroupVersion.WithKind("BareMetalHostList"))
	if err := s.APIReader.List(ctx, hosts, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the BareMetalHosts of namespace %s: %w", namespace, err)
	}
	gone.Insert(uncached...)
	for i := range hosts.Items {
		gone.Delete(hosts.Items[i].Name)
	}
	return gone, nil
}

func (s *Sweeper) hostGone(ctx context.Context, namespace, name string) (bool, error) {
	exists, err := s.exists(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &bmov1alpha1.BareMetalHost{}, "")
	if err != nil {
		return false, err
	}
	return !exists, nil
}
