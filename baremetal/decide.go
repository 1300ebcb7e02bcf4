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
	"context"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// IgnoredBecause says why a host is not ours, in PhaseIgnored.
type IgnoredBecause string

// Why a host is not ours.
const (
	// HeldByClusterAPI is a host Cluster API tells controllers to leave
	// alone (its paused annotation, or clusterctl move's delete-for-move).
	HeldByClusterAPI IgnoredBecause = "HeldByClusterAPI"
	// BeingDeleted is a host being deleted: its claims and Secret go with it.
	BeingDeleted IgnoredBecause = "BeingDeleted"
	// PausedBySomeoneElse is a host paused with another value than ours.
	PausedBySomeoneElse IgnoredBecause = "PausedBySomeoneElse"
	// NotHandedOver is a host neither paused for us, set up by us nor
	// adopted by a template that selects it.
	NotHandedOver IgnoredBecause = "NotHandedOver"
)

// WaitingFor says what a host in PhaseWaiting waits for; empty when only
// its next reconcile can tell (a host read back from the objects).
type WaitingFor string

// What a host waits for.
const (
	// WaitingForIPAM is a host whose claims IPAM has not served yet.
	WaitingForIPAM WaitingFor = "IPAM"
	// WaitingForCache is a host whose Secret we created and our cache does
	// not show yet.
	WaitingForCache WaitingFor = "Cache"
	// WaitingForEarlierHost is a host whose Secret name is held by the
	// Secret of an earlier host of the same name.
	WaitingForEarlierHost WaitingFor = "EarlierHostsSecret"
)

// Decision is where a host stands before the steps of its set-up: the
// template that governs it, or why none does.
type Decision struct {
	// Phase is PhaseIgnored, PhaseNoTemplate, PhaseOrphaned or
	// PhaseConflict when the host is not set up now; empty when Governing
	// is, and the steps tell the rest.
	Phase Phase
	// Ignored says why, in PhaseIgnored.
	Ignored IgnoredBecause
	// HeldByClusterAPI is a host nothing may be written for while the hold
	// lasts: the reconcilers do not run the host manager for it, and
	// kubectl preprov explain says so. The other fields still say where the
	// host stood: the template status and the hosts metric keep counting it
	// there, so a move writes no status.
	HeldByClusterAPI bool
	// Governing is the one template that selects the host, after a
	// rollout's resolution, whether the host is ours or not: kubectl
	// preprov render shows what it would render.
	Governing *template.Template
	// Conflicts are the templates that all select the host when none
	// governs it.
	Conflicts []template.Ref
	// SetUpFrom is the template recorded on the host when we set it up.
	SetUpFrom template.Ref
	// Selecting are the templates that select the host, and Invalid why
	// the namespace's invalid templates select none.
	Selecting []template.Ref
	Invalid   []error
	// Resolution names the left-overs of a rollout that Governing wins over.
	Resolution Resolution
}

// Decide tells where a host stands given the templates that select it
// (after a rollout's resolution): from its deletion, its pause, whether we
// set it up and the templates' adoption. It is the one place this is
// decided: the host manager's reconcile, the template status and the hosts
// metric (Standing), and kubectl preprov render and explain all call it.
func Decide(host *bmov1alpha1.BareMetalHost, matching []template.Template) Decision {
	decision := Decision{HeldByClusterAPI: ownership.PausedOrMoving(host), SetUpFrom: setUpFrom(host)}
	switch len(matching) {
	case 0:
	case 1:
		decision.Governing = &matching[0]
	default:
		for _, selecting := range matching {
			decision.Conflicts = append(decision.Conflicts, selecting.Ref)
		}
	}
	setUp := ownership.Ours(host)
	switch {
	case !host.DeletionTimestamp.IsZero():
		decision.Phase, decision.Ignored = PhaseIgnored, BeingDeleted
	case ownership.PausedBySomeoneElse(host):
		decision.Phase, decision.Ignored = PhaseIgnored, PausedBySomeoneElse
	case !ownership.PausedForUs(host) && !setUp && !template.AnyAdopts(matching):
		decision.Phase, decision.Ignored = PhaseIgnored, NotHandedOver
	case len(matching) == 0 && setUp:
		decision.Phase = PhaseOrphaned
	case len(matching) == 0:
		decision.Phase = PhaseNoTemplate
	case len(matching) > 1:
		decision.Phase = PhaseConflict
	}
	return decision
}

// Decide reads what Decide needs of a host's namespace. A host that is
// being deleted or paused by someone else is not ours whatever selects it:
// nothing is read for it.
func (t *Templates) Decide(ctx context.Context, host *bmov1alpha1.BareMetalHost) (Decision, error) {
	if decision := Decide(host, nil); decision.Ignored == BeingDeleted || decision.Ignored == PausedBySomeoneElse {
		return decision, nil
	}
	templates, err := t.List(ctx, host.Namespace)
	if err != nil {
		return Decision{}, err
	}
	return t.DecideAmong(ctx, host, templates)
}

// DecideAmong decides where a host stands among its namespace's templates:
// those that select it, resolved as a rollout leaves them (Resolve) when
// there are several.
func (t *Templates) DecideAmong(ctx context.Context, host *bmov1alpha1.BareMetalHost, templates []template.Template,
) (Decision, error) {
	matching, invalid := template.Selecting(templates, host.Labels)
	var selecting []template.Ref
	for _, source := range matching {
		selecting = append(selecting, source.Ref)
	}
	var resolution Resolution
	if len(matching) > 1 {
		var err error
		if resolution, err = t.Resolve(ctx, host.Namespace, setUpFrom(host), matching); err != nil {
			return Decision{}, err
		}
		if resolution.Governing != nil {
			matching = []template.Template{*resolution.Governing}
		}
	}
	decision := Decide(host, matching)
	decision.Selecting, decision.Invalid, decision.Resolution = selecting, invalid, resolution
	return decision, nil
}

// setUpFrom is the template recorded on a host we set up.
func setUpFrom(host *bmov1alpha1.BareMetalHost) template.Ref {
	ref, _ := template.ParseRef(host.Annotations[preprovv1.TemplateAnnotation])
	return ref
}
