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
	"strings"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	capipamv1 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
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
	// queued is a claim whose turn has not come: older failed claims of the
	// pool take the addresses that look free first.
	queued bool
}

// readRetryNote reads a claim's retry note. The annotation can be edited by
// hand: a note that is no JSON object of the note's fields, or whose
// address is no IP address, counts as none (at worst one more claim); an
// attempt below 1 counts as the first, above retriesOfOneAddress as the
// last; refused entries that are no IP address are dropped. The second
// result says what was wrong, for the log.
func readRetryNote(claim *ipamv1.IPClaim) (retryNote, string) {
	value, ok := claim.Annotations[preprovv1.RetryAnnotation]
	if !ok {
		return retryNote{}, ""
	}
	var note retryNote
	if err := json.Unmarshal([]byte(value), &note); err != nil {
		return retryNote{}, fmt.Sprintf("annotation %s is not a retry note (%v): taken for none", preprovv1.RetryAnnotation, err)
	}
	address, err := netip.ParseAddr(note.Address)
	if err != nil {
		return retryNote{}, fmt.Sprintf("annotation %s names no IP address (%q): taken for none", preprovv1.RetryAnnotation, note.Address)
	}
	var problem string
	if note.Attempt < 1 || note.Attempt > retriesOfOneAddress {
		problem = fmt.Sprintf("annotation %s has attempt %d, outside 1..%d: taken for the nearest", preprovv1.RetryAnnotation,
			note.Attempt, retriesOfOneAddress)
	}
	note.Address, note.Attempt = address.String(), min(max(note.Attempt, 1), retriesOfOneAddress)
	refused := make([]string, 0, len(note.Refused))
	for _, entry := range note.Refused {
		if addr, err := netip.ParseAddr(entry); err == nil && !slices.Contains(refused, addr.String()) {
			refused = append(refused, addr.String())
		}
	}
	if len(refused) == 0 {
		refused = nil
	}
	note.Refused = refused
	return note, problem
}

// decideRetry decides what to do with a claim IPAM gave up on, from the
// pool's usage now. A claim not in turn (retryTurns) is not made again.
func decideRetry(claim *ipamv1.IPClaim, pool *ipamv1.IPPool, usage poolUsage, inTurn bool, now time.Time) retryDecision {
	recorded, err := strconv.Atoi(claim.Annotations[preprovv1.PoolAddressesAnnotation])
	// A negative count is a hand edit: taken for none, and written again.
	hasRecord := err == nil && recorded >= 0
	if !inTurn {
		return retryDecision{record: !hasRecord, queued: true}
	}
	last, _ := readRetryNote(claim)
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
	// A claim made "in the future" (the API server's clock ahead of ours)
	// waits no longer than its backoff.
	backoff := retryBackoff << (last.Attempt - 1)
	if wait := min(backoff-now.Sub(claim.CreationTimestamp.Time), backoff); wait > 0 {
		return retryDecision{after: wait}
	}
	return retryDecision{retry: true, note: retryNote{Address: free, Attempt: last.Attempt + 1, Refused: refused}}
}

// poolUsage is what of a pool is taken, as IPAM sees it (IPAM's getIndexes):
// every IPAddress of the pool, whether or not its claim still exists, every
// Cluster API IPAddress whose spec.poolRef.name is the pool's name (of
// whatever kind: getIndexes compares the name only), and the pre-allocated
// addresses.
type poolUsage struct {
	addresses int
	used      map[netip.Addr]bool
	// byClaim is the address of each claim name that has one.
	byClaim map[string]netip.Addr
}

// usage reads a pool's IPAddresses, Metal3's and Cluster API's, from the
// cache, over every address of the namespace, so the cache's objects are
// read without a deep copy (and never changed). It runs for failed claims
// only. The cache, not a count kept by its event handlers, is read: the
// deletion that wakes the host is in the cache before any handler runs.
func (c *Claims) usage(ctx context.Context, pool *ipamv1.IPPool) (poolUsage, error) {
	addresses := &ipamv1.IPAddressList{}
	if err := c.Client.List(ctx, addresses, client.InNamespace(pool.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return poolUsage{}, fmt.Errorf("listing the IPAddresses of IPPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	clusterAPIAddresses := &capipamv1.IPAddressList{}
	err := c.Client.List(ctx, clusterAPIAddresses, client.InNamespace(pool.Namespace), client.UnsafeDisableDeepCopy)
	if err != nil && !meta.IsNoMatchError(err) {
		return poolUsage{}, fmt.Errorf("listing the Cluster API IPAddresses of IPPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	usage := poolUsage{used: map[netip.Addr]bool{}, byClaim: map[string]netip.Addr{}}
	for _, ip := range pool.Spec.PreAllocations {
		if addr, err := netip.ParseAddr(string(ip)); err == nil {
			usage.used[addr] = true
		}
	}
	for _, address := range addresses.Items {
		if address.Spec.Pool.Name == pool.Name {
			usage.add(string(address.Spec.Address), address.Spec.Claim.Name)
		}
	}
	for _, address := range clusterAPIAddresses.Items {
		if address.Spec.PoolRef.Name == pool.Name {
			usage.add(address.Spec.Address, address.Spec.ClaimRef.Name)
		}
	}
	return usage, nil
}

// add counts an address of the pool, allocated to the claim of that name.
func (u *poolUsage) add(address, claimName string) {
	u.addresses++
	if addr, err := netip.ParseAddr(address); err == nil {
		u.used[addr] = true
		u.byClaim[claimName] = addr
	}
}

// takesAFreeAddress: IPAM serves a claim of this name with an address
// that looks free. A pre-allocated claim takes its own address (IPAM's
// allocateAddress), which freeCount already counts as taken, and a name
// whose IPAddress is still there gets that one back.
func (u poolUsage) takesAFreeAddress(pool *ipamv1.IPPool, claimName string) bool {
	_, preAllocated := pool.Spec.PreAllocations[claimName]
	_, hasAddress := u.byClaim[claimName]
	return !preAllocated && !hasAddress
}

// freeCount is how many addresses of the pool's ranges are neither
// allocated nor pre-allocated, counted up to limit.
func (u poolUsage) freeCount(pool *ipamv1.IPPool, limit int) int {
	count := 0
	for _, entry := range pool.Spec.Pools {
		for index := 0; count < limit; index++ {
			ip, err := ipamv1.GetIPAddress(entry, index)
			if err != nil {
				break
			}
			if addr, err := netip.ParseAddr(string(ip)); err == nil && !u.used[addr] {
				count++
			}
		}
	}
	return count
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
// finalizer holds the name meanwhile), and counts the retry as a claim IPAM
// has to serve until the cache shows the next claim served or failed (or
// pendingRetryTTL passes: its host was deleted meanwhile). A restart
// forgets them: the next claim is then a first try.
type pendingRetries struct {
	mu     sync.Mutex
	byName map[types.NamespacedName]pendingRetry
}

// pendingRetryTTL is how long a retry counts as a claim IPAM has to serve
// when its next claim never shows.
const pendingRetryTTL = 30 * time.Second

type pendingRetry struct {
	host types.UID
	pool string
	note retryNote
	// deleted is the failed claim deleted for the retry.
	deleted types.UID
	// taken is set once the next claim was made with the note.
	taken bool
	until time.Time
}

func (p *pendingRetries) put(claim *ipamv1.IPClaim, host types.UID, note retryNote, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byName == nil {
		p.byName = map[types.NamespacedName]pendingRetry{}
	}
	p.byName[client.ObjectKeyFromObject(claim)] = pendingRetry{
		host: host, pool: claim.Spec.Pool.Name, note: note, deleted: claim.UID, until: now.Add(pendingRetryTTL),
	}
}

// take returns the note for the next claim of this name of the host, once.
func (p *pendingRetries) take(claim types.NamespacedName, host types.UID) (retryNote, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pending, ok := p.byName[claim]
	if !ok || pending.taken {
		return retryNote{}, false
	}
	pending.taken = true
	p.byName[claim] = pending
	return pending.note, pending.host == host
}

// onPool returns the failed claims of the pool deleted for a retry still
// under way, by name, forgetting those whose next claim settled (served or
// failed: settled maps claim names to UIDs) and those past their time, and
// how long until the first of the others is.
func (p *pendingRetries) onPool(pool *ipamv1.IPPool, settled map[string]types.UID, now time.Time) (map[string]types.UID, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	underWay := map[string]types.UID{}
	var firstExpiry time.Duration
	for key, pending := range p.byName {
		next, hasNext := settled[key.Name]
		samePool := key.Namespace == pool.Namespace && pending.pool == pool.Name
		switch {
		case !now.Before(pending.until) || (samePool && hasNext && next != pending.deleted):
			delete(p.byName, key)
		case samePool:
			underWay[key.Name] = pending.deleted
			if left := pending.until.Sub(now); firstExpiry == 0 || left < firstExpiry {
				firstExpiry = left
			}
		}
	}
	return underWay, firstExpiry
}

// retryTurns is which of a pool's failed claims may be made again now: one
// freed address makes one failed claim again, not all of them. Our failed
// claims of hosts we may write for take turns, oldest first, and as many
// have a turn as the pool has addresses that look free, less the claims
// IPAM has still to serve with one of them (any claim on the pool without
// address or error, and our retries under way, unless pre-allocated): IPAM
// serves those first.
type retryTurns struct {
	// hostsByClaim are the hosts of the failed claims whose turn it is, by
	// claim name.
	hostsByClaim map[string][]string
	// recheck, when set, is when a retry under way stops counting though
	// its next claim never showed: the turns may change then.
	recheck time.Duration
}

func (c *Claims) retryTurns(ctx context.Context, pool *ipamv1.IPPool, usage poolUsage) (retryTurns, error) {
	claims := &ipamv1.IPClaimList{}
	if err := c.Client.List(ctx, claims, client.InNamespace(pool.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return retryTurns{}, fmt.Errorf("listing the IPClaims of IPPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	settled, unserved := map[string]types.UID{}, map[string]bool{}
	var failed []*ipamv1.IPClaim
	for i := range claims.Items {
		claim := &claims.Items[i]
		switch {
		case claim.Spec.Pool.Name != pool.Name || !claim.DeletionTimestamp.IsZero():
		case claim.Status.Address != nil:
			settled[claim.Name] = claim.UID
		case claim.Status.ErrorMessage == nil:
			if usage.takesAFreeAddress(pool, claim.Name) {
				unserved[claim.Name] = true
			}
		default:
			settled[claim.Name] = claim.UID
			failed = append(failed, claim)
		}
	}
	underWay, recheck := c.retries.onPool(pool, settled, c.clock().Now())
	for name := range underWay {
		if usage.takesAFreeAddress(pool, name) {
			unserved[name] = true
		}
	}
	// A failed claim deleted for a retry may still show in the cache.
	failed = slices.DeleteFunc(failed, func(claim *ipamv1.IPClaim) bool { return underWay[claim.Name] == claim.UID })
	waiting, err := c.waitingForRetry(ctx, failed)
	if err != nil {
		return retryTurns{}, err
	}
	turns := min(usage.freeCount(pool, len(waiting)+len(unserved))-len(unserved), len(waiting))
	result := retryTurns{hostsByClaim: map[string][]string{}, recheck: recheck}
	for _, claim := range waiting[:max(turns, 0)] {
		result.hostsByClaim[claim.Name] = ownership.HostOwners(claim)
	}
	return result, nil
}

// waitingForRetry are the failed claims of ours whose host we may write
// for, oldest first: a host Cluster API holds, another owner pauses or that
// is being deleted would keep its turn without taking it.
func (c *Claims) waitingForRetry(ctx context.Context, failed []*ipamv1.IPClaim) ([]*ipamv1.IPClaim, error) {
	var waiting []*ipamv1.IPClaim
	for _, claim := range failed {
		hosts := ownership.HostOwners(claim)
		if !ownership.Ours(claim) || len(hosts) == 0 {
			continue
		}
		host := &bmov1alpha1.BareMetalHost{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: hosts[0]}, host)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("getting the BareMetalHost of failed IPClaim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		if host.DeletionTimestamp.IsZero() && !ownership.PausedOrMoving(host) && !ownership.PausedBySomeoneElse(host) {
			waiting = append(waiting, claim)
		}
	}
	slices.SortFunc(waiting, func(a, b *ipamv1.IPClaim) int {
		if order := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); order != 0 {
			return order
		}
		return strings.Compare(a.Name, b.Name)
	})
	return waiting, nil
}

// HostsToRetry returns the hosts whose failed claims on the Metal3 IPPool
// of that name have their turn to be made again (retryTurns): what an
// address freed in the pool wakes.
func (c *Claims) HostsToRetry(ctx context.Context, namespace, poolName string) ([]types.NamespacedName, error) {
	pool, err := readPool(ctx, c.Client, client.ObjectKey{Namespace: namespace, Name: poolName})
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	usage, err := c.usage(ctx, pool)
	if err != nil {
		return nil, err
	}
	turns, err := c.retryTurns(ctx, pool, usage)
	if err != nil {
		return nil, err
	}
	var hosts []types.NamespacedName
	for _, owners := range turns.hostsByClaim {
		for _, host := range owners {
			hosts = append(hosts, types.NamespacedName{Namespace: namespace, Name: host})
		}
	}
	return hosts, nil
}
