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

package plugin

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// writeRecorder runs the controller's own code against the cluster without
// writing: reads go to the API server, and each write is recorded instead
// of being sent, as if it had succeeded. So what the plugin says the
// controller would do is what its code does.
type writeRecorder struct {
	scheme *runtime.Scheme
	// Writes say what the controller would write, in order.
	Writes []string
}

// client wraps a cluster client so that none of its writes is sent.
func (w *writeRecorder) client(c client.WithWatch) client.Client {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			return w.record("create", obj)
		},
		Update: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.UpdateOption) error {
			return w.record("update", obj)
		},
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
			return w.record("patch", obj)
		},
		Delete: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.DeleteOption) error {
			return w.record("delete", obj)
		},
		DeleteAllOf: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.DeleteAllOfOption) error {
			return w.record("delete all of", obj)
		},
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			return w.recordText("apply")
		},
		SubResourceCreate: func(_ context.Context, _ client.Client, sub string, obj client.Object, _ client.Object, _ ...client.SubResourceCreateOption) error {
			return w.record("create the "+sub+" of", obj)
		},
		SubResourceUpdate: func(_ context.Context, _ client.Client, sub string, obj client.Object, _ ...client.SubResourceUpdateOption) error {
			return w.record("update the "+sub+" of", obj)
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, sub string, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
			return w.record("patch the "+sub+" of", obj)
		},
		SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
			return w.recordText("apply a subresource")
		},
	})
}

func (w *writeRecorder) record(verb string, obj client.Object) error {
	kind := "object"
	if gvk, err := apiutil.GVKForObject(obj, w.scheme); err == nil {
		kind = gvk.Kind
	}
	return w.recordText(fmt.Sprintf("%s %s %q", verb, kind, obj.GetName()))
}

func (w *writeRecorder) recordText(write string) error {
	w.Writes = append(w.Writes, write)
	return nil
}

// Eventf drops an event of the controller's, as an events.EventRecorder:
// the controller sends one per change of a host's outcome, which only its
// own process knows, so explain shows the events the host has instead.
func (w *writeRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {
}
