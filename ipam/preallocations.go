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
	"sync"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
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
// 10,000 on a loaded 2-core test machine), so hosts recording in one pool at
// once share one patch: a host costs one pool write or less.
type Preallocations struct {
	Client client.Client

	mu sync.Mutex
	// collecting is, per pool, the batch that entries join; sending is
	// true while a batch of the pool is being written.
	collecting map[client.ObjectKey]*entryBatch
	sending    map[client.ObjectKey]bool
}

// entryBatch is the entries of one pool written by one patch.
type entryBatch struct {
	entries map[string]ipamv1.IPAddressStr
	// turn is closed once no other batch of the pool is being written:
	// then the first of its hosts to see it sends it.
	turn  chan struct{}
	taken bool
	// done is closed once it was written, with err.
	done chan struct{}
	err  error
}

// Ensure records the addresses of the host's ready claims. It writes a pool
// only when its entry is missing or different. An entry someone else wrote
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
		if err := p.record(ctx, poolKey, state.Claim, ip); err != nil {
			return nil, fmt.Errorf("recording %s in IPPool %s spec.preAllocations: %w", ip, poolKey, err)
		}
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

// record adds the entry to the pool's collecting batch and returns once that
// batch is written. The first host to find the pool free sends the batch;
// the others wait, and while it is written the next batch collects.
func (p *Preallocations) record(ctx context.Context, poolKey client.ObjectKey, key string, ip ipamv1.IPAddressStr) error {
	batch := p.join(poolKey, key, ip)
	turn := batch.turn
	for {
		select {
		case <-batch.done:
			return batch.err
		case <-ctx.Done():
			return ctx.Err()
		case <-turn:
			turn = nil
			if p.take(poolKey, batch) {
				p.send(ctx, poolKey, batch)
				return batch.err
			}
		}
	}
}

func (p *Preallocations) join(poolKey client.ObjectKey, key string, ip ipamv1.IPAddressStr) *entryBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.collecting == nil {
		p.collecting, p.sending = map[client.ObjectKey]*entryBatch{}, map[client.ObjectKey]bool{}
	}
	batch := p.collecting[poolKey]
	if batch == nil {
		batch = &entryBatch{entries: map[string]ipamv1.IPAddressStr{}, turn: make(chan struct{}), done: make(chan struct{})}
		if !p.sending[poolKey] {
			close(batch.turn)
		}
		p.collecting[poolKey] = batch
	}
	batch.entries[key] = ip
	return batch
}

// take makes the caller the sender of batch, unless another host is.
func (p *Preallocations) take(poolKey client.ObjectKey, batch *entryBatch) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if batch.taken {
		return false
	}
	batch.taken, p.sending[poolKey] = true, true
	delete(p.collecting, poolKey)
	return true
}

// send writes the batch with a merge patch of its entries alone and no
// resourceVersion (batches of different managers never conflict), as our
// field manager, and gives the next batch of the pool its turn.
func (p *Preallocations) send(ctx context.Context, poolKey client.ObjectKey, batch *entryBatch) {
	batch.err = p.patchEntries(ctx, poolKey, batch.entries)
	close(batch.done)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sending, poolKey)
	if next := p.collecting[poolKey]; next != nil {
		close(next.turn)
	}
}

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
