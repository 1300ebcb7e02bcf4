package baremetal

// HostCounts is how the hosts of one template stand.
type HostCounts struct {
	Matched, Ready, Waiting, Failed, Conflicting, Orphaned, Drifted int32
}

// CountHosts counts, from the hosts' last outcomes, the hosts a template
// selects (alone or with others) and those it set up but no longer selects.
func CountHosts(ref TemplateRef, outcomes map[string]Outcome) HostCounts {
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
