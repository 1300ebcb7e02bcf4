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

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		pool := &ipamv1.IPPool{}
		err := p.Client.Get(ctx, client.ObjectKey{Namespace: host.Namespace, Name: poolName}, pool)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("getting IPPool %s/%s: %w", host.Namespace, poolName, err)
		}
		claimName := ClaimName(host.Name, poolName)
		ip, present := pool.Spec.PreAllocations[claimName]
		if !present || inRanges(pool, ip) {
			continue
		}
		keys := ownKeys(pool)
		if !slices.Contains(keys, claimName) {
			continue
		}
		original := pool.DeepCopy()
		delete(pool.Spec.PreAllocations, claimName)
		if err := setOwnKeys(pool, slices.DeleteFunc(keys, func(key string) bool { return key == claimName })); err != nil {
			return err
		}
		if err := p.Client.Patch(ctx, pool, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("removing %s (%s, outside the pool's ranges) from IPPool %s/%s spec.preAllocations: %w",
				claimName, ip, pool.Namespace, pool.Name, err)
		}
	}
	return nil
}

// inRanges tells whether one of the pool's ranges holds the address: from
// start to end, within the subnet, as far as each is given.
func inRanges(pool *ipamv1.IPPool, ip ipamv1.IPAddressStr) bool {
	addr, err := netip.ParseAddr(string(ip))
	if err != nil {
		return false
	}
	for _, entry := range pool.Spec.Pools {
		if entry.Start == nil && entry.End == nil && entry.Subnet == nil {
			continue
		}
		if within(addr, entry) {
			return true
		}
	}
	return false
}

func within(addr netip.Addr, entry ipamv1.Pool) bool {
	if entry.Start != nil {
		start, err := netip.ParseAddr(string(*entry.Start))
		if err != nil || addr.Compare(start) < 0 {
			return false
		}
	}
	if entry.End != nil {
		end, err := netip.ParseAddr(string(*entry.End))
		if err != nil || addr.Compare(end) > 0 {
			return false
		}
	}
	if entry.Subnet != nil {
		subnet, err := netip.ParsePrefix(string(*entry.Subnet))
		if err != nil || !subnet.Contains(addr) {
			return false
		}
	}
	return true
}
