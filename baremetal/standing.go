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
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// Standings tells where hosts stand from the API objects alone (the hosts,
// the problem recorded on them, the templates that select them), never from
// what this process remembers: a restarted or newly elected manager reports
// every host at once. The Tally behind the template status and the hosts
// metric is fed from it.
type Standings struct {
	Reader    client.Reader
	Templates *Templates
}

// OfHost returns where one host stands.
func (s *Standings) OfHost(ctx context.Context, host *bmov1alpha1.BareMetalHost) (Outcome, error) {
	templates, err := s.Templates.List(ctx, host.Namespace)
	if err != nil {
		return Outcome{}, err
	}
	return s.standing(ctx, host, templates)
}

// EachOfNamespace calls each with every host of a namespace and where it
// stands.
func (s *Standings) EachOfNamespace(ctx context.Context, namespace string, each func(*bmov1alpha1.BareMetalHost, Outcome)) error {
	hosts, err := s.hosts(ctx, client.InNamespace(namespace))
	if err != nil {
		return err
	}
	templates, err := s.Templates.List(ctx, namespace)
	if err != nil {
		return err
	}
	for i := range hosts.Items {
		outcome, err := s.standing(ctx, &hosts.Items[i], templates)
		if err != nil {
			return err
		}
		each(&hosts.Items[i], outcome)
	}
	return nil
}

// hosts lists hosts without copying them: they are only read.
func (s *Standings) hosts(ctx context.Context, opts ...client.ListOption) (*bmov1alpha1.BareMetalHostList, error) {
	hosts := &bmov1alpha1.BareMetalHostList{}
	if err := s.Reader.List(ctx, hosts, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil, fmt.Errorf("listing BareMetalHosts: %w", err)
	}
	return hosts, nil
}

// standing decides where a host stands among its namespace's templates, as
// the host manager does, and tells where it stands from its objects.
func (s *Standings) standing(ctx context.Context, host *bmov1alpha1.BareMetalHost, templates []template.Template) (Outcome, error) {
	decision, err := s.Templates.DecideAmong(ctx, host, templates)
	if err != nil {
		return Outcome{}, err
	}
	return Standing(host, decision), nil
}

// Standing tells where a host stands, given where Decide puts it, as the
// host manager's last reconcile of it decided: from the problem recorded on
// the host, and whether it is set up from the template that governs it. A
// host Cluster API holds is counted where it stood.
func Standing(host *bmov1alpha1.BareMetalHost, decision Decision) Outcome {
	switch decision.Phase {
	case PhaseIgnored:
		return Outcome{Phase: PhaseIgnored, Ignored: decision.Ignored}
	case PhaseOrphaned:
		return Outcome{Phase: PhaseOrphaned, Template: decision.SetUpFrom}
	case PhaseNoTemplate:
		return Outcome{Phase: PhaseNoTemplate}
	case PhaseConflict:
		return Outcome{Phase: PhaseConflict, Conflicts: decision.Conflicts}
	}
	outcome := Outcome{Template: decision.Governing.Ref, BootNeedsDHCP: bootNeedsDHCP(host.Spec.BMC.Address)}
	switch problem := host.Annotations[preprovv1.ProblemAnnotation]; {
	case problem == ReasonNetworkDataDrift:
		outcome.Phase = PhaseDrifted
	case problem == ReasonInspectionStalled:
		outcome.Phase, outcome.InspectionStalled = PhaseReady, true
	case problem == ReasonSecretOfEarlierHost:
		outcome.Phase, outcome.Reason, outcome.Waiting = PhaseWaiting, problem, WaitingForEarlierHost
	case problem != "":
		outcome.Phase, outcome.Reason = PhaseFailed, problem
	case ownership.Ours(host) && decision.SetUpFrom == outcome.Template && !ownership.PausedForUs(host):
		outcome.Phase = PhaseReady
	default:
		outcome.Phase = PhaseWaiting
	}
	return outcome
}
