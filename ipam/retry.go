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
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// Metal3 IPAM never looks at a failed claim (status.errorMessage) again, so
// we make such a claim again when IPAM would now give it an address: an
// address of the pool is free as IPAM computes it, or the pool has fewer
// IPAddresses than when we saw the failure. IPAM may see what we do not (an
// address of another shard, a Cluster API IPAddress of the pool): a claim
// made for an address that looks free and refused again is made for it only
// a few times, backed off, and then waits for the pool to change.
const (
	// retriesOfOneAddress is how many claims in a row are made for one
	// address that looks free before it is taken for refused.
	retriesOfOneAddress = 3
	// retryBackoff is how long after a claim made for an address IPAM
	// refused the next one is made; it doubles with each claim. It gives
	// our cache time to show an address IPAM gave meanwhile.
	retryBackoff = 2 * time.Second
)

// retryNote is what RetryAnnotation holds.
type retryNote struct {
	// Address looked free when the claim was made.
	Address string `json:"address"`
	// Attempt counts the claims made in a row for Address.
	Attempt int `json:"attempt"`
	// Refused are addresses that looked free and that IPAM refused anyway.
	Refused []string `json:"refused,omitempty"`
}

// retryDecision is what to do with a failed claim.
type retryDecision struct {
	// retry makes the claim again, carrying note.
	retry bool
	note  retryNote
	// after, when set, is when to decide again: a retry backed off.
	after time.Duration
	// record writes the pool's IPAddress count on the claim: the failure is
	// seen for the first time and the claim stays.
	record bool
	// refused is an address that looks free but that IPAM keeps refusing.
	refused string
}

// decideRetry decides what to do with a claim IPAM gave up on, from the
// pool's usage now.
func decideRetry(claim *ipamv1.IPClaim, pool *ipamv1.IPPool, usage poolUsage, now time.Time) retryDecision {
	recorded, err := strconv.Atoi(claim.Annotations[preprovv1.PoolAddressesAnnotation])
	hasRecord := err == nil
	var last retryNote
	if value, ok := claim.Annotations[preprovv1.RetryAnnotation]; ok {
		// An unreadable note counts as none: at worst one more claim.
		_ = json.Unmarshal([]byte(value), &last)
	}
	if hasRecord && usage.addresses < recorded {
		// An address was released since: whatever IPAM refused before may
		// be free now.
		free, _ := usage.free(pool, claim.Name, nil)
		return retryDecision{retry: true, note: retryNote{Address: free, Attempt: 1}}
	}
	refused := last.Refused
	free, found := usage.free(pool, claim.Name, refused)
	switch {
	case !found:
		return retryDecision{record: !hasRecord}
	case free != last.Address:
		return retryDecision{retry: true, note: retryNote{Address: free, Attempt: 1, Refused: refused}}
	case last.Attempt >= retriesOfOneAddress:
		// IPAM refuses an address we see free: something we do not see
		// holds it. Another free address, or a release, is tried.
		refused = append(slices.Clone(refused), free)
		free, found = usage.free(pool, claim.Name, refused)
		if found {
			return retryDecision{retry: true, note: retryNote{Address: free, Attempt: 1, Refused: refused}}
		}
		return retryDecision{record: !hasRecord, refused: last.Address}
	}
	if wait := retryBackoff<<(last.Attempt-1) - now.Sub(claim.CreationTimestamp.Time); wait > 0 {
		return retryDecision{after: wait}
	}
	return retryDecision{retry: true, note: retryNote{Address: free, Attempt: last.Attempt + 1, Refused: refused}}
}

// poolUsage is what of a pool is taken, as IPAM sees it (IPAM's getIndexes):
// every IPAddress of the pool, whether or not its claim still exists, and
// the pre-allocated addresses.
type poolUsage struct {
	addresses int
	used      map[netip.Addr]bool
	// byClaim is the address of each claim name that has one.
	byClaim map[string]netip.Addr
}

// usage reads a pool's IPAddresses from the cache, over every address of
// the namespace, so the cache's objects are read without a deep copy (and
// never changed). It runs for failed claims only. The cache, not a count
// kept by its event handlers, is read: the deletion that wakes the host is
// in the cache before any handler runs.
func (c *Claims) usage(ctx context.Context, pool *ipamv1.IPPool) (poolUsage, error) {
	addresses := &ipamv1.IPAddressList{}
	if err := c.Client.List(ctx, addresses, client.InNamespace(pool.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return poolUsage{}, fmt.Errorf("listing the IPAddresses of IPPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	usage := poolUsage{used: map[netip.Addr]bool{}, byClaim: map[string]netip.Addr{}}
	for _, ip := range pool.Spec.PreAllocations {
		if addr, err := netip.ParseAddr(string(ip)); err == nil {
			usage.used[addr] = true
		}
	}
	for _, address := range addresses.Items {
		if address.Spec.Pool.Name != pool.Name {
			continue
		}
		usage.addresses++
		if addr, err := netip.ParseAddr(string(address.Spec.Address)); err == nil {
			usage.used[addr] = true
			usage.byClaim[address.Spec.Claim.Name] = addr
		}
	}
	return usage, nil
}

// free is the address IPAM would give a new claim of this name, as IPAM's
// createAddress and allocateAddress choose it, leaving out the addresses in
// skip: the address the name already has; else its pre-allocation, if it
// lies in one of the pool's ranges (used or not, as IPAM takes it); else the
// first address of the ranges that is neither allocated nor pre-allocated.
func (u poolUsage) free(pool *ipamv1.IPPool, claimName string, skip []string) (string, bool) {
	usable := func(addr netip.Addr) bool { return !slices.Contains(skip, addr.String()) }
	if addr, ok := u.byClaim[claimName]; ok {
		return addr.String(), usable(addr)
	}
	preAllocated, hasPreAllocation := pool.Spec.PreAllocations[claimName]
	wanted, err := netip.ParseAddr(string(preAllocated))
	if hasPreAllocation && err != nil {
		return "", false
	}
	for _, entry := range pool.Spec.Pools {
		for index := 0; ; index++ {
			ip, err := ipamv1.GetIPAddress(entry, index)
			if err != nil {
				break
			}
			addr, err := netip.ParseAddr(string(ip))
			switch {
			case err != nil:
			case hasPreAllocation && addr == wanted:
				return addr.String(), usable(addr)
			case !hasPreAllocation && !u.used[addr] && usable(addr):
				return addr.String(), true
			}
		}
	}
	return "", false
}

// pendingRetries carries a retry's note from the deletion of a failed claim
// to the creation of the next one, a reconcile or more later (IPAM's
// finalizer holds the name meanwhile). A restart forgets them: the next
// claim is then a first try.
type pendingRetries struct {
	mu     sync.Mutex
	byName map[types.NamespacedName]pendingRetry
}

type pendingRetry struct {
	host types.UID
	note retryNote
}

func (p *pendingRetries) put(claim types.NamespacedName, host types.UID, note retryNote) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byName == nil {
		p.byName = map[types.NamespacedName]pendingRetry{}
	}
	p.byName[claim] = pendingRetry{host: host, note: note}
}

// take returns and forgets the note for the next claim of this name of
// the host.
func (p *pendingRetries) take(claim types.NamespacedName, host types.UID) (retryNote, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pending, ok := p.byName[claim]
	delete(p.byName, claim)
	return pending.note, ok && pending.host == host
}
