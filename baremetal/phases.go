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
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/capm3-preprov/capm3-preprov/internal/metrics"
)

// HostPhases remembers the last outcome of every host we reconciled. The
// template status and the hosts metric are computed from it; the host
// controller visits every host at start-up, so it is complete again soon
// after a restart.
type HostPhases struct {
	mu       sync.RWMutex
	outcomes map[types.NamespacedName]Outcome
}

// NewHostPhases returns an empty tracker.
func NewHostPhases() *HostPhases {
	return &HostPhases{outcomes: map[types.NamespacedName]Outcome{}}
}

// Record stores a host's outcome and returns the one it replaces, and
// whether anything changed.
func (p *HostPhases) Record(host types.NamespacedName, outcome Outcome) (Outcome, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	previous, known := p.outcomes[host]
	if outcome.Phase == PhaseIgnored {
		delete(p.outcomes, host)
		return previous, known
	}
	p.outcomes[host] = outcome
	return previous, !known || !previous.Equal(outcome)
}

// Forget drops a deleted host and returns its last outcome.
func (p *HostPhases) Forget(host types.NamespacedName) (Outcome, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	previous, known := p.outcomes[host]
	delete(p.outcomes, host)
	return previous, known
}

// InNamespace returns the outcomes of the hosts of a namespace.
func (p *HostPhases) InNamespace(namespace string) map[string]Outcome {
	p.mu.RLock()
	defer p.mu.RUnlock()
	outcomes := map[string]Outcome{}
	for host, outcome := range p.outcomes {
		if host.Namespace == namespace {
			outcomes[host.Name] = outcome
		}
	}
	return outcomes
}

// CountHosts counts the hosts by phase and by whether they boot over the
// network.
func (p *HostPhases) CountHosts() map[metrics.HostGroup]int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	counts := map[metrics.HostGroup]int{}
	for _, outcome := range p.outcomes {
		counts[metrics.HostGroup{Phase: string(outcome.Phase), BootNeedsDHCP: outcome.BootNeedsDHCP != ""}]++
	}
	return counts
}

// Equal reports whether two outcomes say the same.
func (o Outcome) Equal(other Outcome) bool {
	return o.Phase == other.Phase && o.Template == other.Template && o.Reason == other.Reason &&
		o.Message == other.Message && slices.Equal(o.Conflicts, other.Conflicts) && o.BootNeedsDHCP == other.BootNeedsDHCP &&
		o.CollidingData == other.CollidingData &&
		slices.Equal(o.LeftOvers, other.LeftOvers)
}

// Templates are the templates an outcome concerns.
func (o Outcome) Templates() []TemplateRef {
	if o.Template != (TemplateRef{}) {
		return append([]TemplateRef{o.Template}, o.Conflicts...)
	}
	return o.Conflicts
}
