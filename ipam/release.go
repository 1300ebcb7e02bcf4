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
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// ReleaseUnused deletes the host's claims on pools other than keep, so IPAM
// releases their addresses. A claim is kept while
// networkData (what the host's Secret holds; nil when it has none) still
// names its address, and while CAPM3 uses it (a Metal3Data owns it). Each
// delete is fenced on the claim as decided on (deleteAsDecided), so a
// Metal3Data owner the cache has not shown yet stops it.
func (c *Claims) ReleaseUnused(ctx context.Context, host *bmov1alpha1.BareMetalHost, keep []string, networkData []byte,
) error {
	// Claims are named after their pool: the pools of the namespace find
	// them, with the cache's index or without.
	pools := &ipamv1.IPPoolList{}
	if err := c.Client.List(ctx, pools, client.InNamespace(host.Namespace)); err != nil {
		return fmt.Errorf("listing IPPools: %w", err)
	}
	for _, pool := range pools.Items {
		if slices.Contains(keep, pool.Name) {
			continue
		}
		claim := &ipamv1.IPClaim{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: ClaimName(host.Name, pool.Name)}, claim)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("getting IPClaim %s/%s: %w", host.Namespace, ClaimName(host.Name, pool.Name), err)
		}
		unused := func(ctx context.Context, claim *ipamv1.IPClaim) (bool, error) {
			return c.unused(ctx, host, claim, keep, networkData)
		}
		deleted, err := deleteAsDecided(ctx, c.Client, c.apiReader(), claim, unused)
		if err != nil {
			return fmt.Errorf("releasing IPClaim %s/%s the host no longer uses: %w", claim.Namespace, claim.Name, err)
		}
		if deleted {
			ctrl.LoggerFrom(ctx).Info("Released an IPClaim the host's network data no longer uses", "claim", claim.Name)
		}
	}
	return nil
}

// unused is whether the host's claim can go: ours, not being deleted, on a
// pool the host no longer uses, not used by CAPM3 (a Metal3Data owns it) and
// its address not named in the host's network data.
func (c *Claims) unused(ctx context.Context, host *bmov1alpha1.BareMetalHost, claim *ipamv1.IPClaim, keep []string,
	networkData []byte,
) (bool, error) {
	if !ownership.Ours(claim) || !ownership.OwnedByHost(claim, host) || !claim.DeletionTimestamp.IsZero() ||
		slices.Contains(keep, claim.Spec.Pool.Name) || ownership.UsedByCAPM3(claim) {
		return false, nil
	}
	referenced, err := c.addressReferenced(ctx, claim, networkData)
	return !referenced, err
}

// ReleaseLeftBehind releases the IPAddresses IPAM left behind the claims of
// a host that holds none (a host paused for us whose claims were released):
// IPAM creates a claim's address before it writes the claim's finalizer, so
// a claim released while IPAM allocated it leaves its address behind,
// reserved for the host's name until the host is deleted. The rules are the
// sweep's (releaseAddress): the claim of that name is gone, and no new one
// took the address over.
func (c *Claims) ReleaseLeftBehind(ctx context.Context, host *bmov1alpha1.BareMetalHost) error {
	addresses := &ipamv1.IPAddressList{}
	// Read without a copy, and never changed: only the host's are copied.
	if err := c.Client.List(ctx, addresses, client.InNamespace(host.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue}); err != nil {
		return fmt.Errorf("listing the IPAddresses of our IPClaims: %w", err)
	}
	ofHost := func(address *ipamv1.IPAddress) bool {
		hostName, ours := claimHost(address)
		return ours && hostName == host.Name
	}
	leftBehind := func(ctx context.Context, address *ipamv1.IPAddress) (bool, error) {
		if !ofHost(address) {
			return false, nil
		}
		return claimGone(ctx, c.Client, c.apiReader(), address)
	}
	for i := range addresses.Items {
		if !ofHost(&addresses.Items[i]) {
			continue
		}
		address := addresses.Items[i].DeepCopy()
		released, err := releaseAddress(ctx, c.Client, c.apiReader(), address, leftBehind)
		if err != nil {
			return fmt.Errorf("releasing IPAddress %s/%s that IPAM left behind a released IPClaim: %w", address.Namespace, address.Name, err)
		}
		if released {
			ctrl.LoggerFrom(ctx).Info("Released the IPAddress IPAM left behind a released IPClaim of the host",
				"address", address.Name, "ip", address.Spec.Address, "claim", address.Spec.Claim.Name)
		}
	}
	return nil
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

// Missing returns the pools the host holds no claim of ours on.
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
		}
	}
	return missing, nil
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
