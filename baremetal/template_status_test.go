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
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/template"
)

func TestCountHosts(t *testing.T) {
	mine := template.Ref{Kind: preprovv1.KindPreprovisioningTemplate, Name: "rack-1"}
	other := template.Ref{Kind: preprovv1.KindMachineTemplate, Name: "workers"}
	tests := []struct {
		name     string
		outcomes map[string]Outcome
		want     HostCounts
	}{
		{name: "no hosts", want: HostCounts{}},
		{
			name: "every phase",
			outcomes: map[string]Outcome{
				"ready":    {Phase: PhaseReady, Template: mine},
				"stalled":  {Phase: PhaseReady, Template: mine, InspectionStalled: true},
				"waiting":  {Phase: PhaseWaiting, Template: mine},
				"failed":   {Phase: PhaseFailed, Template: mine},
				"drifted":  {Phase: PhaseDrifted, Template: mine},
				"orphaned": {Phase: PhaseOrphaned, Template: mine},
				"conflict": {Phase: PhaseConflict, Conflicts: []template.Ref{other, mine}},
			},
			want: HostCounts{Matched: 6, Ready: 3, Waiting: 1, Failed: 1, Conflicting: 1, Orphaned: 1, Drifted: 1, Stalled: 1},
		},
		{
			name: "hosts kept paused for their ramdisk's endpoints",
			outcomes: map[string]Outcome{
				"unreachable":   {Phase: PhaseFailed, Template: mine, Reason: ReasonEndpointUnreachable},
				"failed":        {Phase: PhaseFailed, Template: mine, Reason: ReasonRenderFailed},
				"set up anyway": {Phase: PhaseReady, Template: mine, Unreachable: &Unreachable{Source: "the manager's --ramdisk-endpoints"}},
			},
			want: HostCounts{Matched: 3, Ready: 1, Failed: 2, Unreachable: 1},
		},
		{
			name: "other templates' hosts do not count",
			outcomes: map[string]Outcome{
				"theirs":         {Phase: PhaseReady, Template: other},
				"their conflict": {Phase: PhaseConflict, Conflicts: []template.Ref{other, {Kind: preprovv1.KindMachineTemplate, Name: "x"}}},
				"no template":    {Phase: PhaseNoTemplate},
			},
			want: HostCounts{},
		},
		{
			name: "same name, other kind, is another template",
			outcomes: map[string]Outcome{
				"host": {Phase: PhaseReady, Template: template.Ref{Kind: preprovv1.KindMachineTemplate, Name: "rack-1"}},
			},
			want: HostCounts{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, CountHosts(mine, tt.outcomes))
		})
	}
}

func TestReadyConditionOfUnreachableEndpoints(t *testing.T) {
	tests := []struct {
		name   string
		counts HostCounts
		reason string
	}{
		{name: "every failed host is kept paused for its endpoints", counts: HostCounts{Matched: 3, Ready: 1, Failed: 2, Unreachable: 2},
			reason: preprovv1.EndpointsUnreachableReason},
		{name: "other failures too", counts: HostCounts{Matched: 3, Failed: 2, Unreachable: 1}, reason: preprovv1.HostsFailedReason},
		{name: "none", counts: HostCounts{Matched: 3, Failed: 1}, reason: preprovv1.HostsFailedReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			condition := ReadyCondition(tt.counts, "")
			assert.Equal(t, tt.reason, condition.Reason)
			assert.Equal(t, metav1.ConditionFalse, condition.Status)
		})
	}
	condition := ReadyCondition(HostCounts{Matched: 3, Failed: 2, Unreachable: 2}, "")
	assert.Equal(t, "2 of 3 hosts are kept paused: their network data gives the deploy ramdisk no way to the endpoints it must "+
		"reach without DHCP; see their PreprovisioningEndpointUnreachable Warning events", condition.Message)
}
