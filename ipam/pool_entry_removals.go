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
	"sync"
	"time"

	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PoolEntryWindow is how long the spec.preAllocations entries of deleted
// hosts, and the addresses of hosts set up, gather, per pool, before one
// write removes or records them all. A write of a pool costs the API server
// the whole pool (10,000 entries: about a second), and a fleet deleted or
// set up at once would otherwise write it once per host. Metal3 IPAM reads
// an entry only when it allocates a claim of its name
// (IPPoolManager.allocateAddress) and counts every entry's address as taken
// (getIndexes): an entry removed a window later frees its address a window
// later, and an entry recorded a window later protects the address of a
// claim made again from then on; nothing else.
const PoolEntryWindow = time.Second

// poolEntryRemovals are the entries of deleted hosts waiting, per pool, for
// their pool's next write.
type poolEntryRemovals struct {
	once    sync.Once
	mu      sync.Mutex
	pending map[client.ObjectKey]sets.Set[string]
	queue   workqueue.TypedRateLimitingInterface[client.ObjectKey]
}

func (r *poolEntryRemovals) init() {
	r.once.Do(func() {
		r.pending = map[client.ObjectKey]sets.Set[string]{}
		r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[client.ObjectKey](),
			workqueue.TypedRateLimitingQueueConfig[client.ObjectKey]{Name: "pool-entry-removals"})
	})
}

// add queues the removal of keys from the pool, in its next window: the
// queue holds a pool once however many hosts add to it meanwhile.
func (r *poolEntryRemovals) add(pool client.ObjectKey, keys ...string) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[pool] == nil {
		r.pending[pool] = sets.New[string]()
	}
	r.pending[pool].Insert(keys...)
	r.queue.AddAfter(pool, PoolEntryWindow)
}

// take hands out what waits for the pool.
func (r *poolEntryRemovals) take(pool client.ObjectKey) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := sets.List(r.pending[pool])
	delete(r.pending, pool)
	return keys
}

// Start removes the queued entries until ctx ends: one pool at a time,
// each in one write. A failed write keeps its entries queued and is
// retried with the controllers' backoff; the start-up sweep catches what a
// manager that stopped meanwhile left.
func (s *Sweeper) Start(ctx context.Context) error {
	s.removals.init()
	go func() {
		<-ctx.Done()
		s.removals.queue.ShutDown()
	}()
	log := ctrl.LoggerFrom(ctx).WithName("pool-entry-removals")
	for {
		pool, shutdown := s.removals.queue.Get()
		if shutdown {
			return nil
		}
		keys := s.removals.take(pool)
		if err := s.removeEntries(ctx, pool, keys); err != nil {
			log.Error(err, "Removing the spec.preAllocations entries of deleted hosts; retrying", "pool", pool, "entries", len(keys))
			s.removals.add(pool, keys...)
			s.removals.queue.AddRateLimited(pool)
		} else {
			s.removals.queue.Forget(pool)
		}
		s.removals.queue.Done(pool)
	}
}

// removeEntries removes, in one write, those of keys that are entries of
// ours in the pool and whose hosts are gone. The write is fenced on the
// pool as read (an optimistic lock): Metal3 IPAM writes the pool's status
// on every allocation, so a write that lost the race reads the pool again
// from the API, at once, and decides again.
func (s *Sweeper) removeEntries(ctx context.Context, poolKey client.ObjectKey, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	pool := &ipamv1.IPPool{}
	if err := s.Client.Get(ctx, poolKey, pool); err != nil {
		return client.IgnoreNotFound(err)
	}
	for attempt := 1; ; attempt++ {
		err := s.removeEntriesOfGoneHosts(ctx, pool, oursAmong(pool, keys))
		if !apierrors.IsConflict(err) || attempt == fencedAttempts {
			return err
		}
		fresh := &ipamv1.IPPool{}
		if err := s.APIReader.Get(ctx, poolKey, fresh); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("reading IPPool %s again: %w", poolKey, err))
		}
		pool = fresh
	}
}

// oursAmong are those of keys the pool holds as entries of ours.
func oursAmong(pool *ipamv1.IPPool, keys []string) []string {
	ours := sets.New(ownKeys(pool)...)
	var among []string
	for _, key := range keys {
		if _, entry := pool.Spec.PreAllocations[key]; entry && ours.Has(key) {
			among = append(among, key)
		}
	}
	return among
}
