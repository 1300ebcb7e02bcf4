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
	"net/netip"
	"strconv"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// PoolAddressesAnnotation records on each of our claims how many IPAddresses
// its pool had when the claim was made. Metal3 IPAM never looks at a failed
// claim again, so a failed claim is made again once the pool has fewer
// (another host deleted, a CAPM3 deprovision, an allocation removed, an
// address IPAM left behind released by the sweep) and one fits the claim.
const PoolAddressesAnnotation = "preprovisioning.metal3.io/pool-addresses"

// poolUsage is what of a pool is taken, as IPAM sees it: every IPAddress of
// the pool, and the pre-allocated addresses.
type poolUsage struct {
	addresses    int
	allocated    map[netip.Addr]bool
	preAllocated map[netip.Addr]bool
}

// poolAddresses is how many IPAddresses the pool has, for a claim about to
// be made.
func (c *Claims) poolAddresses(ctx context.Context, pool *ipamv1.IPPool) (int, error) {
	if c.Addresses != nil {
		return c.Addresses.PoolAddresses(ctx, client.ObjectKeyFromObject(pool))
	}
	usage, err := c.usage(ctx, pool)
	return usage.addresses, err
}

// usage reads a pool's IPAddresses from the cache, over every address of
// the namespace, so the cache's objects are read without a deep copy (and
// never changed). It runs for failed claims only (retryable); a claim about
// to be made needs only the count (poolAddresses).
func (c *Claims) usage(ctx context.Context, pool *ipamv1.IPPool) (poolUsage, error) {
	addresses := &ipamv1.IPAddressList{}
	if err := c.Client.List(ctx, addresses, client.InNamespace(pool.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return poolUsage{}, fmt.Errorf("listing the IPAddresses of IPPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	usage := poolUsage{allocated: map[netip.Addr]bool{}, preAllocated: map[netip.Addr]bool{}}
	for _, ip := range pool.Spec.PreAllocations {
		if addr, err := netip.ParseAddr(string(ip)); err == nil {
			usage.preAllocated[addr] = true
		}
	}
	for _, address := range addresses.Items {
		if address.Spec.Pool.Name != pool.Name {
			continue
		}
		usage.addresses++
		if addr, err := netip.ParseAddr(string(address.Spec.Address)); err == nil {
			usage.allocated[addr] = true
		}
	}
	return usage, nil
}

// fits reports whether IPAM would find an address for a claim of this name:
// its pre-allocation if the pool has one, else an address of the pool's
// entries that is neither allocated nor pre-allocated.
func (u poolUsage) fits(pool *ipamv1.IPPool, claimName string) bool {
	if ip, ok := pool.Spec.PreAllocations[claimName]; ok {
		addr, err := netip.ParseAddr(string(ip))
		return err == nil && !u.allocated[addr]
	}
	for _, entry := range pool.Spec.Pools {
		for index := 0; ; index++ {
			ip, err := ipamv1.GetIPAddress(entry, index)
			if err != nil {
				break
			}
			if addr, err := netip.ParseAddr(string(ip)); err == nil && !u.allocated[addr] && !u.preAllocated[addr] {
				return true
			}
		}
	}
	return false
}

// retryable reports whether a failed claim is worth making again: the pool
// changed, or it has fewer addresses than when the claim was made and one
// fits the claim. Comparing with the count at creation keeps a claim IPAM
// refuses for a reason we do not see from being made again and again. The
// count now is read from the cache itself, not from AddressCounts: the
// deletion that wakes the host is in the cache before it reaches the
// counts' event handler, which may not have run yet.
func (c *Claims) retryable(ctx context.Context, claim *ipamv1.IPClaim, pool *ipamv1.IPPool) (bool, error) {
	if claim.Annotations[preprovv1.PoolGenerationAnnotation] != strconv.FormatInt(pool.Generation, 10) {
		return true, nil
	}
	usage, err := c.usage(ctx, pool)
	if err != nil {
		return false, err
	}
	recorded, err := strconv.Atoi(claim.Annotations[PoolAddressesAnnotation])
	if err != nil {
		// A claim made before the count was recorded.
		recorded = usage.addresses + 1
	}
	return usage.addresses < recorded && usage.fits(pool, claim.Name), nil
}
