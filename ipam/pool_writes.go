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
	"sync"
	"time"

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

// poolEntry is what waits, under a spec.preAllocations key, for its pool's
// next write; its kind names the queue (the workqueue's metrics and the
// log).
type poolEntry interface{ queueName() string }

// poolWrites gathers, per pool, the entries that wait for the pool's next
// write, and writes each pool at most once per PoolEntryWindow with all
// that came meanwhile: the addresses of hosts set up (Preallocations) and
// the removals of deleted hosts' entries (Sweeper).
type poolWrites[E poolEntry] struct {
	once    sync.Once
	mu      sync.Mutex
	pending map[client.ObjectKey]map[string]E
	queue   workqueue.TypedRateLimitingInterface[client.ObjectKey]
}

func (w *poolWrites[E]) init() {
	w.once.Do(func() {
		var kind E
		w.pending = map[client.ObjectKey]map[string]E{}
		w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[client.ObjectKey](),
			workqueue.TypedRateLimitingQueueConfig[client.ObjectKey]{Name: kind.queueName()})
	})
}

// add queues the entry for the pool's next write, in its next window: the
// queue holds a pool once however many entries come meanwhile, and a later
// entry of a key replaces an earlier one.
func (w *poolWrites[E]) add(pool client.ObjectKey, key string, entry E) {
	w.init()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[pool] == nil {
		w.pending[pool] = map[string]E{}
	}
	w.pending[pool][key] = entry
	w.queue.AddAfter(pool, PoolEntryWindow)
}

// take hands out what waits for the pool.
func (w *poolWrites[E]) take(pool client.ObjectKey) map[string]E {
	w.mu.Lock()
	defer w.mu.Unlock()
	entries := w.pending[pool]
	delete(w.pending, pool)
	return entries
}

// putBack queues again the entries of a failed write that no later entry
// of their key replaced.
func (w *poolWrites[E]) putBack(pool client.ObjectKey, entries map[string]E) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[pool] == nil {
		w.pending[pool] = map[string]E{}
	}
	for key, entry := range entries {
		if _, replaced := w.pending[pool][key]; !replaced {
			w.pending[pool][key] = entry
		}
	}
}

// run writes the queued entries with write until ctx ends: one pool at a
// time, each in one write. A failed write keeps its entries queued and is
// retried with the controllers' backoff.
func (w *poolWrites[E]) run(ctx context.Context, write func(context.Context, client.ObjectKey, map[string]E) error) error {
	w.init()
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	var kind E
	log := ctrl.LoggerFrom(ctx).WithName(kind.queueName())
	for {
		pool, shutdown := w.queue.Get()
		if shutdown {
			return nil
		}
		entries := w.take(pool)
		if err := write(ctx, pool, entries); err != nil {
			log.Error(err, "Writing the pool's spec.preAllocations entries; retrying", "pool", pool, "entries", len(entries))
			w.putBack(pool, entries)
			w.queue.AddRateLimited(pool)
		} else {
			w.queue.Forget(pool)
		}
		w.queue.Done(pool)
	}
}
