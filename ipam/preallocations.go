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
	"slices"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// Preallocations is the optional backstop: it records each host's address
// in its pool's spec.preAllocations under the claim name, so IPAM hands the
// same address to a claim of that name even if the claim is recreated, and
// removes the entry once the host is gone (see Sweeper).
//
// Our entries are those the API server records as last set by
// preprovv1.PreallocationsFieldManager (the pool's metadata.managedFields):
// no list of ours grows with the pool, and an entry someone else changes is
// no longer ours. A write of a pool of thousands of entries costs the API
// server about a second however few entries it adds (measured: 1.8 s at
// 10,000 on a loaded 2-core test machine), so a host's reconcile only
// queues its entries, and Start writes each pool at most once per
// PoolEntryWindow with every entry queued meanwhile: a fleet set up at the
// client's pace wrote each pool 0.7 times per host when a host waited for
// its own write, and those writes took the API server's CPUs.
type Preallocations struct {
	Client client.Client

	records poolWrites[pendingEntry]
}

// pendingEntry is an address to record, for as long as the claim that
// holds it stands.
type pendingEntry struct {
	ip    ipamv1.IPAddressStr
	claim types.UID
}

func (pendingEntry) queueName() string { return "pool-entry-records" }

// Ensure queues the addresses of the host's ready claims whose pools lack
// them, for their pool's next write (Start). An entry someone else wrote
// with the same address stays theirs. It returns, for each pool too large
// to take the host's entry (poolFull), why and what to do: the host's claim
// still holds its address.
func (p *Preallocations) Ensure(ctx context.Context, host *bmov1alpha1.BareMetalHost, states []PoolState) ([]string, error) {
	var full []string
	for _, state := range states {
		// Only Metal3 IPPools have spec.preAllocations.
		if state.Address == nil || state.ClaimKind == kindIPAddressClaim {
			continue
		}
		poolKey := client.ObjectKey{Namespace: host.Namespace, Name: state.Pool}
		pool, err := readPool(ctx, p.Client, poolKey)
		if err != nil {
			return nil, fmt.Errorf("getting IPPool %s/%s: %w", host.Namespace, state.Pool, err)
		}
		ip := ipamv1.IPAddressStr(state.Address.IP)
		if pool.Spec.PreAllocations[state.Claim] == ip {
			continue
		}
		if note, isFull := poolFull(pool, state.Claim, ip); isFull {
			full = append(full, note)
			continue
		}
		p.records.add(poolKey, state.Claim, pendingEntry{ip: ip, claim: state.ClaimUID})
	}
	return full, nil
}

const (
	// EtcdRequestLimit is etcd's default --max-request-bytes (1.5 MiB): an
	// object is written to etcd whole, so a pool larger than this can no
	// longer be written at all (the API server answers "etcdserver: request
	// is too large"), its status by IPAM included. The API server's own
	// limit on a request's body (3 MiB) is larger, and our patches are small.
	EtcdRequestLimit = 3 << 19
	// PoolSizeBudget is the part of EtcdRequestLimit a pool may take by
	// entrySize's estimate (10,000 entries of keys up to 23 characters):
	// the rest is for what it does not count, such as the claims with no
	// entry IPAM's status.allocations also lists. Measured on
	// kube-apiserver 1.35 with etcd 3.6: past about 1.55 MB the API server
	// stores a pool without any managedFields (and with them goes the
	// record of which entries are ours), and etcd refuses it past 1.5 MiB.
	PoolSizeBudget = EtcdRequestLimit * 9 / 10
)

// poolFull tells whether the pool, with the entry added, would be over
// PoolSizeBudget, and then why and what to do.
func poolFull(pool *ipamv1.IPPool, key string, ip ipamv1.IPAddressStr) (string, bool) {
	size := entrySize(key, ip)
	for existing, existingIP := range pool.Spec.PreAllocations {
		size += entrySize(existing, existingIP)
	}
	if size <= PoolSizeBudget {
		return "", false
	}
	return fmt.Sprintf("IPPool %q holds %d spec.preAllocations entries: with this host's, Metal3 IPAM's status.allocations "+
		"and both managers' managedFields it would take about %d KiB, over the %d KiB a pool may take of etcd's %d KiB "+
		"request limit (past it the API server drops the pool's managedFields, and then refuses every write of the pool, "+
		"IPAM's too), so the host's address is not recorded in it (its IPClaim still holds it): shard the pool, splitting "+
		"its hosts and addresses over several IPPools (one per rack, with a template each), or run without --pool-preallocations",
		pool.Name, len(pool.Spec.PreAllocations), size>>10, PoolSizeBudget>>10, EtcdRequestLimit>>10), true
}

// entrySize estimates what one entry costs a pool as stored: the entry
// ("key":"ip",) in spec.preAllocations and as IPAM lists the claim's
// address in status.allocations, and its record ("f:key":{},) in our
// managedFields and in IPAM's. Measured: 165 bytes an entry for 10,000
// entries of 29-character keys; this gives 162.
func entrySize(key string, ip ipamv1.IPAddressStr) int {
	return 2*(len(key)+len(ip)+6) + 2*(len(key)+7)
}

// Start writes the queued entries until ctx ends: one pool at a time, each
// in one write.
func (p *Preallocations) Start(ctx context.Context) error {
	return p.records.run(ctx, p.write)
}

// write records, in one patch, those of entries the pool lacks whose
// claims still stand as the cache shows them: an entry written once its
// claim is gone would hold the address for the name after IPAM gave it to
// another claim. The window left (a claim deleted as the pool is written)
// the sweep closes: a host gone with an entry written after its sweep is
// swept again on the pool's event (controllers' sweepHostsOfRecordedEntries),
// and a claim of that name that IPAM cannot serve drops it (RemoveTaken).
func (p *Preallocations) write(ctx context.Context, poolKey client.ObjectKey, entries map[string]pendingEntry) error {
	if len(entries) == 0 {
		return nil
	}
	pool, err := readPool(ctx, p.Client, poolKey)
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	record := map[string]ipamv1.IPAddressStr{}
	for key, entry := range entries {
		if pool.Spec.PreAllocations[key] == entry.ip {
			continue
		}
		standing, err := p.claimStands(ctx, client.ObjectKey{Namespace: poolKey.Namespace, Name: key}, entry.claim)
		if err != nil {
			return err
		}
		if standing {
			record[key] = entry.ip
		}
	}
	if len(record) == 0 {
		return nil
	}
	if err := p.patchEntries(ctx, poolKey, record); err != nil {
		return fmt.Errorf("recording %d addresses in IPPool %s spec.preAllocations: %w", len(record), poolKey, err)
	}
	return nil
}

// claimStands: the cache has the claim, with that UID, not being deleted
// and holding an address.
func (p *Preallocations) claimStands(ctx context.Context, key client.ObjectKey, uid types.UID) (bool, error) {
	claim := &ipamv1.IPClaim{}
	err := p.Client.Get(ctx, key, claim)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("getting IPClaim %s: %w", key, err)
	}
	return claim.UID == uid && claim.DeletionTimestamp.IsZero() && claim.Status.Address != nil, nil
}

// patchEntries writes entries with a merge patch of the entries alone and
// no resourceVersion (writes of different managers never conflict), as our
// field manager.
func (p *Preallocations) patchEntries(ctx context.Context, poolKey client.ObjectKey, entries map[string]ipamv1.IPAddressStr) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"preAllocations": entries}})
	if err != nil {
		return err
	}
	pool := &ipamv1.IPPool{ObjectMeta: metav1.ObjectMeta{Namespace: poolKey.Namespace, Name: poolKey.Name}}
	return p.Client.Patch(ctx, pool, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(preprovv1.PreallocationsFieldManager))
}

// ownKeys are the pool's spec.preAllocations keys we wrote: those our field
// manager set last, and those of the earlier versions' annotation. Reading
// them costs O(entries of the pool): call it only when a removal is likely.
func ownKeys(pool *ipamv1.IPPool) []string {
	keys := append(managedKeys(pool), legacyKeys(pool)...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// managedKeys are the spec.preAllocations keys the API server records as
// set by our field manager. A record we cannot read counts as none: we then
// remove nothing.
func managedKeys(pool *ipamv1.IPPool) []string {
	var keys []string
	for _, entry := range pool.ManagedFields {
		if entry.Manager != preprovv1.PreallocationsFieldManager || entry.Operation != metav1.ManagedFieldsOperationUpdate ||
			entry.Subresource != "" || entry.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec struct {
				PreAllocations map[string]json.RawMessage `json:"f:preAllocations"`
			} `json:"f:spec"`
		}
		if json.Unmarshal(entry.FieldsV1.Raw, &fields) != nil {
			continue
		}
		for field := range fields.Spec.PreAllocations {
			if key, ok := strings.CutPrefix(field, "f:"); ok {
				keys = append(keys, key)
			}
		}
	}
	return keys
}

func legacyKeys(pool *ipamv1.IPPool) []string {
	var keys []string
	if value := pool.Annotations[preprovv1.PreallocatedForAnnotation]; value != "" {
		// A value we cannot read is treated as empty: we then remove nothing.
		_ = json.Unmarshal([]byte(value), &keys)
	}
	return keys
}

// setOwnKeys records, before a patch that removes our other entries, that
// keys are the ones of ours left. The API server drops a removed entry from
// our field manager's record itself; the earlier versions' annotation keeps
// only its keys among keys, and goes when none is left.
func setOwnKeys(pool *ipamv1.IPPool, keys []string) error {
	left := sets.New(keys...)
	legacy := slices.DeleteFunc(legacyKeys(pool), func(key string) bool { return !left.Has(key) })
	if len(legacy) == 0 {
		delete(pool.Annotations, preprovv1.PreallocatedForAnnotation)
		return nil
	}
	value, err := json.Marshal(legacy)
	if err != nil {
		return err
	}
	pool.Annotations[preprovv1.PreallocatedForAnnotation] = string(value)
	return nil
}

// RemoveUnused drops the entries we wrote for the host on pools other than
// keep, unless networkData (what its Secret holds) still names the address.
func (p *Preallocations) RemoveUnused(ctx context.Context, host *bmov1alpha1.BareMetalHost, keep []string, networkData []byte) error {
	pools, err := listPools(ctx, p.Client, host.Namespace)
	if err != nil {
		return fmt.Errorf("listing IPPools: %w", err)
	}
	for i := range pools {
		cached := &pools[i]
		claimName := ClaimName(host.Name, cached.Name)
		ip, present := cached.Spec.PreAllocations[claimName]
		if !present || slices.Contains(keep, cached.Name) || networkDataNamesAddress(networkData, string(ip)) {
			continue
		}
		if err := p.removeOwnEntry(ctx, cached, claimName); err != nil {
			return err
		}
	}
	return nil
}

// removeOwnEntry removes the pool's entry for claimName if we wrote it,
// with an optimistic lock. cached is the cache's pool and is not changed.
func (p *Preallocations) removeOwnEntry(ctx context.Context, cached *ipamv1.IPPool, claimName string) error {
	keys := ownKeys(cached)
	if !slices.Contains(keys, claimName) {
		return nil
	}
	original, pool := cached, cached.DeepCopy()
	delete(pool.Spec.PreAllocations, claimName)
	if err := setOwnKeys(pool, slices.DeleteFunc(keys, func(key string) bool { return key == claimName })); err != nil {
		return err
	}
	if err := p.Client.Patch(ctx, pool, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing %s from IPPool %s/%s spec.preAllocations: %w", claimName, pool.Namespace, pool.Name, err)
	}
	return nil
}
