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

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// SweepHost releases what one host the cache saw deleted left behind that
// the garbage collector cannot release: the IPAddresses IPAM left behind its
// claims, and our spec.preAllocations entries, queued for their pool's next
// write (Start). Its claims are the garbage collector's (owner references),
// and the full Sweep at start-up catches one it missed. It runs on every event of the host's objects as they go, so it
// reads the manager's cache, through indexes, and the API only to confirm a
// release: deleting a fleet costs each host the same, however large the
// fleet. An address left behind is found once the garbage collector has
// dropped its owner reference to the deleted claim (the index
// UnownedAddressClaimField holds only such addresses): that update of the
// address brings the host here again.
func (s *Sweeper) SweepHost(ctx context.Context, host types.NamespacedName) error {
	pools := &ipamv1.IPPoolList{}
	if err := s.Client.List(ctx, pools, client.InNamespace(host.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing IPPools: %w", err)
	}
	for i := range pools.Items {
		pool := &pools.Items[i]
		claimName := ClaimName(host.Name, pool.Name)
		if err := s.releaseAddressesOfClaim(ctx, host.Namespace, claimName); err != nil {
			return err
		}
		// Whether the entry is ours is read once per pool write (Start):
		// the record of our entries grows with the pool.
		if _, entry := pool.Spec.PreAllocations[claimName]; entry {
			s.removals.add(client.ObjectKeyFromObject(pool), claimName, entryRemoval{})
		}
	}
	return nil
}

// releaseAddressesOfClaim releases the IPAddresses of a claim name that the
// claim no longer owns, when the claim is gone. While the cache still has the claim, IPAM releases its
// address once the garbage collector deletes it, and that deletion brings
// the host here again.
func (s *Sweeper) releaseAddressesOfClaim(ctx context.Context, namespace, claimName string) error {
	addresses := &ipamv1.IPAddressList{}
	if err := s.Client.List(ctx, addresses, client.InNamespace(namespace), client.MatchingFields{index.UnownedAddressClaimField: claimName}); err != nil {
		return fmt.Errorf("listing the IPAddresses of IPClaim %s/%s: %w", namespace, claimName, err)
	}
	for i := range addresses.Items {
		address := &addresses.Items[i]
		if !ownership.Ours(address) {
			continue
		}
		claimCached := s.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: claimName}, &ipamv1.IPClaim{}) == nil
		if claimCached {
			continue
		}
		// The cache shows IPAM's release of an address after the claim's
		// deletion at times: only an address still there is left behind.
		current, err := reread(ctx, s.APIReader, address)
		if err != nil || current == nil {
			return err
		}
		released, err := releaseAddress(ctx, s.Client, s.APIReader, current, s.leftBehind)
		if err != nil {
			return fmt.Errorf("releasing IPAddress %s/%s that IPAM left behind a deleted host: %w", address.Namespace, address.Name, err)
		}
		if released {
			ctrl.LoggerFrom(ctx).Info("Released the IPAddress IPAM left behind the IPClaim of a deleted host",
				"address", client.ObjectKeyFromObject(address), "ip", address.Spec.Address, "claim", claimName)
		}
	}
	return nil
}
