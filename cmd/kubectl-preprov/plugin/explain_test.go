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
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/capm3-preprov/capm3-preprov/baremetal"
)

// TestSituation covers the situations the controllers suite cannot set up
// while its manager runs (controllers/plugin_test.go has the others).
func TestSituation(t *testing.T) {
	deleted := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.Now())}}
	tests := []struct {
		name    string
		host    *bmov1alpha1.BareMetalHost
		outcome baremetal.Outcome
		writes  bool
		want    Situation
	}{
		{"set up", &bmov1alpha1.BareMetalHost{}, baremetal.Outcome{Phase: baremetal.PhaseReady}, false, SituationSetUp},
		{"not set up yet", &bmov1alpha1.BareMetalHost{}, baremetal.Outcome{Phase: baremetal.PhaseReady}, true, SituationNotSetUpYet},
		{"being deleted", deleted, baremetal.Outcome{Phase: baremetal.PhaseIgnored, Ignored: baremetal.BeingDeleted}, false, SituationBeingDeleted},
		{"waiting for the cache", &bmov1alpha1.BareMetalHost{},
			baremetal.Outcome{Phase: baremetal.PhaseWaiting, Waiting: baremetal.WaitingForCache, Message: `Secret "x" was created; waiting for it to show in the cache`}, false, SituationWaiting},
		{"a Secret of another", &bmov1alpha1.BareMetalHost{},
			baremetal.Outcome{Phase: baremetal.PhaseFailed, Reason: baremetal.ReasonSecretConflict, Message: "delete or rename it"}, false, SituationFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why, fix := situation(tt.host, tt.outcome, tt.writes)
			assert.Equal(t, tt.want, got)
			assert.NotEmpty(t, why)
			assert.NotEmpty(t, fix)
		})
	}
}
