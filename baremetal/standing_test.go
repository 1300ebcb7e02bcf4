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
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/template"
)

func TestStanding(t *testing.T) {
	mine := template.Template{Ref: template.Ref{Kind: preprovv1.KindPreprovisioningTemplate, Name: "rack-1"}}
	other := template.Template{Ref: template.Ref{Kind: preprovv1.KindMachineTemplate, Name: "workers"}}
	adopting := mine
	adopting.AdoptExistingHosts = true
	pausedForUs := map[string]string{preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning}
	setUpBy := func(ref template.Ref, annotations ...string) *bmov1alpha1.BareMetalHost {
		host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue},
			Annotations: map[string]string{preprovv1.TemplateAnnotation: ref.String()},
		}}
		for i := 0; i < len(annotations); i += 2 {
			host.Annotations[annotations[i]] = annotations[i+1]
		}
		return host
	}
	withAnnotations := func(annotations map[string]string) *bmov1alpha1.BareMetalHost {
		return &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	deleting := setUpBy(mine.Ref)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	needsDHCP := withAnnotations(pausedForUs)
	needsDHCP.Spec.BMC.Address = "ipmi://192.0.2.1"
	heldByCAPI := withAnnotations(map[string]string{
		preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning, "cluster.x-k8s.io/paused": "",
	})

	tests := []struct {
		name     string
		host     *bmov1alpha1.BareMetalHost
		matching []template.Template
		want     Outcome
	}{
		{"paused by someone else", withAnnotations(map[string]string{preprovv1.PausedAnnotation: "metal3.io/capm3"}),
			[]template.Template{mine}, Outcome{Phase: PhaseIgnored, Ignored: PausedBySomeoneElse}},
		{"being deleted", deleting, []template.Template{mine}, Outcome{Phase: PhaseIgnored, Ignored: BeingDeleted}},
		{"not paused, not ours, not adopted", withAnnotations(nil), []template.Template{mine}, Outcome{Phase: PhaseIgnored, Ignored: NotHandedOver}},
		{"paused, held by Cluster API: counted where it stood", heldByCAPI, []template.Template{mine}, Outcome{Phase: PhaseWaiting, Template: mine.Ref}},
		{"not paused, adopted", withAnnotations(nil), []template.Template{adopting}, Outcome{Phase: PhaseWaiting, Template: mine.Ref}},
		{"paused, no template", withAnnotations(pausedForUs), nil, Outcome{Phase: PhaseNoTemplate}},
		{"paused, two templates", withAnnotations(pausedForUs), []template.Template{other, mine},
			Outcome{Phase: PhaseConflict, Conflicts: []template.Ref{other.Ref, mine.Ref}}},
		{"paused, one template", withAnnotations(pausedForUs), []template.Template{mine}, Outcome{Phase: PhaseWaiting, Template: mine.Ref}},
		{"paused, BMC boots over the network", needsDHCP, []template.Template{mine},
			Outcome{Phase: PhaseWaiting, Template: mine.Ref, BootNeedsDHCP: "ipmi"}},
		{"paused, failed", withAnnotations(map[string]string{
			preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning, preprovv1.ProblemAnnotation: ReasonIPClaimFailed,
		}), []template.Template{mine}, Outcome{Phase: PhaseFailed, Template: mine.Ref, Reason: ReasonIPClaimFailed}},
		{"set up", setUpBy(mine.Ref), []template.Template{mine}, Outcome{Phase: PhaseReady, Template: mine.Ref}},
		{"set up, stalled", setUpBy(mine.Ref, preprovv1.ProblemAnnotation, ReasonInspectionStalled), []template.Template{mine},
			Outcome{Phase: PhaseReady, Template: mine.Ref, InspectionStalled: true}},
		{"set up, drifted", setUpBy(mine.Ref, preprovv1.ProblemAnnotation, ReasonNetworkDataDrift), []template.Template{mine},
			Outcome{Phase: PhaseDrifted, Template: mine.Ref}},
		{"set up by another template, not yet by this one", setUpBy(other.Ref), []template.Template{mine},
			Outcome{Phase: PhaseWaiting, Template: mine.Ref}},
		{"set up, waiting for an earlier host's Secret", setUpBy(mine.Ref, preprovv1.ProblemAnnotation, ReasonSecretOfEarlierHost), []template.Template{mine},
			Outcome{Phase: PhaseWaiting, Waiting: WaitingForEarlierHost, Template: mine.Ref, Reason: ReasonSecretOfEarlierHost}},
		{"set up, no template selects it", setUpBy(mine.Ref), nil, Outcome{Phase: PhaseOrphaned, Template: mine.Ref}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Standing(tt.host, Decide(tt.host, tt.matching)))
		})
	}
}

func TestInspectionStall(t *testing.T) {
	unpausedAt := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	timeout := 15 * time.Minute
	host := func(state bmov1alpha1.ProvisioningState, unpaused string) *bmov1alpha1.BareMetalHost {
		host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if unpaused != "" {
			host.Annotations[preprovv1.UnpausedAtAnnotation] = unpaused
		}
		host.Status.Provisioning.State = state
		return host
	}
	at := unpausedAt.Format(time.RFC3339)
	tests := []struct {
		name        string
		host        *bmov1alpha1.BareMetalHost
		now         time.Time
		wantStalled bool
		wantLeft    time.Duration
	}{
		{"inspecting, in time", host(bmov1alpha1.StateInspecting, at), unpausedAt.Add(10 * time.Minute), false, 5 * time.Minute},
		{"inspecting, late", host(bmov1alpha1.StateInspecting, at), unpausedAt.Add(timeout), true, 0},
		{"registering, late", host(bmov1alpha1.StateRegistering, at), unpausedAt.Add(time.Hour), true, 0},
		{"not registered by BMO, late", host(bmov1alpha1.StateNone, at), unpausedAt.Add(time.Hour), true, 0},
		{"moved on", host(bmov1alpha1.StateAvailable, at), unpausedAt.Add(time.Hour), false, 0},
		{"provisioned", host(bmov1alpha1.StateProvisioned, at), unpausedAt.Add(time.Hour), false, 0},
		{"never unpaused by us", host(bmov1alpha1.StateInspecting, ""), unpausedAt.Add(time.Hour), false, 0},
		{"unreadable time", host(bmov1alpha1.StateInspecting, "yesterday"), unpausedAt.Add(time.Hour), false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stalled, left := InspectionStall(tt.host, tt.now, timeout)
			assert.Equal(t, tt.wantStalled, stalled)
			assert.Equal(t, tt.wantLeft, left)
		})
	}
}

func TestProblemOf(t *testing.T) {
	tests := []struct {
		outcome Outcome
		want    string
	}{
		{Outcome{Phase: PhaseFailed, Reason: ReasonRenderFailed}, ReasonRenderFailed},
		{Outcome{Phase: PhaseDrifted, Reason: ReasonNetworkDataDrift}, ReasonNetworkDataDrift},
		{Outcome{Phase: PhaseReady, InspectionStalled: true, Reason: ReasonInspectionStalled}, ReasonInspectionStalled},
		{Outcome{Phase: PhaseReady}, ""},
		{Outcome{Phase: PhaseWaiting}, ""},
		{Outcome{Phase: PhaseConflict, Reason: ReasonTemplateConflict}, ""},
		{Outcome{Phase: PhaseOrphaned}, ""},
		{Outcome{Phase: PhaseNoTemplate}, ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, problemOf(tt.outcome), "%+v", tt.outcome)
		// What is recorded is read back as the same phase.
		if tt.want != "" {
			host := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning, preprovv1.ProblemAnnotation: tt.want,
			}}}
			assert.Equal(t, tt.outcome.Phase, Standing(host, Decide(host, []template.Template{{}})).Phase)
		}
	}
}

func TestDecide(t *testing.T) {
	mine := template.Template{Ref: template.Ref{Kind: preprovv1.KindPreprovisioningTemplate, Name: "rack-1"}}
	other := template.Template{Ref: template.Ref{Kind: preprovv1.KindMachineTemplate, Name: "workers"}}
	host := func(annotations map[string]string) *bmov1alpha1.BareMetalHost {
		return &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	pausedForUs := map[string]string{preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning}
	held := map[string]string{preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning, "cluster.x-k8s.io/paused": ""}
	moving := map[string]string{preprovv1.PausedAnnotation: "metal3.io/capm3", "clusterctl.cluster.x-k8s.io/delete-for-move": ""}

	governed := Decide(host(pausedForUs), []template.Template{mine})
	assert.Equal(t, Phase(""), governed.Phase, "the steps tell where a governed host stands")
	assert.Equal(t, &mine, governed.Governing)
	assert.False(t, governed.HeldByClusterAPI)

	heldDecision := Decide(host(held), []template.Template{mine})
	assert.True(t, heldDecision.HeldByClusterAPI)
	assert.Equal(t, &mine, heldDecision.Governing, "a held host stays where it stood")

	movingDecision := Decide(host(moving), []template.Template{mine})
	assert.True(t, movingDecision.HeldByClusterAPI)
	assert.Equal(t, PausedBySomeoneElse, movingDecision.Ignored)
	assert.Equal(t, &mine, movingDecision.Governing, "render shows the template of a host that is not ours")

	conflict := Decide(host(pausedForUs), []template.Template{other, mine})
	assert.Equal(t, PhaseConflict, conflict.Phase)
	assert.Nil(t, conflict.Governing)
	assert.Equal(t, []template.Ref{other.Ref, mine.Ref}, conflict.Conflicts)
}
