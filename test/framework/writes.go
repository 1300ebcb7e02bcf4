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

package framework

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// WriteCounter counts the writes a client sends to the API server, by verb
// and kind, so tests can assert that a reconcile wrote nothing.
type WriteCounter struct {
	scheme *runtime.Scheme
	mu     sync.Mutex
	counts map[string]int
}

// NewCountingClient returns a client over the control plane that counts
// every write into the returned counter.
func (cp *ControlPlane) NewCountingClient() (client.Client, *WriteCounter, error) {
	inner, err := client.NewWithWatch(cp.Config, client.Options{Scheme: cp.Scheme})
	if err != nil {
		return nil, nil, err
	}
	counter := &WriteCounter{scheme: cp.Scheme, counts: map[string]int{}}
	return interceptor.NewClient(inner, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			counter.add("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			counter.add("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			counter.add("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			counter.add("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch,
			opts ...client.SubResourcePatchOption,
		) error {
			counter.add("patch/"+sub, obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			counter.add("update/"+sub, obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}), counter, nil
}

func (w *WriteCounter) add(verb string, obj client.Object) {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := apiutil.GVKForObject(obj, w.scheme); err == nil {
		kind = gvk.Kind
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counts[verb+" "+kind]++
}

// Writes lists the writes counted so far as "verb Kind: n", sorted.
func (w *WriteCounter) Writes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	writes := make([]string, 0, len(w.counts))
	for key, n := range w.counts {
		writes = append(writes, fmt.Sprintf("%s: %d", key, n))
	}
	sort.Strings(writes)
	return writes
}

// Reset forgets the writes counted so far.
func (w *WriteCounter) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counts = map[string]int{}
}
