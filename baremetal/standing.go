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
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/metrics"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// Standings tells where hosts stand from the API objects alone (the hosts,
// the problem recorded on them, the templates that select them), never from
// what this process remembers: a restarted or newly elected manager reports
// every host at once. The template status and the hosts metric read it.
type Standings struct {
	Reader    client.Reader
	Templates *Templates
}

// OfTemplate returns, by host name, where the hosts stand that a template
// selects or set up.
func (s *Standings) OfTemplate(ctx context.Context, namespace string, template template.Template) (map[string]Outcome, error) {
	hosts, err := s.hosts(ctx, client.InNamespace(namespace))
	if err != nil {
		return nil, err
	}
	templates, err := s.Templates.List(ctx, namespace)
	if err != nil {
		return nil, err
	}
	standings := map[string]Outcome{}
	for i := range hosts.Items {
		host := &hosts.Items[i]
		if selects, _ := template.Selects(host.Labels); !selects && setUpFrom(host) != template.Ref {
			continue
		}
		if standings[host.Name], err = s.standing(ctx, host, templates); err != nil {
			return nil, err
		}
	}
	return standings, nil
}

// CountAll counts every host by phase and by whether its BMC driver boots
// the deploy ramdisk over the network, and the hosts whose inspection stalls.
func (s *Standings) CountAll(ctx context.Context) (map[metrics.HostGroup]int, error) {
	hosts, err := s.hosts(ctx)
	if err != nil {
		return nil, err
	}
	templatesOf := map[string][]template.Template{}
	counts := map[metrics.HostGroup]int{}
	for i := range hosts.Items {
		host := &hosts.Items[i]
		templates, listed := templatesOf[host.Namespace]
		if !listed {
			if templates, err = s.Templates.List(ctx, host.Namespace); err != nil {
				return nil, err
			}
			templatesOf[host.Namespace] = templates
		}
		outcome, err := s.standing(ctx, host, templates)
		if err != nil {
			return nil, err
		}
		if outcome.Phase != PhaseIgnored {
			counts[metrics.HostGroup{Phase: string(outcome.Phase), BootNeedsDHCP: outcome.BootNeedsDHCP != "",
				InspectionStalled: outcome.InspectionStalled}]++
		}
	}
	return counts, nil
}

// hosts lists hosts without copying them: they are only read.
func (s *Standings) hosts(ctx context.Context, opts ...client.ListOption) (*bmov1alpha1.BareMetalHostList, error) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := s.Reader.List(ctx, hosts, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil, fmt.Errorf("listing BareMetalHosts: %w", err)
	}
	return hosts, nil
}

// standing resolves the templates that select a host, as the host manager
// does, and tells where the host stands with them.
func (s *Standings) standing(ctx context.Context, host *bmov1alpha1.BareMetalHost, templates []template.Template) (Outcome, error) {
	matching, _ := template.Selecting(templates, host.Labels)
	if len(matching) > 1 && !ignored(host, matching) {
		resolution, err := s.Templates.Resolve(ctx, host.Namespace, setUpFrom(host), matching)
		if err != nil {
			return Outcome{}, err
		}
		if resolution.Governing != nil {
			matching = []template.Template{*resolution.Governing}
		}
	}
	return Standing(host, matching), nil
}

// Standing tells where a host stands, given the templates that govern it
// (one, or several in conflict, after a rollout's resolution), as the host
// manager's last reconcile of it decided: from its pause, its labels and
// annotations, and the problem recorded on it.
func Standing(host *bmov1alpha1.BareMetalHost, matching []template.Template) Outcome {
	if ignored(host, matching) {
		return Outcome{Phase: PhaseIgnored}
	}
	setUp := ownership.Ours(host)
	switch len(matching) {
	case 0:
		if setUp {
			return Outcome{Phase: PhaseOrphaned, Template: setUpFrom(host)}
		}
		return Outcome{Phase: PhaseNoTemplate}
	case 1:
	default:
		refs := make([]template.Ref, 0, len(matching))
		for _, template := range matching {
			refs = append(refs, template.Ref)
		}
		return Outcome{Phase: PhaseConflict, Conflicts: refs}
	}
	outcome := Outcome{Template: matching[0].Ref, BootNeedsDHCP: bootNeedsDHCP(host.Spec.BMC.Address)}
	switch problem := host.Annotations[preprovv1.ProblemAnnotation]; {
	case problem == ReasonNetworkDataDrift:
		outcome.Phase = PhaseDrifted
	case problem == ReasonInspectionStalled:
		outcome.Phase, outcome.InspectionStalled = PhaseReady, true
	case problem == ReasonSecretOfEarlierHost:
		outcome.Phase, outcome.Reason = PhaseWaiting, problem
	case problem != "":
		outcome.Phase, outcome.Reason = PhaseFailed, problem
	case setUp && setUpFrom(host) == outcome.Template && !ownership.PausedForUs(host):
		outcome.Phase = PhaseReady
	default:
		outcome.Phase = PhaseWaiting
	}
	return outcome
}

// ignored is a host that is not ours: being deleted, paused by someone
// else, or neither paused for us, set up by us nor adopted by a template.
func ignored(host *bmov1alpha1.BareMetalHost, matching []template.Template) bool {
	return !host.DeletionTimestamp.IsZero() || ownership.PausedBySomeoneElse(host) ||
		!ownership.PausedForUs(host) && !ownership.Ours(host) && !template.AnyAdopts(matching)
}
