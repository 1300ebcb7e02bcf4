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

package capiipamstandin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/event"

	inclusterv1alpha2 "github.com/capm3-preprov/capm3-preprov/test/standins/capiipamstandin/v1alpha2"
)

// A pool brings its claims back when it appears or goes, loses the paused
// annotation, or gets a free address again; the exhausted claims wait on
// the last (besides controller-runtime's backoff, which the envtest cannot
// tell apart from it).
func TestPoolChanged(t *testing.T) {
	pool := func(free int, annotations map[string]string) *inclusterv1alpha2.InClusterIPPool {
		return &inclusterv1alpha2.InClusterIPPool{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Status:     inclusterv1alpha2.InClusterIPPoolStatus{Addresses: &inclusterv1alpha2.InClusterIPPoolStatusIPAddresses{Free: free}},
		}
	}
	paused := map[string]string{clusterv1.PausedAnnotation: ""}
	changed := poolChanged()
	assert.True(t, changed.Create(event.CreateEvent{Object: pool(0, nil)}))
	assert.True(t, changed.Delete(event.DeleteEvent{Object: pool(0, nil)}))
	assert.True(t, changed.Update(event.UpdateEvent{ObjectOld: pool(0, nil), ObjectNew: pool(1, nil)}), "an address freed")
	assert.True(t, changed.Update(event.UpdateEvent{ObjectOld: pool(3, paused), ObjectNew: pool(3, nil)}), "unpaused")
	assert.False(t, changed.Update(event.UpdateEvent{ObjectOld: pool(1, nil), ObjectNew: pool(2, nil)}), "it had a free address already")
	assert.False(t, changed.Update(event.UpdateEvent{ObjectOld: pool(1, nil), ObjectNew: pool(0, nil)}), "exhausted")
}
