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
	"fmt"
	"slices"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// ReleaseUnused deletes the host's claims on pools other than keep, so IPAM
// releases their addresses, and returns those it keeps for the host's
// machine. A claim is kept while the host's Secret (users.NetworkData)
// still names its address, while CAPM3 uses it (a Metal3Data owns it), and
// while the host's machine may still run with it (holdForMachine). Each
// delete is fenced on the claim as decided on (deleteAsDecided), so a
// Metal3Data owner the cache has not shown yet stops it.
func (c *Claims) ReleaseUnused(ctx context.Context, host *bmov1alpha1.BareMetalHost, keep []string, users AddressUsers,
) ([]Held, error) {
	// Claims are named after their pool: the pools of the namespace find
	// them, with the cache's index or without.
	pools, err := listPools(ctx, c.Client, host.Namespace)
	if err != nil {
		return nil, fmt.Errorf("listing IPPools: %w", err)
	}
	var kept []Held
	for i := range pools {
		pool := &pools[i]
		claim := &ipamv1.IPClaim{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: ClaimName(host.Name, pool.Name)}, claim)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("getting IPClaim %s/%s: %w", host.Namespace, ClaimName(host.Name, pool.Name), err)
		}
		held, err := c.releaseUnusedClaim(ctx, host, claim, keep, users)
		if err != nil {
			return nil, err
		}
		if held != nil {
			kept = append(kept, *held)
		}
	}
	return kept, nil
}

// ReleaseFailed deletes the host's failed claims on the pools it no longer
// claims from (not in keep). They hold no address, so no machine can use
// one, and left there each would wait for a retry turn (retryTurns) that
// its host never takes, holding the pool's next free address back from
// the hosts behind it, for as long as the host waits on its new pools.
func (c *Claims) ReleaseFailed(ctx context.Context, host *bmov1alpha1.BareMetalHost, keep []string) error {
	pools, err := listPools(ctx, c.Client, host.Namespace)
	if err != nil {
		return fmt.Errorf("listing IPPools: %w", err)
	}
	for i := range pools {
		pool := &pools[i]
		if slices.Contains(keep, pool.Name) {
			continue
		}
		claim := &ipamv1.IPClaim{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: ClaimName(host.Name, pool.Name)}, claim)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("getting IPClaim %s/%s: %w", host.Namespace, ClaimName(host.Name, pool.Name), err)
		case ownedForRelease(claim, host) && ipamGaveUp(claim):
			if err := deleteFailed(ctx, c.Client, claim); err != nil {
				return err
			}
		}
	}
	return nil
}

// releaseUnusedClaim releases one claim of the host's when nothing uses it,
// or says why its machine keeps it.
func (c *Claims) releaseUnusedClaim(ctx context.Context, host *bmov1alpha1.BareMetalHost, claim *ipamv1.IPClaim, keep []string,
	users AddressUsers,
) (*Held, error) {
	if slices.Contains(keep, claim.Spec.Pool.Name) && ownership.OwnedByHost(claim, host) {
		// Named again, though CAPM3 may hold it now: a later release counts
		// from a later time.
		return nil, c.clearUnusedSince(ctx, claim)
	}
	if !ownedForRelease(claim, host) {
		return nil, nil
	}
	used := slices.Contains(keep, claim.Spec.Pool.Name)
	if !used {
		referenced, err := c.addressReferenced(ctx, claim, users.NetworkData)
		if err != nil {
			return nil, err
		}
		used = referenced
	}
	if used {
		return nil, c.clearUnusedSince(ctx, claim)
	}
	if claim.Status.Address != nil {
		// A claim without an address holds nothing a machine could use.
		held, err := c.holdForMachine(ctx, claim, Held{Kind: kindIPClaim, Claim: claim.Name,
			Pool: networkdata.Pool{Name: claim.Spec.Pool.Name, APIGroup: networkdata.Metal3IPAMGroup, Kind: networkdata.Metal3PoolKind}}, users)
		if err != nil || held != nil {
			return held, err
		}
	}
	unused := func(ctx context.Context, claim *ipamv1.IPClaim) (bool, error) {
		return c.unused(ctx, host, claim, keep, users.NetworkData)
	}
	deleted, err := deleteAsDecided(ctx, c.Client, c.apiReader(), claim, unused)
	if err != nil {
		return nil, fmt.Errorf("releasing IPClaim %s/%s the host no longer uses: %w", claim.Namespace, claim.Name, err)
	}
	if deleted {
		ctrl.LoggerFrom(ctx).Info("Released an IPClaim the host's network data no longer uses", "claim", claim.Name)
	}
	return nil, nil
}

// ownedForRelease is a claim of the host's that is ours to release: ours,
// not being deleted, and not used by CAPM3 (a Metal3Data owns it).
func ownedForRelease(claim client.Object, host *bmov1alpha1.BareMetalHost) bool {
	return ownership.Ours(claim) && ownership.OwnedByHost(claim, host) && claim.GetDeletionTimestamp().IsZero() &&
		!ownership.UsedByCAPM3(claim)
}

// unused is whether the host's claim can go: ours to release, on a pool the
// host no longer uses, and its address not named in the host's network data.
func (c *Claims) unused(ctx context.Context, host *bmov1alpha1.BareMetalHost, claim *ipamv1.IPClaim, keep []string,
	networkData []byte,
) (bool, error) {
	if !ownedForRelease(claim, host) || slices.Contains(keep, claim.Spec.Pool.Name) {
		return false, nil
	}
	referenced, err := c.addressReferenced(ctx, claim, networkData)
	return !referenced, err
}

// ReleaseLeftBehind releases the IPAddresses IPAM left behind the host's
// claims on pools other than keep: IPAM creates a claim's address before it
// writes the claim's finalizer, so a claim released while IPAM allocated it
// leaves its address behind, reserved for the claim's name until a claim of
// that name takes it over or the host is deleted. An address goes once the
// claim of its name is gone (the sweep's releaseAddress rules) and the
// host's network data does not name it.
func (c *Claims) ReleaseLeftBehind(ctx context.Context, host *bmov1alpha1.BareMetalHost, keep []string, users AddressUsers) error {
	pools, err := listPools(ctx, c.Client, host.Namespace)
	if err != nil {
		return fmt.Errorf("listing IPPools: %w", err)
	}
	leftBehind := func(ctx context.Context, address *ipamv1.IPAddress) (bool, error) {
		if !ownership.Ours(address) || networkDataNamesAddress(users.NetworkData, string(address.Spec.Address)) {
			return false, nil
		}
		return claimGone(ctx, c.Client, c.apiReader(), address)
	}
	for i := range pools {
		if slices.Contains(keep, pools[i].Name) {
			continue
		}
		claimName := ClaimName(host.Name, pools[i].Name)
		addresses, err := c.addressesLeftBy(ctx, host.Namespace, claimName)
		if err != nil {
			return err
		}
		for j := range addresses {
			address := addresses[j].DeepCopy()
			released, err := releaseAddress(ctx, c.Client, c.apiReader(), address, leftBehind)
			if err != nil {
				return fmt.Errorf("releasing IPAddress %s/%s that IPAM left behind a released IPClaim: %w", address.Namespace, address.Name, err)
			}
			if released {
				ctrl.LoggerFrom(ctx).Info("Released the IPAddress IPAM left behind a released IPClaim of the host",
					"address", address.Name, "ip", address.Spec.Address, "claim", claimName)
			}
		}
	}
	return nil
}

// addressesLeftBy lists the IPAddresses allocated to a claim name that the
// claim no longer owns: through the cache's index in the manager, and by our
// label from the API elsewhere (kubectl preprov), where no index exists.
func (c *Claims) addressesLeftBy(ctx context.Context, namespace, claimName string) ([]ipamv1.IPAddress, error) {
	addresses := &ipamv1.IPAddressList{}
	var err error
	if c.Indexed {
		err = c.Client.List(ctx, addresses, client.InNamespace(namespace), client.UnsafeDisableDeepCopy,
			client.MatchingFields{index.UnownedAddressClaimField: claimName})
	} else {
		err = c.Client.List(ctx, addresses, client.InNamespace(namespace), client.UnsafeDisableDeepCopy,
			client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue})
	}
	if err != nil {
		return nil, fmt.Errorf("listing the IPAddresses of IPClaim %s/%s: %w", namespace, claimName, err)
	}
	return slices.DeleteFunc(addresses.Items, func(address ipamv1.IPAddress) bool {
		return address.Spec.Claim.Name != claimName || ownership.OwnedByIPClaim(&address, claimName)
	}), nil
}

// addressReferenced is whether the network data names the claim's address.
func (c *Claims) addressReferenced(ctx context.Context, claim *ipamv1.IPClaim, networkData []byte) (bool, error) {
	if claim.Status.Address == nil || len(networkData) == 0 {
		return false, nil
	}
	address := &ipamv1.IPAddress{}
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.Address.Name}, address)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("getting IPAddress %s/%s: %w", claim.Namespace, claim.Status.Address.Name, err)
	}
	return networkDataNamesAddress(networkData, string(address.Spec.Address)), nil
}

// Missing returns the pools the host holds no address from: no claim of
// ours, or one IPAM gave up on. It is asked for a provisioned host whose
// Secret stays as it is, which makes no claim on them: such a failed claim
// is deleted (it holds no address), else it would wait for a retry turn
// (retryTurns) and hold the pool's next free address back from the hosts
// behind it.
func (c *Claims) Missing(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string) ([]string, error) {
	var missing []string
	for _, pool := range pools {
		claim := &ipamv1.IPClaim{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: ClaimName(host.Name, pool)}, claim)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, pool)
		case err != nil:
			return nil, fmt.Errorf("getting IPClaim %s/%s: %w", host.Namespace, ClaimName(host.Name, pool), err)
		case !ownership.OwnedByHost(claim, host):
			missing = append(missing, pool)
		case ipamGaveUp(claim):
			if err := deleteFailed(ctx, c.Client, claim); err != nil {
				return nil, err
			}
			missing = append(missing, pool)
		}
	}
	return missing, nil
}

// ipamGaveUp: IPAM failed the claim (an error, no address), and never looks
// at it again.
func ipamGaveUp(claim *ipamv1.IPClaim) bool {
	return claim.Status.Address == nil && claim.Status.ErrorMessage != nil
}

// deleteFailed deletes a failed claim as read: a claim that changed since
// (IPAM served it after all) is refused with a conflict, and decided again.
func deleteFailed(ctx context.Context, c client.Client, claim *ipamv1.IPClaim) error {
	uid, version := claim.UID, claim.ResourceVersion
	if err := client.IgnoreNotFound(c.Delete(ctx, claim, client.Preconditions{UID: &uid, ResourceVersion: &version})); err != nil {
		return fmt.Errorf("deleting failed IPClaim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return nil
}

// fencedAttempts bounds how often a fenced write that lost to a newer
// version of its object is decided again.
const fencedAttempts = 3

// deleteAsDecided deletes obj, as read from the cache, when decide says so.
// The delete is fenced on the version decided on (UID and resourceVersion
// preconditions): an object that changed since, for example an owner CAPM3
// added that the cache has not shown yet, is read again from the API and
// decided again, so nothing is released on a stale view.
func deleteAsDecided[T client.Object](ctx context.Context, c client.Client, api client.Reader, obj T,
	decide func(context.Context, T) (bool, error),
) (bool, error) {
	for attempt := 1; ; attempt++ {
		ok, err := decide(ctx, obj)
		if err != nil || !ok {
			return false, err
		}
		uid, version := obj.GetUID(), obj.GetResourceVersion()
		err = c.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &version})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case !apierrors.IsConflict(err) || attempt == fencedAttempts:
			return false, err
		}
		fresh, err := reread(ctx, api, obj)
		if err != nil || isNil(fresh) {
			return false, err
		}
		obj = fresh
	}
}

// reread reads obj again from the API; nil (the zero T) when it is gone or
// replaced by a new object of the same name.
func reread[T client.Object](ctx context.Context, api client.Reader, obj T) (T, error) {
	var none T
	fresh, ok := obj.DeepCopyObject().(T)
	if !ok {
		return none, fmt.Errorf("a copy of %T is not a %T", obj, none)
	}
	if err := api.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		return none, client.IgnoreNotFound(err)
	}
	if fresh.GetUID() != obj.GetUID() {
		return none, nil
	}
	return fresh, nil
}

func isNil[T client.Object](obj T) bool {
	var none T
	return any(obj) == any(none)
}

// existsWithUID tells whether the object named by key exists with the given
// UID (with any UID when uid is empty). The cache answers yes; a no from the
// cache (not found, another UID, an error) is confirmed with the API reader.
func existsWithUID(ctx context.Context, cache client.Reader, api client.Reader, key client.ObjectKey, obj client.Object,
	uid types.UID,
) (bool, error) {
	if err := cache.Get(ctx, key, obj); err == nil && (uid == "" || obj.GetUID() == uid) {
		return true, nil
	}
	fresh, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("a copy of %T is not an object", obj)
	}
	err := api.Get(ctx, key, fresh)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return uid == "" || fresh.GetUID() == uid, nil
}

// apiReader reads past the cache; the Client itself without a cache.
func (c *Claims) apiReader() client.Reader {
	if c.APIReader == nil {
		return c.Client
	}
	return c.APIReader
}
