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

// Package expectations remembers this process's own writes until its
// informer cache shows them, as the expectations of Kubernetes' ReplicaSet
// controller do. A reconcile that runs on a cache behind our last write would
// otherwise write again: the create is refused (AlreadyExists) or the patch
// loses its optimistic lock (Conflict), and a refused request still takes a
// token from the client's rate limiter, which bounds a fleet's set-up time.
//
// Layer: an internal/ leaf; it imports nothing of this module.
package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultTimeout is how long a write is expected when Writes.Timeout is not
// set. A cache shows a write within a second or two even under load.
const DefaultTimeout = 30 * time.Second

// Key names an object we wrote: its kind, its namespace and its name, and
// the UID of the host it was written for. An object of the same name
// written for an earlier host of the same name is another write.
type Key struct {
	Kind string
	types.NamespacedName
	Host types.UID
}

// Writes holds our writes that the cache has not shown yet, of every kind:
// one store for a host's claims, its Secret and the host itself. The zero
// value is ready to use.
type Writes struct {
	// Timeout bounds how long a write is expected. Past it the cache is
	// taken to have missed the write for good (the object was deleted
	// again before it showed, say) and the caller acts as if nothing had
	// been written.
	Timeout time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu         sync.Mutex
	pending    map[Key]write
	lastPruned time.Time
}

type write struct {
	// over is the resourceVersion the cache shows until it has the write,
	// "" for a create.
	over string
	at   time.Time
}

// Wrote records a write of the object key over the resourceVersion the
// cache showed; "" records a create.
func (w *Writes) Wrote(key Key, overVersion string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.pending == nil {
		w.pending = map[Key]write{}
	}
	w.pending[key] = write{over: overVersion, at: now}
	// Writes whose object is never read again (its host was deleted) would
	// otherwise stay for good.
	if now.Sub(w.lastPruned) > w.timeout() {
		for k, pending := range w.pending {
			if now.Sub(pending.at) > w.timeout() {
				delete(w.pending, k)
			}
		}
		w.lastPruned = now
	}
}

// Behind reports whether a cache that shows the object at cachedVersion (""
// when it does not have the object) has not caught up with our last write
// yet, and for how much longer the write is expected. Once the cache shows
// another version, or the timeout has passed, the write is forgotten.
func (w *Writes) Behind(key Key, cachedVersion string) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pending, ok := w.pending[key]
	if !ok {
		return 0, false
	}
	left := w.timeout() - w.now().Sub(pending.at)
	if pending.over != cachedVersion || left <= 0 {
		delete(w.pending, key)
		return 0, false
	}
	return left, true
}

// Forget drops the write of the object key, once the cache is known to show
// it.
func (w *Writes) Forget(key Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, key)
}

func (w *Writes) timeout() time.Duration {
	if w.Timeout > 0 {
		return w.Timeout
	}
	return DefaultTimeout
}

func (w *Writes) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}
