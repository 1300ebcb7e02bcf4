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
	"github.com/capm3-preprov/capm3-preprov/template"
)

// HostCounts is how the hosts of one template stand.
type HostCounts struct {
	Matched, Ready, Waiting, Failed, Conflicting, Orphaned, Drifted, Stalled int32
}

// CountHosts counts, from where the hosts stand, the hosts a template
// selects (alone or with others) and those it set up but no longer selects.
func CountHosts(ref template.Ref, outcomes map[string]Outcome) HostCounts {
	var counts HostCounts
	for _, outcome := range outcomes {
		if outcome.Phase == PhaseConflict {
			for _, conflict := range outcome.Conflicts {
				if conflict == ref {
					counts.Matched++
					counts.Conflicting++
				}
			}
			continue
		}
		if outcome.Template != ref {
			continue
		}
		switch outcome.Phase {
		case PhaseOrphaned:
			counts.Orphaned++
			continue
		case PhaseReady:
			counts.Ready++
			if outcome.InspectionStalled {
				counts.Stalled++
			}
		case PhaseDrifted:
			// A drifted host has network data, only not the latest.
			counts.Ready++
			counts.Drifted++
		case PhaseWaiting:
			counts.Waiting++
		case PhaseFailed:
			counts.Failed++
		}
		counts.Matched++
	}
	return counts
}
