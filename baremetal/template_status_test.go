package baremetal

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCountHosts(t *testing.T) {
	mine := TemplateRef{Kind: KindPreprovisioningTemplate, Name: "rack-1"}
	other := TemplateRef{Kind: KindMachineTemplate, Name: "workers"}
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
				"waiting":  {Phase: PhaseWaiting, Template: mine},
				"failed":   {Phase: PhaseFailed, Template: mine},
				"drifted":  {Phase: PhaseDrifted, Template: mine},
				"orphaned": {Phase: PhaseOrphaned, Template: mine},
				"conflict": {Phase: PhaseConflict, Conflicts: []TemplateRef{other, mine}},
			},
			want: HostCounts{Matched: 5, Ready: 2, Waiting: 1, Failed: 1, Conflicting: 1, Orphaned: 1, Drifted: 1},
		},
		{
			name: "other templates' hosts do not count",
			outcomes: map[string]Outcome{
				"theirs":         {Phase: PhaseReady, Template: other},
				"their conflict": {Phase: PhaseConflict, Conflicts: []TemplateRef{other, {Kind: KindMachineTemplate, Name: "x"}}},
				"no template":    {Phase: PhaseNoTemplate},
			},
			want: HostCounts{},
		},
		{
			name: "same name, other kind, is another template",
			outcomes: map[string]Outcome{
				"host": {Phase: PhaseReady, Template: TemplateRef{Kind: KindMachineTemplate, Name: "rack-1"}},
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
