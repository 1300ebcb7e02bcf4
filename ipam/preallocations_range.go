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
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RemoveOutOfRange drops the entries we wrote for the host's claims on
// pools whose ranges no longer hold the address. IPAM refuses such a claim
// for good (allocateAddress: "Pre-allocated IP out of bond"): a pool shrunk
// below the address does that, and so does a host registered again under
// the same name that meets the earlier host's entry before the sweep
// removed it. Without the entry the claim, made again, gets a free address.
func (p *Preallocations) RemoveOutOfRange(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string) error {
	for _, poolName := range pools {
		pool, err := readPool(ctx, p.Client, client.ObjectKey{Namespace: host.Namespace, Name: poolName})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("getting IPPool %s/%s: %w", host.Namespace, poolName, err)
		}
		claimName := ClaimName(host.Name, poolName)
		if ip, present := pool.Spec.PreAllocations[claimName]; present && !inRanges(pool, ip) {
			if err := p.removeOwnEntry(ctx, pool, claimName); err != nil {
				return fmt.Errorf("%s (%s) is outside the pool's ranges: %w", claimName, ip, err)
			}
		}
	}
	return nil
}

// inRanges tells whether one of the pool's ranges holds the address.
func inRanges(pool *ipamv1.IPPool, ip ipamv1.IPAddressStr) bool {
	addr, err := netip.ParseAddr(string(ip))
	if err != nil {
		return false
	}
	return slices.ContainsFunc(pool.Spec.Pools, func(entry ipamv1.Pool) bool { return PoolEntryHolds(entry, addr) })
}

// PoolEntryHolds reports whether ip is within an IPPool entry's start, end
// and subnet, as far as each is given; an entry with none holds nothing.
func PoolEntryHolds(entry ipamv1.Pool, ip netip.Addr) bool {
	if entry.Start == nil && entry.End == nil && entry.Subnet == nil {
		return false
	}
	if entry.Start != nil {
		start, err := netip.ParseAddr(string(*entry.Start))
		if err != nil || ip.Compare(start) < 0 {
			return false
		}
	}
	if entry.End != nil {
		end, err := netip.ParseAddr(string(*entry.End))
		if err != nil || ip.Compare(end) > 0 {
			return false
		}
	}
	if entry.Subnet != nil {
		subnet, err := netip.ParsePrefix(string(*entry.Subnet))
		if err != nil || !subnet.Contains(ip) {
			return false
		}
	}
	return true
}

// RemoveTaken drops our entries of the host's claims that wait for IPAM
// while another claim holds the entry's address: IPAM gives a claim its
// entry's address whoever holds it (allocateAddress), then cannot create
// the IPAddress, named after the address (createAddress), and the claim
// waits for good. An entry recorded as its host was re-created under its
// name, after IPAM had given the old claim's address to another host, is
// such an entry. Without it the claim gets a free address.
func (p *Preallocations) RemoveTaken(ctx context.Context, host *bmov1alpha1.BareMetalHost, states []PoolState) error {
	for _, state := range states {
		if state.Address != nil || state.ClaimKind == kindIPAddressClaim {
			continue
		}
		pool, err := readPool(ctx, p.Client, client.ObjectKey{Namespace: host.Namespace, Name: state.Pool})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("getting IPPool %s/%s: %w", host.Namespace, state.Pool, err)
		}
		ip, present := pool.Spec.PreAllocations[state.Claim]
		if !present {
			continue
		}
		address := &ipamv1.IPAddress{}
		err = p.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: addressName(pool, ip)}, address)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("getting the IPAddress of %s in IPPool %s/%s: %w", ip, host.Namespace, state.Pool, err)
		}
		if address.Spec.Claim.Name == state.Claim {
			continue
		}
		if err := p.removeOwnEntry(ctx, pool, state.Claim); err != nil {
			return fmt.Errorf("%s (%s) is held by IPClaim %q: %w", state.Claim, ip, address.Spec.Claim.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Removed our spec.preAllocations entry whose address another IPClaim holds, so IPAM can serve the claim",
			"pool", pool.Name, "claim", state.Claim, "ip", ip, "holder", address.Spec.Claim.Name)
	}
	return nil
}

// addressName is the name Metal3 IPAM gives the IPAddress of ip in the pool
// (IPPoolManager.formatAddressName).
func addressName(pool *ipamv1.IPPool, ip ipamv1.IPAddressStr) string {
	return strings.TrimRight(pool.Spec.NamePrefix+"-"+strings.NewReplacer(":", "-", ".", "-").Replace(string(ip)), "-")
}
