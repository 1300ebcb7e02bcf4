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
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/capm3-preprov/capm3-preprov/internal/metrics"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// TemplateKey names a template across namespaces.
type TemplateKey struct {
	Namespace string
	Ref       template.Ref
}

// Tally keeps where each host stands and the counts the hosts metric and
// the templates' status report. A host's change moves it from the counts
// it was in to those it is in now, so neither a host event nor reading the
// counts costs more in a larger fleet. It is fed from the API objects (a
// cache's informers, starting with their initial list), never from what a
// reconcile did: a fresh manager counts every host at once.
type Tally struct {
	mu        sync.Mutex
	hosts     map[types.NamespacedName]tallied
	groups    map[metrics.HostGroup]int
	templates map[TemplateKey]HostCounts
}

// tallied is what of a host's outcome the counts read.
type tallied struct {
	phase             Phase
	template          template.Ref
	conflicts         []template.Ref
	inspectionStalled bool
	bootNeedsDHCP     bool
	// unreachable: the host is kept paused, its ramdisk without a way to
	// its endpoints.
	unreachable bool
}

// NewTally returns a tally with no host.
func NewTally() *Tally {
	return &Tally{
		hosts:     map[types.NamespacedName]tallied{},
		groups:    map[metrics.HostGroup]int{},
		templates: map[TemplateKey]HostCounts{},
	}
}

// Set records where a host stands now, and returns the templates whose
// counts changed.
func (t *Tally) Set(host types.NamespacedName, outcome Outcome) []TemplateKey {
	now := tallied{
		phase: outcome.Phase, template: outcome.Template, conflicts: outcome.Conflicts,
		inspectionStalled: outcome.InspectionStalled, bootNeedsDHCP: outcome.BootNeedsDHCP != "",
		unreachable: outcome.Phase == PhaseFailed && outcome.Reason == ReasonEndpointUnreachable,
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	before, known := t.hosts[host]
	if known && before.equal(now) {
		return nil
	}
	var changed []TemplateKey
	if known {
		changed = t.count(host.Namespace, before, -1)
	}
	t.hosts[host] = now
	return append(changed, t.count(host.Namespace, now, 1)...)
}

// Remove forgets a deleted host, and returns the templates whose counts
// changed.
func (t *Tally) Remove(host types.NamespacedName) []TemplateKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	before, known := t.hosts[host]
	if !known {
		return nil
	}
	delete(t.hosts, host)
	return t.count(host.Namespace, before, -1)
}

// Has tells whether the tally holds a host.
func (t *Tally) Has(host types.NamespacedName) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, known := t.hosts[host]
	return known
}

// Groups returns how many hosts are in each series of the hosts metric.
func (t *Tally) Groups() map[metrics.HostGroup]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.groups)
}

// OfTemplate returns how the hosts stand that a template selects (alone or
// with others) or set up and no longer selects.
func (t *Tally) OfTemplate(namespace string, ref template.Ref) HostCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.templates[TemplateKey{Namespace: namespace, Ref: ref}]
}

// count adds (sign 1) or takes away (sign -1) one host in the counts, and
// returns the templates it counts for.
func (t *Tally) count(namespace string, host tallied, sign int32) []TemplateKey {
	if host.phase != PhaseIgnored {
		group := metrics.HostGroup{Phase: string(host.phase), BootNeedsDHCP: host.bootNeedsDHCP, InspectionStalled: host.inspectionStalled}
		if t.groups[group] += int(sign); t.groups[group] == 0 {
			delete(t.groups, group)
		}
	}
	var counted []TemplateKey
	for ref, delta := range host.templateCounts() {
		key := TemplateKey{Namespace: namespace, Ref: ref}
		counts := t.templates[key]
		counts.add(delta, sign)
		if counts == (HostCounts{}) {
			delete(t.templates, key)
		} else {
			t.templates[key] = counts
		}
		counted = append(counted, key)
	}
	return counted
}

// templateCounts is what the host adds to the counts of each template it
// counts for: those in conflict over it, or the one that governs it or set
// it up.
func (h tallied) templateCounts() map[template.Ref]HostCounts {
	if h.phase == PhaseConflict {
		conflicting := make(map[template.Ref]HostCounts, len(h.conflicts))
		for _, ref := range h.conflicts {
			conflicting[ref] = HostCounts{Matched: 1, Conflicting: 1}
		}
		return conflicting
	}
	if h.template == (template.Ref{}) {
		return nil
	}
	counts := HostCounts{Matched: 1}
	switch h.phase {
	case PhaseOrphaned:
		counts = HostCounts{Orphaned: 1}
	case PhaseReady:
		counts.Ready = 1
		if h.inspectionStalled {
			counts.Stalled = 1
		}
	case PhaseDrifted:
		// A drifted host has network data, only not the latest.
		counts.Ready, counts.Drifted = 1, 1
	case PhaseWaiting:
		counts.Waiting = 1
	case PhaseFailed:
		counts.Failed = 1
		if h.unreachable {
			counts.Unreachable = 1
		}
	}
	return map[template.Ref]HostCounts{h.template: counts}
}

func (h tallied) equal(other tallied) bool {
	return h.phase == other.phase && h.template == other.template && slices.Equal(h.conflicts, other.conflicts) &&
		h.inspectionStalled == other.inspectionStalled && h.bootNeedsDHCP == other.bootNeedsDHCP &&
		h.unreachable == other.unreachable
}

// add adds delta to the counts, times sign.
func (c *HostCounts) add(delta HostCounts, sign int32) {
	c.Matched += sign * delta.Matched
	c.Ready += sign * delta.Ready
	c.Waiting += sign * delta.Waiting
	c.Failed += sign * delta.Failed
	c.Conflicting += sign * delta.Conflicting
	c.Orphaned += sign * delta.Orphaned
	c.Drifted += sign * delta.Drifted
	c.Stalled += sign * delta.Stalled
	c.Unreachable += sign * delta.Unreachable
}
