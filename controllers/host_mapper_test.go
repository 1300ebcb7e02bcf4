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

package controllers

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// toOwningHost wakes the hosts handler.EnqueueRequestForOwner would: every
// BareMetalHost owner of any version of metal3.io, in the object's namespace,
// of the old and of the new object on an update; no other owner.
func TestToOwningHost(t *testing.T) {
	owner := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(name)}
	}
	secret := func(owners ...metav1.OwnerReference) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "metal3", Name: "s", OwnerReferences: owners}}
	}
	request := func(host string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "metal3", Name: host}}
	}
	tests := []struct {
		name     string
		old, new client.Object
		want     []reconcile.Request
	}{
		{
			name: "host owners of any version, not a Metal3Data or a kind of another group",
			new: secret(owner("metal3.io/v1alpha1", "BareMetalHost", "node-0"), owner("metal3.io/v1beta1", "BareMetalHost", "node-1"),
				owner("infrastructure.cluster.x-k8s.io/v1beta2", "Metal3Data", "data-0"), owner("example.com/v1", "BareMetalHost", "other")),
			want: []reconcile.Request{request("node-0"), request("node-1")},
		},
		{
			name: "an update wakes the host that lost the object and the one that got it",
			old:  secret(owner("metal3.io/v1alpha1", "BareMetalHost", "node-0")),
			new:  secret(owner("metal3.io/v1alpha1", "BareMetalHost", "node-1")),
			want: []reconcile.Request{request("node-0"), request("node-1")},
		},
		{
			name: "no owner",
			new:  secret(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer queue.ShutDown()
			if tt.old == nil {
				toOwningHost.Create(context.Background(), event.CreateEvent{Object: tt.new}, queue)
			} else {
				toOwningHost.Update(context.Background(), event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}, queue)
			}
			var got []reconcile.Request
			for queue.Len() > 0 {
				item, _ := queue.Get()
				got = append(got, item)
				queue.Done(item)
			}
			assert.ElementsMatch(t, tt.want, got)
		})
	}
}
