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

package baremetal

import (
	"fmt"
	"strings"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

func TestEventNoteFitsTheEventsAPI(t *testing.T) {
	failures := make([]string, 6)
	for i := range failures {
		failures[i] = fmt.Sprintf("IPAM could not allocate an address from IPPool %q for IPClaim %q: Exhausted IP Pools; "+
			"the claim is retried when the pool changes (for example when it grows) or one of its addresses is released",
			fmt.Sprintf("pool-%d", i), fmt.Sprintf("node-0-pool-%d", i))
	}
	templates := make([]string, 40)
	for i := range templates {
		templates[i] = fmt.Sprintf("Metal3PreprovisioningTemplate/rack-%02d", i)
	}
	conflict := fmt.Sprintf("selected by 40 templates (%s): the host is left untouched until exactly one selects it",
		strings.Join(templates, ", "))
	tests := []struct {
		name, message string
		items         []string
		want          string
	}{
		{name: "a short message stays whole", message: "one; two", items: []string{"one", "two"}, want: "one; two"},
		{
			name: "a list of failures keeps the first ones", message: strings.Join(failures, "; "), items: failures,
			want: strings.Join(failures[:4], "; ") + " … and 2 more",
		},
		{
			name: "a list inside words keeps the words after it", message: conflict, items: templates,
			want: "selected by 40 templates (" + strings.Join(templates[:23], ", ") +
				" … and 17 more): the host is left untouched until exactly one selects it",
		},
		{
			name: "a message without its list is cut", message: strings.Repeat("é", 600), items: []string{"absent", "too"},
			want: strings.Repeat("é", 510) + "…",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			note := EventNote(tt.message, tt.items)
			assert.Equal(t, tt.want, note)
			assert.LessOrEqual(t, len(note), MaxEventNote)
		})
	}
}

// The stall counts from when BMO started the host's current registration
// or inspection, or from our unpause when that is later or unknown.
func TestInspectionStallCountsFromEnteringTheState(t *testing.T) {
	unpausedAt := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	later := unpausedAt.Add(24 * time.Hour)
	earlier := unpausedAt.Add(-time.Hour)
	history := func(register, inspect time.Time) bmov1alpha1.OperationHistory {
		return bmov1alpha1.OperationHistory{
			Register: bmov1alpha1.OperationMetric{Start: metav1.NewTime(register)},
			Inspect:  bmov1alpha1.OperationMetric{Start: metav1.NewTime(inspect)},
		}
	}
	tests := []struct {
		name    string
		state   bmov1alpha1.ProvisioningState
		history bmov1alpha1.OperationHistory
		since   time.Time
	}{
		{name: "not registered yet", state: bmov1alpha1.StateNone, since: unpausedAt},
		{name: "inspecting, no history", state: bmov1alpha1.StateInspecting, since: unpausedAt},
		{name: "inspected again", state: bmov1alpha1.StateInspecting, history: history(unpausedAt, later), since: later},
		{name: "registered again", state: bmov1alpha1.StateRegistering, history: history(later, unpausedAt), since: later},
		{name: "inspecting since before our unpause", state: bmov1alpha1.StateInspecting, history: history(earlier, earlier), since: unpausedAt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := &bmov1alpha1.BareMetalHost{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{preprovv1.UnpausedAtAnnotation: unpausedAt.Format(time.RFC3339)}},
				Status:     bmov1alpha1.BareMetalHostStatus{Provisioning: bmov1alpha1.ProvisionStatus{State: tt.state}, OperationHistory: tt.history},
			}
			stalled, left := InspectionStall(host, tt.since.Add(time.Minute), 15*time.Minute)
			assert.False(t, stalled)
			assert.Equal(t, 14*time.Minute, left)
			stalled, _ = InspectionStall(host, tt.since.Add(15*time.Minute), 15*time.Minute)
			assert.True(t, stalled)
		})
	}
}
